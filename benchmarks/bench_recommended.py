"""Queries per second of `recommended` beside plain `bm25`, per language's development data.

Both systems are built first (indexes from the cache when present) and each then answers every
query of the dataset ``--rounds`` times; the best round is reported (the machine is shared, so
the best round is the least disturbed one), with the process CPU time of that round beside the
wall time. Quality is not measured here (see experiments/). Dense parts answer from the
embedding cache when the queries were encoded before (an experiment run does that), so a system
with a dense part is also timed once with its encoder unwrapped from the cache ("cold": every
query encoded, as for questions never seen), which is what a new user's queries cost.

``--phrase-ab`` also times the phrase-evidence BM25 (``bm25 bigrams=0.5``): batches through the
merged term+pair matrix and the BM25 kernel (the per-query sum of two score vectors it replaced
is gone).

    nice -n 10 python benchmarks/bench_recommended.py --datasets pl-exams:tune,el-dev --phrase-ab
"""

from __future__ import annotations

import argparse
import time

from lexir.datasets import open as open_data
from lexir.retrieval.build import build_retriever
from lexir.retrieval.dense import DenseRetriever


def dense_parts(retriever, seen=None) -> list[DenseRetriever]:
    """The dense retrievers inside a composite (its ``inner``, ``base`` and ``parts``)."""
    seen = set() if seen is None else seen
    if id(retriever) in seen:
        return []
    seen.add(id(retriever))
    if isinstance(retriever, DenseRetriever):
        return [retriever]
    found = []
    for child in [getattr(retriever, "inner", None), getattr(retriever, "base", None),
                  *getattr(retriever, "parts", [])]:
        if child is not None:
            found += dense_parts(child, seen)
    return found


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
    ap.add_argument("--cold-queries", type=int, default=200, help="queries in the cold round (dense systems)")
    ap.add_argument("--phrase-ab", action="store_true", help="also time bm25 bigrams=0.5")
    args = ap.parse_args()
    print("| dataset | system | what | queries | build or load (s) | first round q/s | best round q/s "
          "| CPU s (best round) | queries per CPU s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for entry in args.datasets.split(","):
        name, _, split = entry.partition(":")
        bench = open_data(name)
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
            dense = dense_parts(retriever)
            if dense:
                cached = [part.encoder for part in dense]
                for part in dense:
                    part.encoder = part.base_encoder  # every query encoded, none from the cache
                sample = queries[:args.cold_queries]
                _, cold, cpu = timed(retriever, sample, 1)
                for part, encoder in zip(dense, cached, strict=True):
                    part.encoder = encoder
                print(f"| {entry} | {system}, cold (queries encoded) | | {len(sample)} | | | "
                      f"{len(sample) / cold:,.1f} | {cpu:.2f} | {len(sample) / max(cpu, 1e-9):,.1f} |", flush=True)
        if args.phrase_ab:
            phrase = build_retriever(bench.corpus, "bm25(bigrams=0.5)")
            phrase.search_many(queries[:5], 100)
            wall, cpu = min(timed(phrase, queries, 1)[1:] for _ in range(args.rounds))
            label = "merged matrix, one kernel call per batch"
            print(f"| {entry} | bm25 bigrams=0.5 | {label} | {len(queries)} | | "
                      f"| {len(queries) / wall:,.0f} | {cpu:.2f} | {len(queries) / max(cpu, 1e-9):,.0f} |", flush=True)


if __name__ == "__main__":
    main()
