"""Building a system over a corpus: by name and parameters, or from a spec string, through
the index cache.

This is the one place where a system is built. Composite systems (fusion, feedback,
cascade, controls, LLM and trained systems) build their parts through the
:class:`~lexir.retrieval.context.BuildContext` they are given, whose builder is
:func:`build_retriever`, so every part goes through the same cache (or none), the same parameter
checks, the same gold and LLM client; :func:`lexir.build` is the public face over it.

Indexes that can be saved (a retriever with ``save`` and a class-level ``load``) are cached
under ``cache_dir()/indexes``, keyed by everything that changes the index: the system, its
resolved parameters, the corpus fingerprint, the corpus language (which picks the analyzer
when the parameters leave it open), :data:`INDEX_FORMAT` and a digest of the code that makes an
index (analysis with its word lists, retrieval, structure: :func:`index_code_digest`), so an
index built before a stopword list or a tokenizer changed is rebuilt, never served. An entry is
saved as one generation of its folder (:mod:`lexir.io.generations`), the retriever's files with
the marker that makes it an entry, so a crash leaves the entry complete or absent; a damaged
entry is rebuilt, never trusted; an entry another process is writing is not written twice.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from lexir.analysis.defaults import auto_analysis
from lexir.io.generations import FolderLocked, new_generation, read_current
from lexir.io.markers import read_marker, write_marker
from lexir.io.paths import cache_dir, code_digest, safe_name
from lexir.retrieval.base import Retriever, get_system
from lexir.retrieval.context import BuildContext
from lexir.retrieval.spec import Spec, parse_spec, parse_spec_list
from lexir.types import Corpus, DocumentStream, Qrels

log = logging.getLogger(__name__)

# Bump when a saved index of any system changes meaning: older cache entries stop matching.
INDEX_FORMAT = 2
CACHE_MARKER = "lexir-cache.json"


@lru_cache(maxsize=1)
def index_code_digest() -> str:
    """The digest of the code an index depends on: analysis (tokenizers, stemmers' settings, word
    lists), retrieval (index formats), structure (units, chunking) and the jurisdictions' parsers,
    which make the unit trees that unit and chunk indexes are cut from (the corpus fingerprint
    holds the texts, not the trees)."""
    package = Path(__file__).resolve().parents[1]
    return code_digest(package / "analysis", package / "retrieval", package / "structure", package / "jurisdictions")


def index_key(system: str, params: Mapping[str, Any], corpus: Corpus) -> str:
    """The cache key of ``system`` with resolved ``params`` over ``corpus``."""
    from lexir.jurisdiction import named_order

    order = named_order(corpus)  # only where the language does not say it: older keys stay as they were
    blob = json.dumps({"system": system, "params": dict(sorted(params.items())),
                       "corpus": corpus.fingerprint, "language": corpus.language,
                       "auto": auto_analysis(corpus.language), **({"jurisdiction": order} if order else {}),
                       "format": INDEX_FORMAT, "code": index_code_digest()}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def index_folder(system: str, params: Mapping[str, Any], corpus: Corpus) -> Path:
    return cache_dir() / "indexes" / f"{safe_name(corpus.name, 'corpus')}-{safe_name(system)}-" \
                                     f"{index_key(system, params, corpus)}"


# The systems a DocumentStream can be built into (they read each document once per pass, in order).
STREAMED = ("bm25",)


def build_retriever(
    corpus: Corpus,
    system: str,
    params: Mapping[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
    cache: bool = True,
    context: BuildContext | None = None,
    *,
    qrels: Qrels | None = None,
    client: Any = None,
) -> Retriever:
    """Build ``system`` over ``corpus``, or load its saved index from the cache (a
    :class:`~lexir.types.DocumentStream`, read once by the build, is always built: its cache key,
    the fingerprint, is known only after it).

    ``system`` is a name (``bm25``) or a spec (``bm25(k1=0.9;mode=stem)``); ``params``
    override the spec's. ``qrels`` (for the oracle controls) and ``client`` (for LLM systems),
    with ``progress`` and ``cache``, make the :class:`~lexir.retrieval.context.BuildContext` the
    system and each of its parts are built with; ``context`` is one already made (what
    :meth:`BuildContext.build <lexir.retrieval.context.BuildContext.build>` passes for a part),
    given instead of those four.
    """
    if context is None:
        context = BuildContext(qrels=qrels, client=client, progress=progress, cache=cache, builder=build_retriever)
    elif progress is not None or not cache or qrels is not None or client is not None:
        raise TypeError("build_retriever: give either context or progress/cache/qrels/client, not both")
    elif context.builder is None:
        context = replace(context, builder=build_retriever)
    spec = parse_spec(system)
    values = {**spec.param_dict, **dict(params or {})}
    definition = get_system(spec.name)
    if isinstance(corpus, DocumentStream) and spec.name not in STREAMED:
        raise ValueError(f"system {spec.name!r} needs the corpus itself (lexir.load); a stream of documents "
                         f"({corpus.name!r}) builds only: {', '.join(STREAMED)}")
    resolved = definition.resolve(values)
    if not context.cache or isinstance(corpus, DocumentStream):  # a stream's key is known only once read
        return definition.build(corpus, resolved, context)
    folder = index_folder(spec.name, resolved, corpus)
    try:
        cached = read_current(folder, lambda path: _cache_entry(path, corpus))
    except (OSError, ValueError, KeyError, ImportError, AttributeError) as exc:
        # a damaged cache entry is rebuilt (a new generation), not trusted, and the operator told
        log.warning("the cached index %s cannot be used (%s: %s); building it again", folder, type(exc).__name__, exc)
        cached = None
    if cached is not None:
        return cached
    retriever = definition.build(corpus, resolved, context)
    cache_index(retriever, folder)
    return retriever


def cache_index(retriever: Retriever, folder: Path) -> bool:
    """Save a saveable retriever as the index cache entry ``folder`` (see :func:`index_folder`);
    False for one that cannot be saved."""
    if not (hasattr(retriever, "save") and hasattr(type(retriever), "load")):
        return False
    cls = type(retriever)
    try:
        with new_generation(folder, timeout=0) as gen:
            retriever.save(gen.path)
            write_marker(gen / CACHE_MARKER, {"format": INDEX_FORMAT, "class": f"{cls.__module__}:{cls.__qualname__}"})
    except FolderLocked:
        return False  # another process is saving this entry (the same index: same key)
    return True


def _cache_entry(folder: Path, corpus: Corpus) -> Retriever | None:
    marker = folder / CACHE_MARKER
    if not marker.is_file():
        return None
    return _load_cached(folder, read_marker(marker, "cached index", INDEX_FORMAT)["class"], corpus)


def effective_spec(system: str, params: Mapping[str, Any] | None, language: str, jurisdiction: str = "") -> str:
    """The full spec ``system`` with ``params`` builds over a corpus in ``language`` of the legal
    order ``jurisdiction`` ("" when unknown): every parameter resolved, every system that stands for
    another (``recommended``) replaced by what it stands for there, recursively through the parts
    of composite systems.

    Two calls give the same string exactly when the same pipeline is built, so it is the key
    for anything saved from a system's output (an experiment's runs): editing the table behind
    ``recommended`` changes the key, its name does not hide it.
    """
    spec = parse_spec(system)
    definition = get_system(spec.name)
    values = {**spec.param_dict, **dict(params or {})}
    resolved = definition.resolve(values)  # refuses parameters the system does not take
    if definition.stands_for is not None:  # given the resolved parameters too (recommended's model=DIR)
        target = parse_spec(definition.stands_for(language, jurisdiction=jurisdiction, **resolved))
        if target.name != spec.name:
            return effective_spec(str(target), None, language, jurisdiction)
        # a system that stands for itself with parameters filled in (bm25-qa: its model's digest)
        resolved = definition.resolve(target.param_dict)
    for key in definition.spec_params():
        if not str(resolved[key]).strip():
            continue
        resolved[key] = "+".join(effective_spec(str(part), None, language, jurisdiction)
                                 for part in parse_spec_list(str(resolved[key])))
    return str(Spec(spec.name, tuple((k, str(v)) for k, v in sorted(resolved.items()))))


def passages_to_encode(corpus: Corpus, system: str, params: Mapping[str, Any] | None = None) -> int:
    """How many passages of ``corpus`` building ``system`` (with ``params``) would encode first: what
    its parts that encode the corpus with a model (``dense``) find missing from the embedding cache,
    summed over them (through every system that stands for another, ``recommended``, and every part
    of a composite). 0: the build encodes nothing, so it takes seconds, not minutes."""
    spec = parse_spec(effective_spec(system, params, corpus.language, corpus.jurisdiction))
    definition = get_system(spec.name)
    resolved = definition.resolve(spec.param_dict)
    total = definition.to_encode(corpus, **resolved) if definition.to_encode is not None else 0
    for key in definition.spec_params():
        if str(resolved[key]).strip():
            total += sum(passages_to_encode(corpus, str(part)) for part in parse_spec_list(str(resolved[key])))
    return total


def _load_cached(folder: Path, class_path: str, corpus: Corpus | None = None) -> Retriever:
    """``class_path`` (``module:Class``)'s ``load(folder)``; the corpus goes along to a class
    whose index takes what it does not save from the corpus (bm25-chunks: its unit table)."""
    module, _, qualname = class_path.partition(":")
    cls = getattr(importlib.import_module(module), qualname)
    if corpus is not None and "corpus" in inspect.signature(cls.load).parameters:
        return cls.load(folder, corpus=corpus)
    return cls.load(folder)


# -- saved index folders (lexir index / --index) ---------------------------------------------

INDEX_MARKER = "lexir-index.json"


def save_index(retriever: Retriever, folder: str | Path, system: str = "") -> Path:
    """Save any saveable retriever to ``folder`` with a marker naming its class, so that
    :func:`load_index` can open it without being told what it is."""
    if not (hasattr(retriever, "save") and hasattr(type(retriever), "load")):
        raise ValueError(f"system {system or retriever.name!r} cannot be saved as an index "
                         "(saveable: bm25, dense, dense-rocchio, bm25-chunks ...)")
    folder = Path(folder)
    cls = type(retriever)
    with new_generation(folder) as gen:  # the retriever's files and the marker: one generation
        retriever.save(gen.path)
        write_marker(gen / INDEX_MARKER, {"format": INDEX_FORMAT, "class": f"{cls.__module__}:{cls.__qualname__}",
                                          "system": system})
    return folder


# The class that saved a folder without either marker, by the ``system`` its own ``lexir.json``
# names (folders written by a retriever's ``save`` alone, and before ``lexir.json`` named its class).
SAVED_BY = {
    "bm25": "lexir.retrieval.bm25:BM25Retriever",
    "bm25-inc": "lexir.retrieval.incremental:IncrementalBM25",
    "bm25-chunks": "lexir.retrieval.structured:ChunkRetriever",
    "dense": "lexir.retrieval.dense:DenseRetriever",
    "dense-rocchio": "lexir.retrieval.dense:DenseRetriever",
}


def load_index(folder: str | Path, corpus: Corpus | None = None) -> Retriever:
    """A saved index; with ``corpus``, refused unless it was built from that corpus's text.

    The class to load it with is named by :func:`save_index`'s marker, else by the folder's
    own ``lexir.json`` (what a retriever's ``save`` writes: its ``class``, or its ``system``).
    It reads the folder's current generation (:mod:`lexir.io.generations`), or the folder itself
    when it was saved before generations."""
    folder = Path(folder)
    retriever = read_current(folder, lambda path: _load_index_at(path, corpus))
    fingerprint = getattr(retriever, "fingerprint", None)
    if corpus is not None and fingerprint and fingerprint != corpus.fingerprint:
        raise ValueError(f"index {folder} was built from a different corpus than {corpus.name!r}")
    return retriever


def _load_index_at(folder: Path, corpus: Corpus | None) -> Retriever:
    marker = folder / INDEX_MARKER
    if marker.is_file():
        class_path = read_marker(marker, "lexir index", INDEX_FORMAT)["class"]
    else:
        own = read_marker(folder / "lexir.json", "lexir index")
        class_path = own.get("class") or SAVED_BY.get(own.get("system", "bm25"), "")
        if not class_path:
            raise ValueError(f"{folder / 'lexir.json'}: unknown system {own.get('system')!r}; "
                             f"valid: {', '.join(SAVED_BY)}")
    return _load_cached(folder, class_path, corpus)
