"""Statute structure: clean extracted text and split articles into their units."""

from lexir.structure.polish import is_repealed, parse_article, parse_code
from lexir.structure.text import UNIT_START, clean_pdf_text

__all__ = ["UNIT_START", "clean_pdf_text", "is_repealed", "parse_article", "parse_code"]
