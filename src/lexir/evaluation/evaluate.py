"""``evaluate(run, qrels)``: per-query values of every measure for every judged query."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from statistics import fmean

from lexir.types import Qrels, Run, ranked

from ._native import native_scores
from ._trec import trec_scores
from .measures import DEFAULT_MEASURES, Measure, coerce_measures


@dataclass
class Evaluation:
    """Per-query measure values; ``per_query`` has one entry per qid of the qrels."""

    measures: tuple[Measure, ...]
    per_query: dict[str, dict[Measure, float]]
    # queries the run answered but nobody judged: not scored, kept so callers can warn
    ignored_qids: tuple[str, ...] = field(default=())

    @property
    def qids(self) -> list[str]:
        return list(self.per_query)

    def values(self, measure: Measure | str) -> list[float]:
        """Per-query values of ``measure`` in qrels order (the pairing order for tests)."""
        measure = self._known(measure)
        return [scores[measure] for scores in self.per_query.values()]

    def mean(self, measure: Measure | str) -> float:
        return fmean(self.values(measure))

    def means(self) -> dict[Measure, float]:
        return {m: self.mean(m) for m in self.measures}

    def to_rows(self) -> list[dict[str, object]]:
        """One flat dict per query (``qid`` plus ``str(measure)`` keys), for CSV or JSONL."""
        return [
            {"qid": qid, **{str(m): scores[m] for m in self.measures}}
            for qid, scores in self.per_query.items()
        ]

    def _known(self, measure: Measure | str) -> Measure:
        measure = Measure.coerce(measure)
        if measure not in self.measures:
            evaluated = ", ".join(map(str, self.measures))
            raise KeyError(f"{measure} was not evaluated (evaluated: {evaluated})")
        return measure


def _order(results: Mapping[str, float]) -> list[str]:
    # NaN compares false both ways, which would leave the order to chance
    for doc, score in results.items():
        if math.isnan(score):
            raise ValueError(f"score of {doc!r} is NaN")
    return [doc for doc, _ in ranked(results)]


def evaluate(run: Run, qrels: Qrels, measures: Iterable[Measure | str] = DEFAULT_MEASURES) -> Evaluation:
    """Score ``run`` against ``qrels``.

    Every qid of ``qrels`` is scored; one the run lacks, or answers with no
    results, scores 0.0 on every measure instead of being dropped (dropping it
    would inflate the mean). Score ties are ranked by doc id ascending, the
    same for every measure. A doc is relevant when its grade is > 0; nDCG uses
    the grade as a linear gain (trec_eval's convention).
    """
    measures = coerce_measures(measures)
    if not measures:
        raise ValueError("no measures to evaluate")
    if not qrels:
        raise ValueError("qrels are empty: nothing to evaluate against")
    orders = {qid: _order(run.get(qid, {})) for qid in qrels}
    trec = trec_scores(orders, qrels, measures)
    native = [m for m in measures if m.trec_family is None]
    per_query: dict[str, dict[Measure, float]] = {}
    for qid, order in orders.items():
        values = {**trec[qid], **native_scores(order, qrels[qid], native)}
        per_query[qid] = {m: values[m] for m in measures}
    ignored = tuple(qid for qid in run if qid not in qrels)
    return Evaluation(measures, per_query, ignored)
