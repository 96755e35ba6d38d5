import math

import numpy as np
import pytest

from lexir.analysis import Analyzer
from lexir.retrieval.base import get_system, parse_params, system_names
from lexir.retrieval.bm25 import BM25Retriever
from lexir.retrieval.build import build_retriever
from lexir.types import Corpus, Document

TINY = Corpus("tiny", [
    Document("a::1", "kara grzywny kara"),
    Document("a::2", "kara pozbawienia wolności orzeczona przez sąd"),
    Document("a::3", "sąd okręgowy rozpoznaje apelację"),
], language="pl")


def lucene_bm25(query, doc, docs, k1=1.2, b=0.75):
    # Lucene's BM25 (which bm25s's "lucene" method follows) drops the constant (k1 + 1)
    # numerator factor; rankings are the same as Robertson's.
    n, avgdl = len(docs), sum(len(d) for d in docs) / len(docs)
    score = 0.0
    for term in dict.fromkeys(query):
        df = sum(term in d for d in docs)
        if not df:
            continue
        tf = doc.count(term)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        score += idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))
    return score


def test_scores_match_the_lucene_formula():
    analyzer = Analyzer.create("pl", "raw", stopwords=False)
    retriever = BM25Retriever(analyzer, k1=1.2, b=0.75).index(TINY)
    docs = [analyzer(d.text) for d in TINY]
    hits = dict(retriever.search("kara sąd", 10))
    for doc, tokens in zip(TINY, docs, strict=True):
        assert hits[doc.id] == pytest.approx(lucene_bm25(["kara", "sąd"], tokens, docs), rel=1e-5)


def test_repeated_query_terms_are_collapsed_unless_asked():
    analyzer = Analyzer.create("pl", "raw", stopwords=False)
    once = dict(BM25Retriever(analyzer).index(TINY).search("kara", 10))
    twice = dict(BM25Retriever(analyzer).index(TINY).search("kara kara", 10))
    kept = dict(BM25Retriever(analyzer, dedupe_query=False).index(TINY).search("kara kara", 10))
    assert twice == once
    assert kept["a::1"] == pytest.approx(2 * once["a::1"])


def test_empty_and_unknown_queries_give_empty_results():
    retriever = BM25Retriever(Analyzer.create("pl", "raw")).index(TINY)
    assert retriever.search("", 10) == []
    assert retriever.search("i w z", 10) == []  # stopwords only
    assert retriever.search("zupełnienieznaneslowo", 10) == []
    run = retriever.search_many([], 10)
    assert run == {}


def test_non_matching_documents_are_not_returned():
    retriever = BM25Retriever(Analyzer.create("pl", "raw")).index(TINY)
    assert [d for d, _ in retriever.search("apelację", 10)] == ["a::3"]


def test_saved_index_loads_memory_mapped_with_identical_results(tmp_path, demo_bench):
    retriever = BM25Retriever(Analyzer.create("pl", "stem")).index(demo_bench.corpus)
    retriever.save(tmp_path / "idx")
    loaded = BM25Retriever.load(tmp_path / "idx")
    assert loaded.analyzer.config == retriever.analyzer.config
    queries = demo_bench.queries.queries[:20]
    assert loaded.search_many(queries) == retriever.search_many(queries)
    assert type(loaded.matrix.data).__name__ == "memmap"


def test_incomplete_index_folder_is_refused(tmp_path):
    (tmp_path / "idx").mkdir()
    with pytest.raises(FileNotFoundError, match="not a complete lexir BM25 index"):
        BM25Retriever.load(tmp_path / "idx")


def test_gold_article_found_for_real_exam_question(demo_bench):
    retriever = BM25Retriever(Analyzer.create("pl", "raw")).index(demo_bench.corpus)
    # "art. 16 § 2 k.k.": Przygotowanie jest karalne tylko wtedy, gdy ustawa tak stanowi.
    top = [doc for doc, _ in retriever.search("przygotowanie do popełnienia czynu zabronionego jest karalne", 5)]
    assert "kk::16" in top


def test_system_registry_builds_with_typed_params(demo_bench):
    system = get_system("bm25")
    assert system.resolve(parse_params(["k1=0.9", "dedupe_query=false", "mode=stem"])) == {
        **system.defaults, "k1": 0.9, "dedupe_query": False, "mode": "stem"}
    with pytest.raises(ValueError, match="no parameter 'kone'; valid: b, .*dedupe_query"):
        system.resolve({"kone": 1})
    with pytest.raises(ValueError, match="k1='high': expected float"):
        system.resolve({"k1": "high"})
    with pytest.raises(ValueError, match="unknown system 'bm26'; valid: .*bm25"):
        get_system("bm26")
    assert {"bm25", "bm25s-default", "rank-bm25"} <= set(system_names())


