"""Folds of a query set (training set, evaluation set) cut by :func:`lexir.datasets.folds.fold_of`,
the hash of each query id that the registered datasets' fold splits use too; questions with the
same text are kept in one fold."""

from __future__ import annotations

from collections.abc import Sequence

from lexir.datasets.folds import fold_of
from lexir.types import Query, QuerySet


def subset(queries: QuerySet, ids: Sequence[str], name: str = "") -> QuerySet:
    """The queries of ``queries`` whose ids are in ``ids``, with their judgements (a new set)."""
    keep = set(ids)
    chosen: list[Query] = [q for q in queries.queries if q.id in keep]
    return QuerySet(name or queries.name, chosen, {q: dict(queries.qrels[q]) for q in keep if q in queries.qrels})


def kfold(queries: QuerySet, folds: int = 5, seed: str = "lexir-folds") -> list[tuple[QuerySet, QuerySet]]:
    """``folds`` pairs (training set, evaluation set) of ``queries``, by :func:`fold_of` of the
    query id; questions with the same normalised text go to the fold of the first of them, so no
    evaluation question is also a training question under another id."""
    from lexir.learning.model import text_fingerprint

    first: dict[str, str] = {}
    key = {q.id: first.setdefault(text_fingerprint(q.text), q.id) for q in queries.queries}
    which = {qid: fold_of(anchor, folds, seed) for qid, anchor in key.items()}
    return [(subset(queries, [q for q, f in which.items() if f != i], f"{queries.name}/train{i}"),
             subset(queries, [q for q, f in which.items() if f == i], f"{queries.name}/fold{i}"))
            for i in range(folds)]
