"""Folds of a query set by a hash of each query id: the same ids always fall in the same fold,
whatever the order or the other queries, so a dataset's registered splits, an experiment, a
benchmark and a test that cut ``k`` folds of a set get the same folds, and a query added later
never moves another. (Folds of whole query sets, with duplicate texts kept together, are
:func:`lexir.learning.folds.kfold`.)"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def fold_of(query_id: str, folds: int, seed: str = "lexir-folds") -> int:
    """The fold (0 .. folds-1) of ``query_id``: the first 32 bits of sha256 of ``SEED:ID``,
    modulo ``folds``. With ``seed="gerlayqa"`` these are the ``fold0`` .. ``fold4`` splits of the
    registered ``gerlayqa-dev`` (:mod:`lexir.jurisdictions.de.lay`)."""
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
