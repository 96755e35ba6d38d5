"""Fusion, feedback, cascade, explicit references and controls (SPEC §4)."""

import pytest

from lexir.api import retrieve
from lexir.datasets import open as open_data
from lexir.evaluation import Measure, evaluate
from lexir.retrieval.build import build_retriever
from lexir.retrieval.feedback import FeedbackBM25, rm3_expansion, tfidf_expansion
from lexir.retrieval.fusion import combsum, normalise, rrf, weighted_rrf
from lexir.retrieval.spec import Spec, expand_names, parse_spec, parse_spec_list
from lexir.types import act_of

HIT10 = Measure.parse("Hit@10")


def test_rrf_by_hand():
    a = {"x": 3.0, "y": 2.0, "z": 1.0}
    b = {"y": 9.0, "w": 1.0}
    fused = rrf([a, b], k=60)
    assert fused["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["x"] == pytest.approx(1 / 61) and fused["w"] == pytest.approx(1 / 62)
    assert max(fused, key=fused.get) == "y"
    assert a == {"x": 3.0, "y": 2.0, "z": 1.0}  # inputs untouched


def test_weighted_rrf_and_depth():
    a = {"x": 2.0, "y": 1.0}
    b = {"y": 2.0, "x": 1.0}
    fused = weighted_rrf([a, b], [1.0, 0.5], k0=20)
    assert fused["x"] == pytest.approx(1 / 21 + 0.5 / 22) and fused["x"] > fused["y"]
    assert set(weighted_rrf([a, b], [1, 1], depth=1)) == {"x", "y"}
    assert weighted_rrf([a, b], [1, 1], depth=1)["x"] == pytest.approx(1 / 21)
    with pytest.raises(ValueError, match="1 weights for 2"):
        weighted_rrf([a, b], [1.0])


def test_combsum_normalises_each_list():
    a = {"x": 100.0, "y": 50.0, "z": 0.0}
    b = {"z": 1.0, "y": 0.5}
    assert normalise(a) == {"x": 1.0, "y": 0.5, "z": 0.0}
    fused = combsum([a, b])
    assert fused == {"x": 1.0, "y": 0.5, "z": 1.0}
    with pytest.raises(ValueError, match="minmax, zscore, none"):
        normalise(a, "rank")


def test_specs_parse_nest_and_expand():
    assert parse_spec("bm25(k1=0.9;mode=stem)") == Spec("bm25", (("k1", "0.9"), ("mode", "stem")))
    specs = parse_spec_list("rrf(systems=bm25+dense;k=60)+bm25")
    assert [s.name for s in specs] == ["rrf", "bm25"] and specs[0].param_dict["systems"] == "bm25+dense"
    assert expand_names("mine+dense", {"mine": Spec("bm25", (("k1", "0.6"),))}) == "bm25(k1=0.6)+dense"
    with pytest.raises(ValueError, match="unbalanced"):
        parse_spec_list("bm25(k1=0.9")


def test_fusion_systems_beat_or_match_their_parts_on_the_demo(demo_bench):
    qs = demo_bench.queries
    ndcg = Measure.parse("nDCG@10")
    parts = [evaluate(retrieve(build_retriever(demo_bench.corpus, "bm25", p), qs.queries), qs.qrels, [ndcg]).mean(ndcg)
             for p in ({}, {"mode": "stem"})]
    fused = build_retriever(demo_bench.corpus, "rrf", {"systems": "bm25+bm25(mode=stem)"})
    run = retrieve(fused, qs.queries)
    assert evaluate(run, qs.qrels, [ndcg]).mean(ndcg) >= min(parts)
    assert run[qs.queries[0].id] and len(run[qs.queries[0].id]) <= 100
    assert fused.search(qs.queries[0].text, 5)[0][0] == next(iter(sorted(run[qs.queries[0].id].items(),
                                                                        key=lambda kv: -kv[1])))[0]
    with pytest.raises(ValueError, match="3 weights for 2 systems"):
        build_retriever(demo_bench.corpus, "wrrf", {"systems": "bm25+bm25(mode=stem)", "weights": "1,2,3"})


def test_feedback_expands_the_query(demo_bench):
    bm25 = build_retriever(demo_bench.corpus, "bm25")
    retriever = FeedbackBM25(bm25, demo_bench.corpus, lambda q, t: {}, 10, "prf")
    query = bm25.query_ids("obrona konieczna zamach")
    top = bm25.search_ids([query], 10)[0]
    weights = tfidf_expansion(retriever, 30, 0.5)(query, top)
    assert len(weights) == len(query) + 30 and all(weights[t] == 1.0 for t in query)
    assert sum(1 for w in weights.values() if w == 0.5) == 30
    rm3 = rm3_expansion(retriever, 10, 0.5)(query, top)
    assert sum(rm3.values()) == pytest.approx(1.0)
    prf = build_retriever(demo_bench.corpus, "bm25-prf")
    assert prf.search("obrona konieczna zamach", 100) != bm25.search("obrona konieczna zamach", 100)
    assert prf.search("", 10) == []


def test_cascade_keeps_only_the_top_acts(data_dir):
    from lexir.datasets import open as open_data

    corpus = open_data("pl-codes", data_dir=data_dir)
    text = "Kto zabija człowieka, podlega karze pozbawienia wolności"
    one = build_retriever(corpus, "cascade", {"acts": 1}).search(text, 50)
    assert {doc.split("::")[0] for doc, _ in one} == {"kk"}
    every = build_retriever(corpus, "cascade", {"acts": 40}).search(text, 50)
    assert every == build_retriever(corpus, "bm25").search(text, 50)


def test_explicit_references_rank_first(demo_bench):
    retriever = build_retriever(demo_bench.corpus, "explicit")
    hits = retriever.search("Czy zgodnie z art. 148 § 1 k.k. i art. 25 k.k. można się bronić?", 10)
    assert [d for d, _ in hits[:2]] == ["kk::148", "kk::25"]
    plain = retriever.search("obrona konieczna", 10)
    assert plain == build_retriever(demo_bench.corpus, "bm25").search("obrona konieczna", 10)


def test_controls(demo_bench):
    qs = demo_bench.queries
    oracle = retrieve(build_retriever(demo_bench.corpus, "oracle", qrels=qs.qrels), qs.queries)
    assert evaluate(oracle, qs.qrels, [HIT10]).mean(HIT10) == 1.0
    rnd = build_retriever(demo_bench.corpus, "random")
    first, again = retrieve(rnd, qs.queries), retrieve(rnd, qs.queries)
    assert first == again and all(len(r) == 100 for r in first.values())
    assert evaluate(first, qs.qrels, [HIT10]).mean(HIT10) < 0.2
    with pytest.raises(ValueError, match="needs the gold"):
        build_retriever(demo_bench.corpus, "oracle")


def test_oracle_act_keeps_to_each_querys_gold_act():
    # On all five codes, so that "the right act" is a real restriction: each query's articles
    # must come from the act of its own gold article, and the acts differ between queries.
    bench = open_data("pl-exams")
    qs = bench.queries.split("tune")
    picked = {}
    for q in qs.queries:
        act = act_of(next(iter(qs.qrels[q.id])))
        picked.setdefault(act, q)
    queries = list(picked.values())
    assert len(queries) >= 4
    run = retrieve(build_retriever(bench.corpus, "oracle-act", qrels=qs.qrels), queries)
    for q in queries:
        gold_act = act_of(next(iter(qs.qrels[q.id])))
        assert run[q.id] and {act_of(d) for d in run[q.id]} == {gold_act}
