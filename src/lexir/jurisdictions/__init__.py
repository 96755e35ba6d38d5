"""The catalogue of legal orders: one folder each (``lexir/jurisdictions/<code>/``), holding all
that knows that order: statute parsers, citation finder and tables, how units are written, its
datasets and defaults. Each folder's ``__init__`` registers a :class:`lexir.jurisdiction.Jurisdiction`.

This module only names the folders (one line an order); they are imported on the first lookup
in :mod:`lexir.jurisdiction`. ``import lexir`` loads this catalogue, as it loads the catalogue of
systems, so no layer below the folders ever names an order. Adding an order: docs/jurisdictions.md.
"""

from lexir.jurisdiction import add_jurisdiction_modules

add_jurisdiction_modules("lexir.jurisdictions.pl")
add_jurisdiction_modules("lexir.jurisdictions.de")
add_jurisdiction_modules("lexir.jurisdictions.el")
add_jurisdiction_modules("lexir.jurisdictions.fr")
add_jurisdiction_modules("lexir.jurisdictions.at")
