"""German federal statutes (bundestag/gesetze Markdown) parsed into :class:`~lexir.types.Act` trees.

Input: one ``<letter>/<slug>/index.md`` per law, YAML front matter (``Title``, ``jurabk``, ``slug``)
followed by Markdown whose headings carry the § / Art units. The heading level (``##`` ... ``######``)
varies between laws, so a unit is recognised by its heading *text*, never by its level.

Design decisions (the lead asked for them to be written down):

Act ids
    The ``jurabk`` with whitespace collapsed and ``/`` replaced by ``_`` (210 jurabks contain a
    ``/``, e.g. ``BBesG/BesÜGBek`` -> ``BBesG_BesÜGBek``); ``::`` would become ``:`` (none occur).
    A law without a jurabk gets its slug. :func:`iter_laws` keeps ids unique across the corpus: a
    second law with an id already taken becomes ``<id>~<slug>`` (none in the 2021/22 corpus).

Article level and label
    Top-level units (``act.articles``) have level ``para`` for ``§``, ``art`` for ``Art``/``Artikel``,
    ``anlage`` for ``Anlage``/``Anhang`` and ``body`` for the fallback below. The label is the
    number as printed (``823``, ``1a``, ``1.01``, ``I``); annexes are labelled ``Anlage 1``,
    ``Anhang EV``, or bare ``Anlage``. §§ that follow an Art or an annex heading form a group;
    a group whose numbers also occur elsewhere in the law is qualified by its Art or annex:
    ``BGBEG::229§1`` (Art 229 § 1 EGBGB), ``AO 1977::Anlage 1§1`` (the model statute in the
    annex of the AO). Any label still taken gets ``~2``, ``~3`` (25 §§ in the corpus).

Ranges and stubs
    ``§§ 3 bis 6 (weggefallen)`` (and ``und``/``u.``/comma lists, ``Art I bis Art III``) are
    expanded into one stub article per number (3, 4, 5, 6); letters are expanded within one number
    (``1615b bis 1615k``); a range between different numbers with letters keeps both ends and the
    plain numbers between. A stub's title is the range heading as printed (``§§ 3 bis 6
    (weggefallen)``), which is how :func:`is_range_stub` tells them apart. Single stubs
    (``§ 2360 (weggefallen)``) are ordinary articles with title ``(weggefallen)``.

Annexes
    Kept as articles (level ``anlage``) with their text (tables flattened, images dropped); they
    are not split into Absätze. Sub-headings inside an annex are part of its text.

Laws without any § / Art heading (about 2,000 notices, treaties' acts of assent)
    Get one article, level ``body``, label ``body``, holding all text outside annexes, so that no
    law is left without retrievable text. :func:`law_stats` counts them apart. In laws that have
    articles, text under other headings (Eingangsformel, Präambel, Schlussformel) is dropped.

Divisions above the articles (:class:`~lexir.types.Division`, ``act.divisions``)
    Every other heading of a law with articles (not boilerplate, Präambel, Inhaltsübersicht)
    is a division, nested by heading depth: a division heading closes the open ones as deep or
    deeper; a § / Art / annex stands in the innermost open one not deeper than its heading (the
    converter puts a Kapitel and its §§ both at ``######``). Level and label: ``Buch 1`` ->
    ``buch:1``, ``Erster Abschnitt`` -> ``abschnitt:1`` (ordinals as numbers), ``Allgemeiner
    Teil`` -> ``teil:Allgemeiner``, ``I.`` / ``IV a.`` -> ``gliederung:I`` / ``gliederung:IVa``,
    any other heading -> ``gliederung`` labelled with its words (``Freiheitsstrafe``). Ids:
    ``BGB::buch:2/abschnitt:8/titel:27`` (repeats among siblings get ``~2``). Divisions without
    an article below are dropped; articles' ids do not depend on divisions.

Tree below an article
    code > § > Absatz (``abs``) > Satz (``satz``) > Nummer (``nr``) > Buchstabe (``lit``) >
    Doppelbuchstabe ``aa)`` (``dlit``) > ``aaa)`` (``tlit``). A list hangs under the Satz that
    introduces it (``StGB::243/abs:1/satz:2/nr:3``, as German citations count it); a list with
    no text before it hangs under the Absatz (or article) itself. An article without ``(1)``
    markers has its Sätze directly below it (``BGB::826/satz:1``). Every Absatz gets Satz children,
    even a single sentence, so that ``…/abs:1/satz:1`` always exists. Sätze inside Nummern are not
    split. Text of a unit is as printed (markers ``(1)``, ``1.``, ``a)`` kept, hard line breaks
    joined, footnote marks and Markdown escapes removed), blocks separated by newlines; a Satz's
    text excludes the Absatz marker. Sentence ends: ``.!?`` before a capital or ``§``, except
    after the abbreviations in ``data/abbreviations.txt``, single letters (``z. B.``), and
    ordinals (``18. Lebensjahr``, ``1. Januar``); a number ends a sentence after a citation word
    (``Abs. 1. Die``) or when it is a year.

Errors
    :func:`parse_law` raises :class:`LawSyntaxError` (no front matter, a bad front-matter line);
    :func:`iter_laws` yields its :class:`ParseError` (path, line, message) in place of the Act.
    The 2021/22 corpus has none: 6,636 acts.

Speed
    The whole corpus is ~12 s of CPU in one process (:func:`iter_laws`, with the cycle collector
    paused). :func:`parse_archive` parses it in worker processes and caches the result on disk,
    keyed by the archive's sha256 and this parser's source (``benchmarks/bench_parse.py``).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import pickle
import re
import shutil
import tarfile
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from lexir.io.markers import read_marker, write_marker
from lexir.io.paths import cache_dir, file_sha256
from lexir.structure.packed import FORMAT_VERSION as PACK_FORMAT
from lexir.structure.packed import Packed, available_cpus, gc_paused, pack_act, unpack_act
from lexir.structure.parsing import LawSyntaxError, ParseError, parse_member
from lexir.structure.parsing import unique_labels as _unique
from lexir.types import ID_SEP, PATH_SEP, Act, Division, Provision, path_id

DATA = Path(__file__).parent / "data"


# ---------------------------------------------------------------------------
# front matter


def _front_matter(lines: list[str], path: str) -> tuple[dict[str, str], int]:
    """Fields of the YAML front matter and the index of the first body line.

    Twenty files carry the start of their title *before* the opening ``---``; those lines are
    returned as the ``_prefix`` field so that the title can be rebuilt.
    """
    try:
        start = lines.index("---")
        end = lines.index("---", start + 1)
    except ValueError:
        raise LawSyntaxError(ParseError(path, 1, "no YAML front matter (--- ... ---)")) from None
    fields: dict[str, str] = {"_prefix": " ".join(s.strip() for s in lines[:start] if s.strip())}
    key = ""
    for number, line in enumerate(lines[start + 1 : end], start + 2):
        if not line.strip():
            continue
        if line[:1].isspace() and key:  # folded continuation of the previous value
            fields[key] = f"{fields[key]} {line.strip()}".strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise LawSyntaxError(ParseError(path, number, f"bad front matter line {line!r}"))
        key = key.strip()
        fields[key] = value.strip()
    return {k: _unquote(v) for k, v in fields.items()}, end + 1


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'").strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].strip()
    return value


def safe_act_id(jurabk: str, slug: str = "") -> str:
    """The act id for a jurabk: no ``/`` and no ``::`` (they delimit lexir ids), nor a ``:`` at
    either end (``BGB:`` would make ``BGB:::1``, read as source ``BGB``, article ``:1``)."""
    for name in (jurabk, slug):
        text = re.sub(r":{2,}", ":", " ".join(name.split()).replace("/", "_")).strip(":").strip()
        if text:
            return text
    return ""


# ---------------------------------------------------------------------------
# headings

_HEADING = re.compile(r"(#{1,6})\s*(.*?)\s*$")  # matched from a line's start to its end
_LABEL = r"(?:\d+[a-z]{0,2}(?:\.\d+[a-z]?)*|[IVXLC]+[a-z]?)"
_ARTICLE = re.compile(rf"^(?P<kind>§§?|Art\.?|Artikel)\s*(?P<first>{_LABEL})(?=$|[\s,\-–])(?P<rest>.*)$")
_MORE = re.compile(
    rf"^\s*(?:,|bis|und|u\.|-|–)\s*(?:§§?|Art\.?|Artikel)?\s*(?P<label>{_LABEL})(?=$|[\s,\-–])"
)
_ANNEX = re.compile(r"^(?P<kind>Anlage|Anhang|Anl\.)(?=$|[\s(])\s*(?P<rest>.*)$")
_ANNEX_LABEL = re.compile(r"^(?:\S*\d\S*|[IVXLC]+|[A-Z]{1,3})$")
_BOILERPLATE = {"Eingangsformel", "Schlussformel", "Schlußformel", "", "-", "–"}


@dataclass
class _Unit:
    """A § / Art / annex heading and the raw lines below it."""

    kind: str  # para | art | anlage | body
    labels: list[str]
    title: str
    depth: int
    line: int  # 1-based line of the heading
    context: str = ""  # label of the Art or annex this § stands in (mixed laws)
    group: int = 0  # line of that Art/annex heading (0: none)
    division: _Div | None = None  # the innermost division heading above it
    # The text below the heading as pieces, each one or more whole lines joined by "\n"; the
    # unit's text is "\n".join(parts) (slices of the law's text, not one string per line).
    parts: list[str] = field(default_factory=list)


def _heading_unit(text: str, depth: int, line: int) -> _Unit | None:
    """A unit for an article or annex heading, None for any other heading."""
    # "(XXXX)" is the converter's mark for a heading without its own number (ranges, future §§).
    # "**§ 112 des Gesetzes über …**" (bold) in amending acts quotes another law: no unit here.
    text = text.removeprefix("(XXXX)").strip()
    m = _ARTICLE.match(text)
    if m:
        return _article_unit(m, text, depth, line)
    m = _ANNEX.match(text)
    if m:
        return _annex_unit(m, depth, line)
    return None


def _article_unit(m: re.Match[str], text: str, depth: int, line: int) -> _Unit:
    kind = "para" if m["kind"].startswith("§") else "art"
    ends = [m["first"]]
    rest = m["rest"]
    seps = []
    while (more := _MORE.match(rest)) is not None:
        sep = rest[: more.start("label")].split()[0]
        if sep in ("-", "–") and m["kind"] != "§§":  # "Art 1 - Errichtung …" is a title dash
            break
        seps.append("bis" if sep in ("-", "–") else sep)
        ends.append(more["label"])
        rest = rest[more.end() :]
    title = rest.strip().lstrip("-–").strip()
    if len(ends) == 1:
        return _Unit(kind, ends, title, depth, line)
    return _Unit(kind, _expand(ends, seps), text.rstrip(" -–"), depth, line)


def _annex_unit(m: re.Match[str], depth: int, line: int) -> _Unit:
    kind = "Anhang" if m["kind"] == "Anhang" else "Anlage"
    token, _, title = m["rest"].partition(" ")
    token = token.rstrip(".:,")
    if token and _ANNEX_LABEL.match(token) and not token.startswith("("):
        # "/" separates the steps of a lexir id: "Anlage 1/2" is labelled "Anlage 1_2", as act ids do
        label = f"{kind} {token.replace('/', '_')}"
        return _Unit("anlage", [label], title.strip().lstrip("-–").strip(), depth, line)
    return _Unit("anlage", [kind], m["rest"].strip().lstrip("-–").strip(), depth, line)


# ---------------------------------------------------------------------------
# ranges

_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}
_SPLIT_LABEL = re.compile(r"^(.*?)(\d+)([a-z]*)$")


def _expand(ends: list[str], seps: list[str]) -> list[str]:
    """Labels of ``a bis b`` / ``a, b und c`` lists, in order, without repeats."""
    out = [ends[0]]
    for sep, label in zip(seps, ends[1:], strict=True):
        if sep == "bis":
            out.extend(_between(out[-1], label))
        out.append(label)
    return list(dict.fromkeys(out))


def _between(a: str, b: str, limit: int = 500) -> list[str]:
    """Labels strictly between ``a`` and ``b`` where the numbering makes them certain."""
    if _is_roman(a) and _is_roman(b):
        lo, hi = _roman_value(a), _roman_value(b)
        return [_roman(n) for n in range(lo + 1, hi)] if 0 < hi - lo <= limit else []
    ma, mb = _SPLIT_LABEL.match(a), _SPLIT_LABEL.match(b)
    if not ma or not mb or ma[1] != mb[1]:
        return []
    prefix, na, nb = ma[1], int(ma[2]), int(mb[2])
    if na == nb and ma[3] and mb[3] and len(ma[3]) == len(mb[3]) == 1:
        return [f"{prefix}{ma[2]}{chr(c)}" for c in range(ord(ma[3]) + 1, ord(mb[3]))]
    if na == nb and not ma[3] and len(mb[3]) == 1:  # "1 bis 1c": 1a, 1b
        return [f"{prefix}{ma[2]}{chr(c)}" for c in range(ord("a"), ord(mb[3]))]
    if not 0 < nb - na <= limit:
        return []
    width = len(ma[2]) if ma[2].startswith("0") else 0  # "11.03 bis 11.05" keeps its zero padding
    return [f"{prefix}{n:0{width}d}" for n in range(na + 1, nb)]


def _is_roman(label: str) -> bool:
    return bool(label) and all(ch in _ROMAN for ch in label)


def _roman_value(label: str) -> int:
    values = [_ROMAN[ch] for ch in label]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


_ROMAN_STEPS = [
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]


def _roman(n: int) -> str:
    out = ""
    for value, sym in _ROMAN_STEPS:
        while n >= value:
            out += sym
            n -= value
    return out


_RANGE_TITLE = re.compile(
    rf"^(?:§§?|Art\.?|Artikel)\s*{_LABEL}\s*(?:,|bis|und|u\.|-|–)\s*(?:§§?|Art\.?|Artikel)?\s*{_LABEL}"
)


def is_range_stub(article: Provision) -> bool:
    """True for an article expanded from a range heading (``§§ 3 bis 6 (weggefallen)``)."""
    return bool(_RANGE_TITLE.match(article.title))


# ---------------------------------------------------------------------------
# divisions above the articles: Buch, Teil, Abschnitt, Titel, Kapitel, ...

_DIVISION_WORDS = ("Buch", "Teil", "Unterteil", "Abschnitt", "Unterabschnitt", "Titel", "Untertitel",
                   "Kapitel", "Unterkapitel", "Abteilung", "Unterabteilung")
_DIVISION = re.compile(
    r"^(?:(?P<ord>[A-ZÄÖÜ][a-zäöüß]+)\s+)?(?P<kw>" + "|".join(_DIVISION_WORDS) + r")\b"
    r"(?:\s+(?P<num>(?:\d+|[IVXLC]+|[A-Z])(?:\s?[a-z]\b)?)\.?(?=$|[\s:.,\-–]))?"
)
_DIVISION_NUMBER = re.compile(r"^(?P<num>(?:[IVXLC]+|\d+|[A-Z])(?:\s?[a-z])?)\.(?=\s|$)")
_NOT_DIVISIONS = ("Präambel", "Inhaltsübersicht", "Inhaltsverzeichnis", "Fußnote", "Eingangsformel",
                  "Schlussformel", "Schlußformel")
_ORDINAL_UNITS = {"erst": 1, "zweit": 2, "dritt": 3, "viert": 4, "fünft": 5, "sechst": 6, "siebt": 7,
                  "siebent": 7, "acht": 8, "neunt": 9, "zehnt": 10, "elft": 11, "zwölft": 12}
_ORDINAL_TENS = {"zwanzigst": 20, "dreißigst": 30, "vierzigst": 40, "fünfzigst": 50}
_CARDINALS = {"ein": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9}


@dataclass
class _Div:
    """A division heading under construction: what it says, its Markdown depth, what is in it."""

    level: str
    label: str
    heading: str
    title: str
    depth: int
    children: list[_Div] = field(default_factory=list)
    units: list[_Unit] = field(default_factory=list)


def _ordinal(word: str) -> int | None:
    """``Erster`` -> 1, ``Neunzehnter`` -> 19, ``Einundzwanzigstes`` -> 21; None for other words."""
    stem = re.sub(r"(?:e[rsmn]?)$", "", word.lower())
    if stem in _ORDINAL_UNITS:
        return _ORDINAL_UNITS[stem]
    if stem in _ORDINAL_TENS:
        return _ORDINAL_TENS[stem]
    if stem.endswith("zehnt") and stem[:-5] in _CARDINALS:
        return 10 + _CARDINALS[stem[:-5]]
    head, sep, tens = stem.partition("und")
    if sep and head in _CARDINALS and tens in _ORDINAL_TENS:
        return _ORDINAL_TENS[tens] + _CARDINALS[head]
    return None


def _division_label(text: str) -> str:
    """A label usable in an id step: no ``/``, ``:`` or whitespace, at most 60 characters."""
    return "_".join(text.replace("/", "_").replace(":", "").split())[:60].strip("_.") or "_"


def _division(text: str, depth: int) -> _Div | None:
    """A division for a heading that is neither an article nor an annex, None for boilerplate.

    ``Buch 1 - Allgemeiner Teil``: level ``buch``, label ``1``; ``Erster Abschnitt - ...``: level
    ``abschnitt``, label ``1``; ``Allgemeiner Teil``: ``teil``, label ``Allgemeiner``; ``I. - Die
    Grundrechte``: ``gliederung``, label ``I``; any other heading: ``gliederung``, its words as
    the label (``Freiheitsstrafe``).
    """
    text = text.replace("(XXXX)", "").strip()
    if text in _BOILERPLATE or text.startswith(_NOT_DIVISIONS):
        return None
    m = _DIVISION.match(text)
    if m and (m["num"] or m["ord"]):
        level = m["kw"].lower()
        if m["num"]:
            label = m["num"].replace(" ", "")
        else:
            number = _ordinal(m["ord"])
            label = str(number) if number is not None else m["ord"]
        heading, rest = m[0].strip(), text[m.end():]
    elif (m := _DIVISION_NUMBER.match(text)) is not None:
        level, label, heading, rest = "gliederung", m["num"].replace(" ", ""), m[0], text[m.end():]
    else:
        parts = re.split(r"\s[-–](?:\s|$)", text.lstrip("-– "), maxsplit=1)
        head, rest = parts[0], parts[1] if len(parts) > 1 else ""
        level, label, heading = "gliederung", head, head
    title = rest.strip().lstrip("-–:.").strip()
    if not heading.strip(" -–"):  # "- Heilbehandlung ...": no number, the title names it
        label = heading = title
        title = ""
    return _Div(level, _division_label(label), heading.strip(), title, depth)


def _divisions(act_id: str, roots: list[_Div], ids: dict[int, list[str]]) -> list[Division]:
    """The :class:`Division` trees of a law, each keeping only divisions with articles below;
    ``ids`` gives the final article ids of each unit (by ``id(unit)``)."""

    def build(div: _Div, base: str) -> Division | None:
        kids = [k for k in (build(c, "") for c in div.children) if k is not None]
        arts = [a for u in div.units for a in ids.get(id(u), ())]
        if not kids and not arts:
            return None
        return Division("", div.level, div.label, div.title, div.heading, kids, arts)

    def number(items: list[Division], base: str) -> None:
        seen: Counter[str] = Counter()
        for d in items:
            key = f"{d.level}:{d.label}"
            seen[key] += 1
            if seen[key] > 1:
                d.label = f"{d.label}~{seen[key]}"
            d.id = f"{base}{PATH_SEP}{d.level}:{d.label}" if base else f"{act_id}{ID_SEP}{d.level}:{d.label}"
            number(d.children, d.id)

    out = [k for k in (build(r, "") for r in roots) if k is not None]
    number(out, "")
    return out


# ---------------------------------------------------------------------------
# splitting the body into units


_STRUCTURAL = re.compile(
    r"^(?:[IVXLC]+\.?|\d+\.?|[A-Z]\.|(?:\w+(?:er|es)\s+)?(?:Teil|Abschnitt|Unterabschnitt|Kapitel|Unterkapitel|Titel|Buch)\b)"
)


_HEADING_LINE = re.compile(r"\n#.*")  # a literal prefix: searched fast (a "^" in re.M is not)


def _collect_units(text: str, start: int, line: int) -> tuple[list[_Unit], list[str], list[_Div]]:
    """Units in order, the text outside any unit (for laws without § / Art), and the division
    headings as trees (nested by Markdown depth: a division heading closes every open one as deep
    or deeper; a unit stands in the innermost open one not deeper than its own heading).

    ``start`` is the offset of the first section heading in ``text`` and ``line`` its 1-based
    line number. Only heading lines are visited; the lines between two headings are handed on
    as one slice of ``text`` (the law has ~20 times more text lines than headings).
    """
    units: list[_Unit] = []
    loose: list[str] = []
    roots: list[_Div] = []
    open_divs: list[_Div] = []  # the divisions open at this point, outermost first
    current: _Unit | None = None
    context: _Unit | None = None  # the Art or annex that §§ below stand in
    pos = start  # where the lines after the previous heading begin
    counted = start  # `line` is the line number of offset `counted`
    for h in _HEADING_LINE.finditer(text, start - 1):  # text[start - 1] is the "\n" before the first
        hs = h.start() + 1
        if hs > pos:  # one or more lines since the previous heading
            (current.parts if current else loose).append(text[pos : hs - 1])
        pos = h.end() + 1
        line += text.count("\n", counted, hs)
        counted = hs
        m = _HEADING.match(text, hs, h.end())
        assert m is not None  # any line starting with "#" matches
        depth, head = len(m[1]), m[2]
        unit = _heading_unit(head, depth, line)
        if unit is not None:
            # A § as deep as the open division stands in it (laws whose headings are all "##",
            # and the converter's deepest level "######", holding both a Kapitel and its §§).
            while open_divs and open_divs[-1].depth > depth:
                open_divs.pop()
            if open_divs:
                unit.division = open_divs[-1]
                open_divs[-1].units.append(unit)
            if unit.kind in ("art", "anlage"):
                context = unit
            elif unit.kind == "para" and context is not None:
                unit.context, unit.group = context.labels[0], context.line
            units.append(unit)
            current = unit
            continue
        if current is not None and _is_title_heading(current, depth, head):
            current.title = head  # "## § 1" then "## Geltungsbereich" (tariff texts in annexes)
            continue
        if current is not None and current.kind == "anlage" and depth > current.depth:
            current.parts.append(f"\n{head}\n")  # a sub-heading inside an annex is annex text
            continue
        current = None
        if context is not None and context.kind == "art" and depth <= context.depth:
            context = None
        if head.replace("(XXXX)", "").strip() not in _BOILERPLATE:
            loose.append(f"\n{head}\n")
        if (div := _division(head, depth)) is not None:
            while open_divs and open_divs[-1].depth >= depth:
                open_divs.pop()
            (open_divs[-1].children if open_divs else roots).append(div)
            open_divs.append(div)
    if pos <= len(text):
        (current.parts if current else loose).append(text[pos:])
    return units, loose, roots


def _is_title_heading(unit: _Unit, depth: int, text: str) -> bool:
    return (
        unit.kind in ("para", "art")
        and not unit.title
        and depth == unit.depth
        and not any(not s.isspace() for s in unit.parts if s)
        and not _STRUCTURAL.match(text)
        and text not in _BOILERPLATE
        and not text.startswith(("(XXXX)", "Präambel"))
    )


def _final_labels(units: list[_Unit]) -> list[list[str]]:
    """Labels per unit, made unique within the law (see the module docstring).

    §§ standing in an Art or annex are qualified (``229§1``, ``Anlage 1§1``) when one of that
    group's numbers is also used elsewhere in the law; the rest keep their plain number.
    """
    total = Counter(lab for u in units if u.kind in ("para", "art") for lab in u.labels)
    groups: dict[int, Counter[str]] = {}
    for u in units:
        if u.kind == "para" and u.group:
            groups.setdefault(u.group, Counter()).update(u.labels)
    clashing = {g for g, c in groups.items() if any(total[lab] > 1 for lab in c)}
    taken: Counter[str] = Counter()
    out = []
    for u in units:
        labels = []
        for lab in u.labels:
            if u.kind == "para" and u.group in clashing:
                lab = f"{u.context}§{lab}"
            taken[lab] += 1
            labels.append(lab if taken[lab] == 1 else f"{lab}~{taken[lab]}")
        out.append(labels)
    return out


# ---------------------------------------------------------------------------
# blocks: paragraphs of Markdown, with list markers recognised

_ABS = re.compile(r"\((\d+[a-z]?)\)\s*")
_NR = re.compile(r"(\d+[a-z]{0,2})\.(?:\s+|$)")
_LIT = re.compile(r"(([a-z])\2{0,2})\)\s*")  # a) lit, aa) dlit, aaa) tlit
_LIT_LEVELS = ("", "lit", "dlit", "tlit")
_DIGITS = frozenset("0123456789")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_FOOTNOTE_REF = re.compile(r"\[\^[^\]]*\]")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_ESCAPE = re.compile(r"\\(.)")

# A block of Markdown: (indent, kind, label, text, body). ``kind`` is abs | nr | lit | dlit | tlit
# | text | other; ``text`` is cleaned, as printed (marker kept), ``body`` the text without the
# marker. A plain tuple: the corpus has a million of them.
_Block = tuple[int, str, str, str, str]
_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")
# Whitespace other than " " and "\n" (everything str.split() splits on). Text without it is
# normalised by cheaper means (most of the corpus).
_ODD_SPACE = re.compile(r"[\t\x0b\x0c\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def _blocks(text: str) -> list[_Block]:
    """The blocks (paragraphs between blank lines) of a unit's text, in order."""
    out = []
    plain = _ODD_SPACE.search(text) is None
    for chunk in _BLANK_LINES.split(text):
        if "[^" in chunk:
            chunk = "\n".join(_drop_footnotes(chunk.split("\n")))
        if not chunk or chunk.isspace():
            continue
        block = _block(chunk, plain)
        if block[3]:
            out.append(block)
    return out


