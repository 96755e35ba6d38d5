"""lexir's BM25 retrieval kernel: bm25s's kernel, computed the same way, with less around it.

bm25s scores a query by summing its terms' columns of the score matrix into one score per
document (float32, term by term, each column in posting order), feeds every document in corpus
order to a binary heap of ``k`` slots (the first ``k`` pushed, then any document above the
smallest replacing it, sifted as Python's ``heapq`` sifts: down to a leaf, then back up), and sorts
the heap with numba's ``np.argsort``. Which of several equal scores come first, and which of them
make the cut, depend on that heap's layout; so this kernel does exactly those steps, in that
order, and its results are bm25s's, bit for bit and in the same order (tests/test_bm25.py).

What differs is around them: one score buffer for the whole batch instead of one per query; the
heap's child choice without branches (an extra slot holding +inf stands for the missing right
child; unsigned positions spare numba's negative-index test); in a large corpus, a scan that skips
blocks of 64 documents no query term touched (their documents score 0, and a 0 cannot enter a
heap whose smallest value is not below 0: bm25s's heap does nothing with them); and the query side
read as lexir's analysis leaves it: ids of unknown terms and stopwords (negative) skipped,
repeated terms of a query skipped after the first (``dedupe``), so no array passes are needed
between the analysis and the scoring. It returns, for each query, how many of its ``k`` hits
score above zero: the only ones lexir returns, and always a prefix of the row (scores are sorted).

For the variants that score absent terms too (bm25l, bm25+: the matrix's ``nonoccurrence``), every
document's score also gets the sum of the query terms' scores of absence, summed and added as
bm25s adds it (float32, term by term); a document no term touched then scores that sum, which is
what the block scan compares with instead of 0.
"""

from __future__ import annotations

import os

import numpy as np
from numba import njit  # bm25s's numba backend imports it anyway

_COMPILED = None
_BLOCKS_FROM = 1 << 16  # documents: from this corpus size on, the scan skips untouched blocks


def _rise_source(values, where, pos, value, doc):  # pragma: no cover - compiled by numba
    """Put ``value`` (of document ``doc``) at heap slot ``pos``, moving it towards the root while
    it is below its parent, as heapq's ``_siftdown`` does (strictly below: ties stay put)."""
    while pos > 0:
        parent = (pos - 1) >> 1
        if value < values[parent]:
            values[pos] = values[parent]
            where[pos] = where[parent]
            pos = parent
            continue
        break
    values[pos] = value
    where[pos] = doc


_rise = njit(nogil=True, inline="always")(_rise_source)


