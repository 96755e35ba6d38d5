"""Past versions of German federal laws (bundestag/gesetze's git history) as law versions.

Input: ``gesetze_history.tar.xz`` with members ``<slug>/<date>_<commit8>.md`` (the Markdown of
:mod:`lexir.jurisdictions.de.statutes`) and ``versions.tsv`` (slug, jurabk, date, commit, blob, chars,
message; one row per member, in commit order).

Two things differ from parsing today's corpus:

Act ids
    The first two commits' front matter has no ``jurabk``; every version of a law gets the act
    id of the law's jurabk as ``versions.tsv`` gives it in its later rows (``BGB``, ``SGB 5``),
    so ids are the same in every version and in ``de-gesetze``.

Headings the converter split
    Up to October 2012 (and again for a few annexes later) the converter wrote the first part
    of a long heading, or a heading moved into a footnote, as a paragraph directly before the
    heading line (one blank line between; a footnote reference line ``[^…]`` first)::

        Aufbewahrung von Unterlagen

        ##### § 257 Aufbewahrungsfristen

    The repository's own fix (2012-10-18, "Verbessere Überschriften") put the text back into the
    heading: ``§ 257 Aufbewahrung von Unterlagen Aufbewahrungsfristen``. :func:`repair_headings`
    does the same for every version, so that the fix is no amendment of § 257 and the
    preceding § does not end with a stray heading. A paragraph counts as such a fragment only
    if it has no unit marker, is not the first text below a § heading (its body), does not
    end a sentence (``;``, ``:``, ``!``, ``?``, or ``.`` after more than ten words) and is not
    a ``(weggefallen)`` body.

Dates
    A commit date is when the repository published a text, not when it came into force: the
    commits of 2018-11-08 hold the laws as amended up to 2021, e.g. BGB § 327 ff. of the
    G v. 25.6.2021. A version cannot be in force before the amending acts its header says its
    text contains, so its date is the later of the commit date and the latest of those acts'
    dates (:func:`header_date`): ``Zuletzt geändert durch`` (``Art. 4 Abs. 6 G v. 7.5.2021 I
    850``), ``Stand: Zuletzt geändert Art. … G v. …``, and ``Änderung durch`` / ``Stand:``
    entries marked ``textlich nachgewiesen`` or ``ist berücksichtigt``; an entry marked ``noch
    nicht berücksichtigt`` or ``nicht ausführbar`` is not in the text and does not count. A
    header that names no such act (WoEigG of 2018-11-08: only ``Neugefasst durch Bek. v.
    12.1.2021``, a new promulgation of wording in force from an earlier day) keeps the commit
    date. An act's date is the day it was signed, so the date found is a lower bound: an
    amendment usually comes into force some days or months later. A version whose date so found
    is on or after the next version's is never in force on its own (the next text supersedes
    it first) and is left out (:func:`dated_rows`).

Not yet in force
    A version may hold provisions an amendment already enacted but not yet in force, marked
    ``(zukünftig in Kraft)``: a heading with no body (ZPO ``##### (XXXX) §§ 802a bis 802j
    (zukünftig in Kraft)`` of 2012), an Absatz whose text begins with the mark (``(1)
    (zukünftig in Kraft) Nach § 802f Abs. 6 …``, the wording from 1.1.2013), or a placeholder body
    (``(3a) Tritt zukünftig in Kraft``, ``(4) bis (8) zukünftig in Kraft``). :func:`is_pending`
    says so, and the history counts such a unit as not in force in that version
    (:meth:`lexir.structure.history.StatuteHistory.build`): it comes into force with the first
    version that gives its text without the mark.
"""

from __future__ import annotations

import csv
import re
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date as Date
from pathlib import Path

from lexir.jurisdictions.de.statutes import LawSyntaxError, ParseError, _heading_unit, parse_law, safe_act_id
from lexir.structure.history import LawVersion, is_repealed
from lexir.types import Act, Provision

