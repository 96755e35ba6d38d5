#!/usr/bin/env python
"""``lexir serve --backend ray``: questions per second, sharded on Ray Serve vs one process, and
memory per unit.

For one corpus (``--corpus``: pl-codes with pl-exams's questions, or de-gesetze with gerlayqa-dev's
lay questions), measured on this machine, k = 10:

* **one process**: lexir's BM25 index (``bm25``) in this process: a batch of all the questions
  (``search_many``), and one question at a time (``search``);
* **shards here**: the same corpus cut into ``--shards`` shards by act
  (:mod:`lexir.retrieval.bm25_shards`), every shard in this process: what the merge costs
  without Ray;
* **Ray Serve**: ``--shards`` shard deployments (one replica each), one front replica and one
  ingress replica on a local Ray runtime (``--cpus``): batches of ``--batch`` questions through
  the ingress's handle (to the front), and one question at a time over HTTP (GET
  /v1/CORPUS/search through Serve's proxy, the ingress and the front; one client thread:
  latency-bound) and from ``--clients`` client threads;

every run checked to be the one-process run (ids and scores). Memory: the bytes of the score
matrices per unit (one index; the shards together), and the resident memory (VmRSS) of each
Serve replica process after the load.

    PYTHONPATH=src LEXIR_DATA=../shared/data python benchmarks/bench_ray_serve.py --corpus pl-codes
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import corpus_of  # noqa: E402


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def rate(n: int, seconds: float) -> float:
    return round(n / seconds, 1)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="pl-codes", choices=("pl-codes", "de-gesetze"))
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--questions", type=int, default=1000, help="at most this many questions")
    parser.add_argument("--single", type=int, default=200, help="questions asked one at a time")
    parser.add_argument("--batch", type=int, default=100, help="questions per batch through the front")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--output", type=Path, default=None, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    k = 10

    from lexir.retrieval import bm25_shards
    from lexir.retrieval.build import build_retriever
    from lexir.types import Query

    corpus, texts = corpus_of(args.corpus)
    texts = texts[:args.questions]
    queries = [Query(str(i), t) for i, t in enumerate(texts)]
    out: dict = {"corpus": args.corpus, "units": len(corpus), "questions": len(texts), "k": k, "shards": args.shards,
                 "cpus": os.cpu_count()}

    start = time.perf_counter()
    single = build_retriever(corpus, "bm25", {}, cache=False)
    out["build_one_s"] = round(time.perf_counter() - start, 1)
    single.search_many(queries[:10], k)  # compiled
    start = time.perf_counter()
    want = single.search_many(queries, k)
    out["one_batch_qps"] = rate(len(queries), time.perf_counter() - start)
    start = time.perf_counter()
    for q in queries[:args.single]:
        single.search(q.text, k)
    out["one_single_qps"] = rate(args.single, time.perf_counter() - start)
    m = single.matrix
    one_bytes = int(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes)
    out["one_matrix_bytes_per_unit"] = round(one_bytes / len(corpus), 1)
    want = {q: list(h.items()) for q, h in want.items()}

    folder = Path(tempfile.mkdtemp(prefix="lexir-bench-shards-"))
    start = time.perf_counter()
    bm25_shards.build(corpus, folder, args.shards)
    out["build_shards_s"] = round(time.perf_counter() - start, 1)
    here = bm25_shards.local(folder, corpus)
    here.search_many(queries[:10], k)
    start = time.perf_counter()
    got = here.search_many(queries, k)
    out["shards_here_batch_qps"] = rate(len(queries), time.perf_counter() - start)
    assert {q: list(h.items()) for q, h in got.items()} == want, "shards here: not the one-process run"
    start = time.perf_counter()
    for q in queries[:args.single]:
        here.search(q.text, k)
    out["shards_here_single_qps"] = rate(args.single, time.perf_counter() - start)
    shards = [bm25_shards.BM25Shard(folder, i) for i in range(args.shards)]
    out["shard_matrix_bytes_per_unit"] = round(sum(s.nbytes() for s in shards) / len(corpus), 1)
    out["shard_units"] = bm25_shards.read_plan(folder)["units"]
    del here, shards, single

    from lexir import ray_serve

    os.environ.setdefault("LEXIR_CACHE", str(folder / "cache"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray_serve.init(num_cpus=args.cpus)
    try:
        start = time.perf_counter()
        handle = ray_serve.deploy(args.corpus, shards=args.shards, replicas=1, shard_replicas=1, port=port,
                                  request_log=False)
        out["deploy_s"] = round(time.perf_counter() - start, 1)
        pairs = [(q.id, q.text) for q in queries]
        handle.run.remote(pairs[:10], k).result()
        start = time.perf_counter()
        got = {}
        for i in range(0, len(pairs), args.batch):
            got.update(handle.run.remote(pairs[i:i + args.batch], k).result(timeout_s=600))
        out["serve_batch_qps"] = rate(len(pairs), time.perf_counter() - start)
        assert {q: list(h.items()) for q, h in got.items()} == want, "Ray Serve: not the one-process run"

        url = f"http://127.0.0.1:{port}/v1/{args.corpus}/search?"

        def ask(text: str) -> None:
            with urllib.request.urlopen(url + urllib.parse.urlencode({"q": text, "k": k}), timeout=60) as r:
                r.read()

        ask(texts[0])
        start = time.perf_counter()
        for text in texts[:args.single]:
            ask(text)
        out["serve_http_single_qps"] = rate(args.single, time.perf_counter() - start)
        chunks = [texts[i::args.clients][:args.single // args.clients] for i in range(args.clients)]
        threads = [threading.Thread(target=lambda c=c: [ask(t) for t in c]) for c in chunks]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out[f"serve_http_{args.clients}_clients_qps"] = rate(sum(map(len, chunks)), time.perf_counter() - start)
        replicas = [ray_serve.shard_replicas(i) for i in range(args.shards)]
        out["shard_replica_rss_bytes"] = [rss(r[0]["pid"]) for r in replicas]
        out["front_rss_bytes"] = rss(ray_serve.replicas_of(ray_serve.FRONT)[0]["pid"])
        out["ingress_rss_bytes"] = rss(handle.whoami.remote().result()["pid"])
        out["shard_rss_bytes_per_unit"] = round(sum(out["shard_replica_rss_bytes"]) / len(corpus), 1)
    finally:
        ray_serve.shutdown()
        import ray

        ray.shutdown()
    print(json.dumps(out, indent=1))
    if args.output:
        args.output.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    sys.exit(main() and 0)
