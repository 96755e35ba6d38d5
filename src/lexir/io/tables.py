"""The package's own data tables: tab-separated rows, ``#`` comments and blank lines skipped,
a row with the wrong number of fields reported with its table and line."""

from __future__ import annotations

from collections.abc import Iterator


def table_rows(text: str, source: str, fields: int,
               error: type[Exception] = ValueError) -> Iterator[tuple[int, list[str]]]:
    """``(line number, cells)`` of each row of ``text`` (the table ``source``), each with exactly
    ``fields`` cells; otherwise ``error`` naming the table and the line."""
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != fields:
            raise error(f"{source} line {lineno}: expected {fields} tab-separated fields, got {len(cells)}")
        yield lineno, cells
