"""Reading and writing runs, qrels, topics and corpora in TREC, BEIR and JSONL form."""

from lexir.io.beir import (
    iter_corpus_jsonl,
    read_beir,
    read_corpus_jsonl,
    read_qrels_tsv,
    read_queries_jsonl,
    write_beir,
)
from lexir.io.errors import FormatError
from lexir.io.trec import read_qrels, read_run, read_topics, write_qrels, write_run

__all__ = [
    "FormatError", "iter_corpus_jsonl", "read_beir", "read_corpus_jsonl", "read_qrels", "read_qrels_tsv",
    "read_queries_jsonl", "read_run", "read_topics", "write_beir", "write_qrels", "write_run",
]
