"""Temporal evaluation: questions asked on a date, answered from the law in force on that date.

    python benchmarks/temporal_eval.py [--data-dir DIR] [--sample-2018 400] [--seed 0]

Queries come from the history of 36 German laws (``de-gesetze-history``): for every article
whose text changed between two versions (all changes of 2012-13 and 2022, a seeded sample of
the 2018 catch-up), two queries, each the changed words of one version's wording with ten
words of context either side (at most 40 words), dated the first day that version was in
force. The gold is the article itself, as in force on that date.

Systems (BM25, lexir's raw German analysis, k1=1.2, b=0.75; no setting is tuned here):

* ``latest``: one index of the latest version (what a frozen snapshot gives);
* ``as-of``: the corpus as of each query's date (``--as-of``; one updatable index moved from
  date to date, which equals a rebuild per date);
* ``all-versions``: every article version indexed as its own document, hits mapped back to
  their article (best version counts).

Reported beside nDCG@10: the share of top-10 hits not in force on the query's date, the share
of queries with at least one such hit, and the share of top-10 hits whose text is another
version than the one in force then. Writes ``benchmarks/results/temporal_eval.json``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.datasets import open as open_data
from lexir.evaluation import evaluate
from lexir.retrieval.incremental import IncrementalBM25
from lexir.structure.history import HistoryError
from lexir.types import Corpus, Document, Query

ROOT = Path(__file__).resolve().parents[1]
CONTEXT, MAX_WORDS, K = 10, 40, 10


def changed_words(a: str, b: str) -> str:
    """The words of ``a`` around where ``b`` differs from it (first changed region)."""
    wa, wb = a.split(), b.split()
    for op, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if op != "equal":
            lo, hi = max(0, i1 - CONTEXT), min(len(wa), max(i2, i1 + 1) + CONTEXT)
            return " ".join(wa[lo:hi][:MAX_WORDS])
    return ""


def build_queries(history, sample_2018: int, seed: int) -> tuple[list[Query], dict[str, dict[str, int]]]:
    pairs = []
    for pid in history.ids():
        if "/" in pid:
            continue
        versions = history.versions(pid)
        for a, b in zip(versions, versions[1:], strict=False):
            pairs.append((pid, a, b))
    rng = random.Random(seed)
    late = [p for p in pairs if p[2].valid_from.startswith("2018")]
    chosen = [p for p in pairs if not p[2].valid_from.startswith("2018")] + rng.sample(late, min(sample_2018, len(late)))
    queries, qrels = [], {}
    for pid, a, b in chosen:
        for side, (this, other) in (("old", (a, b)), ("new", (b, a))):
            text = changed_words(this.text, other.text)
            if len(text.split()) < 4:
                continue
            qid = f"{pid}@{this.valid_from}/{side}"
            queries.append(Query(qid, text, {"date": this.valid_from, "side": side}))
            qrels[qid] = {pid: 1}
    return queries, qrels


def not_in_force(history, pid: str, day: str) -> bool:
    try:
        history.version(pid, day)
        return False
    except HistoryError:
        return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--sample-2018", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    history = open_data("de-gesetze-history", data_dir=args.data_dir)
    queries, qrels = build_queries(history, args.sample_2018, args.seed)
    print(f"{len(queries)} queries over {len({q.meta['date'] for q in queries})} dates")
    analyzer = Analyzer(AnalyzerConfig(language="de", mode="raw", stopwords=True))
    runs: dict[str, dict[str, dict[str, float]]] = {}
    versions_shown: dict[str, dict[str, str]] = {}  # system -> "qid\0doc" -> version start of the text shown

    latest = IncrementalBM25(analyzer).index(history.corpus)
    runs["latest"] = {q.id: dict(latest.search(q.text, 100)) for q in queries}
    versions_shown["latest"] = {f"{q.id}\0{d}": history.version(d).valid_from for q in queries
                                for d in list(runs["latest"][q.id])[:K]}

    by_date = defaultdict(list)
    for q in queries:
        by_date[q.meta["date"]].append(q)
    moving = IncrementalBM25(analyzer).index(history.as_of(history.first))
    runs["as-of"], versions_shown["as-of"] = {}, {}
    for day in sorted(by_date):
        moving.update_to(history.as_of(day))
        for q in by_date[day]:
            runs["as-of"][q.id] = dict(moving.search(q.text, 100))
            for d in list(runs["as-of"][q.id])[:K]:
                versions_shown["as-of"][f"{q.id}\0{d}"] = history.version(d, day).valid_from

    docs = [Document(v.version, v.text, v.title) for pid in history.ids() if "/" not in pid
            for v in history.versions(pid)]
    every = IncrementalBM25(analyzer).index(Corpus("all-versions", docs, "de"))
    runs["all-versions"], versions_shown["all-versions"] = {}, {}
    for q in queries:
        best: dict[str, float] = {}
        shown: dict[str, str] = {}
        for vid, score in every.search(q.text, 300):
            pid, _, start = vid.partition("@")
            if pid not in best:
                best[pid], shown[pid] = score, start
        runs["all-versions"][q.id] = dict(list(best.items())[:100])
        for d in list(best)[:K]:
            versions_shown["all-versions"][f"{q.id}\0{d}"] = shown[d]

    dates = {q.id: q.meta["date"] for q in queries}
    report = {"queries": len(queries), "dates": len(by_date), "k": K, "systems": {}}
    for name, run in runs.items():
        ndcg = evaluate(run, qrels, ["nDCG@10"]).mean("nDCG@10")
        hits = gone = wrong = queries_with_gone = 0
        for qid, results in run.items():
            day, any_gone = dates[qid], False
            for d in list(results)[:K]:
                hits += 1
                if not_in_force(history, d, day):
                    gone += 1
                    any_gone = True
                elif versions_shown[name][f"{qid}\0{d}"] != history.version(d, day).valid_from:
                    wrong += 1
            queries_with_gone += any_gone
        row = {"nDCG@10": round(ndcg, 4), "not_in_force_hits": round(gone / max(hits, 1), 4),
               "queries_with_not_in_force_hit": round(queries_with_gone / len(run), 4),
               "other_version_hits": round(wrong / max(hits, 1), 4)}
        report["systems"][name] = row
        print(f"{name:13s} {json.dumps(row)}")
    out = ROOT / "benchmarks" / "results" / "temporal_eval.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
