"""Experiment files: parsing, caching of runs, expected-score regressions, and the recorded results."""

import os
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from lexir.experiment import Experiment, ExperimentError, run_experiment
from lexir.io import read_run

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path, config: dict) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_runs_are_cached_and_only_changes_recomputed(tmp_path):
    config = {"datasets": [{"name": "demo"}],
              "systems": [{"name": "raw", "system": "bm25"}, {"name": "stem", "system": "bm25",
                                                               "params": {"mode": "stem"}}],
              "measures": ["nDCG@10", "Hit@10"], "output": str(tmp_path / "out")}
    logs = []
    first = run_experiment(Experiment.from_file(write(tmp_path, config)), log=logs.append)
    assert first[0].reused == [] and len(logs) == 2
    config["systems"][1]["params"]["k1"] = 0.9
    logs.clear()
    second = run_experiment(Experiment.from_file(write(tmp_path, config)), log=logs.append)
    assert second[0].reused == ["raw"] and len(logs) == 1 and "stem" in logs[0]
    assert (tmp_path / "out" / "demo__all.md").read_text().startswith("| System |")
    assert first[0].comparison.estimates["raw"] == second[0].comparison.estimates["raw"]


def test_a_recommended_run_is_keyed_by_the_pipeline_it_stands_for(tmp_path, monkeypatch):
    # `recommended` is a name for the row of defaults.tsv; a cached run must follow the row,
    # alone and as a part of a composite, or editing the table silently reuses old runs.
    import lexir.analysis.defaults as defaults

    config = {"datasets": [{"name": "demo"}],
              "systems": [{"name": "rec", "system": "recommended"},
                          {"name": "fused", "system": "combsum", "params": {"systems": "rec+bm25"}},
                          {"name": "plain", "system": "bm25", "params": {"k1": 0.9}}],
              "measures": ["nDCG@10"], "output": str(tmp_path / "out")}
    path = write(tmp_path, config)
    table = dict(defaults._table())
    table["pl"] = replace(table["pl"], recommended="bm25(k1=0.6)")  # cheap rows, whatever the shipped one is
    monkeypatch.setattr(defaults, "_table", lambda: table)
    assert run_experiment(Experiment.from_file(path), log=lambda m: None)[0].reused == []
    assert run_experiment(Experiment.from_file(path), log=lambda m: None)[0].reused == ["rec", "fused", "plain"]
    table["pl"] = replace(table["pl"], recommended="bm25(k1=0.9)")  # the row is edited
    logs = []
    third = run_experiment(Experiment.from_file(path), log=logs.append)[0]
    assert third.reused == ["plain"] and len(logs) == 2
    # the recomputed run is the new row's pipeline: the same run as bm25(k1=0.9) itself
    assert read_run(third.run_paths["rec"]) == read_run(third.run_paths["plain"])


def test_a_bm25_run_follows_its_languages_mode(tmp_path, monkeypatch):
    """``bm25`` reads its mode from the language's row (mode=auto): a row chosen anew recomputes it."""
    import lexir.analysis.defaults as defaults

    config = {"datasets": [{"name": "demo"}], "systems": [{"name": "auto", "system": "bm25"}],
              "measures": ["nDCG@10"], "output": str(tmp_path / "out")}
    path = write(tmp_path, config)
    table = dict(defaults._table())
    table["pl"] = replace(table["pl"], mode="raw")
    monkeypatch.setattr(defaults, "_table", lambda: table)
    first = run_experiment(Experiment.from_file(path), log=lambda m: None)[0]
    assert run_experiment(Experiment.from_file(path), log=lambda m: None)[0].reused == ["auto"]
    table["pl"] = replace(table["pl"], mode="stem")
    third = run_experiment(Experiment.from_file(path), log=lambda m: None)[0]
    assert third.reused == [] and read_run(third.run_paths["auto"]) != read_run(first.run_paths["auto"])


def test_effective_spec_expands_recommended_through_composites():
    from lexir.analysis import language_defaults
    from lexir.retrieval.build import effective_spec

    # recommended is its language's row with the articles a question cites first (both have citation finders)
    pl, el = (effective_spec(f"explicit(base={language_defaults(lang).recommended})", None, lang) for lang in ("pl", "el"))
    assert effective_spec("recommended", None, "pl") == pl != effective_spec("recommended", None, "el") == el
    fused = effective_spec("rrf(systems=recommended+bm25)", None, "el")
    assert el in fused and "recommended" not in fused
    assert effective_spec("bm25", {"k1": "0.9"}, "pl") == effective_spec("bm25(k1=0.90)", None, "pl")
    with pytest.raises(ValueError, match="no parameter 'k1'"):
        effective_spec("recommended", {"k1": 1}, "pl")


def test_expected_scores_flag_regressions(tmp_path):
    config = {"datasets": ["demo"], "systems": ["bm25"], "measures": ["nDCG@10"],
              "expected": {"demo/all": {"bm25": {"nDCG@10": 0.5}}}, "output": str(tmp_path / "out")}
    result = run_experiment(Experiment.from_file(write(tmp_path, config)), log=lambda m: None)
    assert result[0].regressions and "expected 0.5000" in result[0].regressions[0]


