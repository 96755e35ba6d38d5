"""A corpus file read as a stream (lexir.datasets.stream): a BM25 build over it is the build over
the loaded corpus, and keeps none of its documents."""

import gc
import json
import weakref

import numpy as np
import pytest
from typer.testing import CliRunner

from lexir.cli.main import app
from lexir.datasets import open as open_data
from lexir.datasets import stream
from lexir.io import FormatError, read_corpus_jsonl, read_queries_jsonl
from lexir.retrieval.bm25 import BM25Retriever, make_analyzer
from lexir.retrieval.build import build_retriever, load_index
from lexir.types import Corpus, Document, DocumentStream, documents_fingerprint

FOLDER = "de/gerlayqa-dev"  # a BEIR folder: the BGB's 2,377 paragraphs and lay questions about them


@pytest.fixture(scope="module")
def bgb(data_dir):
    folder = data_dir / FOLDER
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip(f"gerlayqa-dev not found at {folder}")
    return folder


def test_a_streamed_corpus_has_the_loaded_corpus_ids_and_fingerprint(bgb):
    documents = stream(bgb, language="de")
    with pytest.raises(RuntimeError, match="once a pass has ended"):
        documents.ids  # noqa: B018 - unknown before a pass
    passed = list(documents)
    corpus = open_data(bgb, language="de", want="corpus")
    assert [d.id for d in passed] == corpus.ids == documents.ids
    assert documents.fingerprint == corpus.fingerprint == documents_fingerprint(corpus.documents)
    assert documents.name == corpus.name == "gerlayqa-dev" and documents.language == "de"


def test_the_fingerprint_in_steps_is_the_whole_corpus_one():
    docs = [Document(f"a::{i}", f"Text {i} " * (i % 7), f"T{i % 3}") for i in range(2500)]
    whole = Corpus("x", docs)
    documents = DocumentStream("x", lambda: iter(docs))
    list(documents)
    assert documents.fingerprint == whole.fingerprint
    changed = DocumentStream("x", lambda: iter([*docs[:-1], Document("a::2499", "other")]))
    list(changed)
    assert changed.fingerprint != whole.fingerprint


def test_bm25_over_the_stream_is_bm25_over_the_loaded_corpus(bgb):
    corpus = open_data(bgb, language="de", want="corpus")
    loaded = build_retriever(corpus, "bm25", cache=False)
    streamed = build_retriever(stream(bgb, language="de"), "bm25")  # built: a stream has no cache key before it is read
    assert streamed.analyzer.config == loaded.analyzer.config  # German's defaults: stems, verb lemmas
    assert streamed.doc_ids == loaded.doc_ids and streamed.fingerprint == loaded.fingerprint
    for name in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(streamed.matrix, name), getattr(loaded.matrix, name)), name
    for query in read_queries_jsonl(bgb / "queries.jsonl")[:40]:  # lay questions about the BGB
        assert streamed.search(query.text, k=10) == loaded.search(query.text, k=10)


def test_a_build_over_the_stream_keeps_none_of_its_documents(bgb):
    alive: list[weakref.ref] = []

    def read():
        for doc in read_corpus_jsonl(bgb / "corpus.jsonl")[:300]:
            alive.append(weakref.ref(doc))
            yield doc

    documents = DocumentStream("bgb", read, language="de")
    analyzer = make_analyzer(documents, "", "auto", True, "simplemma")
    retriever = BM25Retriever(analyzer).index(documents)
    gc.collect()
    assert len(alive) == len(retriever.doc_ids) == 300
    assert not [ref for ref in alive if ref() is not None]  # every document freed once analysed


