"""Parameter sweeps. The corpus and queries are analysed once; only BM25 weights change."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lexir.evaluation import Measure, evaluate
from lexir.retrieval.base import get_system, parse_params
from lexir.retrieval.bm25 import BM25Retriever, corpus_fingerprint, make_analyzer
from lexir.types import Corpus, QuerySet


@dataclass
class SweepResult:
    metric: Measure
    grid: dict[tuple[float, float], float]

    @property
    def best(self) -> tuple[float, float]:
        # Ties go to the pair nearest the defaults (1.2, 0.75): no change without evidence.
        return max(self.grid, key=lambda kb: (round(self.grid[kb], 10), -abs(kb[0] - 1.2) - abs(kb[1] - 0.75)))


def sweep_bm25(
    corpus: Corpus, queries: QuerySet, k1s: Iterable[float], bs: Iterable[float], metric: str = "nDCG@10",
    params: Iterable[str] = (), progress: Callable[[int], None] | None = None,
) -> SweepResult:
    measure = Measure.parse(metric)
    settings = get_system("bm25").resolve(parse_params(params))
    analyzer = make_analyzer(corpus, settings["language"], settings["mode"], settings["stopwords"],
                             settings["lemmatizer"])
    base = BM25Retriever(analyzer, method=settings["method"], title_weight=settings["title_weight"],
                         dedupe_query=settings["dedupe_query"]).index(corpus)
    vocab = dict(base.vocab)
    ids_per_doc = [[vocab[t] for t in base.document_tokens(d.title, d.text)] for d in corpus]
    query_ids = [base.query_ids(q.text) for q in queries.queries]
    fingerprint = corpus_fingerprint(corpus)
    grid = {}
    for k1 in k1s:
        for b in bs:
            retriever = BM25Retriever(analyzer, k1, b, settings["method"], settings["title_weight"],
                                      settings["dedupe_query"])
            retriever.index_ids(ids_per_doc, dict(vocab), corpus.ids, fingerprint)
            hits = retriever.search_ids(query_ids, 100)
            run = {q.id: dict(h) for q, h in zip(queries.queries, hits, strict=True)}
            grid[(k1, b)] = evaluate(run, queries.qrels, [measure]).mean(measure)
            if progress:
                progress(1)
    return SweepResult(measure, grid)
