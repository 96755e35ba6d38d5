"""Queries per second of `recommended` beside plain `bm25`, per language's development data.

Both systems are built first (indexes from the cache when present) and each then answers every
query of the dataset ``--rounds`` times; the best round is reported (the machine is shared, so
the best round is the least disturbed one), with the process CPU time of that round beside the
wall time. Quality is not measured here (see experiments/). Dense parts answer from the
embedding cache when the queries were encoded before (an experiment run does that); the first
round then shows the cold cost, the best round the warm one, and both are printed.

``--phrase-ab`` also times the phrase-evidence BM25 (``bm25 bigrams=0.5``) both ways, interleaved
in one process: batches through the merged term+pair matrix and bm25's compiled kernel (the
default), and the per-query sum of two full score vectors it replaced.

    nice -n 10 python benchmarks/bench_recommended.py --datasets pl-exams:tune,el-dev --phrase-ab
"""

from __future__ import annotations

import argparse
import time

from lexir.datasets import registry
from lexir.pipeline import build_retriever
from lexir.retrieval import evidence


def timed(retriever, queries, rounds: int) -> tuple[float, float, float]:
    """(first round's wall seconds, best round's wall seconds, that round's CPU seconds)."""
    first = best = best_cpu = float("inf")
    for i in range(rounds):
        start, cpu = time.perf_counter(), time.process_time()
        retriever.search_many(queries, 100)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        if i == 0:
            first = wall
        if wall < best:
            best, best_cpu = wall, cpu
    return first, best, best_cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="pl-exams:tune,el-dev")
    ap.add_argument("--systems", default="bm25,recommended")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--phrase-ab", action="store_true", help="also time bm25 bigrams=0.5 merged vs per query")
    args = ap.parse_args()
    print("| dataset | system | what | queries | build or load (s) | first round q/s | best round q/s "
          "| CPU s (best round) | queries per CPU s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for entry in args.datasets.split(","):
        name, _, split = entry.partition(":")
        bench = registry.load(name)
        queries = bench.queries.split(split or None).queries
        for system in args.systems.split(","):
            start = time.perf_counter()
            retriever = build_retriever(bench.corpus, system)
            built = time.perf_counter() - start
            retriever.search_many(queries[:5], 100)  # compile/warm before timing
            first, best, cpu = timed(retriever, queries, args.rounds)
            what = getattr(retriever, "spec", system)
            print(f"| {entry} | {system} | `{what}` | {len(queries)} | {built:.2f} | {len(queries) / first:,.0f} "
                  f"| {len(queries) / best:,.0f} | {cpu:.2f} | {len(queries) / max(cpu, 1e-9):,.0f} |", flush=True)
        if args.phrase_ab:
            phrase = build_retriever(bench.corpus, "bm25(bigrams=0.5)")
            phrase.search_many(queries[:5], 100)
            results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
            for _ in range(args.rounds):  # interleaved, so both ways see the same load
                for merged in (True, False):
                    evidence._MERGED_KERNEL = merged
                    _, wall, cpu = timed(phrase, queries, 1)
                    results[merged].append((wall, cpu))
            evidence._MERGED_KERNEL = True
            for merged, label in ((True, "merged matrix, one kernel call per batch"),
                                  (False, "two full score vectors per query")):
                wall, cpu = min(results[merged])
                print(f"| {entry} | bm25 bigrams=0.5 | {label} | {len(queries)} | | "
                      f"| {len(queries) / wall:,.0f} | {cpu:.2f} | {len(queries) / max(cpu, 1e-9):,.0f} |", flush=True)


if __name__ == "__main__":
    main()