_FOOTNOTE_LINE = re.compile(r"^\[\^[^\]]*\]$")
_UNIT_MARKER = re.compile(r"^(?:\(\d+[a-z]?\)|\d+[a-z]{0,2}\.(?:\s|$)|[a-z]{1,3}\)\s)")
_SENTENCE_END = (".", ";", ":", "!", "?")
# A heading fragment may end with a full stop ("Zuständiges Insolvenzgericht." before "§ 348
# Zusammenarbeit der Insolvenzgerichte"); text that short is no § body's closing paragraph in
# these files, where every such paragraph carries a marker or is a sentence of its own line.
_SHORT_HEADING = 10

# An amending act and its date in a header entry: "G v. 7.5.2021", "G v 22.7.2011", "V v. 17.10.2011",
# "Bek. v. 18.10.2021" (the act's date; "BAnz AT 29.10.2021" after it is the gazette's).
# An act named in full may be a compound with its year: "Sozialversicherungs-Rechengrößenverordnung 2022
# v. 30.11.2021".
_ACT_DATE = re.compile(r"(?:\b(?:G|V|Bek\.)|\w*(?:[Gg]esetz|[Vv]erordnung)(?:es|s)?(?:\s+\d{4})?)"
                       r"\s+v(?:om|\.)?\s*(\d{1,2})\.\s?(\d{1,2})\.\s?(\d{4})\b")
_IN_TEXT = re.compile(r"textlich nachgewiesen|(?<!nicht )berücksichtigt", re.IGNORECASE)
_NOT_IN_TEXT = re.compile(r"noch nicht berücksichtigt|nicht ausführbar", re.IGNORECASE)
_AMENDED = "zuletzt geändert"

_MARK = r"\(\s*zukünftig\s+in\s+Kraft\s*\)"
_PENDING_TITLE = re.compile(_MARK + r"\s*$", re.IGNORECASE)
_PENDING_BODY = re.compile(r"^(?:" + _MARK + r"(?:\s|$)|(?:bis\s+\(\d+[a-z]?\)\s+)?(?:tritt\s+)?zukünftig\s+in\s+Kraft\.?$)",
                           re.IGNORECASE)
_BODY_MARKER = re.compile(r"^(?:\(\d+[a-z]?\)|\d+[a-z]{0,2}\.|[a-z]{1,3}\))\s*")


@dataclass(frozen=True)
class VersionRow:
    slug: str
    jurabk: str
    date: str
    commit: str
    message: str
    line: int

    @property
    def member(self) -> str:
        return f"{self.slug}/{self.date}_{self.commit[:8]}.md"


def read_versions(path: str | Path) -> list[VersionRow]:
    """Rows of ``versions.tsv``; a malformed row is an error naming the file and line."""
    path = Path(path)
    rows = []
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None or header[:4] != ["slug", "jurabk", "date", "commit"]:
            raise ValueError(f"{path}:1: expected the header slug, jurabk, date, commit, …; got {header}")
        for line, cells in enumerate(reader, 2):
            if not cells:
                continue
            if len(cells) < 4 or not cells[0] or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", cells[2]):
                raise ValueError(f"{path}:{line}: malformed row {cells[:4]}")
            message = cells[6] if len(cells) > 6 else ""
            rows.append(VersionRow(cells[0], cells[1], cells[2], cells[3], message, line))
    return rows


def is_pending(unit: Provision) -> bool:
    """True for a unit the version holds only as ``(zukünftig in Kraft)`` (module doc)."""
    head = unit.text[:80]
    if "ukünftig" not in head and "ukünftig" not in unit.title:
        return False  # the common case: no mark at all
    if unit.children and unit.text.startswith(unit.children[0].text[:40]):
        # a § whose text is its Absätze's: the mark at its start is its first Absatz's; the § is
        # pending only when all of them are (ZPO § 802k of 2012: Abs. 1-2 pending, 3-4 in force)
        return all(is_pending(child) for child in unit.children)
    body = _BODY_MARKER.sub("", " ".join(head.split()), count=1)
    if _PENDING_BODY.match(body):
        return True
    return not body.strip(" -–") and bool(_PENDING_TITLE.search(unit.title))


