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


@pytest.fixture(scope="module")
def model(demo, tmp_path_factory):
    """bm25-qa trained on the demo's tune questions."""
    corpus, tune, _ = demo
    out = tmp_path_factory.mktemp("models") / "qa"
    train_demo(corpus, tune, out)
    return out


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


def write_questions(tmp_path, queries, rename=lambda i, doc: doc):
    """queries.jsonl and a BEIR qrels .tsv of ``queries``, each judged id passed through ``rename``."""
    import json

    questions = tmp_path / "queries.jsonl"
    questions.write_text("".join(json.dumps({"_id": q.id, "text": q.text}, ensure_ascii=False) + "\n"
                                 for q in queries.queries), encoding="utf-8")
    qrels = tmp_path / "qrels.tsv"
    rows = [f"{q.id}\t{rename(i, d)}\t{g}\n" for i, q in enumerate(queries.queries)
            for d, g in queries.qrels[q.id].items()]
    qrels.write_text("query-id\tcorpus-id\tscore\n" + "".join(rows), encoding="utf-8")
    return questions, qrels


def test_judged_questions_citing_no_provision_of_the_corpus_are_reported(demo, tmp_path):
    from lexir.learning.train import training_data

    corpus, tune, _ = demo
    # every other question's judgements renamed to ids the corpus does not have
    questions, qrels = write_questions(tmp_path, tune, lambda i, d: d if i % 2 else f"kc::{d.split('::')[1]}")
    corp, qset, described = training_data(corpus=corpus, queries=questions, qrels=qrels)
    logs = []
    manifest = train_system("bm25-qa", corp, qset, tmp_path / "m", data=described,
                            params={"folds": 2, "dense": "off"}, log=logs.append)
    assert manifest["training"]["queries"] == 24
    said = [m for m in logs if "cite no provision" in m]
    assert said == [f"{qrels}: 24 of 48 judged questions cite no provision of corpus 'demo' and are left out "
                    f"(first unknown id: 'kc::{next(iter(tune.qrels[tune.queries[0].id])).split('::')[1]}' "
                    f"of question {tune.queries[0].id!r})"]
    with pytest.warns(UserWarning, match="24 of 48 judged questions cite no provision"):  # the Python API
        lexir.train("bm25-qa", corpus=corpus, queries=questions, qrels=qrels, output=tmp_path / "m2",
                    folds=2, dense="off")


