"""Acts packed into a few flat lists, to move them between processes and keep them on disk.

A parsed German corpus is about a million :class:`~lexir.types.Provision` objects whose texts
repeat each other: a Satz's text is a piece of its Absatz's text, which is a piece of its
article's. Pickled as objects that is 430 MB and takes longer to unpickle than to parse. Packed,
each act keeps its articles' texts once and every unit below an article is a slice of its
article's text (start, end), with its level (a number into a table), label and parent; ids are
not stored when they follow the scheme (``ACT::label``, ``parent/level:label``), which they do
for every unit lexir's parsers make. Anything that does not fit (a text that is not a slice, an
id off the scheme) is stored as it is, so packing never changes an act:
``unpack_act(pack_act(act)) == act`` always.
"""

from __future__ import annotations

import gc
import os
from array import array
from collections.abc import Iterator
from contextlib import contextmanager

from lexir.types import ID_SEP, PATH_SEP, Act, Division, Provision

FORMAT_VERSION = 2  # 2: the act's divisions (Buch, Abschnitt, ...) as the last item

# (id, title, language, strings, level names, parent, level, source, start, end, labels, titles,
#  ids that are off the scheme {unit number: id}, divisions as nested tuples)
Packed = tuple


def pack_act(act: Act) -> Packed:
    """``act`` as plain lists and arrays (see the module docstring); pickles fast and small."""
    strings: list[str] = []
    level_names: dict[str, int] = {}
    parent = array("i")
    level = array("b")
    source = array("i")
    start = array("i")
    end = array("i")
    labels: list[str] = []
    titles: list[str] = []
    odd_ids: dict[int, str] = {}

    def add(unit: Provision, up: int, up_id: str, base: int, base_text: str, lo: int) -> int:
        """Append ``unit``; its text is looked up in ``base_text`` from offset ``lo``."""
        me = len(labels)
        expected = f"{act.id}{ID_SEP}{unit.label}" if up < 0 else f"{up_id}{PATH_SEP}{unit.level}:{unit.label}"
        if unit.id != expected:
            odd_ids[me] = unit.id
        parent.append(up)
        level.append(level_names.setdefault(unit.level, len(level_names)))
        labels.append(unit.label)
        titles.append(unit.title)
        at = base_text.find(unit.text, lo) if base >= 0 else -1
        if at < 0 and base >= 0:
            at = base_text.find(unit.text)
        if at < 0:  # an article, or a text that is not a piece of its article's text
            source.append(len(strings))
            strings.append(unit.text)
            start.append(0)
            end.append(len(unit.text))
        else:
            source.append(base)
            start.append(at)
            end.append(at + len(unit.text))
        return me

    def walk(unit: Provision, me: int, base: int, base_text: str) -> None:
        lo = start[me] if source[me] == base else 0
        for child in unit.children:
            number = add(child, me, unit.id, base, base_text, lo)
            if source[number] == base:
                lo = end[number]
            walk(child, number, base, base_text)

    for article in act.articles:
        me = add(article, -1, "", -1, "", 0)
        walk(article, me, source[me], article.text)
    if len(level_names) > 127:
        raise ValueError(f"act {act.id}: more than 127 unit levels cannot be packed")
    return (act.id, act.title, act.language, strings, list(level_names), parent, level, source, start, end,
            labels, titles, odd_ids, [_pack_division(d) for d in act.divisions])


def _pack_division(d: Division) -> tuple:
    return (d.id, d.level, d.label, d.title, d.heading, list(d.articles), [_pack_division(c) for c in d.children])


def _unpack_division(t: tuple) -> Division:
    return Division(t[0], t[1], t[2], t[3], t[4], [_unpack_division(c) for c in t[6]], list(t[5]))


def unpack_act(packed: Packed) -> Act:
    """The :class:`Act` that :func:`pack_act` packed."""
    (act_id, title, language, strings, level_names, parent, level, source, start, end,
     labels, titles, odd_ids, divisions) = packed
    nodes: list[Provision] = []
    articles: list[Provision] = []
    append = nodes.append
    head = f"{act_id}{ID_SEP}"
    for up, lv, src, lo, hi, label, unit_title in zip(parent.tolist(), level.tolist(), source.tolist(),
                                                       start.tolist(), end.tolist(), labels, titles,
                                                       strict=True):
        name = level_names[lv]
        text = strings[src][lo:hi]
        if up < 0:
            node = Provision(head + label, name, label, text, unit_title, [])
            articles.append(node)
        else:
            above = nodes[up]
            node = Provision(f"{above.id}{PATH_SEP}{name}:{label}", name, label, text, unit_title, [])
            above.children.append(node)
        if odd_ids and len(nodes) in odd_ids:
            node.id = odd_ids[len(nodes)]  # before its children take their ids from it
        append(node)
    return Act(act_id, title, language, articles, [_unpack_division(d) for d in divisions])


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cycle collector off while a million acyclic objects are made, then as it was.

    Each full collection walks every object alive, and building a corpus triggers one after
    every quarter more objects: a third of the parse time of the German corpus. Provision
    trees hold no reference cycles, so nothing is left for the collector to free.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def available_cpus() -> int:
    """CPUs this process may run on (a container's or taskset's limit, not the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


