"""French datasets: ``fr-codes`` (the 68 codes in force of ``fr/codes.tar.xz`` and the Code du
travail of ``fr/code-du-travail.json.xz``) and ``fr-codes-history`` (the Code civil, Code pénal,
Code de procédure civile and Code de la consommation through every version since 1803;
``fr-codes-history@2015-06-01`` is the law in force that day, 1382 still the tort article).

An article that cannot be read (a heading with no number) is reported in ``corpus.parse_errors``
with its file and line; the rest of its code is kept."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from lexir.datasets.devsets import known_item_set
from lexir.datasets.registry import Dataset, register
from lexir.datasets.statutes import act_documents, corpus_of
from lexir.jurisdictions.fr.history import NAME as HISTORY
from lexir.jurisdictions.fr.history import load_french_history
from lexir.jurisdictions.fr.statutes import iter_code_files, load_french_codes
from lexir.jurisdictions.fr.travail import read_code_du_travail
from lexir.structure.history import StatuteHistory
from lexir.structure.packed import gc_paused
from lexir.structure.parsing import ParseError
from lexir.types import Benchmark, Corpus, Document

# The codes a citizen's question most often meets: fr-dev's queries and index.
DEV_CODES = ("Cciv", "Cpen", "CPC", "Cconsom", "Ctrav")


def load_fr_codes(data_dir: Path, name: str = "fr-codes") -> Corpus:
    """The 68 codes and the Code du travail, in archive order then the Code du travail."""
    with gc_paused():
        acts, errors = load_french_codes(data_dir / "fr" / "codes.tar.xz")
        travail = read_code_du_travail(data_dir / "fr" / "code-du-travail.json.xz")
        corpus = corpus_of(name, [*acts, travail.act], "fr", [*errors, *travail.errors], jurisdiction="fr")
    gc.freeze()  # kept for the life of the process (the registry caches it), and holds no cycles
    return corpus


def french_code_documents(data_dir: Path) -> Iterator[Document]:
    """The documents of :func:`load_fr_codes`'s corpus, in its order, a code at a time (each code
    dropped once its articles are read): what ``lexir index fr-codes`` builds BM25 from."""
    codes = iter_code_files(data_dir / "fr" / "codes.tar.xz")
    while True:
        with gc_paused():  # a code's tree is made with the cycle collector off, as load_fr_codes does
            item = next(codes, None)
        if item is None:
            break
        if not isinstance(item[1], ParseError):
            yield from act_documents(item[1].act)
    with gc_paused():
        travail = read_code_du_travail(data_dir / "fr" / "code-du-travail.json.xz")
    yield from act_documents(travail.act)


def titled_by_divisions(corpus: Corpus) -> Corpus:
    """A copy of ``corpus`` whose articles take the title of the innermost division that holds them
    alone (``Section 4 : Rupture conventionnelle`` over one article): French articles have no
    heading of their own, and such a title names one article's subject as a heading does."""
    titles: dict[str, str] = {}
    for act in corpus.acts.values():
        for division in act.walk_divisions():
            if len(division.articles) == 1 and not division.children and division.title:
                titles[division.articles[0]] = division.title.strip()
    docs = [replace(d, title=titles[d.id]) if d.id in titles and not d.title else d for d in corpus]
    return Corpus(corpus.name, docs, language=corpus.language, acts=corpus.acts.values(),
                  jurisdiction=corpus.jurisdiction)


def _load_fr_dev(data_dir: Path) -> Benchmark:
    from lexir.datasets.generic import open as open_data

    corpus = titled_by_divisions(open_data("fr-codes", data_dir=data_dir))
    return known_item_set(corpus, "fr-dev", n_per_kind=400, acts=DEV_CODES)


def _load_history(data_dir: Path) -> StatuteHistory:
    folder = data_dir / "fr"
    return load_french_history(folder / "history.tar.xz", folder / "versions.tsv")


register(Dataset("fr-codes", "68 French codes in force (2026-04-03) and the Code du travail, parsed into Partie > "
                 "Livre > Titre > Chapitre > Section > article > alinéa > 1°/a); ids Cciv::1240, Ctrav::L1232-1",
                 "fr", load_fr_codes, ("docs",), documents=french_code_documents))
register(Dataset(HISTORY, "Code civil (since 1803), Code pénal, Code de procédure civile and Code de la "
                 "consommation in every version, dated by the day it took effect; --as-of DATE gives the law "
                 "in force (art. 1382 before the 2016 reform, 1240 after)", "fr", _load_history,
                 ("docs", "history")))
register(Dataset("fr-dev", "French development set: 400 heading (the title of a division over one article) and "
                 "400 held-out-sentence known-item queries over the Code civil, pénal, de procédure civile, de la "
                 "consommation and du travail (the query's words taken out of the index)", "fr", _load_fr_dev,
                 ("docs", "queries", "qrels"), needs=("fr-codes",)))
