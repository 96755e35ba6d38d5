"""The memory of a process searching a saved BM25 index, stage by stage, and its speed.

Over a set folder of ``bench_lucene.py`` (its ``index-lexir`` and ``queries/*.native.tsv``): loads
the index memory-mapped, makes a first search of five queries of the first set of ``--queries``
(numba's runtime and kernels load there; titles at k = 10 take the pruned kernel), then
searches every query set at each k, keeping each run as ``search_many`` returns it, and prints the
process's RSS after each stage, split into anonymous memory and mapped files (``/proc``), and the
best of ``--passes`` timed passes in queries/s (numba on one thread, as ``bench_lucene.py``)::

    PYTHONPATH=src python benchmarks/bench_search_memory.py --work /tmp/bl/de-units

Run it once per side to compare two versions (``PYTHONPATH`` pointing at each one's ``src``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import status_kib  # noqa: E402


def memory_mib() -> dict[str, int]:
    """This process's RSS, its anonymous and file-backed parts and its peak, in MiB."""
    return {key: (status_kib(key) or 0) // 1024 for key in ("VmRSS", "RssAnon", "RssFile", "VmHWM")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, type=Path, help="a set folder of bench_lucene.py (with index-lexir)")
    parser.add_argument("--queries", default="lay,titles")
    parser.add_argument("--k", default="10,100")
    parser.add_argument("--passes", type=int, default=4)
    args = parser.parse_args()

    import numba

    numba.set_num_threads(1)
    from lexir.retrieval.bm25 import BM25Retriever
    from lexir.types import Query

    def stage(name: str, **more) -> None:
        m = memory_mib()
        print(json.dumps({"stage": name, "rss_mib": m["VmRSS"], "anonymous_mib": m["RssAnon"],
                          "file_mib": m["RssFile"], "peak_mib": m["VmHWM"], **more}), flush=True)

    stage("imports")
    start = time.perf_counter()
    retriever = BM25Retriever.load(args.work / "index-lexir", mmap=True)
    stage("index loaded", seconds=round(time.perf_counter() - start, 3))
    sets = {}
    for name in args.queries.split(","):
        with open(args.work / "queries" / f"{name}.native.tsv", encoding="utf-8") as fh:
            sets[name] = [Query(*line.rstrip("\n").split("\t", 1)) for line in fh]
    start = time.perf_counter()
    retriever.search_many(next(iter(sets.values()))[:5], k=10)
    stage("first search", seconds=round(time.perf_counter() - start, 3))
    kept = []
    for name, queries in sets.items():
        for k in (int(x) for x in args.k.split(",")):
            kept.append(retriever.search_many(queries, k=k))
            best = float("inf")
            for _ in range(args.passes):
                start = time.perf_counter()
                retriever.search_many(queries, k=k)
                best = min(best, time.perf_counter() - start)
            stage(f"{name} k={k}", queries_per_s=round(len(queries) / best))


if __name__ == "__main__":
    main()
