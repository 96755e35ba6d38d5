"""Checks around trained models on the shipped demo (Kodeks karny and its exam questions): what a
cached run is keyed by, what training and loading refuse, and how they say it."""

import shutil

import pytest
import yaml

import lexir
from lexir.experiment import Experiment, run_experiment
from lexir.learning.folds import subset
from lexir.learning.train import train_system


@pytest.fixture(scope="module")
def demo():
    bench = lexir.load("demo")
    return bench.corpus, bench.queries.split("tune"), bench.queries.split("test")


def train_demo(corpus, queries, out, **params):
    return train_system("bm25-qa", corpus, queries, out, params={"folds": 2, "dense": "off", **params})


def test_a_cached_bm25_qa_run_follows_a_model_retrained_into_the_same_folder(demo, tmp_path):
    corpus, tune, _ = demo
    model = tmp_path / "m"
    train_demo(corpus, tune, model)
    config = {"datasets": [{"name": "demo", "split": "test"}],
              "systems": [{"name": "qa", "system": "bm25-qa", "params": {"model": str(model)}},
                          {"name": "plain", "system": "bm25"}],
              "measures": ["nDCG@10"], "output": str(tmp_path / "out")}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert run_experiment(Experiment.from_file(path), log=lambda m: None)[0].reused == []
    assert run_experiment(Experiment.from_file(path), log=lambda m: None)[0].reused == ["qa", "plain"]
    shutil.rmtree(model)
    train_demo(corpus, subset(tune, [q.id for q in tune.queries[:30]]), model, depth=50)  # retrained differently
    again = run_experiment(Experiment.from_file(path), log=lambda m: None)[0]
    assert again.reused == ["plain"]  # the trained system's run is recomputed
