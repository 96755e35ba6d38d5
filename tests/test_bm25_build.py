"""The BM25 build's memory-saving steps give what the plain whole-array build gives, bit for bit:
the analysis's flat int32 term ids and vocabulary (titles' ids cached), and the score matrix
counted in two passes and scored a run of columns at a time (``_CHUNK``)."""

from __future__ import annotations

import numpy as np
import pytest

from lexir.analysis import Analyzer
from lexir.retrieval import bm25_matrix
from lexir.retrieval.bm25 import BM25Retriever, analysed, document_tokens
from lexir.retrieval.bm25_matrix import ABSENCE_SCORED, METHODS, CollectionStats, ScoreMatrix, idf, tfc
from lexir.types import Corpus, Document


def _reference(term_ids, lengths, n_terms, k1, b, method, stats=None):
    """The score matrix as lexir built it before (one sort of every (term, document) pair, every
    posting scored in one array expression): data, indices, indptr, nonoccurrence."""
    n_docs = len(lengths)
    keys = np.asarray(term_ids, dtype=np.int64) * max(n_docs, 1) + np.repeat(np.arange(n_docs, dtype=np.int64),
                                                                             lengths)
    keys, tf = np.unique(keys, return_counts=True)
    terms, docs = np.divmod(keys, max(n_docs, 1))
    df = np.bincount(terms, minlength=n_terms)
    avg = lengths.mean() if stats is None else stats.avg_length()
    idf_df, idf_docs = (df, n_docs) if stats is None else (stats.df, stats.n_docs)
    distinct, which = np.unique(idf_df, return_inverse=True)
    idfs = [idf(method, d, idf_docs) if d else 0.0 for d in distinct.tolist()]
    term_idf = np.array(idfs, dtype=np.float64)[which].astype(np.float32)
    scores = term_idf[terms] * tfc(method, tf.astype(np.float32), lengths[docs], avg, k1, b)
    absent = None
    if method in ABSENCE_SCORED:
        per = tfc(method, 0, avg, avg, k1, b)
        absent = np.array([idfs[which[t]] * per if idf_df[t] else 0.0 for t in range(n_terms)], dtype=np.float32)
        scores -= absent[terms]
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return scores.astype(np.float32), docs.astype(np.int32), indptr, absent


def _same(matrix: ScoreMatrix, reference) -> None:
    data, indices, indptr, absent = reference
    for got, want in ((matrix.data, data), (matrix.indices, indices), (matrix.indptr, indptr)):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    if absent is None:
        assert matrix.nonoccurrence is None
    else:
        assert matrix.nonoccurrence.tobytes() == absent.tobytes()


@pytest.fixture(scope="module")
def demo_ids(demo_bench):
    ids, lengths, vocab = analysed(demo_bench.corpus, Analyzer.create("pl", "stem"), title_weight=2)
    vocab.setdefault("", len(vocab))
    return ids, lengths, vocab


ANALYSES = [("pl", "stem", {}), ("pl", "raw", {"stopwords": False}), ("pl", "lemma", {}),
            ("pl", "lemma", {"lemmatizer": "morfeusz", "families": True}),
            ("de", "stem", {"stoplist": "iso", "verb_lemmas": True}),  # German's default, on Polish text too
            ("de", "stem", {"compounds": "both", "min_length": 2}),
            ("el", "stem", {})]  # Greek stems some words to "" (a term in tokens(), kept as one)


@pytest.fixture(scope="module")
def greek(data_dir):
    import lexir

    return lexir.load("el-dev").corpus  # 1,118 articles of Greek codes


@pytest.mark.parametrize(("language", "mode", "options"), ANALYSES)
def test_analysed_is_document_tokens_in_first_occurrence_order(request, demo_bench, language, mode, options):
    """The flat term ids and the vocabulary are those of document_tokens() with ids handed out
    in order of first occurrence (a title's terms before its text's), stopwords dropped, for
    every analysis (analysed() maps each distinct piece of text to its terms' ids once)."""
    corpus = request.getfixturevalue("greek") if language == "el" else demo_bench.corpus
    analyzer = Analyzer.create(language, mode, **options)
    ids, lengths, vocab = analysed(corpus, analyzer, title_weight=2)
    assert ids.dtype == np.int32 and lengths.dtype == np.int64
    want_ids, want_lengths, want_vocab = _reference_ids(corpus, Analyzer.create(language, mode, **options))
    assert list(vocab.items()) == list(want_vocab.items())
    assert ids.tolist() == want_ids and lengths.tolist() == want_lengths


