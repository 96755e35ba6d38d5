"""The error every reader raises for bad input: it names the file and, where it can, the line."""

from __future__ import annotations

from pathlib import Path


class FormatError(ValueError):
    def __init__(self, path: str | Path, line: int | None, message: str, field: str | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        where = self.path + (f":{line}" if line else "") + (f" (field {field!r})" if field else "")
        super().__init__(f"{where}: {message}")
