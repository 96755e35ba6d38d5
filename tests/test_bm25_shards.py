"""BM25 cut into shards by act (lexir.retrieval.bm25_shards): the merged hits are one index's,
ids, scores, ties and their order included, for every BM25 method (no Ray here: the shards are
loaded in this process; tests/test_ray_serve.py serves them on Ray Serve)."""

from __future__ import annotations

import numpy as np
import pytest

from lexir.datasets import open as open_data
from lexir.retrieval import bm25_shards
from lexir.retrieval.bm25 import BM25Retriever, analysed, make_analyzer
from lexir.retrieval.bm25_matrix import CollectionStats, ScoreMatrix
from lexir.retrieval.build import build_retriever
from lexir.types import Query, act_of


@pytest.fixture(scope="module")
def codes():
    return open_data("pl-codes", want="corpus")


def _questions(corpus):
    docs = list(corpus)
    texts = [d.text[:300] for d in docs[::40]]
    # "(uchylony)": hundreds of repealed articles score the same; which make the cut and in which
    # order is the single index's heap's doing
    return [Query(str(i), t) for i, t in enumerate(texts + ["uchylony", "(uchylony) art", "", "xyzzy", "kara"])]


def test_plan_cuts_whole_acts_balanced(codes):
    cuts = bm25_shards.plan(codes, 2)
    ids = codes.ids
    acts = [{act_of(ids[p]) for p in cut.tolist()} for cut in cuts]
    assert not acts[0] & acts[1]  # an act is in one shard
    assert sorted(np.concatenate(cuts).tolist()) == list(range(len(codes)))
    assert all((np.diff(c) > 0).all() for c in cuts)
    sizes = sorted(len(c) for c in cuts)
    assert sizes == [2054, 2264]  # kpc (2,003) alone against kc + kk + kks + kpa
    with pytest.raises(ValueError, match="whole acts"):
        bm25_shards.plan(codes, 6)


def test_collection_stats_of_the_whole_give_the_same_matrix(codes):
    """The hook's default is unchanged, and a matrix built with its own statistics is the same."""
    analyzer = make_analyzer(codes, "", "auto", True, "simplemma")
    ids, lengths, vocab = analysed(codes, analyzer)
    plain = ScoreMatrix.build(ids.copy(), lengths, len(vocab), 1.2, 0.75, "lucene")
    hooked = ScoreMatrix.build(ids.copy(), lengths, len(vocab), 1.2, 0.75, "lucene",
                               stats=CollectionStats.of(ids, lengths, len(vocab)))
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(plain, key), getattr(hooked, key))
    assert CollectionStats.of(ids, lengths, len(vocab)).avg_length() == lengths.mean()


@pytest.mark.parametrize(("shards", "method", "blocks"), [(2, "lucene", False), (2, "lucene", True),
                                                         (3, "bm25l", True), (5, "robertson", False)])
def test_merged_hits_are_one_index_hits(codes, tmp_path, monkeypatch, shards, method, blocks):
    """``blocks``: the shards skip untouched blocks of 64 documents (as from 65,536 documents on)."""
    monkeypatch.setattr(bm25_shards, "_BLOCKS_FROM", 0 if blocks else 1 << 62)
    single = build_retriever(codes, f"bm25(method={method})", {}, cache=False)
    assert isinstance(single, BM25Retriever)
    bm25_shards.build(codes, tmp_path, shards, method=method)
    sharded = bm25_shards.local(tmp_path, codes)
    queries = _questions(codes)
    for k in (1, 10, 100):
        want, got = single.search_many(queries, k), sharded.search_many(queries, k)
        for q in queries:
            assert list(got[q.id].items()) == list(want[q.id].items()), (k, q.text[:40])
    assert len(want[str(len(queries) - 5)]) == 100 and not want[str(len(queries) - 2)]  # uchylony; xyzzy


def test_the_tie_order_needs_the_replay(codes, tmp_path):
    """The test above can fail: merging the shards' top k by score (a stable sort, shard order)
    gives other hits than one index for the tie-heavy question."""
    single = build_retriever(codes, "bm25", {}, cache=False)
    bm25_shards.build(codes, tmp_path, 2)
    shards = [bm25_shards.BM25Shard(tmp_path, i) for i in range(2)]
    sharded = bm25_shards.ShardedBM25(tmp_path, lambda *a: [s.candidates(*a) for s in shards], codes)
    k = 10
    flat, pointers = sharded.terms().raw_batch(["uchylony"])
    answers = [s.candidates(flat, pointers, k, True) for s in shards]
    pairs = sorted(((-float(sc), int(p)) for a in answers for p, sc in zip(a[0], a[1], strict=True)))[:k]
    naive = [sharded.doc_ids[p] for _, p in pairs]
    want = [d for d, _ in single.search("uchylony", k)]
    assert [d for d, _ in sharded.search("uchylony", k)] == want
    assert naive != want


@pytest.mark.slow
def test_all_german_units_in_two_shards_answer_as_one_index(data_dir, tmp_path):
    """Every unit of de-gesetze (about 967k: articles, Absätze, Sätze, Nummern ..., titled as
    benchmarks/bench_pruning.py titles them) in two shards by act against one index: the same
    runs, ids, scores and order, for gerlayqa-dev's 2,151 lay questions at k = 10 and 100, and
    1,000 short ones (article titles) at k = 10. Several GB of memory and minutes."""
    import gc

    import lexir
    from lexir.types import Corpus, Document

    articles = lexir.load("de-gesetze", data_dir=data_dir)
    articles = getattr(articles, "corpus", articles)
    corpus = Corpus("de-units", [Document(u.id, u.text, u.title) for u in articles.units()],
                    language=articles.language)
    assert len(corpus) > 900_000
    titles = list(dict.fromkeys(d.title for d in articles if d.title))[::40][:1000]
    del articles
    gc.collect()
    questions = [q.text for q in lexir.load("gerlayqa-dev", data_dir=data_dir).queries.queries]
    assert len(questions) > 2000
    bm25_shards.build(corpus, tmp_path, 2)
    sharded = bm25_shards.local(tmp_path, corpus)
    units = bm25_shards.read_plan(tmp_path)["units"]
    assert sum(units) == len(corpus) and min(units) > 0.45 * len(corpus)
    want_runs = {}
    single = build_retriever(corpus, "bm25", {}, cache=False)
    for name, texts, ks in (("lay", questions, (10, 100)), ("short", titles, (10,))):
        queries = [Query(str(i), t) for i, t in enumerate(texts)]
        for k in ks:
            want_runs[name, k] = (queries, single.search_many(queries, k))
    del single
    gc.collect()
    for (name, k), (queries, want) in want_runs.items():
        got = sharded.search_many(queries, k)
        assert {q: list(h.items()) for q, h in got.items()} == {q: list(h.items()) for q, h in want.items()}, (name, k)
