"""Fusion of ranked lists: reciprocal rank fusion, weighted RRF and normalised score sums.

The functions take one result mapping per retriever (document id -> score, for one query)
and never modify their inputs. The systems ``rrf``, ``wrrf`` and ``combsum`` fuse the top
``depth`` of any number of systems named by a spec list (see :mod:`lexir.retrieval.spec`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from lexir.analysis.shape import first_person_words, in_first_person
from lexir.retrieval.base import Explanation, Retriever, get_system, register_system
from lexir.retrieval.context import BuildContext
from lexir.retrieval.params import COMMON, Param
from lexir.retrieval.spec import parse_spec_list
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


def parse_weights(text: str | Sequence[float] | None, n: int) -> list[float]:
    """Weights given as ``"1,0.7"`` (or a sequence); empty means 1 for every list."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return [1.0] * n
    if isinstance(text, str):
        try:
            weights = [float(w) for w in text.replace("+", ",").split(",")]
        except ValueError:
            raise ValueError(f"weights {text!r}: expected numbers separated by commas") from None
    else:
        weights = [float(w) for w in text]
    if len(weights) != n:
        raise ValueError(f"weights {text!r}: {len(weights)} weights for {n} systems")
    if not all(math.isfinite(w) and w >= 0 for w in weights):  # a NaN would make every fused score NaN
        raise ValueError(f"weights {text!r}: each weight must be a finite number, 0 or more")
    return weights


# -- run-level fusion (the verbs) -------------------------------------------------------------

FUSION_METHODS = ("rrf", "wrrf", "combsum")


def fusion_function(method: str, n: int, *, k: float = 60.0, k0: float = 20.0, weights=None,
                    norm: str = "minmax", depth: int = 100) -> Callable[[Sequence[Results]], dict[str, float]]:
    """The per-query fusion of ``n`` result lists that ``method`` names, with its parameters checked
    (``k``, ``k0`` and ``depth`` against the ranges the fusion systems declare: a negative constant
    would divide by zero at some rank)."""
    k, k0, depth = (COMMON[key].coerce(value, key) for key, value in (("k", k), ("k0", k0), ("depth", depth)))
    if method == "rrf":
        return lambda lists: rrf(lists, k, depth)
    if method == "wrrf":
        w = parse_weights(weights, n)
        return lambda lists: weighted_rrf(lists, w, k0, depth)
    if method == "combsum":
        w = parse_weights(weights, n)
        normalise({}, norm)  # validate the name before fusing anything
        return lambda lists: combsum(lists, w, norm, depth)
    raise ValueError(f"unknown fusion method {method!r}; valid: {', '.join(FUSION_METHODS)}")


def fuse(runs: Sequence[Run], method: str = "rrf", **params) -> Run:
    """Fuse whole runs query by query (the model is ranx's ``fuse``); inputs are not changed.

    ``method`` is ``rrf`` (``k``, ``depth``), ``wrrf`` (``weights``, ``k0``, ``depth``) or
    ``combsum`` (``weights``, ``norm``, ``depth``). A query missing from a run counts as an
    empty list there; the fused run holds every query of any input, best first.
    """
    if not runs:
        raise ValueError("fuse needs at least one run")
    return _fused(runs, method, fusion_params(method, params))


def _fused(runs: Sequence[Run], method: str, params: Mapping[str, Any]) -> Run:
    """:func:`fuse` with ``params`` already checked (a fused system's, at its build)."""
    combine = fusion_function(method, len(runs), **params)
    qids = list(dict.fromkeys(q for run in runs for q in run))
    return {q: dict(ranked(combine([run.get(q, {}) for run in runs]))) for q in qids}


