"""lexir train, model folders, bm25-qa and recommended(model=DIR), on the real German lay
questions of ../shared/data/de/gerlayqa-dev (read from there, never shipped)."""

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lexir
from lexir.cli.main import app
from lexir.datasets.folds import fold_of, kfold_ids
from lexir.learning.folds import kfold, subset
from lexir.learning.model import load_model, text_fingerprint
from lexir.learning.qa import SeenQueryError
from lexir.learning.train import train_system
from lexir.retrieval.build import effective_spec
from lexir.types import Query


@pytest.fixture(scope="module")
def gerlayqa(data_dir):
    folder = data_dir / "de" / "gerlayqa-dev"
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip("gerlayqa-dev not in ../shared/data")
    bench = lexir.load(folder, language="de")
    return folder, bench.corpus, bench.queries.split("dev")


@pytest.fixture(scope="module")
def fold(gerlayqa):
    """Fold 0 of the 5 hash folds: a training set cut to 600 questions (to keep the test short)
    and 200 of its evaluation questions."""
    _, _, queries = gerlayqa
    train, test = kfold(queries, 5)[0]
    return subset(train, [q.id for q in train.queries[:600]]), subset(test, [q.id for q in test.queries[:200]])


@pytest.fixture(scope="module")
def model(gerlayqa, fold, tmp_path_factory):
    _, corpus, _ = gerlayqa
    out = tmp_path_factory.mktemp("models") / "qa"
    manifest = train_system("bm25-qa", corpus, fold[0], out, data={"data": "gerlayqa-dev"},
                            params={"folds": 2, "dense": "off"})
    return out, manifest


def test_folds_partition_the_questions_and_never_share_a_text(gerlayqa):
    _, _, queries = gerlayqa
    folds = kfold(queries, 5)
    evaluated = [q.id for _, test in folds for q in test.queries]
    assert sorted(evaluated) == sorted(q.id for q in queries.queries)  # each question evaluated once
    for train, test in folds:
        assert {q.id for q in train.queries}.isdisjoint(q.id for q in test.queries)
        assert {text_fingerprint(q.text) for q in train.queries}.isdisjoint(
            text_fingerprint(q.text) for q in test.queries)
        assert len(train) + len(test) == len(queries)
        assert set(train.qrels) | set(test.qrels) == set(queries.qrels)
    # by hash of the id: the same folds whatever the order, and a new question moves no other
    ids = [q.id for q in queries.queries]

    def assignment(order):
        return {qid: i for i, (_, test) in enumerate(kfold_ids(order, 5)) for qid in test}

    again = assignment(ids[::-1] + ["new-question"])
    assert again.pop("new-question") == fold_of("new-question", 5)
    assert again == assignment(ids)


def test_a_duplicate_text_goes_to_the_fold_of_its_first_copy():
    from lexir.types import QuerySet

    texts = [Query(f"q{i}", f"Frage Nummer {i}") for i in range(40)]
    copies = [Query(f"copy{i}", f"  FRAGE   nummer {i} ") for i in range(40)]
    queries = QuerySet("t", texts + copies, {q.id: {"BGB::1": 1} for q in texts + copies})
    for train, test in kfold(queries, 5):
        assert {text_fingerprint(q.text) for q in train.queries}.isdisjoint(
            text_fingerprint(q.text) for q in test.queries)


def test_the_manifest_records_what_the_model_was_trained_on(gerlayqa, fold, model):
    _, corpus, _ = gerlayqa
    out, manifest = model
    loaded = load_model(out)
    assert loaded.manifest == manifest
    train = fold[0]
    assert manifest["system"] == "bm25-qa" and manifest["language"] == "de"
    assert manifest["corpus"]["fingerprint"] == corpus.fingerprint
    assert manifest["training"]["query_ids"] == [q.id for q in train.queries]
    assert manifest["training"]["text_sha256"] == [text_fingerprint(q.text) for q in train.queries]
    assert manifest["lexir_version"] == lexir.__version__ and manifest["created"][:2] == "20"
    assert set(manifest["params"]) >= {"base", "field", "neighbours", "prior", "k"}
    assert [q.id for q in loaded.questions] == manifest["training"]["query_ids"]
    # a hand-edited questions file is refused, naming it
    edited = out.parent / "edited"
    edited.mkdir()
    (edited / "lexir-model.json").write_text((out / "lexir-model.json").read_text())
    lines = (out / "questions.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["text"] += " (edited)"
    (edited / "questions.jsonl").write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match="questions.jsonl"):
        load_model(edited)


