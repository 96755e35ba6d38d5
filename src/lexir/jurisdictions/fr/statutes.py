"""French codes (legalize-fr Markdown, LEGI) parsed into :class:`~lexir.types.Act` trees.

Input: ``codes.tar.xz``, one member ``codes/LEGITEXT….md`` per code: YAML front matter (``title``,
``identifier``, ``status``, …), ``# <title>``, then the code in one of two formats, which one
parser reads (it also reads every version of ``history.tar.xz``):

headings
    ``## …`` / ``### …`` for the two top structure levels, every deeper level flattened to
    ``#### …``, and articles as ``##### Article 1240`` followed by their paragraphs.
plain
    no Markdown heading at all: structure lines (``Livre Ier : …``, ``Section 2 : …``) and article
    lines ``Article L111-1`` on their own, paragraphs as lines (blank lines between them or not).
    A file is plain when it has no ``##### `` line. A plain line counts as an article heading only
    when what follows ``Article`` is an article number (``L111-1``, ``1er``, ``12 bis``, ``R*2122-1``,
    ``liminaire``, ``Annexe …``), not a sentence (``Article 1er de la loi …`` in a body is text).

Decisions (written down for the integrator):

Act ids
    From ``data/acts.tsv`` (the ``read_act_table`` format plus the LEGITEXT identifier in a fourth
    column): the abbreviation lawyers use without dots and spaces (``Cciv``, ``Cpen``, ``CPC``,
    ``Ctrav``); near-duplicate codes get distinct ids (``CPMIVG`` / ``CPMIVGanc``, ``CLH`` /
    ``CLHanc``, ``Cminier`` / ``CminierAnc``). A code missing from the table keeps its LEGITEXT id.

Article labels (:func:`article_label`)
    The number as printed, made id-safe: the dot and spaces after a letter prefix are dropped
    (``L. 1232-1`` -> ``L1232-1``), the star of a decree article kept (``R*2122-1``: ``*`` is a
    URL sub-delimiter, legal unescaped in a path), ``1er``/``premier`` -> ``1`` (also inside
    ``1er bis``), other whitespace runs become ``_`` (``12 bis`` -> ``12_bis``, ``Annexe 2, art. 3``
    -> ``Annexe_2,_art_3``), and ``/ : @`` (lexir's id separators) become ``-``. A label that
    occurs again in the same code gets ``~2``, ``~3`` (as German ids do).

Units below an article
    ``al`` (alinéa): every non-empty line of the article's body, numbered 1, 2, … as French
    lawyers count them (an enumerated line is an alinéa too): ``Cciv::1240/al:1``.
    ``item``: a line ``1° …`` (label ``1``; ``1° bis`` -> ``1_bis``), a direct child of the article
    (``Ctrav::L1232-1/item:1``), holding the ``lit`` lines that follow it; ``lit``: a line ``a) …``
    (label ``a``), under the item before it or, if none, under the article. So an enumerated line
    is both an ``al`` and an ``item``/``lit``: two addresses of one text, as both are cited.
    Item and lit labels repeated in one article (a ``1°`` under ``I`` and under ``II``) get ``~2``.

Divisions
    Levels from the heading's first word, case-insensitive (``TITRE``, ``Sous-Paragraphe``):
    partie, livre, titre, sous-titre, chapitre, section, sous-section, paragraphe,
    sous-paragraphe, sous-sous-paragraphe, annexe; ``Première partie`` -> ``partie:1``; any other
    heading (``I``, ``A.``, ``1°``, ``Dispositions …``) is level ``division`` labelled by its first
    token. Labels: ``Ier``/``1er`` -> ``I``/``1``, ordinals as numbers, made id-safe as above.
    Nesting: ``##`` and ``###`` are the first two levels as the source had them (a ``##`` heading
    closes everything open); among ``####`` headings (and in the plain format) a heading closes the
    open ones of its rank or deeper, ranks in the order above, ``division`` headings deepest
    (roman < capital letter < number < ``1°`` < small letter < word). Ids as German:
    ``Cciv::livre:III/titre:III/sous-titre:II/chapitre:I``; siblings' repeats get ``~2``;
    divisions with no article below are dropped.

Errors
    :func:`parse_code` raises :class:`CodeSyntaxError` carrying a
    :class:`lexir.structure.parsing.ParseError` (file, line, message): no front matter, an
    ``#####`` heading that is not ``Article <number>``, a file with no article in either format.
    :func:`iter_code_files` / :func:`load_french_codes` collect them; a bad file never stops the others.
"""

