"""ToER of structure-aware chunking and one-hop expansion on German lay questions (issue 21, item 4).

    nice -n 5 python benchmarks/toer_lay.py [--split dev] [--levels para,abs,satz,nr,words100] [--k 10]

The German paper's comparison, with gerlayqa-dev's questions (research use only, read from
../shared) in place of court decisions: BM25 (Snowball stems, German stopwords) over the BGB as
lexir parses it from de-gesetze, cut at § (para), Absatz, Satz, Nummer or into naive 100-word
windows; the top k units of each question, unexpanded and expanded by one hop (parent, the statute's
own citations, both). Gold: the §§ the lawyer cited, so ToER (recovered gold citations per 1,000
retrieved words, micro-averaged) is read at Code and § depth; with one code (the BGB) every hit
recovers the code, so Code-depth ToER measures words read per question. Expansions show ToER
uncharged / charged (charged: the added units' words count). Writes
``benchmarks/results/toer_lay.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import lexir
from lexir.evaluation.depth import Retrieved, decode_reference, toer
from lexir.retrieval.structured import EXPANSIONS, build_chunk_retriever

ROOT = Path(__file__).resolve().parents[1]
SHOWN = ("code", "para")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev")
    ap.add_argument("--levels", default="para,abs,satz,nr,words100")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731

    bench = lexir.load("gerlayqa-dev")
    queries = bench.queries.split(args.split)
    gold = {q.id: [decode_reference(*d.split("::", 1)) for d in queries.qrels[q.id]] for q in queries.queries}
    log(f"{len(queries.queries)} questions, {sum(map(len, gold.values()))} gold §§, {len(bench.corpus)} BGB articles")
    rows = []
    for level in args.levels.split(","):
        t0 = time.perf_counter()
        retriever = build_chunk_retriever(bench.corpus, level, mode="stem")
        n_chunks = len(retriever.bm25.doc_ids)
        base = {q.id: retriever.hits(q.text, args.k) for q in queries.queries}
        for expand in ("none",) if level == "words100" else EXPANSIONS:
            results = {qid: [Retrieved(h.id, retriever.words(h.id), h.expanded)
                             for h in retriever.expand_hits(hits, expand)] for qid, hits in base.items()}
            scores = toer(results, gold)
            rows.append({"strategy": level if expand == "none" else f"{level}+{expand}", "expand": expand,
                         "chunks": n_chunks, "words_per_query": scores["code"]["words_charged"] / len(gold),
                         "depths": {d: scores[d] for d in SHOWN}})
        log(f"{level}: {n_chunks} chunks, {time.perf_counter() - t0:.0f} s")
    result = {"split": args.split, "questions": len(gold), "k": args.k, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "toer_lay.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [f"# ToER on gerlayqa-dev/{args.split} ({len(gold)} questions), BM25 top-{args.k} units over the BGB",
             "", "| strategy | chunks | words/query | Code | § |", "|---|---:|---:|---|---|"]
    for row in rows:
        cells = []
        for depth in SHOWN:
            s = row["depths"][depth]
            cell = f"{s['toer']:.2f}" + (f" / {s['toer_charged']:.2f}" if row["expand"] != "none" else "")
            cells.append(f"{cell} ({s['recall']:.3f})")
        lines.append(f"| {row['strategy']} | {row['chunks']} | {row['words_per_query']:.0f} | " + " | ".join(cells) + " |")
    md = "\n".join(lines) + "\n"
    (args.out / "toer_lay.md").write_text(md)
    print(md)
    return result


if __name__ == "__main__":
    main()
