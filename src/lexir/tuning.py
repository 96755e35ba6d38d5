"""Parameter sweeps. The corpus and queries are analysed once; only BM25 weights change."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import count

from lexir.analysis import bulk_lemmas
from lexir.evaluation import Measure, evaluate
from lexir.retrieval.base import get_system, parse_params
from lexir.retrieval.bm25 import BM25Retriever, corpus_fingerprint, document_tokens, make_analyzer
from lexir.retrieval.bm25_terms import QueryTerms
from lexir.types import Corpus, QuerySet


@dataclass
class SweepResult:
    metric: Measure
    grid: dict[tuple[float, float], float]

    @property
    def best(self) -> tuple[float, float]:
        # Ties go to the pair nearest the defaults (1.2, 0.75): no change without evidence.
        return max(self.grid, key=lambda kb: (round(self.grid[kb], 10), -abs(kb[0] - 1.2) - abs(kb[1] - 0.75)))


def fixed_params(params: Iterable[str], k1s: Iterable[float], bs: Iterable[float]) -> dict[str, str]:
    """The fixed BM25 parameters of a sweep (``key=value`` strings), refusing one the grid sweeps:
    ``k1=2`` beside the k1 values was silently overridden by each of them."""
    fixed = parse_params(params)
    for key, values in (("k1", k1s), ("b", bs)):
        if key in fixed:
            swept = ", ".join(f"{v:g}" for v in values)
            raise ValueError(f"parameter {key} is both fixed ({key}={fixed[key]}) and swept ({key} {swept}); give it "
                             f"one way: to try one value only, sweep that value (--{key} {fixed[key]})")
    return fixed


def sweep_bm25(
    corpus: Corpus, queries: QuerySet, k1s: Iterable[float], bs: Iterable[float], metric: str = "nDCG@10",
    params: Iterable[str] = (), progress: Callable[[int], None] | None = None,
) -> SweepResult:
    measure = Measure.parse(metric)
    k1s, bs = list(k1s), list(bs)
    settings = get_system("bm25").resolve(fixed_params(params, k1s, bs))
    analyzer = make_analyzer(corpus, settings["language"], settings["mode"], settings["stopwords"],
                             settings["lemmatizer"])
    method, title_weight, dedupe = settings["method"], settings["title_weight"], settings["dedupe_query"]
    term_ids: defaultdict[str, int] = defaultdict(count().__next__)  # in order of first occurrence
    with bulk_lemmas():
        ids_per_doc = [list(map(term_ids.__getitem__, document_tokens(analyzer, d.title, d.text, title_weight)))
                       for d in corpus]
    vocab = dict(term_ids)
    query_ids = QueryTerms(analyzer, vocab, dedupe).lists([q.text for q in queries.queries])
    fingerprint = corpus_fingerprint(corpus)
    grid = {}
    for k1 in k1s:
        for b in bs:
            retriever = BM25Retriever(analyzer, k1, b, method, title_weight, dedupe)
            retriever.index_ids(ids_per_doc, dict(vocab), corpus.ids, fingerprint)
            hits = retriever.search_ids(query_ids, 100)
            run = {q.id: dict(h) for q, h in zip(queries.queries, hits, strict=True)}
            grid[(k1, b)] = evaluate(run, queries.qrels, [measure]).mean(measure)
            if progress:
                progress(1)
    return SweepResult(measure, grid)