def _reference_ids(corpus, reference: Analyzer) -> tuple[list[int], list[int], dict[str, int]]:
    """What analysed() must give (title weight 2), made the plain way: document_tokens() of each
    document (``reference`` with caches of its own), ids handed out in order of first occurrence."""
    vocab: dict[str, int] = {}
    ids, lengths = [], []
    for doc in corpus:
        tokens = document_tokens(reference, doc.title, doc.text, 2)
        ids += [vocab.setdefault(t, len(vocab)) for t in tokens]
        lengths.append(len(tokens))
    return ids, lengths, vocab


# Pieces of several tokens or of none (Analyzer.pieces), first and last in a title or a text,
# repeated, in an empty document and beside one; a lone surrogate (valid JSON: "\\udc80").
EDGES = [("Art. 1–3 BGB", "1–3 Abs.–Nr. §§ 12–14 „Miet–Pacht“ 1–3"), ("", "§"), ("", ""),
         ("§ 5", "x\udc80y Straße–Weg ß–ss ΑΒΓ–δ 1–3"), ("1–3", "Ende 4–5–6")]


@pytest.mark.parametrize(("language", "mode", "options"), [("de", "stem", {}), ("de", "lemma", {}),
                                                           ("de", "raw", {"compounds": "both"})])
def test_analysed_pieces_of_several_terms(language, mode, options):
    """A piece of several terms becomes a placeholder replaced at the end (in place), and its
    document's length counts its terms: the ids are document_tokens()'s."""
    corpus = Corpus("edges", [Document(f"d{i}", text, title) for i, (title, text) in enumerate(EDGES * 3)],
                    language=language)
    analyzer = Analyzer.create(language, mode, **options)
    ids, lengths, vocab = analysed(corpus, analyzer, title_weight=2)
    want_ids, want_lengths, want_vocab = _reference_ids(corpus, Analyzer.create(language, mode, **options))
    assert list(vocab.items()) == list(want_vocab.items())
    assert ids.tolist() == want_ids and lengths.tolist() == want_lengths
    assert ids.min() >= 0 and lengths.sum() == len(ids)


@pytest.mark.parametrize(("language", "mode", "options"), [ANALYSES[0], ANALYSES[5]])
def test_analysed_with_a_table_and_batches_that_must_grow(demo_bench, monkeypatch, language, mode, options):
    """The compiled piece look-up (bm25_pieces) from a table of 8 slots and an arena of 16 bytes,
    over batches of one document or of 4 KiB: it stops at a new piece that does not fit, grows (rehashing
    the pending pieces' slots too) and goes on; the ids are those of a table that never grows."""
    from lexir.retrieval import bm25_pieces

    corpus = Corpus("mixed", list(demo_bench.corpus)[:400] + [Document(f"e{i}", text, title)
                                                               for i, (title, text) in enumerate(EDGES)],
                    language=language)
    want = analysed(corpus, Analyzer.create(language, mode, **options), title_weight=2)
    init = bm25_pieces.PieceTable.__init__
    monkeypatch.setattr(bm25_pieces.PieceTable, "__init__", lambda self: init(self, capacity=8, arena=16))
    for batch in (1, 4096):  # a document a batch; several, the table growing between them
        monkeypatch.setattr(bm25_pieces, "_BATCH_BYTES", batch)
        got = analysed(corpus, Analyzer.create(language, mode, **options), title_weight=2)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist() and got[2] == want[2]


def _fnv1a(piece: bytes, bits: int) -> int:
    h = 14695981039346656037
    for byte in piece:
        h = ((h ^ byte) * 1099511628211) % 2**64
    return h & ((1 << bits) - 1)


def test_pieces_of_the_same_hash_are_told_apart_by_their_bytes(demo_bench, monkeypatch):
    """The piece table compares a piece's bytes whenever hash and length match: with its hashes
    cut to 12 bits, two different words of the same length and hash (found here) stay two terms,
    and the demo's documents get the ids of a table with whole hashes."""
    from itertools import product

    from lexir.retrieval import bm25_pieces

    seen: dict[int, bytes] = {}
    for letters in product("abcdefghij", repeat=5):
        word = "".join(letters).encode()
        twin = seen.setdefault(_fnv1a(word, 12), word)
        if twin != word:
            break
    assert twin != word and len(twin) == len(word) and _fnv1a(twin, 12) == _fnv1a(word, 12)
    texts = [f"{twin.decode()} {word.decode()} {twin.decode()}", word.decode(), f"zz {twin.decode()}"]
    small = Corpus("twins", [Document(f"t{i}", text) for i, text in enumerate(texts)], language="pl")
    corpus = Corpus("mixed", list(demo_bench.corpus)[:400] + list(small), language="pl")
    want = analysed(corpus, Analyzer.create("pl", "raw"), title_weight=2)
    init = bm25_pieces.PieceTable.__init__
    monkeypatch.setattr(bm25_pieces.PieceTable, "__init__", lambda self: init(self, hash_bits=12))
    got = analysed(corpus, Analyzer.create("pl", "raw"), title_weight=2)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist() and got[2] == want[2]
    ids, lengths, vocab = analysed(small, Analyzer.create("pl", "raw"), title_weight=2)
    assert vocab[twin.decode()] != vocab[word.decode()]
    assert ids.tolist() == [vocab[t] for text in texts for t in text.split()]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("chunk", [1, 97, 1 << 20])