def test_when_no_judged_question_cites_the_corpus_the_error_names_the_file_and_an_id(demo, tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app

    _, tune, _ = demo
    questions, qrels = write_questions(tmp_path, tune, lambda i, d: d.upper())  # KK::148 for kk::148
    result = CliRunner().invoke(app, ["train", "bm25-qa", "--corpus", "demo", "--queries", str(questions),
                                      "--qrels", str(qrels), "-o", str(tmp_path / "m")])
    assert result.exit_code == 2
    first = next(iter(tune.qrels[tune.queries[0].id]))
    assert f"{qrels}: 0 of 48 judged questions cite provisions of corpus 'demo'" in " ".join(result.output.split())
    assert f"first unknown id: {first.upper()!r}" in result.output and f"has as {first!r}" in result.output
    assert not (tmp_path / "m").exists()


def test_a_model_over_a_corpus_without_any_provision_it_learned_is_refused(demo, model, caplog):
    from lexir.types import Corpus, Document

    corpus, _, test = demo
    other = Corpus("other", [Document(f"kc::{i}", doc.text) for i, doc in enumerate(corpus.documents[:50])],
                   language="pl")
    with pytest.raises(ValueError, match=r"none of the \d+ provisions its training questions cite is in corpus "
                                         r"'other' \(e\.g\. 'kk::.*'\); it was trained over corpus 'demo'"):
        lexir.build(other, "bm25-qa", model=str(model), cache=False)
    # a corpus with some of them: built, with a warning naming how many are missing
    part = Corpus("part", corpus.documents[:200], language="pl")
    with caplog.at_level("WARNING", logger="lexir.learning.systems"):
        lexir.build(part, "bm25-qa", model=str(model), cache=False).search_many(test.queries[:3])
    assert any("provisions its training questions cite are not in corpus 'part'" in r.getMessage()
               for r in caplog.records)


PARAMS = {"base": "bm25", "depth": 1000, "joint": 1.0, "field": 0.0, "neighbours": 0.0, "prior": 0.2, "k": 30,
          "ranker": "", "recall": {}, "dense": "", "adapter_file": ""}  # a manifest's params, as trained


def versions_of(tmp_path, count=3):
    """A models folder with ``count`` small versions of corpus demo (as a learner adds them)."""
    from lexir.learning.model import TrainingQuestion, text_fingerprint, write_model
    from lexir.learning.versions import ModelVersions

    store = ModelVersions(tmp_path / "models", "demo")
    manifest = {"kind": "lexir-model", "format": 1, "system": "recommended", "params": PARAMS,
                "language": "pl", "created": "2025-01-01T00:00:00+00:00",
                "training": {"queries": 1, "query_ids": ["a"], "text_sha256": [text_fingerprint("pytanie")]}}
    with store.locked() as held:
        for _ in range(count):
            candidate = held.candidate_dir()
            write_model(candidate, manifest, [TrainingQuestion("a", "pytanie", {"kk::148": 1})])
            held.use(held.add(candidate, {"verdict": "accepted"}))
    return store


def test_a_malformed_version_is_listed_as_broken_and_cannot_be_used(tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app
    from lexir.learning.model import MANIFEST
    from lexir.learning.versions import LEARN_FILE

    store = versions_of(tmp_path)
    (store.path("v0002") / LEARN_FILE).write_text('{"verdict": ', encoding="utf-8")
    (store.path("v0003") / MANIFEST).write_text("{", encoding="utf-8")
    runner = CliRunner()
    listed = runner.invoke(app, ["models", "list", "--models", str(tmp_path / "models")])
    assert listed.exit_code == 0, listed.output
    lines = " ".join(listed.output.split())
    assert "v0001 accepted 2025-01-01T00:00:00+00:00 1 questions" in lines
    assert f"v0002 broken {store.path('v0002') / LEARN_FILE}: not JSON (Expecting value, line 1)" in lines
    assert f"* v0003 broken {store.path('v0003') / MANIFEST}: not JSON" in lines
    for version, file in (("2", LEARN_FILE), ("3", MANIFEST)):
        used = runner.invoke(app, ["models", "use", "demo", version, "--models", str(tmp_path / "models")])
        assert used.exit_code == 2 and f"{store.path('v000' + version) / file}: not JSON" in used.output
    assert store.current() == "v0003"  # the pointer is left as it was
    assert runner.invoke(app, ["models", "use", "demo", "1", "--models", str(tmp_path / "models")]).exit_code == 0


@pytest.mark.parametrize("params, message", [
    ({"depth": 0}, "parameter depth=0 is out of range; valid: 1 or more"),
    ({"depth": "-5"}, "parameter depth='-5' is out of range; valid: 1 or more"),
    ({"folds": 1}, "parameter folds=1 is out of range; valid: 2 to 100"),
    ({"folds": 2.5}, "parameter folds=2.5: expected int"),
    ({"folds": True}, "parameter folds=True: expected int"),
    ({"depth": "abc"}, "parameter depth='abc': expected int"),
    ({"ltr": "maybe"}, "parameter ltr='maybe'; valid: off, auto, on"),
    ({"dense": "yes"}, "parameter dense='yes'; valid: auto, on, off"),
    ({"recall": "sometimes"}, "parameter recall='sometimes'; valid: auto, off"),
    ({"base": "nosuch"}, "parameter base='nosuch': unknown system 'nosuch'"),
    ({"base": "bm25(k1=abc)"}, "parameter base='bm25(k1=abc)': "),
    ({"folds": 60}, "parameter folds=60: more inner folds than the 48 questions to train on"),
])
def test_every_option_is_checked_before_anything_is_built(demo, tmp_path, monkeypatch, params, message):
    import lexir.learning.train as train

    def no_build(*args, **kwargs):
        raise AssertionError("built before the options were checked")

    monkeypatch.setattr(train, "build_retriever", no_build)
    corpus, tune, _ = demo
    with pytest.raises(ValueError) as caught:
        train_system("bm25-qa", corpus, tune, tmp_path / "m", params=params)
    assert message in str(caught.value)
    assert not (tmp_path / "m").exists()


def test_lexir_train_refuses_a_depth_of_zero_naming_the_range(tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app

    result = CliRunner().invoke(app, ["train", "bm25-qa", "demo", "--split", "tune", "-p", "depth=0",
                                      "-o", str(tmp_path / "m")])
    assert result.exit_code == 2 and "parameter depth='0' is out of range; valid: 1 or more" in result.output
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("edit, message", [
    (lambda p: p.pop("base"), "field 'params.base' (the base system's spec) is missing or empty"),
    (lambda p: p.update(joint="abc"), "field 'params.joint' must be a number, not 'abc'"),
    (lambda p: p.pop("prior"), "missing field 'params.prior'"),
    (lambda p: p.update(k=0), "field 'params.k' must be a whole number of at least 1, not 0"),
    (lambda p: p.update(depth="deep"), "field 'params.depth' must be a whole number of at least 1, not 'deep'"),
    (lambda p: p.update(recall={"field": 1.0}), "missing field 'params.recall.neighbours'"),
    (lambda p: p.update(adapter=0.5), "field 'params.dense' is empty, but the dense weights are not 0"),
])
def test_a_hand_edited_manifest_is_refused_naming_the_file_and_the_field(demo, model, tmp_path, edit, message):
    import json

    from lexir.learning.model import MANIFEST

    corpus, _, _ = demo
    edited = tmp_path / "edited"
    shutil.copytree(model, edited)
    manifest = json.loads((edited / MANIFEST).read_text(encoding="utf-8"))
    edit(manifest["params"])
    (edited / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        lexir.build(corpus, "bm25-qa", model=str(edited), cache=False)
    assert str(caught.value) == f"{edited / MANIFEST}: {message}"


def test_lexir_run_with_a_hand_edited_model_exits_2_naming_the_field(model, tmp_path):
    import json

    from typer.testing import CliRunner

    from lexir.cli.main import app
    from lexir.learning.model import MANIFEST

    edited = tmp_path / "edited"
    shutil.copytree(model, edited)
    manifest = json.loads((edited / MANIFEST).read_text(encoding="utf-8"))
    del manifest["params"]["base"]
    (edited / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "demo", "--split", "test", "--system", "bm25-qa", "-p",
                                      f"model={edited}", "--output", str(tmp_path / "r.trec")])
    assert result.exit_code == 2 and "field 'params.base'" in result.output and "Traceback" not in result.output


def test_models_list_and_use_refuse_a_corpus_without_models(tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app

    versions_of(tmp_path, 1)
    runner = CliRunner()
    root = tmp_path / "models"
    listed = runner.invoke(app, ["models", "list", "nosuch", "--models", str(root)])
    assert listed.exit_code == 2
    assert f"no models for corpus 'nosuch' under {root}; corpora with models: demo" in " ".join(listed.output.split())
    used = runner.invoke(app, ["models", "use", "typo", "base", "--models", str(root)])
    assert used.exit_code == 2 and "no models for corpus 'typo'" in used.output
    assert not (root / "typo").exists()  # no folder made for a typo


def test_a_pointer_to_a_missing_or_broken_version_is_warned_about(tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app
    from lexir.learning.model import MANIFEST
    from lexir.learning.versions import POINTER

    store = versions_of(tmp_path, 2)
    root = tmp_path / "models"
    (store.folder / POINTER).write_text("v0007\n", encoding="utf-8")
    listed = CliRunner().invoke(app, ["models", "list", "demo", "--models", str(root)])
    text = " ".join(listed.output.split())
    assert listed.exit_code == 0 and "*" not in text
    assert f"warning: {store.folder / POINTER} names v0007, which is not a complete version here" in text
    (store.folder / POINTER).write_text("v0002\n", encoding="utf-8")
    (store.path("v0002") / MANIFEST).write_text("[", encoding="utf-8")
    listed = CliRunner().invoke(app, ["models", "list", "demo", "--models", str(root)])
    assert f"{store.folder / POINTER} names v0002, which does not load: {store.path('v0002') / MANIFEST}: not JSON" \
        in " ".join(listed.output.split())


def test_the_learner_logs_a_pointer_it_cannot_serve_once(tmp_path, caplog):
    import threading
    from types import SimpleNamespace

    pytest.importorskip("fastapi")
    from lexir.learning.versions import POINTER
    from lexir.service.learner import Learner, LearnSettings
    from lexir.service.state import _param_key

    store = versions_of(tmp_path, 1)
    plain = SimpleNamespace()
    loaded = SimpleNamespace(name="demo", corpus=None, preparing={}, build_lock=threading.Lock(),
                             retrievers={_param_key("bm25", {}): plain})
    state = SimpleNamespace(settings=SimpleNamespace(systems=["bm25"]), corpora={"demo": loaded})
    learner = Learner(state, None, LearnSettings(models=str(tmp_path / "models")))
    learner.build = lambda loaded, version, seen="refuse": (_ for _ in ()).throw(ValueError("no such version"))
    (store.folder / POINTER).write_text("v0003\n", encoding="utf-8")
    with caplog.at_level("ERROR", logger="lexir.service.learner"):
        for _ in range(5):  # five watch intervals
            learner.sync("demo")
    assert [r.getMessage() for r in caplog.records] == ["corpus demo: cannot serve model v0003: no such version"]
    assert learner.served["demo"] == "base" and "cannot serve v0003" in learner.last_error["demo"]
    (store.folder / POINTER).write_text("v0004\n", encoding="utf-8")  # another value: said again, once
    learner.sync("demo")
    learner.sync("demo")
    assert len(caplog.records) == 2 and "v0004" in caplog.records[1].getMessage()


def test_language_is_refused_for_a_registered_dataset(tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app

    result = CliRunner().invoke(app, ["train", "bm25-qa", "demo", "--language", "de", "-o", str(tmp_path / "m")])
    assert result.exit_code == 2 and "--language is for a corpus given by path; 'demo' is no path" in \
        " ".join(result.output.split())
    assert not (tmp_path / "m").exists()


def test_the_seen_error_tells_a_python_user_how_to_allow_and_the_docs_list_every_option(demo, model):
    from lexir.learning.qa import SeenQueryError

    corpus, tune, _ = demo
    with pytest.raises(SeenQueryError, match=r'pass -p seen=allow \(in Python: seen="allow"\)'):
        lexir.build(corpus, "bm25-qa", model=str(model), cache=False).search_many(tune.queries[:2])
    for option in ("base", "folds", "depth", "ltr", "dense", "recall"):
        assert f"``{option}``" in lexir.train.__doc__
