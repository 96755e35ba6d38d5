"""Germany: all federal laws in their structure, 37 of them through time, court decisions with
gold citations, lay questions, and the German citation finder.

``§ 823 Abs. 1 S. 2 BGB``, ``Art. 1 Abs. 1 GG``, ``Art. 232 § 10 EGBGB``: § or Art., then Absatz,
Satz, Nummer, Buchstabe.
"""

import re
from importlib import resources

from lexir.jurisdiction import Jurisdiction, register_jurisdiction


def _find_citations(text: str, **kw) -> list:
    from lexir.jurisdictions.de.citations import find_citations

    return find_citations(text, **kw)


def article_head(label: str, level: str) -> str:
    """``§ 823``; ``Art. 1`` in laws numbered by article; ``Art. 232 § 10`` (EGBGB, stored as
    ``232§10``); an annex by its name (``Anlage 1``); nothing for a law with no § at all."""
    from lexir.citations.format import paragraph_head

    return paragraph_head(label, level, "Art.")


GERMANY = register_jurisdiction(Jurisdiction(
    code="de", name="Germany", language="de",
    article="§ {}",
    levels={"abs": "Abs. {}", "satz": "S. {}", "nr": "Nr. {}", "lit": "Buchst. {}", "dlit": "Doppelbuchst. {}",
            "tlit": "Dreifachbuchst. {}"},
    acts=resources.files(__name__) / "data" / "acts.tsv",
    files=resources.files(__name__) / "data" / "files.tsv",  # the data files its datasets read
    find_citations=_find_citations,
    may_cite=re.compile(r"§|Art|Abs|Satz|Nr|Buchst|Ziff"),  # the finder needs one of its keywords
    article_head=article_head,
    datasets=("lexir.jurisdictions.de.datasets", "lexir.jurisdictions.de.history_dataset",
              "lexir.jurisdictions.de.refex", "lexir.jurisdictions.de.lay"),
))
