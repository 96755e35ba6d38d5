"""Statutes through time: every provision's versions, and the corpus in force on a date.

A history is built from successive versions of whole laws (a repository's commits). Each
provision (an article and every unit below it) gets a list of :class:`ProvisionVersion`:

* a version starts at the date of the first law version whose text of that provision differs
  from the one before, compared after normalising formatting (all whitespace, Markdown escapes
  and ``*``/``*)`` footnote marks are ignored), so a law-level amendment that leaves a § as it
  was creates no new version of that §;
* a version ends (``valid_to``, exclusive) on the date the next version starts or the
  provision stops being in force; ``valid_to`` is ``None`` while it is in force in the latest
  law version;
* a provision that is absent, or whose text is only ``(weggefallen)`` / ``(aufgehoben)``, is
  not in force; it has no version for that time;
* so is a provision the legal order's ``pending`` test (an argument of
  :meth:`StatuteHistory.build`, from the order's folder) finds to stand in a law version only as
  a placeholder or a wording not yet in force (German ``(zukünftig in Kraft)``): it and its units
  are left out, and its text is taken out of the units above it (the rest of a § stays in force).

Ids stay those of the current corpus (``BGB::823``, ``BGB::823/abs:1``); a version is
addressed as ``BGB::823@2013-01-11``, its ``valid_from``. Dates are ISO dates (``YYYY-MM-DD``);
several law versions on one day count as that day's last.
"""

from __future__ import annotations

import bisect
import difflib
import hashlib
import os
import pickle
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import Path

from lexir.io.paths import cache_dir, file_sha256
from lexir.structure.packed import (
    gc_paused,  # also imported from here by lexir.jurisdictions.de.history_dataset
)
from lexir.types import Act, Corpus, Document, Provision, act_of, article_of

VERSION_SEP = "@"


class HistoryError(ValueError):
    """A date or id the history cannot answer: before the first version, not in force, unknown."""


@dataclass(frozen=True)
class ProvisionVersion:
    """One provision's text over one span of time."""

    id: str
    level: str
    title: str
    text: str
    valid_from: str  # ISO date, inclusive
    valid_to: str | None  # ISO date, exclusive; None: in force in the latest law version
    source: str = ""  # the law version (file) the text was read from

    @property
    def version(self) -> str:
        return f"{self.id}{VERSION_SEP}{self.valid_from}"

    def in_force(self, day: str) -> bool:
        return self.valid_from <= day and (self.valid_to is None or day < self.valid_to)


@dataclass
class LawVersion:
    """One version of a whole law, as parsed."""

    act: Act
    date: str
    source: str = ""
    message: str = ""


def parse_date(text: str) -> str:
    """``text`` as a canonical ISO date, or a :class:`HistoryError` saying what is wrong."""
    day = str(text).strip()
    try:  # YYYY-MM-DD only, as every other entry point reads it (fromisoformat also takes 20130601, 2013-W22-6)
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
            return Date.fromisoformat(day).isoformat()
    except ValueError:
        pass
    raise HistoryError(f"not a date: {text!r} (expected YYYY-MM-DD)")


# ---------------------------------------------------------------------------
# what counts as a change, and as not in force

_MARKER = re.compile(r"^(?:\(\d+[a-z]?\)|\d+[a-z]{0,2}\.|[a-z]{1,3}\))\s*")
_REPEALED = re.compile(r"^\(?\s*(?:weggefallen|aufgehoben)\s*\)?\.?$", re.IGNORECASE)
_REPEALED_TITLE = re.compile(r"\(\s*(?:weggefallen|aufgehoben)\s*\)\s*$", re.IGNORECASE)
_FORMATTING = re.compile(r"\\|\*\)|\*|\s+")


def normalised(text: str) -> str:
    """Text with formatting removed: no whitespace at all, no Markdown escapes or ``*`` marks.

    Removing every space (not only collapsing runs) also absorbs the repository's repairs of
    a missing space (``sind.Beiträge``), which are no change of the law.
    """
    return _FORMATTING.sub("", text)


def change_key(unit: Provision | ProvisionVersion, text: str | None = None) -> str:
    """What a change is judged by: title and text (``text`` instead of the unit's own where given),
    formatting ignored."""
    return f"{normalised(unit.title)}\0{normalised(unit.text if text is None else text)}"


