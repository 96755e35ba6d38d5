"""A weighted fusion may weigh its parts otherwise for long questions (``long_words``,
``long_weights``): a told case gets those weights, a typed query the usual ones."""

from __future__ import annotations

import pytest

from lexir.datasets import open as open_data
from lexir.retrieval.build import build_retriever
from lexir.retrieval.fusion import words
from lexir.types import Query

PARTS = "systems=bm25+bm25(mode=stem)"


@pytest.fixture(scope="module")
def demo():
    bench = open_data("demo")
    queries = [*bench.queries.queries[:30], Query("s1", "kradzież roweru"), Query("s2", "zabójstwo"),
               Query("s3", "rozbój z użyciem broni palnej")]
    return bench.corpus, queries


@pytest.mark.parametrize("method", ["combsum", "wrrf"])
def test_long_questions_get_their_weights_and_short_ones_the_usual(demo, method):
    corpus, queries = demo
    usual = build_retriever(corpus, f"{method}({PARTS};weights=1,0.2)", cache=False).search_many(queries, 10)
    heavy = build_retriever(corpus, f"{method}({PARTS};weights=1,3)", cache=False).search_many(queries, 10)
    gated = build_retriever(corpus, f"{method}({PARTS};weights=1,0.2;long_words=12;long_weights=1,3)",
                            cache=False).search_many(queries, 10)
    long = {q.id for q in queries if words(q.text) >= 12}
    assert 0 < len(long) < len(queries)
    assert any(usual[q] != heavy[q] for q in long)  # the weights matter here, so the test can fail
    for q in queries:
        assert gated[q.id] == (heavy if q.id in long else usual)[q.id], q.id


def test_the_rule_is_a_query_time_parameter_and_refuses_what_it_cannot_use(demo):
    corpus, queries = demo
    plain = build_retriever(corpus, f"combsum({PARTS};weights=1,0.2)", cache=False)
    gated = build_retriever(corpus, f"combsum({PARTS};weights=1,0.2;long_words=12;long_weights=1,3)", cache=False)
    assert plain.with_params({"long_words": 12, "long_weights": "1,3"}).search_many(queries, 10) == \
        gated.search_many(queries, 10)
    with pytest.raises(ValueError, match="weights"):
        build_retriever(corpus, f"combsum({PARTS};long_words=12;long_weights=1,2,3)", cache=False)
    with pytest.raises(ValueError, match="long_words"):
        build_retriever(corpus, f"rrf({PARTS};long_words=12)", cache=False)
