#!/usr/bin/env python
"""What opening a saved ``bm25-inc`` index costs: its whole segment and a delta, loaded (checked
as they are read) and asked once.

Builds the updatable index of ``--corpus`` (saved whole), then changes ``--changed`` documents and
saves again (a delta segment beside the whole one), and loads the folder ``--repeat`` times:
the best and median seconds, and the first search's.

    PYTHONPATH=src LEXIR_DATA=../shared/data python benchmarks/bench_inc_load.py --corpus de-gesetze

Run it on two checkouts (each with its own ``PYTHONPATH``) to compare them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="pl-codes")
    parser.add_argument("--changed", type=int, default=200, help="documents changed before the second save")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)

    from lexir.datasets import open as open_data
    from lexir.retrieval.build import build_retriever
    from lexir.retrieval.incremental import IncrementalBM25
    from lexir.types import Document

    corpus = open_data(args.corpus, want="corpus")
    folder = Path(tempfile.mkdtemp(prefix="lexir-bench-inc-")) / "ix"
    start = time.perf_counter()
    build_retriever(corpus, "bm25-inc", {}, cache=False).save(folder)
    out: dict = {"corpus": args.corpus, "documents": len(corpus), "build_and_save_s": round(time.perf_counter() - start, 1)}
    index = IncrementalBM25.load(folder)
    docs = list(corpus)[::max(1, len(corpus) // args.changed)][:args.changed]
    index.apply([Document(d.id, d.text + " geändert changed zmieniony", d.title) for d in docs], [])
    index.save(folder)
    question = list(corpus)[7].text[:200]
    loads, firsts = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        loaded = IncrementalBM25.load(folder)
        loads.append(time.perf_counter() - start)
        start = time.perf_counter()
        loaded.search(question, 10)
        firsts.append(time.perf_counter() - start)
        del loaded
    out.update(load_best_s=round(min(loads), 3), load_median_s=round(statistics.median(loads), 3),
               first_search_median_s=round(statistics.median(firsts), 3))
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    sys.exit(main() and 0)
