"""Austrian federal statutes (RIS, as LawAT Markdown) parsed into :class:`~lexir.types.Act` trees.

Input: ``laws.tar.xz`` with one ``laws/BG.<Kurztitel>.md`` per law: a header block
(``**Kurztitel:**``, ``**Langtitel:**``, ...), a table of contents (``## Inhaltsverzeichnis`` and
a bulleted list), then the law: division headings (``## I. Hauptstück``, ``## Miete``) and unit
headings ``### § 1295 ABGB — Überschrift`` whose text follows as Markdown quotes
(`` > `(1)` `` Absätze, `` >> `1.` `` Ziffern, `` >>> `a)` `` litterae, backslash escapes).

Design decisions:

Act ids
    ``AT-<Kurztitel>`` (:data:`SOURCE_PREFIX`, :func:`act_id`): Austria's StGB and ZPO share their
    abbreviations with German acts (``StGB::242``), so every Austrian source carries the prefix.
    A header listing several Kurztitel (``VerG, VerG_2002``) gives the first.

Unit headings
    Recognised by their text, never by their Markdown level: ``§ <n> <Kurztitel>`` (level
    ``para``), ``Art. <n> <Kurztitel>`` (level ``art``), ``Art. <n> § <m> <Kurztitel>`` (a § inside
    an Artikel, level ``para``) and ``Anl. <n> <Kurztitel>`` (level ``anlage``), each optionally
    followed by `` — <title>``. Labels are the number as printed (``1295``, ``27b``, ``373i1``).
    WechselG and EGVG have no § at all: their units are ``Art.`` headings.
    Labels are unique within a law:

    * a § inside an Artikel keeps its own number (``Art. 2 § 4 DSG`` -> ``AT-DSG::4``, as the DSG
      is cited) unless a number of that Artikel's §§ also occurs elsewhere in the law; then the
      group is qualified as German does (``Art. 3 § 2 MRG`` -> ``AT-MRG::3§2``);
    * an ``Art.`` whose number is also a § of the same law (the transitional articles of amending
      acts printed after the §§: ``Art. 2 MRG``) is labelled ``Art2``;
    * annexes are labelled ``Anlage 1`` (German parser's convention);
    * any label still repeated gets ``~2``, ``~3`` (``Art. 2 MRG`` is printed twice).

    A heading ``§ <Kurztitel>`` / ``Art. — …`` without a number is a :class:`ParseError`.
    GOG line 1232 has a stray division-level heading ``## §. 62`` right before ``### § 62 GOG``:
    division-level headings starting with ``§`` are ignored (not a unit, not a division).

Tree below a unit
    Absatz ``(1)`` -> ``abs``, Ziffer ``1.`` -> ``z`` (Austrian "Z"), litera ``a)`` / ``a.`` ->
    ``lit``, double litera ``aa)`` -> ``sublit``. Nesting follows the marker's rank (abs > z > lit >
    sublit), not the quote depth, so a Ziffer without Absätze hangs under the § itself
    (``AT-MRG::15a/abs:3/z:1``, ``AT-X::5/z:2``). Unmarked quote lines continue the unit open at
    that quote depth or above (the closing words after a list go back to its Absatz). A unit's
    text is its own text with its children's, markers kept as printed (``(1) …``), Markdown
    escapes and HTML tags removed; RIS link footers and ``----`` rules are dropped. Repeated
    sibling labels get ``~2`` (German parser's ``_unique``). Annexes keep their text, unsplit.
    Headings deeper than a unit's heading (StVO's traffic signs, AktG's forms) are text of the unit.

Divisions (:class:`~lexir.types.Division`)
    All division headings are ``##``, so nesting comes from the keyword's rank: Artikel / Anlage
    (0) > Teil (1) > Hauptstück (2) > Abschnitt (3) > Unterabschnitt (4) > Titel (5) > Untertitel
    (6) > Abteilung (7) > Unterabteilung (8); a heading closes the open divisions of its rank or
    deeper. Level is the keyword in lower case (``theil`` -> ``teil``), label the number with
    ordinals and roman numerals as printed turned into arabic only for ordinal words
    (``Erster Abschnitt`` -> ``abschnitt:1``, ``I. Hauptstück`` -> ``hauptstück:I``,
    ``1a. Abschnitt`` -> ``abschnitt:1a``). Unnumbered headings right after a division heading
    (before any unit) are its title (``## I. Hauptstück`` + ``## Miete``); other unnumbered headings
    open a ``gliederung`` division (label: its first six words joined by ``_``), closed by the next
    heading; a heading numbered without a keyword (``I. Aus dem Charakter der Persönlichkeit.``) is
    ``gliederung:I``, closed by the next numbered one.
    Divisions without a unit below them are dropped. Ids ``AT-ABGB::teil:1/hauptstück:2``.

Errors
    :func:`parse_law` raises :class:`~lexir.structure.parsing.LawSyntaxError` (shared with the
    German parser); :func:`load_austrian_laws` collects the :class:`ParseError` (member, line,
    message) and goes on with the other laws.
"""

