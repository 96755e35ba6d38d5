"""Acts into retrievable chunks: structure-aware (§ / Absatz / Satz / Nummer / Buchstabe) or naive.

Structure-aware levels (``para``, ``abs``, ``satz``, ``nr``, ``lit``)
    Each chunk is one unit of the provision tree and its id is the unit's path id
    (``BGB::823/abs:1``). ``para`` is the article level, whatever the article's kind (``§``,
    ``Art``, annex, body-only law). Below the article a unit is split into its children while the
    children are not deeper than the chosen level; a branch that has no unit at that level keeps
    the deepest unit it has (``BGB::613/satz:2`` stays a Satz at level ``nr``; an Absatz whose
    list hangs directly under it stays whole at level ``satz``). When a unit is split, the text
    it has outside its children (an Absatz marker is dropped; a list's introducing words are
    kept) becomes a chunk of its own under the unit's id, so no text is lost and none is
    repeated. Empty chunks (``(weggefallen)`` stubs have text; only truly empty units) are left
    out.

``words100``
    Consecutive windows of 100 words (whitespace tokens) over each article's text, ids
    ``BGB::823#w0``, ``BGB::823#w1``; each maps to its article.

Every chunk keeps its unit id (:attr:`Chunk.unit`); :func:`chunk_corpus` returns the chunks as
:class:`~lexir.types.Document`\\ s (title = the article's title) plus that chunk -> unit mapping.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from lexir.structure.graph import own_text
from lexir.types import PATH_SEP, Act, Corpus, Document, Provision

STRUCTURAL_LEVELS = ("para", "abs", "satz", "nr", "lit")
LEVELS = (*STRUCTURAL_LEVELS, "words100")
WINDOW = 100
WINDOW_SEP = "#w"

# How deep each unit kind sits below the act: every article kind is depth 1.
DEPTH = {"para": 1, "art": 1, "anlage": 1, "body": 1, "article": 1,
         "abs": 2, "satz": 3, "nr": 4, "lit": 5, "dlit": 6, "tlit": 7}
_MARKER_ONLY = re.compile(r"^\(?\s*[0-9]+[a-z]?\s*[.)]?\s*$")


@dataclass(frozen=True)
class Chunk:
    id: str  # the document id: a unit's path id, or ARTICLE#wN for words100
    unit: str  # the unit (or, for words100, article) the chunk belongs to
    text: str
    title: str = ""


def _depth(level: str) -> int:
    return DEPTH.get(level, 8)


def _structural(unit: Provision, target: int, title: str) -> Iterator[Chunk]:
    kids = unit.children
    if _depth(unit.level) >= target or not kids or min(_depth(c.level) for c in kids) > target:
        if unit.text.strip():
            yield Chunk(unit.id, unit.id, unit.text, title)
        return
    rest = own_text(unit)
    if rest and not _MARKER_ONLY.match(rest):
        yield Chunk(unit.id, unit.id, rest, title)
    for child in kids:
        yield from _structural(child, target, title)


def _windows(article: Provision, size: int) -> Iterator[Chunk]:
    words = article.text.split()
    for n, start in enumerate(range(0, len(words), size)):
        yield Chunk(f"{article.id}{WINDOW_SEP}{n}", article.id, " ".join(words[start:start + size]), article.title)


def chunk_act(act: Act, level: str) -> Iterator[Chunk]:
    """The chunks of one act at ``level`` (one of :data:`LEVELS`), in document order."""
    if level not in LEVELS:
        raise ValueError(f"unknown chunking level {level!r}; valid: {', '.join(LEVELS)}")
    for article in act.articles:
        if level == "words100":
            yield from _windows(article, WINDOW)
        else:
            yield from _structural(article, _depth(level), article.title)


def chunk_acts(acts: Iterable[Act], level: str) -> Iterator[Chunk]:
    for act in acts:
        yield from chunk_act(act, level)


def chunk_corpus(acts: Iterable[Act], level: str, name: str = "", language: str = ""
                 ) -> tuple[Corpus, dict[str, str]]:
    """A corpus of the chunks of ``acts`` at ``level`` and the chunk id -> unit id mapping. Its
    language (unless given) and its legal order are the acts' own (those of the first act that
    has one)."""
    acts = list(acts)
    chunks = list(chunk_acts(acts, level))
    docs = [Document(c.id, c.text, c.title) for c in chunks]
    language = language or next((a.language for a in acts if a.language), "")
    order = next((a.jurisdiction for a in acts if a.jurisdiction), "")
    corpus = Corpus(name or f"chunks-{level}", docs, language=language, jurisdiction=order, acts=acts)
    return corpus, {c.id: c.unit for c in chunks}


def parent_unit(act: Act, unit_id: str) -> str | None:
    """The unit one level up from ``unit_id`` in ``act``, climbing above the articles: a unit
    below an article -> its parent unit (``BGB::823/abs:1`` -> ``BGB::823``), an article -> the
    innermost division it stands in (``BGB::823`` -> ``BGB::buch:2/abschnitt:8/titel:27``), a
    division -> the one above it; None at the top (the act itself is above)."""
    divisions = {d.id: d for d in act.walk_divisions()}
    if unit_id in divisions:
        up = unit_id.rsplit(PATH_SEP, 1)[0]
        return up if up != unit_id and up in divisions else None
    if PATH_SEP in unit_id:
        return unit_id.rsplit(PATH_SEP, 1)[0]
    path = act.division_path(unit_id)
    return path[-1].id if path else None


def unit_of_chunk(chunk_id: str) -> str:
    """The unit a chunk id stands for: ``BGB::823#w3`` -> ``BGB::823``; path ids are themselves."""
    return chunk_id.split(WINDOW_SEP, 1)[0]


