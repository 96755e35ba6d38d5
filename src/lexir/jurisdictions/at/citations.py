"""Find Austrian statutory citations in text: ``§ 1295 Abs 1 ABGB``, ``§ 2 Abs 1 Z 3 lit a MRG``,
``§§ 1 ff KSchG``, ``§§ 1295, 1298 ABGB``, ``Art 7 B-VG``, ``§ 16 iVm § 18 MRG``.

Austrian style differs from German style in three ways this finder reads: ``Abs`` and ``Z``
without a dot (``§ 879 Abs 3 ABGB``), the Ziffer written ``Z`` (path key ``z``, German ``Nr.``
-> ``nr``), and ``lit a`` without a parenthesis. Path keys are the parser's levels (``abs``, ``z``,
``lit``; :mod:`lexir.jurisdictions.at.statutes`), so ``citation.unit_id`` addresses a parsed unit
(``AT-MRG::2/abs:1/z:3``). ``Satz``/``S`` and ``ff``/``f`` are read but not put in the path
(the Austrian laws are not split into Sätze; ``§§ 1 ff`` names § 1).

Groups and acts
    A group is a run of references joined by commas, ``und``/``oder``/``sowie``, ranges
    (``bis``, ``-``) and ``iVm`` chains (``iVm``, ``i.V.m.``, ``in Verbindung mit``). An act written
    after a reference applies to every reference of the group since the previous act
    (``§ 16 iVm § 18 MRG``: both MRG); the one it directly follows has ``resolved_from="explicit"``,
    the others ``"group"``. Acts are looked up in ``data/acts.tsv`` (Kurztitel, case-sensitive,
    longest first; also after ``des``/``der``): ``§ 127 StGB`` is ``AT-StGB::127``, never the
    German ``StGB::127``. An abbreviation the table does not know (two capitals or more:
    ``B-VG``, ``EMRK``) gives ``act=None``, ``id=None`` and is kept in ``act_raw``. A reference
    with no act takes ``default_act`` (``resolved_from="default"``) or stays unresolved.

References
    ``§ 1295``, ``§ 27b``, ``§ 373i1``, ``Art 7``, ``Art. II`` (roman read as arabic: the parser
    labels ``Artikel II`` ``2``), ``Art. 3 § 2`` (label ``3§2``, or the plain § when ``known``
    says the law numbers its §§ through: ``Art. 2 § 4 DSG`` -> ``4``). With ``known``, an ``Art``
    whose number is taken by a § in that law resolves to the parser's ``Art<n>`` label. A bare
    number after a comma or conjunction is a further article after ``§§`` or after a reference
    without units, else a further unit at the level of the unit before it (``Abs 1 und 2``); a
    unit keyword after a conjunction is a further unit of the same article (``Abs 1 und Abs 3``).
    Further units of one article are one citation (``also``).

Ranges
    ``§§ 3 bis 6`` gives 3, 4, 5 and 6 (with ``known``, only labels that exist; ranges with letters
    or over 200 apart give their ends only); ``expand_ranges=False`` gives the ends only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources

from lexir.citations.model import Citation, article_id, read_act_table

KnownArticles = Mapping[str, Collection[str]]

__all__ = ["find_citations", "act_source", "known_from_acts"]

_WORD = "A-Za-zÄÖÜäöüß"
_MAX_RANGE = 200
_DEPTH = {"abs": 1, "z": 2, "lit": 3}


# ---------------------------------------------------------------------------
# the act table


@dataclass(frozen=True)
class _Acts:
    by_abbrev: dict[str, str]
    pattern: re.Pattern[str]


@functools.cache
def _acts() -> _Acts:
    table = resources.files("lexir.jurisdictions.at") / "data" / "acts.tsv"
    by_abbrev: dict[str, str] = {}
    for entry in read_act_table(table):
        for abbrev in entry.abbreviations:
            by_abbrev.setdefault(abbrev, entry.source)
    alts = "|".join(re.escape(a) for a in sorted(by_abbrev, key=len, reverse=True))
    return _Acts(by_abbrev, re.compile(rf"(?:(?:des|der)\s+)?(?P<abbr>{alts})(?![{_WORD}\d\-])"))


def act_source(abbreviation: str) -> str | None:
    """The source id of an Austrian abbreviation (``ABGB`` -> ``AT-ABGB``), None when unknown."""
    return _acts().by_abbrev.get(" ".join(abbreviation.split()))


def known_from_acts(acts) -> dict[str, set[str]]:
    """``known`` for :func:`find_citations` from parsed acts: source -> article labels."""
    return {act.id: {a.label for a in act.articles} for act in acts}


# ---------------------------------------------------------------------------
# syntax

_KEYWORD = re.compile(r"(?<![\w§])(?P<kw>§§|§|Artikel|Art\.|Art)(?![\w])\s*(?=\d|[IVXLC]+(?![\w]))")
_ARTICLE_NUMBER = re.compile(r"(?P<n>\d+[a-z]{0,2}\d{0,2})(?![\w])(?![.,]\d)|(?P<roman>[IVXLC]+)(?![\w])")
_INNER_PARA = re.compile(r"\s*§\s*(?P<n>\d+[a-z]?)(?![\w])")
_UNIT = re.compile(
    r"\s*(?:(?P<abs>Abs\.|Abs|Absatz|Absätze)\s*(?P<abs_l>\d+[a-z]?)(?![\w])"
    r"|(?P<z>Z\.|Z|Ziff\.|Ziffer|Ziffern)\s*(?P<z_l>\d+[a-z]?)(?![\w])"
    r"|(?P<lit>lit\.|lit|litera)\s*(?P<lit_l>[a-z]{1,2})\)?(?![\w])"
    r"|(?P<satz>Satz|S\.|S)\s*\d+(?![\w]))"
)
_MODIFIER = re.compile(r"\s*(?:ff\.|ff|f\.|f)(?![\w])")
_CONNECTOR = re.compile(
    r"\s*(?:(?P<chain>,?\s*(?:iVm|i\.\s?V\.\s?m\.|in Verbindung mit|ivm))"
    r"|(?P<range>\s*(?:bis|-|–)(?![\w]))"
    r"|,?\s*(?P<join>und|oder|sowie|bzw\.)(?![\w])"
    r"|(?P<comma>,))\s*"
)
_BARE_LABEL = re.compile(r"(?P<n>\d+[a-z]?)(?![\w])(?![.,]\d)")
_UNKNOWN_ABBREV = re.compile(rf"(?:(?:des|der)\s+)?(?P<abbr>[A-ZÄÖÜ][{_WORD}]*(?:-[{_WORD}]+)*)(?![{_WORD}\d\-])")
_NOT_ACTS = frozenset({"EUR", "Abs", "Z", "BGBl", "RGBl", "StGBl", "RIS", "OGH", "VfGH", "VwGH", "EuGH", "ON"})
_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}


def _roman_value(text: str) -> int:
    values = [_ROMAN[ch] for ch in text]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


@dataclass
class _Ref:
    start: int
    end: int
    article: str
    keyword: str  # "§" or "Art"
    path: dict[str, str] = field(default_factory=dict)
    also: list[dict[str, str]] = field(default_factory=list)
    source: str | None = None
    act_raw: str = ""
    origin: str | None = None
    range_from: _Ref | None = None  # the first end of a range this reference closes


def _article_at(text: str, pos: int, keyword: str) -> tuple[int, str] | None:
    m = _ARTICLE_NUMBER.match(text, pos)
    if not m:
        return None
    if m["roman"]:
        if keyword != "Art":
            return None
        label = str(_roman_value(m["roman"]))
    else:
        label = m["n"]
    end = m.end()
    if keyword == "Art" and (inner := _INNER_PARA.match(text, end)):
        return inner.end(), f"{label}§{inner['n']}"
    return end, label


def _units_at(text: str, pos: int, ref: _Ref, path: dict[str, str]) -> int:
    """Read units after ``pos`` into ``path`` (a fresh dict for a further unit); returns the end."""
    while True:
        m = _UNIT.match(text, pos)
        if m:
            if not m["satz"]:
                level = next(k for k in ("abs", "z", "lit") if m[k])
                for deeper in [k for k in path if _DEPTH[k] >= _DEPTH[level]]:
                    del path[deeper]
                path[level] = m[f"{level}_l"]
            pos = m.end()
            continue
        m = _MODIFIER.match(text, pos)
        if m:
            pos = m.end()
            continue
        return pos


def _act_at(text: str, pos: int) -> tuple[int, int, str | None, str] | None:
    """(start, end, source, as written) of an act designation after whitespace at ``pos``."""
    start = pos
    while start < len(text) and text[start] in " \t":
        start += 1
    if start == pos and start < len(text) and text[start] not in " \t":
        return None
    m = _acts().pattern.match(text, start)
    if m:
        return start, m.end(), _acts().by_abbrev[m["abbr"]], text[start : m.end()]
    m = _UNKNOWN_ABBREV.match(text, start)
    if m and sum(ch.isupper() for ch in m["abbr"]) >= 2 and m["abbr"] not in _NOT_ACTS:
        if not re.fullmatch(r"[IVXLC]+", m["abbr"]):
            return start, m.end(), None, text[start : m.end()]
    return None


def _group(text: str, kw: re.Match[str]) -> tuple[list[_Ref], int]:
    """The references of the group starting at ``kw`` and the end of the group."""
    refs: list[_Ref] = []
    plural = kw["kw"] == "§§"
    keyword = "§" if kw["kw"].startswith("§") else "Art"
    found = _article_at(text, kw.end(), keyword)
    if found is None:
        return [], kw.end()
    ref = _Ref(kw.start(), found[0], found[1], keyword)
    ref.end = _units_at(text, ref.end, ref, ref.path)
    refs.append(ref)
    pending = 0  # first reference not yet given an act
    pos = ref.end
    while True:
        act = _act_at(text, pos)
        if act is not None:
            start, end, source, raw = act
            for i, r in enumerate(refs[pending:], pending):
                r.source, r.act_raw = source, raw
                r.origin = "explicit" if i == len(refs) - 1 else "group"
            refs[-1].end = end
            pending = len(refs)
            pos = end
        conn = _CONNECTOR.match(text, pos)
        if conn is None:
            break
        after = conn.end()
        last = refs[-1]
        nxt = _KEYWORD.match(text, after)
        if nxt is not None:
            plural = nxt["kw"] == "§§"
            keyword = "§" if nxt["kw"].startswith("§") else "Art"
            found = _article_at(text, nxt.end(), keyword)
            if found is None:
                break
            new = _Ref(nxt.start(), found[0], found[1], keyword)
        elif _UNIT.match(text, after) and pending < len(refs) and not conn["chain"]:
            # "Abs 1 und Abs 3": a further unit of the same article
            path = {k: v for k, v in last.path.items()}
            end = _units_at(text, after, last, path)
            if end == after:
                break
            last.also.append(path)
            last.end = pos = end
            continue
        elif (bare := _BARE_LABEL.match(text, after)) is not None and not conn["chain"]:
            if plural or not last.path or conn["range"] and not last.path:
                new = _Ref(bare.start(), bare.end(), bare["n"], keyword)
            else:  # "Abs 1 und 2": a further unit at the level of the one before
                if pending >= len(refs):
                    break
                level = max(last.path, key=lambda k: _DEPTH[k])
                path = {k: v for k, v in (last.also[-1] if last.also else last.path).items()
                        if _DEPTH[k] < _DEPTH[level]}
                path[level] = bare["n"]
                last.also.append(path)
                last.end = pos = bare.end()
                continue
        else:
            break
        if pending >= len(refs) and not (conn["chain"] or nxt is not None or plural):
            break  # "§ 5 ABGB, 6 Monate": an act closed the group; a bare number is no reference
        if conn["range"]:
            new.range_from = last
        new.end = _units_at(text, new.end, new, new.path)
        refs.append(new)
        pos = new.end
    return refs, pos


def _resolve_label(source: str | None, article: str, keyword: str, known: KnownArticles | None) -> str:
    labels = known.get(source) if known is not None and source else None
    if not labels:
        return article
    if keyword == "Art" and f"Art{article}" in labels:  # the law's § took the plain number
        return f"Art{article}"
    if article in labels:
        return article
    if keyword == "Art":
        if "§" in article and article.split("§", 1)[1] in labels:
            return article.split("§", 1)[1]
    return article


def _between(first: str, last: str, labels: Collection[str] | None) -> list[str]:
    if not (first.isdigit() and last.isdigit()) or not 0 < int(last) - int(first) <= _MAX_RANGE:
        return []
    out = [str(n) for n in range(int(first) + 1, int(last))]
    return [n for n in out if n in labels] if labels is not None else out


def _citation(text: str, start: int, end: int, ref: _Ref, article: str, path: dict[str, str],
              also: tuple[dict[str, str], ...] = ()) -> Citation:
    return Citation(
        start=start, end=end, text=text[start:end], act=ref.source, act_raw=ref.act_raw, article=article,
        path=dict(path), id=article_id(ref.source, article), kind="statute",
        resolved_from=ref.origin if (ref.source or ref.act_raw) else None, also=also,
    )


_SPACES = re.compile("[\xa0\u2007\u2009\u200a\u202f]")


def find_citations(
    text: str,
    known: KnownArticles | None = None,
    default_act: str | None = None,
    *,
    kinds: Collection[str] | None = ("statute",),
    expand_ranges: bool = True,
) -> list[Citation]:
    """All Austrian statutory citations in ``text``, in order of their spans' starts.

    ``known`` maps source ids to article labels (:func:`known_from_acts`): ranges then expand only
    to labels that exist, and ``Art`` / ``Art. n § m`` labels follow the parser's. ``default_act``
    (an ``AT-…`` source id) is the act of references that name none. ``kinds``: this finder
    reports statutes only (``kind="statute"``); None or any collection holding ``"statute"``
    keeps them.
    """
    work = _SPACES.sub(" ", text) if _SPACES.search(text) else text
    out: list[Citation] = []
    pos = 0
    while (kw := _KEYWORD.search(work, pos)) is not None:
        refs, end = _group(work, kw)
        pos = max(end, kw.end())
        for ref in refs:
            if ref.source is None and not ref.act_raw and default_act:
                ref.source, ref.origin = default_act, "default"
            article = _resolve_label(ref.source, ref.article, ref.keyword, known)
            if ref.range_from is not None and expand_ranges:
                labels = known.get(ref.source) if known is not None and ref.source else None
                first = _resolve_label(ref.source, ref.range_from.article, ref.keyword, known)
                for label in _between(first, article, labels):
                    out.append(_citation(work, ref.range_from.start, ref.end, ref, label, {}))
            out.append(_citation(work, ref.start, ref.end, ref, article, ref.path, tuple(ref.also)))
    if work is not text:
        out = [replace(c, text=text[c.start : c.end]) for c in out]
    if kinds is not None:
        out = [c for c in out if c.kind in kinds]
    return sorted(out, key=lambda c: (c.start, c.end))
