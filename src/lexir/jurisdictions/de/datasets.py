"""German datasets: ``de-gesetze`` (all federal laws in their full structure) and ``de-dev`` (the
known-item development set made from them). A law that does not parse is reported with its path
and line in ``corpus.parse_errors`` and skipped, never silently dropped from the counts."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

from lexir.datasets.devsets import known_item_set
from lexir.datasets.registry import Dataset, register
from lexir.datasets.statutes import act_documents, corpus_of
from lexir.jurisdictions.de.statutes import ParseError, iter_archive, parse_archive
from lexir.structure.packed import gc_paused
from lexir.types import Benchmark, Corpus, Document

# The 37 major federal laws of de/history (BGB, StGB, ZPO, GG, ...): the acts of de-dev.
DE_MAJOR_LAWS = (
    "AO 1977", "AktG", "ArbGG", "BBauG", "BDSG 2018", "BGB", "EStG", "FGO", "FamFG", "GG", "GVG", "GVGEG",
    "GWB", "GmbHG", "HGB", "InsO", "KSchG", "MarkenG", "PatG", "SGB 1", "SGB 10", "SGB 11", "SGB 12",
    "SGB 2", "SGB 3", "SGB 5", "SGB 6", "SGG", "StGB", "StPO", "UStG 1980", "UWG 2004", "UrhG", "VwGO",
    "VwVfG", "WoEigG", "ZPO",
)


def load_german_laws(tar_path: str | Path, limit: int | None = None, name: str = "de-gesetze") -> Corpus:
    """Parsed in parallel; the whole archive's parse is cached on disk (see ``parse_archive``).

    The million units are made with the cycle collector paused and then frozen (``gc.freeze``):
    the corpus is kept for the life of the process (the registry caches it) and holds no cycles,
    and otherwise every later full collection walks it again (8 s of a 15 s `lexir stats`)."""
    acts, errors = [], []
    with gc_paused():
        for _path, result in parse_archive(tar_path, limit):
            (errors if isinstance(result, ParseError) else acts).append(result)
        corpus = corpus_of(name, acts, "de", errors, jurisdiction="de")
    gc.freeze()
    return corpus


def german_law_documents(tar_path: str | Path, limit: int | None = None) -> Iterator[Document]:
    """The documents of :func:`load_german_laws`'s corpus, in its order, a law at a time (each
    law dropped once its articles are read): what ``lexir index de-gesetze`` builds BM25 from."""
    for _path, result in iter_archive(tar_path, limit):
        if not isinstance(result, ParseError):
            yield from act_documents(result)


def _archive(data_dir: Path) -> Path:
    return data_dir / "de" / "gesetze_markdown_all.tar.gz"


def _load_de_gesetze(data_dir: Path) -> Corpus:
    return load_german_laws(_archive(data_dir))


def _de_gesetze_documents(data_dir: Path) -> Iterator[Document]:
    return german_law_documents(_archive(data_dir))


def _load_de_dev(data_dir: Path) -> Benchmark:
    from lexir.datasets.generic import open as open_data

    return known_item_set(open_data("de-gesetze", data_dir=data_dir), "de-dev", n_per_kind=400, acts=DE_MAJOR_LAWS)


register(Dataset("de-gesetze", "All 6,636 German federal laws, parsed into § / Art > Absatz > Satz > Nummer > "
                 "Buchstabe", "de", _load_de_gesetze, ("docs",), documents=_de_gesetze_documents))
register(Dataset("de-dev", "German development set: 400 heading and 400 held-out-sentence known-item "
                 "queries over the 37 major federal laws of de-gesetze", "de", _load_de_dev,
                 ("docs", "queries", "qrels"), needs=("de-gesetze",)))
