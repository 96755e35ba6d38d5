"""BM25 over article text, on bm25s, with lexir's analyzers.

The index is a folder: bm25s's sparse score matrix (loaded memory-mapped), plus
``lexir.json`` holding the analyzer configuration, BM25 parameters, document ids and a
fingerprint of the corpus, so a saved index answers queries exactly as the fresh one did
and is never reused for a corpus it was not built from.
"""

from __future__ import annotations

import os
from array import array
from collections import defaultdict
from collections.abc import Callable, Sequence
from itertools import chain, count, repeat
from pathlib import Path

import bm25s
import numpy as np

from lexir.analysis import MODES, Analyzer, AnalyzerConfig
from lexir.analysis.analyzer import SENTINEL
from lexir.io.generations import loads, new_generation
from lexir.io.markers import read_marker, write_marker
from lexir.retrieval import bm25_kernel
from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.params import Param
from lexir.types import Corpus, Query, Run

FORMAT_VERSION = 1
METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


def corpus_fingerprint(corpus: Corpus) -> str:
    """The corpus's fingerprint (see :attr:`lexir.types.Corpus.fingerprint`)."""
    return corpus.fingerprint


class BM25Retriever(Retriever):
    name = "bm25"
    query_params = frozenset({"dedupe_query"})

    def __init__(
        self,
        analyzer: Analyzer,
        k1: float = 1.2,
        b: float = 0.75,
        method: str = "lucene",
        title_weight: int = 1,
        dedupe_query: bool = True,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown BM25 method {method!r}; valid: {', '.join(METHODS)}")
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1 (got k1={k1}, b={b})")
        self.analyzer = analyzer
        self.k1, self.b, self.method = float(k1), float(b), method
        self.title_weight = int(title_weight)
        self.dedupe_query = dedupe_query
        self.doc_ids: list[str] = []
        self.vocab: dict[str, int] = {}
        self.fingerprint = ""
        self._bm25: bm25s.BM25 | None = None
        self._names: tuple[list[str], np.ndarray] | None = None  # doc_ids as an array, see _doc_names()
        self._ids: _PieceIds | None = None  # see _piece_ids()

    # -- building ---------------------------------------------------------------------------

    def document_tokens(self, title: str, text: str) -> list[str]:
        tokens = self.analyzer(text)
        if title and self.title_weight > 0:
            tokens = self.analyzer(title) * self.title_weight + tokens
        return tokens

    def index(self, corpus: Corpus, progress: Callable[[int], None] | None = None) -> BM25Retriever:
        # Term ids in order of first occurrence; the defaultdict hands out the next id to a new
        # term, so mapping a document's tokens to ids is one C-level map() instead of a Python loop.
        # The ids of all documents go into one flat array (what the score matrix is built from).
        vocab: defaultdict[str, int] = defaultdict(count().__next__)
        term_id = vocab.__getitem__
        analyzer, weight = self.analyzer, self.title_weight
        term_ids, lengths = array("q"), array("q")
        add_ids, add_length = term_ids.extend, lengths.append
        # What document_tokens() does, with each distinct title analysed once: when documents
        # are paragraphs, many share their article's heading.
        titles: dict[str, list[str]] = {}
        for doc in corpus:
            tokens = analyzer(doc.text)
            if doc.title and weight > 0:
                head = titles.get(doc.title)
                if head is None:
                    head = titles[doc.title] = analyzer(doc.title) * weight
                tokens = head + tokens
            add_ids(map(term_id, tokens))
            add_length(len(tokens))
            if progress:
                progress(1)
        return self._index_flat(np.frombuffer(term_ids, dtype=np.int64), np.frombuffer(lengths, dtype=np.int64),
                                dict(vocab), corpus.ids, corpus_fingerprint(corpus))

    def _index_ids(self, ids_per_doc, vocab, doc_ids, fingerprint) -> BM25Retriever:
        lengths = np.fromiter(map(len, ids_per_doc), dtype=np.int64, count=len(ids_per_doc))
        term_ids = np.fromiter(chain.from_iterable(ids_per_doc), dtype=np.int64, count=int(lengths.sum()))
        return self._index_flat(term_ids, lengths, vocab, doc_ids, fingerprint)

    def _index_flat(self, term_ids: np.ndarray, lengths: np.ndarray, vocab, doc_ids, fingerprint) -> BM25Retriever:
        """Index documents given as the concatenation of their term ids and their lengths."""
        # bm25s scores a query with no known term through an "empty" token; it must exist.
        vocab.setdefault("", len(vocab))
        _cache_retrieval_kernel()
        engine = bm25s.BM25(k1=self.k1, b=self.b, method=self.method, backend="numba")
        if not _FAST_BUILD or not _build_score_matrix(engine, term_ids, lengths, vocab):
            ends = np.cumsum(lengths).tolist()
            ids_per_doc = [term_ids[start:end].tolist() for start, end in zip([0, *ends[:-1]], ends, strict=True)]
            engine.index((ids_per_doc, vocab), show_progress=False)
        self._bm25, self.vocab, self.doc_ids, self.fingerprint = engine, vocab, list(doc_ids), fingerprint
        return self

    # -- searching --------------------------------------------------------------------------

    def query_ids(self, text: str) -> list[int]:
        """The term ids of a query (known terms only; repeats collapsed unless ``dedupe_query``
        is off)."""
        return self.queries_ids([text])[0]

    def queries_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """``[query_ids(t) for t in texts]``, the texts analysed together (:meth:`_batch_ids`)."""
        flat, pointers = self._batch_ids(texts)
        ids, ends = flat.tolist(), pointers.tolist()
        return [ids[a:b] for a, b in zip(ends, ends[1:], strict=False)]

    def _batch_ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The term ids of every query in one array, and where each query's ids start and end
        (``pointers``: query ``i`` is ``flat[pointers[i]:pointers[i + 1]]``): :meth:`_raw_ids`
        with whole-array steps: unknown terms and stopwords out, repeats within a query collapsed
        to their first occurrence
        (``dedupe_query``: each repeat of a term would add its score again; collapsing them is
        the classic BM25 query model and measured better on the Polish exams)."""
        n = len(texts)
        if not n:
            return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
        if n == 1 and type(self.analyzer) is Analyzer:  # one query (a service's): fewer steps than arrays
            pieces = self.analyzer.pieces_joined([texts[0]])
            if pieces is not None:
                known = [i for i in chain.from_iterable(map(self._piece_ids().__getitem__, pieces)) if i >= 0]
                if self.dedupe_query:
                    known = list(dict.fromkeys(known))
                return np.array(known, dtype=np.int64), np.array([0, len(known)], dtype=np.int64)
        ids = self._raw_ids(texts)
        query_of = np.cumsum(ids == _SEPARATOR)  # the query each id belongs to
        known = ids >= 0
        ids, query_of = ids[known], query_of[known]
        if self.dedupe_query and len(ids):
            # (query, term) pairs; np.unique's indices are of first occurrences, re-sorted into
            # text order: the order dict.fromkeys would keep, and so the order of the score sums.
            _, first = np.unique(query_of * (int(ids.max()) + 1) + ids, return_index=True)
            first.sort()
            ids, query_of = ids[first], query_of[first]
        pointers = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(query_of, minlength=n), out=pointers[1:])
        return ids, pointers

    def _raw_ids(self, texts: Sequence[str]) -> np.ndarray:
        """The ids of the terms of all ``texts`` (at least one) in text order, in one array:
        -1 for a stopword or a term the index lacks, :data:`_SEPARATOR` between two texts.

        The texts are folded together and split at whitespace (:meth:`Analyzer.pieces_joined`);
        each distinct piece is tokenised, analysed and looked up once (:class:`_PieceIds`)."""
        analyzer = self.analyzer
        if type(analyzer) is Analyzer:
            piece_ids = self._piece_ids()
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

    def _piece_ids(self) -> _PieceIds:
        """Piece of folded text -> its term ids, for this analyzer and vocabulary (made anew if
        either is replaced)."""
        ids = self._ids
        if ids is None or ids.vocab is not self.vocab or ids.analyzer is not self.analyzer:
            ids = self._ids = _PieceIds(self.analyzer, self.vocab)
        return ids

    def search_many(
        self, queries: Sequence[Query], k: int = 100, progress: Callable[[int], None] | None = None
    ) -> Run:
        run: Run = {}
        # Batches of about 250,000 hits: each has a fixed cost (the kernel's call, whole-array
        # steps), so larger is faster, while the result matrices and their Python objects stay small.
        batch = max(256, 250_000 // max(k, 1))
        for start in range(0, len(queries), batch):
            chunk = queries[start:start + batch]
            results = self._found([q.text for q in chunk], k)
            for query, (docs, scores) in zip(chunk, results, strict=True):
                run[query.id] = dict(zip(docs, scores, strict=True))
            if progress:
                progress(len(chunk))
        return run

    def search_ids(self, queries: list[list[int]], k: int = 100) -> list[list[tuple[str, float]]]:
        return [list(zip(docs, scores, strict=True)) for docs, scores in self._retrieve(queries, k)]

    def _retrieve(self, queries: list[list[int]], k: int) -> list[tuple[list[str], list[float]]]:
        """(document ids, scores) of each query's hits, best first; documents scoring 0 left out."""
        pointers = np.zeros(len(queries) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, queries), dtype=np.int64, count=len(queries)), out=pointers[1:])
        flat = np.fromiter(chain.from_iterable(queries), dtype=np.int64, count=int(pointers[-1]))
        return self._hits(flat, pointers, k)

    def _found(self, texts: Sequence[str], k: int) -> list[tuple[list[str], list[float]]]:
        """(document ids, scores) of each text's hits, best first; documents scoring 0 left out.

        Where lexir's kernel serves (:mod:`~lexir.retrieval.bm25_kernel`), the analysis's raw ids
        go to it as they are (it skips unknown terms and repeats); otherwise the ids of
        :meth:`_batch_ids`."""
        if not texts or self._bm25 is None or not _own_kernel(self._bm25):
            return self._hits(*self._batch_ids(texts), k)
        ids = self._raw_ids(texts)
        pointers = np.empty(len(texts) + 1, dtype=np.int64)
        pointers[0], pointers[-1] = 0, len(ids)
        pointers[1:-1] = np.flatnonzero(ids == _SEPARATOR)
        return self._hits(ids, pointers, k, dedupe=self.dedupe_query)

    def _hits(self, flat: np.ndarray, pointers: np.ndarray, k: int,
              dedupe: bool = False) -> list[tuple[list[str], list[float]]]:
        """:meth:`_retrieve` for queries given as :meth:`_batch_ids` gives them (or, with
        ``dedupe``, as :meth:`_found` hands them to lexir's kernel)."""
        if self._bm25 is None:
            raise RuntimeError("BM25 index not built: call index() or load() first")
        n = len(pointers) - 1
        k = min(k, len(self.doc_ids))
        if not len(flat) or k <= 0:
            return [([], []) for _ in range(n)]
        docs, scores, positive = _top_k(self._bm25, flat, pointers, k, dedupe)
        # Whole result matrices convert to Python at once (document numbers to ids by indexing
        # an object array); each row is then cut to its hits above zero (a document matching no
        # query term is not a result), a prefix since rows are sorted.
        names, values = self._doc_names()[docs].tolist(), scores.tolist()
        if positive.min() == k:  # every row full: the usual case for long queries
            return list(zip(names, values, strict=True))
        return [(d, s) if m == k else (d[:m], s[:m])
                for m, d, s in zip(positive.tolist(), names, values, strict=True)]

    def _doc_names(self) -> np.ndarray:
        """``doc_ids`` as an object array, rebuilt whenever ``doc_ids`` is replaced."""
        if self._names is None or self._names[0] is not self.doc_ids or len(self._names[1]) != len(self.doc_ids):
            names = np.empty(len(self.doc_ids), dtype=object)
            names[:] = self.doc_ids
            self._names = (self.doc_ids, names)
        return self._names[1]

    def scores(self, text: str) -> np.ndarray:
        """The BM25 score of every document (in corpus order) for ``text``."""
        ids = self.query_ids(text)
        if not ids:
            return np.zeros(len(self.doc_ids), dtype=np.float32)
        return self._bm25.get_scores(ids)

    # -- persistence ------------------------------------------------------------------------

    def config(self) -> dict:
        return {
            "format": FORMAT_VERSION,
            "system": "bm25",
            "analyzer": self.analyzer.config.to_dict(),
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "title_weight": self.title_weight,
            "dedupe_query": self.dedupe_query,
            "fingerprint": self.fingerprint,
        }

    def save(self, folder: str | Path) -> Path:
        """A new generation of ``folder`` (:mod:`lexir.io.generations`): bm25s's files and ``lexir.json``."""
        folder = Path(folder)
        with new_generation(folder) as gen:
            self._bm25.save(str(gen.path), corpus=None)
            write_marker(gen / "lexir.json", {**self.config(), "doc_ids": self.doc_ids})
        return folder

    @classmethod
    @loads
    def load(cls, folder: str | Path, mmap: bool = True) -> BM25Retriever:
        folder = Path(folder)
        meta = read_marker(folder / "lexir.json", "lexir BM25 index", FORMAT_VERSION)
        retriever = cls(
            Analyzer(AnalyzerConfig(**meta["analyzer"])),
            k1=meta["k1"], b=meta["b"], method=meta["method"],
            title_weight=meta["title_weight"], dedupe_query=meta["dedupe_query"],
        )
        _cache_retrieval_kernel()
        engine = bm25s.BM25.load(str(folder), mmap=mmap, load_vocab=True)
        engine.backend = "numba"
        retriever._bm25 = engine
        retriever.vocab = engine.vocab_dict
        retriever.doc_ids = meta["doc_ids"]
        retriever.fingerprint = meta["fingerprint"]
        return retriever


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
        self.single: dict[str, int] = {}
        self._reset()

    def _reset(self) -> None:
        self.clear()
        self.terms.clear()
        self.single.clear()
        self[SENTINEL] = (_SEPARATOR,)
        self.single[SENTINEL] = _SEPARATOR

    def __missing__(self, piece: str) -> tuple[int, ...]:
        if len(self) >= self.limit:
            self._reset()
        found = self[piece] = self.exact(piece)
        if len(found) == 1:
            self.single[piece] = found[0]
        return found

    def ids(self, pieces: list[str]) -> np.ndarray:
        """The ids of the terms of ``pieces``, in order, as one array.

        Each piece's id comes from ``single`` in one pass; the few pieces not there (new ones,
        and pieces of no token or of several: "-", "1/10") are spliced in after; a mostly new
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

    def exact(self, piece: str) -> tuple[int, ...]:
        """The ids of ``piece``'s terms, the sentinel taken as the word it then is."""
        if piece in self and piece != SENTINEL:
            return self[piece]
        terms, vocab, term = self.terms, self.vocab, self.analyzer.term
        out = []
        for token in self.analyzer.piece_tokens(piece):
            found = terms.get(token)
            if found is None:
                found = terms[token] = _known_id(vocab, term(token))
            out.append(found)
        return tuple(out)


