"""The Python API behind ``lexir index``/``run``: build (or reuse) a retriever, run queries.

Indexes that can be saved are cached under the cache directory (``LEXIR_CACHE``, else
``$XDG_CACHE_HOME/lexir`` or ``~/.cache/lexir``), keyed by system, parameters and a
fingerprint of the corpus text, so a second run over the same corpus reads the index
memory-mapped instead of rebuilding it, and a changed corpus never meets a stale index.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lexir.retrieval.base import Retriever, get_system
from lexir.retrieval.bm25 import corpus_fingerprint
from lexir.types import Corpus, Query, Run

RUN_DEPTH = 100


def cache_dir() -> Path:
    env = os.environ.get("LEXIR_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "lexir"


def index_key(system: str, params: Mapping[str, Any], corpus: Corpus) -> str:
    blob = json.dumps({"system": system, "params": dict(sorted(params.items())),
                       "corpus": corpus_fingerprint(corpus)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def build_retriever(
    corpus: Corpus,
    system: str,
    params: Mapping[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
    cache: bool = True,
    **context: Any,
) -> Retriever:
    """Build ``system`` over ``corpus``, or load its saved index from the cache.

    ``context`` carries what some systems need beyond parameters (``qrels`` for the oracle
    controls); a system takes only the context its factory names.
    """
    spec = get_system(system)
    resolved = spec.resolve(params)
    if not cache:
        return spec.build(corpus, resolved, progress=progress, **context)
    folder = cache_dir() / "indexes" / f"{_safe(corpus.name)}-{system}-{index_key(system, resolved, corpus)}"
    marker = folder / CACHE_MARKER
    if marker.is_file():
        try:
            return _load_cached(folder, json.loads(marker.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, ImportError, AttributeError):
            shutil.rmtree(folder, ignore_errors=True)  # a damaged cache entry is rebuilt, not trusted
    retriever = spec.build(corpus, resolved, progress=progress, **context)
    if hasattr(retriever, "save") and hasattr(type(retriever), "load"):
        retriever.save(folder)
        cls = type(retriever)
        # The marker is written last: it is what makes the folder a usable cache entry.
        marker.write_text(json.dumps({"class": f"{cls.__module__}:{cls.__qualname__}"}), encoding="utf-8")
    return retriever


CACHE_MARKER = "lexir-cache.json"


def _load_cached(folder: Path, marker: dict) -> Retriever:
    import importlib

    module, _, qualname = marker["class"].partition(":")
    cls = getattr(importlib.import_module(module), qualname)
    return cls.load(folder)


def retrieve(
    retriever: Retriever, queries: Sequence[Query], k: int = RUN_DEPTH,
    progress: Callable[[int], None] | None = None,
) -> Run:
    return retriever.search_many(list(queries), k=k, progress=progress)


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "corpus"
