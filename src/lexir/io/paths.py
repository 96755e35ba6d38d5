"""Where lexir keeps what it computes, and how names become safe folder names.

Every cache (indexes, embeddings, LLM calls, surrogates, graphs, runs) lives under one
directory: ``LEXIR_CACHE``, else ``$XDG_CACHE_HOME/lexir``, else ``~/.cache/lexir``. This
module is at the bottom of the package so that any layer may use it.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
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


def code_digest(*folders: Path | str, salt: str = "") -> str:
    """sha256 over the Python sources and data files below ``folders`` (their paths relative to
    the folder and their bytes, in sorted order), and ``salt``. A cache whose key holds it is
    never read by changed code: an edited citation table or parser builds a new entry."""
    digest = hashlib.sha256(salt.encode())
    for folder in map(Path, folders):
        files = sorted(f for f in folder.rglob("*") if f.is_file() and "__pycache__" not in f.parts
                       and f.suffix not in (".pyc", ".pyo"))
        for f in files:
            digest.update(f"{folder.name}/{f.relative_to(folder).as_posix()}\0".encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes, read once per (path, size, modification time) in a process:
    archives are hashed to key caches on every load, and a second load should not read them again."""
    path = Path(path).resolve()
    st = path.stat()
    return _file_sha256(str(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=256)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