def test_a_model_folder_is_written_whole_or_not_at_all(gerlayqa, fold, model, tmp_path, monkeypatch):
    _, corpus, _ = gerlayqa
    out, _ = model
    with pytest.raises(ValueError, match="already exists"):
        train_system("bm25-qa", corpus, fold[0], out, params={"dense": "off"})

    def crash(*args):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "rename", crash)
    target = tmp_path / "crashed"
    with pytest.raises(OSError, match="disk gone"):
        train_system("bm25-qa", corpus, subset(fold[0], [q.id for q in fold[0].queries[:60]]), target,
                     params={"folds": 2, "dense": "off"})
    assert list(tmp_path.iterdir()) == []  # neither the folder nor its temporary copy


def test_a_run_over_training_questions_is_refused(gerlayqa, fold, model):
    _, corpus, _ = gerlayqa
    out, _ = model
    trained = lexir.build(corpus, "bm25-qa", model=str(out), cache=False)
    seen = fold[0].queries[5]
    mixed = [*fold[1].queries[:3], Query("renamed", "  " + seen.text.upper() + " ")]
    with pytest.raises(SeenQueryError, match="1 of 4 questions .*'renamed'"):
        trained.search_many(mixed)
    with pytest.warns(UserWarning, match="trained on"):
        lexir.build(corpus, "bm25-qa", model=str(out), seen="warn", cache=False).search_many(mixed)
    assert trained.search_many(fold[1].queries[:3])  # held-out questions are answered


def test_the_trained_model_is_used_and_helps_on_held_out_questions(gerlayqa, fold, model):
    _, corpus, _ = gerlayqa
    out, manifest = model
    test = fold[1]
    trained = lexir.retrieve(lexir.build(corpus, "bm25-qa", model=str(out), cache=False), test)
    base = lexir.retrieve(lexir.build(corpus, manifest["params"]["base"]), test)
    assert trained != base
    ours, theirs = lexir.evaluate(trained, test).mean("nDCG@10"), lexir.evaluate(base, test).mean("nDCG@10")
    assert ours > theirs + 0.05, (ours, theirs)
    assert lexir.evaluate(trained, test).mean("R@100") > lexir.evaluate(base, test).mean("R@100")


@pytest.mark.slow  # German recommended fuses dense: its first build encodes the BGB
def test_recommended_without_a_model_is_todays_pipeline_and_with_one_the_trained_system(gerlayqa, fold, tmp_path):
    folder, corpus, _ = gerlayqa
    from lexir.learning.recommended import recommended_spec

    untrained = effective_spec("recommended", None, "de")
    assert untrained == effective_spec(recommended_spec("de"), None, "de")
    # no trained part: no bm25-qa, and no model folder named (dense's own `model=` is its empty encoder variant)
    assert "bm25-qa" not in untrained and re.search(r"(?<![\w-])model=[^;)]", untrained) is None, untrained
    out = tmp_path / "rec"
    train_system("recommended", corpus, subset(fold[0], [q.id for q in fold[0].queries[:300]]), out,
                 params={"folds": 2, "dense": "off"})
    with_model = effective_spec("recommended", {"model": str(out)}, "de")
    assert with_model.startswith("explicit(base=bm25-qa(") and load_model(out).digest in with_model
    test = fold[1].queries[:50]
    plain = lexir.retrieve(lexir.build(corpus, "recommended"), test)
    learned = lexir.retrieve(lexir.build(corpus, "recommended", model=str(out)), test)
    assert plain == lexir.retrieve(lexir.build(corpus, recommended_spec("de")), test)
    assert learned != plain