def fusion_params(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` of the run-level fusion ``method`` typed and checked as its system declares them
    (``lexir systems rrf``: type, range); a parameter it does not take is a ValueError naming the
    method that does (``k0`` is wrrf's), never ignored; one that no fusion of runs takes (``systems``:
    the runs are the systems; the question-shape rules: runs hold no question text) says so, never
    pointing to another method that refuses it too. Weights given as a sequence of numbers (the
    Python API) are left to :func:`fusion_function`, which checks them against the runs."""
    if method not in FUSION_METHODS:
        raise ValueError(f"fusion method {method!r}: valid: {', '.join(FUSION_METHODS)}")
    declared = {key: p for key, p in get_system(method).params.items() if key not in SYSTEM_ONLY}
    values: dict[str, Any] = {}
    for key, value in params.items():
        if key in SYSTEM_ONLY:  # no fusion of runs takes it: no other method to point to
            raise ValueError(f"fusion of runs takes no parameter {key!r}: {SYSTEM_ONLY[key]}; valid for "
                             f"{method}: {', '.join(declared)}")
        if key not in declared:
            owners = [m for m in FUSION_METHODS if m != method and key in get_system(m).params]
            raise ValueError(f"{method} fusion has no parameter {key!r}; valid: {', '.join(declared)}"
                             + (f" ({key} is {' and '.join(owners)}'s: --method {owners[0]})" if owners else ""))
        values[key] = value if key == "weights" and not isinstance(value, str) else declared[key].coerce(value, key)
    return values


# A question of this many words or more is told, not typed: a case in the asker's own words, where
# meaning carries further than shared words. So is a question in the first person (``first_person``:
# "j'ai piqué le vélo de mon voisin"; statutes and exam stems speak in the third person). A weighted
# fusion may give told questions their own weights (``long_words``, ``first_person``,
# ``long_weights``); with neither rule on, every question gets ``weights``.
SHAPE_PARAMS = ("long_words", "long_weights", "first_person")

# Parameters of the fusion systems that fusion of run files can never take, and why.
_NO_TEXT = "it reads the questions' text, which run files do not hold (a fused system takes it: lexir systems wrrf)"
SYSTEM_ONLY = {"systems": "the run files are the systems", **{key: _NO_TEXT for key in SHAPE_PARAMS}}


def words(text: str) -> int:
    """The words of a question, as the long-question rule counts them (whitespace-separated)."""
    return len(text.split())


class FusedRetriever(Retriever):
    """Several systems' top ``depth`` fused by one of the run-level methods of :func:`fuse`; a
    weighted one may weigh the parts otherwise for long questions (``long_words``, ``long_weights``)."""

    def __init__(self, parts: list[Retriever], method: str, depth: int = 100, name: str = "",
                 part_names: Sequence[str] = (), language: str = "", **params) -> None:
        self.parts, self.method, self.depth, self.name = parts, method, depth, name or method
        self.language = language  # the corpus's: whose first-person words tell a told question
        self.part_names = list(part_names) or [getattr(p, "name", str(i)) for i, p in enumerate(parts)]
        self.params = {**params, "depth": depth}
        self._check(self.params)  # refuse bad parameters at build time

    def _check(self, params: Mapping[str, Any]) -> None:
        plain, long = self._fusion_params(params)
        fusion_function(self.method, len(self.parts), **plain)
        if long is not None:
            fusion_function(self.method, len(self.parts), **long)

    def _fusion_params(self, params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The fusion's parameters for questions under ``long_words`` words, and for longer ones
        (None when every question is fused alike)."""
        plain = {k: v for k, v in params.items() if k not in SHAPE_PARAMS}
        long_words = int(params.get("long_words") or 0)
        if long_words < 0:
            raise ValueError(f"long_words must be 0 (off) or a number of words; got {long_words}")
        if params.get("first_person"):
            if not self.language:
                raise ValueError("first_person needs the corpus's language (its first-person words)")
            first_person_words(self.language)  # a language without words fails here, naming the table
        elif not long_words:
            return plain, None
        if self.method not in ("wrrf", "combsum"):
            rule = "first_person" if params.get("first_person") else "long_words"
            raise ValueError(f"{rule} needs weights: {self.method} fusion has none")
        return plain, {**plain, "weights": params.get("long_weights") or plain.get("weights", "")}

    def _fuse(self, runs: Sequence[Run], queries: Sequence[Query]) -> Run:
        plain, long = self._fusion_params(self.params)
        if long is None:
            return _fused(runs, self.method, plain)
        told = {q.id for q in queries if self.told(q.text)}
        short_runs = [{q: r for q, r in run.items() if q not in told} for run in runs]
        long_runs = [{q: r for q, r in run.items() if q in told} for run in runs]
        return {**_fused(short_runs, self.method, plain), **_fused(long_runs, self.method, long)}

    def told(self, text: str) -> bool:
        """Whether a question is told (a case in the asker's words): at least ``long_words`` words,
        or in the first person with ``first_person`` on."""
        cut = int(self.params.get("long_words") or 0)
        return bool((cut and words(text) >= cut)
                    or (self.params.get("first_person") and in_first_person(text, self.language)))

    def with_params(self, values: Mapping[str, Any]) -> FusedRetriever:
        """The same parts fused with other parameters of the method (``k``, ``k0``, ``weights``,
        ``norm``, ``depth``): nothing is built again."""
        fixed = sorted(set(values) - set(self.params))
        if fixed:
            raise ValueError(f"{self.method} fusion has no parameter {', '.join(fixed)}")
        variant = copy.copy(self)
        variant.params = {**self.params, **values}
        variant.depth = variant.params["depth"]
        variant._check(variant.params)
        return variant

    def part_runs(self, queries: Sequence[Query]) -> list[Run]:
        """Each part's run (top ``depth``): what is fused, and what explains a fused hit."""
        return [part.search_many(queries, self.depth) for part in self.parts]

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        fused = self._fuse(self.part_runs(queries), queries)
        return self.each(queries, lambda q: ranked(fused.get(q.id, {}))[:k], progress)

    def explain_many(self, queries: Sequence[Query], k: int = 100) -> tuple[Run, Explanation]:
        """The fused run and, for each of its results, each part's rank and score in that part's
        top ``depth`` (parts written alike are numbered: ``0:bm25``, ``1:bm25``)."""
        runs = self.part_runs(queries)
        fused = self._fuse(runs, queries)
        names = list(self.part_names)
        if len(set(names)) < len(names):
            names = [f"{i}:{n}" for i, n in enumerate(names)]
        run: Run = {}
        explained: Explanation = {}
        for q in queries:
            top = dict(ranked(fused.get(q.id, {}))[:k])
            run[q.id] = top
            parts: dict[str, dict[str, dict[str, float]]] = {doc_id: {} for doc_id in top}
            for name, part in zip(names, runs, strict=True):
                for rank, (doc_id, score) in enumerate(ranked(part.get(q.id, {})), 1):
                    if doc_id in parts:
                        parts[doc_id][name] = {"rank": rank, "score": round(score, 6)}
            explained[q.id] = parts
        return run, explained


@register_system("rrf", "reciprocal rank fusion (k=60) of the top 100 of several systems",
                 systems="bm25+dense", k=60.0, depth=100)
def build_rrf(corpus: Corpus, *, systems, k, depth, context: BuildContext) -> FusedRetriever:
    specs = parse_spec_list(systems)
    return FusedRetriever(context.build_all(specs, corpus), "rrf", depth, part_names=[str(s) for s in specs], k=k)


LONG_WORDS = Param(0, "questions of at least this many words (told cases, not typed keywords) are fused with "
                   "long_weights (0: every question with weights)", type=int, low=0, high=100_000, query_time=True)
LONG_WEIGHTS = Param("", "the weights for told questions: at least long_words words, or in the first person with "
                     "first_person=true (empty: weights)", type=str, query_time=True)
FIRST_PERSON = Param(False, "questions in the first person (I, me, my: lexir/analysis/data/first_person.tsv, by the "
                     "corpus's language) are told cases, fused with long_weights", type=bool, query_time=True)


def _shape(long_words: int, long_weights: str, first_person: bool, n: int) -> dict[str, Any]:
    if long_weights:
        parse_weights(long_weights, n)
    return {"long_words": long_words, "long_weights": long_weights, "first_person": first_person}


@register_system("wrrf", "weighted reciprocal rank fusion with its own k0 and per-system weights",
                 systems="bm25+dense", weights="", k0=20.0, depth=100, long_words=LONG_WORDS,
                 long_weights=LONG_WEIGHTS, first_person=FIRST_PERSON)
def build_wrrf(corpus: Corpus, *, systems, weights, k0, depth, long_words, long_weights, first_person,
               context: BuildContext) -> FusedRetriever:
    specs = parse_spec_list(systems)
    parse_weights(weights, len(specs))  # refuse a wrong count before building anything
    shape = _shape(long_words, long_weights, first_person, len(specs))
    return FusedRetriever(context.build_all(specs, corpus), "wrrf", depth, part_names=[str(s) for s in specs],
                          language=corpus.language, weights=weights, k0=k0, **shape)


@register_system("combsum", "weighted sum of normalised scores (minmax or zscore) of several systems",
                 systems="bm25+dense", weights="", norm="minmax", depth=100, long_words=LONG_WORDS,
                 long_weights=LONG_WEIGHTS, first_person=FIRST_PERSON)
def build_combsum(corpus: Corpus, *, systems, weights, norm, depth, long_words, long_weights, first_person,
                  context: BuildContext) -> FusedRetriever:
    specs = parse_spec_list(systems)
    parse_weights(weights, len(specs))
    normalise({}, norm)
    shape = _shape(long_words, long_weights, first_person, len(specs))
    return FusedRetriever(context.build_all(specs, corpus), "combsum", depth,
                          part_names=[str(s) for s in specs], language=corpus.language, weights=weights, norm=norm,
                          **shape)
