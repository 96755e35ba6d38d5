"""French statutory citations in text: ``article 1240 du code civil``, ``art. L. 1232-1 C. trav.``.

:func:`find_citations` is the French profile (:data:`FRENCH`) of the shared citation pipeline
(:mod:`lexir.citations.pipeline`), its word lists in ``data/`` (not in code); its hooks:

tokenise
    (``scan``) :func:`tokenise` finds the code designations (``data/acts.tsv``: names case-insensitively,
    ``code civil``; abbreviations as written, with free spacing, ``C. civ.``/``C.civ.``) and
    mentions of laws (``loi n° 89-462 du 6 juillet 1989``; ``décret``, ``ordonnance``…,
    ``data/keywords.tsv`` kind ``law``) anywhere in the text.
group
    (``groups``) :func:`group` reads, from each article keyword (``article``, ``l'article``, ``art.``,
    ``les articles``…), the article numbers (``1240``, ``L. 1232-1``, ``R*2122-1``, ``1er``,
    ``12 bis``) joined by ``,``/``et``/``ou`` (a list) or ``à``/``au`` (a range), an
    ``et suivants``, the units after a number (``, alinéa 2``/``al. 2``, ``, 1°``, ``a)``) or
    before the keyword (``deuxième alinéa de l'article``, ``au 1° de l'article``, ``a) du 1° de
    l'article``: ordinals in ``data/ordinals.tsv``), then what follows: a code (``du code civil``,
    ``C. civ.``), ``du présent code``, ``du même code``, a law (``de la loi n° …``), or an unknown
    code (``du code des marchés publics``). A code written before (``C. civ., art. 1103``) is a prefix.
resolve
    the pipeline's, one citation per article, with the hooks ``context_act`` (the code named last
    before the group on its line), ``between`` (a range's inside: the labels the code has) and
    ``extra`` (laws named without an article).

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
  ``"statute"``, ``resolved_from`` ``explicit`` (``group``) as for any act written after; a law mentioned without an article is a citation too (``article`` None). An
  unknown code gives ``act`` None, ``id`` None, ``act_raw`` as written: never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from lexir.citations import pipeline
from lexir.citations.model import Citation, read_act_table, read_kind_table
from lexir.citations.pipeline import Group, Ref, with_ranges
from lexir.jurisdictions.fr.statutes import article_label

DATA = Path(__file__).parent / "data"
KnownArticles = Mapping[str, Collection[str]]


# ---------------------------------------------------------------------------
# tables


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
    keywords = {kind: tuple(variants) for kind, variants in read_kind_table(DATA / "keywords.tsv").items()}
    ordinals = {word.lower(): numbers[0] for word, numbers in read_kind_table(DATA / "ordinals.tsv", "word").items()}

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
    """The citation groups of ``text``, in order (see the module doc): one reference per article
    number, two for a range (its ends; :func:`lexir.citations.pipeline.with_ranges` adds its
    inside), every reference of a number spanning the number with its units."""
    p = _patterns()
    by_start = {tok.start: tok for tok in tokens}
    pos = 0
    for m in p["start"].finditer(text):
        if m.start() < pos:
            continue
        start = m.start()
        numbers: list[list[Ref]] = []  # each: the article, or the two ends of a range
        i = m.end()
        while True:
            num = p["number"].match(text, i)
            if num is None:
                break
            first = Ref(num.start(), num.end(), article_label(num[0]), {})
            numbers.append([first])
            i = _units_after(text, first)
            rng = p["range_sep"].match(text, i)
            if rng:
                end = p["number"].match(text, rng.end())
                if end is not None:
                    last = Ref(end.start(), end.end(), article_label(end[0]), {})
                    i = _units_after(text, last)
                    first.end = last.end
                    numbers[-1].append(last)
            sep = p["list_sep"].match(text, i)
            if sep is None:
                break
            i = sep.end()
        fol = p["following"].match(text, i)
        if fol and numbers:
            numbers[-1][0].following = True
            numbers[-1][0].end = i = fol.end()
        before = p["before"].search(text, max(0, start - 80), start)
        if before and numbers:
            path = {**_unit_path(before[0]), **numbers[0][0].path}
            numbers[0][0].path = {lv: path[lv] for lv in ("al", "item", "lit") if lv in path}
            start = before.start()
        act, how, end = _act_after(text, i, by_start)
        if act is None and how is None:
            act, how = _act_before(text, start, tokens)
        group_end = end if end is not None else i
        raw = text[numbers[-1][0].end : group_end].strip(" ,") if numbers else ""
        refs: list[Ref] = []
        ranges: list[tuple[int, int]] = []
        for n, number in enumerate(numbers):
            last_number = n == len(numbers) - 1
            span = (start if n == 0 else number[0].start, group_end if last_number else number[0].end)
            for ref in number:
                ref.start, ref.end = span
                ref.following = number[0].following
                _give_act(ref, act, how, raw, last_number)
            if len(number) == 2:
                ranges.append((len(refs), len(refs) + 1))
            refs += number
        yield Group(start, group_end, with_ranges(refs, ranges))
        pos = group_end


def _give_act(ref: Ref, act: Token | None, how: str | None, raw: str, own: bool) -> None:
    """Give ``ref`` the act its group names (``own``: written right after its number)."""
    if act is not None:
        ref.source, ref.act_raw, ref.has_act, ref.own_act = act.source, act.text, True, own
        if act.kind == "law":
            ref.instrument = act.instrument
        if how == "prefix":
            ref.origin = "prefix"
    elif how in ("this_code", "same_code"):
        ref.act_raw, ref.has_act = raw, True
        ref.self_ref, ref.same_act = how == "this_code", how == "same_code"


def _units_after(text: str, ref: Ref) -> int:
    """Reads ``, alinéa 2``, ``, 1°``, ``a)`` after a number into its path; returns the end."""
    i = ref.end
    found = ""
    while (u := _patterns()["unit_after"].match(text, i)) is not None:
        found += " " + u["unit"]
        i = u.end()
    if found:
        ref.path = _unit_path(found)
        ref.end = i
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
# resolve: the pipeline's, with these hooks


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


class _French(pipeline.Profile):
    """The French profile of the citation pipeline: code and law designations found first
    (:func:`tokenise`), groups read from the article keywords (:func:`group`), the code named
    before on the line as context, ranges expanded over the labels a code has, laws named without
    an article cited too."""

    def scan(self, text: str) -> list[Token]:
        return tokenise(text)

    def groups(self, text: str, scan: Any, found: list[Citation]) -> Iterator[Group]:
        return group(text, scan)

    def context_act(self, text: str, scan: Any, group: Group, ref: Ref,
                    found: list[Citation]) -> tuple[str, str, str] | None:
        source = _context_act(text, group.start, scan)  # the line the group starts on
        return (source, "", "statute") if source else None

    def between(self, first: str, last: str, labels: Collection[str] | None) -> list[str] | None:
        """The labels a code has strictly between two it has, of the same stem (``L. 1232-1`` to
        ``L. 1232-4``); None (the ends only) otherwise."""
        if labels is None or first not in labels or last not in labels:
            return None
        a = re.fullmatch(r"(.*?)(\d+)", first)
        b = re.fullmatch(r"(.*?)(\d+)", last)
        if a is None or b is None or a[1] != b[1] or int(a[2]) > int(b[2]):
            return None
        return [f"{a[1]}{n}" for n in range(int(a[2]) + 1, int(b[2])) if f"{a[1]}{n}" in labels]

    def extra(self, text: str, scan: Any, found: list[Citation], groups: list[Group],
              known: KnownArticles | None, default_act: str | None) -> list[Citation]:
        covered = [(g.start, g.end) for g in groups]
        return [Citation(tok.start, tok.end, tok.text, None, tok.text, None, {}, None, instrument=tok.instrument)
                for tok in scan  # laws named without an article: cited too, never as a code article
                if tok.kind == "law" and not any(s <= tok.start < e for s, e in covered)]


FRENCH = _French()


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
    return pipeline.find(FRENCH, text, known, default_act, expand_ranges=expand_ranges, kinds=kinds)
