"""JSON-lines reading with errors that name the file, line and field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from lexir.io.errors import FormatError


def read_json(path: str | Path):
    """A whole JSON file; a missing or malformed one raises FormatError with the line."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(path, None, "file not found") from None
    except UnicodeDecodeError as err:
        raise FormatError(path, None, f"not UTF-8 text ({err.reason})") from None
    except json.JSONDecodeError as err:
        raise FormatError(path, err.lineno, f"invalid JSON ({err.msg})") from None


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-empty line; a bad line raises FormatError."""
    path = Path(path)
    try:
        fh = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(path, None, "file not found") from None
    with fh:
        lineno = 0
        try:
            for lineno, line in enumerate(fh, 1):
                if line.isspace():
                    continue
                try:
                    obj = _loads(line)
                except json.JSONDecodeError as err:
                    raise FormatError(path, lineno, f"invalid JSON ({err.msg}, column {err.colno})") from None
                if not isinstance(obj, dict):
                    raise FormatError(path, lineno, f"expected a JSON object, got {type(obj).__name__}")
                yield lineno, obj
        except UnicodeDecodeError as err:
            raise FormatError(path, lineno + 1, f"not UTF-8 text ({err.reason})") from None


_SCAN = json.JSONDecoder().scan_once  # what json.loads runs after its two whitespace checks


def _loads(line: str):
    """``json.loads(line)`` for a line of JSON: the decoder's scanner called directly where the
    line starts with its value and only whitespace follows it (a JSONL file's lines: about half
    of json.loads's time saved), json.loads itself otherwise (and for its errors)."""
    try:
        obj, end = _SCAN(line, 0)
    except (StopIteration, json.JSONDecodeError):
        return json.loads(line)
    if end != len(line) and not line[end:].isspace():
        return json.loads(line)  # raises: extra data
    return obj


def field(obj: dict, names: tuple[str, ...] | str, path: str | Path, lineno: int | None, kind: type = str):
    """The first present field of ``names``, checked for type; missing or wrong -> FormatError."""
    names = (names,) if isinstance(names, str) else names
    for name in names:
        if name in obj and obj[name] is not None:
            value = obj[name]
            if kind is str and isinstance(value, int | float) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, kind):
                raise FormatError(path, lineno, f"expected {kind.__name__}, got {type(value).__name__}", field=name)
            return value
    raise FormatError(path, lineno, "required field missing", field=" or ".join(names))