def test_a_repeated_id_in_the_stream_is_an_error(tmp_path):
    path = tmp_path / "docs.jsonl"
    rows = [{"_id": "a", "text": "eins"}, {"_id": "b", "text": "zwei"}, {"_id": "a", "text": "drei"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(ValueError, match=r"duplicate document id 'a' \(documents 1 and 3 of the stream\)"):
        build_retriever(stream(path, language="de"), "bm25", cache=False)


def test_a_system_that_needs_the_corpus_refuses_a_stream(bgb):
    with pytest.raises(ValueError, match="system 'dense' needs the corpus itself"):
        build_retriever(stream(bgb, language="de"), "dense")
    with pytest.raises(ValueError, match="system 'rrf' needs the corpus itself"):
        build_retriever(stream(bgb, language="de"), "rrf(systems=bm25+bm25(mode=raw))")


def test_only_jsonl_corpora_stream(tmp_path, bgb):
    assert stream("pl-exams") is None  # a registered dataset: opened
    code = tmp_path / "kk.json"
    code.write_text(json.dumps({"1": "Odpowiedzialności karnej podlega ten tylko"}), encoding="utf-8")
    assert stream(code) is None  # a code file: opened
    assert stream(bgb / "corpus.jsonl", language="de").name == "corpus"
    notes = []
    assert stream(bgb, notify=notes.append).language == "de"  # detected from the first documents
    assert "detected language 'de'" in notes[0]


def test_lexir_index_streams_a_jsonl_corpus_and_names_a_bad_line(tmp_path, bgb):
    runner = CliRunner()
    result = runner.invoke(app, ["index", str(bgb), "--language", "de", "--output", str(tmp_path / "idx")])
    assert result.exit_code == 0, result.output
    assert "indexed 2377 documents" in result.output
    saved = load_index(tmp_path / "idx")
    corpus = open_data(bgb, language="de", want="corpus")
    assert saved.doc_ids == corpus.ids and saved.fingerprint == corpus.fingerprint
    assert saved.search("Kündigung der Wohnung wegen Eigenbedarf", k=5) == \
        build_retriever(corpus, "bm25", cache=False).search("Kündigung der Wohnung wegen Eigenbedarf", k=5)

    bad = tmp_path / "bad.jsonl"
    lines = (bgb / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:50]
    bad.write_text("\n".join([*lines, '{"_id": "x", "text": ']) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["index", str(bad), "--language", "de", "--output", str(tmp_path / "bad-idx")])
    assert result.exit_code == 2 and "bad.jsonl:51: invalid JSON" in result.output
    assert not (tmp_path / "bad-idx").exists()  # nothing half-written
    with pytest.raises(FormatError):
        list(stream(bad, language="de"))


def test_a_registered_dataset_with_a_document_reader_streams(data_dir):
    """de-gesetze offers its documents a law at a time (lexir index de-gesetze streams them);
    a dated name, and a dataset without a reader, are opened instead."""
    if not (data_dir / "de" / "gesetze_markdown_all.tar.gz").is_file():
        pytest.skip("German statutes not found")
    documents = stream("de-gesetze", data_dir=data_dir)
    assert isinstance(documents, DocumentStream) and documents.name == "de-gesetze" and documents.language == "de"
    assert stream("de-gesetze", language="el", data_dir=data_dir).language == "el"
    assert stream("de-gesetze-history@2013-06-01", data_dir=data_dir) is None
    assert stream("pl-codes", data_dir=data_dir) is None  # no document reader: opened


def test_the_french_codes_stream_as_the_loaded_corpus(data_dir):
    """fr-codes's document reader (lexir index fr-codes streams it): the loaded corpus's documents,
    ids and fingerprint, a code at a time, the Code du travail last."""
    if not (data_dir / "fr" / "codes.tar.xz").is_file():
        pytest.skip("French codes not found")
    documents = stream("fr-codes", data_dir=data_dir)
    corpus = open_data("fr-codes", data_dir=data_dir, want="corpus")
    n = 0
    for doc, want in zip(documents, corpus, strict=True):
        n += 1
        assert doc == want, n
    assert documents.ids == corpus.ids and documents.fingerprint == corpus.fingerprint
