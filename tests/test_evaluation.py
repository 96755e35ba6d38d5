"""Tests of lexir.evaluation: hand-computed measures, edge cases, and statistics
checked against statsmodels/scipy or exact enumeration."""

from __future__ import annotations

import itertools
import json
import math
import random

import numpy as np
import pytest
from rich.console import Console
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from lexir.evaluation import (
    DEFAULT_MEASURES,
    Measure,
    bootstrap_interval,
    compare,
    evaluate,
    holm,
    mcnemar_exact,
    randomisation_test,
    to_latex,
    to_markdown,
    to_rich_table,
    wilson_interval,
)

LOG2_3 = math.log2(3)

# q1: relevant kk::1 (grade 2) and kk::2 (grade 1); kc::5 judged non-relevant.
QRELS = {
    "q1": {"kk::1": 2, "kk::2": 1, "kc::5": 0},
    "q2": {"kc::7": 1},
}
# ranked: kc::5, kk::2, kk::1, kk::9
RUN = {"q1": {"kk::1": 1.0, "kk::9": 0.5, "kc::5": 3.0, "kk::2": 2.0}}


def m(text: str) -> Measure:
    return Measure.parse(text)


# ---------------------------------------------------------------------------
# measures


def test_measure_prints_parses_and_hashes():
    assert str(Measure("nDCG", 10)) == "nDCG@10"
    assert str(Measure("Hit", 5)) == "Hit@5"
    assert str(Measure("MRR")) == "MRR"
    assert Measure.parse("ndcg@10") == Measure("nDCG", 10)
    assert Measure.parse("acthit@10") == Measure("ActHit", 10)
    assert Measure.parse("MRR@10") == Measure("MRR", 10)
    assert len({Measure.parse("Hit@5"), Measure("Hit", 5)}) == 1
    # every default measure round-trips through its name (what the CLI and experiment files use)
    assert all(Measure.parse(str(m)) == m for m in DEFAULT_MEASURES)


@pytest.mark.parametrize("text", ["BLEU@10", "nDCG", "Hit@0", "nDCG@x", "R@-1", "", "Hit@"])
def test_unknown_or_malformed_measure_names_list_valid_forms(text):
    with pytest.raises(ValueError, match="valid forms"):
        Measure.parse(text)


def test_measure_constructor_validates():
    with pytest.raises(ValueError):
        Measure("Hit", None)
    with pytest.raises(ValueError):
        Measure("Hit", True)
    with pytest.raises(ValueError):
        Measure("ndcg", 10)  # constructor takes canonical names only


# ---------------------------------------------------------------------------
# evaluate: hand-computed values


