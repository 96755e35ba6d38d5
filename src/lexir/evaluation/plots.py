"""Plots for the results people would rather look at than read (matplotlib, extra ``plots``).

* :func:`plot_hit_curves`: Hit@k for k = 1..100, one line per system; where the curves cross
  shows which system to prefer for a given context budget;
* :func:`plot_rounds`: a measure after each round of a multi-round system (ReAct), to see
  whether more rounds still pay;
* :func:`plot_accuracy`: answer accuracy per context condition with its interval.

Each takes plain data and writes one file; the suffix (``.png``, ``.svg``, ``.pdf``) picks
the format. matplotlib is imported inside (with the file-only Agg backend), so importing
this module costs nothing and a missing matplotlib is one clear error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from lexir.types import Qrels, Run

from .answers import AnswerTable
from .evaluate import evaluate
from .measures import Measure

FORMATS = (".png", ".svg", ".pdf")


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'lexir[plots]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"{path}: plot format must be one of {', '.join(FORMATS)} (by the file suffix)")
    path.parent.mkdir(parents=True, exist_ok=True)
    # no timestamp in the file, so that a rerun gives the same bytes
    metadata = {"Date": None} if path.suffix.lower() == ".svg" else {}
    fig.savefig(path, dpi=150, bbox_inches="tight", metadata=metadata)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def hit_curves(runs: Mapping[str, Run], qrels: Qrels, ks: Iterable[int] = range(1, 101)) -> dict[str, list[float]]:
    """Hit@k for each k and run, as :func:`~lexir.evaluation.evaluate` computes it (every judged
    query counts; a query a run missed scores 0)."""
    measures = [Measure("Hit", k) for k in ks]
    curves = {}
    for name, run in runs.items():
        ev = evaluate(run, qrels, measures)
        curves[name] = [ev.mean(m) for m in measures]
    return curves


def plot_hit_curves(runs: Mapping[str, Run], qrels: Qrels, path: str | Path, title: str = "",
                    max_k: int = 100) -> Path:
    plt = _pyplot()
    ks = list(range(1, max_k + 1))
    curves = hit_curves(runs, qrels, ks)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, values in curves.items():
        ax.plot(ks, values, label=name, linewidth=1.6)
    ax.set_xscale("log")
    ax.set_xlim(1, max_k)
    # near-saturated curves (exam questions that quote their statute) would be flat lines at the top
    low = min((v[0] for v in curves.values()), default=0.0)
    ax.set_ylim(max(0.0, math.floor((low - 0.02) * 10) / 10), 1.005)
    ax.set_xlabel("k (log scale)")
    ax.set_ylabel("Hit@k")
    ax.set_xticks([k for k in (1, 2, 5, 10, 20, 50, 100) if k <= max_k])
    ax.get_xaxis().set_major_formatter(plt.matplotlib.ticker.ScalarFormatter())
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    n = len(qrels)
    ax.set_title(title or f"Hit@k, {n} queries", fontsize="medium")
    return _save(fig, path)


def round_values(runs_by_round: Mapping[str, Mapping[int, Run]], qrels: Qrels,
                 measures: Sequence[Measure | str]) -> dict[str, dict[Measure, list[tuple[int, float]]]]:
    """``system -> measure -> [(round, mean)]``, rounds ascending."""
    out: dict[str, dict[Measure, list[tuple[int, float]]]] = {}
    measures = [Measure.coerce(m) for m in measures]
    for name, by_round in runs_by_round.items():
        out[name] = {m: [] for m in measures}
        for rnd in sorted(by_round):
            ev = evaluate(by_round[rnd], qrels, measures)
            for m in measures:
                out[name][m].append((rnd, ev.mean(m)))
    return out


def plot_rounds(runs_by_round: Mapping[str, Mapping[int, Run]], qrels: Qrels, path: str | Path,
                measures: Sequence[Measure | str] = ("Hit@10", "nDCG@10"), title: str = "") -> Path:
    """One panel per measure; x = round, one line per multi-round system."""
    plt = _pyplot()
    values = round_values(runs_by_round, qrels, measures)
    measures = [Measure.coerce(m) for m in measures]
    fig, axes = plt.subplots(1, len(measures), figsize=(3.8 * len(measures), 3.4), squeeze=False,
                             layout="constrained")
    for ax, m in zip(axes[0], measures, strict=True):
        for name, by_measure in values.items():
            points = by_measure[m]
            ax.plot([r for r, _ in points], [v for _, v in points], marker="o", label=name)
        ax.set_xlabel("round")
        ax.set_ylabel(str(m))
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(True, alpha=0.3)
    axes[0][-1].legend(fontsize="small")
    fig.suptitle(title or "per round", fontsize="medium")
    return _save(fig, path)


def plot_accuracy(table: AnswerTable, path: str | Path, title: str = "", chance: float | None = None) -> Path:
    """Accuracy per condition with its Wilson interval; a dashed line at ``chance`` (1/3 for
    three options) when given. A star marks a Holm-significant difference from the baseline."""
    plt = _pyplot()
    names = table.conditions
    est = [table.summaries[c].accuracy for c in names]
    fig, ax = plt.subplots(figsize=(1.3 + 1.2 * len(names), 3.8))
    xs = range(len(names))
    ax.bar(xs, [e.mean for e in est], color="#6f9fd8", width=0.6)
    ax.errorbar(xs, [e.mean for e in est], yerr=[[e.mean - e.low for e in est], [e.high - e.mean for e in est]],
                fmt="none", ecolor="black", capsize=5, linewidth=1.2)
    for x, e, c in zip(xs, est, names, strict=True):
        ax.text(x, e.high + 0.02, f"{e.mean:.2f}" + (" *" if table.significant(c) else ""), ha="center",
                fontsize="small")
    ax.set_xticks(list(xs), names, rotation=20 if max(len(c) for c in names) > 10 else 0)
    if chance is not None:
        ax.axhline(chance, color="grey", linestyle="--", linewidth=1, label=f"chance ({chance:.2f})")
        ax.legend(loc="upper left", fontsize="x-small", frameon=False)
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("answer accuracy")
    ax.grid(True, axis="y", alpha=0.3)
    level = round(table.confidence * 100)
    ax.set_xlabel(f"context ({table.n_questions} questions, {level}% Wilson intervals;\n"
                  f"* differs from {table.baseline}: exact McNemar, Holm p < {table.alpha:g})", fontsize="small")
    ax.set_title(title or table.title or "answer accuracy by context", fontsize="medium")
    return _save(fig, path)


def write_plots(folder: str | Path, stem: str, runs: Mapping[str, Run], qrels: Qrels,
                runs_by_round: Mapping[str, Mapping[int, Run]] | None = None, answers: AnswerTable | None = None,
                measures: Sequence[Measure | str] = ("Hit@10", "nDCG@10"), chance: float | None = None,
                formats: Sequence[str] = (".png", ".svg"), title: str = "") -> list[Path]:
    """Every plot the data allows, as ``<folder>/<stem>.<kind>.<format>``: ``hits`` always,
    ``rounds`` when a system has per-round runs, ``accuracy`` when answers were evaluated."""
    folder = Path(folder)
    written = []
    for fmt in formats:
        written.append(plot_hit_curves(runs, qrels, folder / f"{stem}.hits{fmt}", title=title and f"{title}: Hit@k"))
        rounds = {name: by_round for name, by_round in (runs_by_round or {}).items() if len(by_round) > 1}
        if rounds:
            written.append(plot_rounds(rounds, qrels, folder / f"{stem}.rounds{fmt}", measures,
                                       title=title and f"{title}: per round"))
        if answers is not None:
            written.append(plot_accuracy(answers, folder / f"{stem}.accuracy{fmt}", chance=chance))
    return written