from __future__ import annotations

import re
import tarfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lexir.jurisdictions.at import AUSTRIA
from lexir.structure.parsing import LawSyntaxError, ParseError
from lexir.structure.parsing import unique_labels as _unique
from lexir.types import Act, Division, Provision, path_id

SOURCE_PREFIX = AUSTRIA.id_prefix  # "AT-": written once, in the record
"""Every Austrian source id is ``AT-<Kurztitel>``: ``AT-ABGB::1295``, never ``ABGB::1295``."""

LANGUAGE = "de"

__all__ = [
    "SOURCE_PREFIX",
    "ParseError",
    "LawSyntaxError",
    "act_id",
    "parse_law",
    "load_austrian_laws",
    "act_table_rows",
    "write_act_table",
]


def act_id(kurztitel: str) -> str:
    """The lexir source id of an Austrian act: ``act_id("ABGB") == "AT-ABGB"``."""
    return SOURCE_PREFIX + kurztitel.strip()


# ---------------------------------------------------------------------------
# header

_HEADER_FIELD = re.compile(r"^\*\*(?P<key>[^*]+?):\*\*\s*(?P<value>.*?)\s*$")
_TITLE_LINE = re.compile(r"^#\s+BG\.\S+\s+—\s+(?P<name>.*?)\s*$")


@dataclass
class _Header:
    kurztitel: list[str]
    langtitel: str
    name: str  # the short name of the title line: "Mietrechtsgesetz (MRG)"
    version: str


def _header(lines: list[str], path: str) -> _Header:
    fields: dict[str, str] = {}
    name = ""
    for line in lines[:40]:
        if line.startswith("## "):
            break
        m = _HEADER_FIELD.match(line)
        if m:
            fields[m["key"].strip()] = m["value"]
        t = _TITLE_LINE.match(line)
        if t:
            name = t["name"]
    kurz = [k.strip() for k in fields.get("Kurztitel", "").split(",") if k.strip()]
    if not kurz:
        raise LawSyntaxError(ParseError(path, 1, "no **Kurztitel:** in the header block"))
    return _Header(kurz, fields.get("Langtitel", ""), name,
                   fields.get("Gesamte Rechtsvorschrift in der Fassung vom", ""))


# ---------------------------------------------------------------------------
# headings

_HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>.*?)\s*$")
_UNIT_WORD = re.compile(r"^(?P<kind>§|Art\.|Anl\.)(?=\s|$)")
_LABEL = r"(?:\d+[a-z]*\d*|[IVXLC]+|[A-Z])"
_UNIT = re.compile(
    rf"^(?P<kind>§|Art\.|Anl\.)\s+(?P<num>{_LABEL})(?:\s+§\s+(?P<sub>{_LABEL}))?\s+(?P<abbr>[^\s—]+)"
    r"(?:\s+—\s+(?P<title>.*))?$"
)


@dataclass
class _Unit:
    kind: str  # para | art | anlage
    number: str  # as printed in the heading
    context: str  # the Artikel of "Art. 3 § 2": "3"; "" otherwise
    title: str
    depth: int  # number of #
    line: int  # 1-based
    lines: list[tuple[int, str]] = field(default_factory=list)
    division: _Div | None = None
    label: str = ""


@dataclass
class _Div:
    level: str
    label: str
    heading: str
    rank: int
    line: int
    title: str = ""
    parent: _Div | None = None
    children: list[_Div] = field(default_factory=list)
    units: list[_Unit] = field(default_factory=list)
    titled: bool = False  # stops taking title lines once a unit or a numbered heading followed


# ---------------------------------------------------------------------------
# divisions

