"""lexir's BM25 score matrix: the score of every (term, document) pair, computed once.

A :class:`ScoreMatrix` holds, column by column (one column per term id, rows sorted within a
column), the BM25 score each document gets for that term: ``data`` (float32), ``indices``
(document numbers, int32), ``indptr`` (where each column starts), the document count, and for
the variants that also score absent terms (bm25l, bm25+) the per-term score of absence
(``nonoccurrence``, subtracted from the stored scores and added back per query). These are
bm25s's formulas, its arithmetic and its file layout (``data.csc.index.npy`` and the rest), so
a matrix built here equals the one ``bm25s.BM25.index`` builds, bit for bit, a folder saved by
bm25s loads here and one saved here loads in bm25s; a query's hits are those of bm25s's public
``BM25.retrieve`` (tests/test_bm25.py). Queries are scored by :mod:`lexir.retrieval.bm25_kernel`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from lexir.arrays import DAMAGED, ascending_within, delimits, load_json, load_row
from lexir.kernels import compiled
from lexir.retrieval import bm25_kernel

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
ABSENCE_SCORED = ("bm25l", "bm25+")  # variants whose absent terms score too
DELTA = 0.5  # bm25l's and bm25+'s delta (bm25s's default)
DTYPE, INT_DTYPE = "float32", "int32"
_FILES = {"data": "data.csc.index.npy", "indices": "indices.csc.index.npy", "indptr": "indptr.csc.index.npy"}
_ABSENCE_FILE = "nonoccurrence_array.index.npy"
_VOCAB_FILE, _PARAMS_FILE = "vocab.index.json", "params.index.json"
# The pruned kernel's bounds (bm25_kernel.window_maxima), saved with a matrix that can be pruned:
# pointers per term (int64), window numbers (int32), each window's largest score (float32)
# and their window size in a file of their own (bm25s makes its BM25 of params.index.json's keys)
_WINDOW_FILES = ("window_pointers.lexir.npy", "window_numbers.lexir.npy", "window_maxima.lexir.npy")
_WINDOW_DTYPES = (np.int64, np.int32, np.float32)
_WINDOW_PARAMS = "window_maxima.lexir.json"


def idf(method: str, df: int, n_docs: int) -> float:
    """A term's inverse document frequency under ``method`` (bm25s's formulas); ``df`` > 0."""
    if method == "lucene":
        return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    if method == "robertson":
        return math.log(max((n_docs - df + 0.5) / (df + 0.5), 1))
    if method == "atire":
        return math.log(n_docs / df)
    if method == "bm25l":
        return math.log((n_docs + 1) / (df + 0.5))
    if method == "bm25+":
        return math.log((n_docs + 1) / df)
    raise ValueError(f"unknown BM25 method {method!r}; valid: {', '.join(METHODS)}")


def tfc(method: str, tf, l_d, l_avg, k1: float, b: float, delta: float = DELTA):
    """The term-frequency component of BM25 under ``method`` (bm25s's formulas and operation
    order, so whole arrays give bm25s's values elementwise)."""
    if method in ("lucene", "robertson"):
        return tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf)
    if method == "atire":
        return (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * l_d / l_avg))
    if method == "bm25l":
        c = tf / (1 - b + b * l_d / l_avg)
        return ((k1 + 1) * (c + delta)) / (k1 + c + delta)
    if method == "bm25+":
        return ((k1 + 1) * tf) / (k1 * (1 - b + b * l_d / l_avg) + tf) + delta
    raise ValueError(f"unknown BM25 method {method!r}; valid: {', '.join(METHODS)}")


_CHUNK = 1 << 18  # postings scored per step of ScoreMatrix.build (its temporaries: some MiB)


