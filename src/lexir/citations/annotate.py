"""The last stage of every legal order's citation pipeline: the text with its citations marked.

``annotate(text, citations)`` gives the text as HTML, every citation a ``<cite>`` element carrying
its canonical id (``data-id``) and, where ``href`` gives one, a link to the cited provision; the
rest of the text is escaped. The page and the API's ``/v1/cite?annotate`` show it; any order's
finder feeds it, since all return :class:`~lexir.citations.model.Citation` spans.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from lexir.citations.model import Citation


def annotate(text: str, citations: Sequence[Citation], href: Callable[[Citation], str | None] | None = None) -> str:
    """``text`` as HTML with each citation in a ``<cite>`` (``data-id`` its id, ``data-unit`` the
    cited unit, ``class="unresolved"`` when its act or article is unknown), a link inside it where
    ``href(citation)`` gives one. Spans that overlap an earlier one are left unmarked."""
    out: list[str] = []
    at = 0
    for c in sorted(citations, key=lambda c: (c.start, -c.end)):
        if c.start < at or not 0 <= c.start < c.end <= len(text):
            continue
        out.append(escape(text[at:c.start], quote=False))
        shown = escape(text[c.start:c.end], quote=False)
        link = href(c) if href is not None and c.unit_id else None
        if link:
            shown = f'<a href="{escape(link)}">{shown}</a>'
        attributes = (f' data-id="{escape(c.id)}" data-unit="{escape(c.unit_id or c.id)}"' if c.id
                      else ' class="unresolved"')
        out.append(f"<cite{attributes}>{shown}</cite>")
        at = c.end
    out.append(escape(text[at:], quote=False))
    return "".join(out)