def _drop_footnotes(rows: list[str]) -> list[str]:
    """Footnote anchors and definitions (``[^F123]: …``) are editorial, not statute text."""
    for i, row in enumerate(rows):
        if row.startswith("[^") and "]:" in row:
            rows = rows[:i]  # a definition runs to the end of its block
            break
    return [r for r in rows if not r.startswith("[^")]


def _block(chunk: str, plain: bool) -> _Block:
    """One block; ``chunk`` has at least one non-blank line.

    ``plain``: the only whitespace in ``chunk`` is " " and "\n". Then the raw line is the chunk
    with all whitespace runs made one space; otherwise its lines are stripped and joined with
    a space. The two differ only in runs inside a line, which no marker test can tell apart
    when the runs are spaces (every marker pattern ends by taking all the whitespace after it).
    """
    if chunk[0].isspace():
        first = next(r for r in chunk.split("\n") if r and not r.isspace())
        indent = len(first) - len(first.lstrip(" "))
    else:
        indent = 0
    if plain:
        simple = "\n" not in chunk and "  " not in chunk and chunk[-1] != " " and not indent
        raw = chunk if simple else " ".join(chunk.split())
    elif "\n" in chunk:
        raw = " ".join([r.strip() for r in chunk.split("\n") if r and not r.isspace()])
    else:
        raw = chunk.strip()
    start = raw[0]
    if start in "*|+" or raw.startswith("- "):  # tables rendered as bullet lists, rules
        text = _clean(raw, plain)
        return (indent, "other", "", text, text)
    # Markers are matched on the raw line: pandoc escapes "30\. September" so it is no marker.
    m, kind = None, ""
    if start == "(":
        if not indent:  # "(1)" inside a list is an enumeration, not an Absatz
            m, kind = _ABS.match(raw), "abs"
    elif start in _DIGITS:
        m, kind = _NR.match(raw), "nr"
        if m and _is_date_start(raw, m):
            m = None
    elif start in _LOWER:
        m = _LIT.match(raw)
        kind = _LIT_LEVELS[len(m[1])] if m else ""
    if m:
        body = _clean(raw[m.end() :], plain)
        return (indent, kind, m[1], f"{m[0].strip()} {body}".rstrip(), body)
    text = _clean(raw, plain)
    return (indent, "text", "", text, text)


