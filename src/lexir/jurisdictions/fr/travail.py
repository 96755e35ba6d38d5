"""The Code du travail (legi-data JSON tree) as the act ``Ctrav``.

Input: ``code-du-travail.json.xz`` (npm ``@socialgouv/legi-data``): a unist tree whose root is the
code, ``section`` nodes (titles padded with spaces and ``\\r\\n``) and ``article`` leaves (``num``,
``texte``, ``texteHtml``, ``dateDebut``/``dateFin`` in milliseconds since the epoch, UTC midnight).

Output: one :class:`~lexir.types.Act` with the same ids and units as the Markdown codes of
:mod:`lexir.jurisdictions.fr.statutes` (``Ctrav::L1232-1``, ``Ctrav::L1232-1/al:2``, ``…/item:1``):

* divisions follow the JSON tree (its nesting is real, no guessing from ranks); level, label and
  title come from the section title through :func:`~lexir.jurisdictions.fr.statutes.classify_heading`
  (``Première partie : …`` -> ``partie:1``, ``Sous-Paragraphe 2`` -> ``sous-paragraphe:2``);
* article labels through :func:`~lexir.jurisdictions.fr.statutes.article_label` (``R*2122-1`` kept,
  `` L1221-19`` stripped, ``Annexe I`` -> ``Annexe_I``; the 3 annex numbers printed twice get ``~2``);
* alinéas are the paragraphs of ``texteHtml`` (``<p>``, ``<br/>``, table rows and list items end
  one; tags dropped, entities decoded), ``texte`` split on line breaks when the HTML is empty;
* per-article metadata (LEGIARTI id, stable cid, etat, dateDebut/dateFin as ISO dates) is kept
  beside the act in :class:`TravailCode` ``.meta`` (a :class:`~lexir.types.Provision` has no field
  for it). An article without a number is left out and reported in ``.errors``.
"""

from __future__ import annotations

import html
import json
import lzma
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lexir.jurisdictions.fr.statutes import article_label, build_article, classify_heading, source_of
from lexir.structure.parsing import ParseError
from lexir.types import Act, Division, Provision

IDENTIFIER = "LEGITEXT000006072050"
OPEN_ENDED = "2999-01-01"


@dataclass(frozen=True)
class ArticleMeta:
    """What LEGI says about the version of an article the file carries."""

    legi_id: str
    cid: str
    etat: str
    date_debut: str  # ISO date
    date_fin: str  # ISO date; 2999-01-01: open-ended


@dataclass
class TravailCode:
    act: Act
    meta: dict[str, ArticleMeta] = field(default_factory=dict)  # article id -> metadata
    errors: list[ParseError] = field(default_factory=list)


def ms_to_date(ms: int | float | None) -> str:
    """Milliseconds since the epoch (UTC midnight) as an ISO date; '' when missing."""
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).date().isoformat()


_BREAK = re.compile(r"<br\s*/?>|</p>|</tr>|</li>|</div>|</h\d>|</th>", re.IGNORECASE)
_CELL = re.compile(r"</td>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")


def paragraphs(texte_html: str, texte: str = "") -> list[str]:
    """The alinéas of an article: HTML paragraphs and line breaks, tags dropped, whitespace collapsed."""
    if texte_html and texte_html.strip():
        raw = _CELL.sub(" ", _BREAK.sub("\n", texte_html))
        raw = html.unescape(_TAG.sub("", raw))
    else:
        raw = texte
    return [" ".join(line.split()) for line in raw.split("\n") if line.strip()]


def parse_code_du_travail(tree: dict[str, Any], path: str = "code-du-travail.json") -> TravailCode:
    """The legi-data tree (already decoded JSON) as :class:`TravailCode`."""
    data = tree.get("data", {})
    source = source_of(data.get("cid") or data.get("id") or IDENTIFIER)
    act = Act(source, " ".join(str(data.get("title", "Code du travail")).split()), "fr")
    out = TravailCode(act)
    seen: dict[str, int] = {}

    def visit(node: dict[str, Any], parent: Division | None, where: str) -> int:
        """Files the node's articles; returns how many articles stand below it."""
        count = 0
        for index, child in enumerate(node.get("children", []) or []):
            kind = child.get("type")
            cdata = child.get("data", {})
            here = f"{where}/{index}"
            if kind == "section":
                info = classify_heading(str(cdata.get("title", "")))
                if info is None:
                    out.errors.append(ParseError(path, 0, f"section without a title at {here}"))
                    continue
                level, label, _rank, heading, title = info
                siblings = parent.children if parent is not None else act.divisions
                base = f"{parent.id}/" if parent is not None else f"{source}::"
                ident, n = f"{base}{level}:{label}", 1
                taken = {d.id for d in siblings}
                while ident in taken:
                    n += 1
                    ident = f"{base}{level}:{label}~{n}"
                division = Division(ident, level, label, title, heading)
                below = visit(child, division, here)
                if below:
                    siblings.append(division)
                count += below
            elif kind == "article":
                article = _article(source, cdata, seen, out, path, here)
                if article is None:
                    continue
                act.articles.append(article)
                if parent is not None:
                    parent.articles.append(article.id)
                count += 1
        return count

    visit(tree, None, "")
    return out


def _article(source: str, data: dict[str, Any], seen: dict[str, int], out: TravailCode, path: str,
             where: str) -> Provision | None:
    num = str(data.get("num") or "").strip()
    if not num:
        out.errors.append(ParseError(path, 0, f"article without a number at {where} ({data.get('id', '?')})"))
        return None
    label = article_label(num)
    seen[label] = seen.get(label, 0) + 1
    if seen[label] > 1:
        label = f"{label}~{seen[label]}"
    article = build_article(source, label, paragraphs(str(data.get("texteHtml") or ""), str(data.get("texte") or "")))
    out.meta[article.id] = ArticleMeta(str(data.get("id", "")), str(data.get("cid", "")), str(data.get("etat", "")),
                                       ms_to_date(data.get("dateDebut")), ms_to_date(data.get("dateFin")))
    return article


def read_code_du_travail(path: str | Path) -> TravailCode:
    """``code-du-travail.json.xz`` (or a plain ``.json``) parsed: the act, its metadata, errors."""
    path = Path(path)
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        tree = json.load(fh)
    return parse_code_du_travail(tree, path.name)


def load_code_du_travail(path: str | Path) -> Act:
    """The Code du travail as the act ``Ctrav``."""
    return read_code_du_travail(path).act
