"""What every statute parser shares: the error a source that does not parse is reported with
(file and line, never a silent drop), and sibling labels made unique."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from lexir.types import Provision


@dataclass
class ParseError:
    """A law (file, archive member) that could not be parsed: reported instead of an Act."""

    path: str
    line: int  # 1-based; 0 when unknown
    message: str


class LawSyntaxError(ValueError):
    """Raised by a parser for one law; carries the :class:`ParseError` to report."""

    def __init__(self, error: ParseError) -> None:
        super().__init__(f"{error.path}:{error.line}: {error.message}")
        self.error = error


def unique_labels(children: list[Provision], base: str) -> list[Provision]:
    """Sibling labels made unique (``1``, ``1~2``); ids (and their units' ids) are rewritten to match."""
    if len(children) < 2 or len({c.id for c in children}) == len(children):
        return children
    seen: Counter[str] = Counter()
    for child in children:
        key = f"{child.level}:{child.label}"
        seen[key] += 1
        if seen[key] > 1:
            _relabel(child, base, f"{child.label}~{seen[key]}")
    return children


def _relabel(node: Provision, base: str, label: str) -> None:
    old = node.id
    node.label = label
    node.id = f"{base}/{node.level}:{label}"
    for unit in node.walk():
        if unit is not node:
            unit.id = node.id + unit.id[len(old) :]
