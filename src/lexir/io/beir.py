"""BEIR folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from lexir.io.errors import FormatError
from lexir.io.jsonl import field, read_jsonl
from lexir.types import Document, Qrels, Query


def read_corpus_jsonl(path: str | Path) -> list[Document]:
    """A JSONL corpus: ``_id`` (or ``id``), ``text`` (or ``contents``), optional ``title``; an id
    given twice is an error naming both lines."""
    docs = list(iter_corpus_jsonl(path))
    first: dict[str, int] = {}
    for i, doc in enumerate(docs):
        seen = first.setdefault(doc.id, i)
        if seen != i:
            lines = [lineno for lineno, _ in read_jsonl(path)]  # each document's line, read again only here
            raise FormatError(path, lines[i], f"document id {doc.id!r} given twice (first on line {lines[seen]})",
                              field="_id")
    return docs


def iter_corpus_jsonl(path: str | Path) -> Iterator[Document]:
    """The documents of a JSONL corpus (see :func:`read_corpus_jsonl`) as the file is read."""
    titles: dict[str, str] = {}  # one string per distinct title: a code's units repeat their article's
    for lineno, obj in read_jsonl(path):
        # field()'s answers, looked up directly where they are strings (a million lines' calls)
        get = obj.get
        doc_id = get("_id")
        if type(doc_id) is not str:
            doc_id = get("id") if doc_id is None else None
            if type(doc_id) is not str:
                doc_id = field(obj, ("_id", "id"), path, lineno)
        text = get("text")
        if type(text) is not str:
            text = get("contents") if text is None else None
            if type(text) is not str:
                text = field(obj, ("text", "contents"), path, lineno)
        title = get("title") or ""
        title = title if isinstance(title, str) else str(title)
        yield Document(doc_id, text, titles.setdefault(title, title))


def read_queries_jsonl(path: str | Path) -> list[Query]:
    """BEIR queries: ``_id`` (or ``id``) and ``text`` (or ``query``) a line; an id given twice is an
    error naming both lines (one would silently replace the other in a query set)."""
    queries, first = [], {}
    for lineno, obj in read_jsonl(path):
        qid = field(obj, ("_id", "id"), path, lineno)
        seen = first.setdefault(qid, lineno)
        if seen != lineno:
            raise FormatError(path, lineno, f"query id {qid!r} given twice (first on line {seen})", field="_id")
        queries.append(Query(qid, field(obj, ("text", "query"), path, lineno)))
    return queries


def read_qrels_tsv(path: str | Path) -> Qrels:
    """BEIR qrels: a header ``query-id corpus-id score`` then one tab-separated row each."""
    path = Path(path)
    qrels: Qrels = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        cells = line.split("\t")
        if lineno == 1 and not cells[-1].strip().lstrip("-").isdigit():
            continue  # the header row
        if not line.strip():
            continue
        if len(cells) != 3:
            raise FormatError(path, lineno, f"expected 3 tab-separated fields, got {len(cells)}")
        try:
            qrels.setdefault(cells[0], {})[cells[1]] = int(cells[2])
        except ValueError:
            raise FormatError(path, lineno, f"score {cells[2]!r} is not an integer", field="score") from None
    return qrels


def read_beir(folder: str | Path, split: str = "test") -> tuple[list[Document], list[Query], Qrels]:
    folder = Path(folder)
    if not (folder / "corpus.jsonl").is_file():
        raise FormatError(folder, None, "not a BEIR folder: corpus.jsonl missing")
    docs = read_corpus_jsonl(folder / "corpus.jsonl")
    queries = read_queries_jsonl(folder / "queries.jsonl") if (folder / "queries.jsonl").is_file() else []
    qrels_path = folder / "qrels" / f"{split}.tsv"
    qrels = read_qrels_tsv(qrels_path) if qrels_path.is_file() else {}
    return docs, queries, qrels


def write_beir(folder: str | Path, docs: list[Document], queries: list[Query], qrels: Qrels, split: str = "test") -> None:
    folder = Path(folder)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for d in docs:
            out.write(json.dumps({"_id": d.id, "title": d.title, "text": d.text}, ensure_ascii=False) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as out:
        for q in queries:
            out.write(json.dumps({"_id": q.id, "text": q.text}, ensure_ascii=False) + "\n")
    with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for qid, judged in qrels.items():
            for doc_id, grade in judged.items():
                out.write(f"{qid}\t{doc_id}\t{grade}\n")
