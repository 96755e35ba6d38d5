"""Every LLM system end to end on real Polish exam questions, against a scripted chat server."""

from __future__ import annotations

import json

import pytest

from lexir.llm.client import BudgetExhausted, LLMClient, LLMConfig
from lexir.llm.cost import SystemResult, cost_table
from lexir.llm.systems import _Kept, react_order
from lexir.llm.testing import ScriptedChatServer, reply, schema_answer
from lexir.retrieval.base import get_system, system_names
from lexir.retrieval.build import build_retriever
from lexir.types import Corpus


def make_client(server, tmp_path, **kw) -> LLMClient:
    settings = {"backoff": 0.01, "max_backoff": 0.1, "timeout": 10.0,
                "cache_path": str(tmp_path / "calls.sqlite"), "concurrency": 3, **kw}
    return LLMClient(LLMConfig(base_url=server.url, model="scripted", **settings))


@pytest.fixture(scope="module")
def bench():
    from lexir.datasets import open as open_data

    return open_data("demo")


@pytest.fixture(scope="module")
def queries(bench):
    return bench.queries.queries[:4]


def build(name, corpus, client, **params):
    return build_retriever(corpus, name, params, client=client)


def test_reform_bm25(bench, queries, tmp_path):
    with ScriptedChatServer(default=schema_answer) as server:
        client = make_client(server, tmp_path)
        retriever = build("reform-bm25", bench.corpus, client)
        run = retriever.search_many(queries, 100)
        assert set(run) == {q.id for q in queries} and all(run.values())
        assert server.count == len(queries)
        body = server.requests[0]
        assert "keywords" in json.dumps(body["response_format"])
        # every query was sent, each in its own request
        sent = [r["messages"][-1]["content"] for r in server.requests]
        assert all(sum(q.text[:40] in m for m in sent) == 1 for q in queries)
        usage = retriever.accounting.total()
        assert usage.calls == len(queries) and usage.statuses == {"ok": len(queries)}
        assert set(retriever.accounting.by_query()) == {q.id for q in queries}


def test_reform_falls_back_to_the_query_on_malformed_answers(bench, queries, tmp_path):
    with ScriptedChatServer(default="Sorry, I cannot help with that.") as server:
        client = make_client(server, tmp_path, concurrency=1)
        retriever = build("reform-bm25", bench.corpus, client)
        run = retriever.search_many(queries[:2], 10)
        assert server.count == 4  # each query: one call and one corrective retry
        assert all(run.values())  # searched with the original question
        events = retriever.accounting.events
        assert events["reform-bm25:retry"] == 2 and events["reform-bm25:fallback"] == 2
        assert retriever.accounting.total().statuses == {"wrong_format": 4}


