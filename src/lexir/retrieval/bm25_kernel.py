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

Dynamic pruning (``prune``; :func:`_pruned_source`): block-max MaxScore, giving the exhaustive
kernel's results bit for bit, ties and order included. The exhaustive kernel's heap does
something only with a document scoring above its smallest value at that point; so the pruned
kernel walks the documents in the same corpus order, pushes the first ``k`` as it does, and
afterwards passes over a document only when an upper bound of its score is not above the heap's
smallest value (where the exhaustive heap does nothing with it); every other document gets its
exact score, summed as the exhaustive kernel sums it (float32, term by term in query order, from
0), and goes through the same heap steps. The heap thus sees the same documents with the same
scores in the same order, and ends, and sorts, the same. Bounds: each term's largest score in
each window of ``2**_WINDOW_BITS`` documents (computed once per matrix); in a window, the terms
with the smallest maxima whose sum cannot beat the heap's smallest value are "non-essential",
the others' postings are summed per document (float64), and a document's bound is that sum plus
the non-essential maxima, refined by looking its non-essential scores up one by one (galloping
search). The bounds are summed in float64 and multiplied by ``1 + (t + 2) * 2**-22`` for ``t``
terms before being compared, which covers the float32 sum's rounding (a sequential float32 sum
of ``t`` scores >= 0 exceeds their real sum by a factor below ``(1 + 2**-24) ** t``). Pruning
needs every score >= 0 and no scores of absence (bm25l, bm25+ are scored exhaustively).
Measured (benchmarks/bench_pruning.py), it pays only for one-word queries, small ``k`` and
large corpora: ``prune="auto"`` (the default) chooses it there (:func:`pruning_pays`).
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
# prune="auto" prunes from this corpus size on, batches of queries with at most these many
# known terms on average at these k. Measured on 961k German units (bench_pruning.py) against
# the exhaustive kernel's scan of whole touched blocks: k = 10 with 1 to 8 terms 1.35 to 2.4
# times as fast, k = 100 0.86 to 1.18, long questions (57 terms) 0.4 to 0.5; on 107k articles
# 0.2 to 0.9. Since the exhaustive scan visits only touched documents (bit per document), on
# the 961k units' titles at k = 10: 1 term 1.6x as fast pruned, 2 terms 0.76x, 3 terms 0.74x,
# 4-5 terms 0.95x; at k = 100 0.5x to 0.7x (a busy machine, one thread): only one-word batches.
_PRUNE_FROM = 1 << 19
_PRUNE_UP_TO = ((10, 1.5),)
_WINDOW_BITS = 13  # the pruned kernel's windows: 8192 documents


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
    maxima = np.empty(pointers[-1], dtype=np.float64)
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
    """The exhaustive kernel's results, bit for bit, by block-max MaxScore (see the module):
    documents in corpus order, each either scored exactly (float32, term by term in query order)
    and offered to the same heap, or passed over because a bound shows it cannot beat the heap's
    smallest value (where the exhaustive kernel's heap does nothing with it). Needs every score
    >= 0 and no scores of absence; ``wpointers, wnumbers, wmaxima`` are the terms' largest
    scores per window of ``2**bits`` documents (:func:`_window_maxima_source`)."""
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
    longest = 0
    for q in range(n):
        longest = max(longest, pointers[q + 1] - pointers[q])
    pos = np.empty(longest, dtype=np.int64)  # each term's cursor in its column, for summing
    look = np.empty(longest, dtype=np.int64)  # ... and for looking documents up
    end = np.empty(longest, dtype=np.int64)
    wpos = np.empty(longest, dtype=np.int64)  # each term's cursor in its window maxima
    wend = np.empty(longest, dtype=np.int64)
    bound = np.empty(longest, dtype=np.float64)  # each term's largest score in the window
    order = np.empty(longest, dtype=np.int64)  # query positions by bound, smallest first
    below = np.empty(longest + 1, dtype=np.float64)  # below[m]: sum of the m smallest bounds
    width = 1 << bits
    acc = np.zeros(width, dtype=np.float64)  # a window's sums of essential scores
    marks = np.zeros(max(width >> 6, 1), dtype=np.bool_)  # its blocks of 64 with a sum
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
        # (1 + 2**-24) ** t; a float64 sum of bounds falls short of theirs by far less. A document
        # whose float64 bound times `slack` is not above the heap's smallest value cannot enter it.
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
        look[:t] = pos[:t]
        threshold = np.float64(values[0])
        # Block-max MaxScore over windows of documents, as Lucene's MaxScoreBulkScorer: in each
        # window, the terms whose window maxima together cannot lift a document above the
        # heap's smallest value (the `m` smallest, "non-essential") find no documents; the
        # others' postings are summed into `acc` (float64); a document whose sum plus the
        # non-essential maxima cannot beat the smallest value is passed over, the others look
        # up their non-essential scores (galloping search, given up as soon as the bound fails),
        # and only a document still in the running is scored exactly and offered to the heap.
        w0 = k
        while w0 < num_docs:
            window = w0 >> bits
            w1 = min((window + 1) << bits, num_docs)
            for i in range(t):
                wp = wpos[i]
                while wp < wend[i] and wnumbers[wp] < window:
                    wp += 1
                wpos[i] = wp
                bound[i] = wmaxima[wp] if wp < wend[i] and wnumbers[wp] == window else 0.0
            order[:t] = np.argsort(bound[:t])
            below[0] = 0.0
            for r in range(t):
                below[r + 1] = below[r] + bound[order[r]]
            m = 0
            while m < t and below[m + 1] * slack <= threshold:
                m += 1
            if m == t:  # no document of the window can enter the heap
                w0 = w1
                continue
            for r in range(m, t):
                i = order[r]
                p, e = _seek(indices, pos[i], end[i], w0), end[i]
                while p < e:
                    doc = indices[p]
                    if doc >= w1:
                        break
                    acc[doc - w0] += data[p]
                    marks[(doc - w0) >> 6] = True
                    p += 1
                pos[i] = p
            for block in range((w1 - w0 + 63) >> 6):
                if not marks[block]:
                    continue
                marks[block] = False
                for j in range(block << 6, min((block + 1) << 6, w1 - w0)):
                    partial = acc[j]
                    if partial == 0.0:  # its bound below[m] cannot beat the smallest value
                        continue
                    acc[j] = 0.0
                    if (partial + below[m]) * slack <= threshold:
                        continue
                    d = w0 + j
                    live = True
                    for r in range(m - 1, -1, -1):
                        i = order[r]
                        p = _seek(indices, look[i], end[i], d)
                        look[i] = p
                        if p < end[i] and indices[p] == d:
                            partial += data[p]
                        if (partial + below[r]) * slack <= threshold:
                            live = False
                            break
                    if not live:
                        continue
                    value = nothing
                    for i in range(t):  # the exhaustive kernel's sum: float32, in query order
                        p = _seek(indices, look[i], end[i], d)
                        look[i] = p
                        if p < end[i] and indices[p] == d:
                            value += data[p]
                    if value > values[0]:
                        _replace_smallest(values, where, size, value, d)
                        threshold = np.float64(values[0])
            w0 = w1
        positive[q] = _ranked(values, where, k, top_scores[q], top_docs[q])
    return top_docs, top_scores, positive


