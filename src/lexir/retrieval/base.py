"""The one interface every retriever has, and the registry of named systems.

A retriever answers ``search(text, k)`` with (document id, score) pairs, best first, and
``search_many(queries, k)`` with a :data:`~lexir.types.Run`. Systems are registered by name
with their parameters and defaults, so ``lexir run --system bm25 --param k1=0.9`` and an
experiment file build them the same way.
"""

from __future__ import annotations

import copy
import inspect
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import numpy as np

from lexir.retrieval.context import BuildContext
from lexir.retrieval.params import Param, declare
from lexir.types import Corpus, Query, Run, ranked

# How many results a run keeps per query, unless told otherwise (TREC's customary 100).
RUN_DEPTH = 100

# The id the one-question wrapper gives its question; no retriever makes up ids of its own.
SEARCH_QID = "search"


def check_k(k: Any) -> int:
    """``k`` where it is a whole number of results, at least 1; else a ValueError naming it."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k: the number of results, a whole number of at least 1; got {k!r}")
    return k


class Retriever(ABC):
    """What every system is. A retriever implements one method, :meth:`search_many`; one
    question through :meth:`search` is a batch of one. Retrievers that score one question
    at a time build their batch with :meth:`each`, which also reports progress."""

    name: str = "retriever"
    # The query-time parameters (see lexir.retrieval.params.Param.query_time) this retriever takes
    # without a new index: each is an attribute of the same name that :meth:`with_params` replaces.
    query_params: frozenset[str] = frozenset()

    @abstractmethod
    def search_many(
        self, queries: Sequence[Query], k: int = 100, progress: Callable[[int], None] | None = None
    ) -> Run:
        """The best ``k`` documents of each query; ``progress(n)`` after every ``n`` answered.
        An empty or all-stopword query gets an empty result, never an error."""

    def search(self, text: str, k: int = 100) -> list[tuple[str, float]]:
        """Best ``k`` documents for ``text``, best first."""
        if not isinstance(text, str):
            raise TypeError(f"text: a question as a string; got {type(text).__name__} (several questions: "
                            "search_many([Query(id, text), ...], k))")
        return ranked(self.search_many([Query(SEARCH_QID, text)], check_k(k)).get(SEARCH_QID, {}))

    def with_params(self, values: Mapping[str, Any]) -> Retriever:
        """This retriever with query-time parameters changed, sharing its index (a shallow copy:
        ``self`` is not changed). ``ValueError`` for a parameter it cannot change so."""
        fixed = sorted(set(values) - self.query_params)
        if fixed:
            raise ValueError(f"{type(self).__name__} cannot change {', '.join(fixed)} without a new index")
        variant = copy.copy(self)
        for key, value in values.items():
            setattr(variant, key, value)
        return variant

    @staticmethod
    def each(
        queries: Sequence[Query],
        one: Callable[[Query], Iterable[tuple[str, float]]],
        progress: Callable[[int], None] | None = None,
    ) -> Run:
        """A run from answering the queries one by one with ``one(query)``."""
        run: Run = {}
        for query in queries:
            run[query.id] = dict(one(query))
            if progress:
                progress(1)
        return run


# Per query id, per document: each part's {"rank", "score"} (what a fused hit is made of).
Explanation = dict[str, dict[str, dict[str, dict[str, float]]]]


@runtime_checkable
class Explains(Protocol):
    """A retriever that can say what each of its results is made of (a fused system: each part's
    rank and score), from the same searches that rank them."""

    def explain_many(self, queries: Sequence[Query], k: int = 100) -> tuple[Run, Explanation]:
        """The run of :meth:`Retriever.search_many` and, for each of its results, its parts."""


@lru_cache(maxsize=256)
def _explains(kind: type) -> bool:
    return issubclass(kind, Explains)


def explains(retriever: Any) -> bool:
    """Whether ``retriever`` is :class:`Explains` (asked once per class: a protocol check costs
    more than a BM25 search)."""
    return _explains(type(retriever))


def top_scores(scores: np.ndarray, doc_ids: Sequence[str], k: int) -> list[tuple[str, float]]:
    """The best ``k`` documents of a full score vector, best first (ties by position); a
    document scoring zero or less matched nothing and is not a result."""
    k = min(k, len(doc_ids))
    if k <= 0:
        return []
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.lexsort((best, -scores[best]))]
    return [(doc_ids[i], float(scores[i])) for i in best if scores[i] > 0]


@dataclass
class System:
    """A named way to build a retriever over a corpus, with its typed parameters."""

    name: str
    factory: Callable[..., Retriever]
    description: str
    params: dict[str, Param] = field(default_factory=dict)
    # For a system that only stands for another spec chosen per corpus (``recommended``: per legal
    # order and language): (language, jurisdiction=code, **resolved parameters) -> that spec. What
    # it builds then changes with its table (or its model), not with its name.
    stands_for: Callable[..., str] | None = None
    # For a system that encodes the corpus with a model (``dense``): (corpus, **resolved parameters)
    # -> how many of the corpus's passages the embedding cache lacks, what a build would encode first.
    to_encode: Callable[..., int] | None = None

    @property
    def defaults(self) -> dict[str, Any]:
        return {key: p.default for key, p in self.params.items()}

    def spec_params(self) -> dict[str, str]:
        """Parameters whose value names other systems: name -> SPEC or SPEC_LIST."""
        return {key: p.names_systems for key, p in self.params.items() if p.names_systems}

    def resolve(self, params: Mapping[str, Any] | None = None, strict: Mapping[str, Any] | None = None
                ) -> dict[str, Any]:
        """The full parameter set: defaults overridden by ``params``, then by ``strict`` (typed
        values, as from a JSON body: no string parsed as a number or a flag), each coerced to its
        type and checked against its range and allowed values."""
        values = self.defaults
        for given, is_strict in ((params, False), (strict, True)):
            for key, value in (given or {}).items():
                if key not in self.params:
                    valid = ", ".join(sorted(self.params)) or "(none)"
                    raise ValueError(f"system {self.name!r} has no parameter {key!r}; valid: {valid}")
                values[key] = self.params[key].coerce(value, key, strict=is_strict)
        return values

    def query_time(self) -> list[str]:
        """The parameters that a built retriever of this system may change per query."""
        return [key for key, p in self.params.items() if p.query_time]

    def build(self, corpus: Corpus, params: Mapping[str, Any] | None = None,
              context: BuildContext | None = None) -> Retriever:
        """The factory over ``corpus`` with the resolved ``params``; a factory that declares
        ``context`` gets the :class:`~lexir.retrieval.context.BuildContext` (a composite builds its
        parts with it), one that declares ``progress`` gets its callback. Build systems through
        :func:`lexir.retrieval.build.build_retriever`, which makes the context (and its builder)."""
        context = context if context is not None else BuildContext()
        values = self.resolve(params)
        accepted = inspect.signature(self.factory).parameters
        extra = {key: value for key, value in (("context", context), ("progress", context.progress))
                 if key in accepted}
        return self.factory(corpus, **values, **extra)


_SYSTEMS: dict[str, System] = {}

# What a factory once took by name beside its parameters and now reads from its context.
LOOSE_CONTEXT = frozenset({"qrels", "client"})


def register_system(name: str, description: str, *, stands_for: Callable[..., str] | None = None,
                    to_encode: Callable[..., int] | None = None, **defaults: Any):
    """Decorator: ``@register_system("bm25", "...", k1=1.2, b=0.75)`` over a factory.
    ``stands_for``: (language, jurisdiction=code, **parameters) -> the spec the system builds (see :attr:`System.stands_for`);
    ``to_encode``: (corpus, **parameters) -> the passages a build would encode first (:attr:`System.to_encode`)."""

    def wrap(factory: Callable[..., Retriever]) -> Callable[..., Retriever]:
        if name in _SYSTEMS:
            raise ValueError(f"system {name!r} registered twice")
        loose = sorted(LOOSE_CONTEXT & set(inspect.signature(factory).parameters) - set(defaults))
        if loose:
            raise TypeError(f"system {name!r}: the factory takes {', '.join(loose)} loose; declare a `context` "
                            f"parameter and read context.{loose[0]} (lexir.retrieval.context.BuildContext)")
        _SYSTEMS[name] = System(name, factory, description,
                                {key: declare(key, value) for key, value in defaults.items()}, stands_for, to_encode)
        return factory

    return wrap


def get_system(name: str) -> System:
    _load_builtin_systems()
    try:
        return _SYSTEMS[name]
    except KeyError:
        raise ValueError(f"unknown system {name!r}; valid: {', '.join(sorted(_SYSTEMS))}") from None


def system_names() -> list[str]:
    _load_builtin_systems()
    return sorted(_SYSTEMS)


# Modules whose import registers systems: retrieval's own. The layers above retrieval that
# register systems (llm, learning) are added by :mod:`lexir.systems`, the catalogue above them all,
# which ``import lexir`` loads; retrieval never names them. A module that is not installed (an
# optional part) is skipped; any other import error is a bug and propagates.
SYSTEM_MODULES = [
    "lexir.retrieval.bm25",
    "lexir.retrieval.incremental",
    "lexir.retrieval.peers",
    "lexir.retrieval.dense",
    "lexir.retrieval.feedback",
    "lexir.retrieval.fusion",
    "lexir.retrieval.controls",
    "lexir.retrieval.cascade",
    "lexir.retrieval.structured",
    "lexir.retrieval.evidence",
]


def add_system_modules(*modules: str) -> None:
    """Registers ``modules`` (dotted names) as ones whose import registers systems; imported on
    the first :func:`get_system` or :func:`system_names`."""
    SYSTEM_MODULES.extend(m for m in modules if m not in SYSTEM_MODULES)


def _load_builtin_systems() -> None:
    import importlib

    for module in tuple(SYSTEM_MODULES):
        if module in sys.modules:
            continue
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if not err.name or not (module == err.name or module.startswith(err.name + ".")):
                raise


def parse_params(pairs: Iterable[str]) -> dict[str, str]:
    """``["k1=0.9", "mode=stem"]`` -> ``{"k1": "0.9", "mode": "stem"}``."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"parameter {pair!r} is not of the form key=value")
        params[key.strip()] = value.strip()
    return params


def coerce(value: Any, default: Any, key: str) -> Any:
    """Turn a command-line string into the type of the parameter's default."""
    return Param(default).coerce(value, key)