_SEPARATOR = -2  # between the ids of two queries in _batch_ids
_ODD = -3  # _PieceIds.ids: a piece not (yet) known to be one token


def _known_id(vocab: dict[str, int], term: str) -> int:
    """A term's id, or -1 for a term the index lacks ("" is bm25s's empty token, no term)."""
    return vocab.get(term, -1) if term else -1


_KERNEL_CACHED = False


def _cache_retrieval_kernel() -> None:
    """Let bm25s's numba retrieval kernel use numba's on-disk cache.

    bm25s compiles it without caching, so every new process (each `lexir search`) would pay
    seconds of JIT before its first query; cached, only the first process ever does. The
    compiled code is the same. Numba keeps the cache beside bm25s or in its user-wide cache
    folder (``NUMBA_CACHE_DIR`` overrides). ``LEXIR_NUMBA_CACHE=0`` turns this off.
    """
    global _KERNEL_CACHED
    if _KERNEL_CACHED or os.environ.get("LEXIR_NUMBA_CACHE") == "0":
        return
    _KERNEL_CACHED = True
    try:
        from bm25s.numba.retrieve_utils import _retrieve_internal_jitted_serial as kernel

        kernel.enable_caching()
    except (ImportError, AttributeError):  # another bm25s version: it simply compiles as before
        pass


