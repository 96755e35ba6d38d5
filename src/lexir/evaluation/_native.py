"""Hit@k, MRR and ActHit@k: rank-of-first-success measures lexir computes itself.

pytrec_eval has ``success`` and ``recip_rank`` but no act-level measure, so all
three live here and share one pass over each ranking.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lexir.types import act_of

from .measures import Measure


def _first_rank(order: list[str], wanted: Callable[[str], bool]) -> int | None:
    """1-based rank of the first doc id satisfying ``wanted``, or None."""
    for rank, doc in enumerate(order, start=1):
        if wanted(doc):
            return rank
    return None


def _within(rank: int | None, k: int | None) -> bool:
    return rank is not None and (k is None or rank <= k)


def native_scores(
    order: list[str], judged: dict[str, int], measures: Sequence[Measure]
) -> dict[Measure, float]:
    """Values of the non-pytrec_eval ``measures`` for one ranked list."""
    relevant = {doc for doc, grade in judged.items() if grade > 0}
    relevant_acts = {act_of(doc) for doc in relevant}
    first_doc = _first_rank(order, relevant.__contains__)
    first_act = _first_rank(order, lambda doc: act_of(doc) in relevant_acts)
    values: dict[Measure, float] = {}
    for m in measures:
        if m.name == "Hit":
            values[m] = float(_within(first_doc, m.k))
        elif m.name == "ActHit":
            values[m] = float(_within(first_act, m.k))
        elif m.name == "MRR":
            values[m] = 1.0 / first_doc if _within(first_doc, m.k) else 0.0
    return values
