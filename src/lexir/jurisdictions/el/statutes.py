"""Greek statutes (Government Gazette text in JSON) parsed into :class:`~lexir.types.Act` trees.

Input: ``{id, title, short_name, issued_date, url, provisions: [{provision_ref, section, title,
content}]}``, one file per law, text extracted from the gazette PDFs (pdftotext or OCR).

Design decisions:

Act ids
    From ``data/statute_acts.tsv`` (source id, file ids, Greek abbreviations, title): the Penal Code is
    ``PK`` (ΠΚ), laws ``N<number>_<year>`` (ν. 4624/2019 -> ``N4624_2019``), presidential decrees
    ``PD<number>_<year>``. A file missing from the table gets an id built the same way from its
    ``short_name``. Two files of one source id (law-4577-2018-cii and -nis are the same law) are
    loaded once when their provisions are identical; differing ones are an error. An act's title
    is the table's title where it has one (``Ποινικός Κώδικας``), else the file's ``title``.

Levels
    ``article`` (Άρθρο; label as printed, ``69Α``, Latin look-alike letters made Greek) >
    ``par`` (``1.``, ``2.``) > ``item`` (``α)``, ``β)``, ``στ)``, or ``1)``; ``αα)`` nests
    under ``α)``, ``α)`` under ``1)``). Items written inline (``… ως εξής: α) … β) …``) are
    split as well when they run α), β), … in order.

Cleaning
    Gazette page headers (``ΕΦΗΜΕΡΙ∆Α TΗΣ ΚΥΒΕΡΝΗΣΕΩΣ``, the OCR'd ``ΦΕΚ 50 ΕΦΗΜΙΕΡΙΣ ΤΗΣ
    ΚΥΒΕΡΝΗΣΕΩΣ (ΤΕΥΧΟΣ ΠΡΩΤΟ) 693``), bare page numbers, lines in a broken font encoding,
    the promulgation and printing-office tail, chapter headings left at an article's end (all-
    capital lines) and hyphenated line breaks (``-``, and U+2212 which some gazettes use as
    hyphen) are removed. A title repeated as the first content line is dropped from the text.
    Quoted amending text (``«…»``) is never split into units of the amending act.

Articles hidden in others' text
    The source missed some headings: ``Άρθρο 82 Α`` inside article 82 becomes article ``82Α``;
    ``Άρθρα 3 - 4 (Καταργούνται)`` becomes stub articles 3 and 4 whose title is that heading
    (:func:`is_range_stub`), unless the act already has them.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from lexir.structure.text import clean_pdf_text
from lexir.types import Act, Provision

DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class GreekActInfo:
    """A row of ``statute_acts.tsv``."""

    source_id: str
    file_ids: tuple[str, ...]
    abbreviations: tuple[str, ...]
    title: str = ""
    note: str = ""


@lru_cache(maxsize=1)
def greek_acts() -> dict[str, GreekActInfo]:
    """The table of Greek acts, by file id (``law-4624-2019``)."""
    out: dict[str, GreekActInfo] = {}
    with (DATA / "statute_acts.tsv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            info = GreekActInfo(
                row["source_id"],
                tuple(s.strip() for s in row["file_ids"].split(";")),
                tuple(s.strip() for s in row["abbreviations"].split(";") if s.strip()),
                row["title"].strip(),
                row["note"].strip(),
            )
            out.update({file_id: info for file_id in info.file_ids})
    return out


def source_id_for(obj: dict) -> str:
    """The act id of a law file: from the table, else from its ``short_name``."""
    info = greek_acts().get(str(obj.get("id", "")))
    if info:
        return info.source_id
    m = re.match(r"^\s*(Ν|Π\.?\s*Δ)\.?\s*(\d+)\s*/\s*(\d{4})", str(obj.get("short_name", "")))
    if m:
        return f"{'N' if m[1] == 'Ν' else 'PD'}{m[2]}_{m[3]}"
    return re.sub(r"[^\w.-]+", "_", str(obj.get("id", ""))).strip("_") or "GR"


# ---------------------------------------------------------------------------
# cleaning lines

_HEADER = re.compile(r"ΕΦΗΜ[ΙΊ]?ΕΡΙ(?:[Δ∆]Α|Σ)\s+[TΤ]ΗΣ\s+ΚΥΒΕΡΝΗΣΕΩΣ")
_PAGE_NUMBER = re.compile(r"^\s*\d{1,5}\s*$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")
# Where the act's own text ends: the promulgation clause, the seal, the printer's page, or an
# article of the ratifying law named by an ordinal ("Άρθρο Δεύτερο" after the Penal Code).
_TAIL = re.compile(
    r"^\s*(?:Παραγγέλλομε τη δημοσίευση|Θεωρήθηκε και τέθηκε|ΕΘΝΙΚΟ ΤΥΠΟΓΡΑΦΕΙΟ\s*$"
    r"|Άρθρο\s+(?:Πρώτο|Δεύτερο|Τρίτο|Τέταρτο|Πέμπτο|Έκτο|Έβδομο|Όγδοο|Ένατο|Δέκατο)\s*$)"
)
_LATIN_LOOKALIKE = str.maketrans("ABEZHIKMNOPTYX", "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")


def _is_header(line: str) -> bool:
    """A running page header: the gazette's name in capitals, maybe with issue and page numbers."""
    return bool(_HEADER.search(line)) and not any(ch.islower() for ch in line)


