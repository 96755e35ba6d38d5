"""The Ray backend on a real local Ray runtime (two CPUs): experiment cells, dense encoding, annotation.

Ray is an optional extra: without it these tests skip, except the one that checks the
command line says how to install it. One runtime serves the whole module (it takes seconds
to start).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from lexir.cli.main import app
from lexir.types import Corpus

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def write_experiment(tmp_path, systems, name="exp.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"datasets": ["demo"], "systems": systems, "measures": ["nDCG@10", "Hit@10"],
                                    "output": str(tmp_path / "out")}), encoding="utf-8")
    return path


def test_backend_ray_without_ray_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as without the extra
    config = write_experiment(tmp_path, ["bm25"])
    result = invoke("experiment", config, "--backend", "ray")
    assert result.exit_code == 2 and "pip install 'lexir[ray]'" in result.output
    assert not (tmp_path / "out").exists()
    result = invoke("experiment", config, "--backend", "spark")
    assert result.exit_code == 2 and "unknown backend 'spark'" in result.output


@pytest.fixture(scope="module")
def ray_runtime(tmp_path_factory):
    ray = pytest.importorskip("ray")
    from lexir.distributed import init

    # workers get the driver's LEXIR_* variables at start-up: the same cache folder as conftest's
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LEXIR_CACHE", str(tmp_path_factory.getbasetemp() / "lexir-cache"))
        try:
            init(num_cpus=2)
            yield ray
        finally:
            ray.shutdown()


def test_experiment_cells_on_ray_match_local_and_resume(ray_runtime, tmp_path):
    from lexir.distributed import ray_cells
    from lexir.experiment import Experiment, run_experiment

    systems = [{"name": "raw", "system": "bm25"}, {"name": "stem", "system": "bm25", "params": {"mode": "stem"}},
               {"name": "fused", "system": "rrf", "params": {"systems": "raw+stem"}},
               {"name": "broken", "system": "surrogate-bm25", "params": {"surrogates": str(tmp_path / "none.jsonl")}}]
    exp = Experiment.from_file(write_experiment(tmp_path, systems))
    with pytest.raises(RuntimeError, match="1 of 4 cells failed.*broken.*no surrogate annotation"):
        run_experiment(exp, log=lambda m: None, backend=ray_cells())
    written = sorted(p.name.split(".")[0] for p in (tmp_path / "out" / "runs" / "demo__all").glob("*.trec"))
    assert written == ["fused", "raw", "stem"]  # the cells that finished are kept

    # the grid with a new system instead of the broken one, through the command line: the three
    # finished runs are reused, the new cell runs on Ray
    systems = [*systems[:3], {"name": "stem09", "system": "bm25", "params": {"mode": "stem", "k1": 0.9}}]
    fixed = write_experiment(tmp_path, systems)
    result = invoke("experiment", fixed, "--backend", "ray")
    assert result.exit_code == 0, result.output
    assert "reused cached runs of raw, stem, fused" in result.output and "stem09 done" in result.output

    # the same grid run here, from scratch, gives the same table
    local = Experiment.from_file(write_experiment(tmp_path, systems, "local.yaml"))
    local.output = tmp_path / "local"
    here = run_experiment(local, log=lambda m: None)[0]
    there = run_experiment(Experiment.from_file(fixed), log=lambda m: None,
                           backend=lambda cells, done: pytest.fail("nothing should be recomputed"))[0]
    assert there.reused == ["raw", "stem", "fused", "stem09"]
    assert here.comparison.to_dict() == there.comparison.to_dict()


def test_encode_on_ray_equals_a_local_encode(ray_runtime, demo_bench, tmp_path, monkeypatch):
    from lexir.retrieval.dense import DenseRetriever

    path = tmp_path / "kk30.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for doc in demo_bench.corpus.documents[:30]:
            fh.write(json.dumps({"_id": doc.id, "title": doc.title, "text": doc.text}, ensure_ascii=False) + "\n")

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache-ray"))
    result = invoke("encode", path, "--language", "pl", "--backend", "ray", "-o", tmp_path / "ray-index")
    assert result.exit_code == 0, result.output
    assert " 0 already in the embedding cache" in result.output
    again = invoke("encode", path, "--language", "pl", "--backend", "ray")
    assert again.exit_code == 0 and "0 encoded on Ray" in again.output  # everything was cached

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache-local"))
    result = invoke("encode", path, "--language", "pl", "-o", tmp_path / "local-index")
    assert result.exit_code == 0, result.output

    on_ray = DenseRetriever.load(tmp_path / "ray-index")
    local = DenseRetriever.load(tmp_path / "local-index")
    assert len(on_ray.doc_ids) == 30 and len(on_ray.chunk_doc) >= 30
    assert on_ray.doc_ids == local.doc_ids and np.array_equal(on_ray.chunk_doc, local.chunk_doc)
    assert np.array_equal(on_ray.vectors.reconstruct_all(), local.vectors.reconstruct_all())
    assert np.array_equal(on_ray.article_vectors, local.article_vectors)


def test_annotate_on_ray_makes_each_call_once_and_accounts_for_all(ray_runtime, demo_bench, tmp_path):
    from lexir.distributed import RayAnnotator
    from lexir.llm.client import BudgetExhausted, LLMClient, LLMConfig
    from lexir.llm.surrogates import annotate, load_surrogates
    from lexir.llm.testing import ScriptedChatServer, schema_answer

    corpus = Corpus("demo-12", demo_bench.corpus.documents[:12], language="pl")

    def client(server, **kw):
        return LLMClient(LLMConfig(base_url=server.url, model="scripted", backoff=0.01, timeout=10.0,
                                   cache_path=str(tmp_path / "calls.sqlite"), **{"concurrency": 2, **kw}))

    on_ray = RayAnnotator(shard=2)
    with ScriptedChatServer(default=schema_answer) as server:
        with pytest.raises(BudgetExhausted, match="across all Ray workers"):
            # one request at a time per worker: every granted call's article is finished and written
            annotate(corpus, client(server, budget=5, concurrency=1), tmp_path / "ray.jsonl", progress=False,
                     runner=on_ray)
        assert server.count == 5  # the budget holds across workers
        first = [json.loads(line)["id"] for line in (tmp_path / "ray.jsonl").read_text().splitlines()[1:]]
        assert len(first) == 5  # every answer that was paid for was written

        second = client(server)
        report = annotate(corpus, second, tmp_path / "ray.jsonl", progress=False, runner=on_ray)
        assert report.already == 5 and report.new == 7 and server.count == 12
        usage = second.accounting.total()
        assert (usage.calls, usage.cached, usage.requests) == (7, 0, 7)
        assert sorted(second.accounting.by_query()) == sorted(f"doc:{d}" for d in corpus.ids if d not in first)
        prompts = [body["messages"][-1]["content"] for body in server.requests]
        assert len(set(prompts)) == 12  # no article was asked about twice

        # annotating here, from the call cache the workers filled: no new call, the same records
        third = client(server)
        local = annotate(corpus, third, tmp_path / "local.jsonl", progress=False)
        assert server.count == 12 and local.new == 12 and third.accounting.total().cached == 12
    assert load_surrogates(tmp_path / "ray.jsonl", corpus) == load_surrogates(tmp_path / "local.jsonl", corpus)


def test_the_same_request_from_two_workers_is_made_once(ray_runtime, tmp_path):
    import threading

    from lexir.distributed import _CallCacheActor, _RemoteCache
    from lexir.llm.client import BudgetExhausted, ChatResult

    actor = ray_runtime.remote(num_cpus=0)(_CallCacheActor).remote(str(tmp_path / "calls.sqlite"), 2)
    first, second = _RemoteCache(actor, ray_runtime), _RemoteCache(actor, ray_runtime)
    assert first.get("k1") is None  # claimed: this worker makes the call
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(second.get("k1")))
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive() and not answers  # the other worker waits instead of calling too
    first.put("k1", "m", {"messages": []}, ChatResult("answer", 3, 1, 0.2, False, "stop"))
    waiting.join(10)
    assert answers[0].text == "answer" and answers[0].cached and answers[0].prompt_tokens == 3
    assert second.get("k2") is None  # the second (and last) new call of the budget of 2
    second.close()  # k2 failed: released, so it can be claimed again, but the budget is spent
    with pytest.raises(BudgetExhausted):
        first.get("k3")
    assert ray_runtime.get(actor.stats.remote()) == {"new_calls": 2, "rows": 1}
    ray_runtime.get(actor.close.remote())
