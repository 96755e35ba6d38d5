"""Statute corpora in their full structure: German federal law (``de-gesetze``) and Greek
statutes (``el-statutes``). Each article (§, Art, Anlage; άρθρο) is one document; its units
(Absatz, Satz, Nummer, Buchstabe; παράγραφος, περίπτωση) are in ``corpus.acts``.

A German law that does not parse is reported with its path and line in
``corpus.parse_errors`` and skipped, never silently dropped from the counts.
"""

from __future__ import annotations

import gc
from pathlib import Path

from lexir.datasets.registry import Dataset, register
from lexir.structure.german import ParseError, parse_archive
from lexir.structure.greek import load_greek_statutes
from lexir.structure.packed import gc_paused
from lexir.types import Act, Corpus, Document


def corpus_of(name: str, acts: list[Act], language: str, parse_errors=()) -> Corpus:
    docs = [Document(a.id, a.text, a.title) for act in acts for a in act.articles]
    return Corpus(name, docs, language=language, acts=acts, parse_errors=parse_errors)


def load_german_laws(tar_path: str | Path, limit: int | None = None, name: str = "de-gesetze") -> Corpus:
    """Parsed in parallel; the whole archive's parse is cached on disk (see ``parse_archive``).

    The million units are made with the cycle collector paused and then frozen (``gc.freeze``):
    the corpus is kept for the life of the process (the registry caches it) and holds no cycles,
    and otherwise every later full collection walks it again (8 s of a 15 s `lexir stats`)."""
    acts, errors = [], []
    with gc_paused():
        for _path, result in parse_archive(tar_path, limit):
            (errors if isinstance(result, ParseError) else acts).append(result)
        corpus = corpus_of(name, acts, "de", errors)
    gc.freeze()
    return corpus


def _load_de_gesetze(data_dir: Path) -> Corpus:
    return load_german_laws(data_dir / "de" / "gesetze_markdown_all.tar.gz")


def _load_el_statutes(data_dir: Path) -> Corpus:
    return corpus_of("el-statutes", load_greek_statutes(data_dir / "el"), "el")


register(Dataset("de-gesetze", "All 6,636 German federal laws, parsed into § / Art > Absatz > Satz > Nummer > "
                 "Buchstabe", "de", _load_de_gesetze, ("docs",)))
register(Dataset("el-statutes", "Greek statutes (Penal Code and eight laws), gazette headers removed, "
                 "articles split into paragraphs and items", "el", _load_el_statutes, ("docs",)))