def _is_garbage(line: str) -> bool:
    """Text in a broken font encoding: control characters, or Latin-1 letters in place of Greek."""
    if _CONTROL.search(line):
        return True
    letters = [ch for ch in line if ch.isalpha()]
    latin1 = sum("\u00c0" <= ch <= "\u00ff" for ch in letters)
    return len(letters) >= 4 and latin1 * 2 > len(letters)


def clean_lines(content: str) -> list[str]:
    """Content lines without headers, page numbers, garbage and the gazette's closing part."""
    text = content.replace("\u2212", "-").replace("\u00a0", " ").replace("\r\n", "\n")
    out = []
    for line in text.split("\n"):
        if _TAIL.match(line):
            break
        if _is_header(line) or _PAGE_NUMBER.match(line) or _is_garbage(line):
            continue
        out.append(line.rstrip())
    return out


def _is_caps_heading(line: str) -> bool:
    """``ΚΕΦΑΛΑΙΟ Ζ΄``, ``ΙΙ. ΤΟΠΙΚΑ ΟΡΙΑ …``: capitals only, no closing period."""
    letters = [ch for ch in line if ch.isalpha()]
    return len(letters) >= 3 and not any(ch.islower() for ch in letters) and not line.rstrip().endswith(".")


def _drop_trailing_headings(lines: list[str]) -> list[str]:
    end = len(lines)
    while end and (not lines[end - 1].strip() or _is_caps_heading(lines[end - 1])):
        end -= 1
    return lines[:end]


# ---------------------------------------------------------------------------
# articles hidden in the text of others

_EMBEDDED = re.compile(r"^Άρθρο\s+(\d+)\s*([Α-Ω]{0,2})\s*$")
_RANGE = re.compile(r"^Άρθρα\s+(\d+\s*[Α-Ω]{0,2})\s*[-–]\s*(\d+\s*[Α-Ω]{0,2})\s*$")
_GREEK_CAPS = ["Α", "Β", "Γ", "Δ", "Ε", "ΣΤ", "Ζ", "Η", "Θ", "Ι", "ΙΑ", "ΙΒ", "ΙΓ", "ΙΔ", "ΙΕ"]


@dataclass
class _Piece:
    """An article's raw lines: the source's own provision, or one found inside another's text."""

    label: str
    title: str
    lines: list[str] = field(default_factory=list)
    stub: bool = False  # from "Άρθρα 3 - 4 (Καταργούνται)"
    hidden: bool = False  # from a heading line "Άρθρο 82 Α": the next line is its title


def _split_hidden(label: str, title: str, lines: list[str]) -> list[_Piece]:
    """The provision's own piece followed by articles and ranges found at quote depth 0."""
    pieces = [_Piece(label, title)]
    depth = 0
    for line in lines:
        m_art = _EMBEDDED.match(line.strip()) if depth == 0 else None
        m_range = _RANGE.match(line.strip()) if depth == 0 else None
        if m_art:
            pieces.append(_Piece(_label(m_art[1] + m_art[2]), "", hidden=True))
        elif m_range:
            pieces.append(_Piece(f"{m_range[1]}-{m_range[2]}", line.strip(), stub=True))
        else:
            pieces[-1].lines.append(line)
        depth = _quote_depth(depth, line)
    return pieces


def _quote_depth(depth: int, line: str) -> int:
    """Open ``«`` quotes after ``line``. A line ending ``».`` closes them all: the source often
    drops the outer ``»`` of a quote that ends in a quotation (``… «Περιουσίας».``)."""
    if line.rstrip().endswith("»."):
        return 0
    return max(0, depth + line.count("«") - line.count("»"))


