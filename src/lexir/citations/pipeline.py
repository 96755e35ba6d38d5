"""The one citation pipeline every legal order's finder runs: tokenise -> group -> resolve, then
:func:`lexir.citations.annotate.annotate` marks the result in the text.

A legal order brings a :class:`Profile`: its tables (in its folder's ``data/``) and the hooks below;
this module knows no language. Each stage works on typed values:

tokenise
    ``profile.scan(text)``: what the order reads once per text (a folded copy of it, the act
    designations it names, the acts named so far by line). The text has its no-break and thin
    spaces read as spaces first (reported as written).
group
    ``profile.groups(text, scan, found)``: the citation groups of the text, in order, each a
    :class:`Group` of :class:`Ref` s: a reference to one article (and units below it), the act
    written after it (``has_act``; ``own_act`` when right after it), a range's inside
    (``between``, see :func:`with_ranges`), or an act that names the text being read (``self_ref``:
    ``du présent code``, ``του παρόντος``) or the one named before (``same_act``: ``du même
    code``). :func:`read_units` is the shared reader of the units below an article, given the
    order's ``unit_at`` hook. A group is resolved before the next one is read, so a hook that
    looks back (``context_act``) sees the citations found before it in ``found``.
resolve
    :func:`resolve`: an act written after a reference applies to the references of the group
    since the previous act (``explicit`` for the one it follows, ``group`` for the others); a
    reference after the group's last act takes the act before it (``profile.fits`` says whether
    that act can hold it); then the act written before the keyword (``Group.prefix``), else
    ``default_act``, else ``profile.context_act``. Ranges expand with ``profile.between``; a
    further unit of the article before (``Ref.via``: ``join`` or ``range``) joins its citation
    (``Citation.also``). ``profile.label`` gives the corpus's label of an article,
    ``profile.decorate`` the fields an order adds (``repealed``, ``instrument``),
    ``profile.extra`` the citations found outside groups (a unit written alone, a law named
    without an article).

:func:`find` runs the stages and renames path levels (``profile.path_keys``), keeps the kinds
asked for and sorts by span.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from lexir.citations.model import Citation, article_id

KnownArticles = Mapping[str, Collection[str]]
ActFound = tuple[str | None, str, str]  # (source, as written, kind)

MAX_RANGE = 200  # a numeric range expands when its ends lie at most this far apart


@dataclass
class Ref:
    """A typed token of the group stage: one reference to an article (and units below it)."""

    start: int
    end: int
    article: str
    path: dict[str, str]
    level: str = "article"  # the deepest level written, which a bare label after a conjunction continues
    plural: bool = False  # read after a plural keyword ("§§", "articles")
    source: str | None = None
    act_raw: str = ""
    has_act: bool = False  # an act designation applies to it
    own_act: bool = False  # the act designation is written right after this reference
    keyword: str = ""  # how the reference names its article ("§", "Art"), for profile.fits and label
    kind: str = "statute"
    between: bool = False  # stands for the numbers inside a range
    range_first: str = ""
    range_last: str = ""
    via: str = ""  # how a further unit of the article before joins it: "join" (und, ","), "range", "chain"
    self_ref: bool = False  # its act is the text being read: default_act
    same_act: bool = False  # its act is the one named before it: profile.context_act
    origin: str | None = None  # how the group stage found its act, when it says ("prefix")
    following: bool = False  # "§§ 1 ff.", "et suivants"
    instrument: str | None = None


@dataclass
class Group:
    """References read together, with what the group as a whole says."""

    start: int
    end: int
    refs: list[Ref]
    kind: str | None = None  # the kind of every citation of the group ("collection", "commentary", "bill")
    prefix: tuple[int, str, str] | None = None  # an act written before the keyword: (start, source, as written)


class Profile:
    """The hooks a legal order gives the pipeline (see the module doc); the defaults read nothing
    outside groups, resolve no context, keep labels as written and expand numeric ranges."""

    path_keys: tuple[tuple[str, str | None], ...] = ()

    def scan(self, text: str) -> Any:
        return None

    def groups(self, text: str, scan: Any, found: list[Citation]) -> Iterator[Group]:
        raise NotImplementedError

    def context_act(self, text: str, scan: Any, group: Group, ref: Ref, found: list[Citation]) -> ActFound | None:
        return None

    def fits(self, source: str | None, keyword: str) -> bool:
        return True

    def label(self, source: str, article: str, keyword: str, known: KnownArticles) -> str:
        return article

    def between(self, first: str, last: str, labels: Collection[str] | None) -> list[str] | None:
        return expand(first, last, labels)

    def decorate(self, source: str | None, act_raw: str, article: str | None, kind: str,
                 known: KnownArticles | None) -> dict[str, Any]:
        return {}

    def extra(self, text: str, scan: Any, found: list[Citation], groups: list[Group],
              known: KnownArticles | None, default_act: str | None) -> list[Citation]:
        return []


# ---------------------------------------------------------------------------
# shared stages


def skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def above(path: Mapping[str, str], level: str, depth: Mapping[str, int]) -> dict[str, str]:
    """The part of ``path`` above ``level``."""
    return {k: v for k, v in path.items() if depth[k] < depth[level]}


UnitAt = Callable[[str, int, str], "tuple[str | None, str, int] | None"]


def read_units(text: str, pos: int, path: Mapping[str, str], level: str, depth: Mapping[str, int],
               unit_at: UnitAt) -> tuple[int, dict[str, str], str]:
    """Read the units after ``pos`` (``Abs. 1 S. 2``, ``§ 2 pkt 1``, ``παρ. 2 περ. α``), each
    deeper than the one before: (end, path, deepest level). ``unit_at(text, pos, level)`` is the
    order's hook: (level, label, end) of the unit at or after ``pos``; level None for a unit read
    but left out of the path; None where no unit follows."""
    path = dict(path)
    while (hit := unit_at(text, pos, level)) is not None:
        kind, label, end = hit
        if kind is not None:
            if depth[kind] <= depth[level]:
                break
            path = above(path, kind, depth)
            path[kind] = label
            level = kind
        pos = end
    return pos, path, level


def expand(first: str, last: str, labels: Collection[str] | None) -> list[str] | None:
    """Labels strictly between two numeric range ends (only those in ``labels`` when given), or
    None when the range is not numeric or its ends lie more than :data:`MAX_RANGE` apart."""
    if not (first.isdigit() and last.isdigit()):
        return None
    a, b = int(first), int(last)
    if not 0 < b - a <= MAX_RANGE:
        return None
    between = [str(n) for n in range(a + 1, b)]
    if labels is not None:
        between = [n for n in between if n in labels]
    return between


def with_ranges(refs: list[Ref], ranges: list[tuple[int, int]]) -> list[Ref]:
    """``refs`` with a ``between`` reference after the first end of each range (indexes of its
    two ends), standing for the articles inside it."""
    if not ranges:
        return refs
    out: list[Ref] = []
    starts = dict(ranges)
    for i, ref in enumerate(refs):
        out.append(ref)
        j = starts.get(i)
        if j is not None:
            last = refs[j]
            out.append(Ref(ref.start, last.start, "", {}, plural=True, between=True,
                           range_first=ref.article, range_last=last.article))
    return out


def unit_range(first: Mapping[str, str], last: Mapping[str, str]) -> list[dict[str, str]]:
    """The units strictly between two ends of a unit range of one article (``Abs. 1 bis 4``:
    Absatz 2 and 3), when both ends differ in their deepest level only; else none."""
    if first.keys() != last.keys() or not first:
        return []
    level = list(first)[-1]  # paths are written from the top down
    if any(first[k] != last[k] for k in first if k != level):
        return []
    return [{**first, level: label} for label in expand(first[level], last[level], None) or []]


def _assign_acts(profile: Profile, text: str, scan: Any, group: Group, found: list[Citation],
                 default_act: str | None) -> dict[int, str | None]:
    """Give every reference of ``group`` its act; the resolved_from of each (by index)."""
    refs = group.refs
    origin: dict[int, str | None] = {}
    for i, ref in enumerate(refs):
        if ref.origin is not None:
            origin[i] = ref.origin
        elif ref.has_act and not (ref.self_ref or ref.same_act):
            origin[i] = "explicit" if ref.own_act else "group"
    # references with no act after them: the act before them in the group, else the prefix
    current = next((r for r in reversed(refs) if not r.between and r.has_act), None)
    fallback: Ref | None = None
    for i, ref in enumerate(refs):
        if ref.between:
            continue
        if ref.has_act:
            fallback = ref
        elif fallback is not None and profile.fits(fallback.source, ref.keyword):
            ref.source, ref.act_raw, ref.kind = fallback.source, fallback.act_raw, fallback.kind
            origin[i] = "group"
    if group.prefix is not None:
        start, source, raw = group.prefix
        for i, ref in enumerate(refs):
            if not ref.between and i not in origin:
                ref.source, ref.act_raw = source, raw
                origin[i] = "prefix"
        if current is None:
            refs[0].start = start  # the span takes the act in: "SGG § 184 Abs 1"
    for i, ref in enumerate(refs):
        if ref.between or i in origin or group.kind == "bill":
            continue
        if ref.self_ref:
            ref.source, origin[i] = default_act, ("default" if default_act else None)
        elif default_act and not ref.same_act:
            ref.source, origin[i] = default_act, "default"
        elif group.kind != "collection":
            ctx = profile.context_act(text, scan, group, ref, found)
            if ctx:
                source, raw, ref.kind = ctx
                ref.source, ref.act_raw = source, ref.act_raw if ref.same_act else raw  # "du même code" as written
                origin[i] = "context"
    return origin


def _range_end(refs: list[Ref], i: int) -> int:
    k = i + 1
    while refs[k].between:
        k += 1
    return k


def citation(profile: Profile, text: str, start: int, end: int, ref: Ref, article: str, path: Mapping[str, str],
             kind: str, resolved_from: str | None, known: KnownArticles | None) -> Citation:
    """The :class:`Citation` of ``text[start:end]`` naming ``article`` of ``ref``'s act."""
    extra = profile.decorate(ref.source, ref.act_raw, article, kind, known)
    if ref.instrument is not None:
        extra["instrument"] = ref.instrument
    return Citation(start=start, end=end, text=text[start:end], act=ref.source, act_raw=ref.act_raw,
                    article=article, path=dict(path), id=article_id(ref.source, article), kind=kind,
                    resolved_from=resolved_from if (ref.source or ref.act_raw) else None,
                    following=ref.following, **extra)