def test_build_equals_whole_array_build(demo_ids, monkeypatch, method, chunk):
    """Scored in runs of columns of any size (one column at a time, some, all), the matrix is
    the one-sort whole-array build's, bit for bit, for every BM25 variant."""
    ids, lengths, vocab = demo_ids
    monkeypatch.setattr(bm25_matrix, "_CHUNK", chunk)
    matrix = ScoreMatrix.build(ids, lengths, len(vocab), 1.2, 0.75, method)
    _same(matrix, _reference(ids, lengths, len(vocab), 1.2, 0.75, method))
    # int64 term ids (index_ids, the shards' pieces) give the same matrix
    _same(ScoreMatrix.build(ids.astype(np.int64), lengths, len(vocab), 1.2, 0.75, method),
          _reference(ids, lengths, len(vocab), 1.2, 0.75, method))


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_shard_build_with_collection_stats(demo_ids, monkeypatch, method):
    """A part of the documents scored with the whole collection's statistics (a shard)."""
    ids, lengths, vocab = demo_ids
    monkeypatch.setattr(bm25_matrix, "_CHUNK", 50)
    half = len(lengths) // 2
    cut = int(lengths[:half].sum())
    stats = CollectionStats.of(ids, lengths, len(vocab))
    keys = np.unique(ids.astype(np.int64) * len(lengths) + np.repeat(np.arange(len(lengths)), lengths))
    assert stats.df.tolist() == np.bincount(keys // len(lengths), minlength=len(vocab)).tolist()
    assert (stats.n_docs, stats.total_length) == (len(lengths), int(lengths.sum()))
    matrix = ScoreMatrix.build(ids[cut:], lengths[half:], len(vocab), 1.2, 0.75, method, stats=stats)
    _same(matrix, _reference(ids[cut:], lengths[half:], len(vocab), 1.2, 0.75, method, stats))


def test_build_edge_cases():
    """No documents, empty documents, and input the build refuses."""
    empty = ScoreMatrix.build(np.zeros(0, np.int32), np.zeros(0, np.int64), 1, 1.2, 0.75, "lucene")
    assert empty.indptr.tolist() == [0, 0] and len(empty.data) == 0 and empty.num_docs == 0
    blank = ScoreMatrix.build(np.array([1, 1, 0], np.int32), np.array([0, 3, 0], np.int64), 3, 1.2, 0.75, "lucene")
    _same(blank, _reference(np.array([1, 1, 0]), np.array([0, 3, 0]), 3, 1.2, 0.75, "lucene"))
    assert blank.indices.tolist() == [1, 1] and blank.indptr.tolist() == [0, 1, 2, 2]
    with pytest.raises(ValueError, match="must lie in"):
        ScoreMatrix.build(np.array([0, 3], np.int32), np.array([2], np.int64), 3, 1.2, 0.75, "lucene")
    with pytest.raises(ValueError, match="must lie in"):
        ScoreMatrix.build(np.array([-1, 0], np.int32), np.array([2], np.int64), 3, 1.2, 0.75, "lucene")
    with pytest.raises(ValueError, match="term ids for documents"):
        ScoreMatrix.build(np.array([0, 1], np.int32), np.array([3], np.int64), 3, 1.2, 0.75, "lucene")


def test_index_ids_equals_index(demo_bench):
    """Documents given as id lists (tuning) index as the corpus does."""
    retriever = BM25Retriever(Analyzer.create("pl", "stem")).index(demo_bench.corpus)
    ids, lengths, vocab = analysed(demo_bench.corpus, retriever.analyzer)
    ends = np.cumsum(lengths).tolist()
    per_doc = [ids[a:b].tolist() for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    other = BM25Retriever(retriever.analyzer).index_ids(per_doc, vocab, demo_bench.corpus.ids, "x")
    assert other.vocab == retriever.vocab
    for key in ("data", "indices", "indptr"):
        assert getattr(other.matrix, key).tobytes() == getattr(retriever.matrix, key).tobytes()