def _label(text: str) -> str:
    """``82 Α`` -> ``82Α``; Latin look-alike capitals (``304A``) become Greek."""
    return re.sub(r"\s+", "", text).translate(_LATIN_LOOKALIKE)


def _range_labels(first: str, last: str) -> list[str]:
    """``3``-``4`` -> 3, 4; ``137Β``-``137Δ`` -> 137Β, 137Γ, 137Δ; ``322Α``-``323`` -> 322Α, 323."""
    ma = re.match(r"^(\d+)(\D*)$", _label(first))
    mb = re.match(r"^(\d+)(\D*)$", _label(last))
    if not ma or not mb:
        return [_label(first), _label(last)]
    na, nb = int(ma[1]), int(mb[1])
    if na == nb and ma[2] in _GREEK_CAPS and mb[2] in _GREEK_CAPS:
        lo, hi = _GREEK_CAPS.index(ma[2]), _GREEK_CAPS.index(mb[2])
        return [f"{na}{c}" for c in _GREEK_CAPS[lo : hi + 1]]
    inner = [str(n) for n in range(na + 1, nb)] if 0 < nb - na <= 500 else []
    return [_label(first)] + inner + [_label(last)]


_RANGE_TITLE = re.compile(r"^Άρθρα\s+\d")


def is_range_stub(article: Provision) -> bool:
    """True for a stub made from a heading like ``Άρθρα 3 - 4`` (its title is that heading)."""
    return bool(_RANGE_TITLE.match(article.title))


# ---------------------------------------------------------------------------
# titles


@lru_cache(maxsize=1)
def _sentence_openers() -> frozenset[str]:
    lines = (DATA / "sentence_openers.txt").read_text(encoding="utf-8").splitlines()
    return frozenset(s.strip() for s in lines if s.strip() and not s.startswith("#"))


def _split_title(source_title: str, lines: list[str]) -> tuple[str, list[str]]:
    """The article's title and its body lines.

    The source repeats the title as the first content line, wrapped over lines that start in
    lower case. Where an article has no title the source took its first line of text as one;
    such a "title" opens like a sentence or ends like one, and is kept as body text.
    """
    body = [s for s in lines if s.strip()]
    source_title = source_title.replace("\u2212", "-").strip()  # as clean_lines did to the content
    if not source_title or not body or body[0].strip() != source_title:
        return "", body
    end = 1
    while end < len(body) and body[end].strip()[:1].islower() and not _ITEM_START.match(body[end].strip()):
        end += 1
    title = clean_pdf_text("\n".join(body[:end]), breaks=None)
    first_word = title.split(" ", 1)[0]
    if first_word in _sentence_openers() or title.endswith((".", ":", ";")):
        return "", body
    return title, body[end:]


# ---------------------------------------------------------------------------
# paragraphs and items

_PAR_START = re.compile(r"^(\d{1,3})\.\s")
_ITEM_START = re.compile(r"^(\d{1,2}|[α-ω]{1,4})\)\s")
_UNIT_BREAK = re.compile(r"(?:\d{1,3}\.\s|(?:\d{1,2}|[α-ω]{1,4})\)\s)")


def _letter_sequence() -> list[str]:
    units = ["α", "β", "γ", "δ", "ε", "στ", "ζ", "η", "θ"]
    out = list(units)
    for tens in ("ι", "κ", "λ", "μ"):
        out.append(tens)
        out.extend(tens + u for u in units)
    return out


_LETTERS = _letter_sequence()
_DOUBLED = [s * 2 for s in _LETTERS[:20]]


def _item_kind(label: str) -> tuple[int, int] | None:
    """(rank, position) of an item label: ``1)`` rank 1, ``α)`` rank 2, ``αα)`` rank 3."""
    if label.isdigit():
        return 1, int(label)
    if label in _DOUBLED:
        return 3, _DOUBLED.index(label) + 1
    if label in _LETTERS:
        return 2, _LETTERS.index(label) + 1
    return None


@dataclass
class _Unit:
    level: str
    label: str
    rank: int = 0  # 0 for paragraphs; 1-3 for items
    position: int = 0
    lines: list[str] = field(default_factory=list)
    children: list[_Unit] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(self.lines + [c.text() for c in self.children])