_DIVISION_RANK = {
    "artikel": 0, "anlage": 0, "teil": 1, "theil": 1, "hauptstück": 2, "abschnitt": 3,
    "unterabschnitt": 4, "titel": 5, "untertitel": 6, "abteilung": 7, "unterabteilung": 8,
}
_ORDINALS = {
    "erst": 1, "zweit": 2, "zweyt": 2, "dritt": 3, "viert": 4, "fünft": 5, "sechst": 6, "siebent": 7,
    "sieben": 7, "acht": 8, "neunt": 9, "zehnt": 10, "elft": 11, "zwölft": 12, "dreizehnt": 13,
    "vierzehnt": 14, "fünfzehnt": 15, "sechzehnt": 16, "siebzehnt": 17, "achtzehnt": 18,
    "neunzehnt": 19, "zwanzigst": 20,
}
_KEYWORDS = "|".join(sorted(_DIVISION_RANK, key=len, reverse=True))
_NUM = r"(?:\d+\s?[a-z]?|[IVXLC]+[a-z]?)"
# "1. Abschnitt", "I. Hauptstück", "1a. Abschnitt", "Erster Theil.", "ABSCHNITT II.", "Artikel V",
# "Anlage 1:", "Anlage" -- then the rest of the line is the title ("Anlage 3 (§ 2 Abs. 16)")
_DIV_NUM_FIRST = re.compile(rf"^(?P<num>{_NUM})\.?\s+(?P<kw>{_KEYWORDS})\b\.?\s*(?P<rest>.*)$", re.IGNORECASE)
_DIV_ORD_FIRST = re.compile(rf"^(?P<ord>[A-Za-zÄÖÜäöü]+?)(?:e|er|es|en)\s+(?P<kw>{_KEYWORDS})\b\.?\s*(?P<rest>.*)$",
                            re.IGNORECASE)
_DIV_KW_FIRST = re.compile(rf"^(?P<kw>{_KEYWORDS})\b(?:\s+(?P<num>{_NUM})(?![\w]))?\.?:?\s*(?P<rest>.*)$",
                           re.IGNORECASE)


def _division_heading(text: str) -> tuple[str, str, str] | None:
    """(level, label, title) of a numbered division heading, None for any other heading."""
    m = _DIV_NUM_FIRST.match(text)
    if m:
        return _level(m["kw"]), m["num"].replace(" ", ""), m["rest"].strip(" .:")
    m = _DIV_ORD_FIRST.match(text)
    if m and m["ord"].lower() in _ORDINALS:
        return _level(m["kw"]), str(_ORDINALS[m["ord"].lower()]), m["rest"].strip(" .:")
    m = _DIV_KW_FIRST.match(text)
    if m and (m["num"] or not m["rest"] or m["kw"].lower() == "anlage"):
        return _level(m["kw"]), (m["num"] or "").replace(" ", ""), m["rest"].strip(" .:")
    return None


def _level(keyword: str) -> str:
    word = keyword.lower()
    return "teil" if word == "theil" else word


# ---------------------------------------------------------------------------
# text below a unit

_MARKER = re.compile(r"^`(?P<m>[^`]*)`\s*")
_RANK = {"abs": 1, "z": 2, "lit": 3, "sublit": 4}
_ESCAPE = re.compile(r"\\(.)")
_TAG = re.compile(r"<[^>]+>")
_FOOTER = re.compile(r"^\\\[\s*\[🔗|^-{3,}\s*$")


def _marker(token: str) -> tuple[str, str] | None:
    """(level, label) of a list marker as printed in backticks: ``(1)``, ``1.``, ``a)``, ``aa)``."""
    token = token.strip()
    if m := re.fullmatch(r"\((\d+[a-z]?)\)", token):
        return "abs", m[1]
    if m := re.fullmatch(r"(\d+[a-z]?)\.", token):
        return "z", m[1]
    if m := re.fullmatch(r"([a-z])[).]", token):
        return "lit", m[1]
    if m := re.fullmatch(r"([a-z])\1\)", token):
        return "sublit", m[1] * 2
    return None


def _clean(text: str) -> str:
    text = _TAG.sub(" ", text) if "<" in text else text
    text = _ESCAPE.sub(r"\1", text) if "\\" in text else text
    return " ".join(text.replace("**", "").split())


@dataclass
class _Node:
    level: str
    label: str
    depth: int  # quote depth of its marker line
    texts: list[str] = field(default_factory=list)
    children: list[_Node] = field(default_factory=list)


