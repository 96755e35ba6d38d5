"""Sweep BM25 analysis and weights per language on development data (never a test split).

For each dataset (``pl-exams`` tune split, ``el-dev``, ``de-dev``) and each analysis
(mode x stopwords), the corpus and queries are analysed once and every (k1, b) pair is
scored by nDCG@10, overall and per query split. This is how the per-language defaults in
``src/lexir/analysis/data/defaults.tsv`` were chosen; the chosen settings and their
neighbours are recorded with their scores in ``experiments/*-defaults.yaml``.

    nice -n 10 python benchmarks/sweep_languages.py --datasets el-dev,de-dev,pl-exams:tune
"""

from __future__ import annotations

import argparse
import time

from lexir.datasets import open as open_data
from lexir.evaluation import Measure, evaluate
from lexir.retrieval.bm25 import BM25Retriever, make_analyzer


def sweep(bench, split, modes, stops, k1s, bs, out):
    corpus = bench.corpus
    queries = bench.queries.split(split)
    measure = Measure.parse("nDCG@10")
    parts = {name: set(ids) for name, ids in bench.queries.splits.items()} if split is None else {}
    for mode in modes:
        for stop in stops:
            t0 = time.perf_counter()
            analyzer = make_analyzer(corpus, "", mode, stop, "simplemma")
            base = BM25Retriever(analyzer).index(corpus)
            vocab = dict(base.vocab)
            ids_per_doc = [[vocab[t] for t in base.document_tokens(d.title, d.text)] for d in corpus]
            query_ids = [base.query_ids(q.text) for q in queries.queries]
            for k1 in k1s:
                for b in bs:
                    r = BM25Retriever(analyzer, k1, b)
                    r.index_ids(ids_per_doc, dict(vocab), corpus.ids, corpus.fingerprint)
                    hits = r.search_ids(query_ids, 100)
                    run = {q.id: dict(h) for q, h in zip(queries.queries, hits, strict=True)}
                    ev = evaluate(run, queries.qrels, [measure])
                    row = [f"{ev.mean(measure):.4f}"]
                    for name, ids in parts.items():
                        sub = {q: v for q, v in run.items() if q in ids}
                        qr = {q: v for q, v in queries.qrels.items() if q in ids}
                        row.append(f"{name}={evaluate(sub, qr, [measure]).mean(measure):.4f}")
                    line = f"{bench.queries.name}/{split or 'all'}\tmode={mode}\tstopwords={stop}\tk1={k1}\tb={b}\t"
                    print(line + "\t".join(row), file=out, flush=True)
            print(f"# {mode} stopwords={stop}: {time.perf_counter() - t0:.1f}s", file=out, flush=True)


def main() -> None:
    import sys

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="el-dev,de-dev,pl-exams:tune")
    ap.add_argument("--modes", default="raw,stem,lemma")
    ap.add_argument("--stopwords", default="true,false")
    ap.add_argument("--k1", default="0.6,0.9,1.2,1.5,2.0")
    ap.add_argument("--b", default="0.5,0.75,0.9")
    args = ap.parse_args()
    for entry in args.datasets.split(","):
        name, _, split = entry.partition(":")
        sweep(open_data(name), split or None, args.modes.split(","),
              [s == "true" for s in args.stopwords.split(",")],
              [float(x) for x in args.k1.split(",")], [float(x) for x in args.b.split(",")], sys.stdout)


if __name__ == "__main__":
    main()