@dataclass
class _Quotes:
    """Whether a line is inside quoted amending text (``«…»``), which holds no units of ours."""

    depth: int = 0
    last: int | None = None  # the last paragraph number seen inside the open quote

    def update(self, line: str) -> None:
        was_open = self.depth > 0
        self.depth = _quote_depth(self.depth, line)
        if not self.depth:
            self.last = None
            return
        quoted = line[line.index("«") + 1 :] if not was_open and "«" in line else line
        m = re.match(r"\s*(\d{1,3})\.", quoted)
        if m:
            self.last = int(m[1])

    def lets_through(self, number: int, previous: str) -> bool:
        """``N.`` after a finished sentence inside a quote that cannot continue with N: the quote
        was never closed (the source lost its ``»``), so this is our paragraph."""
        if self.depth == 0:
            return True
        return previous.rstrip().endswith((".", "»")) and (self.last is None or number != self.last + 1)


def _units(lines: list[str]) -> tuple[list[str], list[_Unit]]:
    """Intro lines and paragraphs (with items) of cleaned article lines.

    A paragraph starts with ``N.`` where N follows the previous one (1 first), so that a wrapped
    reference ("… της παρ.\\n2. …") cannot open one; an item starts with ``α)``/``1)`` where
    its letter or number follows its previous sibling's (or is the first).
    """
    intro: list[str] = []
    pars: list[_Unit] = []
    open_items: list[_Unit] = []
    quotes = _Quotes()
    previous = ""
    for line in lines:
        par = _PAR_START.match(line)
        item = _ITEM_START.match(line) if quotes.depth == 0 else None
        if par and int(par[1]) == _count_pars(pars) + 1 and quotes.lets_through(int(par[1]), previous):
            pars.append(_Unit("par", par[1], lines=[line]))
            open_items, quotes = [], _Quotes()
        elif not (item and _open_item(item[1], pars, open_items, line)):
            # not a unit after all: the line goes on the text before it
            _continue(open_items[-1].lines if open_items else pars[-1].lines if pars else intro, line)
        quotes.update(line)
        previous = line
    return intro, pars


def _count_pars(units: list[_Unit]) -> int:
    return sum(u.level == "par" for u in units)


def _continue(lines: list[str], line: str) -> None:
    if lines:
        lines[-1] = f"{lines[-1]} {line}"
    else:
        lines.append(line)


def _open_item(label: str, pars: list[_Unit], open_items: list[_Unit], line: str) -> bool:
    """Start an item if ``label`` continues a list (or starts one); False leaves it as text."""
    kind = _item_kind(label)
    if kind is None:
        return False
    rank, position = kind
    depth = len(open_items)  # the items that stay open: deeper ranks close only if it is an item
    while depth and open_items[depth - 1].rank > rank:
        depth -= 1
    sibling = open_items[depth - 1] if depth and open_items[depth - 1].rank == rank else None
    if (sibling.position + 1 if sibling else 1) != position:
        return False
    del open_items[depth - 1 if sibling else depth :]
    unit = _Unit("item", label, rank, position, [line])
    if open_items:
        open_items[-1].children.append(unit)
    elif pars and pars[-1].level == "par":
        pars[-1].children.append(unit)
    else:
        pars.append(unit)  # a list before any paragraph hangs under the article itself
    open_items.append(unit)
    return True


_INLINE_ITEM = re.compile(r"(?:(?<=:)|(?<=\s))([α-ω]{1,3})\)\s")


def _split_inline(unit: _Unit) -> None:
    """``… τα εξής: α) …, β) … και γ) …`` in one line: the letters become item children."""
    if unit.children or len(unit.lines) != 1:
        for child in unit.children:
            _split_inline(child)
        return
    text = unit.lines[0]
    cuts, want = [], 0
    for m in _INLINE_ITEM.finditer(text):
        if (
            want < len(_LETTERS)
            and m[1] == _LETTERS[want]
            and (want or text[: m.start()].rstrip().endswith(":"))
        ):
            cuts.append(m.start())
            want += 1
    if len(cuts) < 2:
        return
    unit.lines = [text[: cuts[0]].rstrip()]
    for i, start in enumerate(cuts):
        end = cuts[i + 1] if i + 1 < len(cuts) else len(text)
        unit.children.append(_Unit("item", _LETTERS[i], 2, i + 1, [text[start:end].strip()]))


# ---------------------------------------------------------------------------
# an act


