"""Act-scoped cascade and the explicit-reference override.

* ``cascade``: score acts first (BM25 over each act's pooled article text), keep the top
  ``acts`` (40), then rank the articles of those acts by their own BM25 score; with
  ``act_weight`` > 0 the act's normalised score is added as a prior.
* ``explicit``: any system, with the articles that the query itself cites (``art. 415 k.c.``,
  ``§ 823 BGB``, ``άρθρο 914 ΑΚ``; found by lexir's citation finder for the corpus
  language) moved to the top, in the order the query cites them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from lexir.retrieval.base import Retriever, register_system, top_scores
from lexir.retrieval.bm25 import BM25Retriever
from lexir.retrieval.context import BuildContext
from lexir.types import Corpus, Document, Query, Run, ranked


class CascadeRetriever(Retriever):
    name = "cascade"

    def __init__(self, articles: BM25Retriever, acts: BM25Retriever, corpus: Corpus, keep: int,
                 act_weight: float) -> None:
        self.articles, self.acts, self.keep, self.act_weight = articles, acts, keep, act_weight
        act_index = {act: i for i, act in enumerate(acts.doc_ids)}
        self.doc_act = np.array([act_index[doc.act] for doc in corpus], dtype=np.int64)

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        return self.each(queries, lambda q: self._one(q.text, k), progress)

    def _one(self, text: str, k: int) -> list[tuple[str, float]]:
        act_scores = np.asarray(self.acts.scores(text), dtype=np.float64)
        if not act_scores.any():
            return []
        top_acts = np.argsort(-act_scores, kind="stable")[: self.keep]
        allowed = np.zeros(len(act_scores), dtype=bool)
        allowed[top_acts[act_scores[top_acts] > 0]] = True
        scores = np.asarray(self.articles.scores(text), dtype=np.float64)
        if self.act_weight:
            prior = act_scores / act_scores.max()
            scores = scores + self.act_weight * scores.max() * prior[self.doc_act] * (scores > 0)
        return top_scores(np.where(allowed[self.doc_act], scores, 0.0), self.articles.doc_ids, k)


class ExplicitReferences(Retriever):
    """Articles cited by the query itself, first; then the base system's ranking."""

    name = "explicit"

    def __init__(self, base: Retriever, corpus: Corpus, language: str) -> None:
        from lexir.citations.extract import citation_codes
        from lexir.citations.model import known_articles
        from lexir.jurisdiction import find_jurisdiction

        order = find_jurisdiction(corpus.jurisdiction or None, language)
        if order is None or order.find_citations is None:
            raise ValueError(f"no citation finder for the corpus's legal order ({corpus.jurisdiction or language!r}); "
                             f"valid: {', '.join(citation_codes())}")
        self.base, self.corpus, self.language, self.jurisdiction = base, corpus, language, order.code
        self.known = known_articles(corpus)

    def cited(self, text: str) -> list[str]:
        from lexir.citations.extract import find_citations

        found = find_citations(text, self.jurisdiction, known=self.known)
        return list(dict.fromkeys(c.id for c in found if c.id and c.id in self.corpus))

    def promote(self, text: str, results: dict[str, float], k: int) -> dict[str, float]:
        cited = self.cited(text)
        if not cited:
            return dict(ranked(results)[:k])
        top = max(results.values(), default=0.0)
        promoted = {doc: top + len(cited) - i for i, doc in enumerate(cited)}
        rest = [(d, s) for d, s in ranked(results) if d not in promoted]
        return dict(list(promoted.items()) + rest[: max(0, k - len(promoted))])

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        run = self.base.search_many(queries, k)
        return self.each(queries, lambda q: self.promote(q.text, run.get(q.id, {}), k).items(), progress)


def act_corpus(corpus: Corpus) -> Corpus:
    """One pooled document per act: its title and all its articles' titles and texts."""
    pooled: dict[str, list[str]] = {}
    for doc in corpus:
        pooled.setdefault(doc.act, []).extend(part for part in (doc.title, doc.text) if part)
    titles = {act.id: act.title for act in corpus.acts.values()}
    return Corpus(f"{corpus.name}:acts", [Document(act, "\n".join(parts), titles.get(act, ""))
                                          for act, parts in pooled.items()], language=corpus.language)


@register_system("cascade", "act-scoped cascade: BM25 over pooled acts, keep the top 40, then BM25 articles",
                 acts=40, act_weight=0.0, bm25="bm25")
def build_cascade(corpus: Corpus, *, acts, act_weight, bm25, context: BuildContext) -> CascadeRetriever:
    articles = context.build(bm25, corpus, context.progress)
    pooled = context.build(bm25, act_corpus(corpus))
    if not isinstance(articles, BM25Retriever):
        raise ValueError(f"the cascade needs a bm25 system as its bm25 parameter, got {bm25!r}")
    return CascadeRetriever(articles, pooled, corpus, int(acts), float(act_weight))


@register_system("explicit", "any system with the articles the query cites itself ranked first",
                 base="bm25", language="")
def build_explicit(corpus: Corpus, *, base, language, context: BuildContext) -> ExplicitReferences:
    return ExplicitReferences(context.build(base, corpus, context.progress), corpus,
                              language or corpus.language)
