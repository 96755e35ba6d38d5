"""Depth-wise citation matching and ToER (SPEC §6, after the German statute-graph paper).

Retrieved units and gold references are decoded into hierarchical paths over the levels
:data:`DEPTHS` = code, §/Art, Absatz, Satz, Nummer (Buchstabe and below are ignored).

A retrieved path ``r`` matches a gold path ``g`` at depth ``d`` when, for every level down to
``d``, either the gold reference does not specify that level (an *implicit hit*: ``§ 5 UWG``
is recovered at Satz depth by any unit of § 5) or both specify it with the same label. A
retrieved unit coarser than the gold reference (the whole § for ``§ 5 Abs. 1``) does *not*
match at the deeper depth unless ``credit_ancestors=True``, which credits a retrieved unit
that contains the cited one. Act ids are compared case-insensitively.

Per query, a gold reference is *recovered* at depth ``d`` if at least one retrieved unit
matches it; gold references are deduplicated per query (a decision citing § 184 Abs. 2 SGG
five times has one gold reference for it).

ToER (tokens-efficiency ratio) = recovered citations per 1,000 words of retrieved text,
micro-averaged: the sum over queries of recovered references divided by the sum over queries of
retrieved words, times 1,000. Words are whitespace tokens of each retrieved unit's text.
Units added by one-hop expansion count toward recall either way; their words are charged in
``toer_charged`` and not in ``toer``.

Everything here is pure: inputs are ids, paths and word counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lexir.types import ID_SEP, PATH_SEP

DEPTHS = ("code", "para", "abs", "satz", "nr")
# Level names of path ids (and German citation paths) -> depth position.
_LEVEL_DEPTH = {"abs": 2, "satz": 3, "nr": 4}
# Field names used by annotation files (de-refex ``structure``) -> lexir level names.
STRUCTURE_KEYS = {"absatz": "abs", "abs": "abs", "satz": "satz", "nummer": "nr", "nr": "nr"}


@dataclass(frozen=True)
class RefPath:
    """A reference decoded to code, §, Absatz, Satz, Nummer; None where not specified."""

    code: str
    para: str | None = None
    abs: str | None = None
    satz: str | None = None
    nr: str | None = None

    def at(self, depth: int) -> str | None:
        return (self.code.casefold(), self.para, self.abs, self.satz, self.nr)[depth]

    @property
    def depth(self) -> int:
        """The deepest specified level (0 = code only)."""
        values = (self.code, self.para, self.abs, self.satz, self.nr)
        return max(i for i, v in enumerate(values) if v is not None)

    def __str__(self) -> str:
        out = self.code if self.para is None else f"{self.code}{ID_SEP}{self.para}"
        for name, value in (("abs", self.abs), ("satz", self.satz), ("nr", self.nr)):
            if value is not None:
                out += f"{PATH_SEP}{name}:{value}"
        return out


def decode_unit(unit_id: str) -> RefPath:
    """``BGB::823/abs:1/satz:2`` -> RefPath("BGB", "823", "1", "2"). Window chunks
    (``BGB::823#w3``) decode to their article, a bare act id to the code only; levels below
    Nummer (``lit``) and unknown levels are ignored."""
    unit_id = unit_id.split("#", 1)[0]
    if ID_SEP not in unit_id:
        return RefPath(unit_id)
    code, rest = unit_id.split(ID_SEP, 1)
    article, *steps = rest.split(PATH_SEP)
    found: dict[str, str] = {}
    for step in steps:
        level, _, label = step.partition(":")
        if level in _LEVEL_DEPTH:
            found[level] = label
    return RefPath(code, article, found.get("abs"), found.get("satz"), found.get("nr"))


def decode_reference(act: str, article: str | None, path: Mapping[str, str] | None = None) -> RefPath:
    """A gold reference from its act id, article label and path (lexir level names such as
    ``abs``/``satz``/``nr``, or annotation names ``absatz``/``satz``/``nummer``)."""
    found: dict[str, str] = {}
    for key, value in (path or {}).items():
        level = STRUCTURE_KEYS.get(key, key)
        if level in _LEVEL_DEPTH and value not in (None, ""):
            found[level] = str(value)
    return RefPath(act, article or None, found.get("abs"), found.get("satz"), found.get("nr"))


def matches(retrieved: RefPath, gold: RefPath, depth: int, credit_ancestors: bool = False) -> bool:
    """Whether ``retrieved`` matches ``gold`` on every level down to ``depth`` (see module doc)."""
    for d in range(depth + 1):
        want = gold.at(d)
        if want is None:
            continue  # implicit hit: the gold reference does not go this deep
        got = retrieved.at(d)
        if got is None and credit_ancestors:
            return True  # the retrieved unit contains the cited one
        if got != want:
            return False
    return True


def recovered(retrieved: Iterable[RefPath], gold: Iterable[RefPath], depth: int,
              credit_ancestors: bool = False) -> int:
    """How many distinct gold references at least one retrieved path matches at ``depth``."""
    retrieved = list(dict.fromkeys(retrieved))
    return sum(
        any(matches(r, g, depth, credit_ancestors) for r in retrieved) for g in dict.fromkeys(gold)
    )


def depth_recall(retrieved: Iterable[RefPath], gold: Iterable[RefPath],
                 credit_ancestors: bool = False) -> dict[str, float]:
    """Per depth, the share of (distinct) gold references recovered by one retrieved list."""
    retrieved, gold = list(retrieved), list(dict.fromkeys(gold))
    if not gold:
        return {name: 0.0 for name in DEPTHS}
    return {name: recovered(retrieved, gold, d, credit_ancestors) / len(gold) for d, name in enumerate(DEPTHS)}


@dataclass(frozen=True)
class Retrieved:
    """One retrieved unit of one query: its id, its words, and whether expansion added it."""

    id: str
    words: int
    expanded: bool = False


def toer(
    results: Mapping[str, Sequence[Retrieved]],
    gold: Mapping[str, Sequence[RefPath]],
    credit_ancestors: bool = False,
) -> dict[str, dict[str, float]]:
    """ToER per depth, micro-averaged over the queries of ``gold``.

    Returns ``{depth: {"toer", "toer_charged", "recall", "recovered", "gold", "words",
    "words_charged"}}``: ``toer`` charges only the words of directly retrieved units,
    ``toer_charged`` also those expansion added; ``recall`` is recovered / gold (micro).
    A query in ``gold`` with no results contributes its gold references and no words.
    """
    words = words_charged = n_gold = 0
    hits = [0] * len(DEPTHS)
    for qid, refs in gold.items():
        refs = list(dict.fromkeys(refs))
        units = list(results.get(qid, ()))
        words += sum(u.words for u in units if not u.expanded)
        words_charged += sum(u.words for u in units)
        n_gold += len(refs)
        paths = list(dict.fromkeys(decode_unit(u.id) for u in units))
        for d in range(len(DEPTHS)):
            hits[d] += recovered(paths, refs, d, credit_ancestors)
    out = {}
    for d, name in enumerate(DEPTHS):
        out[name] = {
            "toer": 1000 * hits[d] / words if words else 0.0,
            "toer_charged": 1000 * hits[d] / words_charged if words_charged else 0.0,
            "recall": hits[d] / n_gold if n_gold else 0.0,
            "recovered": hits[d],
            "gold": n_gold,
            "words": words,
            "words_charged": words_charged,
        }
    return out
