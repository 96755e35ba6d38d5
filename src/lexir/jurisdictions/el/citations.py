"""Find Greek statutory citations in text: ``άρθρο 914 ΑΚ``, ``άρθρ. 281 ΚΠολΔ``, ``αρ. 5``,
``άρθρα 914 και 932 ΑΚ``, ``άρθρα 1-5``, ``άρθρο 9 παρ. 2 περ. α΄ εδ. 2``, ``άρθρο 52 του
ν. 3669/2008``, ``παρ. 3 του άρθρου 37``, ``περ. α΄ της παρ. 1 του άρθρου 5 του παρόντος``.

Matching ignores accents and case (``άρθρο`` = ``ΑΡΘΡΟ`` = ``αρθρο``): the text is folded
character by character, so offsets stay those of the original text. Keywords live in
``data/keywords.tsv``, acts in ``data/citation_acts.tsv``.

Path keys: ``par`` (παράγραφος), ``item`` (περίπτωση, label a Greek letter without its numeral
sign: ``περ. α΄`` -> ``α``, or a number), ``subitem`` (υποπερίπτωση), ``sent`` (εδάφιο).

This finder is the Greek profile (:data:`GREEK`) of the shared citation pipeline
(:mod:`lexir.citations.pipeline`); its own stages are the folding (the tokenise hook) and the
group stage (Greek keywords and units, unit-first chains). Groups and acts resolve as in every
order: references joined by ``,``/``και``/``ή`` or a range (``έως``, ``-``) share the act written
after the last of them (``resolved_from="explicit"`` for the last, ``"group"`` for the others) (``του ν. 4624/2019``, ``ΑΚ``,
``του Αστικού Κώδικα``); ``του παρόντος`` names the act being read (``default_act``); a
reference with no act is resolved to ``default_act`` or left unresolved. Unit-first citations
(``παρ. 3 του άρθρου 37``) are read with the units as the path of the article after them.
A law number missing from the table (``ν. 3669/2008``) is reported with ``act=None`` and the
number in ``act_raw``; so is one the corpus splits over two files (``ν. 4577/2018``).
Ranges of articles expand like the German ones (``known`` restricts them to existing labels).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from lexir.citations import pipeline
from lexir.citations.model import Citation, read_act_table, read_kind_table
from lexir.citations.pipeline import Group, Ref, above, read_units, skip_space, with_ranges

KnownArticles = Mapping[str, Collection[str]]
_DEPTH = {"article": 0, "par": 1, "item": 2, "subitem": 3, "sent": 4}
_MARKS = "΄'’ʹ´`"


def fold(text: str) -> str:
    """Lower case without accents, one character for one (offsets are kept); ς -> σ."""
    out = []
    for ch in text:
        base = unicodedata.normalize("NFD", ch)[0] if not ch.isascii() else ch
        low = base.lower()
        out.append(low if len(low) == 1 else base)
    return "".join(out).replace("ς", "σ")


def _fold_key(text: str) -> str:
    """Acts compare on letters and digits only (Α.Κ. = ΑΚ = ακ)."""
    return re.sub(r"[^\w/]|_", "", fold(text))


def _data(name: str):
    return resources.files(__package__) / "data" / name


def _alt(variants: Collection[str]) -> str:
    return "|".join(re.escape(fold(v)) for v in sorted(set(variants), key=len, reverse=True))


@dataclass(frozen=True)
class _Syntax:
    article: re.Pattern[str]
    unit: re.Pattern[str]
    connector: re.Pattern[str]
    of: re.Pattern[str]
    self_ref: re.Pattern[str]
    law: re.Pattern[str]
    by_abbrev: dict[str, str]  # _fold_key -> source
    abbrev: re.Pattern[str]
    by_number: dict[str, str] = field(default_factory=dict)  # "ν4624/2019" -> source
    plural: frozenset[str] = frozenset()
    foreign: re.Pattern[str] = re.compile("(?!)")


_L = "α-ωάέήίόύώϊϋΐΰ"
_NUM = r"\d+(?:[Α-ΩA-Z](?![\w])|\s[Α-ΩA-Z](?![\w.]))?(?![\d/.,]\d)"


@functools.cache
def _syntax() -> _Syntax:
    kinds = _keywords()
    item_label = rf"(?:[{_L}]{{1,2}}[{_MARKS}]?\)?(?![{_L}])|\d+[{_MARKS}]?(?!\w))"
    unit = "|".join(
        rf"(?P<{k}>{_alt(kinds[k])})(?<=\.)\s*(?P<{k}_l>{lab})|(?P<{k}w>{_alt(kinds[k])})(?<!\.)(?![{_L}])\s*(?P<{k}w_l>{lab})"
        for k, lab in (
            ("subitem", item_label),
            ("item", item_label),
            ("par", rf"\d+[{_MARKS}]?(?!\w)"),
            ("sent", rf"(?:\d+|[{_L}]{{1,2}}[{_MARKS}]?)(?![{_L}\d])"),
        )
    )
    by_abbrev: dict[str, str] = {}
    by_number: dict[str, str] = {}
    surface: set[str] = set()
    number_re = re.compile(r"(?P<kind>ν\.|π\.δ\.)\s*(?P<no>\d+/\d{4})")
    for entry in read_act_table(_data("citation_acts.tsv")):
        for form in (*entry.abbreviations, *entry.names):
            m = number_re.fullmatch(fold(form))
            if m:
                by_number[("ν" if m.group("kind") == "ν." else "πδ") + m.group("no")] = entry.source
                continue
            by_abbrev.setdefault(_fold_key(form), entry.source)
            surface.add(form)
    # an abbreviation as written: its letters with optional dots and spaces between
    pats = []
    for form in sorted(surface, key=len, reverse=True):
        letters = re.findall(r"\w", fold(form))
        pats.append(r"\.?\s?".join(re.escape(ch) for ch in letters) + r"\.?")
    return _Syntax(
        article=re.compile(rf"(?<![\w.])(?P<kw>{_alt(kinds['article'])})(?:(?<=\.)|(?![{_L}]))\s*(?=\d)"),
        unit=re.compile(unit),
        connector=re.compile(rf"\s*(?:(?P<range>{_alt(kinds['range'])})|(?P<join>{_alt(kinds['join'])}))(?![{_L}])\s*"),
        of=re.compile(rf"\s*(?:{_alt(kinds['of'])})\s+"),
        self_ref=re.compile(rf"(?:{_alt(kinds['self'])})(?![{_L}])"),
        law=re.compile(
            rf"(?P<kind>{_alt(kinds['law'])}|{_alt(kinds['pd'])})(?<=[.{_L}])\s*(?P<no>\d+)\s*/\s*(?P<year>\d{{4}})(?!\d)"
        ),
        by_abbrev=by_abbrev,
        abbrev=re.compile(rf"(?:{'|'.join(pats)})(?![{_L}\w])"),
        by_number=by_number,
        plural=frozenset(fold(v) for v in kinds["article_plural"]),
        foreign=re.compile(
            rf"(?:{_alt(kinds['foreign'])})(?![{_L}])(?:\s*\(εε\))?(?:\s*(?:αριθ\.|αριθμ\.)?\s*\d+/\d+(?:/(?:εε|εκ|εοκ))?)?"
        ),
    )


@functools.cache
def _keywords() -> dict[str, list[str]]:
    return read_kind_table(_data("keywords.tsv"))


@functools.cache
def _pd_forms() -> frozenset[str]:
    return frozenset(fold(v) for v in _keywords().get("pd", ()))


def _label(raw: str) -> str:
    return raw.replace(" ", "").rstrip(")").rstrip(_MARKS)


def _unit_kind(m: re.Match[str]) -> tuple[str, str]:
    for k in ("subitem", "item", "par", "sent"):
        if m.group(k):
            return k, m.group(f"{k}_l")
        if m.group(f"{k}w"):
            return k, m.group(f"{k}w_l")
    raise AssertionError


def _units(folded: str, pos: int, path: dict[str, str], level: str) -> tuple[int, dict[str, str], str]:
    return read_units(folded, pos, path, level, _DEPTH, _unit_at)


def _unit_at(folded: str, pos: int, level: str) -> tuple[str, str, int] | None:
    """The unit hook of :func:`lexir.citations.pipeline.read_units`: the unit after ``pos``."""
    m = _syntax().unit.match(folded, skip_space(folded, pos))
    if not m:
        return None
    kind, label = _unit_kind(m)
    return kind, _label(label), m.end()


def _act_after(text: str, folded: str, pos: int) -> tuple[int, str | None, str, bool] | None:
    """(end, source, as written, names the text itself) of an act after ``pos``."""
    syn = _syntax()
    p = pos
    of = syn.of.match(folded, p)
    q = of.end() if of else p
    while q < len(folded) and folded[q].isspace():
        q += 1
    if q == pos and q < len(folded):
        return None
    m = syn.self_ref.match(folded, q)
    if m and of:
        return m.end(), None, text[q : m.end()], True
    m = syn.law.match(folded, q)
    if m:
        kind = "πδ" if m.group("kind") in _pd_forms() else "ν"
        source = syn.by_number.get(f"{kind}{m.group('no')}/{m.group('year')}")
        return m.end(), source, text[q : m.end()], False
    m = syn.foreign.match(folded, q)
    if m:
        return m.end(), None, text[q : m.end()], False
    m = syn.abbrev.match(folded, q)
    if m:
        raw = text[q : m.end()]
        # one-letter abbreviations (Σ) only as written, in capitals
        if len(_fold_key(raw)) == 1 and not raw.strip(".").isupper():
            return None
        source = syn.by_abbrev.get(_fold_key(raw))
        if source:
            return m.end(), source, raw, False
    m = _UNKNOWN.match(text, q)
    if m and of:
        return m.end(), None, m.group(), False
    return None


# an act abbreviation missing from the table: two Greek capitals or more (ΓΚΠΔ, ΚΕΔΕ)
_UNKNOWN = re.compile(r"[Α-Ω][Α-Ωα-ω]*[Α-Ω][Α-Ωα-ω]*(?![\wΑ-Ωα-ω])")


def _number(text: str, pos: int) -> re.Match[str] | None:
    m = re.compile(_NUM).match(text, pos)
    if m and " " in m.group() and _fold_key(m.group()[-1]) in _syntax().by_abbrev:
        m = re.compile(r"\d+").match(text, pos)  # "άρθρο 5 Σ": Σ is the act
    return m


def _group(text: str, folded: str, start: int, num_pos: int, path: dict[str, str]) -> tuple[list[Ref], int]:
    syn = _syntax()
    num = _number(text, num_pos)
    assert num is not None
    plural = folded[start:num_pos].strip() in syn.plural
    end, path, level = _units(folded, num.end(), path, "article")
    refs = [Ref(start, end, _label(num.group()), path, level)]
    ranges: list[tuple[int, int]] = []
    while True:
        last = refs[-1]
        act = _act_after(text, folded, last.end)
        if act:
            a_end, source, raw, is_self = act
            last.end, last.own_act = a_end, True
            for ref in reversed(refs):
                if ref.has_act:
                    break
                ref.source, ref.act_raw, ref.has_act, ref.self_ref = source, raw, True, is_self
            break
        conn = syn.connector.match(folded, last.end)
        if not conn or not conn.group().strip():
            break
        pos = conn.end()
        kw = syn.article.match(folded, pos)
        if kw:
            pos = kw.end()
        unit = syn.unit.match(folded, pos) if not kw else None
        if unit:
            kind, _ = _unit_kind(unit)
            e, path, level = _units(folded, pos, above(last.path, kind, _DEPTH),
                                    {"par": "article", "item": "par", "subitem": "item", "sent": "item"}[kind])
            if e > pos:
                refs.append(Ref(conn.end(), e, last.article, path, level))
                continue
            break
        if kw or last.level == "article" or plural:
            n = _number(text, pos)
            if not n:
                break
            e, path, level = _units(folded, n.end(), {}, "article")
            refs.append(Ref(conn.end(), e, _label(n.group()), path, level))
            if conn.group("range"):
                ranges.append((len(refs) - 2, len(refs) - 1))
            continue
        lab = re.compile(rf"(?:[{_L}]{{1,2}}[{_MARKS}]?\)?(?![{_L}])|\d+(?!\w))").match(folded, pos)
        if not lab or (last.level == "par" and not lab.group()[0].isdigit()):
            break
        path = {**above(last.path, last.level, _DEPTH), last.level: _label(lab.group())}
        e, path, level = _units(folded, lab.end(), path, last.level)
        refs.append(Ref(conn.end(), e, last.article, path, last.level))
    return with_ranges(refs, ranges), refs[-1].end


def _unit_first(folded: str, pos: int, chains: dict[int, tuple[list[tuple[str, str]], int, int | None]]
                ) -> tuple[int, int, dict[str, str]] | None:
    """``παρ. 3 του άρθρου 37``: (start, position of the article number, path) at ``pos``.

    ``chains`` keeps the chains of units read (``παρ. 1 του περ. α του …``) by the start of each of
    their units, with where the article keyword after them ends (None: no article follows): a
    chain is read once, not again from each of its units, which was quadratic in its length.
    """
    if pos not in chains:
        syn = _syntax()
        units: list[tuple[str, str]] = []
        starts: list[int] = []
        p, end = pos, None
        while m := syn.unit.match(folded, p):
            kind, label = _unit_kind(m)
            units.append((kind, _label(label)))
            starts.append(p)
            of = syn.of.match(folded, m.end())
            if not of:
                break
            p = of.end()
            kw = syn.article.match(folded, p)
            if kw:
                end = kw.end()
                break
        if not units:
            return None
        for i, start in enumerate(starts):
            chains[start] = (units, i, end)
    units, i, end = chains[pos]
    if end is None or len(units) - i > len(_DEPTH):  # a longer chain repeats a level
        return None
    path = {k: v for k, v in sorted(units[i:], key=lambda u: _DEPTH[u[0]])}
    if len(path) != len(units) - i:
        return None
    return pos, end, path


@dataclass(frozen=True)
class _Scan:
    folded: str
    starts: list[tuple[int, int, dict[str, str]]]  # (start, position of the article number, path of units before)


class _Greek(pipeline.Profile):
    """The Greek profile of the citation pipeline: the text folded once, offsets kept (tokenise);
    groups from an article keyword or a unit-first chain (``παρ. 3 του άρθρου 37``)."""

    def scan(self, text: str) -> _Scan:
        syn = _syntax()
        folded = fold(text)
        starts: list[tuple[int, int, dict[str, str]]] = []
        chains: dict[int, tuple[list[tuple[str, str]], int, int | None]] = {}
        for m in syn.unit.finditer(folded):
            if m.start() > 0 and (folded[m.start() - 1].isalpha() or folded[m.start() - 1] == "."):
                continue
            uf = _unit_first(folded, m.start(), chains)
            if uf:
                starts.append(uf)
        starts += [(m.start(), m.end(), {}) for m in syn.article.finditer(folded)]
        starts.sort()
        return _Scan(folded, starts)

    def groups(self, text: str, scan: Any, found: list[Citation]) -> Iterator[Group]:
        pos = 0
        for start, num_pos, path in scan.starts:
            if start < pos or not re.compile(_NUM).match(text, num_pos):
                continue
            refs, pos = _group(text, scan.folded, start, num_pos, path)
            yield Group(start, pos, refs)


GREEK = _Greek()


def find_citations(
    text: str,
    known: KnownArticles | None = None,
    default_act: str | None = None,
    *,
    expand_ranges: bool = True,
    kinds: Collection[str] | None = ("statute",),
) -> list[Citation]:
    """All Greek statutory citations in ``text``, in order of their spans' starts (the signature of
    every language's finder: see :func:`lexir.citations.extract.find_citations`). ``kinds``: every
    Greek citation is a ``statute``."""
    return pipeline.find(GREEK, text, known, default_act, expand_ranges=expand_ranges, kinds=kinds)


def act_source(designation: str) -> str | None:
    """The source id of ``ΑΚ``, ``Κ.Πολ.Δ.``, ``ν. 4624/2019``, ``Αστικού Κώδικα``; None when unknown."""
    syn = _syntax()
    folded = fold(designation.strip())
    m = syn.law.fullmatch(folded)
    if m:
        kind = "πδ" if m.group("kind") in _pd_forms() else "ν"
        return syn.by_number.get(f"{kind}{m.group('no')}/{m.group('year')}")
    return syn.by_abbrev.get(_fold_key(designation))