def _kernel():
    """bm25s's compiled one-thread retrieval kernel, or None (another bm25s version)."""
    try:
        from bm25s.numba.retrieve_utils import _retrieve_internal_jitted_serial
    except ImportError:
        return None
    return _retrieve_internal_jitted_serial


# Call bm25s's numba kernel directly (what BM25.retrieve does after checking its input); a
# switch so the two can be compared: the results are the same, bit for bit (tests/test_bm25.py).
_DIRECT_KERNEL = True


# lexir's kernel (bm25_kernel) instead of bm25s's: bm25s's steps with less around them; a switch
# so that the two can be compared: the results are the same, bit for bit and in the same order
# (tests/test_bm25.py).
_OWN_KERNEL = True


def _own_kernel(engine: bm25s.BM25) -> bool:
    """Whether lexir's kernel serves ``engine``: not for BM25 variants that add a score for
    absent terms (bm25l, bm25+), nor another backend."""
    return _OWN_KERNEL and _DIRECT_KERNEL and engine.backend == "numba" and engine.nonoccurrence_array is None


def _top_k(engine: bm25s.BM25, flat: np.ndarray, pointers: np.ndarray, k: int,
           dedupe: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(document numbers, scores, how many of the scores are above zero) of the best ``k``
    documents for each query, best first; query ``i`` is the term ids
    ``flat[pointers[i]:pointers[i + 1]]``, known ones only, unless lexir's kernel serves: it
    skips negative ids, and with ``dedupe`` a term's repeats. lexir's kernel where it serves,
    else bm25s's (:func:`_heap_top_k`); the same hits either way."""
    if _own_kernel(engine):
        return bm25_kernel.top_k(engine.scores, flat, pointers, k, dedupe)
    if dedupe:
        raise ValueError("only lexir's kernel takes query ids with repeats and unknown terms")
    docs, scores = _heap_top_k(engine, flat, pointers, k)
    return docs, scores, (scores > 0).sum(axis=1)  # rows are sorted: their hits are a prefix


def _heap_top_k(engine: bm25s.BM25, flat: np.ndarray, pointers: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_top_k` by bm25s's own kernel (its heap).

    ``BM25.retrieve`` re-checks every id against the vocabulary and turns each query into an
    array of its own, in Python, before its kernel runs: as long again as the kernel on short
    queries. lexir's ids come from the index's vocabulary, so the batch goes to the kernel as
    one flat array and the query boundaries. (A query without terms scores zero everywhere.)
    """
    kernel = _kernel() if _DIRECT_KERNEL and engine.backend == "numba" else None
    if kernel is None:
        return _retrieve_lists(engine, flat, pointers, k)
    int_dtype = np.dtype(engine.int_dtype)
    matrix = engine.scores
    scores, docs = kernel(
        query_tokens_ids_flat=flat.astype(int_dtype, copy=False), query_pointers=pointers.astype(int_dtype, copy=False),
        k=k, sorted=True, dtype=np.dtype(engine.dtype), int_dtype=int_dtype, data=matrix["data"],
        indptr=matrix["indptr"], indices=matrix["indices"], num_docs=matrix["num_docs"],
        nonoccurrence_array=engine.nonoccurrence_array, weight_mask=None,
    )
    return docs, scores


def _retrieve_lists(engine: bm25s.BM25, flat: np.ndarray, pointers: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``_top_k`` through ``BM25.retrieve`` (another bm25s, or another backend); queries without
    terms are not asked (bm25s would score them through its empty token) and get zeros."""
    bounds = pointers.tolist()
    queries = [flat[a:b].tolist() for a, b in zip(bounds, bounds[1:], strict=False)]
    asked = [i for i, q in enumerate(queries) if q]
    docs = np.zeros((len(queries), k), dtype=np.int64)
    scores = np.zeros((len(queries), k), dtype=np.float32)
    if asked:
        found_docs, found_scores = engine.retrieve([queries[i] for i in asked], k=k, show_progress=False,
                                                   n_threads=1, return_as="tuple")
        docs[asked], scores[asked] = found_docs, found_scores
    return docs, scores


# Build bm25s's score matrix with whole-array numpy operations instead of bm25s.BM25.index.
# A switch so that the two can be compared; both give the same index, bit for bit.
_FAST_BUILD = True


def _build_score_matrix(engine: bm25s.BM25, term_ids: np.ndarray, lengths: np.ndarray, vocab: dict) -> bool:
    """Fill ``engine`` as ``engine.index((ids_per_doc, vocab))`` would; False where it cannot.

    bm25s counts terms and scores them document by document in Python, which costs more than
    lexir's analysis of the text. This computes the same matrix (columns = terms, rows sorted
    within a column) for all documents at once, with bm25s's own idf and term-frequency
    functions applied to whole arrays: its per-document arithmetic (float32 counts, float64
    length normalisation, float32 result) is elementwise, so the values are identical. That
    holds under NumPy 2's promotion rules, where bm25s's float64 scalars promote float32 arrays
    as float64 arrays do; under NumPy 1 (or a bm25s without these helpers) bm25s builds it.
    """
    try:
        from bm25s.scoring import (
            _build_nonoccurrence_array,
            _select_idf_scorer,
            _select_tfc_scorer,
        )
    except ImportError:
        return False
    n_docs, n_vocab = len(lengths), len(vocab)
    if (
        int(np.__version__.split(".")[0]) < 2
        or n_docs == 0
        or n_vocab >= 2**31
        or np.dtype(engine.dtype) != np.float32
        or not np.array_equal(np.sort(np.fromiter(vocab.values(), np.int64, n_vocab)), np.arange(n_vocab))
        or (len(term_ids) and not 0 <= term_ids.min() <= term_ids.max() < n_vocab)
    ):
        return False
    # One entry per (term, document) pair, term-major: the order of a CSC matrix. (np.unique
    # with counts, done in place to keep fewer copies of the largest array alive.)
    keys = term_ids * n_docs
    keys += np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    keys.sort()
    first = np.empty(len(keys), dtype=bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    del first
    tf = np.diff(starts, append=len(keys)).astype(engine.dtype)
    keys = keys[starts]
    del starts
    terms, docs = np.divmod(keys, n_docs)
    del keys
    terms, docs = terms.astype(np.int32), docs.astype(engine.int_dtype)
    df = np.bincount(terms, minlength=n_vocab)
    doc_frequencies = dict(enumerate(df.tolist()))
    avg_doc_len = lengths.mean()  # as bm25s: the mean of an int64 array, a float64 scalar
    compute_idf = _select_idf_scorer(engine.idf_method)
    calculate_tfc = _select_tfc_scorer(engine.method)
    nonoccurrence = None
    if engine.method in engine.methods_requiring_nonoccurrence:
        nonoccurrence = _build_nonoccurrence_array(
            doc_frequencies=doc_frequencies, n_docs=n_docs, compute_idf_fn=compute_idf,
            calculate_tfc_fn=calculate_tfc, l_d=avg_doc_len, l_avg=avg_doc_len,
            k1=engine.k1, b=engine.b, delta=engine.delta, dtype=engine.dtype,
        )
    # bm25s's idf of every term (_build_idf_array), computed once per distinct document frequency.
    distinct, which = np.unique(df, return_inverse=True)
    idf = np.array([compute_idf(d, N=n_docs) if d else 0.0 for d in distinct.tolist()])[which].astype(engine.dtype)
    tfc = calculate_tfc(tf_array=tf, l_d=lengths[docs], l_avg=avg_doc_len,
                        k1=engine.k1, b=engine.b, delta=engine.delta)
    scores = idf[terms] * tfc
    if nonoccurrence is not None:
        scores -= nonoccurrence[terms]
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    engine.scores = {
        "data": scores.astype(engine.dtype),
        "indices": docs,
        "indptr": indptr,
        "num_docs": n_docs,
    }
    engine.nonoccurrence_array = nonoccurrence
    engine.vocab_dict = vocab
    engine.unique_token_ids_set = set(vocab.values())
    return True


def make_analyzer(corpus: Corpus, language: str, mode: str, stopwords: bool, lemmatizer: str,
                  stoplist: str = "", verb_lemmas: bool = False) -> Analyzer:
    """The analyzer of ``language`` (else the corpus's); ``mode="auto"`` is that language's default
    analysis from ``lexir/analysis/data/defaults.tsv`` (each chosen on that language's development
    data): its mode and the options the row names beside it (German: stopwords-iso, verb lemmas),
    a ``stoplist`` or ``verb_lemmas`` given here taking precedence."""
    language = language or corpus.language
    if not language:
        raise ValueError(f"corpus {corpus.name!r} has no language: pass language=… (any Snowball language)")
    if mode == "auto":
        from lexir.analysis import language_defaults

        row = language_defaults(language)
        mode, options = row.mode, row.options()
        stoplist = stoplist or str(options.get("stoplist", ""))
        verb_lemmas = verb_lemmas or bool(options.get("verb_lemmas", False))
    return Analyzer(AnalyzerConfig(language=language, mode=mode, stopwords=stopwords, lemmatizer=lemmatizer,
                                   stoplist=stoplist, verb_lemmas=verb_lemmas))


def _auto_modes() -> str:
    from lexir.analysis import all_language_defaults

    return ", ".join(f"{d.language} {d.mode}" if d.language != "*" else f"others {d.mode}"
                     for d in all_language_defaults())


@register_system(
    "bm25",
    "BM25 (bm25s) over article text with lexir's analyzer (raw, stem or lemma; mode=auto is the language's "
    f"default: {_auto_modes()}); bigrams=w adds adjacent-term-pair evidence with weight w",
    k1=1.2, b=0.75,
    mode=Param("auto", "text analysis: auto (the corpus language's default, lexir/analysis/data/defaults.tsv), "
               "raw tokens, Snowball stems or lemmas", choices=("auto", *MODES)),
    stopwords=True, lemmatizer="simplemma", language="",
    stoplist=Param("", "which stopword list: '' lexir's own (lexir/analysis/data/stopwords/<lang>.txt; with "
                   "mode=auto the language's choice), or a named one: snowball (de, en), iso (stopwords-iso: de, el, "
                   "en, pl)"),
    verb_lemmas=Param(False, "mode=stem: stem a verb form from its simplemma lemma (gekündigt meets Kündigung); "
                      "mode=auto: on where the language's row says so (de)"),
    method="lucene", title_weight=1, dedupe_query=True,
    bigrams=Param(0.0, "weight of BM25 over adjacent term pairs added to the score (phrase evidence; 0 = off)"),
)
def build_bm25(corpus: Corpus, *, k1, b, mode, stopwords, lemmatizer, language, stoplist, verb_lemmas, method,
               title_weight, dedupe_query, bigrams, progress=None) -> Retriever:
    analyzer = make_analyzer(corpus, language, mode, stopwords, lemmatizer, stoplist, verb_lemmas)
    if bigrams:  # phrase evidence: adjacent term pairs in a second index, weighted (retrieval/evidence.py)
        from lexir.retrieval.evidence import PhraseBM25

        return PhraseBM25.build(corpus, analyzer, bigrams, progress, k1=k1, b=b, method=method,
                                title_weight=title_weight, dedupe_query=dedupe_query)
    return BM25Retriever(analyzer, k1, b, method, title_weight, dedupe_query).index(corpus, progress)