def _tree(unit: _Unit) -> _Node:
    """The unit's blocks as a tree of Absätze, Ziffern and litterae (see the module docstring)."""
    root = _Node("article", "", 0)
    stack: list[_Node] = []
    for _, raw in unit.lines:
        line = raw.rstrip()
        if not line.strip() or _FOOTER.match(line):
            continue
        depth = len(line) - len(line.lstrip(">"))
        body = line[depth:].strip()
        found = None
        if (m := _MARKER.match(body)) is not None and (found := _marker(m["m"])) is not None:
            level, label = found
            body = f"{m['m'].strip()} {body[m.end():]}"
            while stack and _RANK[stack[-1].level] >= _RANK[level]:
                stack.pop()
            node = _Node(level, label, depth)
            (stack[-1] if stack else root).children.append(node)
            stack.append(node)
        else:
            if m is not None:  # `–`, `undefined`: no unit marker, printed as is
                body = f"{m['m'].strip()} {body[m.end():]}"
            while stack and stack[-1].depth > depth:
                stack.pop()
        text = _clean(body)
        if not text:
            continue
        root.texts.append(text)
        for node in stack:
            node.texts.append(text)
    return root


def _build(node: _Node, base: str) -> list[Provision]:
    out = []
    for child in node.children:
        pid = f"{base}/{child.level}:{child.label}"
        out.append(Provision(pid, child.level, child.label, "\n".join(child.texts), "", _build(child, pid)))
    return _unique(out, base)


# ---------------------------------------------------------------------------
# a law


def parse_law(markdown: str, path: str = "") -> Act:
    """One law's Markdown as an :class:`Act` with id ``AT-<Kurztitel>``.

    Raises :class:`LawSyntaxError` (file, line, message) for a header without Kurztitel, a unit
    heading without a number, or a law with no §, Art. or Anl. heading at all.
    """
    lines = markdown.replace("\xa0", " ").replace("\r\n", "\n").split("\n")
    header = _header(lines, path)
    source = act_id(header.kurztitel[0])
    units: list[_Unit] = []
    roots: list[_Div] = []
    stack: list[_Div] = []
    current: _Unit | None = None
    for number, line in enumerate(lines, 1):
        h = _HEADING.match(line)
        if h is None or len(h["hashes"]) == 1:
            if current is not None:
                current.lines.append((number, line))
            continue
        depth, text = len(h["hashes"]), h["text"]
        if current is not None and depth > current.depth:
            current.lines.append((number, text))  # a sub-heading inside the unit: its text
            continue
        if text.startswith("Inhaltsverzeichnis"):
            current = None
            continue
        if _UNIT_WORD.match(text):
            m = _UNIT.match(text)
            if m is None:
                raise LawSyntaxError(ParseError(path, number, f"unit heading without a number: {line.strip()!r}"))
            kind = {"§": "para", "Art.": "art", "Anl.": "anlage"}[m["kind"]]
            if m["sub"]:
                kind = "para"
            title = (m["title"] or "").strip()
            current = _Unit(kind, m["sub"] or m["num"], m["num"] if m["sub"] else "", title, depth, number,
                            division=stack[-1] if stack else None)
            units.append(current)
            if stack:
                stack[-1].units.append(current)
                for d in stack:
                    d.titled = True
            continue
        current = None
        if text.startswith("§"):  # "## §. 62" (GOG): an old-style marker printed above "### § 62 GOG"
            continue
        _division(text, number, roots, stack)
    if not units:
        raise LawSyntaxError(ParseError(path, len(lines), "no § , Art. or Anl. heading in the law"))
    _label(units)
    articles = []
    for unit in units:
        aid = path_id(source, unit.label)
        if unit.kind == "anlage":
            text = "\n".join(t for _, raw in unit.lines if raw.strip() and not _FOOTER.match(raw)
                             and (t := _clean(raw.lstrip("> "))))
            articles.append(Provision(aid, "anlage", unit.label, text, unit.title))
            continue
        tree = _tree(unit)
        articles.append(Provision(aid, unit.kind, unit.label, "\n".join(tree.texts), unit.title, _build(tree, aid)))
    return Act(source, header.langtitel or header.name, LANGUAGE, articles, _divisions(source, roots))


_NUMBERED = re.compile(r"^(?P<num>[IVXLC]+[a-z]?|[A-Z]|\d+[a-z]?)\.\s+(?P<rest>.*)$")


