"""The front door: corpora are never changed in place, and the index cache key covers
everything that changes an index (the bug: a cached index came back with the analyzer of
another language)."""

from __future__ import annotations

import json

import pytest

from lexir.datasets import registry
from lexir.datasets.generic import load_corpus
from lexir.retrieval.build import build_retriever
from lexir.types import Corpus, Document


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _folder_corpus(tmp_path):
    rows = [
        {"_id": "x::1", "text": "Der Käufer ist verpflichtet, dem Verkäufer den vereinbarten Kaufpreis zu zahlen."},
        {"_id": "x::2", "text": "Ο αγοραστής υποχρεούται να καταβάλει στον πωλητή το συμφωνημένο τίμημα."},
        {"_id": "x::3", "text": "The buyer shall pay the seller the agreed price and take delivery of the goods."},
    ]
    folder = tmp_path / "holdout"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    return folder


def test_language_change_gets_its_own_index(tmp_path, cache):
    folder = _folder_corpus(tmp_path)
    english = load_corpus(str(folder), language="en")
    first = build_retriever(english, "bm25", {"mode": "stem"})
    assert first.analyzer.config.language == "en"
    greek = load_corpus(str(folder), language="el")
    assert english.language == "en"  # loading it again as Greek changed nothing of the first
    second = build_retriever(greek, "bm25", {"mode": "stem"})
    assert second.analyzer.config.language == "el"
    # the cached English index is still there and still English
    again = build_retriever(english, "bm25", {"mode": "stem"})
    assert again.analyzer.config.language == "en"
    assert len(list((cache / "indexes").iterdir())) == 2


def test_with_language_is_a_copy():
    corpus = Corpus("c", [Document("a::1", "text")], language="pl")
    other = corpus.with_language("de")
    assert (corpus.language, other.language) == ("pl", "de")
    assert other.fingerprint == corpus.fingerprint
    with pytest.raises(AttributeError):
        corpus.language = "en"  # type: ignore[misc]


def test_registry_hands_out_independent_objects():
    first = registry.load("demo")
    second = registry.load("demo")
    assert first is not second and first.corpus is not second.corpus
    first.queries.qrels.clear()
    assert second.queries.qrels, "clearing one caller's judgements reached another caller"
    renamed = load_corpus("demo", language="de")
    assert renamed.language == "de" and registry.load("demo").corpus.language == "pl"


def test_damaged_cache_entry_is_rebuilt(tmp_path, cache):
    corpus = Corpus("c", [Document("a::1", "kupujący płaci cenę"), Document("a::2", "sprzedawca wydaje rzecz")],
                    language="pl")
    build_retriever(corpus, "bm25")
    (folder,) = (cache / "indexes").iterdir()
    (folder / "lexir-cache.json").write_text("{not json", encoding="utf-8")
    again = build_retriever(corpus, "bm25")
    assert again.search("cenę", 1)[0][0] == "a::1"
    assert json.loads((folder / "lexir-cache.json").read_text())["format"] >= 2
