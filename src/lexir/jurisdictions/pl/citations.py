"""Find Polish statutory citations in text: ``art. 16 § 2 k.k.``, ``art. 415 i 416 k.c.``,
``art. 5 ust. 1 pkt 2 lit. a ustawy z dnia 6 września 2001 r. o dostępie do informacji
publicznej``.

A citation group is one or more references joined by commas, conjunctions (``i``,
``oraz``, ``lub``, ``albo``, ``w zw. z``) or a range dash, followed by at most one act
designation, which applies to the whole group. A reference after a conjunction that has
no keyword of its own (``art. 5 § 1 i 2``) continues at the level of the unit before it:
here § 2 of art. 5, while in ``art. 415 i 416`` it is art. 416. Ranges yield their two
ends only; what lies between is not in the text.

This finder is the Polish profile (:data:`POLISH`) of the shared citation pipeline
(:mod:`lexir.citations.pipeline`): its hooks are the group stage (``art.`` groups, Polish units,
the act after the group) and :func:`resolve_article` as the label hook. The act written after a
group is ``resolved_from="explicit"`` for the last reference, ``"group"`` for the others.

Spans: each citation spans its own reference (``art. 415``, ``416``); the last one of a
group also spans the act designation, so the spans of a group never overlap.

Superscript articles come written three ways: ``art. 4^1``, ``art. 4¹`` (both read as
``4^1``) and flattened ``art. 41`` (PDF extraction dropped the raising). The last can only
be told apart with the list of real articles; see :func:`resolve_article`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from lexir.citations import pipeline
from lexir.citations.model import Citation, article_id, read_act_table, read_kind_table
from lexir.citations.pipeline import Group, Ref, above, read_units, skip_space

KnownArticles = Mapping[str, Collection[str]]

_SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_SUP_DIGITS = str.maketrans(_SUP, "0123456789")
_LETTERS = "a-ząćęłńóśźż"
_NUM = rf"\d+(?:\^\d+|[{_SUP}]+)?[{_LETTERS}]{{0,3}}(?![\w^{_SUP}])"
_LIT = rf"[{_LETTERS}]{{1,3}}(?!\w)"

# ``art`` without its dot only before a number (``art 148 kk``, as questions are typed): never a word of its own
_ART = re.compile(r"(?<![\w.])(?:art\.|art(?=\s+\d)|artykuł(?:u|y|ów|em|ach|ami|owi)?(?!\w))\s*", re.I)
# Legal-basis fields are known to hold citations, so keyword typos can be forgiven there.
_ART_LENIENT = re.compile(r"(?<![\w.])(?:a\s?rt\.|art(?=\s*\d)|artykuł\w*)\s*", re.I)
_ARTICLE = re.compile(_NUM)
_BARE_LIT = re.compile(_LIT, re.I)
_BARE_ZD = re.compile(r"\d+(?!\w)")

_LEVEL_OF = {"§": "par", "ust": "ust", "pkt": "pkt", "lit": "lit", "zd": "zd"}
_DEPTH = {"art": 0, "par": 1, "ust": 1, "pkt": 2, "lit": 3, "zd": 4}
_UNIT = re.compile(
    rf"""(?:
        (?P<par>§§?)\s*(?P<par_l>{_NUM})
      | (?P<ust>ust(?:\.|(?=\s)))\s*(?P<ust_l>{_NUM})
      | (?P<pkt>pkt\.?)\s*(?P<pkt_l>{_NUM})
      | (?P<lit>lit(?:\.|(?=\s)))\s*(?P<lit_l>{_LIT})
      | (?P<zd>zd\.|zdani[eau](?!\w))\s*(?P<zd_l>\d+(?!\w)|[{_LETTERS}]+)
    )""",
    re.X | re.I,
)
_CONNECTOR = re.compile(
    r"\s*,?\s*(?:[–—-]\s*|(?:i|oraz|lub|albo|a\s+także|w\s+zw\.\s*z|w\s+związku\s+z)\s+)?", re.I
)
# Words that may stand between a reference and its act without being either.
_MODIFIER = re.compile(
    r"\s+(?:in\s+fine|in\s+principio|i\s+n(?:ast)?\.|i\s+następne|et\s+seq\.?)(?!\w)", re.I
)
# A bare number after a conjunction is not a reference when a year or a quantity follows.
_NOT_A_LABEL = re.compile(r"\s*(?:r\.|rok|lat|dni|mies|tyg|godz|zł|%|osób)", re.I)
# One-letter Polish words that must not be read as a bare letter unit.
_ONE_LETTER_WORDS = set("aiouwz")

_USTAWA = re.compile(
    r"(?:(?:tej|niniejszej|tejże)\s+)?ustaw(?:a|y|ie|ą|)(?!\w)"
    r"(?:\s+z\s+dnia\s+(?P<date>\d{1,2}\s+\w+\s+\d{4})\s*r\.?)?\s*(?:[–—-]\s*)?",
    re.I,
)
# The title of an act missing from the table ("o …", "Prawo …") runs to the first stop;
# a title with a comma in it is cut there, so list such acts in the table. A title that is not
# empty ends in a non-space (where the first stop is anyway), so the stop is looked for once
# per run of spaces, not from each space of it: that was quadratic in the run's length.
_UNKNOWN_TITLE = re.compile(
    r"(?:o\s|[A-ZĄĆĘŁŃÓŚŹŻ])(?:[^\n,;:()\[\]]*?[^\s,;:()\[\]])?"
    r"(?=\s*(?:[,;:()\[\]\n]|\.(?:\s|$)|$)"
    r"|\s+(?:(?:i|oraz|lub|albo|w\s+zw\.\s*z|w\s+związku\s+z)\s+)?(?:w\s+)?art\.)",
)
_DATED_NAME = re.compile(r"ustawa\s+z\s+dnia\s+(\d{1,2}\s+\w+\s+\d{4})\s*r\.?\s*[–—-]?\s*(.+)", re.I)


def _key(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


@dataclass(frozen=True)
class _Acts:
    abbrev_re: re.Pattern[str]
    by_abbrev: dict[str, str]  # letters only, lower case -> source
    name_re: re.Pattern[str]
    by_name: dict[str, str]  # _key(title) -> source
    dates: dict[str, dict[str, str]]  # _key(title) -> _key(date) -> source

    def lookup_name(self, name: str, date: str | None = None) -> str | None:
        title = _key(name)
        dated = self.dates.get(title)
        if date and dated:
            # a title reused by a later act of another date names that other act
            return dated.get(_key(date))
        return self.by_name.get(title)

    def lookup_abbrev(self, abbrev: str) -> str | None:
        return self.by_abbrev.get(re.sub(r"[\W\d_]+", "", abbrev.lower()))


def _abbrev_pattern(abbrev: str) -> str:
    tokens = re.findall(r"[^\W\d_]+", abbrev)
    return r"\.?\s*".join(re.escape(t) for t in tokens) + r"\.?"


def _name_pattern(name: str) -> str:
    return r"\W+".join(re.escape(w) for w in re.findall(r"\w+", name))


@functools.cache
def _acts() -> _Acts:
    table = read_act_table(resources.files(__package__) / "data" / "acts.tsv")
    by_abbrev: dict[str, str] = {}
    by_name: dict[str, str] = {}
    dates: dict[str, dict[str, str]] = {}
    abbrevs, names = set(), set()
    for entry in table:
        for abbrev in entry.abbreviations:
            by_abbrev[re.sub(r"[\W\d_]+", "", abbrev.lower())] = entry.source
            abbrevs.add(abbrev)
        for name in entry.names:
            dated = _DATED_NAME.fullmatch(name)
            if dated:
                date, name = dated.groups()
                dates.setdefault(_key(name), {})[_key(date)] = entry.source
            by_name[_key(name)] = entry.source
            names.add(name)
    # longest first, so that k.k.s. wins over k.k. and "Kodeksu karnego skarbowego" over "Kodeksu karnego"
    abbrev_alt = "|".join(_abbrev_pattern(a) for a in sorted(abbrevs, key=len, reverse=True))
    name_alt = "|".join(_name_pattern(n) for n in sorted(names, key=len, reverse=True))
    return _Acts(
        abbrev_re=re.compile(rf"(?:{abbrev_alt})(?!\w)", re.I),
        by_abbrev=by_abbrev,
        name_re=re.compile(rf"(?:{name_alt})(?!\w)", re.I),
        by_name=by_name,
        dates=dates,
    )


@functools.cache
def _ordinals() -> dict[str, str]:
    table = read_kind_table(resources.files(__package__) / "data" / "ordinals.tsv", header="number")
    return {form: number for number, forms in table.items() for form in forms}


def _label(raw: str) -> str:
    """``41¹`` -> ``41^1``; ``4^1`` and ``325e`` unchanged."""
    match = re.match(rf"(\d+)([{_SUP}]+)(.*)", raw)
    if match:
        return f"{match.group(1)}^{match.group(2).translate(_SUP_DIGITS)}{match.group(3)}"
    return raw


# ---------------------------------------------------------------------------
# act designations


def _match_act(text: str, pos: int) -> tuple[int, str | None, str] | None:
    """(end, source, as written) of an act designation starting at ``pos``, if any."""
    acts = _acts()
    match = acts.abbrev_re.match(text, pos)
    if match:
        return match.end(), acts.lookup_abbrev(match.group()), match.group()
    match = _USTAWA.match(text, pos)
    if match:
        date = match.group("date")
        name = acts.name_re.match(text, match.end())
        if name:
            return name.end(), acts.lookup_name(name.group(), date), text[pos : name.end()]
        title = _UNKNOWN_TITLE.match(text, match.end())
        end = title.end() if title else match.end()
        raw = text[pos:end].rstrip(" –—-")
        return pos + len(raw), None, raw
    match = acts.name_re.match(text, pos)
    if match:
        return match.end(), acts.lookup_name(match.group()), match.group()
    return None


# ---------------------------------------------------------------------------
# references


def _units(text: str, pos: int, path: dict[str, str], level: str) -> tuple[int, dict[str, str], str]:
    """Read units (§ 2 pkt 1 lit. a zd. 2) after ``pos``, each deeper than the one before."""
    pos, path, level = read_units(text, pos, path, level, _DEPTH, _unit_at)
    modifier = _MODIFIER.match(text, pos)
    return (modifier.end() if modifier else pos), path, level


def _unit_at(text: str, pos: int, level: str) -> tuple[str, str, int] | None:
    """The unit hook of :func:`lexir.citations.pipeline.read_units`: the unit after ``pos``."""
    match = _UNIT.match(text, skip_space(text, pos))
    if not match:
        return None
    new_level = _LEVEL_OF[_unit_kind(match)]
    label = _unit_label(match, new_level)
    return None if label is None else (new_level, label, match.end())


def _unit_kind(match: re.Match[str]) -> str:
    kind = next(k for k in ("par", "ust", "pkt", "lit", "zd") if match.group(k))
    return {"par": "§"}.get(kind, kind)


def _unit_label(match: re.Match[str], level: str) -> str | None:
    raw = match.group(f"{level}_l")
    if level == "zd" and not raw.isdigit():
        return _ordinals().get(raw.lower())
    return raw.lower() if level == "lit" else _label(raw)


def _bare(text: str, pos: int, level: str) -> re.Match[str] | None:
    """A label with no keyword, read at ``level``."""
    if level == "lit":
        match = _BARE_LIT.match(text, pos)
        if match and match.group().lower() in _ONE_LETTER_WORDS:
            return None
    elif level == "zd":
        match = _BARE_ZD.match(text, pos)
    else:
        match = _ARTICLE.match(text, pos)
    if match and _NOT_A_LABEL.match(text, match.end()):
        return None
    return match


def _group(text: str, start: int, after_kw: int) -> tuple[list[Ref], int] | None:
    """References of one group starting with ``art.`` at ``start``; the end of the last one."""
    match = _ARTICLE.match(text, after_kw)
    if not match:
        return None
    end, path, level = _units(text, match.end(), {}, "art")
    refs = [Ref(start, end, _label(match.group()), path, level)]
    while True:
        conn = _CONNECTOR.match(text, refs[-1].end)
        if not conn or not conn.group().strip():
            break
        pos, prev = conn.end(), refs[-1]
        kw = _ART.match(text, pos)
        art = _ARTICLE.match(text, kw.end()) if kw else None
        if art:
            end, path, level = _units(text, art.end(), {}, "art")
            refs.append(Ref(pos, end, _label(art.group()), path, level))
            continue
        unit = _UNIT.match(text, pos)
        if unit:
            # an explicit unit keeps the levels above it from the reference before
            end, path, level = _units(text, pos, above(prev.path, _LEVEL_OF[_unit_kind(unit)], _DEPTH), "art")
            if end > pos:
                refs.append(Ref(pos, end, prev.article, path, level))
                continue
            break
        bare = _bare(text, pos, prev.level)
        if not bare:
            break
        if prev.level == "art":
            end, path, level = _units(text, bare.end(), {}, "art")
            refs.append(Ref(pos, end, _label(bare.group()), path, level))
        else:
            label = bare.group().lower() if prev.level == "lit" else _label(bare.group())
            path = {**above(prev.path, prev.level, _DEPTH), prev.level: label}
            end, path, level = _units(text, bare.end(), path, prev.level)
            refs.append(Ref(pos, end, prev.article, path, level))
    return refs, refs[-1].end


@dataclass(frozen=True)
class _Polish(pipeline.Profile):
    """The Polish profile of the citation pipeline: groups from ``art.`` (``lenient``: also ``a rt.``,
    ``art 5`` and a legal-basis field with no keyword), the act written after a group's last
    reference; flattened superscripts resolved by :func:`resolve_article`."""

    lenient: bool = False

    def groups(self, text: str, scan: Any, found: list[Citation]) -> Iterator[Group]:
        keyword = _ART_LENIENT if self.lenient else _ART
        pos = 0
        starts = [(m.start(), m.end()) for m in keyword.finditer(text)]
        if self.lenient and not starts and re.match(r"\s*\d", text):
            first = skip_space(text, 0)
            starts = [(first, first)]
        for start, after_kw in starts:
            if start < pos:
                continue
            group = _group(text, start, after_kw)
            if group is None:
                continue
            refs, end = group
            act = _match_act(text, skip_space(text, end)) if text[end : end + 1].isspace() or end == len(text) else None
            if act:
                end, source, act_raw = act
                refs[-1].end, refs[-1].own_act = end, True
                for ref in refs:
                    ref.source, ref.act_raw, ref.has_act = source, act_raw, True
            yield Group(start, end, refs)
            pos = end

    def label(self, source: str, article: str, keyword: str, known: KnownArticles) -> str:
        return resolve_article(source, article, known)


POLISH = _Polish()
_LEGAL_BASIS = _Polish(lenient=True)


# ---------------------------------------------------------------------------
# public API


def find_citations(text: str, known: KnownArticles | None = None, default_act: str | None = None, *,
                   kinds: Collection[str] | None = ("statute",)) -> list[Citation]:
    """All Polish statutory citations in ``text``, in order (the signature of every language's
    finder: see :func:`lexir.citations.extract.find_citations`).

    ``known`` maps source ids to the article labels of the corpus; with it a flattened
    superscript (``art. 4541 k.c.``) is read as the article that exists (454^1).
    ``default_act`` is the act of references that name none (``resolved_from="default"``);
    without it they stay unresolved. ``kinds``: every Polish citation is a ``statute``.
    """
    return pipeline.find(POLISH, text, known, default_act, kinds=kinds)


def parse_legal_basis(text: str, known: KnownArticles | None = None) -> list[Citation]:
    """The citations of a legal-basis field (``art. 31 § 2 pkt 1 k. r. i o.``).

    Like :func:`find_citations`, but the string is known to be a citation, so ``a rt.``,
    ``art 5`` and a missing ``art.`` are forgiven. A string that cannot be parsed gives [].
    """
    return pipeline.find(_LEGAL_BASIS, text, known, kinds=None)


def resolve_article(source: str, article: str, known_articles: KnownArticles) -> str:
    """The corpus label of ``article`` in ``source``: itself when the corpus has it, else
    the superscript reading of a flattened number that the corpus has (``4541`` ->
    ``454^1``), the shortest superscript first; else ``article`` unchanged.

    A flattened number that is also a real article (``1151`` next to ``115^1``) is kept
    as written: nothing in the text tells them apart.
    """
    known = known_articles.get(source)
    if not known or article in known:
        return article
    match = re.fullmatch(rf"(\d+)([{_LETTERS}]*)", article)
    if not match:
        return article
    digits, suffix = match.groups()
    for cut in range(len(digits) - 1, 0, -1):
        base, sup = digits[:cut], digits[cut:]
        candidate = f"{base}^{sup}{suffix}"
        if not sup.startswith("0") and candidate in known:
            return candidate
    return article


def act_source(designation: str) -> str | None:
    """The source id of an act designation (``k. r. i o.``, ``Kodeksu cywilnego``,
    ``ustawy z dnia 23 kwietnia 1964 r. – Kodeks cywilny``), None when unknown."""
    designation = designation.strip()
    act = _match_act(designation, 0)
    if act and act[0] == len(designation):
        return act[1]
    return None


def gold_from_orycore(entry: Mapping[str, object]) -> Citation | None:
    """A Citation from one structured ``gold`` item of the OryCore exam files.

    Gold items have no span in any text: ``start == end == 0`` and ``text == ""``.
    None when the item names no article.
    """
    article = entry.get("article")
    if not article:
        return None
    label = str(article).strip()
    if entry.get("article_sup"):
        label = f"{label}^{entry['article_sup']}"
    path: dict[str, str] = {}
    unit = entry.get("unit")
    if unit:
        _, path, _ = _units(str(unit), 0, {}, "art")
    source = None
    act_raw = ""
    for key in ("act_abbrev", "act_name", "act_raw"):
        value = entry.get(key)
        if value:
            act_raw = act_raw or str(value)
            source = act_source(str(value))
            if source:
                break
    return Citation(0, 0, "", source, act_raw, label, path, article_id(source, label))