def _is_date_start(raw: str, m: re.Match[str]) -> bool:
    """``1. Januar 2002`` opening a block is a date, not Nummer 1."""
    word = raw[m.end() :].split(" ", 1)[0]
    return word in _months()


def _clean(text: str, normalised: bool = False) -> str:
    """Footnote marks, images, escapes and bold removed, whitespace runs made one space.

    ``normalised``: ``text`` has no whitespace runs, no leading or trailing space already.
    """
    changed = not normalised
    if "[" in text:
        text, changed = _IMAGE.sub("", _FOOTNOTE_REF.sub("", text)), True
    if "\\" in text:
        text, changed = _ESCAPE.sub(r"\1", text), True
    if "**" in text:
        text, changed = text.replace("**", ""), True
    return " ".join(text.split()) if changed else text


# ---------------------------------------------------------------------------
# sentences

_BOUNDARY = re.compile(r"[.!?][\"“”'»)]*\s+(?=[A-ZÄÖÜ§„\"])")
_CITE_WORDS = {
    "Absatz", "Absätze", "Abs.", "Satz", "Sätze", "S.", "Nummer", "Nummern", "Nr.", "Nrn.", "§", "§§",
    "Artikel", "Art.", "Anlage", "Anhang", "Buchstabe", "Buchst.", "Halbsatz", "Seite", "Kapitel",
    "Teil", "Abschnitt", "Ziffer", "Ziff.", "Tabelle", "Spalte", "Zeile", "und", "oder", "bis",
}  # fmt: skip


