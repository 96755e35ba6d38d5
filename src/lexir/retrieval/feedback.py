"""Pseudo-relevance feedback for BM25: TF-IDF term expansion and RM3.

Both retrieve once, read the top documents, build a weighted query and score again with the
same BM25 index. Weighted queries are scored straight from the per-term score matrix
(score(d) = sum over terms of weight(t) * bm25(t, d)), so expansion terms can count less
than the user's own words.

* ``bm25-prf``: add the ``terms`` (30) terms with the highest TF-IDF over the top ``docs``
  (10) documents, each with weight ``term_weight`` (1.0 = plain query expansion);
* ``bm25-rm3``: relevance model 3, the original query (weight ``orig_weight``) interpolated
  with the ``terms`` most probable terms of the feedback documents, p(w|R) = sum over docs
  of p(w|d) * normalised score(d).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

from lexir.retrieval.base import Retriever, register_system, top_scores
from lexir.retrieval.bm25 import BM25Retriever
from lexir.retrieval.context import BuildContext
from lexir.types import Corpus, Run


class FeedbackBM25(Retriever):
    query_params = frozenset({"docs"})

    def __init__(self, bm25: BM25Retriever, corpus: Corpus,
                 expand: Callable[[list[int], list[tuple[str, float]]], dict[int, float]],
                 docs: int, name: str) -> None:
        self.bm25, self.corpus, self.expand, self.docs, self.name = bm25, corpus, expand, docs, name

    def doc_terms(self, doc_id: str) -> Counter:
        doc = self.corpus[doc_id]
        vocab = self.bm25.vocab
        return Counter(vocab[t] for t in self.bm25.document_tokens(doc.title, doc.text) if t in vocab)

    def search_many(self, queries, k: int = 100, progress=None) -> Run:
        return self.each(queries, lambda q: self._one(q.text, k), progress)

    def _one(self, text: str, k: int) -> list[tuple[str, float]]:
        query = self.bm25.query_ids(text)
        if not query:
            return []
        first = self.bm25.search_ids([query], max(k, self.docs))[0]
        weights = self.expand(query, first[:self.docs])
        return top_scores(self.bm25.matrix.weighted(weights), self.bm25.doc_ids, k)


def tfidf_expansion(retriever: FeedbackBM25, terms: int, term_weight: float):
    n_docs = len(retriever.bm25.doc_ids)

    def expand(query: list[int], top: list[tuple[str, float]]) -> dict[int, float]:
        tf: Counter = Counter()
        for doc_id, _ in top:
            tf.update(retriever.doc_terms(doc_id))
        weights = dict.fromkeys(query, 1.0)
        scored = [(count * math.log(n_docs / max(1, retriever.bm25.matrix.document_frequency(t))), t)
                  for t, count in tf.items() if t not in weights]
        for _score, term in sorted(scored, reverse=True)[:terms]:
            weights[term] = term_weight
        return weights

    return expand


def rm3_expansion(retriever: FeedbackBM25, terms: int, orig_weight: float):
    def expand(query: list[int], top: list[tuple[str, float]]) -> dict[int, float]:
        total = sum(score for _, score in top) or 1.0
        relevance: Counter = Counter()
        for doc_id, score in top:
            counts = retriever.doc_terms(doc_id)
            length = sum(counts.values()) or 1
            for term, count in counts.items():
                relevance[term] += (count / length) * (score / total)
        chosen = relevance.most_common(terms)
        mass = sum(p for _, p in chosen) or 1.0
        weights = {t: orig_weight / len(query) for t in query}
        for term, p in chosen:
            weights[term] = weights.get(term, 0.0) + (1 - orig_weight) * p / mass
        return weights

    return expand


def _base(corpus: Corpus, spec: str, context: BuildContext) -> BM25Retriever:
    retriever = context.build(spec, corpus, context.progress)
    if not isinstance(retriever, BM25Retriever):
        raise ValueError(f"feedback needs a bm25 system as its bm25 parameter, got {spec!r}")
    return retriever


@register_system("bm25-prf", "BM25 with TF-IDF pseudo-relevance feedback (top 10 docs, 30 terms)",
                 docs=10, terms=30, term_weight=1.0, bm25="bm25")
def build_prf(corpus: Corpus, *, docs, terms, term_weight, bm25, context: BuildContext) -> FeedbackBM25:
    bm25 = _base(corpus, bm25, context)
    retriever = FeedbackBM25(bm25, corpus, lambda q, t: {}, docs, "bm25-prf")
    retriever.expand = tfidf_expansion(retriever, terms, term_weight)
    return retriever


@register_system("bm25-rm3", "BM25 with RM3 relevance feedback (top 10 docs, 10 terms, original weight 0.5)",
                 docs=10, terms=10, orig_weight=0.5, bm25="bm25")
def build_rm3(corpus: Corpus, *, docs, terms, orig_weight, bm25, context: BuildContext) -> FeedbackBM25:
    if not 0 <= orig_weight <= 1:
        raise ValueError(f"orig_weight must be in [0, 1], got {orig_weight}")
    bm25 = _base(corpus, bm25, context)
    retriever = FeedbackBM25(bm25, corpus, lambda q, t: {}, docs, "bm25-rm3")
    retriever.expand = rm3_expansion(retriever, terms, orig_weight)
    return retriever
