"""German lay questions (``gerlayqa-dev``): questions people asked a Q&A site, with the BGB §§ the
answering lawyer cited (Büttner & Habernal, EACL 2024; the authors' dev split, ``de/gerlayqa-dev/``).

The data is for non-commercial research only: it is read from the data directory, never shipped.
The questions are searched over the BGB **as lexir parses it from de-gesetze** (``gerlayqa-dev``:
2,757 articles, stubs of repealed §§ included), or over all of de-gesetze (``gerlayqa-dev-all``,
107k articles; ids with whitespace written with ``_`` as in ``de-dev``). The set's ``BGB::573b``
ids are the ids lexir gives the BGB, so gold ids map as they are; a gold id lexir's BGB lacks would
be dropped and counted (none is: all 3,637 judgements map; 4 of the authors' 2,377 §§ are newer
than de-gesetze's BGB and are nobody's gold).

Splits: ``dev`` (all 2,151 questions) and a fixed 80/20 split by a hash of the query id,
``tune`` (settings are chosen there) and ``heldout`` (reported once); ``fold0`` .. ``fold4`` are
the five hash folds (``heldout`` is ``fold0``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lexir.datasets.devsets import safe_id
from lexir.datasets.folds import fold_of as hash_fold
from lexir.io import read_qrels_tsv, read_queries_jsonl
from lexir.types import Benchmark, Corpus, QuerySet

FOLDER = Path("de") / "gerlayqa-dev"
FOLDS = 5


def fold_of(query_id: str, folds: int = FOLDS) -> int:
    """The hash fold of a query id (the same on every machine): :func:`lexir.datasets.folds.fold_of`
    with the seed ``gerlayqa``, so ``lexir.learning.folds.kfold(..., seed="gerlayqa")`` cuts these folds."""
    return hash_fold(query_id, folds, seed="gerlayqa")


def lay_questions(folder: Path, corpus: Corpus, name: str) -> Benchmark:
    """The questions of the BEIR folder ``folder`` (queries.jsonl, qrels/dev.tsv) over ``corpus``."""
    queries = read_queries_jsonl(folder / "queries.jsonl")
    qrels = read_qrels_tsv(folder / "qrels" / "dev.tsv")
    known = set(corpus.ids)
    dropped, kept, gold = [], [], {}
    for query in queries:
        judged = qrels.get(query.id, {})
        missing = sorted(d for d in judged if d not in known)
        if not judged or missing:
            dropped.append((query.id, "article not in corpus" if missing else "no gold", ", ".join(missing)))
            continue
        kept.append(query)
        gold[query.id] = dict(judged)
    splits = {"dev": [q.id for q in kept]}
    for f in range(FOLDS):
        splits[f"fold{f}"] = [q.id for q in kept if fold_of(q.id) == f]
    splits["heldout"] = splits["fold0"]
    splits["tune"] = [q.id for q in kept if fold_of(q.id) != 0]
    return Benchmark(corpus, QuerySet(name, kept, gold, dropped, splits))


def _load(data_dir: Path, whole: bool) -> Benchmark:
    from lexir.datasets.generic import open as open_data

    laws = open_data("de-gesetze", data_dir=data_dir)
    if whole:
        docs = [replace(d, id=safe_id(d.id)) if " " in d.id or "\t" in d.id else d for d in laws]
        corpus = Corpus("de-gesetze", docs, language="de", jurisdiction="de")  # acts keyed by the original ids: left out
        return lay_questions(data_dir / FOLDER, corpus, "gerlayqa-dev-all")
    bgb = Corpus("bgb", [d for d in laws if d.act == "BGB"], language="de", acts=[laws.acts["BGB"]], jurisdiction="de")
    return lay_questions(data_dir / FOLDER, bgb, "gerlayqa-dev")


def _register() -> None:
    from lexir.datasets.registry import Dataset, register

    kinds = ("docs", "queries", "qrels")
    register(Dataset("gerlayqa-dev", "German lay questions (frag-einen-anwalt.de) with the BGB §§ a lawyer "
                     "cited, over the BGB of de-gesetze; research use only, read from the data folder",
                     "de", lambda root: _load(root, False), kinds, needs=("de-gesetze",)))
    register(Dataset("gerlayqa-dev-all", "the gerlayqa-dev questions over all of de-gesetze (107k articles): "
                     "the right act must be found too", "de", lambda root: _load(root, True), kinds,
                     needs=("de-gesetze", "gerlayqa-dev")))


_register()
