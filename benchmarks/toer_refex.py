"""ToER of structure-aware chunking and one-hop expansion on the de-refex decisions.

    python benchmarks/toer_refex.py [--acts-cache FILE] [--graph FOLDER] [--levels para,abs,...]

Corpus: all 6,636 German federal laws (``gesetze_markdown_all.tar.gz``), chunked at § (``para``),
Absatz, Satz, Nummer, Buchstabe and in naive 100-word windows; BM25 (raw terms, German stopwords,
k1=1.2, b=0.75) over the chunks. Queries: the 7 de-refex decisions, each the *Tatbestand*
section when the decision has one (2 of 7), otherwise the whole decision text; in both cases the
decision's own law citations are blanked out using the gold spans, so the query cannot name its
answers. Gold: the decision's law citations (deduplicated per decision) whose act is in the
corpus, decoded to (code, §, Absatz, Satz, Nummer).

For each strategy the top k hits (k = 10 and k = 100; the paper's k is not given, 10 is what a RAG
prompt holds, 100 shows the recall ceiling) are scored by ToER = recovered gold citations per 1,000
retrieved words, micro-averaged, at each evaluation depth; for expansions also with the expansion's
words charged. Writes ``benchmarks/results/toer_refex.{json,md}``.

Annexes (``anlage``) and body-only laws (``body``) have no § structure, so they stay whole at every
chunking level (up to 38,666 words); with long decision texts as queries BM25 ranks such long
chunks high and they dominate the words retrieved. ``--drop anlage,body --name
toer_refex_no_annex`` runs the same table on § / Art articles only (no gold citation points into
an annex).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from lexir.evaluation.depth import DEPTHS, RefPath, Retrieved, decode_reference, toer
from lexir.jurisdictions.de.citations import act_source
from lexir.jurisdictions.de.refex import decision_query, load_refex
from lexir.retrieval.structured import EXPANSIONS, build_chunk_retriever
from lexir.structure.graph import StatuteGraph, build_graph
from lexir.types import Act, Corpus, Query

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "de"
sys.path.insert(0, str(Path(__file__).parent))
from bench_graph import load_acts  # noqa: E402


def gold_paths(citations) -> tuple[list[RefPath], int]:
    paths, missing = [], 0
    for c in citations:
        act = act_source(c.book) if c.book else None
        if act is None or not c.number:
            missing += 1
            continue
        paths.append(decode_reference(act, c.number, c.structure))
    return paths, missing


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tar", type=Path, default=DATA / "gesetze_markdown_all.tar.gz")
    ap.add_argument("--refex", type=Path, default=DATA / "refex")
    ap.add_argument("--acts-cache", type=Path, default=None)
    ap.add_argument("--graph", type=Path, default=Path("/tmp/lexir-bench/graph-de"))
    ap.add_argument("--levels", default="para,abs,satz,nr,lit,words100")
    ap.add_argument("--ks", default="10,100")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--drop", default="", help="article levels to leave out of the corpus, e.g. anlage,body")
    ap.add_argument("--name", default="toer_refex", help="stem of the result files")
    args = ap.parse_args(argv)
    ks = [int(k) for k in args.ks.split(",")]
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731

    acts, t = load_acts(args.tar, args.acts_cache)
    log(f"acts {len(acts)} in {t:.0f} s")
    if (args.graph / "graph.json").is_file():
        graph = StatuteGraph.load(args.graph)
    else:
        graph = build_graph(acts)
        graph.save(args.graph)
    log(f"graph {len(graph)} nodes")
    drop = {d for d in args.drop.split(",") if d}
    if drop:
        acts = [Act(a.id, a.title, a.language, [x for x in a.articles if x.level not in drop]) for a in acts]
        log(f"left out articles of level {sorted(drop)}: {sum(len(a.articles) for a in acts)} articles remain")
    corpus = Corpus("de-gesetze", [], language="de", acts=acts)

    docs = load_refex(args.refex)
    queries, gold, kinds, n_missing, n_all = [], {}, {}, 0, 0
    for d in docs:
        text, kind = decision_query(d.text, [(c.start, c.end) for c in d.citations])
        queries.append(Query(d.id, text))
        kinds[d.id] = kind
        gold[d.id], missing = gold_paths(d.citations)
        n_missing += missing
        n_all += len(d.citations)
    n_unique = sum(len(set(g)) for g in gold.values())
    log(f"{len(queries)} queries; gold citations {n_all}, {n_missing} not in the corpus, {n_unique} distinct in it")

    rows = []
    for level in args.levels.split(","):
        t0 = time.perf_counter()
        retriever = build_chunk_retriever(corpus, level, graph=graph)
        t_index = time.perf_counter() - t0
        n_chunks = len(retriever.bm25.doc_ids)
        base = {q.id: retriever.hits(q.text, max(ks)) for q in queries}
        expansions = ("none",) if level == "words100" else EXPANSIONS
        for k in ks:
            for expand in expansions:
                results = {}
                for qid, hits in base.items():
                    got = retriever.expand_hits(hits[:k], expand)
                    results[qid] = [Retrieved(h.id, retriever.words(h.id), h.expanded) for h in got]
                scores = toer(results, gold)
                name = level if expand == "none" else f"{level}+{expand}"
                n_units = sum(len(r) for r in results.values())
                rows.append({"strategy": name, "level": level, "expand": expand, "k": k, "chunks": n_chunks,
                             "units_per_query": n_units / len(queries),
                             "words_per_query": scores["code"]["words_charged"] / len(queries),
                             "index_s": round(t_index, 1), "depths": scores})
        log(f"{level}: {n_chunks} chunks, indexed in {t_index:.0f} s")
        del retriever

    result = {"queries": len(queries), "query_kinds": kinds, "dropped_levels": sorted(drop), "gold_citations": n_all,
              "gold_not_in_corpus": n_missing, "gold_distinct_in_corpus": n_unique, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    md = render(result, ks)
    (args.out / f"{args.name}.md").write_text(md)
    print(md)
    return result


def render(result: dict, ks: list[int]) -> str:
    lines = [f"# ToER on de-refex ({result['queries']} decisions, {result['gold_distinct_in_corpus']} distinct "
             f"gold citations in the corpus; {result['gold_not_in_corpus']} of {result['gold_citations']} "
             "gold citations name an act not in the corpus)", "",
             f"Article levels left out of the corpus: {', '.join(result['dropped_levels']) or 'none'}.", "",
             "ToER = recovered citations per 1,000 retrieved words (micro-averaged); for expansions "
             "`uncharged / charged` (charged: the expansion's words count). Recall in parentheses.", ""]
    for k in ks:
        lines += [f"## BM25 top-{k}", "",
                  "| strategy | words/query | " + " | ".join(DEPTHS) + " |",
                  "|---|---:|" + "---:|" * len(DEPTHS)]
        for row in (r for r in result["rows"] if r["k"] == k):
            cells = []
            for depth in DEPTHS:
                s = row["depths"][depth]
                cell = f"{s['toer']:.2f}"
                if row["expand"] != "none":
                    cell += f" / {s['toer_charged']:.2f}"
                cells.append(f"{cell} ({s['recall']:.2f})")
            lines.append(f"| {row['strategy']} | {row['words_per_query']:.0f} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