_LETTER_CITES = {"Buchstabe", "Buchst.", "Doppelbuchstabe", "lit.", "Buchstaben"}


@lru_cache(maxsize=1)
def _abbreviations() -> frozenset[str]:
    return _word_list("abbreviations.txt")


@lru_cache(maxsize=1)
def _months() -> frozenset[str]:
    return _word_list("months.txt")


def _word_list(name: str) -> frozenset[str]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return frozenset(s.strip() for s in lines if s.strip() and not s.startswith("#"))


def split_sentences(text: str) -> list[str]:
    """German sentences of ``text``; abbreviations, ordinals and dates do not end a sentence."""
    out, start = [], 0
    for m in _BOUNDARY.finditer(text):
        if _ends_sentence(text, m.start(), m.end()):
            out.append(text[start : m.end()].strip())
            start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _ends_sentence(text: str, dot: int, nxt: int) -> bool:
    if text[dot] != ".":
        return True
    before = text[max(0, dot - 40) : dot].split()
    if not before:
        return False
    word = before[-1]
    if text[dot + 1 : dot + 2] in (")", '"', "“", "”"):  # "(... S. 1)." and quotes close a sentence
        return True
    word = word.lstrip('(„"[')
    if word[:1].isdigit():
        return _number_ends_sentence(text, word, before, nxt)
    if len(word) == 1 and len(before) > 1 and before[-2] in _LETTER_CITES:  # "… Buchstabe a. Der …"
        return True
    # "z.B", "u.a" (written without a space) are abbreviations like "Abs" and single letters
    return not (word in _abbreviations() or (len(word) == 1 and word.isalpha()) or "." in word)


