"""Saved folders (indexes, graphs) and the JSON file that marks them complete.

The marker is written last, to a side file renamed into place, so a folder whose save was
interrupted never looks complete; loading checks it is there and of the expected format.
"""

from __future__ import annotations

import json
from pathlib import Path


def write_marker(path: Path, meta: dict) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)


def read_marker(path: Path, what: str, version: int | tuple[int, ...] | None = None) -> dict:
    """The marker's content; a missing marker or a format version other than ``version`` (one of
    them, given several) is a clear error."""
    if not path.is_file():
        raise FileNotFoundError(f"{path.parent} is not a complete {what} (no {path.name})")
    meta = json.loads(path.read_text(encoding="utf-8"))
    versions = (version,) if isinstance(version, int) else version
    if versions is not None and meta.get("format") not in versions:
        wanted = " or ".join(map(str, versions))
        raise ValueError(f"{path}: {what} format {meta.get('format')} is not {wanted}; rebuild it")
    return meta
