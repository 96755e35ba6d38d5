"""The German corpus at unit level: ``bm25-chunks`` over every unit of de-gesetze.

Measures, in one process (numbers from harness.py):

* parse: loading de-gesetze (``parse_archive``: parallel, or read back from the parse cache);
* build: chunking every act at the deepest level (``lit``: each branch down to its last unit,
  about a million chunks) and indexing the chunks with BM25 (German, raw, stopwords);
* peak RSS: the whole process's high-water mark, and the build's own rise over what the parsed
  corpus already held;
* queries/s: ``search_many`` of short queries (the titles of articles, 1-6 words, drawn with a
  fixed seed), k=10 and k=100;
* the saved index: save time, size, load time memory-mapped, and queries/s from the loaded index
  (the same run as the fresh index, checked): the BM25 part alone, then the whole bm25-chunks
  index through the index cache, as ``lexir serve`` loads it (``build_retriever`` finding the
  cached folder: BM25 memory-mapped, chunk texts packed, the unit table left to first use).

    python benchmarks/bench_units.py                  # about a minute on an idle 2-core machine
    python benchmarks/bench_units.py --level nr --queries 500 --output /tmp/units.json
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Clock, Memory, load_note, status_kib, write_json  # noqa: E402

GOALS = {"build_s": 60.0, "peak_rss_gib": 4.0, "queries_per_s": 1000.0}


def short_queries(corpus, n: int, seed: int) -> list:
    """Titles of articles with 1 to 6 words and no "(weggefallen)": the short queries a user types."""
    from lexir.types import Query

    titles = sorted({d.title for d in corpus if d.title and 1 <= len(d.title.split()) <= 6
                     and "weggefallen" not in d.title})
    picked = random.Random(seed).sample(titles, min(n, len(titles)))
    return [Query(f"t{i:05d}", t) for i, t in enumerate(picked)]


def service_load(corpus, retriever, level: str, queries: list, expected: dict, cache: Path) -> dict:
    """Save the built index as the index cache entry the service looks for, then time the
    service's own call, ``build_retriever(corpus, "bm25-chunks", {"level": ...})``, loading it."""
    import os

    from lexir.retrieval.base import get_system
    from lexir.retrieval.build import build_retriever, cache_index, index_folder
    from lexir.retrieval.structured import PackedTexts

    os.environ["LEXIR_CACHE"] = str(cache)
    params = {"level": level}
    save = Clock()
    save(lambda: cache_index(retriever, index_folder("bm25-chunks", get_system("bm25-chunks").resolve(params),
                                                     corpus)))
    size = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
    rss_before = status_kib("VmRSS") or 0
    load = Clock()
    loaded = load(lambda: build_retriever(corpus, "bm25-chunks", params))
    rss_loaded = status_kib("VmRSS") or 0
    if not isinstance(loaded.chunk_text, PackedTexts):
        raise RuntimeError("the service path rebuilt the index instead of loading it")
    loaded.search_many(queries[:5], k=10)
    search = Clock()
    again = search(lambda: loaded.search_many(queries, k=10))
    rss_searched = status_kib("VmRSS") or 0
    row = {"save_s": save.wall[0], "size_mib": size / 2**20, "load_s": load.wall[0], "load_cpu_s": load.cpu[0],
           "load_rss_rise_mib": (rss_loaded - rss_before) / 1024,
           "rss_rise_after_search_mib": (rss_searched - rss_before) / 1024,
           "queries_per_s": len(queries) / search.wall[0], "same_run": again == expected}
    print(f"service path (index cache, as lexir serve): {row['size_mib']:,.0f} MiB saved in {row['save_s']:.1f} s; "
          f"build_retriever loaded it in {row['load_s']:.2f} s ({row['load_cpu_s']:.2f} s CPU), RSS "
          f"+{row['load_rss_rise_mib']:,.0f} MiB (+{row['rss_rise_after_search_mib']:,.0f} MiB after "
          f"{len(queries):,} queries); {row['queries_per_s']:,.0f} queries/s, same run: {row['same_run']}",
          flush=True)
    return row


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--level", default="lit", help="chunking level (default lit: every unit)")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--output", type=Path, default=Path(__file__).resolve().parent / "results" / "units.json")
    args = parser.parse_args(argv)

    from lexir.datasets import open as open_data
    from lexir.retrieval.bm25 import BM25Retriever
    from lexir.retrieval.structured import build_chunk_retriever

    out: dict = {"level": args.level, "load_at_start": load_note()}
    clock = Clock()
    corpus = clock(lambda: open_data("de-gesetze"))
    out["load_corpus_s"] = {"wall": clock.wall[-1], "cpu": clock.cpu[-1]}
    out["articles"] = len(corpus)
    queries = short_queries(corpus, args.queries, args.seed)
    print(f"de-gesetze: {len(corpus):,} articles loaded in {clock.wall[-1]:.1f} s "
          f"({clock.cpu[-1]:.1f} s CPU); {len(queries):,} short queries", flush=True)

    memory = Memory()
    build = Clock()
    retriever = build(lambda: build_chunk_retriever(corpus, args.level, graph=""))
    mem = memory.result()
    n_chunks = len(retriever.bm25.doc_ids)
    out.update(chunks=n_chunks, build_s={"wall": build.wall[0], "cpu": build.cpu[0]}, memory=mem)
    print(f"build: {n_chunks:,} chunks at level {args.level} in {build.wall[0]:.1f} s ({build.cpu[0]:.1f} s CPU); "
          f"peak RSS {mem['peak_rss_mib'] / 1024:.2f} GiB, the build's rise over the loaded corpus "
          f"{(mem['timed_peak_over_baseline_mib'] or 0) / 1024:.2f} GiB", flush=True)

    retriever.search_many(queries[:5], k=10)  # the retrieval kernel is loaded or compiled here
    runs = {}
    out["search"] = {}
    for k in (10, 100):
        search = Clock()
        runs[k] = search(lambda k=k: retriever.search_many(queries, k=k))
        qps = len(queries) / search.wall[0]
        out["search"][f"k{k}"] = {"wall": search.wall[0], "cpu": search.cpu[0], "queries_per_s": qps,
                                  "queries_per_cpu_s": len(queries) / search.cpu[0]}
        print(f"search k={k}: {qps:,.0f} queries/s ({len(queries) / search.cpu[0]:,.0f} per CPU second)", flush=True)

    folder = Path(tempfile.mkdtemp(prefix="lexir-units-"))
    try:
        save = Clock()
        save(lambda: retriever.bm25.save(folder))
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        rss_before = status_kib("VmRSS") or 0
        load = Clock()
        loaded = load(lambda: BM25Retriever.load(folder, mmap=True))
        rss_after = status_kib("VmRSS") or 0
        loaded.search_many(queries[:5], k=10)
        search = Clock()
        again = search(lambda: loaded.search_many(queries, k=10))
        out["saved"] = {"save_s": save.wall[0], "size_mib": size / 2**20, "load_mmap_s": load.wall[0],
                        "load_rss_rise_mib": (rss_after - rss_before) / 1024,
                        "queries_per_s": len(queries) / search.wall[0], "same_run": again == runs[10]}
        print(f"saved index: {size / 2**20:,.0f} MiB written in {save.wall[0]:.1f} s; loaded memory-mapped in "
              f"{load.wall[0]:.2f} s (RSS +{(rss_after - rss_before) / 1024:,.0f} MiB); "
              f"{len(queries) / search.wall[0]:,.0f} queries/s, same run: {again == runs[10]}", flush=True)
        out["service_load"] = service_load(corpus, retriever, args.level, queries, runs[10], folder / "cache")
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    peak_gib = mem["peak_rss_mib"] / 1024
    out["goals"] = {
        "build_s <= 60": build.wall[0] <= GOALS["build_s"],
        "peak_rss_gib <= 4": peak_gib <= GOALS["peak_rss_gib"],
        "queries_per_s >= 1000 (k=10)": out["search"]["k10"]["queries_per_s"] >= GOALS["queries_per_s"],
    }
    out["load_at_end"] = load_note()
    for goal, met in out["goals"].items():
        print(f"  {goal}: {'met' if met else 'MISSED'}")
    print(f"  {out['load_at_end']}")
    write_json(args.output, out, indent=2)
    print(f"results written to {args.output} ({time.strftime('%H:%M')})")
    return out


if __name__ == "__main__":
    main()