def _number_ends_sentence(text: str, word: str, before: list[str], nxt: int) -> bool:
    """After ``<number>.``: an ordinal (``18. Lebensjahr``, ``1. Januar``) or a citation's end."""
    following = text[nxt : nxt + 20].split(" ", 1)[0]
    if following in _months():
        return False
    if not (word.isdigit() and len(word) <= 3):  # a year, "2016/679", "1,5": not an ordinal
        return True
    return len(before) > 1 and before[-2] in _CITE_WORDS


# ---------------------------------------------------------------------------
# the tree below an article


@dataclass
class _Node:
    """A unit under construction.

    ``texts`` are the printed blocks it spans (its text); ``pieces`` are, for a container (article
    or Absatz), its own text and its top-level lists in order: ``("text", body)``,
    ``("list", [items])`` or ``("other", text)`` (tables: not sentence-split).
    """

    level: str
    label: str
    indent: int = -1
    texts: list[str] = field(default_factory=list)
    items: list[_Node] = field(default_factory=list)
    pieces: list[tuple[str, object]] = field(default_factory=list)


def _tree(blocks: list[_Block]) -> _Node:
    """Nest blocks by marker and indentation: article > Absatz > items (nr/lit/...)."""
    root = _Node("article", "")
    container = root
    stack: list[_Node] = []  # open items, outermost first
    for indent, kind, label, text, body in blocks:
        root.texts.append(text)
        if kind == "abs" and indent == 0:
            container = _Node("abs", label, texts=[text], pieces=[("text", body)])
            root.items.append(container)
            stack = []
            continue
        if container is not root:
            container.texts.append(text)
        while stack and stack[-1].indent >= indent:
            stack.pop()
        for node in stack:
            node.texts.append(text)
        if kind in _ITEM_LEVELS:
            item = _Node(kind, label, indent=indent, texts=[text])
            if stack:
                stack[-1].items.append(item)
            elif container.pieces and container.pieces[-1][0] == "list":
                container.pieces[-1][1].append(item)  # type: ignore[union-attr]
            else:
                container.pieces.append(("list", [item]))
            stack.append(item)
        elif not stack:
            container.pieces.append(("text" if kind == "text" else "other", body))
    return root