def _division(text: str, line: int, roots: list[_Div], stack: list[_Div]) -> None:
    """Open a division for a heading, or take the heading as the title of the one just opened."""
    found = _division_heading(text)
    numbered = _NUMBERED.match(text) if found is None else None
    if numbered:  # "I. Aus dem Charakter der Persönlichkeit.": a numbered heading without a keyword
        while stack and stack[-1].rank >= 98:
            stack.pop()
        div = _Div("gliederung", numbered["num"], _clean(text), 98, line, title=_clean(numbered["rest"]),
                   parent=stack[-1] if stack else None, titled=bool(numbered["rest"].strip()))
    elif found is None:
        words = _clean(text)
        top = stack[-1] if stack else None
        if top is not None and not top.titled:
            top.title = f"{top.title} {words}".strip()
            return
        while stack and stack[-1].level == "gliederung":
            stack.pop()
        label = "_".join(re.findall(r"[\wÄÖÜäöüß]+", words)[:6]) or "gliederung"
        div = _Div("gliederung", label, words, 99, line, title="", parent=stack[-1] if stack else None)
    else:
        level, label, title = found
        rank = _DIVISION_RANK[level]
        while stack and stack[-1].rank >= rank:
            stack.pop()
        for d in stack:
            d.titled = True
        div = _Div(level, label, _clean(text), rank, line, title=_clean(title),
                   parent=stack[-1] if stack else None)
    (div.parent.children if div.parent else roots).append(div)
    stack.append(div)


def _label(units: list[_Unit]) -> None:
    """Final labels, unique within the law (see the module docstring)."""
    paras = Counter(u.number for u in units if u.kind == "para")
    groups: dict[str, list[_Unit]] = {}
    for u in units:
        if u.context:
            groups.setdefault(u.context, []).append(u)
    qualified = {ctx for ctx, members in groups.items() if any(paras[u.number] > 1 for u in members)}
    taken: Counter[str] = Counter()
    for u in units:
        if u.kind == "anlage":
            label = f"Anlage {u.number}"
        elif u.kind == "art":
            label = f"Art{u.number}" if u.number in paras else u.number
        elif u.context in qualified:
            label = f"{u.context}§{u.number}"
        else:
            label = u.number
        taken[label] += 1
        u.label = label if taken[label] == 1 else f"{label}~{taken[label]}"


def _divisions(source: str, roots: list[_Div]) -> list[Division]:
    def build(div: _Div, base: str | None) -> Division | None:
        step = f"{div.level}:{div.label}" if div.label else div.level
        did = f"{source}::{step}" if base is None else f"{base}/{step}"
        kids = [k for k in (build(c, did) for c in div.children) if k is not None]
        arts = [path_id(source, u.label) for u in div.units]
        if not arts and not kids:
            return None
        return Division(did, div.level, div.label, div.title, div.heading, kids, arts)

    out = [d for d in (build(r, None) for r in roots) if d is not None]
    _unique_divisions(out)
    return out


def _unique_divisions(items: list[Division]) -> None:
    """Sibling division ids made unique (``abschnitt:1``, ``abschnitt:1~2``), ids below rewritten."""
    seen: Counter[str] = Counter()
    for d in items:
        seen[d.id] += 1
        if seen[d.id] > 1:
            old, new = d.id, f"{d.id}~{seen[d.id]}"
            for below in d.walk():
                below.id = new + below.id[len(old):]
        _unique_divisions(d.children)


# ---------------------------------------------------------------------------
# the archive


def load_austrian_laws(tar_path: str | Path) -> tuple[list[Act], list[ParseError]]:
    """Every ``laws/BG.*.md`` of the archive as an Act, in archive order, and the laws that failed.

    A law that fails (bad header, a unit heading without a number, no unit heading at all) is
    reported as a :class:`ParseError` naming the member and line; the other laws are kept.
    """
    acts: list[Act] = []
    errors: list[ParseError] = []
    seen: set[str] = set()
    with tarfile.open(tar_path, "r:*") as tar:
        for member in tar:
            name = member.name.removeprefix("./")
            if not (member.isfile() and name.endswith(".md") and Path(name).name.startswith("BG.")):
                continue
            handle = tar.extractfile(member)
            try:
                if handle is None:
                    raise LawSyntaxError(ParseError(name, 0, "unreadable archive member"))
                act = parse_law(handle.read().decode("utf-8"), name)
            except LawSyntaxError as exc:
                errors.append(exc.error)
                continue
            except UnicodeDecodeError as exc:
                errors.append(ParseError(name, 0, f"not UTF-8: {exc}"))
                continue
            if act.id in seen:
                errors.append(ParseError(name, 1, f"act id {act.id!r} already taken by another law"))
                continue
            seen.add(act.id)
            acts.append(act)
    return acts, errors