def _postings_source(term_ids, lengths, n_terms, fill):  # pragma: no cover - compiled by numba
    """The document frequency of each term of documents given as :meth:`ScoreMatrix.build`
    takes them, and with ``fill`` their postings: the columns' starts (``indptr``), then per
    posting, term-major and documents ascending within a term, its document (int32) and the
    term's count in it (int32, in a float32 array's memory, which the scores then take over).
    Two passes over the term ids; a term's last document marks its repeats."""
    n_docs = len(lengths)
    last = np.full(n_terms, -1, dtype=np.int64)
    df = np.zeros(n_terms, dtype=np.int64)
    p = 0
    for d in range(n_docs):
        for _ in range(lengths[d]):
            t = term_ids[p]
            p += 1
            if last[t] != d:
                last[t] = d
                df[t] += 1
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    total = 0
    for t in range(n_terms):
        total += df[t]
        indptr[t + 1] = total
    docs = np.empty(total if fill else 0, dtype=np.int32)
    data = np.empty(total if fill else 0, dtype=np.float32)
    if not fill:
        return df, indptr, docs, data
    counts = data.view(np.int32)
    slot = indptr[:-1].copy()  # the posting being filled for each term
    last[:] = -1
    p = 0
    for d in range(n_docs):
        for _ in range(lengths[d]):
            t = term_ids[p]
            p += 1
            if last[t] != d:
                last[t] = d
                s = slot[t]
                docs[s] = d
                counts[s] = 1
                slot[t] = s + 1
            else:
                counts[slot[t] - 1] += 1
    return df, indptr, docs, data


def _postings(term_ids: np.ndarray, lengths: np.ndarray, n_terms: int, fill: bool = True):
    """:func:`_postings_source`, compiled (numba; kept in its on-disk cache)."""
    if int(lengths.sum()) != len(term_ids):
        raise ValueError(f"{len(term_ids)} term ids for documents of {int(lengths.sum())} terms in all")
    if len(term_ids) and not 0 <= term_ids.min() <= term_ids.max() < n_terms:
        raise ValueError(f"term ids must lie in [0, {n_terms})")
    kernel = compiled(_postings_source)
    return kernel(np.ascontiguousarray(term_ids), np.ascontiguousarray(lengths), int(n_terms), bool(fill))


class CollectionStats:
    """What BM25 needs to know of a whole collection beyond one document: how many documents it
    has, their total length and each term's document frequency (``df[term id]``). A shard's
    matrix built with its collection's statistics (:meth:`ScoreMatrix.build`) scores its documents
    as the whole collection's matrix does, bit for bit."""

    __slots__ = ("df", "n_docs", "total_length")

    def __init__(self, n_docs: int, total_length: int, df: np.ndarray) -> None:
        self.n_docs, self.total_length = int(n_docs), int(total_length)
        self.df = np.asarray(df, dtype=np.int64)

    @classmethod
    def of(cls, term_ids: np.ndarray, lengths: np.ndarray, n_terms: int) -> CollectionStats:
        """The statistics of documents given as :meth:`ScoreMatrix.build` takes them."""
        df = _postings(term_ids, lengths, n_terms, fill=False)[0]
        n_docs = len(lengths)
        return cls(n_docs, int(lengths.sum()), df)

    def __add__(self, other: CollectionStats) -> CollectionStats:
        """The statistics of two disjoint sets of documents over the same term ids."""
        if len(self.df) != len(other.df):
            raise ValueError(f"statistics over {len(self.df)} and {len(other.df)} terms cannot be added")
        return CollectionStats(self.n_docs + other.n_docs, self.total_length + other.total_length,
                               self.df + other.df)

    def avg_length(self) -> np.float64:
        """The average document length, as ``lengths.mean()`` computes it over the whole collection
        (an exact float64 sum of whole numbers, divided by the count)."""
        if not self.n_docs:
            return np.float64(0)
        return np.float64(self.total_length) / self.n_docs


