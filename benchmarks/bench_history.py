"""Index updates against rebuilds on the history of 36 German laws, and query speed after them.

    python benchmarks/bench_history.py [--data-dir DIR] [--queries 300] [--repeat 3]

For each amendment below (one law's next version), starting from an updatable index saved
with all 36 laws as of the day before:

* update: load the saved index, apply only the changed provisions, save it (what ``lexir index
  update`` does; the save appends a delta segment as a new generation of the folder, fsynced);
  each step timed. The index holds the old corpus (its fingerprint), so ``update_to`` takes the
  change set (this law's articles that are new, changed or gone, found inside the timed step, as
  ``lexir index update`` asks the history for ``changes(old, new)``) instead of hashing every
  document; ``compared``: the same update when the index cannot vouch for its corpus (the
  fallback, and what every update did before), hashing every document to find the changed ones;
* known changes: apply the change set found by comparing the law's old and new articles (what
  a service holding the index in memory pays per amendment; the history knows the change set);
* rebuild: build a fresh index over the same documents, save it;
* query speed: the same queries (first 25 words of randomly chosen articles, seed 0) on the
  updated and on the rebuilt index, best of ``--repeat`` rounds.

Update and rebuild are each the best of ``--repeat`` rounds (each update from a copy of the same
saved index), in wall-clock seconds and in CPU seconds of this process (``*_cpu_s``: steadier on a
shared machine; the fsyncs' waits are not CPU time). Also checks that both indexes hold the same
statistics and give the same top 100 (it exits non-zero otherwise). Writes ``benchmarks/results/history_update.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.datasets import open as open_data
from lexir.io.generations import current
from lexir.retrieval.bm25 import BM25Retriever
from lexir.retrieval.incremental import IncrementalBM25
from lexir.types import Corpus

ROOT = Path(__file__).resolve().parents[1]
# (law, date of its new version): a one-§ amendment, a medium one, and the 2013-2021 catch-up (the
# versions committed 2018-11-08, dated by their headers' last amending acts)
AMENDMENTS = [("BGB", "2013-01-11"), ("SGB 11", "2012-12-02"), ("ZPO", "2013-01-11"), ("StGB", "2021-11-22"),
              ("BGB", "2021-12-21")]


def one_law_changed(history, law: str, day: str) -> tuple[Corpus, Corpus]:
    """All laws as of the day before ``day``, and the same with only ``law`` at ``day``."""
    dates = history.law_dates(law)
    before = dates[dates.index(day) - 1]
    old = history.as_of(before)
    new_law = [d for d in history.as_of(day) if d.act == law]
    docs, placed = [], False
    for doc in old:
        if doc.act == law:
            if not placed:
                docs.extend(new_law)
                placed = True
            continue
        docs.append(doc)
    return old, Corpus(f"{old.name}+{law}@{day}", docs, language="de")


def law_changes(old: Corpus, new: Corpus, law: str) -> tuple[list, list[str]]:
    before = {d.id: d for d in old if d.act == law}
    after = [d for d in new if d.act == law]
    ids = {d.id for d in after}
    return [d for d in after if before.get(d.id) != d], [i for i in before if i not in ids]


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def best_of(repeat: int, fn):
    """``fn()``'s result of the fastest of ``repeat`` calls (by wall clock), its wall and CPU seconds."""
    best = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if best is None or wall < best[1]:
            best = (out, wall, cpu)
    return best


