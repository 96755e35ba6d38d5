"""Four French codes through time (legalize-fr's git history) as a lexir :class:`StatuteHistory`.

Input: ``history.tar.xz`` (members ``history/<LEGITEXT>/<Source-Date>_<commit8>.md``, every version
of the Code civil, pénal, de procédure civile and de la consommation, oldest first in git order)
and ``versions.tsv`` (one row per commit: ``identifier, title, source_date, commit, …, subject, …,
format, member``). Each version is parsed by :func:`lexir.jurisdictions.fr.statutes.parse_code`
(old versions are in the plain format, later ones in headings: one parser reads both), and the
versions go to :meth:`lexir.structure.history.StatuteHistory.build` as German histories do.

The data's oddities (its README) and what is done with them:

1. Each code's first commit (``[bootstrap] …``) is a dump of every article version ever, not
   the text of its date: skipped (the Code de la consommation's bootstrap blob is absent anyway).
2. Dates are ``source_date`` (the trailer ``Source-Date``, when the version takes effect), never
   the git date (1970-01-02 for every version before 1970).
3. Several versions on one day: the last in git order counts (only it is parsed).
4. A version dated after a version committed later (Code civil 2026-12-31, 063bf951, creating
   art. 427-1, committed before the 2026-03-25 regeneration that drops it again) is superseded by
   the later commits: skipped and listed in :attr:`FrenchHistory.skipped`, so the latest text is
   the snapshot's, not a 2026-01-01 text plus one article.

A version that fails to parse is kept in ``history.parse_errors`` (file, line, message). With the
whole archive there is one: the Code pénal's 1990-09-01 ded32656, the second commit, holds only
structure lines and no article (``article_lines`` 0 in ``versions.tsv``), which
:func:`~lexir.jurisdictions.fr.statutes.parse_code` reports as a file with no article; the
history loses nothing by it (the Code pénal starts with its next version).

Parsing the 822 kept versions (about 30 s on one core, 200 MB) takes a while, so the built history is cached under
``cache_dir()/history`` as a pickle keyed by the sha256 of both input files, the codes chosen and
:data:`HISTORY_FORMAT`, written to a side file and renamed into place (as
:mod:`lexir.jurisdictions.de.history_dataset` does). To keep memory low, an article whose text is unchanged from
the previous version of its code reuses that version's :class:`~lexir.types.Provision` tree.
"""

from __future__ import annotations

import csv
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lexir.jurisdictions.fr.statutes import CodeSyntaxError, code_table, parse_code, source_of
from lexir.structure.history import LawVersion, StatuteHistory, cached_history, gc_paused
from lexir.structure.parsing import ParseError

NAME = "fr-codes-history"
# Bump when parsing or version building changes what a history holds.
HISTORY_FORMAT = 2  # 2: the history carries its jurisdiction


@dataclass(frozen=True)
class VersionRow:
    """One row of ``versions.tsv``."""

    identifier: str
    source_date: str
    commit: str
    subject: str
    member: str
    line: int  # 1-based line in versions.tsv

    @property
    def bootstrap(self) -> bool:
        return self.subject.startswith("[bootstrap]")


def read_versions(path: str | Path) -> list[VersionRow]:
    """Rows of ``versions.tsv`` in file (git) order; a malformed row is an error naming file and line."""
    path = Path(path)
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None) or []
        need = ("identifier", "source_date", "commit", "subject", "member")
        if any(name not in header for name in need):
            raise ValueError(f"{path}:1: expected columns {', '.join(need)}; got {header}")
        col = {name: header.index(name) for name in need}
        rows = []
        for line, cells in enumerate(reader, 2):
            if not cells:
                continue
            if len(cells) < len(header):
                raise ValueError(f"{path}:{line}: {len(cells)} cells, expected {len(header)}")
            rows.append(VersionRow(*(cells[col[name]] for name in need), line))
    return rows


@dataclass(frozen=True)
class Selection:
    """Which rows become law versions, and why the others do not."""

    kept: list[VersionRow]
    skipped: list[tuple[VersionRow, str]]


def select_versions(rows: list[VersionRow]) -> Selection:
    """The rows to parse: no bootstrap, no version superseded by a later commit dated earlier,
    one per code and day (the last in git order)."""
    kept: list[VersionRow] = []
    skipped: list[tuple[VersionRow, str]] = []
    by_code: dict[str, list[VersionRow]] = {}
    for row in rows:
        by_code.setdefault(row.identifier, []).append(row)
    for code_rows in by_code.values():
        later_min = ["9999-12-31"] * (len(code_rows) + 1)
        for i in range(len(code_rows) - 1, -1, -1):
            later_min[i] = min(later_min[i + 1], code_rows[i].source_date)
        last_of_day: dict[str, VersionRow] = {}
        for i, row in enumerate(code_rows):
            if row.bootstrap:
                skipped.append((row, "bootstrap: a dump of every article version ever"))
            elif row.source_date > later_min[i + 1]:
                skipped.append((row, f"dated {row.source_date}, superseded by later commits dated {later_min[i + 1]}"))
            else:
                if row.source_date in last_of_day:
                    skipped.append((last_of_day[row.source_date], "an earlier commit of the same day"))
                last_of_day[row.source_date] = row
        kept.extend(last_of_day.values())
    order = {id(row): n for n, row in enumerate(rows)}
    kept.sort(key=lambda r: order[id(r)])
    return Selection(kept, skipped)


