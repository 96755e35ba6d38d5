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
child; unsigned positions spare numba's negative-index test); in a large corpus, a scan that visits
only the documents some query term touched (a bit per document, a 64-bit word per block of 64:
the others score 0, and a 0 cannot enter a heap whose smallest value is not below 0: bm25s's heap
does nothing with them; with scores of absence, whole blocks, see below); and the query side
read as lexir's analysis leaves it: ids of unknown terms and stopwords (negative) skipped,
repeated terms of a query skipped after the first (``dedupe``), so no array passes are needed
between the analysis and the scoring. It returns, for each query, how many of its ``k`` hits
score above zero: the only ones lexir returns, and always a prefix of the row (scores are sorted).

For the variants that score absent terms too (bm25l, bm25+: the matrix's ``nonoccurrence``), every
document's score also gets the sum of the query terms' scores of absence, summed and added as
bm25s adds it (float32, term by term); a document no term touched then scores that sum, which is
what the block scan compares with instead of 0.

Dynamic pruning (``prune``; :func:`_pruned_source`): block-max windows, giving the exhaustive
kernel's results bit for bit, ties and order included. The exhaustive kernel's heap does
something only with a document scoring above its smallest value at that point; so the pruned
kernel walks the documents in the same corpus order, pushes the first ``k`` as it does, and then
goes window by window (``2**_WINDOW_BITS`` documents): a window is passed over when the sum of
its query terms' largest scores in it is not above the heap's smallest value (no document of it
can then do anything in the exhaustive heap); every other window is scored as the exhaustive
kernel scores (float32, term by term in query order, from 0) into a buffer of one window, small
enough to stay in the core's own cache, and its touched documents go through the same heap steps
in corpus order. The heap thus sees the same documents with the same scores in the same order,
and ends, and sorts, the same. Bounds: each term's largest score in each window (saved with the
index, else computed once per matrix: :func:`window_maxima`), summed in float64 and multiplied
by ``1 + (t + 2) * 2**-22`` for ``t`` terms before being compared, which covers the float32 sum's
rounding (a sequential float32 sum of ``t`` scores >= 0 exceeds their real sum by a factor below
``(1 + 2**-24) ** t``). Pruning needs every score >= 0 and no scores of absence (bm25l, bm25+ are
scored exhaustively). Measured (benchmarks/bench_pruning.py), it pays for short queries, where
the small buffer alone is faster than the corpus-wide one and whole windows are passed over;
long questions touch most windows with many terms each, where the exhaustive kernel's one pass
per term is faster: ``prune="auto"`` (the default) chooses (:func:`pruning_pays`).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit  # bm25s's numba backend imports it anyway
from numba.core import types
from numba.extending import intrinsic

from lexir.kernels import compiled as _compiled


