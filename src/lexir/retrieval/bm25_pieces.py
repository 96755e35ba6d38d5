"""A BM25 build's analysis of a corpus: documents -> the ids of their terms, compiled.

An :class:`~lexir.analysis.Analyzer` splits folded text into pieces
(:meth:`~lexir.analysis.Analyzer.pieces`: the UTF-8 bytes between ASCII characters that are not
letters or digits), and a piece is nearly always one token. A build meets each distinct piece
many times (German federal law: 290k distinct pieces, 17.7 million in all), so it analyses each
once and looks the rest up. Here the look-up is numba's: a batch of documents' folded text goes
to :func:`_scan_source` as one byte array, which splits it into pieces and finds each in a
:class:`PieceTable` (an open-addressing hash table over numpy arrays, a piece's bytes compared
in full: exact, whatever the hashes). A piece not yet in the table is added there, pending; once
the batch is scanned, Python analyses the new pieces in the order they first occurred (so term
ids are handed out as the terms first occur) and :func:`_settle_source` puts their ids in place,
drops stopwords and counts each document's terms.

A piece's value: a term id (>= 0); :data:`STOP` for a piece of no term (a stopword, "§");
``-2 - i`` for a piece of several terms (``several[i]``, replaced once every document is read,
by :func:`expanded`); :data:`PENDING` ``- k`` while the ``k``-th new piece of a batch awaits its
analysis.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from itertools import chain

import numpy as np

from lexir.analysis import Analyzer
from lexir.analysis.analyzer import PIECE_BYTES
from lexir.kernels import compiled
from lexir.types import Document

STOP = -1
PENDING = -(1 << 30)
_BATCH_BYTES = 1 << 20  # folded text scanned per call (1 MiB)


def _scan_source(buf, starts, ends, table, hashes, offsets, lengths, values, arena, state, out, doc_ends,
                 pending, keep):  # pragma: no cover - compiled by numba
    """Scan documents ``starts[d]:ends[d]`` of ``buf``, from byte ``state[5]`` of document
    ``state[3]`` on: each piece's value (see the module) goes to ``out`` (stopwords too:
    :func:`_settle_source` drops them), where each document's values end to ``doc_ends``; a piece
    not in the table is added (its bytes to ``arena``, value ``PENDING - k``, its slot to
    ``pending[k]``). Where a new piece would fill the table past 5/8 or overflow the arena, it
    stops at that piece (``state[3]``, ``state[5]``; ``state[6]`` its length): the caller grows
    them and calls again. ``state``: arena bytes used, pieces in the table, pending pieces, the
    document and byte to go on from (-1: the document's start), values out, the length wanted.
    ``keep``: the bits of each hash kept (all 64 but in a test that makes pieces collide)."""
    mask = hashes.size - 1
    used, count, n_pending, n_out = state[0], state[1], state[2], state[4]
    d, resume = state[3], state[5]
    while d < starts.size:
        b = ends[d]
        i = starts[d] if resume < 0 else resume
        resume = -1
        while i < b:
            if table[buf[i]] == 32:
                i += 1
                continue
            start = i
            h = np.uint64(14695981039346656037)  # FNV-1a, 64 bits
            while i < b and table[buf[i]] != 32:
                h = (h ^ np.uint64(buf[i])) * np.uint64(1099511628211)
                i += 1
            h &= keep
            size = i - start
            slot = np.int64(h & np.uint64(mask))
            while True:
                off = offsets[slot]
                if off < 0:  # a new piece
                    if (count + 1) * 8 > hashes.size * 5 or used + size > arena.size:
                        state[0], state[1], state[2], state[3], state[4] = used, count, n_pending, d, n_out
                        state[5], state[6] = start, size
                        return
                    hashes[slot] = h
                    offsets[slot] = used
                    lengths[slot] = size
                    arena[used:used + size] = buf[start:i]
                    used += size
                    values[slot] = PENDING - n_pending
                    pending[n_pending] = slot
                    n_pending += 1
                    count += 1
                    break
                if hashes[slot] == h and lengths[slot] == size:  # the same hash: the same bytes?
                    same = True
                    for j in range(size):
                        if arena[off + j] != buf[start + j]:
                            same = False
                            break
                    if same:
                        break
                slot = (slot + 1) & mask
            out[n_out] = values[slot]
            n_out += 1
        doc_ends[d] = n_out
        d += 1
    state[0], state[1], state[2], state[3], state[4] = used, count, n_pending, d, n_out
    state[5], state[6] = -1, 0


def _settle_source(out, n_out, doc_ends, n_docs, resolved, kept):  # pragma: no cover - compiled by numba
    """``out[:n_out]`` with each pending value replaced by ``resolved[k]`` and stopwords dropped,
    written to ``kept`` (returns how many), and ``doc_ends`` turned into each document's length."""
    w = 0
    r = 0
    for d in range(n_docs):
        begin = w
        while r < doc_ends[d]:
            v = out[r]
            r += 1
            if v <= PENDING:
                v = resolved[PENDING - v]
            if v != STOP:
                kept[w] = v
                w += 1
        doc_ends[d] = w - begin
    return w


def _rehash_source(hashes, offsets, lengths, values, new_hashes, new_offsets, new_lengths,
                   new_values, pending, n_pending):  # pragma: no cover - compiled by numba
    """Every piece of a table into a larger one (``pending`` follows its pieces' slots)."""
    mask = new_hashes.size - 1
    moved = np.empty(hashes.size, dtype=np.int64)
    for s in range(hashes.size):
        if offsets[s] < 0:
            continue
        slot = np.int64(hashes[s] & np.uint64(mask))
        while new_offsets[slot] >= 0:
            slot = (slot + 1) & mask
        new_hashes[slot], new_offsets[slot] = hashes[s], offsets[s]
        new_lengths[slot], new_values[slot] = lengths[s], values[s]
        moved[s] = slot
    for k in range(n_pending):
        pending[k] = moved[pending[k]]


class PieceTable:
    """Distinct pieces -> values, for :func:`_scan_source`: slots of (hash, offset of the piece's
    bytes in ``arena``, length, value), at most 5/8 full (linear probing). ``hash_bits``: the
    bits of each piece's hash kept (64; fewer only in a test, so that pieces of the same length
    share a hash and are told apart by their bytes)."""

    def __init__(self, capacity: int = 1 << 16, arena: int = 1 << 20, hash_bits: int = 64) -> None:
        self.keep = np.uint64((1 << hash_bits) - 1)
        self.hashes = np.zeros(capacity, dtype=np.uint64)
        self.offsets = np.full(capacity, -1, dtype=np.int64)
        self.lengths = np.zeros(capacity, dtype=np.int32)
        self.values = np.zeros(capacity, dtype=np.int32)
        self.arena = np.empty(arena, dtype=np.uint8)

    def grow(self, state: np.ndarray, pending: np.ndarray, need_bytes: int) -> None:
        """Room for one more piece, of ``need_bytes`` bytes (``state``: see :func:`_scan_source`)."""
        while (int(state[1]) + 1) * 8 > self.hashes.size * 5:
            size = self.hashes.size * 2
            grown = (np.zeros(size, dtype=np.uint64), np.full(size, -1, dtype=np.int64),
                     np.zeros(size, dtype=np.int32), np.zeros(size, dtype=np.int32))
            compiled(_rehash_source)(self.hashes, self.offsets, self.lengths, self.values, *grown,
                                                  pending, int(state[2]))
            self.hashes, self.offsets, self.lengths, self.values = grown
        if int(state[0]) + need_bytes > self.arena.size:
            arena = np.empty(max(self.arena.size * 2, int(state[0]) + need_bytes), dtype=np.uint8)
            arena[: int(state[0])] = self.arena[: int(state[0])]
            self.arena = arena

    def piece(self, slot: int) -> bytes:
        off = int(self.offsets[slot])
        return self.arena[off: off + int(self.lengths[slot])].tobytes()


class PieceIds:
    """A build's pieces -> term ids (``term_id`` hands out the next id to a new term), with the
    ids of pieces of several terms in ``several`` (see the module). ``keep_forms``: the
    analyzer caches the forms of the words it meets (for the questions it will analyse next)."""

    def __init__(self, analyzer: Analyzer, term_id: Callable[[str], int], keep_forms: bool = True) -> None:
        self.analyzer, self.term_id, self.keep = analyzer, term_id, keep_forms
        self.several: list[tuple[int, ...]] = []

    def value(self, piece: bytes) -> int:
        term, keep = self.analyzer.indexed_term, self.keep
        ids = [self.term_id(t) for t in (term(token, keep) for token in self.analyzer.piece_tokens(piece))
               if t is not None]
        if len(ids) == 1:
            return ids[0]
        if ids:
            self.several.append(tuple(ids))
            return -1 - len(self.several)
        return STOP


def analysed_pieces(corpus: Iterable[Document], analyzer: Analyzer, title_weight: int, pieces: PieceIds,
                    progress: Callable[[int], None] | None = None) -> tuple[array, array]:
    """Every document's term ids (``title_weight`` times its title's, then its text's; pieces of
    several terms as placeholders), concatenated, and the documents' lengths."""
    term_ids, lengths = array("i"), array("q")
    table = PieceTable()
    state = np.zeros(7, dtype=np.int64)
    scan, settle = compiled(_scan_source), compiled(_settle_source)
    byte_table = np.frombuffer(PIECE_BYTES, dtype=np.uint8)
    folded = analyzer.folded_bytes
    titles: dict[str, bytes] = {}  # title -> its folded bytes, repeated title_weight times

    def flush(parts: list[bytes]) -> None:
        buf = np.frombuffer(b" ".join(parts), dtype=np.uint8)
        sizes = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
        ends = np.cumsum(sizes + 1) - 1
        starts = ends - sizes
        n_docs = len(parts)
        # a document of n bytes has at most (n + 1) // 2 pieces
        out = np.empty((buf.size + 1) // 2 + 1, dtype=np.int32)
        doc_ends = np.empty(n_docs, dtype=np.int64)
        pending = np.empty(out.size, dtype=np.int64)
        state[2:] = 0
        state[5] = -1
        while True:
            scan(buf, starts, ends, byte_table, table.hashes, table.offsets, table.lengths, table.values,
                 table.arena, state, out, doc_ends, pending, table.keep)
            if int(state[3]) == n_docs:
                break
            table.grow(state, pending, int(state[6]))
        n_pending = int(state[2])
        # the new pieces analysed in the order they first occurred: term ids in order of first occurrence
        resolved = np.empty(max(n_pending, 1), dtype=np.int32)
        for k in range(n_pending):
            slot = int(pending[k])
            resolved[k] = table.values[slot] = pieces.value(table.piece(slot))
        n_kept = settle(out, int(state[4]), doc_ends, n_docs, resolved, out)
        term_ids.frombytes(out[:n_kept].tobytes())
        lengths.frombytes(doc_ends.tobytes())
        if progress:
            progress(n_docs)

    parts: list[bytes] = []
    size = 0
    for doc in corpus:
        text = folded(doc.text)
        if doc.title and title_weight > 0:
            head = titles.get(doc.title)
            if head is None:
                head = titles[doc.title] = b" ".join([folded(doc.title)] * title_weight)
            text = head + b" " + text
        parts.append(text)
        size += len(text)
        if size >= _BATCH_BYTES:
            flush(parts)
            parts, size = [], 0
    if parts:
        flush(parts)
    return term_ids, lengths


def _expand_source(ids, n, starts, parts):  # pragma: no cover - compiled by numba
    """``ids[:n]`` with every placeholder ``-2 - i`` replaced by ``parts[starts[i]:starts[i + 1]]``,
    written into ``ids`` itself from its end (which the placeholders' extra terms lengthened)."""
    w = ids.size
    for r in range(n - 1, -1, -1):
        v = ids[r]
        if v >= 0:
            w -= 1
            ids[w] = v
        else:
            i = -2 - v
            for p in range(starts[i + 1] - 1, starts[i] - 1, -1):
                w -= 1
                ids[w] = parts[p]


def expanded(term_ids: array, lengths: np.ndarray, several: list[tuple[int, ...]]) -> np.ndarray:
    """The term ids with each placeholder of a piece of several terms replaced by them, in place
    (``term_ids`` grows by the extra terms), and ``lengths`` counting them."""
    n = len(term_ids)
    ids = np.frombuffer(term_ids, dtype=np.int32)
    where = np.flatnonzero(ids < STOP)
    sizes = np.fromiter(map(len, several), dtype=np.int64, count=len(several))
    extra = sizes[-2 - ids[where].astype(np.int64)] - 1
    del ids  # term_ids cannot grow while an array views it
    # the document of each placeholder: the number of documents that end at or before it
    np.add.at(lengths, np.searchsorted(np.cumsum(lengths), where, side="right"), extra)
    term_ids.frombytes(bytes(4 * int(extra.sum())))
    ids = np.frombuffer(term_ids, dtype=np.int32)
    starts = np.zeros(len(several) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    parts = np.fromiter(chain.from_iterable(several), dtype=np.int32, count=int(starts[-1]))
    compiled(_expand_source)(ids, n, starts, parts)
    return ids
