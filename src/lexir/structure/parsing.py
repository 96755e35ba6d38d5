"""What every statute parser shares: the error a source that does not parse is reported with
(file and line, never a silent drop), and sibling labels made unique."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from lexir.types import Provision

T = TypeVar("T")


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


def parse_member(name: str, data: bytes | None, parse: Callable[[str, str], T],
                 syntax_errors: tuple[type[Exception], ...] = (LawSyntaxError,)) -> T | ParseError:
    """One archive member's bytes parsed by ``parse(text, name)``, or the :class:`ParseError`
    saying why not: never raises, so one bad file never stops a corpus. ``syntax_errors`` carry
    their ParseError (``.error``); any other exception is a parser bug, reported as such."""
    if data is None:
        return ParseError(name, 0, "unreadable archive member")
    try:
        return parse(data.decode("utf-8"), name)
    except syntax_errors as exc:
        return exc.error
    except UnicodeDecodeError as exc:
        return ParseError(name, 0, f"not UTF-8: {exc}")
    except Exception as exc:  # a parser bug must not stop the corpus: report the file, go on
        return ParseError(name, 0, f"internal error: {type(exc).__name__}: {exc}")


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