def test_index_cache_is_reused_and_keyed_by_params(demo_bench, tmp_path, monkeypatch):
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path))
    first = build_retriever(demo_bench.corpus, "bm25", {"k1": "1.0"})
    again = build_retriever(demo_bench.corpus, "bm25", {"k1": "1.0"})
    other = build_retriever(demo_bench.corpus, "bm25", {"k1": "1.1"})
    folders = sorted(p.name for p in (tmp_path / "indexes").iterdir())
    assert len(folders) == 2
    assert type(again.matrix.data).__name__ == "memmap"
    q = demo_bench.queries.queries[0].text
    assert again.search(q) == first.search(q) != other.search(q)


def test_peers_rank_the_gold_article(demo_bench):
    for name in ("bm25s-default", "rank-bm25"):
        retriever = get_system(name).build(demo_bench.corpus)
        top = [d for d, _ in retriever.search("przygotowanie do popełnienia czynu zabronionego jest karalne", 10)]
        assert "kk::16" in top, name


METHODS = ["lucene", "robertson", "atire", "bm25l", "bm25+"]


def _bm25s_index(retriever: BM25Retriever, corpus: Corpus):
    """bm25s's own index (its public ``BM25.index``) of the documents as ``retriever`` analyses them."""
    import bm25s

    ids = [[retriever.vocab[t] for t in retriever.document_tokens(d.title, d.text)] for d in corpus]
    engine = bm25s.BM25(k1=retriever.k1, b=retriever.b, method=retriever.method, backend="numba")
    engine.index((ids, retriever.vocab), show_progress=False)
    return engine


def _bm25s_hits(engine, retriever: BM25Retriever, queries, k: int) -> list:
    """Each query's hits by bm25s's public ``BM25.retrieve`` on the term ids ``retriever`` reads
    from its text, in bm25s's order, documents scoring 0 left out (as lexir leaves them out)."""
    lists = retriever.queries_ids([q.text for q in queries])
    asked = [i for i, ids in enumerate(lists) if ids]
    found: dict[int, list] = {i: [] for i in range(len(queries))}
    if asked:
        docs, scores = engine.retrieve([lists[i] for i in asked], k=min(k, len(retriever.doc_ids)),
                                       n_threads=1, return_as="tuple", show_progress=False)
        for i, row_docs, row_scores in zip(asked, docs.tolist(), scores.tolist(), strict=True):
            found[i] = [(retriever.doc_ids[d], s) for d, s in zip(row_docs, row_scores, strict=True) if s > 0]
    return [(q.id, found[i]) for i, q in enumerate(queries)]


def _hits(retriever, queries, k: int) -> list:
    return [(qid, list(found.items())) for qid, found in retriever.search_many(queries, k).items()]


@pytest.mark.parametrize("method", METHODS)
def test_score_matrix_equals_bm25s_index(demo_bench, method):
    """lexir builds the score matrix with whole-array numpy; it must be bm25s's own, bit for bit."""
    retriever = BM25Retriever(Analyzer.create("pl", "stem"), method=method, title_weight=2).index(demo_bench.corpus)
    engine = _bm25s_index(retriever, demo_bench.corpus)
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(retriever.matrix, key), engine.scores[key]), (method, key)
    assert engine.scores["num_docs"] == retriever.matrix.num_docs
    if engine.nonoccurrence_array is None:
        assert retriever.matrix.nonoccurrence is None
    else:
        assert np.array_equal(retriever.matrix.nonoccurrence, engine.nonoccurrence_array)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dedupe", [True, False])
@pytest.mark.parametrize("blocks", [False, True])
def test_hits_are_bm25s_retrieve_hits_in_bm25s_order(demo_bench, monkeypatch, tmp_path, method, dedupe, blocks):
    """Every query's hits are those of bm25s's public ``retrieve``: the same documents, the same
    scores, in the same order, ties included (equal scores are common on statutes), fresh and
    memory-mapped, at any k, one query or a batch; with the scan over blocks of documents (large
    corpora) too, where robertson's zero idf and bm25l's and bm25+'s scores of absent terms
    must not be skipped wrongly."""
    from lexir.retrieval import bm25_kernel
    from lexir.types import Query

    monkeypatch.setattr(bm25_kernel, "_BLOCKS_FROM", 0 if blocks else 1 << 62)
    retriever = BM25Retriever(Analyzer.create("pl", "raw"), method=method, dedupe_query=dedupe).index(demo_bench.corpus)
    loaded = BM25Retriever.load(retriever.save(tmp_path / "index"))
    engine = _bm25s_index(retriever, demo_bench.corpus)
    queries = [*demo_bench.queries.queries, Query("empty", ""), Query("unknown", "qqqq zzzz"), Query("stop", "i w z")]
    for k in (1, 10, 100, len(demo_bench.corpus) + 5):
        reference = _bm25s_hits(engine, retriever, queries, k)
        assert _hits(retriever, queries, k) == reference, k
        assert _hits(loaded, queries, k) == reference, k
    one_by_one = [(q.id, list(dict(retriever.search(q.text, 10)).items())) for q in queries[:20]]
    assert one_by_one == _bm25s_hits(engine, retriever, queries[:20], 10)
    # The comparison meant something: many queries have equal scores among their first 100
    # hits, whose order only bm25s's heap decides.
    tied = [any(a[1] == b[1] for a, b in zip(hits, hits[1:], strict=False)) for _, hits in _hits(retriever, queries, 100)]
    assert sum(tied) > len(queries) // 4