def _header_entries(markdown: str) -> Iterator[tuple[str, str]]:
    """``(key, value)`` of the header's entries, up to the first ``##`` heading: a definition
    (``Zuletzt geändert durch`` then ``:   Art. 1 G v. …`` and its indented continuation lines)
    or a ``Stand: …`` line (key ``Stand``)."""
    lines = markdown.split("\n")
    key = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("##"):
            return
        if line.startswith(":   ") and key:
            value = [line[4:]]
            while i + 1 < len(lines) and lines[i + 1].startswith("    ") and lines[i + 1].strip():
                i += 1
                value.append(lines[i])
            yield key, " ".join(" ".join(value).split())
        elif line.startswith("Stand:"):
            yield "Stand", " ".join(line[len("Stand:"):].split())
        if line.strip():
            key = line.strip()
        i += 1


def _act_dates(value: str) -> list[str]:
    out = []
    for m in _ACT_DATE.finditer(value):
        try:
            out.append(Date(int(m[3]), int(m[2]), int(m[1])).isoformat())
        except ValueError:
            continue  # no real date ("G v. 31.2.2012" would be a typo in the source): not used
    return out


def header_date(markdown: str) -> str | None:
    """The latest date of an amending act the law's header says its text contains, as
    ``YYYY-MM-DD`` (module doc, Dates); None when the header names none."""
    dates: list[str] = []
    for key, value in _header_entries(markdown):
        if _NOT_IN_TEXT.search(value):
            continue
        if key.lower().startswith(_AMENDED) or value.lower().startswith(_AMENDED) or _IN_TEXT.search(value):
            dates.extend(_act_dates(value))
    return max(dates, default=None)


def version_date(commit_date: str, markdown: str) -> str:
    """The date a law version is taken to be in force from: the later of its commit date and
    :func:`header_date`."""
    amended = header_date(markdown)
    return max(commit_date, amended) if amended else commit_date


def dated_rows(rows: list[VersionRow], texts: dict[str, str]) -> tuple[list[tuple[VersionRow, str]], list[VersionRow]]:
    """Each row with its :func:`version_date`, in row order (one law's rows are in commit order),
    and the rows left out: a version dated after a later version of the same law is superseded
    before it could be in force. Two versions of one law on the same date stay; the history
    keeps the later (several versions of one day count as that day's last)."""
    by_slug: dict[str, list[tuple[int, VersionRow, str]]] = {}
    for n, row in enumerate(rows):
        text = texts.get(row.member)
        day = version_date(row.date, text) if text is not None else row.date
        by_slug.setdefault(row.slug, []).append((n, row, day))
    kept: list[tuple[int, VersionRow, str]] = []
    dropped: list[VersionRow] = []
    for dated in by_slug.values():
        following = None  # the date of the next version kept
        for n, row, day in reversed(dated):
            if following is not None and day > following:
                dropped.append(row)
                continue
            kept.append((n, row, day))
            following = day
    kept.sort(key=lambda item: item[0])
    return [(row, day) for _n, row, day in kept], dropped


def repair_headings(markdown: str) -> str:
    """Put heading fragments the converter left above a heading back into it (module doc)."""
    lines = markdown.split("\n")
    out: list[str] = []
    for line in lines:
        if line.startswith("#") and len(out) >= 2 and not out[-1].strip():
            start = len(out) - 1
            while start > 0 and out[start - 1].strip() and not out[start - 1].startswith(("#", "---")):
                start -= 1
            block = out[start:-1]
            if block and start > 0 and _is_fragment(block) and not _is_unit_body(out, start):
                del out[start:]
                if _FOOTNOTE_LINE.match(block[0].strip()):
                    block = block[1:]
                line = _with_fragment(line, " ".join(" ".join(block).split()))
        out.append(line)
    return "\n".join(out)


