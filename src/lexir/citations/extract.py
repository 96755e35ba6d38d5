"""One entry point for every legal order: ``find_citations(text, jurisdiction)`` and the JSON lines
of ``lexir cite [--jurisdiction CODE] [FILE]`` (one ``Citation.to_json()`` a line).

The finders live in the orders' folders (``lexir.jurisdictions.<code>.citations``); this module
finds them through the registry (:mod:`lexir.jurisdiction`) and never names one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from lexir.citations.model import Citation
from lexir.jurisdiction import get_jurisdiction, jurisdictions


def citation_codes() -> list[str]:
    """The codes of the legal orders that have a citation finder."""
    return [j.code for j in jurisdictions() if j.find_citations is not None]


def find_citations(text: str, jurisdiction: str, **kw) -> list[Citation]:
    """The citations of ``text`` by the finder of the legal order ``jurisdiction`` (``de``, ``pl``, ...).

    Every order's finder has one signature, ``find_citations(text, known=None, default_act=None, *,
    kinds=("statute",))``: ``known`` maps source ids to the corpus's article labels, ``default_act``
    is the act of references that name none, ``kinds`` the kinds of citation kept (None: all; only
    German finds other kinds than ``statute``). Most also take ``expand_ranges``.
    """
    order = get_jurisdiction(jurisdiction)
    if order.find_citations is None:
        raise ValueError(f"no citation finder for jurisdiction {jurisdiction!r}; valid: {', '.join(citation_codes())}")
    return order.find_citations(text, **kw)


def cite_lines(text: str, jurisdiction: str, **kw) -> Iterator[str]:
    """One JSON line (no newline) per citation of ``text``."""
    for citation in find_citations(text, jurisdiction, **kw):
        yield json.dumps(citation.to_json(), ensure_ascii=False)
