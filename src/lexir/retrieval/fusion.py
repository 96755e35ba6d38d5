"""Fusion of ranked lists: reciprocal rank fusion, weighted RRF and normalised score sums.

The functions take one result mapping per retriever (document id -> score, for one query)
and never modify their inputs. The systems ``rrf``, ``wrrf`` and ``combsum`` fuse the top
``depth`` of any number of systems named by a spec list (see :mod:`lexir.retrieval.spec`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.spec import Spec, parse_spec_list
from lexir.types import Corpus, Query, Run, ranked

Results = Mapping[str, float]
NORMS = ("minmax", "zscore", "none")


def rrf(lists: Sequence[Results], k: float = 60.0, depth: int = 100) -> dict[str, float]:
    """Reciprocal rank fusion: sum over lists of 1 / (k + rank)."""
    return weighted_rrf(lists, [1.0] * len(lists), k, depth)


def weighted_rrf(lists: Sequence[Results], weights: Sequence[float], k0: float = 20.0,
                 depth: int = 100) -> dict[str, float]:
    """Weighted RRF: sum over lists of w_i / (k0 + rank_i)."""
    if len(weights) != len(lists):
        raise ValueError(f"{len(weights)} weights for {len(lists)} ranked lists")
    fused: dict[str, float] = {}
    for weight, results in zip(weights, lists, strict=True):
        for rank, (doc, _score) in enumerate(ranked(results)[:depth], 1):
            fused[doc] = fused.get(doc, 0.0) + weight / (k0 + rank)
    return fused


def normalise(results: Results, norm: str = "minmax") -> dict[str, float]:
    if norm not in NORMS:
        raise ValueError(f"unknown score normalisation {norm!r}; valid: {', '.join(NORMS)}")
    if not results or norm == "none":
        return dict(results)
    values = np.fromiter(results.values(), dtype=float)
    if norm == "minmax":
        low, span = values.min(), values.max() - values.min()
        scaled = (values - low) / span if span > 0 else np.ones_like(values)
    else:
        std = values.std()
        scaled = (values - values.mean()) / std if std > 0 else np.zeros_like(values)
    return dict(zip(results.keys(), scaled.tolist(), strict=True))


def combsum(lists: Sequence[Results], weights: Sequence[float] | None = None, norm: str = "minmax",
            depth: int = 100) -> dict[str, float]:
    """Weighted sum of per-list normalised scores (a document missing from a list adds 0)."""
    weights = list(weights) if weights is not None else [1.0] * len(lists)
    if len(weights) != len(lists):
        raise ValueError(f"{len(weights)} weights for {len(lists)} ranked lists")
    fused: dict[str, float] = {}
    for weight, results in zip(weights, lists, strict=True):
        for doc, score in normalise(dict(ranked(results)[:depth]), norm).items():
            fused[doc] = fused.get(doc, 0.0) + weight * score
    return fused


def parse_weights(text: str, n: int) -> list[float]:
    if not text:
        return [1.0] * n
    try:
        weights = [float(w) for w in str(text).replace("+", ",").split(",")]
    except ValueError:
        raise ValueError(f"weights {text!r}: expected numbers separated by commas") from None
    if len(weights) != n:
        raise ValueError(f"weights {text!r}: {len(weights)} weights for {n} systems")
    return weights


def build_parts(corpus: Corpus, specs: list[Spec], progress=None) -> list[Retriever]:
    from lexir.retrieval.build import build_spec

    return [build_spec(corpus, str(spec)) for spec in specs]


class FusedRetriever(Retriever):
    def __init__(self, parts: list[Retriever], fuse: Callable[[list[Results]], dict[str, float]],
                 depth: int = 100, name: str = "fusion") -> None:
        self.parts, self.fuse, self.depth, self.name = parts, fuse, depth, name

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        runs = [part.search_many(queries, self.depth) for part in self.parts]
        return self.each(queries, lambda q: ranked(self.fuse([run.get(q.id, {}) for run in runs]))[:k], progress)


@register_system("rrf", "reciprocal rank fusion (k=60) of the top 100 of several systems",
                 systems="bm25+dense", k=60.0, depth=100)
def build_rrf(corpus: Corpus, *, systems, k, depth, progress=None) -> FusedRetriever:
    parts = build_parts(corpus, parse_spec_list(systems), progress)
    return FusedRetriever(parts, lambda lists: rrf(lists, k, depth), depth, "rrf")


@register_system("wrrf", "weighted reciprocal rank fusion with its own k0 and per-system weights",
                 systems="bm25+dense", weights="", k0=20.0, depth=100)
def build_wrrf(corpus: Corpus, *, systems, weights, k0, depth, progress=None) -> FusedRetriever:
    specs = parse_spec_list(systems)
    w = parse_weights(weights, len(specs))
    parts = build_parts(corpus, specs, progress)
    return FusedRetriever(parts, lambda lists: weighted_rrf(lists, w, k0, depth), depth, "wrrf")


@register_system("combsum", "weighted sum of normalised scores (minmax or zscore) of several systems",
                 systems="bm25+dense", weights="", norm="minmax", depth=100)
def build_combsum(corpus: Corpus, *, systems, weights, norm, depth, progress=None) -> FusedRetriever:
    specs = parse_spec_list(systems)
    w = parse_weights(weights, len(specs))
    normalise({}, norm)  # validate the name before building anything
    parts = build_parts(corpus, specs, progress)
    return FusedRetriever(parts, lambda lists: combsum(lists, w, norm, depth), depth, "combsum")
