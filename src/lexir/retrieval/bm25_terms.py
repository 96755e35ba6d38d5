"""A BM25 index's query side: a query's text to the term ids its score matrix is read with.

:class:`QueryTerms` holds an analyzer and the index's vocabulary (term -> column of the
:class:`~lexir.retrieval.bm25_matrix.ScoreMatrix`); it turns a batch of texts into one flat
array of term ids and the query boundaries, analysing each distinct piece of text once
(:class:`_PieceIds`).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import chain, repeat

import numpy as np

from lexir.analysis import Analyzer
from lexir.analysis.analyzer import SENTINEL_PIECE


class QueryTerms:
    """The term ids of queries, for ``analyzer`` and ``vocab`` (see the module); with
    ``dedupe``, a term's repeats within a query collapse to its first occurrence."""

    def __init__(self, analyzer: Analyzer, vocab: dict[str, int], dedupe: bool = True) -> None:
        self.source, self.vocab, self.dedupe = analyzer, vocab, dedupe  # the index's analyzer
        # questions are read by the index analyzer's query side (compounds="query" splits there)
        self.analyzer = analyzer.for_queries() if type(analyzer) is Analyzer else analyzer
        self.pieces = _PieceIds(self.analyzer, vocab) if type(analyzer) is Analyzer else None

    def ids(self, text: str) -> list[int]:
        """The term ids of a query (known terms only; repeats collapsed unless ``dedupe`` is off)."""
        return self.lists([text])[0]

    def lists(self, texts: Sequence[str]) -> list[list[int]]:
        """``[ids(t) for t in texts]``, the texts analysed together (:meth:`batch`)."""
        flat, pointers = self.batch(texts)
        ids, ends = flat.tolist(), pointers.tolist()
        return [ids[a:b] for a, b in zip(ends, ends[1:], strict=False)]

    def batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The term ids of every query in one array, and where each query's ids start and end
        (``pointers``: query ``i`` is ``flat[pointers[i]:pointers[i + 1]]``): :meth:`raw`
        with whole-array steps: unknown terms and stopwords out, repeats within a query collapsed
        to their first occurrence
        (``dedupe``: each repeat of a term would add its score again; collapsing them is
        the classic BM25 query model and measured better on the Polish exams)."""
        n = len(texts)
        if not n:
            return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
        if n == 1 and type(self.analyzer) is Analyzer:  # one query (a service's): fewer steps than arrays
            pieces = self.analyzer.pieces_joined([texts[0]])
            if pieces is not None:
                known = [i for i in chain.from_iterable(map(self.pieces.__getitem__, pieces)) if i >= 0]
                if self.dedupe:
                    known = list(dict.fromkeys(known))
                return np.array(known, dtype=np.int64), np.array([0, len(known)], dtype=np.int64)
        ids = self.raw(texts)
        query_of = np.cumsum(ids == _SEPARATOR)  # the query each id belongs to
        known = ids >= 0
        ids, query_of = ids[known], query_of[known]
        if self.dedupe and len(ids):
            # (query, term) pairs; np.unique's indices are of first occurrences, re-sorted into
            # text order: the order dict.fromkeys would keep, and so the order of the score sums.
            _, first = np.unique(query_of * (int(ids.max()) + 1) + ids, return_index=True)
            first.sort()
            ids, query_of = ids[first], query_of[first]
        pointers = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(query_of, minlength=n), out=pointers[1:])
        return ids, pointers

    def raw(self, texts: Sequence[str]) -> np.ndarray:
        """The ids of the terms of all ``texts`` (at least one) in text order, in one array:
        -1 for a stopword or a term the index lacks, :data:`_SEPARATOR` between two texts.

        The texts are folded together and split into pieces (:meth:`Analyzer.pieces_joined`);
        each distinct piece is tokenised, analysed and looked up once (:class:`_PieceIds`)."""
        analyzer = self.analyzer
        if type(analyzer) is Analyzer:
            piece_ids = self.pieces
            pieces = analyzer.pieces_joined(list(texts))
            if pieces is not None:
                return piece_ids.ids(pieces)
            # a text holds the sentinel, which is then a word of that text: text by text
            flat = array("q")
            for i, text in enumerate(texts):
                if i:
                    flat.append(_SEPARATOR)
                flat.extend(chain.from_iterable(map(piece_ids.exact, analyzer.pieces(text))))
            return np.frombuffer(flat, dtype=np.int64)
        vocab, flat = self.vocab, array("q")  # another analyzer (bigrams): its terms, looked up as they are
        for i, text in enumerate(texts):
            if i:
                flat.append(_SEPARATOR)
            flat.extend(_known_id(vocab, term) for term in analyzer(text))
        return np.frombuffer(flat, dtype=np.int64)

    def raw_batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`raw` and where each text's ids start and end (``pointers``), the separators
        left in place (negative, so a scorer skips them as it skips unknown terms)."""
        ids = self.raw(texts)
        pointers = np.empty(len(texts) + 1, dtype=np.int64)
        pointers[0], pointers[-1] = 0, len(ids)
        pointers[1:-1] = np.flatnonzero(ids == _SEPARATOR)
        return ids, pointers


