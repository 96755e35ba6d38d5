"""Greece: the Penal Code and eight laws (Government Gazette text), GreekBarRetrieval, citations.

``άρθρο 914 παρ. 1 ΑΚ``, ``άρθρο 5 ν. 4624/2019``: articles, then παράγραφος (``par``) and
περίπτωση (``item``).
"""

from importlib import resources

from lexir.jurisdiction import Jurisdiction, register_jurisdiction


def _find_citations(text: str, **kw) -> list:
    from lexir.jurisdictions.el.citations import find_citations

    return find_citations(text, **kw)


GREECE = register_jurisdiction(Jurisdiction(
    code="el", name="Greece", language="el",
    article="άρθρο {}",
    levels={"par": "παρ. {}", "item": "περ. {}"},
    acts=resources.files(__name__) / "data" / "citation_acts.tsv",
    files=resources.files(__name__) / "data" / "files.tsv",  # the data files its datasets read
    find_citations=_find_citations,
    datasets=("lexir.jurisdictions.el.datasets", "lexir.jurisdictions.el.greekbar"),
))
