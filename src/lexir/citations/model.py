"""What a statutory citation found in text is, whatever the language.

A citation names one unit of one act: an article (``art. 415 k.c.``, ``§ 823 BGB``) and
optionally a path below it. ``path`` maps level names to labels in citation order; the
level names are those of :mod:`lexir.types` path ids (Polish ``par`` for §, ``ust``,
``pkt``, ``lit``, ``zd``; German ``abs``, ``satz``, ``nr``, …).

``act`` is the lexir source id (``kc``) or None when the act is not known; ``id`` is then
None too, never a guess. ``act_raw`` keeps the act as written (``k. r. i o.``), also for
acts that could not be identified.

``also`` holds the further units of the same article that one citation names after ``path``, in
order: an enumeration or continuation is one citation (``§ 5 Abs. 1 Satz 1 und 4 SGB V``: path
``{abs: 1, satz: 1}``, also ``({abs: 1, satz: 4},)``); ``paths`` and ``unit_ids`` give them all.

``kind`` says what the cited text is: ``"statute"`` (an act of parliament or an ordinance),
``"contract"`` (``§ 4 Nr. 1 des Vertrages``), ``"bylaw"`` (``§ 10 Abs 2 der Satzung``),
``"collection"`` (an entry of a case-law collection filed under a norm: ``SozR 3-2500 § 13 Nr 33``),
``"commentary"`` (a commentary's note on a norm: ``§ 3 UWG Rdn. 4``), ``"bill"`` (a § of a bill,
cited from its explanatory memorandum: ``Begründung zu § 59``) or ``"eu"`` (EU law: ``Art. 267
AEUV``; ``act`` is None, since no lexir corpus holds it, and ``instrument`` names it: ``TFEU``,
``Directive 2006/112/EC``, ``Regulation (EU) 2016/679``). Finders return only statutes unless
asked for the other kinds. ``resolved_from`` says how the act was found:
``"explicit"`` (written with the reference), ``"group"`` (written once for a group: ``§ 18,
§ 19 KostO``), ``"prefix"`` (``HGB § 74``), ``"context"`` (the nearest act named before it in
the same paragraph), ``"default"`` (the act being read), None when no act was found.
``repealed`` is True when a sourced table lists the act as repealed (``FGG``). ``following`` is True
when the citation names an article and those after it (``§§ 1 ff.``, ``articles 1231-1 et
suivants``): the citation's id is the first of them.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from lexir.types import canonical_id, path_id


@dataclass(frozen=True)
class Citation:
    start: int  # offsets into the searched text: text[start:end] == self.text
    end: int
    text: str
    act: str | None
    act_raw: str
    article: str | None
    path: dict[str, str] = field(hash=False)
    id: str | None
    kind: str = "statute"
    resolved_from: str | None = None
    repealed: bool = False
    also: tuple[dict[str, str], ...] = field(default=(), hash=False)
    instrument: str | None = None
    following: bool = False  # "§§ 1 ff.", "articles 1231-1 et suivants": this article and those after it

    @property
    def paths(self) -> tuple[dict[str, str], ...]:
        """Every unit path the citation names: ``path``, then ``also``."""
        return (self.path, *self.also)

    @property
    def unit_ids(self) -> tuple[str, ...]:
        """The path ids of every unit the citation names; empty when unresolved."""
        if self.act is None or self.article is None:
            return ()
        return tuple(path_id(self.act, self.article, p.items()) for p in self.paths)

    @property
    def unit_id(self) -> str | None:
        """The path id of the cited unit (``kc::415/par:1``), None when unresolved."""
        if self.act is None or self.article is None:
            return None
        return path_id(self.act, self.article, self.path.items())

    def to_json(self) -> dict[str, Any]:
        return {
            "span": {"start": self.start, "end": self.end, "text": self.text},
            "act_raw": self.act_raw,
            "act": self.act,
            "article": self.article,
            "path": dict(self.path),
            "id": self.id,
            "kind": self.kind,
            "resolved_from": self.resolved_from,
            "repealed": self.repealed,
            "also": [dict(p) for p in self.also],
            "instrument": self.instrument,
            "following": self.following,
        }


def article_id(act: str | None, article: str | None) -> str | None:
    """``kc::415``, or None when either part is unknown."""
    return canonical_id(act, article) if act and article else None


def known_articles(documents: Iterable[Any]) -> dict[str, set[str]]:
    """A finder's ``known``: source id -> the article labels of ``documents`` (a corpus, or any
    objects with an ``id`` of the form ``SOURCE::ARTICLE``)."""
    known: dict[str, set[str]] = {}
    for doc in documents:
        source, _, article = doc.id.partition("::")
        known.setdefault(source, set()).add(article)
    return known


KINDS = ("statute", "contract", "bylaw", "collection", "commentary", "bill", "eu")


@dataclass(frozen=True)
class ActEntry:
    """One row of an act table: how texts of one language designate one act."""

    source: str
    abbreviations: tuple[str, ...]
    names: tuple[str, ...]


def read_kind_table(path: Path | Traversable, header: str = "kind") -> dict[str, list[str]]:
    """Rows of a ``kind<TAB>variant|variant...`` file (a finder's keywords, ordinals): kind -> its
    variants. Lines starting with ``#``, blank lines and the header row (first cell ``header``)
    are skipped; a row of another number of fields is an error."""
    kinds: dict[str, list[str]] = {}
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("#") or line.startswith(header + "\t") or not line.strip():
                continue
            cells = line.rstrip("\n").split("\t")
            if len(cells) != 2:
                raise ValueError(f"{path.name}:{lineno}: expected {header}<TAB>variants, got {len(cells)} fields")
            kinds[cells[0]] = [v for v in cells[1].split("|") if v]
    return kinds


def read_act_table(path: Path | Traversable) -> list[ActEntry]:
    """Rows of a ``source<TAB>abbreviations<TAB>names`` file; variants separated by ``|``.

    Lines starting with ``#`` and the header row are skipped. Every language's table uses
    this format so that one loader serves them all.
    """
    entries = []
    with path.open(encoding="utf-8", newline="") as f:
        lines = (line for line in f if not line.startswith("#"))
        rows = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
        for i, row in enumerate(rows):
            if i == 0 and row and row[0] == "source":
                continue
            if not row or not row[0].strip():
                continue
            row = (row + ["", ""])[:3]
            entries.append(
                ActEntry(
                    source=row[0].strip(),
                    abbreviations=tuple(v.strip() for v in row[1].split("|") if v.strip()),
                    names=tuple(v.strip() for v in row[2].split("|") if v.strip()),
                )
            )
    return entries
