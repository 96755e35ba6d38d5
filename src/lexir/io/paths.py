"""Where lexir keeps what it computes, and how names become safe folder names.

Every cache (indexes, embeddings, LLM calls, surrogates, graphs, runs) lives under one
directory: ``LEXIR_CACHE``, else ``$XDG_CACHE_HOME/lexir``, else ``~/.cache/lexir``. This
module is at the bottom of the package so that any layer may use it.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("LEXIR_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "lexir"


def safe_name(name: str, fallback: str = "unnamed") -> str:
    """``name`` with every character other than letters, digits, ``-``, ``_`` and ``.`` made
    ``_``: a file or folder name that cannot climb out of its parent or hide as ``..``."""
    cleaned = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
    if not cleaned or set(cleaned) == {"."}:
        return fallback
    return cleaned