from __future__ import annotations

import csv
import lzma
import re
import tarfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from lexir.structure.parsing import ParseError
from lexir.structure.parsing import parse_member as parse_or_report
from lexir.types import Act, Division, Provision, canonical_id

DATA = Path(__file__).parent / "data"
ACTS_TSV = DATA / "acts.tsv"


class CodeSyntaxError(ValueError):
    """Raised by :func:`parse_code`; carries the :class:`ParseError` to report."""

    def __init__(self, error: ParseError) -> None:
        super().__init__(f"{error.path}:{error.line}: {error.message}")
        self.error = error


# ---------------------------------------------------------------------------
# the act table


@dataclass(frozen=True)
class CodeEntry:
    """One row of ``data/acts.tsv``."""

    source: str
    abbreviations: tuple[str, ...]
    names: tuple[str, ...]
    identifier: str
    title: str


@lru_cache(maxsize=1)
def code_table() -> tuple[CodeEntry, ...]:
    """Every row of ``data/acts.tsv`` (83 codes: the 68 of the snapshot and the 15 missing)."""
    rows = []
    with ACTS_TSV.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader((line for line in fh if not line.startswith("#")), delimiter="\t",
                            quoting=csv.QUOTE_NONE)
        for row in reader:
            if not row or row[0] == "source":
                continue
            row = (row + [""] * 5)[:5]
            split = lambda cell: tuple(v.strip() for v in cell.split("|") if v.strip())  # noqa: E731
            rows.append(CodeEntry(row[0].strip(), split(row[1]), split(row[2]), row[3].strip(), row[4].strip()))
    return tuple(rows)


def source_of(identifier: str) -> str:
    """The lexir source id of a LEGITEXT identifier (the identifier itself when not in the table)."""
    return _by_identifier().get(identifier, identifier)


@lru_cache(maxsize=1)
def _by_identifier() -> dict[str, str]:
    return {e.identifier: e.source for e in code_table()}


# ---------------------------------------------------------------------------
# labels

_PREFIX = re.compile(r"^([A-Z]{1,3})\s*\.?\s*(\*?)\s*\.?\s*(?=\d)")
_INNER_PREFIX = re.compile(r"\b([A-Z]{1,3})\.\s*(\*?)\s*(?=\d)")  # "l'article R. 122-30" inside an annex label
_PREMIER = re.compile(r"^(\d+)\s*(?:er|ER|re)\b|^premier\b", re.IGNORECASE)
_UNSAFE = re.compile(r"[/:@]")


@lru_cache(maxsize=1 << 16)  # a history parses the same headings hundreds of times
def article_label(printed: str) -> str:
    """An article number as printed made id-safe (module doc): ``L. 1232-1`` -> ``L1232-1``."""
    text = " ".join(printed.replace("\xa0", " ").split())
    text = _PREFIX.sub(lambda m: m[1] + m[2], text, count=1)
    if ". " in text:
        text = _INNER_PREFIX.sub(lambda m: m[1] + m[2], text)
    text = _PREMIER.sub(lambda m: m[1] if m[1] else "1", text, count=1)
    text = text.replace(". ", " ").rstrip(".")
    return _UNSAFE.sub("-", text.replace(" ", "_"))


# A plain "Article …" line is a heading when every word after "Article" is part of a number:
# a number (``L111-1``, ``R.``, ``234-12-5``, ``1er``), a capital letter group (``C``, ``LA``), a Latin
# ordinal (``bis``, ``quinquies``, ``duodecies``); or when it is ``liminaire`` or an annex.
_NUMBER_TOKEN = re.compile(r"^(?:[A-Z]{1,3}\.?\*?|[A-Z]{0,3}\.?\*?\d[\w*.\-]*|bis|ter|quater|[a-z]+ies(?:-\w+)*|[a-z])$")
_NAMED_ARTICLE = re.compile(r"^(?:liminaire|préliminaire|unique|annexe\b.*)$", re.IGNORECASE)