def timed_load(tar_path: str | Path) -> tuple[list[Act], list[ParseError], float]:
    """:func:`load_austrian_laws` with the seconds it took."""
    t0 = time.perf_counter()
    acts, errors = load_austrian_laws(tar_path)
    return acts, errors, time.perf_counter() - t0


# ---------------------------------------------------------------------------
# the act table (``data/acts.tsv``)

_ABBREV_AFTER_DASH = re.compile(r"[–-]\s+([A-ZÄÖÜ][\wÄÖÜäöüß\-]*(?:\s+\d{4})?)\.?\)?\.?\s*$")
_NAME_IN_PARENS = re.compile(r"\(([^()]*?)\s+[–-]\s+[^()]*\)")


def act_table_rows(markdowns: dict[str, str]) -> list[tuple[str, list[str], list[str]]]:
    """(source, abbreviations, names) per law, from the laws' header blocks (member -> Markdown).

    Abbreviations: every Kurztitel, with ``_`` as a space (``VerG_2002`` -> ``VerG 2002``), and the
    Langtitel's abbreviation after its dash when it adds a year (``– GewO 1994``).
    Names: the Langtitel, the short name of the title line (``Mietrechtsgesetz``) and the name in
    the Langtitel's parenthesis (``(Mietrechtsgesetz – MRG)``), each with the genitive forms a
    citation uses (``des Mietrechtsgesetzes``; :func:`lexir.jurisdictions.de.act_table._genitives`).
    """
    from lexir.jurisdictions.de.act_table import _genitives

    rows = []
    for name, markdown in markdowns.items():
        header = _header(markdown.replace("\xa0", " ").split("\n"), name)
        variants = [k.replace("_", " ") for k in header.kurztitel]
        dash = _ABBREV_AFTER_DASH.search(header.langtitel)
        if dash and dash[1].split()[0] in header.kurztitel:  # "GewO 1994", "BDG 1979"
            variants.append(dash[1])
        abbrevs = list(dict.fromkeys([header.kurztitel[0], *variants]))
        names = [header.langtitel]
        short = re.sub(r"\s*\([^()]*\)\s*$", "", header.name).strip()
        names.append(short)
        m = _NAME_IN_PARENS.search(header.langtitel)
        if m:
            names.append(m[1].strip())
        names = [g for n in names for g in _genitives(n)]
        names = [n for n in dict.fromkeys(names) if n and "|" not in n and "\t" not in n]
        rows.append((act_id(header.kurztitel[0]), abbrevs, names))
    return rows


def write_act_table(tar_path: str | Path, out: str | Path) -> int:
    """Write ``acts.tsv`` (read_act_table format) for the laws of the archive; returns its rows.
    Column ``units``: how each law numbers its articles (``§``, ``Art``, or both), from its parsed
    unit headings: the citation pipeline passes over an act without §§ for a ``§`` reference."""
    markdowns: dict[str, str] = {}
    with tarfile.open(tar_path, "r:*") as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".md") and (h := tar.extractfile(member)):
                markdowns[member.name] = h.read().decode("utf-8")
    rows = act_table_rows(markdowns)
    acts, _ = load_austrian_laws(tar_path)
    keywords = {"para": "§", "art": "Art"}
    units = {a.id: "|".join(dict.fromkeys(keywords[u.level] for u in a.articles if u.level in keywords))
             for a in acts}
    with open(out, "w", encoding="utf-8") as f:
        f.write("# Austrian federal acts (RIS via LawAT, laws.tar.xz): source id AT-<Kurztitel>,\n")
        f.write("# abbreviations (every Kurztitel), names (Langtitel, short title, with their genitives),\n")
        f.write("# units (§ and/or Art: how the law numbers its articles). Generated by\n")
        f.write("# python -m lexir.jurisdictions.at.statutes LAWS_TAR_XZ > data/acts.tsv\n")
        f.write("source\tabbreviations\tnames\tunits\n")
        for source, abbrevs, names in sorted(rows):
            f.write(f"{source}\t{'|'.join(abbrevs)}\t{'|'.join(names)}\t{units.get(source, '')}\n")
    return len(rows)


if __name__ == "__main__":  # python -m lexir.jurisdictions.at.statutes LAWS_TAR_XZ > acts.tsv
    import sys

    write_act_table(sys.argv[1], "/dev/stdout")