def resolve(profile: Profile, text: str, scan: Any, group: Group, found: list[Citation],
            known: KnownArticles | None, default_act: str | None, expand_ranges: bool) -> list[Citation]:
    """The citations of one group (see the module doc); ``found``: those of the groups before."""
    refs = group.refs
    origin = _assign_acts(profile, text, scan, group, found, default_act)
    out: list[Citation] = []
    last_ref = -2  # the reference that gave out[-1]
    for i, ref in enumerate(refs):
        kind = group.kind or ref.kind
        if ref.between:
            if not expand_ranges:
                continue
            j = _range_end(refs, i)
            end_ref = refs[j]
            source = end_ref.source
            labels = known.get(source) if known is not None and source else None
            for label in profile.between(ref.range_first, ref.range_last, labels) or []:
                out.append(citation(profile, text, refs[i - 1].start, end_ref.end, end_ref, label, {},
                                    group.kind or end_ref.kind, origin.get(j), known))
            continue
        article = ref.article
        if known is not None and ref.source:
            article = profile.label(ref.source, article, ref.keyword, known)
        prev = out[-1] if last_ref == i - 1 and out else None
        if (prev is not None and ref.via in ("join", "range") and prev.article == article
                and prev.act == ref.source and prev.act_raw == ref.act_raw and prev.kind == kind):
            # "Satz 1 und 4", "Nr. 3 a) und b)", "Abs. 3 Nr. 1 und Abs. 2": units of one citation
            also = [*prev.also]
            if ref.via == "range" and expand_ranges:
                also += unit_range(prev.paths[-1], ref.path)
            also.append(dict(ref.path))
            resolved = origin.get(i) if origin.get(i) == "explicit" else prev.resolved_from
            out[-1] = replace(prev, end=ref.end, text=text[prev.start : ref.end], also=tuple(also),
                              resolved_from=resolved)
        else:
            out.append(citation(profile, text, ref.start, ref.end, ref, article, ref.path, kind, origin.get(i), known))
        last_ref = i
    return out


