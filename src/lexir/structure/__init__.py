"""Statute structure: clean extracted text, the statute graph, chunks, versions through time. The
parsers of each legal order live in its folder (``lexir.jurisdictions.<code>.statutes``)."""

from lexir.structure.text import UNIT_START, clean_pdf_text

__all__ = ["UNIT_START", "clean_pdf_text"]