@lru_cache(maxsize=1 << 16)
def plain_article_number(line: str) -> str | None:
    """The printed number of a plain-format article line (``Article 23 L quater`` -> ``23 L
    quater``), None when the line is text (``Article 1er de la loi …``)."""
    rest = line[8:].strip() if line.startswith("Article ") else ""
    if not rest:
        return None
    if _NAMED_ARTICLE.match(rest):
        return rest if len(rest.split()) <= 8 else None
    tokens = rest.split()
    if len(tokens) > 6 or not any(c.isdigit() for c in tokens[0] + (tokens[1] if len(tokens) > 1 else "")):
        return None
    return rest if all(_NUMBER_TOKEN.match(t) for t in tokens) else None


# ---------------------------------------------------------------------------
# divisions

LEVELS = ("partie", "livre", "titre", "sous-titre", "chapitre", "section", "sous-section", "paragraphe",
          "sous-paragraphe", "sous-sous-paragraphe")
_RANK = {level: i for i, level in enumerate(LEVELS)}
_RANK["annexe"] = 0  # "Annexes" stand beside the parts
_ORDINALS = {"premier": "1", "première": "1", "premiere": "1", "deuxième": "2", "deuxieme": "2", "second": "2",
             "seconde": "2", "troisième": "3", "troisieme": "3", "quatrième": "4", "quatrieme": "4",
             "cinquième": "5", "cinquieme": "5", "sixième": "6", "septième": "7", "huitième": "8",
             "neuvième": "9", "dixième": "10"}
_ROMAN = re.compile(r"^[IVXLC]+$")
_GENERIC_RANKS = ((re.compile(r"^0*[IVXLC]+\.?$"), 20), (re.compile(r"^[A-Z]\.?$"), 21), (re.compile(r"^\d+\.?$"), 22),
                  (re.compile(r"^\d+°$"), 23), (re.compile(r"^[a-z]\)?\.?$"), 24))
_STRUCT_WORD = re.compile(r"^(partie|livre|titre|sous-titre|chapitre|section|sous-section|paragraphe|sous-paragraphe|"
                          r"sous-sous-paragraphe|annexes?)\b\s*(.*)$", re.IGNORECASE)


def _division_label(token: str) -> str:
    token = token.strip().rstrip(".,;")
    low = token.lower()
    if low in _ORDINALS:
        return _ORDINALS[low]
    if low in ("ier", "1er", "premier", "unique"):
        return "I" if low == "ier" else ("1" if low != "unique" else "unique")
    if low.endswith("er") and _ROMAN.match(token[:-2].upper() or "-"):
        return token[:-2].upper()
    return _UNSAFE.sub("-", token) or "-"


@lru_cache(maxsize=1 << 16)
def classify_heading(text: str) -> tuple[str, str, int, str, str] | None:
    """``(level, label, rank, heading, title)`` of a structure heading (module doc), None for an
    empty one. ``heading`` is the number part (``Livre Ier``), ``title`` the words after `` : ``."""
    text = " ".join(text.split())
    if not text:
        return None
    head, sep, title = text.partition(" : ")
    if not sep:
        head, sep, title = text.partition(" - ")
    if not sep:
        head, title = text, ""
    words = head.split()
    m = _STRUCT_WORD.match(head)
    if m:
        level = m[1].lower()
        level = "annexe" if level.startswith("annexe") else level
        rest = m[2].split()
        label = _division_label(rest[0]) if rest else "-"
        return level, label, _RANK[level], head, title
    if len(words) >= 2 and words[0].lower() in _ORDINALS and _STRUCT_WORD.match(words[1]):
        level = _STRUCT_WORD.match(words[1])[1].lower()  # type: ignore[index]
        level = "annexe" if level.startswith("annexe") else level
        return level, _ORDINALS[words[0].lower()], _RANK[level], head, title
    first = re.split(r"[\s,]+|\.-|-(?=[A-ZÉ])", text, maxsplit=1)[0]
    rank = next((r for pattern, r in _GENERIC_RANKS if pattern.match(first)), 25)
    label = _division_label(first.rstrip("°)")) if rank < 25 else _division_label(first)
    return "division", label, rank, first, text[len(first):].strip(" :-.") if rank < 25 else text