_SPACES = re.compile("[\xa0\u2007\u2009\u200a\u202f]")  # no-break, figure, thin, hair, narrow no-break


def find(profile: Profile, text: str, known: KnownArticles | None = None, default_act: str | None = None, *,
         expand_ranges: bool = True, kinds: Collection[str] | None = ("statute",)) -> list[Citation]:
    """The citations ``profile`` reads in ``text``, in order of their spans (the module doc; the
    arguments are those of every finder, :func:`lexir.citations.extract.find_citations`)."""
    # court texts put no-break and thin spaces inside citations ("§\xa0108\xa0FGO"): matched as
    # spaces, reported as written
    work = _SPACES.sub(" ", text) if _SPACES.search(text) else text
    scan = profile.scan(work)
    found: list[Citation] = []
    groups: list[Group] = []
    for group in profile.groups(work, scan, found):
        groups.append(group)
        found += resolve(profile, work, scan, group, found, known, default_act, expand_ranges)
    found += profile.extra(work, scan, found, groups, known, default_act)
    if work is not text:
        found = [replace(c, text=text[c.start : c.end]) for c in found]
    if profile.path_keys:
        keys = dict(profile.path_keys)
        found = [replace(c, path=renamed(c.path, keys), also=tuple(renamed(a, keys) for a in c.also)) for c in found]
    if kinds is not None:
        found = [c for c in found if c.kind in kinds]
    return sorted(found, key=lambda c: (c.start, c.end))


def renamed(path: Mapping[str, str], keys: Mapping[str, str | None]) -> dict[str, str]:
    """``path`` with its levels named as a profile's ``path_keys`` say (None: left out)."""
    return {keys.get(k, k): v for k, v in path.items() if keys.get(k, k) is not None}


__all__ = ["Group", "MAX_RANGE", "Profile", "Ref", "above", "citation", "expand", "find", "read_units", "renamed",
           "resolve", "skip_space", "unit_range", "with_ranges"]