def is_repealed(unit: Provision) -> bool:
    """``(weggefallen)`` / ``(aufgehoben)`` as the whole body (after any ``(1)``, ``1.``, ``a)``
    marker), or an empty body under a heading that says so (``§§ 3 bis 6 (weggefallen)``)."""
    if len(unit.text) > 40:  # "(3) (weggefallen)" and the like are short: most texts end here
        return False
    body = _MARKER.sub("", " ".join(unit.text.split()), count=1)
    if _REPEALED.match(body):
        return True
    return body in ("", "-", "–") and bool(_REPEALED_TITLE.search(unit.title) or _REPEALED.match(unit.title))


Pending = Callable[[Provision], bool]  # True: the unit is not yet in force in this law version


def _never(unit: Provision) -> bool:
    return False


def _out(unit: Provision, pending: Pending) -> bool:
    return is_repealed(unit) or pending(unit)


def in_force_units(article: Provision, pending: Pending = _never) -> Iterator[Provision]:
    """The article and its units, leaving out repealed and pending ones and everything below them."""
    if _out(article, pending):
        return
    yield article
    for child in article.children:
        yield from in_force_units(child, pending)


def _pending_texts(unit: Provision, pending: Pending) -> list[str]:
    """The texts of the topmost pending units below ``unit`` (none for most units)."""
    out: list[str] = []
    for child in unit.children:
        if pending(child):
            out.append(child.text)
        elif not is_repealed(child):
            out.extend(_pending_texts(child, pending))
    return out


def in_force_text(unit: Provision, pending: Pending = _never) -> str:
    """The unit's text without the text of pending units below it."""
    text = unit.text
    cut = False
    for part in _pending_texts(unit, pending):
        if part and part in text:
            text = text.replace(part, "", 1)
            cut = True
    return re.sub(r"\n{2,}", "\n", text).strip("\n") if cut else text


def _pruned(unit: Provision, pending: Pending = _never) -> Provision:
    """A copy of the unit's tree without repealed or pending units (what the as-of corpus shows)."""
    kids = [_pruned(c, pending) for c in unit.children if not _out(c, pending)]
    return Provision(unit.id, unit.level, unit.label, in_force_text(unit, pending), unit.title, kids)


# ---------------------------------------------------------------------------
# the history


@dataclass
class _Law:
    id: str
    dates: list[str] = field(default_factory=list)  # version dates, ascending
    titles: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    articles: list[tuple[str, ...]] = field(default_factory=list)  # ids in force, in order, per date


