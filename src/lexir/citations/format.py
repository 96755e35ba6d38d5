"""Ids written the way lawyers of each legal order cite them, used by the CLI and the service.

German ``§ 823 Abs. 1 S. 2 BGB`` (``Art. 1 GG`` for article-numbered laws, ``Art. 232 § 10
EGBGB``), Polish ``art. 415 § 1 pkt 2 k.c.`` (``art. 4¹`` for inserted articles), Greek
``άρθρο 914 παρ. 1 ΑΚ``, French ``article 1240 alinéa 2 C. civ.``, Austrian ``§ 1295 Abs 1 ABGB``.
How an order writes its units is its :class:`lexir.jurisdiction.Jurisdiction` record; the act is
written with its usual abbreviation from the order's act table (else a short name, else the act
id). ``jurisdiction`` is an order's code; an order nobody registered writes ids as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from lexir.jurisdiction import Jurisdiction, find_jurisdiction
from lexir.types import PATH_SEP, Act, Division, Provision, UnitId, article_of


def _order(jurisdiction: str) -> Jurisdiction | None:
    try:
        return find_jurisdiction(jurisdiction or None)
    except ValueError:  # a code no order has (a corpus of another language): ids as they are
        return None


def paragraph_head(label: str, level: str, article_word: str) -> str:
    """The head of a citation in laws numbered by § (German, Austrian): ``§ 823``; ``Art. 1`` in a law
    numbered by article (``article_word``: ``Art.``, ``Art``); ``Art. 232 § 10`` for a § inside an
    article (stored ``232§10``); an annex by its name (``Anlage 1``); nothing for a law with no § at
    all (level ``body``: cited by the act alone)."""
    if level == "body":
        return ""
    if "§" in label:
        return "{} {} § {}".format(article_word, *label.split("§", 1))
    if level == "art":
        return f"{article_word} {label}"
    if level == "anlage" or not label[:1].isdigit():
        return label
    return f"§ {label}"


@lru_cache(maxsize=8)
def act_abbreviations(jurisdiction: str) -> dict[str, str]:
    """Act id -> its usual abbreviation (the first one in the act table), else its short name."""
    from lexir.citations.model import read_act_table

    order = _order(jurisdiction)
    if order is None or order.acts is None:
        return {}
    out: dict[str, str] = {}
    for entry in read_act_table(order.acts):
        short = entry.abbreviations[0] if entry.abbreviations else (entry.names[0] if entry.names else "")
        if short and len(short) <= 40:
            out.setdefault(entry.source, short)
    return out


@lru_cache(maxsize=1 << 16)
def format_citation(unit_id: str, jurisdiction: str, article_level: str = "article") -> str:
    """The citation of a unit id as written in its legal order (see the module doc)."""
    try:
        parsed = UnitId.parse(unit_id)
    except ValueError:
        return unit_id
    act = act_abbreviations(jurisdiction).get(parsed.source, parsed.source)
    order = _order(jurisdiction)
    if order is None:
        head = parsed.article
        steps = [f"{level} {label}" for level, label in parsed.path]
    else:
        head = order.head(parsed.article, article_level)
        steps = [order.unit(level, label) for level, label in parsed.path]
    return " ".join(part for part in (head, *steps, act) if part)


@lru_cache(maxsize=1 << 16)
def unit_heading(level: str, label: str, jurisdiction: str, title: str = "") -> str:
    """One breadcrumb: ``§ 823 Schadensersatzpflicht``, ``Abs. 1``, ``art. 415``."""
    if level == "body":
        return "Text"
    if level in ("article", "para", "art", "anlage"):
        text = format_citation(f"x::{label}", jurisdiction, level).rsplit(" ", 1)[0]
    else:
        order = _order(jurisdiction)
        text = order.unit(level, label) if order is not None else f"{level} {label}"
    return f"{text} {title}".strip() if title and len(title) <= 120 else text


def division_heading(division: Division) -> str:
    """A division's breadcrumb: its number as printed and its title (``Titel 27 Unerlaubte
    Handlungen``, ``Erster Abschnitt Das Strafgesetz``, ``I. Die Grundrechte``)."""
    head = division.heading or f"{division.level} {division.label}"
    title = division.title
    return f"{head} {title}".strip() if title and len(title) <= 120 else head


def division_crumbs(act: Act, unit_id: str) -> list[dict[str, str]]:
    """The breadcrumbs between an act and the article of ``unit_id``: one per division it stands
    in, outermost first (``[]`` for a law without divisions); ``division`` marks them (a division
    has no text: not a provision to open)."""
    return [_division_crumb(d) for d in act.division_path(article_of(unit_id))]


def _division_crumb(division: Division) -> dict[str, str]:
    return {"id": division.id, "level": division.level, "label": division_heading(division), "division": True}


def _act_crumb(act: Act) -> dict[str, str]:
    return {"id": act.id, "level": "act", "label": act.title or act.id}


def division_starts(act: Act) -> dict[str, list[tuple[int, Division]]]:
    """Article id -> the divisions that open with it (depth from 0, outermost first): where a
    table of contents prints each division's heading."""
    out: dict[str, list[tuple[int, Division]]] = {}

    def first_article(d: Division) -> str | None:
        firsts = [a for a in (d.articles[:1] + [first_article(c) for c in d.children]) if a]
        return min(firsts, key=lambda a: order.get(a, len(order))) if firsts else None

    order = {a.id: i for i, a in enumerate(act.articles)}

    def visit(items: list[Division], depth: int) -> None:
        for d in items:
            first = first_article(d)
            if first is not None:
                out.setdefault(first, []).append((depth, d))
            visit(d.children, depth + 1)

    visit(act.divisions, 0)
    return out


def find_unit(act: Act, unit_id: str) -> Provision | Division | None:
    """The provision or division of ``act`` with this id, or None."""
    if any(d.id == unit_id for d in act.walk_divisions()):
        return next(d for d in act.walk_divisions() if d.id == unit_id)
    article = next((a for a in act.articles if a.id == article_of(unit_id)), None)
    return next((u for u in article.walk() if u.id == unit_id), None) if article is not None else None


def breadcrumb_trail(act: Act, unit_id: str, chain: Sequence[Provision], jurisdiction: str) -> list[dict[str, str]]:
    """A unit's breadcrumbs: the act, the divisions its article stands in (Buch, Abschnitt ...),
    then one per provision of ``chain``, the units from the article down to ``unit_id`` (however
    the caller found them: the service from its index of units, ``lexir show`` by walking the act)."""
    return [_act_crumb(act), *division_crumbs(act, unit_id),
            *({"id": p.id, "level": p.level, "label": unit_heading(p.level, p.label, jurisdiction, p.title)}
              for p in chain)]


def unit_breadcrumbs(act: Act, unit_id: str, jurisdiction: str) -> list[dict[str, str]]:
    """:func:`breadcrumb_trail` of a provision or division of ``act``, found by walking the act (for the
    CLI, which has no index of units); a division's are the act and the divisions down to it."""
    divisions = [d for d in act.walk_divisions() if unit_id == d.id or unit_id.startswith(d.id + PATH_SEP)]
    if divisions:
        return [_act_crumb(act), *map(_division_crumb, divisions)]
    chain = []
    node = next((a for a in act.articles if a.id == article_of(unit_id)), None)
    while node is not None:
        chain.append(node)
        if node.id == unit_id:
            break
        node = next((c for c in node.children if unit_id == c.id or unit_id.startswith(c.id + PATH_SEP)), None)
    return breadcrumb_trail(act, unit_id, chain, jurisdiction)
