"""Does retrieval make the answer right? Scores of answered exam questions under context conditions.

A *condition* is what the model was shown beside the question: nothing (closed book), a
retrieval system's top k, or the gold provisions (oracle). Per condition:

* accuracy (the chosen option is the correct one; no usable answer counts as wrong) with a
  Wilson interval;
* citation precision (of the provisions cited, the share that are gold; over the questions
  that cited something) and recall (of the gold provisions, the share cited), with bootstrap
  intervals; closed book has neither;
* gold in context: the share of questions whose prompt held a gold provision (Hit@k of the
  context), which bounds what the model could cite;
* the exact McNemar test on correctness between every pair of conditions, Holm-adjusted
  across the pairs, so adding a condition cannot manufacture significance;
* accuracy per code (the act of the gold provisions), and calls, tokens and seconds per question.

Everything here takes plain records (:class:`AnsweredQuestion`); producing them is
:mod:`lexir.llm.answer`'s job.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from .compare import Estimate
from .render import format_estimate
from .stats import bootstrap_interval, holm, mcnemar_exact, wilson_interval

if TYPE_CHECKING:
    from rich.table import Table


@dataclass(frozen=True)
class AnsweredQuestion:
    """One question answered under one condition."""

    qid: str
    code: str  # act(s) of the gold provisions: "kk", or "kc+kpc" when they span codes
    expected: str  # the correct option
    chosen: str | None  # None: no usable answer (after the corrective retry)
    gold: tuple[str, ...]
    context: tuple[str, ...] = ()  # provision ids shown, in prompt order
    cited: tuple[str, ...] = ()
    status: str = "ok"  # parse status of the final answer (lexir.llm.parsing.Status)
    calls: int = 0
    tokens: int = 0
    seconds: float = 0.0

    @property
    def correct(self) -> bool:
        return self.chosen is not None and self.chosen == self.expected

    @property
    def gold_in_context(self) -> bool:
        return bool(set(self.gold) & set(self.context))

    def to_dict(self) -> dict:
        return {**asdict(self), "correct": self.correct}


@dataclass
class ConditionSummary:
    name: str
    n: int
    correct: int
    answered: int
    accuracy: Estimate
    malformed: Counter = field(default_factory=Counter)  # final status -> questions, "ok" left out
    context_hit: Estimate | None = None
    cite_precision: Estimate | None = None
    cite_recall: Estimate | None = None
    citing: int = 0  # questions with at least one citation
    calls: float = 0.0  # per question
    tokens: float = 0.0
    seconds: float = 0.0


@dataclass(frozen=True)
class PairTest:
    """Exact McNemar on correctness: ``only_a``/``only_b`` = questions only ``a``/``b`` got right."""

    a: str
    b: str
    delta: float  # accuracy(b) - accuracy(a)
    only_a: int
    only_b: int
    p: float
    p_adjusted: float


@dataclass
class AnswerTable:
    baseline: str
    conditions: list[str]  # baseline first
    summaries: dict[str, ConditionSummary]
    tests: list[PairTest]
    per_code: dict[str, dict[str, tuple[int, int]]]  # code -> condition -> (correct, n)
    confidence: float = 0.95
    alpha: float = 0.05
    title: str = ""

    @property
    def n_questions(self) -> int:
        return self.summaries[self.baseline].n

    def test(self, a: str, b: str) -> PairTest | None:
        for t in self.tests:
            if {t.a, t.b} == {a, b}:
                return t
        return None

    def significant(self, condition: str) -> bool:
        """True when ``condition``'s accuracy differs from the baseline's after Holm."""
        t = self.test(self.baseline, condition)
        return t is not None and condition != self.baseline and t.p_adjusted < self.alpha

    def to_dict(self) -> dict:
        def est(e: Estimate | None):
            return None if e is None else {"mean": e.mean, "low": e.low, "high": e.high}

        return {
            "title": self.title, "baseline": self.baseline, "n_questions": self.n_questions,
            "confidence": self.confidence, "alpha": self.alpha,
            "conditions": {
                name: {"n": s.n, "correct": s.correct, "answered": s.answered, "accuracy": est(s.accuracy),
                       "malformed": dict(s.malformed), "gold_in_context": est(s.context_hit),
                       "cite_precision": est(s.cite_precision), "cite_recall": est(s.cite_recall),
                       "citing": s.citing, "calls_per_question": s.calls, "tokens_per_question": s.tokens,
                       "seconds_per_question": s.seconds}
                for name, s in self.summaries.items()},
            "tests": [{**asdict(t), "significant": t.p_adjusted < self.alpha} for t in self.tests],
            "per_code": {code: {c: {"correct": k, "n": n} for c, (k, n) in row.items()}
                         for code, row in self.per_code.items()},
        }


def _proportion(successes: int, n: int, confidence: float) -> Estimate:
    low, high = wilson_interval(successes, n, confidence)
    return Estimate(successes / n, low, high)


def _mean(values: Sequence[float], confidence: float, n_resamples: int, seed: int) -> Estimate | None:
    if not values:
        return None
    low, high = bootstrap_interval(values, confidence, n_resamples, seed)
    return Estimate(sum(values) / len(values), low, high)


def _summary(name: str, answers: Sequence[AnsweredQuestion], confidence: float, n_resamples: int,
             seed: int) -> ConditionSummary:
    n = len(answers)
    correct = sum(a.correct for a in answers)
    shown = any(a.context for a in answers)
    precision = [len(set(a.cited) & set(a.gold)) / len(a.cited) for a in answers if a.cited]
    recall = [len(set(a.cited) & set(a.gold)) / len(a.gold) for a in answers if a.gold]
    return ConditionSummary(
        name, n, correct, sum(a.chosen is not None for a in answers), _proportion(correct, n, confidence),
        Counter(a.status for a in answers if a.status != "ok"),
        _proportion(sum(a.gold_in_context for a in answers), n, confidence) if shown else None,
        _mean(precision, confidence, n_resamples, seed) if shown else None,
        _mean(recall, confidence, n_resamples, seed) if shown else None,
        len(precision), sum(a.calls for a in answers) / n, sum(a.tokens for a in answers) / n,
        sum(a.seconds for a in answers) / n)


def summarise(answers: Mapping[str, Sequence[AnsweredQuestion]], baseline: str | None = None,
              confidence: float = 0.95, alpha: float = 0.05, n_resamples: int = 10_000, seed: int = 0,
              title: str = "") -> AnswerTable:
    """The table for answers per condition (the same questions under each: the tests are paired)."""
    if not answers:
        raise ValueError("no conditions to summarise")
    names = list(answers)
    baseline = baseline or names[0]
    if baseline not in answers:
        raise ValueError(f"baseline {baseline!r} is not among the conditions: {', '.join(names)}")
    names = [baseline, *(c for c in names if c != baseline)]
    by_qid = {c: {a.qid: a for a in answers[c]} for c in names}
    qids = list(by_qid[baseline])
    if not qids:
        raise ValueError("no answered questions to summarise")
    for c in names[1:]:
        if set(by_qid[c]) != set(qids):
            missing = sorted(set(qids) ^ set(by_qid[c]))
            raise ValueError(f"conditions {baseline!r} and {c!r} answered different questions "
                             f"(e.g. {', '.join(missing[:3])}); the tests need the same questions under each")
    ordered = {c: [by_qid[c][q] for q in qids] for c in names}
    summaries = {c: _summary(c, ordered[c], confidence, n_resamples, seed) for c in names}
    raw = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            result = mcnemar_exact([x.correct for x in ordered[a]], [x.correct for x in ordered[b]])
            delta = summaries[b].accuracy.mean - summaries[a].accuracy.mean
            raw.append(PairTest(a, b, delta, result.b, result.c, result.p, result.p))
    adjusted = holm([t.p for t in raw])
    tests = [PairTest(t.a, t.b, t.delta, t.only_a, t.only_b, t.p, adj) for t, adj in zip(raw, adjusted, strict=True)]
    per_code: dict[str, dict[str, tuple[int, int]]] = {}
    for c in names:
        counts: dict[str, list[int]] = {}
        for x in ordered[c]:
            row = counts.setdefault(x.code, [0, 0])
            row[0] += x.correct
            row[1] += 1
        for code, (k, n) in counts.items():
            per_code.setdefault(code, {})[c] = (k, n)
    per_code = dict(sorted(per_code.items(), key=lambda kv: (-next(iter(kv[1].values()))[1], kv[0])))
    return AnswerTable(baseline, names, summaries, tests, per_code, confidence, alpha, title)


# ---------------------------------------------------------------------------
# rendering

COLUMNS = ("Condition", "Accuracy", "Cite P", "Cite R", "Gold in context", "Answered", "Malformed",
           "Calls/q", "Tokens/q", "s/q")


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _cell(e: Estimate | None) -> str:
    return "–" if e is None else format_estimate(e)


def _rows(t: AnswerTable, marker: str) -> list[list[str]]:
    rows = []
    for name in t.conditions:
        s = t.summaries[name]
        label = f"{name} (baseline)" if name == t.baseline else name
        bad = sum(s.malformed.values())
        rows.append([label, format_estimate(s.accuracy) + (f" {marker}" if t.significant(name) else ""),
                     _cell(s.cite_precision), _cell(s.cite_recall), _cell(s.context_hit), f"{s.answered}/{s.n}",
                     str(bad) + (" (" + ", ".join(f"{k} {v}" for k, v in sorted(s.malformed.items())) + ")"
                                 if bad else ""),
                     f"{s.calls:.2f}", f"{s.tokens:.0f}", f"{s.seconds:.2f}"])
    return rows


def footnote(t: AnswerTable, marker: str = "*") -> str:
    level = round(t.confidence * 100)
    return (f"{level}% intervals (Wilson for accuracy and gold in context, bootstrap for citations); "
            f"n = {t.n_questions} questions. {marker}: accuracy differs from {t.baseline} (exact McNemar, "
            f"Holm-adjusted over the {len(t.tests)} pairs of conditions, p < {t.alpha:g}). Cite P is over the "
            f"questions that cited something; Malformed counts final answers that were still malformed after "
            f"one corrective retry (counted wrong).")


def _md(text: str) -> str:
    return text.replace("|", r"\|")


def to_markdown(t: AnswerTable) -> str:
    """The summary table, its footnote, the pairwise tests and accuracy per code."""
    lines = [f"**{_md(t.title)}**", ""] if t.title else []
    lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in _rows(t, r"\*")]
    lines += ["", footnote(t, r"\*")]
    if t.tests:
        lines += ["", "| A | B | Δ accuracy (B − A) | only A right | only B right | p | p (Holm) |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {_md(x.a)} | {_md(x.b)} | {x.delta:+.3f} | {x.only_a} | {x.only_b} | {_p(x.p)} "
                  f"| {_p(x.p_adjusted)} |" for x in t.tests]
    lines += ["", "| Code | n | " + " | ".join(_md(c) for c in t.conditions) + " |",
              "|" + "---|" * (len(t.conditions) + 2)]
    for code, row in t.per_code.items():
        n = next(iter(row.values()))[1]
        lines.append(f"| {_md(code)} | {n} | " + " | ".join(
            f"{row[c][0] / row[c][1]:.3f}" if c in row else "–" for c in t.conditions) + " |")
    return "\n".join(lines) + "\n"


def to_rich_tables(t: AnswerTable) -> list[Table]:
    """The summary (starred accuracy in bold), the pairwise tests, and accuracy per code."""
    from rich.markup import escape
    from rich.table import Table

    main = Table(title=t.title or f"answer evaluation (baseline: {t.baseline})", caption=footnote(t))
    for col in COLUMNS:
        main.add_column(col, justify="left" if col == "Condition" else "right")
    for row in _rows(t, "*"):
        cells = [escape(c) for c in row]
        if row[1].endswith("*"):
            cells[1] = f"[bold]{cells[1]}[/bold]"
        main.add_row(*cells)
    tables = [main]
    if t.tests:
        tests = Table(title="accuracy, pairwise (exact McNemar, Holm)")
        for col in ("A", "B", "Δ (B − A)", "only A", "only B", "p", "p (Holm)"):
            tests.add_column(col, justify="left" if col in ("A", "B") else "right")
        for x in t.tests:
            tests.add_row(escape(x.a), escape(x.b), f"{x.delta:+.3f}", str(x.only_a), str(x.only_b), _p(x.p),
                          _p(x.p_adjusted))
        tables.append(tests)
    codes = Table(title="accuracy per code")
    codes.add_column("code")
    codes.add_column("n", justify="right")
    for c in t.conditions:
        codes.add_column(escape(c), justify="right")
    for code, row in t.per_code.items():
        codes.add_row(escape(code), str(next(iter(row.values()))[1]),
                      *(f"{row[c][0] / row[c][1]:.3f}" if c in row else "–" for c in t.conditions))
    tables.append(codes)
    return tables
