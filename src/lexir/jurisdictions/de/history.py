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
"""

from __future__ import annotations

import csv
import re
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
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

    A member that fails to parse is yielded as a :class:`ParseError`; a row without its member
    (or a member without its row) is one too, never silently skipped.
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
    for row in rows:
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
        yield LawVersion(act, row.date, row.member, row.message)
