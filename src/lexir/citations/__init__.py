"""Statutory citations in free text: find them, resolve them to lexir ids.

The model (:class:`Citation`) is shared by all languages; each language has its own
finder module (``lexir.citations.polish``, ``.german``, ``.greek``) and act table
(``data/<lang>_acts.tsv``). :func:`find_citations` takes the language and picks the finder.
"""

from lexir.citations.extract import LANGUAGES, cite_lines, find_citations
from lexir.citations.model import ActEntry, Citation, read_act_table
from lexir.citations.polish import find_citations as find_polish_citations
from lexir.citations.polish import gold_from_orycore, parse_legal_basis, resolve_article

__all__ = [
    "LANGUAGES",
    "ActEntry",
    "Citation",
    "cite_lines",
    "find_citations",
    "find_polish_citations",
    "gold_from_orycore",
    "parse_legal_basis",
    "read_act_table",
    "resolve_article",
]