def _wanted_identifiers(codes: Iterable[str] | None, rows: list[VersionRow], versions_tsv: str | Path) -> set[str] | None:
    if codes is None:
        return None
    known = {row.identifier for row in rows}
    by_source = {e.source: e.identifier for e in code_table()}
    wanted = {by_source.get(code, code) for code in codes}
    unknown = wanted - known
    if unknown:
        raise ValueError(f"{versions_tsv}: no versions of {', '.join(sorted(unknown))}")
    return wanted


def iter_french_versions(tar_path: str | Path, versions_tsv: str | Path, codes: Iterable[str] | None = None,
                         selection: Selection | None = None) -> Iterator[LawVersion | ParseError]:
    """The kept versions (see :func:`select_versions`) parsed, in archive order; only ``codes``
    (source ids ``Cciv`` or LEGITEXT identifiers) when given. A member that fails, or a kept row
    without its member, is a :class:`ParseError`, never dropped silently."""
    rows = read_versions(versions_tsv)
    wanted = _wanted_identifiers(codes, rows, versions_tsv)
    if wanted is not None:
        rows = [row for row in rows if row.identifier in wanted]
    selection = selection or select_versions(rows)
    by_member = {row.member: row for row in selection.kept if row.member}
    for row in selection.kept:
        if not row.member:
            yield ParseError(str(versions_tsv), row.line, f"no archive member for commit {row.commit[:8]}")
    seen: set[str] = set()
    built: dict[str, dict] = {}  # code -> (label, body) -> article: one tree per text, shared by versions
    with tarfile.open(tar_path, "r:*") as tar:
        for member in tar:
            name = member.name.removeprefix("./")
            row = by_member.get(name)
            if row is None or not member.isfile():
                continue
            handle = tar.extractfile(member)
            if handle is None:
                yield ParseError(name, 0, "unreadable archive member")
                continue
            seen.add(name)
            try:
                parsed = parse_code(handle.read().decode("utf-8"), name, source=source_of(row.identifier),
                                    built=built.setdefault(row.identifier, {}))
            except CodeSyntaxError as exc:
                yield exc.error
                continue
            except UnicodeDecodeError as exc:
                yield ParseError(name, 0, f"not UTF-8: {exc}")
                continue
            yield from parsed.problems
            act = parsed.act
            act.divisions = []  # the history keeps articles; divisions are read from today's codes
            yield LawVersion(act, row.source_date, name, row.subject)
    for name in sorted(set(by_member) - seen):
        row = by_member[name]
        yield ParseError(str(versions_tsv), row.line, f"no archive member {name} for this row")


class FrenchHistory(StatuteHistory):
    """A :class:`StatuteHistory` that also says which commits were left out and why."""

    skipped: tuple[tuple[str, str, str], ...] = ()  # (member or commit, source_date, reason)


def load_french_history(tar_path: str | Path, versions_tsv: str | Path, codes: Iterable[str] | None = None,
                        name: str = NAME, cache: bool = True) -> StatuteHistory:
    """The history of the codes of ``history.tar.xz`` (only ``codes``, e.g. ``{"Cciv"}``, when given),
    from the cache when it was built before (module doc)."""
    chosen = ",".join(sorted(codes)) if codes is not None else "*"

    def build() -> StatuteHistory:
        rows = read_versions(versions_tsv)
        wanted = _wanted_identifiers(codes, rows, versions_tsv)
        if wanted is not None:
            rows = [row for row in rows if row.identifier in wanted]
        selection = select_versions(rows)
        laws, errors = [], []
        with gc_paused():
            for result in iter_french_versions(tar_path, versions_tsv, codes, selection):
                (errors if isinstance(result, ParseError) else laws).append(result)
        history = FrenchHistory.build(name, "fr", laws, jurisdiction="fr")
        history.parse_errors = tuple(errors)
        history.skipped = tuple((row.member or row.commit, row.source_date, why) for row, why in selection.skipped)
        return history

    return cached_history(name, (tar_path, versions_tsv), f"{HISTORY_FORMAT}\0{chosen}", build, cache)