def _is_fragment(block: list[str]) -> bool:
    if _FOOTNOTE_LINE.match(block[0].strip()):
        return len(block) > 1
    text = " ".join(" ".join(block).split())
    if not text or _UNIT_MARKER.match(text) or text.startswith(("|", "*", "-")):
        return False
    if text.endswith(_SENTENCE_END) and not (text.endswith(".") and len(text.split()) <= _SHORT_HEADING):
        return False
    return not is_repealed(Provision("", "", "", text))


def _is_unit_body(out: list[str], start: int) -> bool:
    """True when the block at ``start`` is the first text below a § / Art / annex heading: then it
    is that unit's body (``(Inkrafttreten)``), not a fragment of the next heading."""
    j = start - 1
    while j >= 0 and not out[j].strip():
        j -= 1
    if j < 0 or not out[j].startswith("#"):
        return False
    text = out[j].lstrip("#").strip()
    return _heading_unit(text, 0, 0) is not None


def _with_fragment(heading: str, fragment: str) -> str:
    m = re.match(r"^(#{1,6})\s*(.*?)\s*$", heading)
    hashes, text = m[1], m[2]
    unit = _heading_unit(text, len(hashes), 0)
    title = unit.title if unit is not None else ""
    if title and text.endswith(title):
        prefix = text[: len(text) - len(title)].rstrip()
        if prefix.endswith(("-", "–")):  # "Anhang EV - Sonderregelung": the dash stays before the title
            return f"{hashes} {prefix[:-1].rstrip()} {fragment} {prefix[-1]} {title}"
        return f"{hashes} {prefix} {fragment} {title}"
    return f"{hashes} {text} {fragment}"


def _rename(act: Act, new_id: str) -> None:
    cut = len(act.id)
    for unit in act.units():
        unit.id = new_id + unit.id[cut:]
    act.id = new_id


def iter_law_versions(tar_path: str | Path, versions_tsv: str | Path,
                      slugs: Iterable[str] | None = None) -> Iterator[LawVersion | ParseError]:
    """Every member of the archive as a parsed :class:`LawVersion`, in ``versions.tsv`` order
    (only the laws named in ``slugs``, e.g. ``{"bgb"}``, when given).

    Each version is dated by :func:`version_date` (module doc, Dates); one superseded before that
    date is left out (:func:`dated_rows`). A member that fails to parse is yielded as a
    :class:`ParseError`; a row without its member (or a member without its row) is one too,
    never silently skipped.
    """
    rows = read_versions(versions_tsv)
    if slugs is not None:
        keep = set(slugs)
        unknown = keep - {row.slug for row in rows}
        if unknown:
            raise ValueError(f"{versions_tsv}: no law with slug {', '.join(sorted(unknown))}")
        rows = [row for row in rows if row.slug in keep]
    jurabk: dict[str, str] = {}
    for row in rows:
        if row.jurabk:
            jurabk[row.slug] = row.jurabk
    texts: dict[str, str] = {}
    with tarfile.open(tar_path, "r:*") as tar:
        for member in tar:
            if slugs is not None and member.name.removeprefix("./").split("/", 1)[0] not in keep:
                continue
            if member.isfile() and member.name.endswith(".md") and (handle := tar.extractfile(member)):
                texts[member.name.removeprefix("./")] = handle.read().decode("utf-8")
    wanted = {row.member for row in rows}
    for name in sorted(set(texts) - wanted):
        yield ParseError(name, 0, f"archive member has no row in {Path(versions_tsv).name}")
    dated, _superseded = dated_rows(rows, texts)
    for row, day in dated:
        text = texts.get(row.member)
        if text is None:
            yield ParseError(str(versions_tsv), row.line, f"no archive member {row.member} for this row")
            continue
        try:
            act = parse_law(repair_headings(text), row.member)
        except LawSyntaxError as exc:
            yield exc.error
            continue
        act_id = safe_act_id(jurabk.get(row.slug, ""), row.slug)
        if act.id != act_id:
            _rename(act, act_id)
        yield LawVersion(act, day, row.member, row.message)