def test_bad_files_name_the_field(tmp_path):
    with pytest.raises(ExperimentError, match="field 'systems\\[0\\]'.*no parameter 'kk1'"):
        Experiment.from_file(write(tmp_path, {"datasets": ["demo"], "systems": [
            {"name": "x", "system": "bm25", "params": {"kk1": 1}}]}))
    with pytest.raises(ExperimentError, match="field 'baseline'"):
        Experiment.from_file(write(tmp_path, {"datasets": ["demo"], "systems": ["bm25"], "baseline": "nope"}))
    bad = tmp_path / "broken.yaml"
    bad.write_text("datasets: [demo\nsystems: x\n")
    with pytest.raises(ExperimentError, match="broken.yaml:\\d+: invalid YAML"):
        Experiment.from_file(bad)


def test_expected_scores_that_could_never_be_compared_are_refused_when_the_file_is_read(tmp_path):
    """A recorded score for a measure the experiment does not compute crashed with a KeyError after
    every run was computed; one under a dataset key the file does not have (a typo) was skipped in
    silence. Each is refused when the file is read, naming the key, system and measure, and the
    command exits 2 with one line before any run is made."""
    from typer.testing import CliRunner

    from lexir.cli.main import app

    base = {"datasets": [{"name": "demo", "split": "test"}], "systems": ["bm25"], "measures": ["nDCG@10"],
            "output": str(tmp_path / "out")}
    cases = [
        ({"demo/test": {"bm25": {"nDCG@10": 0.888, "Hit@3": 0.9}}},
         "field 'expected': demo/test: bm25: Hit@3 is not among the experiment's measures (nDCG@10)"),
        ({"demo/tset": {"bm25": {"nDCG@10": 0.888}}},
         "field 'expected': 'demo/tset' is not one of the experiment's datasets; valid: demo/test"),
        ({"demo/test": {"bm25-stem": {"nDCG@10": 0.888}}},
         "field 'expected': demo/test: 'bm25-stem' is not one of the systems (bm25)"),
        ({"demo/test": {"bm25": {"nDCG@11x": 0.888}}}, "field 'expected': demo/test: bm25: unknown measure"),
        ({"demo/test": {"bm25": {"nDCG@10": "high"}}},
         "field 'expected': demo/test: bm25: nDCG@10: expected a number, got 'high'"),
    ]
    for expected, message in cases:
        path = write(tmp_path, {**base, "expected": expected})
        with pytest.raises(ExperimentError) as caught:
            Experiment.from_file(path)
        assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value), str(caught.value)
        result = CliRunner().invoke(app, ["experiment", str(path)])
        assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output and not (tmp_path / "out").exists()  # nothing was run
    # a measure the experiment computes by default (no measures: given) is accepted
    default = {k: v for k, v in base.items() if k != "measures"}
    assert Experiment.from_file(write(tmp_path, {**default, "expected": {"demo/test": {"bm25": {"Hit@10": 0.9}}}}))


@pytest.mark.parametrize("path", sorted((REPO / "experiments").glob("*.yaml")), ids=lambda p: p.stem)
def test_recorded_results_reproduce(path, data_dir, tmp_path):
    """Anserini-style regressions: every score recorded in an experiment file is reproduced.

    Only systems with recorded scores are run, so the slow peers don't weigh on the suite.
    """
    exp = Experiment.from_file(path)
    if not exp.expected:
        pytest.skip("no recorded scores")
    if exp.slow and not os.environ.get("LEXIR_SLOW_EXPERIMENTS"):
        pytest.skip("marked slow (encodes a whole corpus); set LEXIR_SLOW_EXPERIMENTS=1 to reproduce")
    recorded = {system for scores in exp.expected.values() for system in scores}
    exp.systems = [s for s in exp.systems if s.name in recorded]
    if exp.baseline not in recorded:
        exp.baseline = exp.systems[0].name
    exp.output = tmp_path
    for result in run_experiment(exp, data_dir, log=lambda m: None):
        assert not result.regressions, result.regressions


@pytest.mark.slow
def test_default_bm25_at_least_as_good_as_the_peers_on_the_test_split(data_dir, tmp_path):
    """The quality bar: lexir's default BM25 is no worse than bm25s (default tokenizer) or
    rank_bm25 (whitespace tokens) on any measure of the held-out split."""
    exp = Experiment.from_dict({"datasets": [{"name": "pl-exams", "split": "test"}],
                                "systems": ["bm25", "bm25s-default", "rank-bm25"], "output": str(tmp_path)},
                               tmp_path / "quality.yaml")
    estimates = run_experiment(exp, data_dir, log=lambda m: None)[0].comparison.estimates
    for measure, ours in estimates["bm25"].items():
        for peer in ("bm25s-default", "rank-bm25"):
            assert ours.mean >= estimates[peer][measure].mean, (measure, peer)