def test_hand_computed_values_for_one_query():
    ev = evaluate(
        RUN,
        QRELS,
        [
            "nDCG@10",
            "nDCG@2",
            "MAP@100",
            "R@2",
            "P@2",
            "Hit@1",
            "Hit@2",
            "MRR",
            "MRR@1",
            "ActHit@1",
            "ActHit@2",
        ],
    )
    q1 = {str(k): v for k, v in ev.per_query["q1"].items()}
    # linear gains: DCG = 0 + 1/log2(3) + 2/log2(4); ideal = 2 + 1/log2(3)
    assert q1["nDCG@10"] == pytest.approx((1 / LOG2_3 + 1) / (2 + 1 / LOG2_3))
    assert q1["nDCG@2"] == pytest.approx((1 / LOG2_3) / (2 + 1 / LOG2_3))
    assert q1["MAP@100"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert q1["R@2"] == pytest.approx(0.5)
    assert q1["P@2"] == pytest.approx(0.5)
    assert q1["Hit@1"] == 0.0
    assert q1["Hit@2"] == 1.0
    assert q1["MRR"] == pytest.approx(0.5)
    assert q1["MRR@1"] == 0.0
    # rank 1 is kc::5, whose act (kc) holds no relevant doc; rank 2 is in kk
    assert q1["ActHit@1"] == 0.0
    assert q1["ActHit@2"] == 1.0


def test_missing_query_scores_zero_and_lowers_the_mean():
    ev = evaluate(RUN, QRELS, ["nDCG@10", "Hit@10", "MRR"])
    assert ev.qids == ["q1", "q2"]
    assert all(v == 0.0 for v in ev.per_query["q2"].values())
    assert ev.mean("MRR") == pytest.approx(0.25)
    assert ev.mean(m("Hit@10")) == pytest.approx(0.5)
    only_q1 = evaluate(RUN, {"q1": QRELS["q1"]}, ["nDCG@10"])
    assert ev.mean("nDCG@10") == pytest.approx(only_q1.mean("nDCG@10") / 2)


def test_empty_results_and_unjudged_queries():
    run = {**RUN, "q2": {}, "q99": {"kk::1": 1.0}}
    ev = evaluate(run, QRELS)
    assert set(ev.per_query) == {"q1", "q2"}
    assert all(v == 0.0 for v in ev.per_query["q2"].values())
    assert ev.ignored_qids == ("q99",)
    assert set(ev.per_query["q1"]) == set(DEFAULT_MEASURES)


def test_only_positive_grades_are_relevant():
    zero = evaluate({"q": {"kk::1": 1.0}}, {"q": {"kk::1": 0}})
    assert all(v == 0.0 for v in zero.per_query["q"].values())
    # a negative grade is simply "not relevant": it neither earns nor costs gain
    neg = evaluate({"q": {"kk::1": 2.0, "kk::2": 1.0}}, {"q": {"kk::1": -1, "kk::2": 1}}, ["nDCG@10", "MRR"])
    assert neg.mean("nDCG@10") == pytest.approx(1 / LOG2_3)
    assert neg.mean("MRR") == pytest.approx(0.5)


def test_act_hit_finds_the_right_act_but_not_the_right_article():
    qrels = {"q": {"BGB::823": 1}}
    run = {"q": {"kk::1": 3.0, "BGB::1": 2.0, "kc::3": 1.0}}
    ev = evaluate(run, qrels, ["ActHit@1", "ActHit@2", "Hit@10"])
    assert ev.per_query["q"] == {m("ActHit@1"): 0.0, m("ActHit@2"): 1.0, m("Hit@10"): 0.0}
    # a path id counts under its act too
    ev = evaluate({"q": {"BGB::1/abs:2": 1.0}}, qrels, ["ActHit@10"])
    assert ev.mean("ActHit@10") == 1.0


def test_ties_break_by_doc_id_ascending_in_both_backends():
    qrels = {"q": {"kk::a": 1}}
    forward = {"q": {"kk::a": 1.0, "kk::b": 1.0, "kk::c": 1.0}}
    backward = {"q": dict(reversed(list(forward["q"].items())))}
    measures = ["nDCG@10", "P@1", "Hit@1", "MRR"]
    for run in (forward, backward):
        ev = evaluate(run, qrels, measures)
        # trec_eval's own tie rule (doc id descending) would put kk::a third
        assert {str(k): v for k, v in ev.per_query["q"].items()} == {
            "nDCG@10": pytest.approx(1.0),
            "P@1": 1.0,
            "Hit@1": 1.0,
            "MRR": 1.0,
        }


def test_pytrec_and_native_measures_see_the_same_order():
    rng = random.Random(7)
    docs = [f"kk::{i}" for i in range(30)]
    qrels, run = {}, {}
    for q in range(200):
        qid = f"q{q}"
        qrels[qid] = {d: rng.choice([0, 1, 2]) for d in rng.sample(docs, 4)}
        # few distinct scores, so ties are everywhere
        run[qid] = {d: float(rng.randint(0, 3)) for d in rng.sample(docs, 12)}
    ev = evaluate(run, qrels, ["R@1", "R@3", "P@1", "Hit@1", "Hit@3"])
    for scores in ev.per_query.values():
        assert (scores[m("R@3")] > 0) == (scores[m("Hit@3")] == 1.0)
        assert (scores[m("R@1")] > 0) == (scores[m("Hit@1")] == 1.0)
        assert scores[m("P@1")] == scores[m("Hit@1")]


def test_rows_mean_and_errors():
    ev = evaluate(RUN, QRELS, ["Hit@2", "MRR"])
    assert ev.to_rows() == [
        {"qid": "q1", "Hit@2": 1.0, "MRR": 0.5},
        {"qid": "q2", "Hit@2": 0.0, "MRR": 0.0},
    ]
    assert ev.means() == {m("Hit@2"): 0.5, m("MRR"): 0.25}
    with pytest.raises(KeyError, match="not evaluated"):
        ev.mean("nDCG@10")
    with pytest.raises(ValueError, match="empty"):
        evaluate(RUN, {})
    with pytest.raises(ValueError, match="NaN"):
        evaluate({"q1": {"kk::1": float("nan")}}, QRELS)


# ---------------------------------------------------------------------------
# stats


@pytest.mark.parametrize("successes,n", [(0, 10), (3, 10), (10, 10), (57, 200), (1, 1)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(successes, n, confidence):
    expected = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
    assert wilson_interval(successes, n, confidence) == pytest.approx(expected, abs=1e-12)


def test_wilson_rejects_impossible_counts():
    with pytest.raises(ValueError):
        wilson_interval(1, 0)
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_holm_matches_statsmodels():
    rng = np.random.default_rng(3)
    for pvalues in ([0.01, 0.04, 0.03, 0.2], [0.02, 0.02, 0.5], list(rng.uniform(0, 0.2, 9)), [0.9], []):
        expected = multipletests(pvalues, method="holm")[1] if pvalues else []
        got = holm(pvalues)
        assert got == pytest.approx(list(expected))
        assert all(a >= p for a, p in zip(got, pvalues, strict=True))
        assert all(a <= 1.0 for a in got)


@pytest.mark.parametrize("seed", range(6))
def test_mcnemar_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    a = rng.random(60) < 0.5
    b = rng.random(60) < 0.4 + 0.05 * seed
    result = mcnemar_exact(list(a), list(b))
    table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
    assert (result.b, result.c) == (table[0][1], table[1][0])
    assert result.p == pytest.approx(sm_mcnemar(table, exact=True).pvalue)


def test_mcnemar_without_discordant_pairs_is_one():
    assert mcnemar_exact([True, False], [True, False]).p == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact([True], [True, False])


def test_randomisation_test_separates_clear_from_null():
    rng = np.random.default_rng(0)
    y = rng.uniform(0, 0.6, 40)
    x = y + 0.2 + rng.normal(0, 0.05, 40)
    assert randomisation_test(x, y, n_resamples=2000) == pytest.approx(1 / 2001)
    assert randomisation_test(y, y, n_resamples=2000) == 1.0


def test_randomisation_test_approximates_exact_enumeration():
    x = [0.9, 0.4, 0.7, 0.3, 0.8, 0.5, 0.6, 0.2, 0.65, 0.1]
    y = [0.5, 0.5, 0.6, 0.35, 0.4, 0.45, 0.7, 0.1, 0.5, 0.2]
    d = np.subtract(x, y)
    observed = abs(d.mean())
    flips = [abs(np.dot(s, d)) / d.size for s in itertools.product([-1, 1], repeat=d.size)]
    exact = np.mean([f >= observed - 1e-12 for f in flips])
    p = randomisation_test(x, y, n_resamples=20000, seed=1)
    assert 0.05 < exact < 0.5  # the example is neither trivial nor hopeless
    assert p == pytest.approx(exact, abs=0.015)
    assert p == randomisation_test(x, y, n_resamples=20000, seed=1)


def test_bootstrap_interval_is_sane_and_matches_scipy():
    rng = np.random.default_rng(5)
    values = rng.uniform(0, 1, 80)
    low, high = bootstrap_interval(values, n_resamples=4000)
    assert low < values.mean() < high
    ref = sps.bootstrap((values,), np.mean, method="percentile", n_resamples=4000, random_state=1)
    assert low == pytest.approx(ref.confidence_interval.low, abs=0.015)
    assert high == pytest.approx(ref.confidence_interval.high, abs=0.015)
    narrow = bootstrap_interval(np.tile(values, 4), n_resamples=4000)
    assert narrow[1] - narrow[0] < high - low
    assert bootstrap_interval([0.3] * 5) == pytest.approx((0.3, 0.3))
    assert bootstrap_interval(values, n_resamples=500) == bootstrap_interval(values, n_resamples=500)


# ---------------------------------------------------------------------------
# compare


def _example():
    """60 queries over two codes; 'dense' clearly beats 'bm25', 'hybrid' barely differs."""
    rng = random.Random(11)
    docs = [f"{act}::{n}" for act in ("kk", "kc") for n in range(1, 120)]
    qrels, runs = {}, {"bm25": {}, "dense": {}, "hybrid": {}}
    for q in range(60):
        qid = f"q{q:03d}"
        gold = rng.sample(docs, 2)
        qrels[qid] = {gold[0]: 2, gold[1]: 1}
        for name, skill in (("bm25", 0.35), ("dense", 0.85), ("hybrid", 0.4)):
            ranking = rng.sample([d for d in docs if d not in gold], 30)
            for g in gold:
                if rng.random() < skill:
                    ranking.insert(rng.randint(0, 4), g)
            runs[name][qid] = {d: 1.0 / (i + 1) for i, d in enumerate(ranking)}
    return runs, qrels


def test_compare_rows_tests_and_holm():
    runs, qrels = _example()
    c = compare(runs, qrels, baseline="bm25", n_resamples=1000)
    assert c.systems == ["bm25", "dense", "hybrid"]
    assert c.n_queries == 60
    for name in c.systems:
        assert set(c.estimates[name]) == set(DEFAULT_MEASURES)
        for measure, e in c.estimates[name].items():
            assert e.low <= e.mean <= e.high
            assert e.mean == pytest.approx(c.evaluations[name].mean(measure))
    assert {(t.system, str(t.measure), t.test) for t in c.tests} == {
        ("dense", "Hit@10", "mcnemar"),
        ("hybrid", "Hit@10", "mcnemar"),
        ("dense", "nDCG@10", "randomisation"),
        ("hybrid", "nDCG@10", "randomisation"),
    }
    for measure in ("Hit@10", "nDCG@10"):
        tests = [t for t in c.tests if str(t.measure) == measure]
        assert [t.p_adjusted for t in tests] == pytest.approx(holm([t.p for t in tests]))
        assert all(t.p_adjusted >= t.p for t in tests)
    hit = c.test("dense", "Hit@10")
    dense_hits = [v == 1.0 for v in c.evaluations["dense"].values("Hit@10")]
    bm25_hits = [v == 1.0 for v in c.evaluations["bm25"].values("Hit@10")]
    assert (hit.b, hit.c) == (
        sum(d and not b for d, b in zip(dense_hits, bm25_hits, strict=True)),
        sum(b and not d for d, b in zip(dense_hits, bm25_hits, strict=True)),
    )
    assert hit.delta > 0
    assert c.significant("dense", "Hit@10") and c.significant("dense", "nDCG@10")
    assert not c.significant("hybrid", "nDCG@10")
    # the baseline is never tested against itself: one test per other system and tested measure
    assert sorted((t.system, str(t.measure)) for t in c.tests) == sorted(
        (s, m) for s in c.systems if s != "bm25" for m in ("Hit@10", "nDCG@10"))


def test_compare_renderers_and_json():
    runs, qrels = _example()
    c = compare(runs, qrels, baseline="bm25", measures=["nDCG@10", "Hit@10", "MRR"], n_resamples=500)
    d = json.loads(json.dumps(c.to_dict()))
    assert d["measures"] == ["nDCG@10", "Hit@10", "MRR"]
    assert set(d["systems"]) == {"bm25", "dense", "hybrid"}
    assert len(d["tests"]) == 4 and d["ignored_queries"] == {"bm25": 0, "dense": 0, "hybrid": 0}

    md = to_markdown(c)
    dense_row = next(line for line in md.splitlines() if line.startswith("| dense |"))
    e = c.estimates["dense"][m("nDCG@10")]
    assert f"{e.mean:.3f} [{e.low:.2f}, {e.high:.2f}] *" in dense_row
    assert "| bm25 (baseline) |" in md and "| hybrid |" in md
    assert "*" not in next(line for line in md.splitlines() if line.startswith("| bm25 (baseline) |"))

    tex = to_latex(c)
    assert r"\dagger" in tex and r"\begin{tabular}{lccc}" in tex and "Hit@10" in tex

    table = to_rich_table(c)
    assert table.row_count == 3 and len(table.columns) == 4
    console = Console(record=True, width=200)
    console.print(table)
    assert "dense" in console.export_text()


def test_compare_tests_measures_outside_the_table_and_checks_baseline():
    runs, qrels = _example()
    c = compare(runs, qrels, "bm25", measures=["MRR"], tests=["ActHit@10"], n_resamples=200)
    assert [str(t.measure) for t in c.tests] == ["ActHit@10", "ActHit@10"]
    assert list(c.estimates["dense"]) == [m("MRR")]
    with pytest.raises(ValueError, match="baseline"):
        compare(runs, qrels, baseline="splade")
