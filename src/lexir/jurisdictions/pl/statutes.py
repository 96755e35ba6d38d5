"""Split Polish code articles into paragraphs (§), items (pkt) and letters (lit).

Polish codes number an article's paragraphs ``§ 1.``, ``§ 2.``, ``§ 2a.``, ``§ 2^1.``;
items ``1)``, ``2a)``, ``7^1)`` inside an article or a paragraph; letters ``a)`` inside
an item. A list may end with closing words introduced by a dash (``– podlega karze…``),
which belong to the unit holding the list.

A line of cleaned text that merely starts like a unit (``… o którym mowa w art. 122c``
/ ``§ 1.``) is told apart from a real unit start by numbering: a list starts at 1 (or
``a``) and every next label continues it. Unit texts are verbatim slices of the cleaned
article text, markers included, so a child's text is always found in its parent's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lexir.structure.text import clean_pdf_text
from lexir.types import Act, Provision, canonical_id

_LABEL = r"\d+[a-ząćęłńóśźż]*(?:\^\d+[a-z]*)?"
_MARKERS = {
    "par": re.compile(rf"§\s*({_LABEL})\.(?:\s|$)"),
    "pkt": re.compile(rf"({_LABEL})\)(?:\s|$)"),
    "lit": re.compile(r"([a-z]{1,3})\)(?:\s|$)"),
}
_DEPTH = {"article": 0, "par": 1, "pkt": 2, "lit": 3}
_CLOSING = re.compile(r"[–—-]\s")
# Stubs left where a unit was repealed or struck down by the Constitutional Tribunal.
_STUB = re.compile(r"\((?:uchylon[ya]|uchylone|utraci(?:ł|ła|ło|ły) moc|pominięt[ya])\)\.?")
# Chapter headings that the extraction glued to the end of the preceding article sit
# far to the right of the body text (which is indented at most 16 columns).
_HEADING_INDENT = 20


@dataclass
class _Node:
    level: str
    label: str
    start: int  # first line
    end: int = 0  # one past the last line, children included
    children: list[_Node] = field(default_factory=list)
    parent: _Node | None = None
    closed: bool = False  # a dash line ended this node's list of children


def _key(label: str) -> tuple[int, str]:
    digits = re.match(r"\d+", label)
    if digits:
        return int(digits.group()), label[digits.end() :]
    return ord(label[0]) - ord("a") + 1, label[1:]


def _continues(before: list[str], label: str) -> bool:
    """Whether ``label`` can follow the labels ``before`` it in one list."""
    num, rest = _key(label)
    if not before:
        return num == 1 and not rest
    pnum, _ = _key(before[-1])
    if num == pnum:
        # 2 -> 2a -> 2aa -> 2b, or 2 -> 2^1: inserted units keep their base number
        return bool(rest) and label not in before
    # letters may skip one (lists of letters leave out some of the alphabet)
    step = 2 if label[0].isalpha() else 1
    return pnum < num <= pnum + step


def _drop_trailing_headings(text: str) -> str:
    lines = text.split("\n")
    while len(lines) > 1:
        last = lines[-1]
        indent = len(last) - len(last.lstrip(" "))
        if last.strip() and indent < _HEADING_INDENT:
            break
        lines.pop()
    return "\n".join(lines)


def _split(lines_in: list[str]) -> tuple[list[str], _Node]:
    """Group cleaned lines into unit lines and build the unit tree over them."""
    root = _Node("article", "", 0)
    lines: list[str] = []
    current = root  # the unit that the next continuation line belongs to

    def add(node: _Node, parent: _Node) -> None:
        node.parent = parent
        parent.children.append(node)

    for raw in lines_in:
        placed = False
        if lines:
            for level in ("par", "pkt", "lit"):
                match = _MARKERS[level].match(raw)
                if not match:
                    continue
                parent = _parent_for(level, current, root)
                if level == "par" and parent is None and _implies_first_par(match.group(1), lines):
                    parent = _wrap_in_first_par(root)
                if parent is None or parent.closed:
                    continue
                siblings = [c.label for c in parent.children if c.level == level]
                if _continues(siblings, match.group(1)):
                    node = _Node(level, match.group(1), len(lines))
                    add(node, parent)
                    current = node
                    lines.append(raw)
                    placed = True
                    break
            if not placed and _CLOSING.match(raw) and current.level in ("pkt", "lit") and current.parent:
                current = current.parent
                current.closed = True
                lines.append(raw)
                placed = True
            if not placed:
                lines[-1] += " " + raw
        else:
            lines.append(raw)
            match = _MARKERS["par"].match(raw)
            if match and match.group(1) == "1":
                current = _Node("par", "1", 0)
                add(current, root)
        _touch(current, len(lines))
    _touch(root, len(lines))
    return lines, root


def _implies_first_par(label: str, lines: list[str]) -> bool:
    # Some articles lost their "§ 1." in extraction but keep "§ 2. (uchylony)"; a real
    # "§ 2." can only open a line after a finished sentence.
    last = lines[-1]
    return label == "2" and (last.endswith((".", ";", ":")) or bool(re.search(_STUB.pattern + "$", last)))


def _wrap_in_first_par(root: _Node) -> _Node:
    first = _Node("par", "1", 0, end=root.end, children=root.children, parent=root)
    for child in first.children:
        child.parent = first
    root.children = [first]
    root.closed = False
    return root


def _parent_for(level: str, current: _Node, root: _Node) -> _Node | None:
    """The open unit a new ``level`` unit would hang from, or None where it cannot."""
    if level == "par":
        return root if any(c.level == "par" for c in root.children) else None
    node: _Node | None = current
    while node is not None and _DEPTH[node.level] >= _DEPTH[level]:
        node = node.parent
    if level == "lit" and (node is None or node.level != "pkt"):
        return node if node is not None and not any(c.level == "pkt" for c in node.children) else None
    return node


def _touch(node: _Node | None, end: int) -> None:
    while node is not None:
        node.end = max(node.end, end)
        node = node.parent


def _provision(node: _Node, lines: list[str], base: str) -> Provision:
    uid = base if node.level == "article" else f"{base}/{node.level}:{node.label}"
    text = "\n".join(lines[node.start : node.end])
    children = [_provision(c, lines, uid) for c in node.children]
    marker = _MARKERS[node.level].match(text) if node.level != "article" else None
    body = text[marker.end() :] if marker else text
    stub = _STUB.fullmatch(body.strip())
    if (
        node.level == "article"
        and not stub
        and children
        and all(c.level == "par" and c.title for c in children)
    ):
        # every paragraph repealed: the article is a stub too
        title = children[0].title
    else:
        title = stub.group() if stub else ""
    return Provision(id=uid, level=node.level, label=node.label, text=text, title=title, children=children)


def parse_article(source: str, label: str, text: str) -> Provision:
    """The provision tree of one article from its raw text.

    Ids: ``kk::115``, ``kk::115/par:13``, ``kk::115/par:13/pkt:2``, ``kk::39/pkt:2d``,
    ``kc::1031^2/par:2/pkt:1/lit:a``. A repealed unit (``(uchylony)``, ``(utracił moc)``)
    is kept and carries that marker as its ``title``; see :func:`is_repealed`.
    """
    cleaned = clean_pdf_text(_drop_trailing_headings(text))
    lines, root = _split(cleaned.split("\n") if cleaned else [])
    root.label = label
    return _provision(root, lines, canonical_id(source, label))


def parse_code(source: str, articles: dict[str, str], title: str = "") -> Act:
    """An :class:`Act` from ``{"<article>": "<raw text>"}`` in the order given."""
    return Act(
        id=source,
        title=title,
        language="pl",
        articles=[parse_article(source, label, text) for label, text in articles.items()],
    )


def is_repealed(provision: Provision) -> bool:
    """Whether the unit is only a stub such as ``(uchylony)``."""
    return bool(_STUB.fullmatch(provision.title))