def test_recommended_refuses_a_model_trained_for_another_system(gerlayqa, model):
    _, corpus, _ = gerlayqa
    out, _ = model
    with pytest.raises(ValueError, match="trained for 'bm25-qa', not recommended"):
        lexir.build(corpus, "recommended", model=str(out), cache=False)
    with pytest.raises(FileNotFoundError, match="not a lexir model folder"):
        lexir.build(corpus, "recommended", model=str(out.parent / "missing"), cache=False)
    with pytest.raises(ValueError, match="trained on 'de' questions"):
        lexir.build(corpus.with_language("pl"), "bm25-qa", model=str(out), cache=False)


@pytest.mark.slow  # trains German recommended, whose base encodes the BGB
def test_train_and_run_from_the_command_line(gerlayqa, fold, tmp_path):
    folder, _, _ = gerlayqa
    train, test = fold
    queries = tmp_path / "questions.jsonl"
    queries.write_text("".join(json.dumps({"_id": q.id, "text": q.text}, ensure_ascii=False) + "\n"
                               for q in train.queries[:200]), encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q.id} 0 {d} {g}\n" for q in train.queries[:200] for d, g in train.qrels[q.id].items()))
    runner = CliRunner()
    result = runner.invoke(app, ["train", "recommended", "--corpus", str(folder), "--language", "de",
                                 "--queries", str(queries), "--qrels", str(qrels), "-p", "folds=2",
                                 "-p", "dense=off", "--output", str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    assert load_model(tmp_path / "m").manifest["training"]["queries"] == 200
    again = runner.invoke(app, ["train", "recommended", str(folder), "--split", "dev", "--language", "de",
                                "--output", str(tmp_path / "m")])
    assert again.exit_code == 2 and "already exists" in again.output
    bad = runner.invoke(app, ["train", "dense", str(folder), "--output", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "trainable: bm25-qa, recommended" in bad.output
    held = tmp_path / "held.jsonl"
    held.write_text("".join(json.dumps({"_id": q.id, "text": q.text}, ensure_ascii=False) + "\n"
                            for q in test.queries[:20]), encoding="utf-8")
    run = runner.invoke(app, ["run", str(folder), "--language", "de", "--system", "recommended", "-p",
                              f"model={tmp_path / 'm'}", "--queries", str(held), "--queries-format", "beir",
                              "--output", str(tmp_path / "r.trec")])
    assert run.exit_code == 0, run.output
    assert len({line.split()[0] for line in Path(tmp_path / "r.trec").read_text().splitlines()}) == 20
    seen = runner.invoke(app, ["run", str(folder), "--language", "de", "--split", "dev", "--system", "recommended",
                               "-p", f"model={tmp_path / 'm'}", "--output", str(tmp_path / "s.trec")])
    assert seen.exit_code == 2 and "trained on" in seen.output


def test_the_fold_helper_cuts_the_registered_gerlayqa_folds():
    from lexir.jurisdictions.de.lay import fold_of as dataset_fold

    ids = [f"gerlayqa-dev-{i}" for i in range(300)]
    assert [fold_of(q, 5, seed="gerlayqa") for q in ids] == [dataset_fold(q) for q in ids]
    assert len({fold_of(q, 5, seed="gerlayqa") for q in ids}) == 5


def test_a_changed_ranker_file_is_refused(tmp_path):
    from lexir.learning.model import TrainingQuestion, write_model

    params = {"base": "bm25", "field": 0.0, "neighbours": 0.0, "prior": 0.0, "k": 30}
    manifest = {"kind": "lexir-model", "format": 1, "system": "bm25-qa", "params": params, "language": "de",
                "training": {"query_ids": ["a"], "text_sha256": [text_fingerprint("Frage")]}}
    write_model(tmp_path / "m", manifest, [TrainingQuestion("a", "Frage", {"BGB::1": 1})], {"ranker.txt": b"tree"})
    assert load_model(tmp_path / "m").manifest["files"]["ranker.txt"]
    (tmp_path / "m" / "ranker.txt").write_bytes(b"tree, edited")
    with pytest.raises(ValueError, match="ranker.txt: missing or changed"):
        load_model(tmp_path / "m")


def test_training_data_names_what_is_missing(gerlayqa, tmp_path):
    from lexir.learning.train import training_data

    folder, corpus, _ = gerlayqa
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"_id": "a", "text": "Mein Vermieter hat gekündigt"}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="q.jsonl: no judgements in the file .*--qrels"):
        training_data(corpus=corpus, queries=queries)
    with pytest.raises(ValueError, match="--qrels needs --queries"):
        training_data(folder, qrels=tmp_path / "x.qrels")
    with pytest.raises(ValueError, match="no split 'tune'"):
        training_data(str(folder), split="tune", language="de")


def test_learning_to_rank_is_trained_saved_and_used(tmp_path):
    """ltr=on: a LightGBM lambdarank model over the evidence is trained on the training questions
    only, saved in the model folder, and reorders the held-out questions' results."""
    pytest.importorskip("lightgbm")
    bench = lexir.load("demo")
    train, test = kfold(bench.queries, 4)[0]
    plain = train_system("bm25-qa", bench.corpus, train, tmp_path / "plain", params={"folds": 2, "dense": "off"})
    ranked = train_system("bm25-qa", bench.corpus, train, tmp_path / "ltr", params={"folds": 2, "ltr": "on", "dense": "off"})
    assert plain["params"]["ranker"] == "" and ranked["params"]["ranker"]
    assert (tmp_path / "ltr" / ranked["params"]["ranker"]).stat().st_size > 0
    runs = [lexir.retrieve(lexir.build(bench.corpus, "bm25-qa", model=str(tmp_path / name), cache=False), test)
            for name in ("plain", "ltr")]
    assert runs[0] != runs[1]  # the ranker is applied at query time
    assert lexir.evaluate(runs[1], test).mean("nDCG@10") > 0.5  # and ranks the cited article high
    with pytest.raises(SeenQueryError):
        lexir.build(bench.corpus, "bm25-qa", model=str(tmp_path / "ltr"), cache=False).search_many(train.queries[:2])


def test_dense_evidence_is_trained_saved_and_used(tmp_path):
    """The e5 evidence (nearest training questions, linear adapter) fits its training questions;
    dense=on keeps it (its best non-zero weights), saves the adapter in the model folder, and the
    built system uses it."""
    pytest.importorskip("onnxruntime")
    import dataclasses

    import numpy as np

    from lexir.learning.qa import DENSE_SPEC, Evidence, QuestionAugmented, questions_of
    from lexir.retrieval.build import build_retriever

    bench = lexir.load("demo")
    train, test = kfold(bench.queries, 4)[0]
    dense = build_retriever(bench.corpus, DENSE_SPEC)
    evidence = Evidence(bench.corpus, questions_of(train.queries, train.qrels), "pl", dense)
    # the adapter fits: a training question's cited article scores higher than where it started
    fitted, start = evidence.dense, np.stack([dense.article_vector(d) for d in bench.corpus.ids]).T
    column = {d: i for i, d in enumerate(bench.corpus.ids)}
    q = train.queries[0]
    cited = [column[d] for d in train.qrels[q.id] if d in column]
    vector = dense.encode_queries([q.text])[0]
    before = np.argsort(-(vector @ start)).tolist().index(cited[0])
    after = np.argsort(-(vector @ fitted.weights + fitted.bias / 20)).tolist().index(cited[0])
    assert after <= before
    votes, adapted = evidence.dense_matrices(test.queries)
    assert votes.shape == adapted.shape == (len(test.queries), len(bench.corpus))
    assert np.allclose(adapted.max(axis=1), 1.0) and np.allclose(votes.max(axis=1), 1.0)

    manifest = train_system("bm25-qa", bench.corpus, train, tmp_path / "m", params={"folds": 2, "dense": "on"})
    assert manifest["selection"]["dense"] is True
    params = manifest["params"]
    assert params["dense_neighbours"] or params["adapter"]
    assert params["dense"] == DENSE_SPEC and (tmp_path / "m" / "adapter.npz").is_file()
    trained = lexir.build(bench.corpus, "bm25-qa", model=str(tmp_path / "m"), cache=False)
    without = QuestionAugmented(bench.corpus, trained.base, trained.model,
                                dataclasses.replace(trained.weights, dense_neighbours=0.0, adapter=0.0))
    assert trained.search_many(test.queries) != without.search_many(test.queries)
