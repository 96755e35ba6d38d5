"""Find Austrian statutory citations in text: ``§ 1295 Abs 1 ABGB``, ``§ 2 Abs 1 Z 3 lit a MRG``,
``§§ 1 ff KSchG``, ``§§ 1295, 1298 ABGB``, ``Art 7 B-VG``, ``§ 16 iVm § 18 MRG``.

Austrian style differs from German style in three ways this finder reads: ``Abs`` and ``Z``
without a dot (``§ 879 Abs 3 ABGB``), the Ziffer written ``Z`` (path key ``z``, German ``Nr.``
-> ``nr``), and ``lit a`` without a parenthesis. Path keys are the parser's levels (``abs``, ``z``,
``lit``; :mod:`lexir.jurisdictions.at.statutes`), so ``citation.unit_id`` addresses a parsed unit
(``AT-MRG::2/abs:1/z:3``). ``Satz``/``S`` and ``ff``/``f`` are read but not put in the path
(the Austrian laws are not split into Sätze; ``§§ 1 ff`` names § 1).

Groups and acts
    A group is a run of references joined by commas, ``und``/``oder``/``sowie``, ranges
    (``bis``, ``-``) and ``iVm`` chains (``iVm``, ``i.V.m.``, ``in Verbindung mit``). An act written
    after a reference applies to every reference of the group since the previous act
    (``§ 16 iVm § 18 MRG``: both MRG); the one it directly follows has ``resolved_from="explicit"``,
    the others ``"group"``. Acts are looked up in ``data/acts.tsv`` (Kurztitel, case-sensitive,
    longest first; also after ``des``/``der``): ``§ 127 StGB`` is ``AT-StGB::127``, never the
    German ``StGB::127``. An abbreviation the table does not know (two capitals or more:
    ``B-VG``, ``EMRK``) gives ``act=None``, ``id=None`` and is kept in ``act_raw``. A reference
    with no act takes ``default_act`` (``resolved_from="default"``), else the act named last before
    it on its line (``resolved_from="context"``), else stays unresolved.

References
    ``§ 1295``, ``§ 27b``, ``§ 373i1``, ``Art 7``, ``Art. II`` (roman read as arabic: the parser
    labels ``Artikel II`` ``2``), ``Art. 3 § 2`` (label ``3§2``, or the plain § when ``known``
    says the law numbers its §§ through: ``Art. 2 § 4 DSG`` -> ``4``). With ``known``, an ``Art``
    whose number is taken by a § in that law resolves to the parser's ``Art<n>`` label. A bare
    number after a comma or conjunction is a further article after ``§§`` or after a reference
    without units, else a further unit at the level of the unit before it (``Abs 1 und 2``); a
    unit keyword after a conjunction is a further unit of the same article (``Abs 1 und Abs 3``).
    Further units of one article are one citation (``also``).

Ranges
    ``§§ 3 bis 6`` gives 3, 4, 5 and 6 (with ``known``, only labels that exist; ranges with letters
    or over 200 apart give their ends only); ``expand_ranges=False`` gives the ends only.

Pipeline
    This finder is the shared citation pipeline (:mod:`lexir.citations.pipeline`) with the German
    group stage of :mod:`lexir.jurisdictions.de.citations`, read with the profile :data:`AUSTRIAN`: the tables of ``data/`` (``acts.tsv``, ``keywords.tsv`` with ``Z`` for
    the Ziffer, ``not_acts.txt``, empty ``non_statutes.tsv`` and ``repealed.tsv``), the Ziffer
    reported as ``z`` and Satz left out of the path, no EU instruments, roman Artikel, labels such
    as ``373i1``, unknown abbreviations with hyphens (``B-VG``) and the hook :func:`article_label`
    (``Art<n>``). So it also reads what that pipeline reads for German text: an act named before
    the keyword (``ABGB § 1295``), by name (``§ 1 des Mietrechtsgesetzes``), or earlier on the
    same line (``resolved_from="context"``), and ``Abs 2`` alone after a citation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from lexir.citations.model import Citation, known_articles
from lexir.jurisdictions.de import citations as german

KnownArticles = Mapping[str, Collection[str]]

__all__ = ["AUSTRIAN", "act_source", "article_label", "find_citations", "known_from_acts"]


def article_label(source: str, article: str, keyword: str, known: KnownArticles) -> str:
    """The parser's label of a cited article (:mod:`lexir.jurisdictions.at.statutes`): an ``Art``
    whose number a § of the law took is ``Art<n>`` (``Art II MRG`` -> ``Art2``); ``Art. 2 § 4 DSG``
    is the plain § (``4``) when the law numbers its §§ through, else ``2§4``."""
    labels = known.get(source)
    if not labels:
        return article
    if keyword == "Art" and f"Art{article}" in labels:
        return f"Art{article}"
    if article in labels:
        return article
    if keyword == "Art" and "§" in article and article.split("§", 1)[1] in labels:
        return article.split("§", 1)[1]
    return article


AUSTRIAN = german.Profile(
    package=__package__,
    path_keys=(("nr", "z"), ("satz", None)),
    eu=False,
    roman_articles=True,
    article_number=r"(?P<n>\d+)(?P<l>[a-z]{0,2}\d{0,2})(?![\w])(?![.,]\d)",  # "§ 27b", "§ 373i1"
    unknown_abbrev=rf"[A-ZÄÖÜ][{german._WORD}]*(?:-[{german._WORD}]+)*(?![{german._WORD}\d\-])",  # "B-VG"
    prose_short_acts=frozenset(),
    label=article_label,
)


def act_source(abbreviation: str) -> str | None:
    """The source id of an Austrian abbreviation or title (``ABGB`` -> ``AT-ABGB``), None when unknown."""
    return german.act_source(abbreviation, AUSTRIAN)


def known_from_acts(acts) -> dict[str, set[str]]:
    """``known`` for :func:`find_citations` from parsed acts: source -> article labels."""
    return known_articles(article for act in acts for article in act.articles)


def find_citations(
    text: str,
    known: KnownArticles | None = None,
    default_act: str | None = None,
    *,
    kinds: Collection[str] | None = ("statute",),
    expand_ranges: bool = True,
) -> list[Citation]:
    """All Austrian statutory citations in ``text``, in order of their spans' starts.

    ``known`` maps source ids to article labels (:func:`known_from_acts`): ranges then expand only
    to labels that exist, and ``Art`` / ``Art. n § m`` labels follow the parser's. ``default_act``
    (an ``AT-…`` source id) is the act of references that name none; without it they take the
    act named last before them on their line (``resolved_from="context"``). ``kinds`` keeps only
    citations of those kinds (default: statutes; None: also ``bill``, the §§ of a bill that an
    explanatory memorandum explains: ``Begründung zu § 5``).
    """
    return german.find_citations(text, known, default_act, kinds=kinds, expand_ranges=expand_ranges,
                                   profile=AUSTRIAN)
