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


def annotate(text: str, citations: Sequence[Citation], href: Callable[[Citation], str | None] | None = None,
             marks: Sequence[tuple[int, int]] = ()) -> str:
    """``text`` as HTML with each citation in a ``<cite>`` (``data-id`` its id, ``data-unit`` the
    cited unit, ``class="unresolved"`` when its act or article is unknown), a link inside it where
    ``href(citation)`` gives one. Spans that overlap an earlier one are left unmarked. ``marks``:
    sorted, disjoint (start, end) spans (the words a question matched) put in ``<mark>``, inside a
    citation too."""
    out: list[str] = []
    at = 0
    marked = _Marker(text, marks)
    for c in sorted(citations, key=lambda c: (c.start, -c.end)):
        if c.start < at or not 0 <= c.start < c.end <= len(text):
            continue
        out.append(marked(at, c.start))
        shown = marked(c.start, c.end)
        link = href(c) if href is not None and c.unit_id else None
        if link:
            shown = f'<a href="{escape(link)}">{shown}</a>'
        attributes = (f' data-id="{escape(c.id)}" data-unit="{escape(c.unit_id or c.id)}"' if c.id
                      else ' class="unresolved"')
        out.append(f"<cite{attributes}>{shown}</cite>")
        at = c.end
    out.append(marked(at, len(text)))
    return "".join(out)


class _Marker:
    """``text[start:end]`` escaped, the parts of it that ``marks`` cover in ``<mark>``."""

    def __init__(self, text: str, marks: Sequence[tuple[int, int]]) -> None:
        self.text, self.marks, self.next = text, list(marks), 0

    def __call__(self, start: int, end: int) -> str:
        out, pos = [], start
        while self.next < len(self.marks) and self.marks[self.next][1] <= start:
            self.next += 1  # spans left behind (inside an overlapping citation that was skipped)
        i = self.next
        while i < len(self.marks) and self.marks[i][0] < end:
            s, e = max(self.marks[i][0], pos), min(self.marks[i][1], end)
            if s < e:
                out += (escape(self.text[pos:s], quote=False), "<mark>", escape(self.text[s:e], quote=False), "</mark>")
                pos = e
            i += 1
        out.append(escape(self.text[pos:end], quote=False))
        return "".join(out)