class StatuteHistory:
    """Provision versions of a set of laws, and the corpus as of any date."""

    def __init__(self, name: str, language: str, laws: list[_Law], versions: dict[str, list[ProvisionVersion]],
                 trees: dict[str, Provision]) -> None:
        self.name = name
        self.language = language
        self.jurisdiction = ""
        self._laws = laws
        self._versions = versions
        self._trees = trees  # "<id>@<valid_from>" of an article version -> its tree (repealed units pruned)
        self.dates: list[str] = sorted({d for law in laws for d in law.dates})
        self._starts = {pid: [v.valid_from for v in vs] for pid, vs in versions.items()}
        self._as_of: dict[str, Corpus] = {}
        self._repealed: dict[str, str] = {}
        self._pending: dict[str, str] = {}  # article id -> first date, for one never in force
        self._changes: list[str] | None = None  # see change_points(); derived, computed once
        # Law versions that failed to parse (file, line, message): reported, never silently dropped.
        self.parse_errors: tuple = ()

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def build(cls, name: str, language: str, law_versions: Iterable[LawVersion],
              jurisdiction: str = "", pending: Pending | None = None) -> StatuteHistory:
        """Versions of every provision from law versions (any order; one day's last one counts);
        ``jurisdiction``: the legal order of the laws (their corpora carry it); ``pending(unit)``:
        True where a law version holds a unit only as a placeholder or a wording not yet in force
        (the order's folder knows how its texts say so); such a unit is not in force then."""
        with gc_paused():
            history = cls._build(name, language, law_versions, pending or _never)
        history.jurisdiction = jurisdiction
        return history

    @classmethod
    def _build(cls, name: str, language: str, law_versions: Iterable[LawVersion],
               pending: Pending = _never) -> StatuteHistory:
        by_law: dict[str, dict[str, LawVersion]] = {}
        for lv in law_versions:
            by_law.setdefault(lv.act.id, {})[parse_date(lv.date)] = lv  # later on the same day wins
        laws: list[_Law] = []
        versions: dict[str, list[ProvisionVersion]] = {}
        trees: dict[str, Provision] = {}
        repealed: dict[str, str] = {}  # article id -> first date it stood as "(weggefallen)"
        future: dict[str, str] = {}  # article id -> first date it stood only as pending
        for act_id, dated in by_law.items():
            law = _Law(act_id)
            # id -> (the open version's change key, computed when first needed; the version)
            open_: dict[str, list] = {}
            for day in sorted(dated):
                lv = dated[day]
                law.dates.append(day)
                law.titles.append(lv.act.title)
                law.sources.append(lv.source)
                law.messages.append(lv.message)
                order, seen = [], set()
                for article in lv.act.articles:
                    units = list(in_force_units(article, pending))
                    if not units:
                        if is_repealed(article):
                            repealed.setdefault(article.id, day)
                        else:
                            future.setdefault(article.id, day)
                        continue
                    order.append(article.id)
                    for unit in units:
                        seen.add(unit.id)
                        text = unit.text if pending is _never or not unit.children else in_force_text(unit, pending)
                        current = open_.get(unit.id)
                        if current is not None:
                            old = current[1]
                            if old.text == text and old.title == unit.title:
                                continue  # the common case, decided without normalising
                            if current[0] is None:
                                current[0] = change_key(old)
                            if current[0] == change_key(unit, text):
                                continue
                            _close(versions, old, day)
                        version = ProvisionVersion(unit.id, unit.level, unit.title, text, day, None, lv.source)
                        open_[unit.id] = [None, version]
                        if unit is article:
                            trees[version.version] = _pruned(article, pending)
                law.articles.append(tuple(order))
                for pid in [p for p in open_ if p not in seen]:
                    _close(versions, open_.pop(pid)[1], day)
            for _key, version in open_.values():
                versions.setdefault(version.id, []).append(version)
            laws.append(law)
        for vs in versions.values():
            vs.sort(key=lambda v: v.valid_from)
        history = cls(name, language, laws, versions, trees)
        history._repealed = repealed
        history._pending = {pid: day for pid, day in future.items() if pid not in versions}
        return history

    def copy(self) -> StatuteHistory:
        """The history is not changed after it is built: the registry may hand out itself."""
        return self

    # -- questions --------------------------------------------------------------------------

    @property
    def first(self) -> str:
        return self.dates[0]

    @property
    def latest(self) -> str:
        return self.dates[-1]

    @property
    def corpus(self) -> Corpus:
        """The corpus as of the latest version (what a name without ``--as-of`` means)."""
        return self.as_of(self.latest)

    def law_ids(self) -> list[str]:
        return [law.id for law in self._laws]

    def ids(self) -> list[str]:
        """Every provision id that was ever in force (articles and deeper units)."""
        return list(self._versions)

    def versions(self, pid: str) -> list[ProvisionVersion]:
        """All versions of a provision, oldest first (an unknown id is a HistoryError)."""
        self._known(pid)
        return list(self._versions[pid])

    def law_dates(self, act_id: str) -> list[str]:
        for law in self._laws:
            if law.id == act_id:
                return list(law.dates)
        raise HistoryError(f"no law {act_id!r} in {self.name}; laws: {', '.join(self.law_ids())}")

    def law_messages(self, act_id: str) -> dict[str, str]:
        """Version date -> what the source says that law version is (a commit message naming the
        amending act, for bundestag/gesetze); one day's last version counts."""
        for law in self._laws:
            if law.id == act_id:
                return dict(zip(law.dates, law.messages, strict=True))
        raise HistoryError(f"no law {act_id!r} in {self.name}; laws: {', '.join(self.law_ids())}")

    def check_date(self, day: str) -> str:
        day = parse_date(day)
        if day < self.first:
            raise HistoryError(f"no version on {day}; the first is {self.first}")
        return day

    def change_points(self) -> list[str]:
        """The dates on which the corpus in force changes, ascending (computed once).

        A date is one when a provision version starts or ends, or a law's title or order of
        articles differs from its previous version; a law version that changes neither (a
        formatting-only commit) is none. Between two change points the same provision versions
        are in force, so :meth:`as_of` gives the same corpus for every day of that interval.
        """
        if getattr(self, "_changes", None) is None:  # (a history pickled by older code lacks it)
            points: set[str] = set()
            for vs in self._versions.values():
                for v in vs:
                    points.add(v.valid_from)
                    if v.valid_to is not None:
                        points.add(v.valid_to)
            for law in self._laws:
                for i, day in enumerate(law.dates):
                    if i == 0 or law.titles[i] != law.titles[i - 1] or law.articles[i] != law.articles[i - 1]:
                        points.add(day)
            self._changes = sorted(points)
        return self._changes

    def interval(self, day: str) -> tuple[str, str | None]:
        """The interval of versions in force that holds ``day``: ``(start, end)``, ``end``
        exclusive (None: still in force in the latest version); found by bisection of the
        :meth:`change_points`. Every day of it has the corpus ``as_of(start)``."""
        day = self.check_date(day)
        points = self.change_points()
        i = bisect.bisect_right(points, day) - 1
        return points[i], points[i + 1] if i + 1 < len(points) else None

    def version(self, pid: str, day: str | None = None) -> ProvisionVersion:
        """The version of ``pid`` in force on ``day`` (default: the latest date), or a clear refusal."""
        day = self.latest if day is None else self.check_date(day)
        self._known(pid)
        versions = self._versions[pid]
        i = bisect.bisect_right(self._starts[pid], day) - 1
        if i >= 0 and versions[i].in_force(day):
            return versions[i]
        if i + 1 < len(versions):
            raise HistoryError(f"{pid} is not in force on {day}; in force from {versions[i + 1].valid_from}")
        last = versions[-1]
        raise HistoryError(f"{pid} is not in force on {day}; it was in force from {last.valid_from} "
                           f"until {last.valid_to} (repealed or removed then)")

    def lookup(self, ref: str) -> ProvisionVersion:
        """A version by its address ``ID@VALID_FROM`` (or the latest in force for a plain id)."""
        pid, sep, start = ref.partition(VERSION_SEP)
        if not sep:
            return self.version(pid)
        start = parse_date(start)
        self._known(pid)
        for v in self._versions[pid]:
            if v.valid_from == start:
                return v
        starts = ", ".join(v.valid_from for v in self._versions[pid])
        raise HistoryError(f"{pid} has no version starting {start}; its versions start {starts}")

    def _known(self, pid: str) -> None:
        if pid in self._versions:
            return
        if pid in self._repealed:
            raise HistoryError(f"{pid} is not in force on any date in {self.name}: it stands as "
                               f"(weggefallen) from {self._repealed[pid]} on")
        pending = getattr(self, "_pending", {})  # (a history pickled by older code lacks it)
        if pid in pending:
            raise HistoryError(f"{pid} is not in force on any date in {self.name}: from {pending[pid]} on "
                               "it stands only as not yet in force")
        act = act_of(pid)
        if act not in self.law_ids():
            near = difflib.get_close_matches(act, self.law_ids(), n=3, cutoff=0.5)
            hint = f"; nearest laws: {', '.join(near)}" if near else f"; laws: {', '.join(self.law_ids())}"
            raise HistoryError(f"unknown provision {pid!r}: no law {act!r} in {self.name}{hint}")
        prefix = article_of(pid) + "/" if "/" in pid else act + "::"
        pool = [p for p in self._versions if p.startswith(prefix) and ("/" in p) == ("/" in pid)]
        near = difflib.get_close_matches(pid, pool, n=5, cutoff=0.6)
        hint = f"; nearest: {', '.join(near)}" if near else ""
        raise HistoryError(f"unknown provision {pid!r} in {self.name}{hint}")

    # -- corpora ----------------------------------------------------------------------------

    def as_of(self, day: str) -> Corpus:
        """The articles in force on ``day`` (each law as its latest version on or before it)."""
        day = self.check_date(day)
        cached = self._as_of.get(day)
        if cached is not None:
            return cached
        docs, acts = [], []
        for law in self._laws:
            i = bisect.bisect_right(law.dates, day) - 1
            if i < 0:
                continue  # the law has no version yet on that day
            articles = []
            for pid in law.articles[i]:
                version = self.version(pid, day)
                tree = self._trees[version.version]
                articles.append(tree)
                docs.append(Document(pid, version.text, version.title))
            acts.append(Act(law.id, law.titles[i], self.language, articles))
        corpus = Corpus(f"{self.name}@{day}", docs, language=self.language, acts=acts,
                        jurisdiction=getattr(self, "jurisdiction", ""))
        if len(self._as_of) >= 8:
            self._as_of.pop(next(iter(self._as_of)))
        self._as_of[day] = corpus
        return corpus

    def changes(self, old: str, new: str) -> tuple[list[Document], list[str]]:
        """What turns the corpus as of ``old`` into the one as of ``new``: the documents to add
        or replace (new or changed text or title), and the ids to remove."""
        before = {d.id: d for d in self.as_of(old)}
        after = self.as_of(new)
        upserts = [d for d in after if before.get(d.id) != d]
        deletes = [pid for pid in before if pid not in after]
        return upserts, deletes

    def stats(self) -> dict[str, object]:
        counts = [len(vs) for vs in self._versions.values()]
        articles = [len(vs) for pid, vs in self._versions.items() if "/" not in pid]
        return {
            "laws": len(self._laws),
            "law_versions": sum(len(law.dates) for law in self._laws),
            "dates": len(self.dates),
            "first": self.first,
            "latest": self.latest,
            "provisions": len(counts),
            "provision_versions": sum(counts),
            "articles": len(articles),
            "article_versions": sum(articles),
            "articles_changed": sum(1 for n in articles if n > 1),
        }