_ITEM_LEVELS = {"nr", "lit", "dlit", "tlit"}


def _build(node: _Node, base: str, level: str, label: str, title: str = "") -> Provision:
    """An article as a Provision: Absätze with Sätze, or Sätze directly."""
    absaetze = [n for n in node.items if n.level == "abs"]
    if absaetze:
        children = [_container(a, f"{base}/abs:{a.label}") for a in absaetze]
    else:
        children = _sentences(node, base)
    return Provision(base, level, label, "\n".join(node.texts), title, _unique(children, base))


def _container(node: _Node, pid: str) -> Provision:
    return Provision(pid, node.level, node.label, "\n".join(node.texts), "", _sentences(node, pid))


def _sentences(node: _Node, pid: str) -> list[Provision]:
    """Satz children of a container; lists hang under the Satz that introduces them."""
    sentences: list[list[str | _Node]] = []  # each: its text pieces and items, in order
    loose_items: list[_Node] = []
    for kind, value in node.pieces:
        if kind == "list":
            (sentences[-1] if sentences else loose_items).extend(value)  # type: ignore[arg-type]
        elif kind == "text":
            parts = split_sentences(str(value))
            if parts and sentences and isinstance(sentences[-1][-1], _Node) and parts[0][:1].islower():
                sentences[-1].append(parts.pop(0))  # "Hat der Täter 1. … 2. …, so kann …": one Satz
            sentences.extend([p] for p in parts)
        elif sentences:
            sentences[-1].append(str(value))
    out = [_build_item(it, pid) for it in loose_items]  # type: ignore[arg-type]
    for i, pieces in enumerate(sentences, 1):
        sid = f"{pid}/satz:{i}"
        kids = _unique([_build_item(p, sid) for p in pieces if isinstance(p, _Node)], sid)
        text = "\n".join(p if isinstance(p, str) else "\n".join(p.texts) for p in pieces)
        out.append(Provision(sid, "satz", str(i), text, "", kids))
    return _unique(out, pid)


def _build_item(item: _Node, base: str) -> Provision:
    pid = f"{base}/{item.level}:{item.label}"
    kids = _unique([_build_item(it, pid) for it in item.items], pid)
    return Provision(pid, item.level, item.label, "\n".join(item.texts), "", kids)


# ---------------------------------------------------------------------------
# a law


