"""Poland: the five codes (Kodeks karny, cywilny, ...), exam questions and their citations.

``art. 148 § 1 pkt 2 k.k.``: articles (``art.``), then § (``par``), ustęp, punkt, litera, tiret,
zdanie. Inserted articles carry a superscript (``art. 4¹``, stored as ``4^1``).
"""

from importlib import resources

from lexir.jurisdiction import Jurisdiction, register_jurisdiction, superscript_label


def _find_citations(text: str, **kw) -> list:
    from lexir.jurisdictions.pl.citations import find_citations

    return find_citations(text, **kw)


def _acts_named(text: str) -> set[str]:
    """Acts a text names by name alone (``Zgodnie z Kodeksem karnym``)."""
    import re

    from lexir.jurisdictions.pl.citations import _match_act

    acts = set()
    for m in re.finditer(r"(?<!\w)\w", text):
        found = _match_act(text, m.start())
        if found and found[1]:
            acts.add(found[1])
    return acts


def _exams(path, corpus, **kw):
    from lexir.jurisdictions.pl.datasets import load_polishlawllm_exams

    return load_polishlawllm_exams(path, corpus, name=kw.get("name") or path.stem)


def _orycore(path, corpus, **kw):
    from lexir.jurisdictions.pl.datasets import load_orycore_exam

    return load_orycore_exam(path, corpus)


def _read_codes(path):
    """A code ``.json`` (``{"<article>": "<text>"}``) or a folder of them; None: not this format."""
    from lexir.jurisdictions.pl.datasets import load_codes

    if path.is_file() and path.suffix == ".json":
        return load_codes({path.stem: path}, name=path.stem)
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if files:
            return load_codes({f.stem: f for f in files}, name=path.name)
    return None


POLAND = register_jurisdiction(Jurisdiction(
    code="pl", name="Poland", language="pl",
    article="art. {}",
    levels={"par": "§ {}", "ust": "ust. {}", "pkt": "pkt {}", "lit": "lit. {}", "tiret": "tiret {}", "zd": "zd. {}"},
    acts=resources.files(__name__) / "data" / "acts.tsv",
    files=resources.files(__name__) / "data" / "files.tsv",  # the data files its datasets read
    find_citations=_find_citations,
    label=superscript_label,
    # a bare "art. 5" in a code's text stays unresolved in the statute graph: resolving it to the code
    # being read would add every one (628 in the Kodeks karny) as a cites edge
    graph_default_act=False,
    cited_first=True,
    acts_named=_acts_named,  # exam questions cite their legal basis (the Polish paper)
    query_formats={"polishlawllm": _exams, "orycore": _orycore},
    corpus_reader=_read_codes,
    datasets=("lexir.jurisdictions.pl.datasets",),
))