def query_time(index, queries, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for q in queries:
            index.search(q, 100)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    history, load_s = timed(lambda: open_data("de-gesetze-history", data_dir=args.data_dir))
    print(f"history loaded in {load_s:.1f}s: {history.stats()}")
    analyzer = Analyzer(AnalyzerConfig(language="de", mode="raw", stopwords=True))
    rows, ok = [], True
    work = Path(tempfile.mkdtemp(prefix="lexir-bench-history-"))
    try:
        for law, day in AMENDMENTS:
            old, new = one_law_changed(history, law, day)
            rng = random.Random(0)
            queries = [" ".join(d.text.split()[:25]) for d in rng.sample(list(new), args.queries)]
            saved = work / "saved"
            shutil.rmtree(saved, ignore_errors=True)
            IncrementalBM25(analyzer).index(old).save(saved)
            if not IncrementalBM25.load(saved).holds(old):
                print(f"{law} {day}: the saved index does not hold its corpus (the change set would be ignored)",
                      file=sys.stderr)
                ok = False

            # the change set: this law's articles that are new, changed or gone (version identity)
            (upserts, deletes), diff_s = timed(lambda old=old, new=new, law=law: law_changes(old, new, law))
            known = IncrementalBM25.load(saved)
            _, known_s = timed(lambda known=known, u=upserts, d=deletes: known.apply(u, d))
            _, fingerprint_s = timed(lambda new=new: new.fingerprint)
            def update(new=new, saved=saved, old=old, law=law, fast=True):
                folder = work / "updated"
                shutil.rmtree(folder, ignore_errors=True)
                shutil.copytree(saved, folder)
                updated, load_s = timed(lambda: IncrementalBM25.load(folder))
                if fast:
                    counts, apply_s = timed(lambda: updated.update_to(new, old, law_changes(old, new, law)))
                else:
                    counts, apply_s = timed(lambda: updated.update_to(new))
                _, save_s = timed(lambda: updated.save(folder))
                return updated, counts, (load_s, apply_s, save_s), folder

            (compared, compared_counts, _, _), compared_s, compared_cpu_s = best_of(
                args.repeat, lambda update=update: update(fast=False))
            compared_stats = compared.stats()
            (updated, (changed, deleted), (load_s, apply_s, save_s), folder), update_s, update_cpu_s = best_of(
                args.repeat, update)
            if (changed, deleted) != compared_counts or updated.stats() != compared_stats:
                print(f"{law} {day}: the change set's update differs from the compared one", file=sys.stderr)
                ok = False
            deltas = json.loads((current(folder) / "lexir.json").read_text(encoding="utf-8"))["deltas"]

            def rebuild(new=new):
                shutil.rmtree(work / "rebuilt", ignore_errors=True)
                return IncrementalBM25(analyzer).index(new).save(work / "rebuilt")

            _, rebuild_s, rebuild_cpu_s = best_of(args.repeat, rebuild)
            rebuilt = IncrementalBM25.load(work / "rebuilt")
            _, bm25s_s = timed(lambda new=new: BM25Retriever(analyzer).index(new).save(work / "bm25s"))
            same = updated.stats() == rebuilt.stats() and all(
                updated.search(q, 100) == rebuilt.search(q, 100) for q in queries[:50])
            ok &= same
            q_updated = query_time(updated, queries, args.repeat)
            q_rebuilt = query_time(rebuilt, queries, args.repeat)
            row = {
                "law": law, "date": day, "documents": len(new), "changed": changed, "deleted": deleted,
                "update_s": round(update_s, 3), "load_s": round(load_s, 3), "apply_s": round(apply_s, 3),
                "save_s": round(save_s, 3), "saved_as": "delta segment" if deltas else "whole index",
                "known_changes_apply_s": round(diff_s + known_s, 4), "fingerprint_s": round(fingerprint_s, 3),
                "known_over_rebuild": round((diff_s + known_s) / rebuild_s, 4),
                "rebuild_s": round(rebuild_s, 3), "bm25s_rebuild_s": round(bm25s_s, 3),
                "update_over_rebuild": round(update_s / rebuild_s, 4),
                "update_cpu_s": round(update_cpu_s, 3), "rebuild_cpu_s": round(rebuild_cpu_s, 3),
                "update_over_rebuild_cpu": round(update_cpu_s / rebuild_cpu_s, 4),
                "compared_s": round(compared_s, 3), "compared_cpu_s": round(compared_cpu_s, 3),
                "compared_over_rebuild_cpu": round(compared_cpu_s / rebuild_cpu_s, 4),
                "query_ms_updated": round(1000 * q_updated / len(queries), 3),
                "query_ms_rebuilt": round(1000 * q_rebuilt / len(queries), 3),
                "query_ratio": round(q_updated / q_rebuilt, 3), "identical": same,
            }
            rows.append(row)
            print(json.dumps(row))
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = ROOT / "benchmarks" / "results" / "history_update.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(f"written to {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
