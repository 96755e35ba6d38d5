"""Long, everyday questions (issue 21, item 2): analysis and query-processing variants of BM25 on
German lay questions (``gerlayqa-dev``, over the BGB as lexir parses it from de-gesetze).

Every setting is chosen on the ``tune`` split (80% of the questions by a hash of their id; also
shown per hash fold) and the ``heldout`` 20% is printed once, for the variants named with
``--heldout``. Measures: nDCG@10, R@10, R@100, MAP@100.

    nice -n 5 python benchmarks/lay_questions.py --part analysis
    nice -n 5 python benchmarks/lay_questions.py --part query
    nice -n 5 python benchmarks/lay_questions.py --part analysis --heldout lexir,snowball+verbs

Variants: ``analysis``: stopword list (lexir's hand-written list, Snowball's, stopwords-iso's, none)
x verb lemmas (stem a verb form's lemma) in stem mode, and raw / lemma for reference; ``query``
(on one analyzer, ``--stoplist``/``--verbs``): sentences fused (each sentence searched alone, the
runs fused with the whole question's), terms weighted by how legal they are, terms no provision
uses dropped.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from collections import Counter

import lexir
from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.evaluation.evaluate import evaluate
from lexir.retrieval.base import top_scores
from lexir.retrieval.bm25 import BM25Retriever
from lexir.retrieval.fusion import combsum, rrf

MEASURES = ("nDCG@10", "R@10", "R@100", "MAP@100")
# A sentence ends at ".", "!" or "?" before a capital letter or a digit (not "Abs. 2", "z.B. die").
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÄÖÜ0-9\"„(])")


def sentences(text: str) -> list[str]:
    return [s for s in (part.strip() for part in SENTENCE_END.split(text)) if s]


def build(corpus, **options) -> BM25Retriever:
    mode = options.pop("mode", "stem")
    return BM25Retriever(Analyzer(AnalyzerConfig("de", mode, **options))).index(corpus)


def run_of(bm25: BM25Retriever, queries, k: int = 100):
    return bm25.search_many(queries, k)


def scores(run, qrels, qids) -> dict[str, float]:
    gold = {q: qrels[q] for q in qids}
    ev = evaluate({q: run.get(q, {}) for q in qids}, gold, MEASURES)
    return {m: ev.mean(m) for m in MEASURES}


def row(name: str, run, bench, splits) -> None:
    cells = []
    for split in splits:
        s = scores(run, bench.queries.qrels, bench.queries.splits[split])
        cells.append(" ".join(f"{s[m]:.3f}" for m in MEASURES))
    print(f"{name:28s} | " + " | ".join(cells), flush=True)


def header(splits) -> None:
    print(f"{'variant':28s} | " + " | ".join(f"{s} ({' '.join(MEASURES)})" for s in splits), flush=True)


def weighted_run(bm25: BM25Retriever, queries, weight_of, k: int = 100):
    run = {}
    for q in queries:
        ids = bm25.query_ids(q.text)
        weights = {t: weight_of(t) for t in ids}
        weights = {t: w for t, w in weights.items() if w > 0}
        run[q.id] = dict(top_scores(bm25.matrix.weighted(weights), bm25.doc_ids, k)) if weights else {}
    return run


def sentence_run(bm25: BM25Retriever, queries, method: str, k: int = 100, whole: bool = True):
    from lexir.types import Query

    run = {}
    for q in queries:
        parts = sentences(q.text)
        texts = ([q.text] if whole else []) + (parts if len(parts) > 1 else [])
        found = bm25.search_many([Query(str(i), t) for i, t in enumerate(texts)], k)
        lists = [found[str(i)] for i in range(len(texts)) if found.get(str(i))]
        fused = (rrf(lists, k=60.0, depth=k) if method == "rrf" else combsum(lists)) if lists else {}
        run[q.id] = dict(sorted(fused.items(), key=lambda kv: -kv[1])[:k])
    return run


def _raw(bm25: BM25Retriever, text: str) -> list[int]:
    """A query's known term ids with repeats kept."""
    return [i for i in bm25.terms().raw([text]).tolist() if i >= 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("analysis", "query"), default="analysis")
    parser.add_argument("--stoplist", default="", help="the stopword list of the query part ('' = default)")
    parser.add_argument("--verbs", action="store_true", help="verb lemmas in the query part")
    parser.add_argument("--heldout", default="", help="comma-separated variants to report on the heldout split")
    parser.add_argument("--folds", action="store_true", help="also each hash fold of tune")
    args = parser.parse_args()
    t0 = time.perf_counter()
    bench = lexir.load("gerlayqa-dev")
    corpus, qs = bench.corpus, bench.queries
    print(f"# gerlayqa-dev: {len(qs.queries)} questions, {len(corpus)} BGB articles "
          f"(loaded in {time.perf_counter() - t0:.1f} s)", flush=True)
    splits = ["tune"] + ([f"fold{i}" for i in range(1, 5)] if args.folds else [])
    wanted = {v for v in args.heldout.split(",") if v}
    if wanted:
        splits.append("heldout")
    all_queries = qs.queries
    header(splits)

    def show(name, run):
        if not wanted or name in wanted:
            row(name, run, bench, splits)

    if args.part == "analysis":
        variants = {"raw": {"mode": "raw"}, "lemma": {"mode": "lemma"}}
        for stop in ("lexir", "snowball", "iso", "none"):
            for verbs in (False, True):
                opts = {"verb_lemmas": verbs}
                if stop == "none":
                    opts["stopwords"] = False
                elif stop != "lexir":
                    opts["stoplist"] = stop
                variants[stop + ("+verbs" if verbs else "")] = opts
        for name, opts in variants.items():
            if wanted and name not in wanted:
                continue
            bm25 = build(corpus, **opts)
            show(name, run_of(bm25, all_queries))
        return

    opts = {"verb_lemmas": args.verbs, **({"stoplist": args.stoplist} if args.stoplist else {})}
    bm25 = build(corpus, **opts)
    base = run_of(bm25, all_queries)
    show("whole question", base)
    # Terms no provision uses: BM25 already gives them nothing (they are not in the index's
    # vocabulary), so dropping them must change no score; checked, not assumed.
    known = {t for t in bm25.vocab}
    dropped = [type(q)(q.id, " ".join(w for w in q.text.split()
                                       if any(t in known for t in bm25.analyzer(w)))) for q in all_queries]
    show("unknown terms dropped", run_of(bm25, dropped))
    # Repeated terms: a story that says "Kündigung" four times is about it (dedupe_query off sums
    # each repeat's score: linear query term frequency), or sublinear (1 + log qtf) weights.
    show("query tf (repeats counted)", run_of(BM25Retriever(bm25.analyzer, dedupe_query=False).index(corpus),
                                             all_queries))

    def log_qtf_run():
        run = {}
        for q in all_queries:
            tf = Counter(_raw(bm25, q.text))
            weights = {t: 1 + math.log(c) for t, c in tf.items()}
            run[q.id] = dict(top_scores(bm25.matrix.weighted(weights), bm25.doc_ids, 100)) if weights else {}
        return run

    show("query tf 1+log", log_qtf_run())
    from lexir.types import Query
    asked = [Query(q.id, " ".join(s for s in sentences(q.text) if s.endswith("?")) or q.text) for q in all_queries]
    show("question sentences only", run_of(bm25, asked))
    both = {}
    whole_run, asked_run = base, run_of(bm25, asked)
    for q in all_queries:
        lists = [r for r in (whole_run.get(q.id), asked_run.get(q.id)) if r]
        both[q.id] = combsum(lists) if lists else {}
    show("whole + question sentences", both)
    for method in ("rrf", "combsum"):
        show(f"sentences+whole {method}", sentence_run(bm25, all_queries, method))
        show(f"sentences only {method}", sentence_run(bm25, all_queries, method, whole=False))
    # How legal a term is: its share of the statute's tokens against its share of the tune
    # questions' tokens (no judgement used; the heldout questions' text is not read).
    doc_tf = Counter(t for d in corpus for t in bm25.analyzer(d.text))
    tune = set(qs.splits["tune"])
    q_tf = Counter(t for q in all_queries if q.id in tune for t in bm25.analyzer(q.text))
    n_doc, n_q = sum(doc_tf.values()), sum(q_tf.values())
    inverse = {i: t for t, i in bm25.vocab.items()}

    def legal_ratio(i: int) -> float:
        t = inverse[i]
        return math.log1p((doc_tf[t] / n_doc) / ((q_tf[t] + 1) / n_q))

    indptr = bm25.matrix.indptr
    n_docs = len(bm25.doc_ids)

    def idf(i: int) -> float:
        df = int(indptr[i + 1] - indptr[i])
        return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))

    for power in (0.5, 1.0):
        show(f"legal-ratio^{power}", weighted_run(bm25, all_queries, lambda i, p=power: legal_ratio(i) ** p))
    show("idf (again)", weighted_run(bm25, all_queries, idf))
    for cut in (0.1, 0.25):
        show(f"legal-ratio>{cut} only", weighted_run(bm25, all_queries, lambda i, c=cut: 1.0 if legal_ratio(i) > c else 0.0))
    print(f"# {time.perf_counter() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
