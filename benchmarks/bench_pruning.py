#!/usr/bin/env python
"""Exhaustive vs pruned (block-max windows) BM25 top-k: queries per second, one thread, same results?

For one corpus, lexir's BM25 index (German analysis as ``bm25`` builds it, lucene, k1=1.2,
b=0.75) is built once (its time printed); then two query sets are analysed once, outside the
timing, and each is scored by :func:`lexir.retrieval.bm25_kernel.top_k` with ``prune="off"``
(every posting scored) and ``prune="on"`` (block-max windows) at each ``k``: best of ``--rounds`` passes
over the whole set, numba on one thread, kernels compiled before timing. "same" says whether
the two kernels' document numbers and scores are identical, query by query, ties included.

Corpora (``--corpus``):

* ``de-units``   - every provision of every act of ``de-gesetze`` (articles, Absätze, Sätze,
                   Nummern ...: ``corpus.units()``), about 967k documents, each titled with its
                   text's first words unless it has a title (the default; several GB of memory);
* ``de-gesetze`` - the 107k German articles;
* ``pl-codes``   - the five Polish codes (4k articles), with pl-exams's questions as long queries.

Query sets: ``long`` - gerlayqa-dev's 2,151 lay questions (pl-exams's questions for pl-codes);
``short`` - the corpus's article titles (up to ``--short`` of them, every n-th); with
``--prefixes 1,4``, ``first1``, ``first4`` ... - the long questions cut to their first L known terms.

    PYTHONPATH=src LEXIR_DATA=../shared/data python benchmarks/bench_pruning.py --corpus de-gesetze
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import corpus_of  # noqa: E402


def best(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="de-units", choices=("de-units", "de-gesetze", "pl-codes"))
    parser.add_argument("--k", default="10,100", help="comma-separated k values")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--short", type=int, default=5000, help="at most this many titles as short queries")
    parser.add_argument("--long", type=int, default=0, help="at most this many long queries (0: all)")
    parser.add_argument("--prefixes", default="",
                        help="also query sets of the long questions' first L known terms, for each L given (1,2,4,8)")
    parser.add_argument("--window-bits", type=int, default=0,
                        help="the pruned kernel's windows: 2**bits documents (0: the kernel's default)")
    args = parser.parse_args(argv)

    import numba

    numba.set_num_threads(1)
    from lexir.retrieval import bm25_kernel
    from lexir.retrieval.bm25 import BM25Retriever, make_analyzer

    if args.window_bits:
        bm25_kernel._WINDOW_BITS = args.window_bits

    start = time.perf_counter()
    corpus, questions = corpus_of(args.corpus)
    print(f"corpus {args.corpus}: {len(corpus):,} documents, loaded in {time.perf_counter() - start:.1f} s", flush=True)
    titles = list(dict.fromkeys(d.title for d in corpus if d.title))
    titles = titles[::max(1, len(titles) // args.short)][:args.short]
    if args.long:
        questions = questions[:args.long]

    start = time.perf_counter()
    retriever = BM25Retriever(make_analyzer(corpus, "", "auto", True, "simplemma")).index(corpus)
    matrix = retriever.matrix
    print(f"index: {time.perf_counter() - start:.1f} s, {len(matrix.data):,} postings, "
          f"{len(retriever.vocab):,} terms", flush=True)
    start = time.perf_counter()
    bm25_kernel.window_maxima(matrix)
    print(f"window maxima (pruning's bounds, once per index): {time.perf_counter() - start:.2f} s", flush=True)

    print(f"{'queries':>8} {'n':>6} {'terms/q':>8} {'k':>4} {'exhaustive q/s':>15} {'pruned q/s':>11} "
          f"{'speed-up':>9} {'same':>5}")
    sets = [("long", retriever.terms().raw_batch(questions), retriever.dedupe_query),
            ("short", retriever.terms().raw_batch(titles), retriever.dedupe_query)]
    for size in [int(x) for x in args.prefixes.split(",") if x]:
        firsts = [ids[:size] for ids in retriever.queries_ids(questions) if len(ids) >= size]
        pointers = np.zeros(len(firsts) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in firsts], out=pointers[1:])
        sets.append((f"first{size}", (np.concatenate(firsts).astype(np.int64), pointers), False))
    for label, (flat, pointers), dedupe in sets:
        lengths = [len(set(x for x in flat[pointers[i]:pointers[i + 1]].tolist() if x >= 0))
                   for i in range(len(pointers) - 1)]
        for k in [int(x) for x in args.k.split(",")]:
            matrix.top_k(flat[:pointers[1]], pointers[:2], k, dedupe, "off")  # compile
            matrix.top_k(flat[:pointers[1]], pointers[:2], k, dedupe, "on")
            out = {}

            def run(mode, k=k, flat=flat, pointers=pointers, dedupe=dedupe, out=out):
                out[mode] = matrix.top_k(flat, pointers, k, dedupe, mode)

            t_off = best(lambda: run("off"), args.rounds)
            t_on = best(lambda: run("on"), args.rounds)
            same = all(np.array_equal(a, b) for a, b in zip(out["off"], out["on"], strict=True))
            n = len(pointers) - 1
            print(f"{label:>8} {n:>6} {np.mean(lengths):>8.1f} {k:>4} {n / t_off:>15,.0f} {n / t_on:>11,.0f} "
                  f"{t_off / t_on:>8.2f}x {'yes' if same else 'NO':>5}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
