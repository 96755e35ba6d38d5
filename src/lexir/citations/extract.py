"""One entry point for all languages: ``find_citations(text, lang)`` and the JSON lines of
``lexir cite [--lang de|pl|el] [FILE]`` (one ``Citation.to_json()`` a line)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from lexir.citations.model import Citation

LANGUAGES = ("de", "el", "pl")


def _finder(lang: str) -> Callable[..., list[Citation]]:
    if lang == "de":
        from lexir.citations.german import find_citations
    elif lang == "el":
        from lexir.citations.greek import find_citations
    elif lang == "pl":
        from lexir.citations.polish import find_citations
    else:
        raise ValueError(f"no citation finder for language {lang!r}; valid: {', '.join(LANGUAGES)}")
    return find_citations


def find_citations(text: str, lang: str, **kw) -> list[Citation]:
    """The citations of ``text`` by the finder of ``lang`` (``de``, ``el``, ``pl``).

    Every language's finder has one signature, ``find_citations(text, known=None,
    default_act=None, *, kinds=("statute",))``: ``known`` maps source ids to the corpus's article
    labels, ``default_act`` is the act of references that name none, ``kinds`` the kinds of
    citation kept (None: all; only German finds other kinds than ``statute``). German and Greek
    also take ``expand_ranges`` (Polish ranges always give their two ends).
    """
    return _finder(lang)(text, **kw)


def cite_lines(text: str, lang: str, **kw) -> Iterator[str]:
    """One JSON line (no newline) per citation of ``text``."""
    for citation in find_citations(text, lang, **kw):
        yield json.dumps(citation.to_json(), ensure_ascii=False)
