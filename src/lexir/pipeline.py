"""The public face over building and running systems (see :mod:`lexir.retrieval.build`).

Kept for code written against it; new code imports :mod:`lexir` (``lexir.build``,
``lexir.retrieve``) or, below the public face, :mod:`lexir.retrieval.build`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lexir.io.paths import cache_dir
from lexir.retrieval.base import RUN_DEPTH, Retriever
from lexir.retrieval.build import CACHE_MARKER, INDEX_FORMAT, build_retriever, build_spec, index_key
from lexir.types import Query, Run

__all__ = ["CACHE_MARKER", "INDEX_FORMAT", "RUN_DEPTH", "build_retriever", "build_spec", "cache_dir", "index_key",
           "retrieve"]


def retrieve(
    retriever: Retriever, queries: Sequence[Query], k: int = RUN_DEPTH,
    progress: Callable[[int], None] | None = None,
) -> Run:
    return retriever.search_many(list(queries), k=k, progress=progress)