def test_react_bm25_rounds_and_ranking(bench, queries, tmp_path):
    with ScriptedChatServer(default=schema_answer) as server:
        client = make_client(server, tmp_path)
        retriever = build("react-bm25", bench.corpus, client, rounds=3, observer_batch=50, depth=100)
        run = retriever.search_many(queries[:2], 100)
        # per query and round: one planner call and two observer calls (100 hits in batches of 50)
        per_round = {len(t) for t in retriever.trace.values()}
        assert per_round == {3}
        calls = retriever.accounting.total().calls
        hits = [r["hits"] for t in retriever.trace.values() for r in t]
        assert calls == 2 * 3 + sum(-(-h // 50) for h in hits)
        assert set(retriever.run_by_round) == {1, 2, 3}
        for qid, res in run.items():
            assert res == retriever.run_by_round[3][qid]
            assert len(retriever.run_by_round[1][qid]) <= len(res) <= 100
            kept = {d for r in retriever.trace[qid] for d in r["kept"]}
            assert set(res) == kept
        # the planner saw the earlier query in round 2
        planner_bodies = [b for b in server.requests if "Queries already tried" in b["messages"][-1]["content"]]
        assert any("1. " in b["messages"][-1]["content"].split("Queries already tried:")[1][:10]
                   for b in planner_bodies)
        roles = retriever.accounting.by_role()
        assert roles["planner"].calls == 6 and roles["observer"].calls == calls - 6


def test_react_order_keys():
    kept = {"a": _Kept(1, 1, 5), "b": _Kept(2, 2, 9), "c": _Kept(1, 1, 2), "d": _Kept(1, 3, 1)}
    assert [d for d, _ in react_order(kept)] == ["b", "c", "a", "d"]
    assert len(react_order({str(i): _Kept(1, 1, i) for i in range(150)})) == 100


def test_rerank_with_malformed_answers_is_counted_and_handled(bench, queries, tmp_path):
    n = 10
    script = [
        reply('{"ranking": [2, 2, 2, 2, 2, 2]}'),          # q1: repetition ...
        reply('{"ranking": [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]}'),  # ... fixed on retry
        reply('```json\n{"ranking": [3, 1]}\n``` trailing'),  # q2: missing items ...
        reply('{"ranking": [3, 1]}'),                       # ... again: fallback
        reply("no idea"),                                   # q3: wrong format ...
        reply("still no idea"),                             # ... again: base order kept
        reply('{"ranking": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}'),  # q4: fine
    ]
    with ScriptedChatServer(script) as server:
        client = make_client(server, tmp_path, concurrency=1)
        retriever = build("rerank", bench.corpus, client, depth=n, chars=200)
        run = retriever.search_many(queries, 20)
        assert server.count == 7
        base = {q: [d for d, _ in sorted(r.items(), key=lambda x: -x[1])] for q, r in retriever.base_run.items()}
        order = {q: [d for d, _ in sorted(r.items(), key=lambda x: -x[1])] for q, r in run.items()}
        q1, q2, q3, q4 = (q.id for q in queries)
        assert order[q1][:n] == base[q1][:n][::-1]
        assert order[q2][:3] == [base[q2][2], base[q2][0], base[q2][1]]
        assert order[q3] == base[q3][:20]
        assert order[q4] == base[q4][:20] and len(order[q4]) == 20
        usage = retriever.accounting.total()
        assert usage.statuses == {"repetition": 1, "ok": 2, "missing_items": 2, "wrong_format": 2}
        assert retriever.accounting.events == {"rerank:retry": 3, "rerank:fallback": 2}


def test_rerank_over_any_base_system_in_one_call_per_query(bench, queries, tmp_path):
    with ScriptedChatServer(default=schema_answer) as server:
        client = make_client(server, tmp_path)
        retriever = build("rerank", bench.corpus, client, base="bm25(mode=stem)")
        run = retriever.search_many(queries, 100)
        assert server.count == len(queries)
        assert all(len(r) == 100 for r in run.values())
        body = server.requests[0]
        assert body["response_format"]["json_schema"]["schema"]["properties"]["ranking"]["maxItems"] == 40
        content = body["messages"][-1]["content"]
        assert "\n[40] " in content and "[41]" not in content


def test_rerun_of_a_system_makes_zero_calls_and_killed_run_resumes(bench, queries, tmp_path):
    params = {"rounds": 2, "observer_batch": 100}
    with ScriptedChatServer(default=schema_answer) as server:
        # an uninterrupted run on its own cache: how many requests the whole run needs
        reference = make_client(server, tmp_path, cache_path=str(tmp_path / "ref.sqlite"))
        expected = build("react-bm25", bench.corpus, reference, **params).search_many(queries[:2], 100)
        needed = server.count
        calls = reference.accounting.total().calls
        assert needed >= 6 and calls == 8
    with ScriptedChatServer(default=schema_answer) as server:
        killed = make_client(server, tmp_path, budget=5, concurrency=1)
        with pytest.raises(BudgetExhausted):
            build("react-bm25", bench.corpus, killed, **params).search_many(queries[:2], 100)
        assert server.count == 5
        resumed = make_client(server, tmp_path)
        run = build("react-bm25", bench.corpus, resumed, **params).search_many(queries[:2], 100)
        assert run == expected
        total = resumed.accounting.total()
        assert total.calls == calls and total.requests == needed - 5
        assert server.count == needed  # nothing repeated
        again = make_client(server, tmp_path)
        rerun = build("react-bm25", bench.corpus, again, **params).search_many(queries[:2], 100)
        assert rerun == run and server.count == needed and again.accounting.total().requests == 0
        assert again.accounting.total().cached == calls


def test_translate(bench, queries, tmp_path):
    small = Corpus("demo-small", bench.corpus.documents[:15], language="pl")

    def english(body):
        return json.dumps({"translation": "offence punishable preparation attempt " + str(len(server.requests))})

    with ScriptedChatServer(default=english) as server:
        client = make_client(server, tmp_path)
        retriever = build("translate", small, client)
        assert server.count == 15
        run = retriever.search_many(queries[:2], 10)
        assert server.count == 17 and all(run.values())
        assert "English" in server.requests[0]["messages"][-1]["content"]


def test_query_analysis_finds_cited_provisions(bench, tmp_path):
    from lexir.llm.systems import analyse_query
    from lexir.types import Query

    answer = {"domain": "criminal", "acts": ["kk"], "provisions": ["art. 148 § 1 k.k."]}
    with ScriptedChatServer(default=json.dumps(answer)) as server:
        client = make_client(server, tmp_path)
        out = analyse_query(client, bench.corpus, Query("q", "Czy art. 25 k.k. dotyczy obrony koniecznej?"))
        assert out["domain"] == "criminal" and out["cited"] == ["kk::25", "kk::148"]
        assert "kk" in server.requests[0]["messages"][-1]["content"]


def test_surrogates_annotate_resume_and_retrievers(bench, queries, tmp_path):
    from lexir.llm.surrogates import annotate, load_surrogates

    corpus = Corpus("demo-sur", bench.corpus.documents[:40], language="pl")
    out = tmp_path / "sur.jsonl"
    with ScriptedChatServer(default=schema_answer) as server:
        first = make_client(server, tmp_path, budget=15, concurrency=1)
        with pytest.raises(BudgetExhausted):
            annotate(corpus, first, out, progress=False)
        assert server.count == 15
        lines = out.read_text().splitlines()
        header = json.loads(lines[0])
        assert header["fingerprint"] and header["corpus"] == "demo-sur" and len(lines) == 16
        with out.open("a") as fh:
            fh.write('{"id": "kk::half')  # a line cut by the kill
        seen = []
        report = annotate(corpus, make_client(server, tmp_path), out, progress=lambda n, u: seen.append(n))
        assert report.already == 15 and report.new == 25 and server.count == 40
        assert seen[-1] == 25 and report.statuses == {"ok": 25}
        records = load_surrogates(out, corpus)
        assert len(records) == 40 and all(r["questions"] and r["summary"] for r in records.values())
        # a different corpus version is refused
        other = Corpus("demo-sur", bench.corpus.documents[:39], language="pl")
        with pytest.raises(ValueError, match="another version"):
            annotate(other, make_client(server, tmp_path), out, progress=False)
    for name in ("surrogate-bm25", "doc2query-bm25", "coverage-bm25"):
        retriever = build_retriever(corpus, name, {"surrogates": str(out)})
        run = retriever.search_many(queries, 10)
        assert set(run) == {q.id for q in queries}
        assert all(d in corpus for res in run.values() for d in res)
    dense = "dense" if "dense" in system_names() else ""
    dtf = build_retriever(corpus, "dtf", {"surrogates": str(out), "dense": dense})
    assert len(dtf.parts) == (3 if dense else 2) and dtf.weights == ([1.0, 0.7, 1.0] if dense else [0.7, 1.0])
    run = dtf.search_many(queries, 100)
    assert all(run.values()) and run == dtf.search_many(queries, 100)  # deterministic


def test_dtf_rescore_is_deterministic_and_partitions_by_named_act():
    from lexir.llm.surrogates import dtf_rescore

    lists = [{"kk::1": 3.0, "kc::2": 2.0}, {"kc::2": 5.0, "kk::3": 1.0}, {"kc::9": 1.0}]
    fused = {"kk::1": 0.05, "kc::2": 0.09, "kk::3": 0.04, "kc::9": 0.045}
    a = dtf_rescore("", lists, fused, {}, {"kk"})
    b = dtf_rescore("", lists, fused, {}, {"kk"})
    assert a == b
    assert min(a["kk::1"], a["kk::3"]) > max(a["kc::2"], a["kc::9"])
    none = dtf_rescore("", lists, fused, {}, set())
    assert max(none, key=none.get) == "kc::2"
    concept = dtf_rescore("obrona konieczna", lists, fused, {"kc::9": ["obrona konieczna"]}, set())
    assert concept["kc::9"] > none["kc::9"]


def test_ascr_h_and_reform_dense_need_dense(bench, tmp_path):
    if "dense" in system_names():
        pytest.skip("dense is available; covered by the end-to-end test below")
    with ScriptedChatServer(default=schema_answer) as server:
        client = make_client(server, tmp_path)
        with pytest.raises(ValueError, match="dense"):
            build("ascr-h", bench.corpus, client)


@pytest.mark.skipif("dense" not in system_names(), reason="lexir.retrieval.dense is not available")
def test_ascr_h_and_reform_dense_end_to_end(bench, queries, tmp_path):
    # a small corpus: the dense encoder runs on CPU
    small = Corpus("demo-dense", bench.corpus.documents[:30], language="pl")
    with ScriptedChatServer(default=schema_answer) as server:
        client = make_client(server, tmp_path)
        for name in ("reform-dense", "ascr-h"):
            retriever = build(name, small, client)
            run = retriever.search_many(queries[:2], 100)
            assert all(run.values()) and all(d in small for res in run.values() for d in res)
            assert retriever.accounting.total().calls == 2


def test_cost_table(bench, queries, tmp_path):
    with ScriptedChatServer(default=schema_answer) as server:
        client = make_client(server, tmp_path)
        rows = []
        for name, params in (("reform-bm25", {}), ("rerank", {"depth": 10})):
            retriever = build(name, bench.corpus, client, **params)
            run = retriever.search_many(queries, 100)
            rows.append(SystemResult.from_accounting(name, run, client.accounting, bench.queries.qrels))
        bm25 = get_system("bm25").build(bench.corpus, {}).search_many(queries, 100)
        from lexir.llm.accounting import Usage

        rows.insert(0, SystemResult("bm25", bm25, Usage(), bench.queries.qrels))
        md = cost_table(rows, fmt="markdown")
        lines = md.splitlines()
        assert lines[0].startswith("| system | queries | nDCG@10 | R@100 | calls/q")
        assert lines[2].startswith("| bm25 | 4 |") and "| 0.0 |" in lines[2]
        assert lines[3].startswith("| reform-bm25 | 4 |") and "| 1.0 |" in lines[3]
        from rich.console import Console

        Console(width=200).print(cost_table(rows))


def test_a_server_that_dies_says_how(tmp_path):
    """A server process that crashes after start-up (as a llama.cpp build using instructions
    the machine refuses does: SIGILL) is reported with its signal and log, not only through the
    clients' refused connections. A real process, killed by a real signal."""
    import signal
    import subprocess
    import sys

    from lexir.llm.local import LocalLlamaServer

    (tmp_path / "model.gguf").write_bytes(b"GGUF")  # never loaded: no server is started here
    srv = LocalLlamaServer(model_path=tmp_path / "model.gguf")
    srv.log_path = tmp_path / "server.log"
    srv.log_path.write_text("INFO:     Uvicorn running on http://127.0.0.1:1\n")
    assert srv.died() is None  # never started
    srv.proc = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGILL)"])
    srv.proc.wait(30)
    message = srv.died()
    assert message is not None and "SIGILL" in message and "Uvicorn running" in message
    srv.stop()
    assert srv.died() is None
    srv.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert srv.died() is None  # still running
    finally:
        srv.proc.send_signal(signal.SIGTERM)
        srv.stop()
