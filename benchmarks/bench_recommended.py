"""Queries per second of `recommended` beside plain `bm25`, per language's development data.

Both systems are built first (indexes from the cache when present) and each then answers every
query of the dataset ``--rounds`` times; the best round is reported (the machine is shared, so
the best round is the least disturbed one). Quality is not measured here (see experiments/).

    nice -n 10 python benchmarks/bench_recommended.py --datasets pl-exams:tune,el-dev
"""

from __future__ import annotations

import argparse
import time

from lexir.datasets import registry
from lexir.pipeline import build_retriever


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="pl-exams:tune,el-dev")
    ap.add_argument("--systems", default="bm25,recommended")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print("| dataset | system | what | queries | build or load (s) | queries/s |")
    print("|---|---|---|---:|---:|---:|")
    for entry in args.datasets.split(","):
        name, _, split = entry.partition(":")
        bench = registry.load(name)
        queries = bench.queries.split(split or None).queries
        for system in args.systems.split(","):
            start = time.perf_counter()
            retriever = build_retriever(bench.corpus, system)
            built = time.perf_counter() - start
            retriever.search_many(queries[:5], 100)  # compile/warm before timing
            best = float("inf")
            for _ in range(args.rounds):
                start = time.perf_counter()
                retriever.search_many(queries, 100)
                best = min(best, time.perf_counter() - start)
            what = getattr(retriever, "spec", system)
            print(f"| {entry} | {system} | `{what}` | {len(queries)} | {built:.2f} | {len(queries) / best:,.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
