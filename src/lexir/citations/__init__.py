"""Statutory citations in free text: find them, resolve them to lexir ids.

The model (:class:`Citation`) is shared by all languages; each language has its own
finder module (``lexir.citations.polish``) and act table (``data/<lang>_acts.tsv``).
"""

from lexir.citations.model import ActEntry, Citation, read_act_table
from lexir.citations.polish import (
    find_citations,
    gold_from_orycore,
    parse_legal_basis,
    resolve_article,
)

__all__ = [
    "ActEntry",
    "Citation",
    "find_citations",
    "gold_from_orycore",
    "parse_legal_basis",
    "read_act_table",
    "resolve_article",
]

from lexir.citations.extract import LANGUAGES, cite_lines  # noqa: E402

__all__ += ["LANGUAGES", "cite_lines"]