class _PieceIds(dict):
    """Piece of folded query text (:meth:`Analyzer.pieces_joined`) -> the ids of its terms, -1
    for a stopword or a term the index lacks: tokenising a piece, the analysis of its tokens
    (stopword test, stem or lemma) and the vocabulary look-up, done once per distinct piece.
    The sentinel between the texts of a batch is :data:`_SEPARATOR`. ``single`` holds the
    pieces of exactly one token (nearly all) with that token's id, for :meth:`ids`. Cleared
    when it grows past ``limit`` (a service meets new words for ever)."""

    __slots__ = ("analyzer", "limit", "single", "terms", "vocab")

    def __init__(self, analyzer: Analyzer, vocab: dict[str, int], limit: int = 1 << 20) -> None:
        super().__init__()
        self.analyzer, self.vocab, self.limit = analyzer, vocab, limit
        self.terms: dict[str, int] = {}  # surface token -> id
        self.single: dict[bytes, int] = {}
        self._reset()

    def _reset(self) -> None:
        self.clear()
        self.terms.clear()
        self.single.clear()
        self[SENTINEL_PIECE] = (_SEPARATOR,)
        self.single[SENTINEL_PIECE] = _SEPARATOR

    def __missing__(self, piece: bytes) -> tuple[int, ...]:
        if len(self) >= self.limit:
            self._reset()
        found = self[piece] = self.exact(piece)
        if len(found) == 1:
            self.single[piece] = found[0]
        return found

    def ids(self, pieces: list[bytes]) -> np.ndarray:
        """The ids of the terms of ``pieces``, in order, as one array.

        Each piece's id comes from ``single`` in one pass; the few pieces not there (new ones,
        and pieces of no token or of several: "§", "1–3") are spliced in after; a mostly new
        batch (a cold start) goes piece by piece."""
        found = np.fromiter(map(self.single.get, pieces, repeat(_ODD)), dtype=np.int64, count=len(pieces))
        odd = np.flatnonzero(found == _ODD).tolist()
        if not odd:
            return found
        if len(odd) * 8 > len(pieces):
            return np.fromiter(chain.from_iterable(map(self.__getitem__, pieces)), dtype=np.int64)
        parts, last = [], 0
        for i in odd:
            parts.append(found[last:i])
            parts.append(np.array(self[pieces[i]], dtype=np.int64))
            last = i + 1
        parts.append(found[last:])
        return np.concatenate(parts)

    def exact(self, piece: bytes) -> tuple[int, ...]:
        """The ids of ``piece``'s terms, the sentinel taken as the word it then is."""
        if piece in self and piece != SENTINEL_PIECE:
            return self[piece]
        terms, vocab, term = self.terms, self.vocab, self.analyzer.term
        out = []
        for token in self.analyzer.piece_tokens(piece):
            found = terms.get(token)
            if found is None:
                found = terms[token] = _known_id(vocab, term(token))
            out.append(found)
        return tuple(out)


_SEPARATOR = -2  # between the ids of two queries in QueryTerms.raw
_ODD = -3  # _PieceIds.ids: a piece not (yet) known to be one token


def _known_id(vocab: dict[str, int], term: str) -> int:
    """A term's id, or -1 for a term the index lacks ("" is the score matrix's empty column, no term)."""
    return vocab.get(term, -1) if term else -1