def parse_greek_law(obj: dict, path: str = "") -> Act:
    """One law file's object as an :class:`Act` (ids: see :func:`source_id_for`).

    Raises ValueError naming ``path`` (else the file's id) when ``provisions`` is not a list, or
    one of them is not an object or has no ``section``/``provision_ref`` to label its article."""
    if not isinstance(obj.get("provisions"), list):
        raise ValueError(f"{path or obj.get('id')}: no 'provisions' list")
    source = source_id_for(obj)
    info = greek_acts().get(str(obj.get("id", "")))
    pieces: list[_Piece] = []
    for i, prov in enumerate(obj["provisions"]):
        if not isinstance(prov, dict):
            raise ValueError(f"{path or obj.get('id')}: provisions[{i}] is not an object")
        own, *hidden = _provision_pieces(prov)
        if not own.label or "/" in own.label:  # "/" separates the steps of a lexir id
            raise ValueError(f"{path or obj.get('id')}: provisions[{i}] has no usable 'section' or "
                             f"'provision_ref' (got {own.label!r})")
        pieces += [own, *hidden]
    articles = _articles(source, pieces)
    return Act(source, (info.title if info and info.title else str(obj.get("title", ""))), "el", articles)


def _provision_pieces(prov: dict) -> list[_Piece]:
    label = _label(str(prov.get("section") or prov.get("provision_ref", "")).removeprefix("Art. "))
    m = re.match(r"^Άρθρο\s+\S+\s+-\s+(.*)$", str(prov.get("title", "")))
    return _split_hidden(label, m[1] if m else "", clean_lines(str(prov.get("content", ""))))


def _articles(source: str, pieces: list[_Piece]) -> list[Provision]:
    taken = {p.label for p in pieces if not p.stub}
    out: list[Provision] = []
    for piece in pieces:
        lines = _drop_trailing_headings(piece.lines)
        if piece.stub:
            for label in _range_labels(*piece.label.split("-", 1)):
                if label not in taken:
                    taken.add(label)
                    text = clean_pdf_text("\n".join(lines), breaks=None)
                    out.append(Provision(f"{source}::{label}", "article", label, text, piece.title))
            continue
        if piece.hidden:
            piece.title = next((s.strip() for s in lines if s.strip()), "")
        out.append(_article(source, piece.label, *_split_title(piece.title, lines)))
    return _unique(out)


def _article(source: str, label: str, title: str, lines: list[str]) -> Provision:
    aid = f"{source}::{label}"
    joined = clean_pdf_text("\n".join(lines), breaks=_UNIT_BREAK).split("\n") if lines else []
    intro, pars = _units(joined)
    for par in pars:
        _split_inline(par)
    children = [_provision(par, aid) for par in pars]
    text = "\n".join(intro + [p.text for p in children])
    return Provision(aid, "article", label, text, title, children)


def _provision(unit: _Unit, base: str) -> Provision:
    pid = f"{base}/{unit.level}:{unit.label}"
    return Provision(
        pid, unit.level, unit.label, unit.text(), "", [_provision(c, pid) for c in unit.children]
    )


def _unique(articles: list[Provision]) -> list[Provision]:
    seen: dict[str, int] = {}
    for art in articles:
        seen[art.label] = seen.get(art.label, 0) + 1
        if seen[art.label] > 1:
            new = f"{art.label}~{seen[art.label]}"
            old_id = art.id
            art.label, art.id = new, art.id.rsplit("::", 1)[0] + "::" + new
            for unit in art.walk():
                unit.id = art.id + unit.id[len(old_id) :] if unit is not art else art.id
    return articles


# ---------------------------------------------------------------------------
# a folder


def iter_greek_files(folder: str | Path) -> Iterator[tuple[Path, dict]]:
    """The law files of a folder (JSON objects with a ``provisions`` list), by name."""
    for path in sorted(Path(folder).glob("*.json")):
        obj = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(obj, dict) and isinstance(obj.get("provisions"), list):
            yield path, obj


def load_greek_statutes(folder: str | Path) -> list[Act]:
    """Acts of all law files in ``folder``; a second file of the same law is loaded once.

    Raises ValueError when two files map to one source id but hold different provisions.
    """
    acts: dict[str, Act] = {}
    provisions: dict[str, list] = {}
    for path, obj in iter_greek_files(folder):
        source = source_id_for(obj)
        if source in acts:
            if obj["provisions"] != provisions[source]:
                raise ValueError(f"{path.name}: source id {source} already taken by a different law")
            continue
        acts[source] = parse_greek_law(obj, str(path))
        provisions[source] = obj["provisions"]
    return list(acts.values())


def greek_stats(acts: Iterable[Act]) -> dict[str, object]:
    """Counts: acts, articles, stubs, units per level."""
    acts = list(acts)
    levels: dict[str, int] = {}
    for act in acts:
        for unit in act.units():
            levels[unit.level] = levels.get(unit.level, 0) + 1
    return {
        "acts": len(acts),
        "articles": sum(len(a.articles) for a in acts),
        "range_stubs": sum(is_range_stub(p) for a in acts for p in a.articles),
        "units_per_level": dict(sorted(levels.items())),
    }
