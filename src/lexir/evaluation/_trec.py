"""The pytrec_eval bridge for nDCG, MAP, R and P.

trec_eval breaks score ties by doc id *descending*, while lexir ranks ties by
doc id ascending (``types.ranked``). So the run is handed over as rank-based,
strictly decreasing scores: both backends then see one and the same ordering.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pytrec_eval

from lexir.types import Qrels

from .measures import Measure


def _measure_spec(measures: Sequence[Measure]) -> set[str]:
    # one spec per family ("ndcg_cut.10,100"): trec_eval has had bugs when the
    # same family was requested twice with different cutoffs
    cutoffs: dict[str, set[int]] = defaultdict(set)
    for m in measures:
        cutoffs[m.trec_family].add(m.k)
    return {f"{family}.{','.join(map(str, sorted(ks)))}" for family, ks in cutoffs.items()}


def trec_scores(
    orders: dict[str, list[str]], qrels: Qrels, measures: Sequence[Measure]
) -> dict[str, dict[Measure, float]]:
    """Per-query values of pytrec_eval-backed ``measures`` for every qid of ``orders``.

    ``orders`` holds each query's doc ids best first. Queries pytrec_eval does
    not report (no results, no judgements) get 0.0 rather than vanishing.
    """
    measures = [m for m in measures if m.trec_family is not None]
    if not measures:
        return {qid: {} for qid in orders}
    # negative grades would be negative gains to some tools; lexir's rule is
    # that only grade > 0 is relevant, so they are clipped to "not relevant"
    trec_qrels = {
        qid: {doc: max(int(grade), 0) for doc, grade in judged.items()}
        for qid, judged in qrels.items()
        if qid in orders
    }
    trec_run = {
        qid: {doc: float(len(order) - rank) for rank, doc in enumerate(order)}
        for qid, order in orders.items()
    }
    evaluator = pytrec_eval.RelevanceEvaluator(trec_qrels, _measure_spec(measures))
    reported = evaluator.evaluate(trec_run)
    return {qid: {m: float(reported.get(qid, {}).get(m.trec_key, 0.0)) for m in measures} for qid in orders}