@pytest.mark.parametrize("k", [10, 100])
def test_untouched_blocks_are_skipped_exactly(data_dir, monkeypatch, k):
    """Short queries over the five Polish codes touch few of the 68 blocks of 64 articles: the
    block scan skips the rest, and the hits must still be bm25s's, in bm25s's order."""
    from lexir.datasets import open as open_data
    from lexir.retrieval import bm25_kernel
    from lexir.types import Query

    corpus = open_data("pl-codes", data_dir=data_dir)
    retriever = BM25Retriever(Analyzer.create("pl", "raw")).index(corpus)
    # Keyword queries: each sampled article's two longest words.
    queries = [Query(d.id, " ".join(sorted(d.text.split(), key=len)[-2:])) for d in list(corpus)[::7]]
    matrix = retriever.matrix
    blocks_hit = [len({int(doc) >> 6 for t in ids for doc in matrix.indices[matrix.indptr[t]:matrix.indptr[t + 1]]})
                  for ids in retriever.queries_ids([q.text for q in queries])]
    assert sorted(blocks_hit)[len(blocks_hit) // 2] < (len(corpus) + 63) // 64 // 2  # most blocks are skipped
    monkeypatch.setattr(bm25_kernel, "_BLOCKS_FROM", 0)
    assert _hits(retriever, queries, k) == _bm25s_hits(_bm25s_index(retriever, corpus), retriever, queries, k)


def test_kernel_equals_bm25s_retrieve_with_negative_scores():
    """No BM25 method stores negative scores (robertson's idf is floored at 0), but a matrix
    may: then documents scoring 0 can enter the heap, and the block scan must not skip them.
    Compared with bm25s's public ``retrieve`` over the same matrix, ties included."""
    import bm25s

    from lexir.retrieval import bm25_kernel
    from lexir.retrieval.bm25_matrix import ScoreMatrix

    rng = np.random.default_rng(7)
    n_docs, n_terms = 1000, 40
    # Postings only in the first half: the second half's blocks are never touched.
    columns = [np.sort(rng.choice(n_docs // 2, size=rng.integers(1, 60), replace=False)) for _ in range(n_terms)]
    indptr = np.concatenate([[0], np.cumsum([len(c) for c in columns])]).astype(np.int64)
    indices = np.concatenate(columns).astype(np.int32)
    data = rng.choice(np.array([-1.5, -0.5, 0.25, 0.5, 1.0, 2.0], dtype=np.float32), size=len(indices))
    queries = [rng.choice(n_terms, size=rng.integers(1, 4), replace=False) for _ in range(200)]
    pointers = np.concatenate([[0], np.cumsum([len(q) for q in queries])]).astype(np.int64)
    flat = np.concatenate(queries).astype(np.int64)
    matrix = ScoreMatrix(data, indices, indptr, n_docs)
    engine = bm25s.BM25(backend="numba")
    engine.scores = {"data": data, "indptr": indptr, "indices": indices, "num_docs": n_docs}
    engine.vocab_dict = {str(t): t for t in range(n_terms)}
    engine.unique_token_ids_set, engine.nonoccurrence_array = set(range(n_terms)), None
    for k in (5, 50, 600):
        ref_docs, ref_scores = engine.retrieve([q.tolist() for q in queries], k=k, n_threads=1, return_as="tuple",
                                               show_progress=False)
        for blocks_from in (0, 1 << 62):
            bm25_kernel._BLOCKS_FROM = blocks_from
            try:
                docs, scores, positive = matrix.top_k(flat, pointers, k)
            finally:
                bm25_kernel._BLOCKS_FROM = 1 << 16
            assert np.array_equal(scores, ref_scores) and np.array_equal(docs, ref_docs), (k, blocks_from)
            assert np.array_equal(positive, (scores > 0).sum(axis=1))
    # At k=600 the heap starts with negative scores, and documents of untouched blocks (score 0)
    # replace them: the case where skipping those blocks would go wrong.
    assert (ref_docs >= n_docs // 2).any()


def test_old_saved_index_loads(tmp_path, demo_bench):
    """A folder bm25s itself saved (the layout of every index saved before lexir wrote its own
    matrix) loads, with the same hits; and bm25s loads lexir's."""
    import bm25s

    from lexir.io.generations import current

    retriever = BM25Retriever(Analyzer.create("pl", "raw"), method="bm25l").index(demo_bench.corpus)
    folder = current(retriever.save(tmp_path / "new"))
    queries = demo_bench.queries.queries[:30]
    theirs = bm25s.BM25.load(str(folder), mmap=True, load_vocab=True)
    assert np.array_equal(theirs.scores["data"], retriever.matrix.data)
    assert np.array_equal(theirs.nonoccurrence_array, retriever.matrix.nonoccurrence)
    assert theirs.vocab_dict == retriever.vocab
    _bm25s_index(retriever, demo_bench.corpus).save(str(folder), corpus=None)  # bm25s's files over lexir's
    assert BM25Retriever.load(folder).search_many(queries) == retriever.search_many(queries)


def _real_texts(data_dir, language: str) -> list[str]:
    """Real query-like texts: pl-exams questions (question + options), the provisions of a Greek
    law (OCR text: hyphenated line breaks, accents, final sigma), paragraphs of German decisions."""
    import json

    from lexir.datasets import open as open_data

    if language == "pl":
        return [q.text for q in open_data("pl-exams", data_dir=data_dir).queries.queries]
    if language == "el":
        law = json.loads((data_dir / "el" / "law-2472-1997.json").read_text(encoding="utf-8"))
        return [p["content"] for p in law["provisions"]]
    lines = (data_dir / "de" / "refex" / "documents.jsonl").read_text(encoding="utf-8").splitlines()
    return [p for line in lines for p in json.loads(line)["text"].split("\n") if p.strip()][:1500]


@pytest.mark.parametrize("language", ["pl", "el", "de"])
@pytest.mark.parametrize("mode", ["raw", "stem", "lemma"])
def test_batch_query_analysis_equals_one_query_at_a_time(data_dir, language, mode):
    """search_many analyses a batch of queries as one joined text; every query must get exactly
    the terms and ids it gets alone (and that the analyzer gives it), whatever the language."""
    texts = _real_texts(data_dir, language)
    # Edge cases among them: empty, stopwords only, a word split over a line break, "_" (another
    # tokeniser), the batch's sentinel itself (the batch is then analysed text by text).
    from lexir.analysis.analyzer import _SENTINEL, SENTINEL_PIECE

    texts = texts[:300] + ["", "i w z" if language == "pl" else "und der", "Schadens-\nersatz foo_bar",
                           f"x {_SENTINEL.upper()} y"] + texts[300:]
    analyzer = Analyzer.create(language, mode)
    reference = Analyzer.create(language, mode)  # its own form cache: nothing shared
    # A text's tokens are those of its pieces, and its terms follow from its tokens.
    for text in texts:
        assert [t for p in analyzer.pieces(text) for t in analyzer.piece_tokens(p)] == analyzer.surface(text)
        assert [analyzer.term(t) for t in analyzer.surface(text) if analyzer.term(t)] == [t for t in reference(text) if t]
    # The batch's pieces are each text's, with the sentinel between them; a text holding the
    # sentinel makes the batch go text by text.
    assert analyzer.pieces_joined(texts) is None
    plain = [t for t in texts if _SENTINEL not in t.casefold()]
    joined = analyzer.pieces_joined(plain)
    expected_pieces = [p for i, t in enumerate(plain) for p in ([SENTINEL_PIECE] if i else []) + analyzer.pieces(t)]
    assert joined == expected_pieces

    docs = Corpus("half", [Document(f"x::{i}", t) for i, t in enumerate(texts[::2])], language=language)
    retriever = BM25Retriever(analyzer).index(docs)
    vocab = retriever.vocab

    def alone(text):  # the query model as defined: known terms of the analyzer's output, repeats once
        ids = dict.fromkeys(vocab.get(t) for t in reference(text) if t)
        ids.pop(None, None)
        return list(ids)

    expected = [alone(t) for t in texts]
    assert retriever.queries_ids(texts) == expected  # text by text (the sentinel is among them)
    assert retriever.queries_ids(plain) == [alone(t) for t in plain]  # one batch, words all new
    assert retriever.queries_ids(plain) == [alone(t) for t in plain]  # again, words known
    # A batch of mostly known words and a few new ones (spliced in): the first half of the texts
    # with the second half's words new to a fresh index.
    fresh = BM25Retriever(analyzer).index(docs)
    fresh.queries_ids(plain[: len(plain) // 2])
    assert fresh.queries_ids(plain[: len(plain) // 2] + plain[-5:]) == [alone(t) for t in plain[: len(plain) // 2] + plain[-5:]]
    assert [retriever.query_ids(t) for t in texts] == expected
    assert sum(map(len, expected)) > 5 * len(texts) // 2  # real texts: most find known terms