@intrinsic
def trailing_zeros(typingctx, src):
    """The number of trailing zero bits of an integer (LLVM's ``cttz``: one instruction on x86-64
    and ARM), through numba's public intrinsic API (numba's own is in a private module)."""
    if not isinstance(src, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return src(src), codegen


_BLOCKS_FROM = 1 << 16  # documents: from this corpus size on, the scan skips untouched blocks
# prune="auto" prunes a batch of queries with at most these many known terms on average at
# these k, by corpus size (the first row whose size the corpus reaches). Measured with
# bench_pruning.py (one thread, best of 3, windows of 1024), pruned against exhaustive q/s:
# 961k German units, k = 10: 1 term 7.6x, 2 2.5x, 3 2.0x, 4 1.7x, 6 1.3x, 8 1.1x, 12 0.8x; k = 100:
# 2.3x, 1.5x, 1.4x, 1.3x, 1.0x, 0.9x; k = 1000: 1.1x for 1 or 2 terms, 0.9x from 6; 57-term lay
# questions 0.6x at every k. 107k German articles, k = 10: 2.6x, 1.4x, 1.1x, 1.0x, 0.9x (6 terms);
# k = 100 only one term gains (1.1x). 4k Polish articles (where the exhaustive scan visits
# every document), 1 to 4 terms: 1.8x to 3.6x at k = 10, 1.2x to 1.5x at k = 100; 24 terms 0.7x.
_PRUNE_UP_TO = (
    (1 << 19, ((10, 8.0), (100, 5.0), (1000, 2.0))),
    (_BLOCKS_FROM, ((10, 3.0), (100, 1.0))),
    (0, ((10, 4.0), (100, 4.0))),
)
_WINDOW_BITS = 10  # the pruned kernel's windows: 1024 documents


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


def _replace_smallest_source(values, where, size, value, doc):  # pragma: no cover - compiled by numba
    """Replace the heap's smallest value (its root) with ``value`` of ``doc``, as heapq's
    ``heapreplace`` does: the hole sifted down to a leaf by the smaller child (the extra +inf slot
    stands for a missing right child), then ``value`` risen from there."""
    zero, one = np.uint64(0), np.uint64(1)
    pos = zero
    child = one
    while child < size:
        child += np.uint64(values[child + one] < values[child])
        values[pos] = values[child]
        where[pos] = where[child]
        pos = child
        child = pos + pos + one
    _rise(values, where, np.int64(pos), value, doc)


_replace_smallest = njit(nogil=True, inline="always")(_replace_smallest_source)


def _ranked_source(values, where, k, scores_row, docs_row):  # pragma: no cover - compiled by numba
    """The heap's ``k`` hits into one row, best first, as bm25s sorts them (numba's argsort,
    ascending, read backwards); how many score above zero."""
    order = np.argsort(values[:k])
    count = 0
    for r in range(k):
        x = order[k - 1 - r]
        scores_row[r] = values[x]
        docs_row[r] = where[x]
        if values[x] > 0:
            count += 1
    return count


_ranked = njit(nogil=True, inline="always")(_ranked_source)


def _kept_source(ids, start, p, q, term, long_query, dedupe, seen):  # pragma: no cover - compiled by numba
    """Whether query position ``p`` (term ``term`` of query ``q``, which starts at ``start``) is
    scored: not an unknown term or stopword (negative), and with ``dedupe`` not a repeat of an
    earlier term of the query (a long query marks its terms in ``seen``, a short one looks back)."""
    if term < 0:
        return False
    if long_query:
        if seen[term] == q:
            return False
        seen[term] = q
        return True
    if dedupe:
        for earlier in range(start, p):
            if ids[earlier] == term:
                return False
    return True


_kept = njit(nogil=True, inline="always")(_kept_source)


def _accumulate_source(ids, start, end, q, dedupe, seen, blocks, touched, scores, data, indptr, indices,
                       absent, floor):  # pragma: no cover - compiled by numba
    """Query ``q`` (``ids[start:end]``) summed into ``scores``: each kept term's column added
    (float32, term by term in query order, each column in posting order), and with ``blocks``
    each touched document's bit set in its block's word of ``touched``. Returns ``floor`` plus
    the kept terms' scores of absence (bm25l, bm25+; ``absent`` empty: ``floor`` as it is), and
    the table of repeats ``seen`` (made here when a long query first needs it)."""
    one = np.uint64(1)
    long_query = dedupe and end - start > 64
    if long_query and not len(seen):
        seen = np.full(len(indptr) - 1, -1, dtype=np.int64)
    scored_absent = len(absent) > 0
    for p in range(start, end):
        term = ids[p]
        if not _kept(ids, start, p, q, term, long_query, dedupe, seen):
            continue
        if scored_absent:
            floor += absent[term]
        for j in range(indptr[term], indptr[term + 1]):
            doc = indices[j]
            scores[doc] += data[j]
            if blocks:
                touched[doc >> 6] |= one << np.uint64(doc & 63)
    return floor, seen


_accumulate = njit(nogil=True, inline="always")(_accumulate_source)


def _scan_touched_source(scores, touched, values, where, size, k, num_docs):  # pragma: no cover - compiled by numba
    """The heap's scan from document ``k`` on, in corpus order, when no score of absence is
    added (an untouched document scores 0): while the heap's smallest value is not below 0, a
    block's untouched documents can do nothing there, so only its touched ones (``touched``'s
    set bits, lowest first) are offered; while it is below 0 (a negative score among the first
    ``k``), every document of the block in turn, as the plain scan. Touched documents' scores
    are reset to 0 and their bits cleared on the way (documents below ``k`` too)."""
    one, zero = np.uint64(1), np.uint64(0)
    for block in range(len(touched)):
        word = touched[block]
        if word == zero and values[0] >= 0:
            continue
        touched[block] = zero
        low = block << 6
        if values[0] < 0:
            for d in range(max(low, k), min(low + 64, num_docs)):
                value = scores[d]
                if value > values[0]:
                    _replace_smallest(values, where, size, value, d)
            scores[low:min(low + 64, num_docs)] = 0
            continue
        while word != zero:
            d = low + trailing_zeros(word)
            word &= word - one
            value = scores[d]
            scores[d] = 0
            if d >= k and value > values[0]:
                _replace_smallest(values, where, size, value, d)


_scan_touched = njit(nogil=True, inline="always")(_scan_touched_source)


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
    # In a large corpus, blocks of 64 documents, each a 64-bit word with a bit set for every
    # document a query touched: the heap's scan skips the others, whose documents all score 0
    # (with absence scores: the floor) and so cannot enter a heap whose smallest value is not
    # below that (bm25s's heap with them would do nothing); only touched documents are reset.
    # In a small one a query touches nearly every block: marking would only cost.
    touched = np.zeros((num_docs + 63) >> 6 if blocks else 0, dtype=np.uint64)
    sparse = blocks and not len(absent)  # the scan visits a block's touched documents only
    values = np.empty(k + 1, dtype=data.dtype)
    where = np.zeros(k + 1, dtype=np.int32)
    values[k] = np.inf
    size = np.uint64(k)
    scored_absent = len(absent) > 0
    nothing = np.zeros(1, dtype=data.dtype)[0]
    for q in range(n):
        start, end = pointers[q], pointers[q + 1]
        # bm25l, bm25+: the sum of the query's terms' scores of absence (float32, in term
        # order, as numba sums bm25s's array of them), added to every document's score
        floor, seen = _accumulate(ids, start, end, q, dedupe, seen, blocks, touched, scores, data, indptr, indices,
                                  absent, nothing)
        # The first k documents pushed.
        if scored_absent:
            for d in range(num_docs):
                scores[d] += floor
        for length in range(k):
            _rise(values, where, length, scores[length], length)
        # Every later document above the smallest replaces it: the smaller child moves up all
        # the way to a leaf, then the new value moves up while below its parent.
        if sparse:
            _scan_touched(scores, touched, values, where, size, k, num_docs)
            positive[q] = _ranked(values, where, k, top_scores[q], top_docs[q])
            continue
        block_start = k
        while block_start < num_docs:
            block_end = min(((block_start >> 6) + 1) << 6, num_docs)
            if blocks and not touched[block_start >> 6] and values[0] >= floor:
                block_start = block_end
                continue
            for d in range(block_start, block_end):
                value = scores[d]
                if value > values[0]:
                    _replace_smallest(values, where, size, value, d)
            block_start = block_end
        if not blocks or scored_absent:
            scores[:] = 0
        for block in range(len(touched)):
            if touched[block]:
                scores[block << 6:min((block + 1) << 6, num_docs)] = 0
                touched[block] = 0
        positive[q] = _ranked(values, where, k, top_scores[q], top_docs[q])
    return top_docs, top_scores, positive


def _seek_source(indices, p, e, d):  # pragma: no cover - compiled by numba
    """The first position from ``p`` (below ``e``) whose document is not below ``d``:
    galloping, then halving."""
    if p >= e or indices[p] >= d:
        return p
    step = 1
    while p + step < e and indices[p + step] < d:
        p += step
        step <<= 1
    lo, hi = p + 1, min(p + step, e)
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < d:
            lo = mid + 1
        else:
            hi = mid
    return lo


_seek = njit(nogil=True, inline="always")(_seek_source)


def _window_maxima_source(data, indptr, indices, bits):  # pragma: no cover - compiled by numba
    """For each term, the windows of ``2**bits`` documents its column reaches and its largest
    score in each: (pointers per term, window numbers, maxima), a CSR of the block maxima."""
    n_terms = len(indptr) - 1
    counts = np.zeros(n_terms + 1, dtype=np.int64)
    for term in range(n_terms):
        last = -1
        for j in range(indptr[term], indptr[term + 1]):
            w = indices[j] >> bits
            if w != last:
                counts[term + 1] += 1
                last = w
    pointers = np.cumsum(counts)
    windows = np.empty(pointers[-1], dtype=np.int32)
    maxima = np.empty(pointers[-1], dtype=data.dtype)  # a float32 score's maximum is one of them
    for term in range(n_terms):
        slot = pointers[term] - 1
        last = -1
        for j in range(indptr[term], indptr[term + 1]):
            w = indices[j] >> bits
            if w != last:
                slot += 1
                windows[slot] = w
                maxima[slot] = data[j]
                last = w
            elif data[j] > maxima[slot]:
                maxima[slot] = data[j]
    return pointers, windows, maxima


def _pruned_source(ids, pointers, k, dedupe, data, indptr, indices, num_docs,
                   wpointers, wnumbers, wmaxima, bits):  # pragma: no cover - compiled by numba
    """The exhaustive kernel's results, bit for bit, window by window (see the module):
    documents in corpus order, in windows of ``2**bits``; a window whose terms' largest scores
    together cannot beat the heap's smallest value is passed over (the exhaustive kernel's heap
    does nothing with its documents), every other one is scored as the exhaustive kernel scores
    (float32, term by term in query order) into a small buffer and its touched documents offered
    to the same heap in the same order. Needs every score >= 0 and no scores of absence;
    ``wpointers, wnumbers, wmaxima`` are the terms' largest scores per window
    (:func:`_window_maxima_source`)."""
    n = len(pointers) - 1
    k = min(k, num_docs)
    top_scores = np.zeros((n, k), dtype=data.dtype)
    top_docs = np.zeros((n, k), dtype=np.int32)
    positive = np.zeros(n, dtype=np.int64)
    seen = np.empty(0, dtype=np.int64)
    values = np.empty(k + 1, dtype=data.dtype)
    where = np.zeros(k + 1, dtype=np.int32)
    values[k] = np.inf
    size = np.uint64(k)
    nothing = np.zeros(1, dtype=data.dtype)[0]
    longest = 1
    for q in range(n):
        longest = max(longest, pointers[q + 1] - pointers[q])
    pos = np.empty(longest, dtype=np.int64)  # each term's cursor in its column
    end = np.empty(longest, dtype=np.int64)
    wpos = np.empty(longest, dtype=np.int64)  # each term's cursor in its window maxima
    wend = np.empty(longest, dtype=np.int64)
    width = 1 << bits
    scores = np.zeros(width, dtype=data.dtype)  # a window's scores (a few KiB: the core's own cache)
    touched = np.zeros(max(width >> 6, 1), dtype=np.uint64)  # a bit per touched document
    one, zero = np.uint64(1), np.uint64(0)
    beyond = np.int64(1) << 62
    for q in range(n):
        start, stop = pointers[q], pointers[q + 1]
        # The query's terms as the exhaustive kernel takes them (negatives, repeats skipped).
        long_query = dedupe and stop - start > 64
        if long_query and not len(seen):
            seen = np.full(len(indptr) - 1, -1, dtype=np.int64)
        t = 0
        for p in range(start, stop):
            term = ids[p]
            if not _kept(ids, start, p, q, term, long_query, dedupe, seen):
                continue
            pos[t] = indptr[term]
            end[t] = indptr[term + 1]
            wpos[t] = wpointers[term]
            wend[t] = wpointers[term + 1]
            t += 1
        # A float32 sum of t scores >= 0, term by term, exceeds the real sum by a factor below
        # (1 + 2**-24) ** t; a float64 sum of bounds falls short of theirs by far less. A window
        # whose float64 bound times `slack` is not above the heap's smallest value is passed over.
        slack = 1.0 + (t + 2) * 2.0 ** -22
        # The first k documents are pushed whatever their score, as the exhaustive kernel does.
        for d in range(k):
            value = nothing
            for i in range(t):
                p = pos[i]
                if p < end[i] and indices[p] == d:
                    value += data[p]
                    pos[i] = p + 1
            _rise(values, where, d, value, d)
        w0 = k
        while w0 < num_docs:
            # The next window some term reaches, and its bound: the sum of those terms' maxima.
            window = w0 >> bits
            reached = beyond
            bound = 0.0
            for i in range(t):
                wp = wpos[i]
                while wp < wend[i] and wnumbers[wp] < window:
                    wp += 1
                wpos[i] = wp
                if wp < wend[i]:
                    w = np.int64(wnumbers[wp])
                    if w < reached:
                        reached, bound = w, 0.0
                    if w == reached:
                        bound += wmaxima[wp]
            if reached == beyond:  # no term has a document left
                break
            if reached > window:
                w0 = reached << bits
            w1 = min((reached + 1) << bits, num_docs)
            if bound * slack <= np.float64(values[0]):  # none of its documents can enter the heap
                w0 = w1
                continue
            for i in range(t):  # query order: each document's sum as the exhaustive kernel's
                p, e = _seek(indices, pos[i], end[i], w0), end[i]
                while p < e:
                    doc = indices[p]
                    if doc >= w1:
                        break
                    j = doc - w0
                    scores[j] += data[p]
                    touched[j >> 6] |= one << np.uint64(j & 63)
                    p += 1
                pos[i] = p
            for block in range((w1 - w0 + 63) >> 6):
                word = touched[block]
                if word == zero:
                    continue
                touched[block] = zero
                while word != zero:
                    j = (block << 6) + trailing_zeros(word)
                    word &= word - one
                    value = scores[j]
                    scores[j] = 0
                    if value > values[0]:
                        _replace_smallest(values, where, size, value, w0 + j)
            w0 = w1
        positive[q] = _ranked(values, where, k, top_scores[q], top_docs[q])
    return top_docs, top_scores, positive


def compiled():
    """The exhaustive kernel, compiled on first use."""
    return _compiled(_source)


def compiled_pruned():
    """The pruned kernel (block-max windows), compiled on first use."""
    return _compiled(_pruned_source)


PRUNE = ("auto", "on", "off")


def prunable(matrix) -> bool:
    """Whether the pruned kernel can answer over ``matrix``: no scores of absence (bm25l, bm25+)
    and no score below 0 (lexir's lucene, robertson and atire matrices never have one)."""
    return matrix.nonoccurrence is None and window_maxima(matrix) is not None


def pruning_pays(matrix, k: int, terms_per_query: float = 0.0) -> bool:
    """``prune="auto"``'s choice, from measurements (benchmarks/bench_pruning.py): prune a batch
    of short queries (``terms_per_query``: their known terms on average) at small ``k``, the
    limits depending on the corpus's size (``_PRUNE_UP_TO``); never long questions, whose many
    terms reach nearly every window (measured slower)."""
    limits = next(rule for least, rule in _PRUNE_UP_TO if matrix.num_docs >= least)
    short = any(k <= most_k and terms_per_query <= most_terms for most_k, most_terms in limits)
    return short and prunable(matrix)


def window_maxima(matrix):
    """The terms' largest scores per window of ``2**_WINDOW_BITS`` documents (pointers per term,
    window numbers, maxima, the bits), or None where some score is below 0; computed once per
    matrix (a matrix is read only once built) and kept on it, unless the saved index brought them
    (:meth:`ScoreMatrix.load <lexir.retrieval.bm25_matrix.ScoreMatrix.load>`) for these bits."""
    kept = getattr(matrix, "ceilings", None)
    if kept is not None and kept[0] == _WINDOW_BITS:
        return kept[1]
    data = np.asarray(matrix.data)
    bounds = None
    if not len(data) or data.min() >= 0:
        maxima = _compiled(_window_maxima_source)
        bounds = (*maxima(data, np.asarray(matrix.indptr), np.asarray(matrix.indices), _WINDOW_BITS),
                  _WINDOW_BITS)
    try:
        matrix.ceilings = (_WINDOW_BITS, bounds)
    except AttributeError:  # a matrix-like object without the slot: computed each time
        pass
    return bounds


def top_k(matrix, ids: np.ndarray, pointers: np.ndarray, k: int,
          dedupe: bool = False, prune: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(document numbers, scores, positive) for each query of a batch, best first, over a
    :class:`~lexir.retrieval.bm25_matrix.ScoreMatrix`, as bm25s's ``retrieve`` finds them;
    ``positive[i]`` of row ``i``'s scores are above zero. Query ``i`` is the term ids
    ``ids[pointers[i]:pointers[i + 1]]``, negative ids skipped, and with ``dedupe`` a term's
    repeats within its query.

    ``prune``: ``"off"`` scores every posting (the exhaustive kernel); ``"on"`` uses the pruned
    kernel (block-max windows) wherever :func:`prunable` (else the exhaustive one); ``"auto"`` where it
    pays (:func:`pruning_pays`). Both give the same results, bit for bit, ties included."""
    if prune not in PRUNE:
        raise ValueError(f"prune={prune!r}: valid: {', '.join(PRUNE)}")
    num_docs = matrix.num_docs
    ids, pointers, k = np.asarray(ids, dtype=np.int64), np.asarray(pointers, dtype=np.int64), int(k)
    if prune == "on" and prunable(matrix) or prune == "auto" and pruning_pays(
            matrix, k, np.count_nonzero(ids >= 0) / max(len(pointers) - 1, 1)):
        return compiled_pruned()(ids, pointers, k, bool(dedupe), matrix.data, matrix.indptr, matrix.indices,
                                 num_docs, *window_maxima(matrix))
    absent = matrix.nonoccurrence if matrix.nonoccurrence is not None else _NO_ABSENCE
    return compiled()(ids, pointers, k, bool(dedupe),
                      num_docs >= _BLOCKS_FROM, matrix.data, matrix.indptr, matrix.indices, num_docs,
                      np.asarray(absent, dtype=matrix.data.dtype))


_NO_ABSENCE = np.zeros(0, dtype=np.float32)
