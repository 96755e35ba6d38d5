"""French statutory citations in text: ``article 1240 du code civil``, ``art. L. 1232-1 C. trav.``.

:func:`find_citations` works in three stages, its word lists in ``data/`` (not in code):

tokenise
    :func:`tokenise` finds the code designations (``data/acts.tsv``: names case-insensitively,
    ``code civil``; abbreviations as written, with free spacing, ``C. civ.``/``C.civ.``) and
    mentions of laws (``loi n° 89-462 du 6 juillet 1989``; ``décret``, ``ordonnance``…,
    ``data/keywords.tsv`` kind ``law``) anywhere in the text.
group
    :func:`group` reads, from each article keyword (``article``, ``l'article``, ``art.``,
    ``les articles``…), the article numbers (``1240``, ``L. 1232-1``, ``R*2122-1``, ``1er``,
    ``12 bis``) joined by ``,``/``et``/``ou`` (a list) or ``à``/``au`` (a range), an
    ``et suivants``, the units after a number (``, alinéa 2``/``al. 2``, ``, 1°``, ``a)``) or
    before the keyword (``deuxième alinéa de l'article``, ``au 1° de l'article``, ``a) du 1° de
    l'article``: ordinals in ``data/ordinals.tsv``), then what follows: a code (``du code civil``,
    ``C. civ.``), ``du présent code``, ``du même code``, a law (``de la loi n° …``), or an unknown
    code (``du code des marchés publics``). A code written before (``C. civ., art. 1103``) is a prefix.
resolve
    :func:`resolve` turns each group into :class:`Citation` s, one per article.

Decisions (for the integrator):

* Article labels are normalised with :func:`lexir.jurisdictions.fr.statutes.article_label`, so ids
  are those of the parsed codes (``L. 1232-1`` -> ``Ctrav::L1232-1``, ``1er`` -> ``Cciv::1``).
* Path levels are the parsed units' (``al``, ``item``, ``lit``), in that order:
  ``alinéa 2`` -> ``{"al": "2"}``, ``1°`` -> ``{"item": "1"}``, ``a) du 1°`` -> ``{"item": "1",
  "lit": "a"}``. Parsed codes have ``…/al:N``, ``…/item:N``, ``…/item:N/lit:x`` and ``…/lit:x``;
  an alinéa *and* an item cited together (``al. 2, 1°``) are kept as cited (no such unit id).
  ``dernier alinéa`` gives no alinéa (which one depends on the text).
* ``et suivants`` (``et s.``): the citation names the first article and has ``following=True``.
* Ranges (``articles 1103 à 1105``) expand to every label of ``known[act]`` between the two ends
  (same stem, last number counting up) when both ends are known; otherwise both ends are cited.
* Acts: written after the numbers -> ``explicit`` (``group`` for the earlier members of a list),
  written before -> ``prefix``; none written -> ``default_act`` (``default``) when given, else the
  code named last before it in the same paragraph (a line) -> ``context``; ``du présent code`` ->
  ``default_act``; ``du même code`` -> context. A law (``article 3 de la loi n° 89-462 du 6 juillet
  1989``) is no code article: ``act`` and ``id`` None, ``instrument`` ``loi n° 89-462``, ``kind``
  ``"statute"``; a law mentioned without an article is a citation too (``article`` None). An
  unknown code gives ``act`` None, ``id`` None, ``act_raw`` as written: never a guess.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from lexir.citations.model import Citation, read_act_table
from lexir.jurisdictions.fr.statutes import article_label
from lexir.types import canonical_id

DATA = Path(__file__).parent / "data"
KnownArticles = Mapping[str, Collection[str]]


# ---------------------------------------------------------------------------
# tables


def _read_tsv(name: str) -> list[list[str]]:
    with (DATA / name).open(encoding="utf-8", newline="") as fh:
        rows = csv.reader((line for line in fh if not line.startswith("#")), delimiter="\t", quoting=csv.QUOTE_NONE)
        return [row for i, row in enumerate(rows) if row and not (i == 0 and row[0] in ("kind", "word"))]


@dataclass(frozen=True)
class _Tables:
    names: re.Pattern[str]  # code names, case-insensitive
    abbreviations: re.Pattern[str]  # code abbreviations, as written
    by_key: Mapping[str, str]  # normalised designation -> source
    keywords: Mapping[str, tuple[str, ...]]
    ordinals: Mapping[str, str]


def _key(text: str) -> str:
    return re.sub(r"[\s.]+", "", text.replace("’", "'")).lower()


def _flexible(variant: str) -> str:
    """A regex for a designation: any spacing around dots and between words, both apostrophes."""
    out = []
    for ch in variant:
        if ch == " ":
            out.append(r"\s*" if out and out[-1].endswith(r"\.") else r"\s+")
        elif ch in "'’":
            out.append("['’]")
        elif ch == ".":
            out.append(r"\.\s*")
        else:
            out.append(re.escape(ch))
    pattern = "".join(out)
    if pattern.endswith(r"\.\s*"):
        pattern = pattern[: -len(r"\s*")]
    return pattern + ("" if variant.endswith(".") else r"(?![\w])")


@lru_cache(maxsize=1)
def tables() -> _Tables:
    by_key: dict[str, str] = {}
    clash: set[str] = set()
    names: list[str] = []
    abbreviations: list[str] = []
    for entry in read_act_table(DATA / "acts.tsv"):
        for variant, bucket in [(n, names) for n in entry.names] + [(a, abbreviations) for a in entry.abbreviations]:
            key = _key(variant)
            if by_key.get(key, entry.source) != entry.source:
                clash.add(key)
            by_key[key] = entry.source
            bucket.append(variant)
    for key in clash:  # written the same way for two codes: ambiguous, so no code
        del by_key[key]
    keywords = {row[0]: tuple(v for v in row[1].split("|") if v) for row in _read_tsv("keywords.tsv") if len(row) > 1}
    ordinals = {row[0].lower(): row[1] for row in _read_tsv("ordinals.tsv") if len(row) > 1}

    def alternation(variants: list[str]) -> str:
        return "|".join(_flexible(v) for v in sorted(set(variants), key=len, reverse=True))

    return _Tables(re.compile(rf"(?<![\w])(?:{alternation(names)})", re.IGNORECASE),
                   re.compile(rf"(?<![\w])(?:{alternation(abbreviations)})"), by_key, keywords, ordinals)


def _words(kind: str) -> str:
    """The variants of a keyword kind as a regex alternation (longest first)."""
    variants = sorted(tables().keywords.get(kind, ()), key=len, reverse=True)
    return "|".join(_flexible(v).removesuffix(r"(?![\w])") + (r"(?![\w])" if v[-1].isalnum() else "")
                    for v in variants)


# ---------------------------------------------------------------------------
# tokenise


@dataclass(frozen=True)
class Token:
    """A designation found in the text: a code (``source`` set or None when unknown) or a law."""

    kind: str  # "code", "law"
    start: int
    end: int
    text: str
    source: str | None = None
    instrument: str | None = None


_NUMBER = (r"(?:(?:LO|L\.\s*O\.|[LRDA])\s*\.?\s*\*?\s*)?\d+(?:\s?er)?(?:-\d+)*"
           r"(?:\s(?:bis|ter|quater|[a-z]{3,}ies)(?![\w]))?")
_UNKNOWN_CODE = re.compile(r"(?<![\w])code\s+(?:(?:de\s+la|de\s+l['’]|des|du|de|d['’])\s*)?[\w\-]+"
                           r"(?:\s+(?:et\s+)?(?:(?:de\s+la|de\s+l['’]|des|du|de|d['’])\s*)?[\w\-]+){0,3}", re.IGNORECASE)


@lru_cache(maxsize=1)
def _patterns() -> dict[str, re.Pattern[str]]:
    t = tables()
    ordinal = "|".join(sorted((re.escape(o) for o in t.ordinals), key=len, reverse=True))
    alinea = _words("alinea")
    unit = rf"(?:(?:{ordinal}|dernier)\s+(?:{alinea})|(?:{alinea})\s*(?:\d+|{ordinal})|\d+\s?°|[a-z]\))"
    link = r"(?:du|de\s+la|des|de|d['’]|au|à\s+la)"
    return {
        "law": re.compile(rf"(?<![\w])(?P<kind>{_words('law')})\s+n\s*[°o]\s*(?P<num>\d+(?:-\d+)+)"
                          r"(?:\s+du\s+(?P<date>\d{1,2}(?:er)?\s+[a-zéû]+\s+\d{4}))?", re.IGNORECASE),
        "start": re.compile(rf"(?<![\w])(?:(?P<plural>{_words('articles')})|(?P<single>{_words('article')}))\s*"
                            rf"(?={_NUMBER}(?![\w]))", re.IGNORECASE),
        "number": re.compile(_NUMBER),
        "unit_after": re.compile(rf"\s*,?\s*(?P<unit>{unit})"),
        "unit": re.compile(rf"(?:(?P<ord>{ordinal}|dernier)\s+(?:{alinea})|(?:{alinea})\s*(?P<num>\d+|{ordinal})"
                           r"|(?P<item>\d+)\s?°|(?P<lit>[a-z])\))", re.IGNORECASE),
        "before": re.compile(rf"(?:{unit}\s+{link}\s*)+$", re.IGNORECASE),
        "list_sep": re.compile(rf"\s*(?:,\s*(?:et\s+)?|\s+et\s+|\s+ou\s+|\s+et\s+(?:{_words('article')})\s+)"
                               rf"(?={_NUMBER}(?![\w]))", re.IGNORECASE),
        "range_sep": re.compile(rf"\s+(?:{_words('range')})\s+(?:l['’]\s*(?:article\s+)?)?(?={_NUMBER}(?![\w]))",
                                re.IGNORECASE),
        "following": re.compile(rf"\s*,?\s+(?:{_words('following')})(?![\w])", re.IGNORECASE),
        "link": re.compile(rf"\s*,?\s*(?:{link}\s*)?", re.IGNORECASE),
        "this_code": re.compile(rf"\s*,?\s*(?:{_words('this_code')})", re.IGNORECASE),
        "same_code": re.compile(rf"\s*,?\s*(?:{_words('same_code')})", re.IGNORECASE),
        "prefix_gap": re.compile(r"\s*,\s*$"),
    }


def tokenise(text: str) -> list[Token]:
    """Every code designation and law mention of ``text``, in order (overlaps: the longest wins)."""
    t = tables()
    found: list[Token] = []
    for pattern in (t.names, t.abbreviations):
        for m in pattern.finditer(text):
            found.append(Token("code", m.start(), m.end(), m[0], t.by_key.get(_key(m[0]))))
    for m in _patterns()["law"].finditer(text):
        kind = " ".join(m["kind"].lower().split())
        found.append(Token("law", m.start(), m.end(), m[0], None, f"{kind} n° {m['num']}"))
    found.sort(key=lambda tok: (tok.start, -(tok.end - tok.start)))
    out: list[Token] = []
    for tok in found:
        if out and tok.start < out[-1].end:
            continue
        out.append(tok)
    return out


# ---------------------------------------------------------------------------
# group


@dataclass
class Member:
    """One article number of a group, with the units cited below it."""

    start: int
    end: int
    label: str
    path: dict[str, str] = field(default_factory=dict)
    range_to: Member | None = None  # "1103 à 1105": the member 1103 has range_to 1105
    following: bool = False


@dataclass
class Group:
    """An article keyword, its numbers, and the act designation after (or before) them."""

    start: int
    end: int
    members: list[Member]
    act: Token | None = None
    act_how: str | None = None  # "explicit", "prefix", "this_code", "same_code"


def _unit_path(text: str) -> dict[str, str]:
    """``{"al": …, "item": …, "lit": …}`` of the unit designations in ``text``."""
    ordinals = tables().ordinals
    path: dict[str, str] = {}
    for m in _patterns()["unit"].finditer(text):
        if m["ord"]:
            if m["ord"].lower() in ordinals:
                path["al"] = ordinals[m["ord"].lower()]
        elif m["num"]:
            path["al"] = ordinals.get(m["num"].lower(), m["num"])
        elif m["item"]:
            path["item"] = m["item"]
        elif m["lit"]:
            path["lit"] = m["lit"]
    return {level: path[level] for level in ("al", "item", "lit") if level in path}


def group(text: str, tokens: list[Token]) -> Iterator[Group]:
    """The citation groups of ``text``, in order (see the module doc)."""
    p = _patterns()
    by_start = {tok.start: tok for tok in tokens}
    pos = 0
    for m in p["start"].finditer(text):
        if m.start() < pos:
            continue
        start = m.start()
        members: list[Member] = []
        i = m.end()
        while True:
            num = p["number"].match(text, i)
            if num is None:
                break
            member = Member(num.start(), num.end(), article_label(num[0]))
            members.append(member)
            i = _units_after(text, member)
            rng = p["range_sep"].match(text, i)
            if rng:
                end = p["number"].match(text, rng.end())
                if end is not None:
                    member.range_to = Member(end.start(), end.end(), article_label(end[0]))
                    i = _units_after(text, member.range_to)
                    member.end = member.range_to.end
            sep = p["list_sep"].match(text, i)
            if sep is None:
                break
            i = sep.end()
        fol = p["following"].match(text, i)
        if fol and members:
            members[-1].following = True
            members[-1].end = i = fol.end()
        before = p["before"].search(text, max(0, start - 80), start)
        if before and members:
            members[0].path = {**_unit_path(before[0]), **members[0].path}
            members[0].path = {lv: members[0].path[lv] for lv in ("al", "item", "lit") if lv in members[0].path}
            start = before.start()
        act, how, end = _act_after(text, i, by_start)
        if act is None and how is None:
            act, how = _act_before(text, start, tokens)
        yield Group(start, end if end is not None else i, members, act, how)
        pos = end if end is not None else i


def _units_after(text: str, member: Member) -> int:
    """Reads ``, alinéa 2``, ``, 1°``, ``a)`` after a number into its path; returns the end."""
    i = member.end
    found = ""
    while (u := _patterns()["unit_after"].match(text, i)) is not None:
        found += " " + u["unit"]
        i = u.end()
    if found:
        member.path = _unit_path(found)
        member.end = i
    return i


def _act_after(text: str, i: int, by_start: Mapping[int, Token]) -> tuple[Token | None, str | None, int | None]:
    p = _patterns()
    for kind in ("this_code", "same_code"):
        m = p[kind].match(text, i)
        if m:
            return None, kind, m.end()
    link = p["link"].match(text, i)
    j = link.end() if link else i
    tok = by_start.get(j)
    if tok is not None:
        return tok, "explicit", tok.end
    unknown = _UNKNOWN_CODE.match(text, j) if link and link.end() > i else None
    if unknown is not None:
        raw = unknown[0]
        return Token("code", unknown.start(), unknown.end(), raw), "explicit", unknown.end()
    return None, None, None


def _act_before(text: str, start: int, tokens: list[Token]) -> tuple[Token | None, str | None]:
    """``C. civ., art. 1103``: a code written just before the keyword, a comma between."""
    for tok in reversed(tokens):
        if tok.end <= start:
            if tok.kind == "code" and _patterns()["prefix_gap"].match(text[tok.end:start]):
                return tok, "prefix"
            break
    return None, None


# ---------------------------------------------------------------------------
# resolve


def _expand(source: str, first: str, last: str, known: KnownArticles | None) -> list[str] | None:
    """Labels from ``first`` to ``last`` that exist in ``known[source]``; None when not expandable."""
    if known is None or source not in known:
        return None
    labels = known[source]
    if first not in labels or last not in labels:
        return None
    a = re.fullmatch(r"(.*?)(\d+)", first)
    b = re.fullmatch(r"(.*?)(\d+)", last)
    if a is None or b is None or a[1] != b[1] or int(a[2]) > int(b[2]):
        return None
    return [f"{a[1]}{n}" for n in range(int(a[2]), int(b[2]) + 1) if f"{a[1]}{n}" in labels]


def _context_act(text: str, start: int, tokens: list[Token]) -> str | None:
    """The code named last before ``start`` on the same line (paragraph)."""
    line_start = text.rfind("\n", 0, start) + 1
    for tok in reversed(tokens):
        if tok.end > start:
            continue
        if tok.start < line_start:
            return None
        if tok.kind == "code" and tok.source is not None:
            return tok.source
    return None


def resolve(text: str, groups: list[Group], tokens: list[Token], known: KnownArticles | None,
            default_act: str | None, expand_ranges: bool) -> list[Citation]:
    out: list[Citation] = []
    for g in groups:
        act: str | None = None
        instrument: str | None = None
        act_raw = ""
        how: str | None = None
        if g.act is not None and g.act.kind == "law":
            instrument, act_raw = g.act.instrument, g.act.text
        elif g.act is not None:
            act, act_raw, how = g.act.source, g.act.text, (g.act_how if g.act.source else None)
        elif g.act_how == "this_code":
            act, how = default_act, ("default" if default_act else None)
            act_raw = text[g.members[-1].end:g.end].strip(" ,") if g.members else ""
        elif g.act_how == "same_code":
            act = _context_act(text, g.start, tokens)
            how = "context" if act else None
            act_raw = text[g.members[-1].end:g.end].strip(" ,") if g.members else ""
        elif default_act:
            act, how = default_act, "default"
        else:
            act = _context_act(text, g.start, tokens)
            how = "context" if act else None
        for n, member in enumerate(g.members):
            last = n == len(g.members) - 1
            start = g.start if n == 0 else member.start
            end = g.end if last else member.end
            member_how = "group" if how == "explicit" and not last else how
            labels = [member.label]
            if member.range_to is not None:
                expanded = _expand(act, member.label, member.range_to.label, known) if act and expand_ranges else None
                labels = expanded if expanded else [member.label, member.range_to.label]
            for k, label in enumerate(labels):
                path = member.path if k == 0 else (member.range_to.path if member.range_to and
                                                  label == member.range_to.label else {})
                out.append(Citation(
                    start, end, text[start:end], act, act_raw, label, dict(path),
                    canonical_id(act, label) if act else None, "statute", member_how, False, (), instrument,
                    following=member.following))
    return out


def find_citations(
    text: str,
    known: KnownArticles | None = None,
    default_act: str | None = None,
    *,
    kinds: Collection[str] | None = ("statute",),
    expand_ranges: bool = True,
) -> list[Citation]:
    """All French statutory citations in ``text``, in order of their spans' starts (module doc).

    ``known`` maps source ids to article labels (ranges expand within it); ``default_act`` is the
    code being read (articles with no code named resolve to it). ``kinds``: only ``"statute"``
    citations are found in French text; None keeps all.
    """
    tokens = tokenise(text)
    groups = list(group(text, tokens))
    cites: list[Citation] = list(resolve(text, groups, tokens, known, default_act, expand_ranges))
    covered = [(g.start, g.end) for g in groups]
    for tok in tokens:  # laws named without an article: cited too, never as a code article
        if tok.kind == "law" and not any(s <= tok.start < e for s, e in covered):
            cites.append(Citation(tok.start, tok.end, tok.text, None, tok.text, None, {}, None, "statute",
                                        None, False, (), tok.instrument))
    if kinds is not None:
        cites = [c for c in cites if c.kind in kinds]
    return sorted(cites, key=lambda c: (c.start, c.end))
