"""Statutory citations in free text: find them, resolve them to lexir ids.

The model (:class:`Citation`) and the act-table format are shared by every legal order; each order
has its own finder and tables in its folder (``lexir.jurisdictions.<code>``). :func:`find_citations`
takes the order's code and asks the registry (:mod:`lexir.jurisdiction`) for its finder.
"""

from lexir.citations.annotate import annotate
from lexir.citations.extract import citation_codes, cite_lines, find_citations
from lexir.citations.model import ActEntry, Citation, read_act_table, read_kind_table

__all__ = ["ActEntry", "Citation", "annotate", "cite_lines", "citation_codes", "find_citations", "read_act_table",
           "read_kind_table"]
