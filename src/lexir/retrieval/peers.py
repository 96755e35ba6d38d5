"""Peer systems run beside lexir's own in experiments, as the quality bar.

* ``bm25s-default`` - bm25s with its own default tokenizer (lowercase, words of 2+
  characters, no stemming, no stopwords), exactly as a user of bm25s would start;
* ``rank-bm25``     - rank_bm25's BM25Okapi over lower-cased whitespace tokens.
"""

from __future__ import annotations

import numpy as np

from lexir.retrieval.base import Retriever, register_system, top_scores
from lexir.types import Corpus, Run


class BM25sDefault(Retriever):
    name = "bm25s-default"

    def __init__(self, corpus: Corpus, k1: float, b: float) -> None:
        import bm25s

        self._bm25s = bm25s
        self.doc_ids = corpus.ids
        self.engine = bm25s.BM25(k1=k1, b=b)
        self.engine.index(bm25s.tokenize([d.text for d in corpus], show_progress=False), show_progress=False)

    def search_many(self, queries, k: int = 100, progress=None) -> Run:
        return self.each(queries, lambda q: self._one(q.text, k), progress)

    def _one(self, text: str, k: int) -> list[tuple[str, float]]:
        tokens = self._bm25s.tokenize([text], show_progress=False, return_ids=False)[0]
        tokens = [t for t in tokens if t in self.engine.vocab_dict]
        if not tokens:
            return []
        scores = self.engine.get_scores(tokens)
        return top_scores(scores, self.doc_ids, k)


class BM25sSnowball(BM25sDefault):
    """bm25s as its README shows it for a language: its tokenizer with that language's stopwords
    (bm25s's own lists) and PyStemmer's Snowball stemmer: the few lines a newcomer writes."""

    name = "bm25s-snowball"

    def __init__(self, corpus: Corpus, k1: float, b: float, language: str) -> None:
        import bm25s
        import Stemmer

        from lexir.analysis.languages import SNOWBALL, normalise_language

        code = normalise_language(language or "en")
        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer(SNOWBALL[code])
        self._stopwords = code
        self.doc_ids = corpus.ids
        self.engine = bm25s.BM25(k1=k1, b=b)
        self.engine.index(self._tokens([d.text for d in corpus]), show_progress=False)

    def _tokens(self, texts: list[str]):
        try:
            return self._bm25s.tokenize(texts, stopwords=self._stopwords, stemmer=self._stemmer, show_progress=False)
        except (ValueError, KeyError):  # a language bm25s has no stopword list for
            return self._bm25s.tokenize(texts, stemmer=self._stemmer, show_progress=False)

    def _one(self, text: str, k: int) -> list[tuple[str, float]]:
        ids, vocab = self._tokens([text])
        inverse = {i: t for t, i in vocab.items()}
        tokens = [inverse[i] for i in ids[0] if inverse[i] in self.engine.vocab_dict]
        if not tokens:
            return []
        return top_scores(self.engine.get_scores(tokens), self.doc_ids, k)


class RankBM25(Retriever):
    name = "rank-bm25"

    def __init__(self, corpus: Corpus, k1: float, b: float) -> None:
        try:
            from rank_bm25 import BM25Okapi
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError("the rank-bm25 peer needs 'rank-bm25': pip install 'lexir[peers]'") from err
        self.doc_ids = corpus.ids
        self.engine = BM25Okapi([d.text.lower().split() for d in corpus], k1=k1, b=b)

    def search_many(self, queries, k: int = 100, progress=None) -> Run:
        return self.each(queries, lambda q: self._one(q.text, k), progress)

    def _one(self, text: str, k: int) -> list[tuple[str, float]]:
        tokens = text.lower().split()
        if not tokens:
            return []
        return top_scores(np.asarray(self.engine.get_scores(tokens)), self.doc_ids, k)


@register_system("bm25s-default", "peer: bm25s with its default tokenizer", k1=1.5, b=0.75)
def build_bm25s_default(corpus: Corpus, *, k1, b) -> BM25sDefault:
    return BM25sDefault(corpus, k1, b)


@register_system("bm25s-snowball", "peer: bm25s with Snowball stems and its stopwords of the corpus language",
                 k1=1.5, b=0.75)
def build_bm25s_snowball(corpus: Corpus, *, k1, b) -> BM25sSnowball:
    return BM25sSnowball(corpus, k1, b, corpus.language)


@register_system("rank-bm25", "peer: rank_bm25 BM25Okapi on whitespace tokens", k1=1.5, b=0.75)
def build_rank_bm25(corpus: Corpus, *, k1, b) -> RankBM25:
    return RankBM25(corpus, k1, b)
