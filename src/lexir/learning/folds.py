"""Folds of a query set by a hash of each query id: the same ids always fall in the same fold,
whatever the order or the other queries, so a benchmark, an experiment and a test that cut
``k`` folds of a set get the same folds, and a query added later never moves another."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from lexir.types import Query, QuerySet


def fold_of(query_id: str, folds: int, seed: str = "lexir-folds") -> int:
    """The fold (0 .. folds-1) of ``query_id``: the first 32 bits of sha256 of ``SEED:ID``,
    modulo ``folds``. With ``seed="gerlayqa"`` these are the ``fold0`` .. ``fold4`` splits of the
    registered ``gerlayqa-dev`` (:mod:`lexir.datasets.lay`)."""
    if folds < 2:
        raise ValueError(f"folds must be at least 2 (got {folds})")
    return int(hashlib.sha256(f"{seed}:{query_id}".encode()).hexdigest()[:8], 16) % folds


def kfold_ids(query_ids: Iterable[str], folds: int = 5, seed: str = "lexir-folds") -> list[tuple[list[str], list[str]]]:
    """``folds`` pairs (training ids, evaluation ids), one per fold, each id evaluated exactly once;
    ids keep their given order within each list."""
    ids = list(dict.fromkeys(query_ids))
    which = [fold_of(qid, folds, seed) for qid in ids]
    return [([q for q, f in zip(ids, which, strict=True) if f != i],
             [q for q, f in zip(ids, which, strict=True) if f == i]) for i in range(folds)]


def holdout_ids(query_ids: Iterable[str], percent_held: int = 20,
                seed: str = "lexir-holdout") -> tuple[list[str], list[str]]:
    """A fixed split (training ids, held-out ids): an id is held out when its hash falls in the
    first ``percent_held`` of 100 buckets."""
    if not 0 < percent_held < 100:
        raise ValueError(f"percent_held must be between 1 and 99 (got {percent_held})")
    ids = list(dict.fromkeys(query_ids))
    held = [fold_of(q, 100, seed) < percent_held for q in ids]
    return ([q for q, h in zip(ids, held, strict=True) if not h], [q for q, h in zip(ids, held, strict=True) if h])


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
