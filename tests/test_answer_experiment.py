"""The ``answer:`` section of an experiment file and ``lexir experiment --plots``, on the shipped demo,
with ReAct and the answers served by the scripted loopback chat server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lexir.experiment import Experiment, ExperimentError, run_experiment
from lexir.io import read_run
from lexir.llm.testing import ScriptedChatServer, request_schema, schema_answer
from lexir.types import ranked

pytest.importorskip("matplotlib")


def respond(body: dict) -> str:
    """ReAct gets schema-valid plans and observations; an answer request gets option A, citing [1]."""
    props = (request_schema(body) or {}).get("properties", {})
    if "answer" in props:
        return json.dumps({"answer": "A", **({"cite": [1]} if "cite" in props else {})})
    return schema_answer(body)


def write(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def config_for(url: str, tmp_path: Path) -> dict:
    llm = {"base_url": url, "model": "scripted"}
    return {"name": "answers", "datasets": [{"name": "demo", "split": "test"}],
            "systems": [{"name": "bm25", "system": "bm25"},
                        {"name": "react", "system": "react-bm25",
                         "params": {"rounds": 2, "observer_batch": 50, "report_rounds": "1,2", "chars": 100, **llm}}],
            "measures": ["Hit@10", "nDCG@10"], "tests": ["Hit@10"], "output": str(tmp_path / "out"),
            "answer": {"conditions": ["none", "bm25", "react", "oracle"], "k": 3, "limit": 10, "llm": llm}}


def test_answer_section_and_plots(tmp_path, monkeypatch):
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))  # the call cache: this test's answers only
    with ScriptedChatServer(default=respond) as server:
        exp = Experiment.from_file(write(tmp_path, config_for(server.url, tmp_path)))
        [result] = run_experiment(exp, log=lambda m: None, plots=tmp_path / "plots")
        served = server.count
        # a rerun reuses the runs and the cached answers: no request at all
        [again] = run_experiment(Experiment.from_file(tmp_path / "exp.yaml"), log=lambda m: None)
        assert server.count == served and again.reused == ["bm25", "react"]
    table = result.answers.table
    assert table.conditions == ["none", "bm25", "react", "oracle"] and table.n_questions == 10
    # the contexts are the top 3 of the experiment's own runs
    bm25_run = read_run(result.run_paths["bm25"])
    for answer in result.answers.answers["bm25"]:
        assert answer.context == tuple(doc for doc, _ in ranked(bm25_run[answer.qid])[:3])
    # option A is right exactly for the questions whose answer is A, under every condition
    expected_right = sum(a.expected == "A" for a in result.answers.answers["none"])
    assert all(table.summaries[c].correct == expected_right for c in table.conditions)
    assert again.answers.table.to_dict() == table.to_dict()
    out = tmp_path / "out"
    assert (out / "demo__test.answer.md").read_text(encoding="utf-8").startswith("**answers: demo/test**")
    assert len(json.loads((out / "demo__test.answer.json").read_text(encoding="utf-8"))["answers"]["react"]) == 10
    rounds = sorted(p.name.split(".")[-2] for p in (out / "runs" / "demo__test").glob("react.*.round*.trec"))
    assert rounds == ["round1", "round2"]
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == [f"demo__test.{kind}.{fmt}" for kind in ("accuracy", "hits", "rounds") for fmt in ("png", "svg")]


@pytest.mark.parametrize("answer, message", [
    ({"conditions": ["none", "dense"]}, "answer.conditions[1]': 'dense' is not none, oracle or a system"),
    ({"k": 0}, "answer.k': expected a positive integer"),
    ({"baseline": "oracle", "conditions": ["none", "bm25"]}, "answer.baseline'"),
    ({"llm": {"temperature": 1}}, "answer.llm.temperature': unknown LLM setting"),
    ({"contexts": ["none"]}, "answer.contexts': unknown setting"),
])
def test_answer_section_errors_name_the_field(tmp_path, answer, message):
    config = {"datasets": ["demo"], "systems": ["bm25"], "answer": answer}
    with pytest.raises(ExperimentError, match=str(tmp_path / "exp.yaml").replace(".", r"\.") + ".*" +
                       message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        Experiment.from_file(write(tmp_path, config))
