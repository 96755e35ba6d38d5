"""France: the codes in force (legalize-fr), the Code du travail (legi-data), four codes through
time since 1803, and French citations (``article 1240 du code civil``, ``art. L. 1232-1 C. trav.``,
``C. civ., art. 1103``, ``les articles 1231-1 et suivants``, ``alinéa 2``, ``1°``).

Ids are ``SOURCE::ARTICLE`` with the abbreviation lawyers write, spaces and dots removed
(``Cciv::1240``, ``Ctrav::L1232-1``, ``Cpen::121-3``, ``CPC::700``); below an article, alinéas
(``al``), numbered items (``item``, 1°) and lettered points (``lit``, a)). Citations are written as
``art. 1240 al. 2 C. civ.``, ``art. L. 1232-1 C. trav.``.
"""

import re
from importlib import resources

from lexir.jurisdiction import Jurisdiction, register_jurisdiction

_PREFIXED = re.compile(r"^(LO|[LRDA])(\*?)(\d.*)$")


def _find_citations(text: str, **kw) -> list:
    from lexir.jurisdictions.fr.citations import find_citations

    return find_citations(text, **kw)


def label(stored: str) -> str:
    """An article number as printed: ``L1232-1`` -> ``L. 1232-1``, ``R*2122-1`` -> ``R.* 2122-1``,
    ``12_bis`` -> ``12 bis``."""
    m = _PREFIXED.match(stored)
    printed = f"{m[1]}.{m[2]} {m[3]}" if m else stored
    return printed.replace("_", " ")


def _unit_label(stored: str) -> str:
    return stored.replace("_", " ")


FRANCE = register_jurisdiction(Jurisdiction(
    code="fr", name="France", language="fr",
    article="art. {}",
    levels={"al": "al. {}", "item": "{}°", "lit": "{})"},
    acts=resources.files(__name__) / "data" / "acts.tsv",
    files=resources.files(__name__) / "data" / "files.tsv",  # the data files its datasets read
    find_citations=_find_citations,
    label=label,
    datasets=("lexir.jurisdictions.fr.datasets",),
))