class ScoreMatrix:
    """Per-term columns of per-document BM25 scores (see the module); read only once built."""

    __slots__ = ("ceilings", "data", "indices", "indptr", "nonoccurrence", "num_docs", "params")

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, num_docs: int,
                 nonoccurrence: np.ndarray | None = None, params: dict | None = None) -> None:
        self.data, self.indices, self.indptr = data, indices, indptr
        self.num_docs, self.nonoccurrence = int(num_docs), nonoccurrence
        self.params = dict(params or {})
        self.ceilings = None  # the pruned kernel's bounds, made by bm25_kernel when first needed

    @property
    def n_terms(self) -> int:
        return len(self.indptr) - 1

    @classmethod
    def build(cls, term_ids: np.ndarray, lengths: np.ndarray, n_terms: int, k1: float, b: float,
              method: str, stats: CollectionStats | None = None) -> ScoreMatrix:
        """The matrix of documents given as the concatenation of their term ids (each in
        ``range(n_terms)``) and their lengths: bm25s's ``BM25.index``, bit for bit.

        The postings are counted in two passes over the term ids (:func:`_postings_source`);
        bm25s's arithmetic (float32 counts, float64 length normalisation, float32 result) is
        elementwise, so computing it over a run of columns at a time gives its values, with
        temporaries of a run's size instead of the whole matrix's.

        ``stats``: the statistics of a larger collection these documents are a part of (a shard,
        :mod:`lexir.retrieval.bm25_shards`): idf from its document frequencies and document
        count, length normalisation by its average length, so each document's scores are those
        the whole collection's matrix gives it. None (the default): these documents' own."""
        if method not in METHODS:
            raise ValueError(f"unknown BM25 method {method!r}; valid: {', '.join(METHODS)}")
        n_docs = len(lengths)
        if stats is not None and len(stats.df) != n_terms:
            raise ValueError(f"collection statistics of {len(stats.df)} terms for a matrix of {n_terms}")
        # The postings, term-major (a CSC matrix's order), documents ascending within a term; the
        # term frequencies are counted into ``data``'s own memory (as int32) and replaced by the
        # scores below, chunk by chunk: no array of all (term, document) pairs is ever made.
        df, indptr, docs, data = _postings(term_ids, lengths, n_terms)
        avg_doc_len = lengths.mean() if n_docs else np.float64(0)  # a float64 scalar, as bm25s's
        # idf and the average length: these documents', or the whole collection's (a shard)
        idf_df, idf_docs = (df, n_docs) if stats is None else (stats.df, stats.n_docs)
        if stats is not None:
            avg_doc_len = stats.avg_length()
        # every term's idf (0 for a term in no document), computed once per distinct frequency
        distinct, which = np.unique(idf_df, return_inverse=True)
        idfs = [idf(method, d, idf_docs) if d else 0.0 for d in distinct.tolist()]
        term_idf = np.array(idfs, dtype=np.float64)[which].astype(DTYPE)
        nonoccurrence = None
        if method in ABSENCE_SCORED:
            absent = tfc(method, 0, avg_doc_len, avg_doc_len, k1, b)
            nonoccurrence = np.zeros(n_terms, dtype=DTYPE)
            for term in np.flatnonzero(idf_df).tolist():
                nonoccurrence[term] = idfs[which[term]] * absent
        # The scores, a run of whole columns at a time: bm25s's whole-array arithmetic on each
        # run (elementwise, so the same values as over all postings at once): float32 counts,
        # float64 length normalisation and idf product, float32 result.
        counts = data.view(np.int32)
        first = 0
        while first < n_terms:
            last = int(np.searchsorted(indptr, indptr[first] + _CHUNK, side="right")) - 1
            last = min(max(last, first + 1), n_terms)
            start, end = int(indptr[first]), int(indptr[last])
            if end > start:
                terms = np.repeat(np.arange(first, last, dtype=np.int64), df[first:last])
                tf = counts[start:end].astype(DTYPE)
                scores = term_idf[terms] * tfc(method, tf, lengths[docs[start:end]], avg_doc_len, k1, b)
                if nonoccurrence is not None:
                    scores -= nonoccurrence[terms]
                data[start:end] = scores  # float64 -> float32, as astype(DTYPE)
            first = last
        params = {"k1": k1, "b": b, "delta": DELTA, "method": method, "idf_method": method}
        return cls(data, docs, indptr, n_docs, nonoccurrence, params)

    # -- scoring ----------------------------------------------------------------------------

    def top_k(self, ids: np.ndarray, pointers: np.ndarray, k: int,
              dedupe: bool = False, prune: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(document numbers, scores, how many of each row's scores are above zero) of the best
        ``k`` documents of each query, best first, as bm25s's ``retrieve`` finds them. Query
        ``i`` is the term ids ``ids[pointers[i]:pointers[i + 1]]``, negative ids skipped, and
        with ``dedupe`` a term's repeats within its query. ``prune`` (auto, on, off): whether
        dynamic pruning (block-max windows) passes over documents; the same results either way
        (:func:`lexir.retrieval.bm25_kernel.top_k`)."""
        return bm25_kernel.top_k(self, ids, pointers, k, dedupe, prune)

    def scores(self, ids) -> np.ndarray:
        """Every document's score (float32, in document order) for the term ids ``ids``,
        summed term by term as bm25s sums them."""
        out = np.zeros(self.num_docs, dtype=DTYPE)
        for term in ids:
            start, end = self.indptr[term], self.indptr[term + 1]
            out[self.indices[start:end]] += self.data[start:end]  # a column's rows are distinct
        if self.nonoccurrence is not None and len(ids):
            out += self.nonoccurrence[np.asarray(ids, dtype=np.int64)].sum()
        return out

    def weighted(self, weights: dict[int, float]) -> np.ndarray:
        """Every document's ``sum(weight * score(term))`` over ``weights`` (float64): a query
        whose terms count unequally (pseudo-relevance feedback)."""
        if not weights:
            return np.zeros(self.num_docs, dtype=np.float64)
        spans = [(self.indptr[term], self.indptr[term + 1]) for term in weights]
        docs = np.concatenate([self.indices[a:b] for a, b in spans])
        scores = np.concatenate([w * self.data[a:b].astype(np.float64) for w, (a, b) in zip(weights.values(), spans, strict=True)])
        # one pass over the postings in term order: each document's sum in the same order as a loop
        return np.bincount(docs, weights=scores, minlength=self.num_docs)

    def document_frequency(self, term: int) -> int:
        """How many documents hold ``term``."""
        return int(self.indptr[term + 1] - self.indptr[term])

    def appended(self, other: ScoreMatrix, weight: float) -> ScoreMatrix:
        """One matrix scoring ``self``'s terms plus ``weight`` times ``other``'s (over the same
        documents): ``other``'s columns, scaled, after ``self``'s; its term ``t`` is
        ``t + self.n_terms`` here."""
        if other.num_docs != self.num_docs:
            raise ValueError(f"matrices over {self.num_docs} and {other.num_docs} documents cannot be joined")
        dtype = np.dtype(DTYPE)
        scale = dtype.type(weight)
        indptr = np.concatenate([np.asarray(self.indptr, dtype=np.int64),
                                 np.asarray(other.indptr[1:], dtype=np.int64) + np.int64(self.indptr[-1])])
        data = np.concatenate([np.asarray(self.data, dtype=dtype), np.asarray(other.data, dtype=dtype) * scale])
        indices = np.concatenate([self.indices, np.asarray(other.indices, dtype=self.indices.dtype)])
        absent = None
        if self.nonoccurrence is not None or other.nonoccurrence is not None:
            mine = self.nonoccurrence if self.nonoccurrence is not None else np.zeros(self.n_terms, dtype)
            theirs = other.nonoccurrence if other.nonoccurrence is not None else np.zeros(other.n_terms, dtype)
            absent = np.concatenate([np.asarray(mine, dtype=dtype), np.asarray(theirs, dtype=dtype) * scale])
        return ScoreMatrix(data, indices, indptr, self.num_docs, absent, self.params)

    # -- files ------------------------------------------------------------------------------

    def save(self, folder: str | Path, vocab: dict[str, int]) -> None:
        """The matrix and ``vocab`` (term -> column) as files of ``folder`` (bm25s's layout), and,
        where the pruned kernel can answer over it (no score below 0, no scores of absence), its
        window maxima, so that a loaded index need not compute them (bm25s ignores those files)."""
        folder = Path(folder)
        for key, name in _FILES.items():
            np.save(folder / name, getattr(self, key), allow_pickle=False)
        if self.nonoccurrence is not None:
            np.save(folder / _ABSENCE_FILE, self.nonoccurrence, allow_pickle=False)
        (folder / _VOCAB_FILE).write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
        params = {**self.params, "dtype": DTYPE, "int_dtype": INT_DTYPE, "num_docs": self.num_docs,
                  "version": "lexir", "backend": "numba"}
        (folder / _PARAMS_FILE).write_text(json.dumps(params, indent=4), encoding="utf-8")
        if bm25_kernel.prunable(self):
            *arrays, bits = bm25_kernel.window_maxima(self)
            for name, array, dtype in zip(_WINDOW_FILES, arrays, _WINDOW_DTYPES, strict=True):
                np.save(folder / name, np.asarray(array, dtype=dtype), allow_pickle=False)
            (folder / _WINDOW_PARAMS).write_text(json.dumps({"window_bits": bits}), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path, mmap: bool = True) -> tuple[ScoreMatrix, dict[str, int]]:
        """The matrix and vocabulary :meth:`save` (or bm25s's ``BM25.save``) wrote in ``folder``;
        the three large arrays memory-mapped unless ``mmap`` is off. The kernels read them
        unchecked, so what would make them read or write out of place is refused here, naming
        the file: a file missing, cut short or of another type, pointers that do not delimit the
        postings, a term id past the columns, a posting's document outside the corpus or out of
        order (one pass over the postings: about 20 ms for the million German units' 18.5
        million)."""
        folder = Path(folder)
        params = load_json(folder / _PARAMS_FILE)
        vocab = load_json(folder / _VOCAB_FILE)
        num_docs = params.get("num_docs") if isinstance(params, dict) else None
        if not isinstance(num_docs, int) or isinstance(num_docs, bool) or num_docs < 0:
            raise ValueError(f"{folder / _PARAMS_FILE}: no document count (num_docs) ({DAMAGED})")
        if not isinstance(vocab, dict):
            raise ValueError(f"{folder / _VOCAB_FILE}: not a vocabulary (an object of term ids) ({DAMAGED})")
        data = load_row(folder / _FILES["data"], (DTYPE,), mmap)
        indices = load_row(folder / _FILES["indices"], (INT_DTYPE,), mmap, length=len(data))
        indptr = load_row(folder / _FILES["indptr"], ("int32", "int64"), mmap)
        if not delimits(indptr, len(indices)):
            raise ValueError(f"{folder / _FILES['indptr']}: {len(indptr)} pointers do not delimit "
                             f"{len(indices)} postings ({DAMAGED})")
        n_terms = len(indptr) - 1
        try:
            ids = np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab))
        except (TypeError, ValueError, OverflowError):
            ids = np.array([-1])
        if len(ids) and (ids.min() < 0 or ids.max() >= n_terms):
            raise ValueError(f"{folder / _VOCAB_FILE}: a term id outside the matrix's {n_terms} columns ({DAMAGED})")
        bad = ascending_within(indptr, indices, num_docs)
        if bad >= 0:
            raise ValueError(f"{folder / _FILES['indices']}: posting {bad} (document {int(indices[bad])}) is outside "
                             f"the {num_docs} documents or out of order ({DAMAGED})")
        absent = None
        if params.get("method") in ABSENCE_SCORED:
            absent = load_row(folder / _ABSENCE_FILE, (DTYPE,), mmap=False, length=n_terms)
        kept = {key: params[key] for key in ("k1", "b", "delta", "method", "idf_method") if key in params}
        matrix = cls(data, indices, indptr, num_docs, absent, kept)
        if (folder / _WINDOW_PARAMS).exists():  # saved by lexir since the pruned kernel's windows; else made when needed
            bits = _window_bits(folder / _WINDOW_PARAMS)
            matrix.ceilings = (bits, (*_window_files(folder, n_terms, num_docs, bits, mmap), bits))
        return matrix, vocab


def _window_bits(path: Path) -> int:
    """The window size (in bits) the saved window maxima are of."""
    try:
        bits = json.loads(path.read_text(encoding="utf-8"))["window_bits"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: unreadable ({exc!r}; {DAMAGED})") from exc
    if not isinstance(bits, int) or isinstance(bits, bool) or not 0 <= bits < 31:
        raise ValueError(f"{path}: window_bits {bits!r} is not a whole number from 0 to 30 ({DAMAGED})")
    return bits


def _window_files(folder: Path, n_terms: int, num_docs: int, bits: int, mmap: bool) -> tuple[np.ndarray, ...]:
    """The window maxima's three arrays as :meth:`ScoreMatrix.save` wrote them, each checked (a
    clear error naming the file where one is missing or does not fit the others)."""
    pointers, numbers, maxima = (load_row(folder / name, (np.dtype(dtype).name,), mmap)
                                 for name, dtype in zip(_WINDOW_FILES, _WINDOW_DTYPES, strict=True))
    # the kernel reads numbers[pointers[t]:pointers[t + 1]] unchecked: the pointers must delimit them
    if len(pointers) != n_terms + 1 or not delimits(pointers, len(numbers)) or len(numbers) != len(maxima):
        raise ValueError(f"{folder / _WINDOW_FILES[0]}: {len(pointers)} pointers for {n_terms} terms do not "
                         f"delimit {len(numbers)} windows with {len(maxima)} maxima ({DAMAGED})")
    n_windows = ((num_docs - 1) >> bits) + 1 if num_docs else 0
    bad = ascending_within(pointers, numbers, n_windows)
    if bad >= 0:
        raise ValueError(f"{folder / _WINDOW_FILES[1]}: entry {bad} (window {int(numbers[bad])}) is past the corpus's "
                         f"{n_windows} windows of {1 << bits} documents or out of order ({DAMAGED})")
    return pointers, numbers, maxima
