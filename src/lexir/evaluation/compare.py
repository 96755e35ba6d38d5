"""``compare(runs, qrels, baseline)``: one call for a results table with tests.

Each system gets a mean and a confidence interval per measure; each
non-baseline system is tested against the baseline, and the p-values of one
measure are Holm-corrected across systems, so adding systems to a table
cannot manufacture significance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from lexir.types import Qrels, Run

from .evaluate import Evaluation, evaluate
from .measures import DEFAULT_MEASURES, Measure, coerce_measures
from .stats import bootstrap_interval, holm, mcnemar_exact, randomisation_test, wilson_interval

# binary measures get the exact McNemar test, graded ones the randomisation test
DEFAULT_TESTS: tuple[Measure, ...] = (Measure("Hit", 10), Measure("nDCG", 10))


@dataclass(frozen=True)
class Estimate:
    """A mean with its confidence interval."""

    mean: float
    low: float
    high: float


@dataclass(frozen=True)
class PairedTest:
    """One system against the baseline on one measure.

    ``b``/``c`` are McNemar's discordant counts (system-only / baseline-only
    successes); None for the randomisation test. ``p_adjusted`` is Holm's.
    """

    system: str
    measure: Measure
    test: str  # "mcnemar" or "randomisation"
    delta: float  # mean(system) - mean(baseline)
    p: float
    p_adjusted: float
    b: int | None = None
    c: int | None = None


@dataclass
class Comparison:
    baseline: str
    systems: list[str]  # baseline first
    measures: tuple[Measure, ...]
    estimates: dict[str, dict[Measure, Estimate]]
    tests: list[PairedTest]
    evaluations: dict[str, Evaluation] = field(repr=False)
    confidence: float = 0.95
    alpha: float = 0.05

    @property
    def n_queries(self) -> int:
        return len(self.evaluations[self.baseline].per_query)

    def test(self, system: str, measure: Measure | str) -> PairedTest | None:
        measure = Measure.coerce(measure)
        for t in self.tests:
            if t.system == system and t.measure == measure:
                return t
        return None

    def significant(self, system: str, measure: Measure | str) -> bool:
        """True when ``system`` differs from the baseline on ``measure`` after Holm."""
        t = self.test(system, measure)
        return t is not None and t.p_adjusted < self.alpha

    def to_markdown(self) -> str:
        """The results table and the tests as Markdown (see :mod:`lexir.evaluation.render`)."""
        from lexir.evaluation.render import to_markdown

        return to_markdown(self)

    def to_latex(self) -> str:
        from lexir.evaluation.render import to_latex

        return to_latex(self)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready view; measures appear as their string form."""
        return {
            "baseline": self.baseline,
            "n_queries": self.n_queries,
            "confidence": self.confidence,
            "alpha": self.alpha,
            "measures": [str(m) for m in self.measures],
            "systems": {
                name: {
                    str(m): {"mean": e.mean, "low": e.low, "high": e.high}
                    for m, e in self.estimates[name].items()
                }
                for name in self.systems
            },
            "tests": [
                {
                    "system": t.system,
                    "measure": str(t.measure),
                    "test": t.test,
                    "delta": t.delta,
                    "b": t.b,
                    "c": t.c,
                    "p": t.p,
                    "p_adjusted": t.p_adjusted,
                    "significant": t.p_adjusted < self.alpha,
                }
                for t in self.tests
            ],
            "ignored_queries": {name: len(self.evaluations[name].ignored_qids) for name in self.systems},
        }


def _estimate(
    values: list[float], measure: Measure, confidence: float, n_resamples: int, seed: int
) -> Estimate:
    mean = sum(values) / len(values)
    if measure.binary:
        low, high = wilson_interval(round(sum(values)), len(values), confidence)
    else:
        low, high = bootstrap_interval(values, confidence, n_resamples, seed)
    return Estimate(mean, low, high)


def _raw_test(
    system: str, measure: Measure, ours: list[float], base: list[float], n_resamples: int, seed: int
) -> PairedTest:
    delta = (sum(ours) - sum(base)) / len(ours)
    if measure.binary:
        result = mcnemar_exact([v > 0.5 for v in ours], [v > 0.5 for v in base])
        return PairedTest(system, measure, "mcnemar", delta, result.p, result.p, result.b, result.c)
    p = randomisation_test(ours, base, n_resamples, seed)
    return PairedTest(system, measure, "randomisation", delta, p, p)


def compare(
    runs: Mapping[str, Run],
    qrels: Qrels,
    baseline: str,
    measures: Iterable[Measure | str] = DEFAULT_MEASURES,
    tests: Iterable[Measure | str] = DEFAULT_TESTS,
    confidence: float = 0.95,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """Evaluate every run, estimate intervals, and test each system against ``baseline``.

    ``tests`` lists the measures to test: binary ones (Hit@k, ActHit@k) with
    the exact McNemar test, graded ones with the paired randomisation test.
    Intervals are Wilson for binary measures, percentile bootstrap otherwise.
    """
    if baseline not in runs:
        raise ValueError(f"baseline {baseline!r} is not among the runs: {sorted(runs)}")
    measures = coerce_measures(measures)
    tests = coerce_measures(tests)
    systems = [baseline, *(name for name in runs if name != baseline)]
    evaluated = coerce_measures([*measures, *tests])
    evaluations = {name: evaluate(runs[name], qrels, evaluated) for name in systems}
    estimates = {
        name: {m: _estimate(evaluations[name].values(m), m, confidence, n_resamples, seed) for m in measures}
        for name in systems
    }
    results: list[PairedTest] = []
    for m in tests:
        base = evaluations[baseline].values(m)
        raw = [
            _raw_test(name, m, evaluations[name].values(m), base, n_resamples, seed) for name in systems[1:]
        ]
        adjusted = holm([t.p for t in raw])
        results += [replace(t, p_adjusted=adj) for t, adj in zip(raw, adjusted, strict=True)]
    return Comparison(baseline, systems, measures, estimates, results, evaluations, confidence, alpha)