def _close(versions: dict[str, list[ProvisionVersion]], version: ProvisionVersion, day: str) -> None:
    closed = ProvisionVersion(version.id, version.level, version.title, version.text, version.valid_from, day,
                              version.source)
    versions.setdefault(version.id, []).append(closed)


# ---------------------------------------------------------------------------
# word-level differences


def word_diff(old: str, new: str) -> str:
    """``old`` -> ``new`` word by word: removed words as ``[-…-]``, added ones as ``{+…+}``
    (the notation of ``git diff --word-diff``); line breaks are kept."""
    a, b = re.findall(r"\S+|\n", old), re.findall(r"\S+|\n", new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(a[i1:i2])
            continue
        if op in ("delete", "replace"):
            out.append("[-" + " ".join(w for w in a[i1:i2] if w != "\n") + "-]")
        if op in ("insert", "replace"):
            out.append("{+" + " ".join(w for w in b[j1:j2] if w != "\n") + "+}")
    text = " ".join(out)
    return re.sub(r" ?\n ?", "\n", text)


def cached_history(name: str, inputs: Sequence[str | Path], salt: str, build: Callable[[], StatuteHistory],
                   cache: bool = True) -> StatuteHistory:
    """The history ``build()`` makes, kept under the cache directory (``history/NAME-KEY.pickle``):
    the key is the sha256 of every input file and ``salt`` (the builder's format number, the laws
    chosen), so a changed file or builder never meets a stale copy. A damaged entry is rebuilt,
    never trusted; a new one is written whole to a temporary file, then renamed."""
    digest = hashlib.sha256(salt.encode())
    for path in inputs:
        digest.update(f"\0{file_sha256(path)}".encode())
    path = cache_dir() / "history" / f"{name}-{digest.hexdigest()[:20]}.pickle"
    if cache and path.is_file():
        try:
            with open(path, "rb") as fh, gc_paused():
                history = pickle.load(fh)
            if isinstance(history, StatuteHistory):
                return history
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            pass  # a damaged cache entry is rebuilt, not trusted
    history = build()
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.part")
        with open(tmp, "wb") as fh:
            pickle.dump(history, fh, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)
    return history