@dataclass
class _Open:
    division: Division
    md: int  # 2, 3 or 4 (headings format); 4 in the plain format
    rank: int
    count: int = 0  # articles below it


class _Tree:
    """Divisions as headings arrive; ``add_article`` files an article under the innermost one."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.roots: list[Division] = []
        self.stack: list[_Open] = []
        self.all: list[_Open] = []

    def heading(self, md: int, text: str) -> None:
        info = classify_heading(text)
        if info is None:
            return
        level, label, rank, heading, title = info
        while self.stack:
            top = self.stack[-1]
            if top.md > md or (top.md == md and (md < 4 or top.rank >= rank)):
                self.stack.pop()
            else:
                break
        siblings = self.stack[-1].division.children if self.stack else self.roots
        base = self.stack[-1].division.id + "/" if self.stack else f"{self.source}::"
        ident = f"{base}{level}:{label}"
        taken = {d.id for d in siblings}
        n = 1
        while ident in taken:
            n += 1
            ident = f"{base}{level}:{label}~{n}"
        division = Division(ident, level, label, title, heading)
        siblings.append(division)
        entry = _Open(division, md, rank)
        self.stack.append(entry)
        self.all.append(entry)

    def add_article(self, article_id: str) -> None:
        if self.stack:
            self.stack[-1].division.articles.append(article_id)
            for entry in self.stack:
                entry.count += 1

    def divisions(self) -> list[Division]:
        empty = {id(e.division) for e in self.all if e.count == 0}
        if empty:
            for entry in self.all:
                entry.division.children = [c for c in entry.division.children if id(c) not in empty]
            self.roots = [d for d in self.roots if id(d) not in empty]
        return self.roots


# ---------------------------------------------------------------------------
# articles

_ITEM = re.compile(r"^(\d+)\s?°\s*((?:bis|ter|quater|quinquies|sexies|septies|octies|nonies|decies)\b)?")
_LIT = re.compile(r"^([a-z])\s?\)\s")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>])")


def build_article(source: str, label: str, lines: list[str]) -> Provision:
    """An article with its ``al``, ``item`` and ``lit`` units from its body lines (stripped, non-empty)."""
    aid = canonical_id(source, label)
    kids: list[Provision] = [Provision(f"{aid}/al:{i}", "al", str(i), line) for i, line in enumerate(lines, 1)]
    item: Provision | None = None
    seen: Counter[str] = Counter()
    for line in lines:
        first = line[:1]
        if first.isdigit():
            m = _ITEM.match(line)
            if m:
                lab = m[1] + (f"_{m[2]}" if m[2] else "")
                seen["item:" + lab] += 1
                if seen["item:" + lab] > 1:
                    lab = f"{lab}~{seen['item:' + lab]}"
                item = Provision(f"{aid}/item:{lab}", "item", lab, line)
                kids.append(item)
                continue
            item = None
        elif "a" <= first <= "z" and len(line) > 2 and line[1] in ") ":
            m = _LIT.match(line)
            if m:
                parent = item if item is not None else None
                base = parent.id if parent is not None else aid
                key = f"{base}/lit:{m[1]}"
                seen[key] += 1
                lab = m[1] if seen[key] == 1 else f"{m[1]}~{seen[key]}"
                lit = Provision(f"{base}/lit:{lab}", "lit", lab, line)
                if parent is not None:
                    parent.children.append(lit)
                    parent.text += "\n" + line
                else:
                    kids.append(lit)
                continue
            item = None
        else:
            item = None
    return Provision(aid, "article", label, "\n".join(lines), "", kids)


def _clean(line: str) -> str:
    line = line.strip()
    if "\\" in line:
        line = _ESCAPE.sub(r"\1", line)
    return line.replace("\xa0", " ")


# ---------------------------------------------------------------------------
# a code


@dataclass
class ParsedCode:
    """One parsed file: the act, its LEGITEXT identifier, its format, its front matter."""

    act: Act
    identifier: str
    format: str  # "headings" or "plain"
    fields: dict[str, str]
    problems: list[ParseError] = field(default_factory=list)  # articles skipped (see parse_code)


def _front_matter(lines: list[str], path: str) -> tuple[dict[str, str], int]:
    if not lines or lines[0].strip() != "---":
        raise CodeSyntaxError(ParseError(path, 1, "no YAML front matter (--- ... ---)"))
    fields: dict[str, str] = {}
    for i in range(1, len(lines)):
        line = lines[i]
        if line.strip() == "---":
            return fields, i + 1
        key, sep, value = line.partition(":")
        if not sep:
            raise CodeSyntaxError(ParseError(path, i + 1, f"bad front-matter line {line[:60]!r}"))
        fields[key.strip()] = value.strip().strip('"')
    raise CodeSyntaxError(ParseError(path, 1, "front matter not closed by ---"))


def parse_code(markdown: str, path: str = "", source: str | None = None, strict: bool = False,
               built: dict[tuple[str, tuple[str, ...]], Provision] | None = None) -> ParsedCode:
    """One code's file (either format) as a :class:`ParsedCode`; ``source`` overrides the act id
    (default: from the front matter's ``identifier`` through ``data/acts.tsv``). ``built`` keeps
    the articles already built from a (label, body lines) of this code: a history's versions share
    the trees of the articles they leave as they were, built once (never changed after).

    An article heading without a number (``##### Article`` alone: one in the CIBS, D/A471-35)
    raises :class:`CodeSyntaxError` when ``strict``; otherwise that article is left out (no label
    is guessed) and the error is recorded in ``ParsedCode.problems``, so one bad heading does not
    lose the whole code. A file with no front matter or no article at all always raises."""
    lines = markdown.split("\n")
    fields, start = _front_matter(lines, path)
    identifier = fields.get("identifier", "")
    act_id = source or source_of(identifier) or Path(path).stem
    title = fields.get("title", "")
    headings = any(line.startswith("##### ") or line == "#####" for line in lines[start:])
    tree = _Tree(act_id)
    articles: list[Provision] = []
    labels: Counter[str] = Counter()
    current: tuple[str, list[str]] | None = None
    problems: list[ParseError] = []

    def close() -> None:
        if current is not None:
            label, body = current
            labels[label] += 1
            if labels[label] > 1:
                label = f"{label}~{labels[label]}"
            key = (label, tuple(body))
            article = built.get(key) if built is not None else None
            if article is None:
                article = build_article(act_id, label, body)
                if built is not None:
                    built[key] = article
            articles.append(article)
            tree.add_article(article.id)

    for number in range(start, len(lines)):
        line = lines[number]
        if headings:
            if line.startswith("#"):
                hashes = len(line) - len(line.lstrip("#"))
                text = line[hashes:].strip()
                if hashes == 1:
                    if not title:
                        title = text
                    continue
                if hashes == 5:
                    close()
                    current = None
                    if not text.startswith("Article") or not text[7:].strip():
                        error = ParseError(path, number + 1, f"article heading without an article number: {line[:80]!r}")
                        if strict:
                            raise CodeSyntaxError(error)
                        problems.append(error)
                        continue
                    current = (article_label(text[7:]), [])
                    continue
                if 2 <= hashes <= 4:
                    close()
                    current = None
                    tree.heading(hashes, text)
                    continue
                raise CodeSyntaxError(ParseError(path, number + 1, f"unexpected heading level {hashes}: {line[:80]!r}"))
            if current is not None:
                text = _clean(line)
                if text:
                    current[1].append(text)
            continue
        text = line.strip()
        if not text:
            continue
        if text.startswith("# ") and not articles and current is None:
            title = title or text[2:].strip()
            continue
        if text.startswith("Article "):
            printed = plain_article_number(text)
            if printed is not None:
                close()
                current = (article_label(printed), [])
                continue
        elif _STRUCT_WORD.match(text) or (text.split(" ", 1)[0].lower() in _ORDINALS
                                          and _STRUCT_WORD.match(text.split(" ", 2)[1] if " " in text else "")):
            if _is_structure_line(text):
                close()
                current = None
                tree.heading(4, text)
                continue
        if current is not None:
            current[1].append(_clean(text))
    close()
    if not articles:
        raise CodeSyntaxError(ParseError(path, start + 1, "neither format: no '##### Article' heading and no plain "
                                         "'Article <number>' line"))
    act = Act(act_id, title, "fr", articles, tree.divisions())
    return ParsedCode(act, identifier, "headings" if headings else "plain", fields, problems)


def _is_structure_line(text: str) -> bool:
    """A plain line starting with a structure word is a heading when its number part is short
    (``Section 2 : …``, ``Titre préliminaire``, ``Partie législative``, ``Première partie : …``)
    and not a sentence (``Section 2 du présent chapitre …`` stays text)."""
    head, sep, _ = text.partition(" : ")
    if not sep and text.endswith(" :"):
        head, sep = text[:-2], ":"
    words = head.split()
    if sep:
        return len(words) <= 3
    return len(words) <= 2 or (len(words) == 3 and words[0].lower() in _ORDINALS)


# ---------------------------------------------------------------------------
# the archive


def iter_code_files(tar_path: str | Path) -> Iterator[tuple[str, ParsedCode | ParseError]]:
    """``(member, ParsedCode or ParseError)`` for every ``.md`` member of ``codes.tar.xz``, in
    archive order; a file that fails is reported and the others are parsed."""
    with tarfile.open(tar_path, "r:*") as tar:
        for member in tar:
            if not (member.isfile() and member.name.endswith(".md")):
                continue
            name = member.name.removeprefix("./")
            handle = tar.extractfile(member)
            yield name, parse_member(name, handle.read() if handle is not None else None)


def parse_member(name: str, data: bytes | None) -> ParsedCode | ParseError:
    """One file's bytes parsed, or the :class:`ParseError` saying why not (never raises)."""
    return parse_or_report(name, data, parse_code, (CodeSyntaxError,))


def load_french_codes(tar_path: str | Path) -> tuple[list[Act], list[ParseError]]:
    """Every code of ``codes.tar.xz`` as an :class:`Act` (archive order), and the errors: files that
    failed, and articles left out of a parsed file (``ParsedCode.problems``)."""
    acts: list[Act] = []
    errors: list[ParseError] = []
    for _, result in iter_code_files(tar_path):
        if isinstance(result, ParseError):
            errors.append(result)
        else:
            acts.append(result.act)
            errors.extend(result.problems)
    return acts, errors


@dataclass(frozen=True)
class CodeCount:
    """Articles parsed from one file, with what the file's format is."""

    member: str
    identifier: str
    source: str
    format: str
    articles: int
    divisions: int
    units: int


def code_counts(tar_path: str | Path) -> tuple[dict[str, CodeCount], list[ParseError]]:
    """Per LEGITEXT identifier: the articles (and divisions, units) parsed; and the errors."""
    counts: dict[str, CodeCount] = {}
    errors: list[ParseError] = []
    for name, result in iter_code_files(tar_path):
        if isinstance(result, ParseError):
            errors.append(result)
            continue
        errors.extend(result.problems)
        act = result.act
        counts[result.identifier] = CodeCount(name, result.identifier, act.id, result.format, len(act.articles),
                                              sum(1 for _ in act.walk_divisions()), sum(1 for _ in act.units()))
    return counts, errors


def bare_read(tar_path: str | Path) -> int:
    """Decompress the archive and split every member into lines (the benchmark's baseline); the
    number of lines."""
    total = 0
    with tarfile.open(fileobj=lzma.open(tar_path), mode="r|") as tar:
        for member in tar:
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None:
                total += len(handle.read().decode("utf-8").split("\n"))
    return total