def compiled():
    """The exhaustive kernel, compiled on first use."""
    return _compiled(_source)


def compiled_pruned():
    """The pruned kernel (MaxScore), compiled on first use."""
    return _compiled(_pruned_source)


PRUNE = ("auto", "on", "off")


def prunable(matrix) -> bool:
    """Whether the pruned kernel can answer over ``matrix``: no scores of absence (bm25l, bm25+)
    and no score below 0 (lexir's lucene, robertson and atire matrices never have one)."""
    return matrix.nonoccurrence is None and _bounds(matrix) is not None


def pruning_pays(matrix, k: int, terms_per_query: float = 0.0) -> bool:
    """``prune="auto"``'s choice, from measurements (benchmarks/bench_pruning.py): prune a batch
    of short queries (``terms_per_query``: their known terms on average) at small ``k`` over a
    large corpus (``_PRUNE_FROM``, ``_PRUNE_UP_TO``), where it was faster; never long questions,
    whose many terms leave most documents in the running (measured slower)."""
    short = any(k <= most_k and terms_per_query <= most_terms for most_k, most_terms in _PRUNE_UP_TO)
    return matrix.num_docs >= _PRUNE_FROM and short and prunable(matrix)


def _bounds(matrix):
    """The terms' largest scores per window of ``2**_WINDOW_BITS`` documents (pointers, window
    numbers, maxima), or None where some score is below 0; computed once per matrix (a matrix
    is read only once built) and kept on it."""
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
    kernel (MaxScore) wherever :func:`prunable` (else the exhaustive one); ``"auto"`` where it
    pays (:func:`pruning_pays`). Both give the same results, bit for bit, ties included."""
    if prune not in PRUNE:
        raise ValueError(f"prune={prune!r}: valid: {', '.join(PRUNE)}")
    num_docs = matrix.num_docs
    ids, pointers, k = np.asarray(ids, dtype=np.int64), np.asarray(pointers, dtype=np.int64), int(k)
    if prune == "on" and prunable(matrix) or prune == "auto" and pruning_pays(
            matrix, k, np.count_nonzero(ids >= 0) / max(len(pointers) - 1, 1)):
        return compiled_pruned()(ids, pointers, k, bool(dedupe), matrix.data, matrix.indptr, matrix.indices,
                                 num_docs, *_bounds(matrix))
    absent = matrix.nonoccurrence if matrix.nonoccurrence is not None else _NO_ABSENCE
    return compiled()(ids, pointers, k, bool(dedupe),
                      num_docs >= _BLOCKS_FROM, matrix.data, matrix.indptr, matrix.indices, num_docs,
                      np.asarray(absent, dtype=matrix.data.dtype))


_NO_ABSENCE = np.zeros(0, dtype=np.float32)
