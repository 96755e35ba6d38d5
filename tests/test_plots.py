"""Plots from real runs on the shipped demo (Kodeks karny + its exam questions)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("matplotlib")

from lexir.evaluation import evaluate  # noqa: E402
from lexir.evaluation.answers import AnsweredQuestion, summarise  # noqa: E402
from lexir.evaluation.plots import (  # noqa: E402
    hit_curves,
    plot_accuracy,
    plot_hit_curves,
    plot_rounds,
    round_values,
    write_plots,
)
from lexir.retrieval.build import build_retriever  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def runs(demo_bench):
    queries = demo_bench.queries.queries
    return {spec: build_retriever(demo_bench.corpus, spec).search_many(queries, 100)
            for spec in ("bm25(mode=raw)", "bm25(mode=stem)")}


def test_hit_curves_agree_with_evaluate_and_rise(runs, demo_bench):
    qrels = demo_bench.queries.qrels
    curves = hit_curves(runs, qrels)
    for name, values in curves.items():
        assert len(values) == 100
        assert all(a <= b for a, b in zip(values, values[1:], strict=False))
        ev = evaluate(runs[name], qrels, ["Hit@1", "Hit@10", "Hit@100"])
        assert (values[0], values[9], values[99]) == (ev.mean("Hit@1"), ev.mean("Hit@10"), ev.mean("Hit@100"))


def test_plots_are_written_as_png_and_svg(runs, demo_bench, tmp_path):
    qrels = demo_bench.queries.qrels
    png = plot_hit_curves(runs, qrels, tmp_path / "hits.png")
    assert png.read_bytes()[:8] == PNG
    svg = plot_hit_curves(runs, qrels, tmp_path / "hits.svg", title="demo")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and "bm25(mode=stem)" in svg.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="hits.gif: plot format must be one of"):
        plot_hit_curves(runs, qrels, tmp_path / "hits.gif")


def test_rounds_plot_shows_each_round(runs, demo_bench, tmp_path):
    qrels = demo_bench.queries.qrels
    by_round = {"two rounds": {1: runs["bm25(mode=raw)"], 2: runs["bm25(mode=stem)"]}}
    values = round_values(by_round, qrels, ["Hit@10"])
    [(r1, v1), (r2, v2)] = next(iter(values["two rounds"].values()))
    assert (r1, r2) == (1, 2)
    assert v2 == evaluate(runs["bm25(mode=stem)"], qrels, ["Hit@10"]).mean("Hit@10") and v1 != v2
    assert plot_rounds(by_round, qrels, tmp_path / "rounds.png").read_bytes()[:8] == PNG


def test_accuracy_plot_and_write_plots(runs, demo_bench, tmp_path):
    answers = {c: [AnsweredQuestion(f"q{i}", "kk", "A", "A" if i < right else "B", ("kk::1",)) for i in range(20)]
               for c, right in (("none", 6), ("oracle", 17))}
    table = summarise(answers)
    assert plot_accuracy(table, tmp_path / "acc.svg", chance=1 / 3).read_text(encoding="utf-8").count("<svg") == 1
    written = write_plots(tmp_path / "out", "demo", runs, demo_bench.queries.qrels, answers=table)
    assert sorted(p.name for p in written) == ["demo.accuracy.png", "demo.accuracy.svg", "demo.hits.png",
                                               "demo.hits.svg"]
