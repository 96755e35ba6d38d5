"""Building a system over a corpus: by name and parameters, or from a spec string, through
the index cache.

This is the one place where a system is built. Composite systems (fusion, feedback,
cascade, controls, LLM systems) build their parts through :func:`build_spec`, so every part
goes through the same cache and the same parameter checks; :mod:`lexir.pipeline` is only
the public face over it.

Indexes that can be saved (a retriever with ``save`` and a class-level ``load``) are cached
under ``cache_dir()/indexes``, keyed by everything that changes the index: the system, its
resolved parameters, the corpus fingerprint, the corpus language (which picks the analyzer
when the parameters leave it open) and :data:`INDEX_FORMAT`. The folder is complete only
once its marker is written (atomically, by :mod:`lexir.io.markers`); a damaged entry is
rebuilt, never trusted.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lexir.io.markers import read_marker, write_marker
from lexir.io.paths import cache_dir, safe_name
from lexir.retrieval.base import Retriever, get_system
from lexir.retrieval.spec import parse_spec
from lexir.types import Corpus

# Bump when a saved index of any system changes meaning: older cache entries stop matching.
INDEX_FORMAT = 2
CACHE_MARKER = "lexir-cache.json"


def index_key(system: str, params: Mapping[str, Any], corpus: Corpus) -> str:
    """The cache key of ``system`` with resolved ``params`` over ``corpus``."""
    blob = json.dumps({"system": system, "params": dict(sorted(params.items())),
                       "corpus": corpus.fingerprint, "language": corpus.language,
                       "format": INDEX_FORMAT}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def index_folder(system: str, params: Mapping[str, Any], corpus: Corpus) -> Path:
    return cache_dir() / "indexes" / f"{safe_name(corpus.name, 'corpus')}-{safe_name(system)}-" \
                                     f"{index_key(system, params, corpus)}"


def build_retriever(
    corpus: Corpus,
    system: str,
    params: Mapping[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
    cache: bool = True,
    **context: Any,
) -> Retriever:
    """Build ``system`` over ``corpus``, or load its saved index from the cache.

    ``system`` is a name (``bm25``) or a spec (``bm25(k1=0.9;mode=stem)``); ``params``
    override the spec's. ``context`` carries what some systems need beyond parameters
    (``qrels`` for the oracle controls, ``client`` for LLM systems); a system takes only the
    context its factory names.
    """
    spec = parse_spec(system)
    values = {**spec.param_dict, **dict(params or {})}
    definition = get_system(spec.name)
    resolved = definition.resolve(values)
    if not cache:
        return definition.build(corpus, resolved, progress=progress, **context)
    folder = index_folder(spec.name, resolved, corpus)
    marker = folder / CACHE_MARKER
    if marker.is_file():
        try:
            return _load_cached(folder, read_marker(marker, "cached index", INDEX_FORMAT))
        except (OSError, ValueError, KeyError, ImportError, AttributeError):
            shutil.rmtree(folder, ignore_errors=True)  # a damaged cache entry is rebuilt, not trusted
    retriever = definition.build(corpus, resolved, progress=progress, **context)
    if hasattr(retriever, "save") and hasattr(type(retriever), "load"):
        retriever.save(folder)
        cls = type(retriever)
        # The marker is written last: it is what makes the folder a usable cache entry.
        write_marker(marker, {"format": INDEX_FORMAT, "class": f"{cls.__module__}:{cls.__qualname__}"})
    return retriever


def build_spec(corpus: Corpus, spec_text: str, progress: Callable[[int], None] | None = None,
               **context: Any) -> Retriever:
    """A retriever for a system spec such as ``bm25(mode=stem)``, through the index cache."""
    return build_retriever(corpus, spec_text, progress=progress, **context)


def _load_cached(folder: Path, marker: dict) -> Retriever:
    module, _, qualname = marker["class"].partition(":")
    cls = getattr(importlib.import_module(module), qualname)
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
    retriever.save(folder)
    cls = type(retriever)
    write_marker(folder / INDEX_MARKER, {"format": INDEX_FORMAT, "class": f"{cls.__module__}:{cls.__qualname__}",
                                         "system": system})
    return folder


def load_index(folder: str | Path, corpus: Corpus | None = None) -> Retriever:
    """A saved index; with ``corpus``, refused unless it was built from that corpus's text."""
    folder = Path(folder)
    marker = folder / INDEX_MARKER
    if marker.is_file():
        retriever = _load_cached(folder, read_marker(marker, "lexir index", INDEX_FORMAT))
    else:  # folders saved by BM25Retriever.save alone (before the marker existed)
        from lexir.retrieval.bm25 import BM25Retriever

        retriever = BM25Retriever.load(folder)
    fingerprint = getattr(retriever, "fingerprint", None)
    if corpus is not None and fingerprint and fingerprint != corpus.fingerprint:
        raise ValueError(f"index {folder} was built from a different corpus than {corpus.name!r}")
    return retriever