def parse_law(markdown: str, path: str = "") -> Act:
    """One law's Markdown as an :class:`Act` (id from the jurabk, see :func:`safe_act_id`)."""
    text = markdown.replace("\xa0", " ").replace("\r\n", "\n")
    lines = text.split("\n")
    fields, body_start = _front_matter(lines, path)
    slug = fields.get("slug", "") or Path(path).parent.name
    act_id = safe_act_id(fields.get("jurabk", ""), slug)
    if not act_id:
        raise LawSyntaxError(ParseError(path, 1, "no jurabk and no slug"))
    start, heading_title = _body_start(lines, body_start)
    title = " ".join(p for p in (fields.get("_prefix", ""), fields.get("Title", "")) if p) or heading_title
    offset = sum(map(len, lines[:start])) + start if start < len(lines) else len(text) + 1
    units, loose, roots = _collect_units(text, offset, start + 1)
    if not any(u.kind in ("para", "art") for u in units):
        units.insert(0, _Unit("body", ["body"], "", 0, start + 1, parts=loose))
        roots = []  # a notice's headings are its text, not a structure of articles
    articles = []
    ids: dict[int, list[str]] = {}
    for unit, labels in zip(units, _final_labels(units), strict=True):
        made = _articles(act_id, unit, labels)
        ids[id(unit)] = [a.id for a in made]
        articles.extend(made)
    return Act(act_id, title, "de", articles, _divisions(act_id, roots, ids) if roots else [])


def _body_start(lines: list[str], i: int) -> tuple[int, str]:
    """Skip the ``# Title`` line and the metadata list; return the first section line."""
    title = ""
    for j in range(i, len(lines)):
        if lines[j].startswith("# "):
            title = re.sub(r"\s*\([^()]*\)$", "", lines[j][2:].strip())
        elif lines[j].startswith("##"):
            return j, title
    return len(lines), title


def _articles(act_id: str, unit: _Unit, labels: list[str]) -> list[Provision]:
    blocks = _blocks("\n".join(unit.parts))  # once: a range heading shares them among its stubs
    if unit.kind == "anlage":
        text = "\n".join([b[3] for b in blocks])
        return [Provision(path_id(act_id, label), "anlage", label, text, unit.title) for label in labels]
    if len(blocks) == 1 and blocks[0][3] in ("-", "–"):
        blocks = []  # the converter's placeholder body of a stub
    return [_build(_tree(blocks), path_id(act_id, label), unit.kind, label, unit.title) for label in labels]


# ---------------------------------------------------------------------------
# the corpus


def iter_laws(tar_path: str | Path, limit: int | None = None) -> Iterator[Act | ParseError]:
    """Acts of ``gesetze_markdown_all.tar.gz`` in archive order, streamed, in this process.

    A law that fails is yielded as a :class:`ParseError` (never dropped). Act ids are unique over
    the run: a repeated id gets ``~<slug>``. ``limit`` stops after that many laws. For the whole
    corpus :func:`parse_archive` is faster (parallel, cached).
    """
    for _, result in iter_law_files(tar_path, limit):
        yield result


def iter_law_files(tar_path: str | Path, limit: int | None = None) -> Iterator[tuple[str, Act | ParseError]]:
    """Like :func:`iter_laws`, with each law's path in the archive (``b/bgb/index.md``)."""
    seen: set[str] = set()
    for name, data in _law_members(tar_path, limit):
        result = _parse_member(name, data)
        if isinstance(result, Act):
            _claim_id(result, name, seen)
        yield name, result


def read_law_files(tar_path: str | Path, paths: Iterable[str]) -> dict[str, str]:
    """The Markdown of a few laws (``b/bgb/index.md``, ...), stopping once all are read."""
    wanted = set(paths)
    out: dict[str, str] = {}
    with tarfile.open(tar_path, "r:gz") as tar:
        for member in tar:
            name = member.name.removeprefix("./")
            if name in wanted and (handle := tar.extractfile(member)) is not None:
                out[name] = handle.read().decode("utf-8")
                if len(out) == len(wanted):
                    break
    return out


def law_texts(tar_path: str | Path) -> Iterator[tuple[str, str]]:
    """(path, Markdown) of every law of the archive, in archive order, unparsed (for tools that
    read the front matter or scan the text, such as the citation tables' builders)."""
    for name, data in _law_members(tar_path, None):
        if data is not None:
            yield name, data.decode("utf-8", errors="ignore")


def _law_members(tar_path: str | Path, limit: int | None) -> Iterator[tuple[str, bytes | None]]:
    """(path, bytes) of every ``index.md`` in archive order; None for an unreadable member."""
    count = 0
    with tarfile.open(tar_path, "r:gz") as tar:
        for member in tar:
            if not (member.isfile() and member.name.endswith("/index.md")):
                continue
            handle = tar.extractfile(member)
            yield member.name.removeprefix("./"), handle.read() if handle is not None else None
            count += 1
            if limit is not None and count >= limit:
                return


def _parse_member(name: str, data: bytes | None) -> Act | ParseError:
    return parse_member(name, data, parse_law)


def _claim_id(act: Act, name: str, seen: set[str]) -> None:
    """Keep act ids unique over a corpus: a repeated id becomes ``<id>~<slug>``."""
    if act.id in seen:
        _rename(act, f"{act.id}~{Path(name).parent.name}")
    seen.add(act.id)


def _rename(act: Act, new_id: str) -> None:
    cut = len(act.id)
    for unit in act.units():
        unit.id = new_id + unit.id[cut:]
    for division in act.walk_divisions():
        division.id = new_id + division.id[cut:]
        division.articles = [new_id + a[cut:] for a in division.articles]
    act.id = new_id


# ---------------------------------------------------------------------------
# the whole corpus: parallel, cached

CACHE_FORMAT = 2  # 2: acts carry their divisions (Buch, Abschnitt, ...)
_PARSER_FILES = (Path(__file__), Path(__file__).parents[2] / "structure" / "packed.py",
                 Path(__file__).parents[2] / "structure" / "parsing.py",
                 Path(__file__).parent / "data" / "abbreviations.txt", Path(__file__).parent / "data" / "months.txt")
_BATCH_BYTES = 1 << 20  # laws are sent to the workers in batches of about this much Markdown

# One law as it travels and is cached: its path and its packed act (or why it failed).
_PackedLaw = tuple[str, "Packed | ParseError"]


