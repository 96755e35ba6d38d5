"""``lexir demo``: the whole path on the shipped Kodeks karny data, in well under a minute."""

from __future__ import annotations

import time

from rich.console import Console

from lexir.dataset_stats import stats
from lexir.datasets import open as open_data
from lexir.evaluation import Measure, compare, to_rich_table
from lexir.retrieval.base import parse_params
from lexir.retrieval.build import build_retriever

DEMO_MEASURES = tuple(Measure.parse(m) for m in ("nDCG@10", "R@10", "Hit@1", "Hit@10", "MRR"))
VARIANTS = {"raw": {"mode": "raw"}, "stem": {"mode": "stem"}, "lemma": {"mode": "lemma"}}


def run_demo(console: Console, err: Console, system: str = "bm25", params: list[str] | None = None) -> None:
    start = time.perf_counter()
    bench = open_data("demo")
    summary = stats(bench)
    console.print(f"[bold]demo[/]: {summary['corpus']['articles']} articles of the Kodeks karny, "
                  f"{summary['queries kept']} exam questions kept of {summary['questions read']} "
                  f"(dropped: {summary['dropped by reason'] or 'none'})")
    extra = parse_params(params or [])
    variants = VARIANTS if system == "bm25" else {system: {}}
    runs = {}
    for name, variant in variants.items():
        t0 = time.perf_counter()
        retriever = build_retriever(bench.corpus, system, {**variant, **extra}, cache=False)
        t1 = time.perf_counter()
        runs[f"{system}-{name}" if system == "bm25" else name] = retriever.search_many(bench.queries.queries)
        err.print(f"[dim]{system} {name}: indexed in {t1 - t0:.2f}s, "
                  f"{len(bench.queries)} queries in {time.perf_counter() - t1:.2f}s[/]")
    baseline = next(iter(runs))
    console.print(to_rich_table(compare(runs, bench.queries.qrels, baseline, measures=DEMO_MEASURES)))
    question = bench.queries.queries[0]
    hits = retriever.search(question.text, 3)
    console.print(f"\n[bold]example[/] {question.id}: {question.text[:140]}…")
    console.print(f"gold: {', '.join(bench.queries.qrels[question.id])}")
    for rank, (doc_id, score) in enumerate(hits, 1):
        snippet = " ".join(bench.corpus[doc_id].text.split())[:110]
        console.print(f"  {rank}. [bold]{doc_id}[/] ({score:.2f}) {snippet}…", highlight=False)
    console.print(f"\n[dim]done in {time.perf_counter() - start:.1f}s[/]")