def _source(ids, pointers, k, dedupe, blocks, data, indptr, indices, num_docs, absent):  # pragma: no cover - compiled by numba
    n = len(pointers) - 1
    k = min(k, num_docs)
    top_scores = np.zeros((n, k), dtype=data.dtype)
    top_docs = np.zeros((n, k), dtype=np.int32)
    positive = np.zeros(n, dtype=np.int64)
    scores = np.zeros(num_docs, dtype=data.dtype)
    # Repeats: a short query's terms are compared with its earlier terms; for long ones, a
    # table of the last query each term was scored for (made once, when first needed).
    seen = np.empty(0, dtype=np.int64)
    # In a large corpus, blocks of 64 documents, marked where a query touched one: the heap's
    # scan skips the others, whose documents all score 0 and so cannot enter a heap whose
    # smallest value is not below 0 (bm25s's heap with them would do nothing); only those blocks
    # are reset. In a small one a query touches nearly every block: marking would only cost.
    touched = np.zeros((num_docs + 63) >> 6 if blocks else 0, dtype=np.bool_)
    values = np.empty(k + 1, dtype=data.dtype)
    where = np.zeros(k + 1, dtype=np.int32)
    values[k] = np.inf
    zero, one, size = np.uint64(0), np.uint64(1), np.uint64(k)
    scored_absent = len(absent) > 0
    nothing = np.zeros(1, dtype=data.dtype)[0]
    for q in range(n):
        start, end = pointers[q], pointers[q + 1]
        # bm25l, bm25+: the sum of the query's terms' scores of absence (float32, in term
        # order, as numba sums bm25s's array of them), added to every document's score
        floor = nothing
        long_query = dedupe and end - start > 64
        if long_query and not len(seen):
            seen = np.full(len(indptr) - 1, -1, dtype=np.int64)
        for p in range(start, end):
            term = ids[p]
            if term < 0:
                continue
            if long_query:
                if seen[term] == q:
                    continue
                seen[term] = q
            elif dedupe:
                repeat = False
                for earlier in range(start, p):
                    if ids[earlier] == term:
                        repeat = True
                        break
                if repeat:
                    continue
            if scored_absent:
                floor += absent[term]
            for j in range(indptr[term], indptr[term + 1]):
                doc = indices[j]
                scores[doc] += data[j]
                if blocks:
                    touched[doc >> 6] = True
        # The first k documents pushed.
        if scored_absent:
            for d in range(num_docs):
                scores[d] += floor
        for length in range(k):
            _rise(values, where, length, scores[length], length)
        # Every later document above the smallest replaces it: the smaller child moves up all
        # the way to a leaf, then the new value moves up while below its parent.
        block_start = k
        while block_start < num_docs:
            block_end = min(((block_start >> 6) + 1) << 6, num_docs)
            if blocks and not touched[block_start >> 6] and values[0] >= floor:
                block_start = block_end
                continue
            for d in range(block_start, block_end):
                value = scores[d]
                if value > values[0]:
                    pos = zero
                    child = one
                    while child < size:
                        child += np.uint64(values[child + one] < values[child])
                        values[pos] = values[child]
                        where[pos] = where[child]
                        pos = child
                        child = pos + pos + one
                    _rise(values, where, np.int64(pos), value, d)
            block_start = block_end
        if not blocks or scored_absent:
            scores[:] = 0
        for block in range(len(touched)):
            if touched[block]:
                scores[block << 6:min((block + 1) << 6, num_docs)] = 0
                touched[block] = False
        order = np.argsort(values[:k])  # bm25s's sort: ascending, read backwards
        count = 0
        for r in range(k):
            x = order[k - 1 - r]
            top_scores[q, r] = values[x]
            top_docs[q, r] = where[x]
            if values[x] > 0:
                count += 1
        positive[q] = count
    return top_docs, top_scores, positive


def compiled():
    """The kernel, compiled on first use (kept in numba's on-disk cache unless
    ``LEXIR_NUMBA_CACHE=0``)."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = njit(nogil=True, cache=os.environ.get("LEXIR_NUMBA_CACHE") != "0")(_source)
    return _COMPILED


def top_k(matrix, ids: np.ndarray, pointers: np.ndarray, k: int,
          dedupe: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(document numbers, scores, positive) for each query of a batch, best first, over a
    :class:`~lexir.retrieval.bm25_matrix.ScoreMatrix`, as bm25s's ``retrieve`` finds them;
    ``positive[i]`` of row ``i``'s scores are above zero. Query ``i`` is the term ids
    ``ids[pointers[i]:pointers[i + 1]]``, negative ids skipped, and with ``dedupe`` a term's
    repeats within its query."""
    num_docs = matrix.num_docs
    absent = matrix.nonoccurrence if matrix.nonoccurrence is not None else _NO_ABSENCE
    return compiled()(np.asarray(ids, dtype=np.int64), np.asarray(pointers, dtype=np.int64), int(k), bool(dedupe),
                      num_docs >= _BLOCKS_FROM, matrix.data, matrix.indptr, matrix.indices, num_docs,
                      np.asarray(absent, dtype=matrix.data.dtype))


_NO_ABSENCE = np.zeros(0, dtype=np.float32)