def parse_archive(
    tar_path: str | Path, limit: int | None = None, workers: int | None = None, cache: bool = True,
) -> list[tuple[str, Act | ParseError]]:
    """Every law of the archive as ``(path, Act or ParseError)``, in archive order.

    The same result as ``list(iter_law_files(tar_path, limit))``, faster: laws are parsed in
    ``workers`` processes (default: one per available CPU; ``1``: in this process), and the
    whole archive's result is cached under ``cache_dir()/parsed``, keyed by the archive's
    sha256 and the parser's own source, so a second load reads it back instead of parsing.
    ``cache=False`` neither reads nor writes the cache; ``limit`` is never cached.
    """
    with gc_paused():
        return list(iter_archive(tar_path, limit, workers, cache))


def iter_archive(
    tar_path: str | Path, limit: int | None = None, workers: int | None = None, cache: bool = True,
) -> Iterator[tuple[str, Act | ParseError]]:
    """:func:`parse_archive`'s laws one at a time, each unpacked when it is reached, so a reader
    that drops each law never holds them all (a build's stream of German federal law). The cache
    is read whole (its packed laws: about 150 MB for all of them, far less than the laws
    unpacked), and each packed law is dropped once unpacked. A parse without a cache writes it
    once the last law is reached."""
    tar_path = Path(tar_path)
    folder = _cache_folder(tar_path) if cache and limit is None else None
    cached = _read_cache(folder) if folder is not None else None
    packed: list[_PackedLaw] = []
    seen: set[str] = set()
    # Laws are unpacked as the workers' batches arrive, while later batches are parsed.
    for name, item in _drained(cached) if cached is not None else _parse_packed(tar_path, limit, workers):
        if cached is None and folder is not None:  # kept for the cache
            packed.append((name, item))
        if isinstance(item, ParseError):
            yield name, item
            continue
        with gc_paused():
            act = unpack_act(item)
        _claim_id(act, name, seen)
        yield name, act
    if cached is None and folder is not None:
        _write_cache(folder, packed)


def _drained(items: list[_PackedLaw]) -> Iterator[_PackedLaw]:
    """The items of a list in order, each removed from it as it is handed out."""
    items.reverse()
    while items:
        yield items.pop()


def _parse_packed(tar_path: Path, limit: int | None, workers: int | None) -> Iterator[_PackedLaw]:
    """Every law of the archive, parsed and packed, in archive order, as the batches finish."""
    workers = workers if workers is not None else available_cpus()
    batches = _batches(_law_members(tar_path, limit))
    if workers <= 1:
        for batch in batches:
            yield from _parse_batch(batch)
        return
    with ProcessPoolExecutor(workers, mp_context=_process_context()) as pool:
        for done in pool.map(_parse_batch, batches):
            yield from done


def _process_context() -> multiprocessing.context.BaseContext:
    """fork where it is safe (this process has one thread): no interpreter start, no re-import of
    the caller's script (which spawn needs guarded by ``if __name__ == "__main__"``); spawn when
    other threads run (a server), which a forked child would not have."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _batches(members: Iterable[tuple[str, bytes | None]]) -> Iterator[list[tuple[str, bytes | None]]]:
    batch: list[tuple[str, bytes | None]] = []
    size = 0
    for name, data in members:
        batch.append((name, data))
        size += len(data or b"")
        if size >= _BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _parse_batch(batch: list[tuple[str, bytes | None]]) -> list[_PackedLaw]:
    """Parse and pack a batch of laws (in a worker process): packed acts travel fast."""
    out: list[_PackedLaw] = []
    with gc_paused():  # a law's tree is acyclic: the cycle collector only costs time here
        for name, data in batch:
            result = _parse_member(name, data)
            out.append((name, result if isinstance(result, ParseError) else pack_act(result)))
    return out


def _cache_folder(tar_path: Path) -> Path:
    return cache_dir() / "parsed" / f"de-laws-{file_sha256(tar_path)[:20]}-{_parser_digest()[:12]}"


@lru_cache(maxsize=1)
def _parser_digest() -> str:
    """A digest of the parser's source and word lists: a changed parser never reads an old cache."""
    digest = hashlib.sha256(f"{CACHE_FORMAT}:{PACK_FORMAT}".encode())
    for path in _PARSER_FILES:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _read_cache(folder: Path) -> list[_PackedLaw] | None:
    """The cached laws, or None when there are none (or they are unreadable: parse again)."""
    try:
        read_marker(folder / "meta.json", "parsed-law cache", CACHE_FORMAT)
        with (folder / "laws.pickle").open("rb") as f, gc_paused():
            return pickle.load(f)
    except (OSError, ValueError, EOFError, pickle.UnpicklingError, ImportError, AttributeError):
        return None


def _write_cache(folder: Path, packed: list[_PackedLaw]) -> None:
    """Written to a side file renamed into place, then the marker: a half-written cache is never
    read. Caches of the same archive by an older parser are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, prefix="laws.", suffix=".part", delete=False) as f:
        pickle.dump(packed, f, protocol=pickle.HIGHEST_PROTOCOL)
    Path(f.name).replace(folder / "laws.pickle")
    errors = sum(isinstance(item, ParseError) for _, item in packed)
    write_marker(folder / "meta.json", {"format": CACHE_FORMAT, "laws": len(packed) - errors, "errors": errors,
                                        "parser": _parser_digest()})
    stem = folder.name.rsplit("-", 1)[0]
    for old in folder.parent.glob(f"{stem}-*"):
        if old != folder and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)


def law_stats(acts: Iterable[Act | ParseError]) -> dict[str, object]:
    """Counts over parsed laws: acts, errors, articles by kind, range stubs, units per level."""
    stats: Counter[str] = Counter()
    levels: Counter[str] = Counter()
    for act in acts:
        if isinstance(act, ParseError):
            stats["parse_errors"] += 1
            continue
        stats["acts"] += 1
        for article in act.articles:
            stats[f"articles_{article.level}"] += 1
            stats["range_stubs"] += is_range_stub(article)
        levels.update(unit.level for unit in act.units())
    return {
        "acts": stats["acts"],
        "parse_errors": stats["parse_errors"],
        "paragraphs": stats["articles_para"],  # § units
        "articles": stats["articles_art"],  # Art units
        "annexes": stats["articles_anlage"],
        "body_only": stats["articles_body"],
        "range_stubs": stats["range_stubs"],
        "units_per_level": dict(sorted(levels.items())),
    }
