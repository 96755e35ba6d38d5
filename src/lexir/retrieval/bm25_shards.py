"""BM25 cut into shards by act, whose merged hits are one index's hits exactly, ties included.

A corpus is cut into shards of whole acts (:func:`plan`, balanced by units). The BM25 statistics
are made global in a first pass (:class:`~lexir.retrieval.bm25_matrix.CollectionStats`: document
count, total length, each term's document frequency over the whole corpus), and each shard's score
matrix is built with them, over the whole corpus's vocabulary (term ids are the same in every
shard): a document's score for a term is then, bit for bit, what one index over the whole corpus
gives it (:func:`build`).

Merging top-k lists by score alone would not give one index's hits: among equal scores, which make
the cut and in which order they come depends on the single index's heap (:mod:`bm25_kernel`: every
document offered in corpus order to a heap of ``k`` slots, then sorted). So a shard answers with
more than its top ``k``: its *admissions* (:func:`candidates`), the documents its own heap, run
over its documents in corpus order, acted on (its first ``k``, then each document above the heap's
smallest value at that point), with their global positions and scores. The front replays the
single index's heap over the shards' admissions merged in corpus order (:func:`merge`), and gets
its hits, ties and their order included. Why that is exact: the heap's smallest value after a
prefix of the corpus is the ``k``-th largest score of that prefix; a shard's is the ``k``-th
largest of its part of the prefix, so never larger; a document a shard did not admit is thus not
above the whole heap's smallest value either, and the whole heap would have done nothing with it.
Every document the whole heap acts on is in some shard's admissions, the first ``k`` documents of
the corpus among them, so the replay performs the same heap steps in the same order. A heap of
``k`` over ``n`` documents in no particular score order admits about ``k (1 + ln(n / k))``
documents: a few hundred for ``k = 10`` over a million.

Nothing here knows where a shard runs: :class:`ShardedBM25` takes one callable per shard
(:mod:`lexir.ray_serve` passes Ray Serve handles; tests pass shards in this process).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.arrays import load_row
from lexir.ids import DocIds
from lexir.kernels import compiled
from lexir.retrieval import bm25_kernel
from lexir.retrieval.base import Retriever
from lexir.retrieval.bm25 import analysed, make_analyzer
from lexir.retrieval.bm25_matrix import CollectionStats, ScoreMatrix
from lexir.retrieval.bm25_terms import QueryTerms
from lexir.types import Corpus, Query, Run, act_of

# 2: the document ids as DocIds' two .npy files (doc_ids.*.npy); format 1's doc_ids.json still loads
FORMAT_VERSION = 2
_READS = (1, 2)
_BLOCKS_FROM = bm25_kernel._BLOCKS_FROM  # documents: from this shard size on, untouched blocks are skipped
_PLAN_FILE, _VOCAB_FILE, _POSITIONS_FILE = "lexir-shards.json", "vocab.json", "positions.npy"
_IDS, _IDS_V1_FILE = "doc_ids", "doc_ids.json"
# A shard's answer: for each query, the documents its heap admitted (global positions, in corpus
# order) and their scores, flat, with the query boundaries.
Candidates = tuple[np.ndarray, np.ndarray, np.ndarray]


# -- cutting ---------------------------------------------------------------------------------


def plan(corpus: Corpus, shards: int) -> list[np.ndarray]:
    """The documents (positions in corpus order) of each of ``shards`` shards: whole acts, the
    largest first to the shard with the fewest units so far (ties: the lower shard); each shard's
    positions ascending. An act is the part of a document id before ``::``."""
    if shards < 1:
        raise ValueError(f"shards must be >= 1 (got {shards})")
    acts: dict[str, list[int]] = {}
    for position, doc_id in enumerate(corpus.ids):
        acts.setdefault(act_of(doc_id), []).append(position)
    if shards > len(acts):
        raise ValueError(f"{shards} shards for a corpus of {len(acts)} acts: a shard holds whole acts "
                         f"(at most {len(acts)} shards)")
    loads, parts = [0] * shards, [[] for _ in range(shards)]
    for act in sorted(acts, key=lambda a: (-len(acts[a]), a)):
        lightest = min(range(shards), key=lambda s: (loads[s], s))
        parts[lightest].extend(acts[act])
        loads[lightest] += len(acts[act])
    return [np.array(sorted(p), dtype=np.int64) for p in parts]


def _pieces(term_ids: np.ndarray, lengths: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The term ids and lengths of the documents at ``positions`` (ascending) of a flat corpus."""
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    picked = lengths[positions]
    if not len(positions):
        return np.zeros(0, dtype=np.int64), picked
    # every position's run of term ids, concatenated: a ramp per document, offset by its start
    offsets = np.repeat(starts[positions] - np.concatenate(([0], np.cumsum(picked)[:-1])), picked)
    return term_ids[np.arange(int(picked.sum()), dtype=np.int64) + offsets], picked


def build(corpus: Corpus, folder: str | Path, shards: int, *, k1: float = 1.2, b: float = 0.75,
          method: str = "lucene", title_weight: int = 1, dedupe_query: bool = True, mode: str = "auto",
          stopwords: bool = True, lemmatizer: str = "simplemma", language: str = "", stoplist: str = "",
          verb_lemmas: bool = False, families: bool = False, compounds: str = "",
          progress: Callable[[int], None] | None = None) -> Path:
    """Cut ``corpus`` into ``shards`` shards (:func:`plan`) and write them to ``folder``: the plan
    (``lexir-shards.json``: analyzer, BM25 parameters, fingerprint), the whole vocabulary and
    document ids, and per shard ``shard-<i>/`` its score matrix (built with the whole corpus's
    statistics) and its documents' global positions. The parameters are the ``bm25`` system's."""
    analyzer = make_analyzer(corpus, language, mode, stopwords, lemmatizer, stoplist, verb_lemmas, families,
                             compounds)
    term_ids, lengths, vocab = analysed(corpus, analyzer, title_weight, progress)
    vocab.setdefault("", len(vocab))  # as BM25Retriever.index_flat: the empty column
    cuts = plan(corpus, shards)
    parts = [_pieces(term_ids, lengths, positions) for positions in cuts]
    # The first pass: the statistics of the whole corpus, added up from each shard's.
    stats = [CollectionStats.of(ids, lens, len(vocab)) for ids, lens in parts]
    total = stats[0]
    for more in stats[1:]:
        total = total + more
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for i, ((ids, lens), positions) in enumerate(zip(parts, cuts, strict=True)):
        matrix = ScoreMatrix.build(ids, lens, len(vocab), k1, b, method, stats=total)
        shard = folder / f"shard-{i}"
        shard.mkdir(exist_ok=True)
        matrix.save(shard, {})
        np.save(shard / _POSITIONS_FILE, positions, allow_pickle=False)
    (folder / _VOCAB_FILE).write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    DocIds.of(corpus.ids).save(folder, _IDS)
    meta = {"format": FORMAT_VERSION, "shards": shards, "analyzer": analyzer.config.to_dict(), "k1": k1, "b": b,
            "method": method, "title_weight": title_weight, "dedupe_query": dedupe_query,
            "fingerprint": corpus.fingerprint, "documents": len(corpus), "units": [len(lens) for _, lens in parts]}
    tmp = folder / (_PLAN_FILE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    os.replace(tmp, folder / _PLAN_FILE)  # last: a folder with the plan file is complete
    return folder


def read_plan(folder: str | Path) -> dict:
    """The plan :func:`build` wrote in ``folder`` (ValueError when there is none, or another format)."""
    path = Path(folder) / _PLAN_FILE
    if not path.is_file():
        raise ValueError(f"{folder}: no sharded BM25 index (no {_PLAN_FILE}; build one with bm25_shards.build)")
    meta = json.loads(path.read_text(encoding="utf-8"))
    if meta.get("format") not in _READS:
        raise ValueError(f"{folder}: sharded BM25 format {meta.get('format')}, this lexir reads "
                         f"{' or '.join(map(str, _READS))}")
    return meta


# -- a shard -----------------------------------------------------------------------------------


class BM25Shard:
    """One shard's score matrix (memory-mapped) and its documents' global positions."""

    def __init__(self, folder: str | Path, shard: int, mmap: bool = True) -> None:
        path = Path(folder) / f"shard-{shard}"
        self.shard = shard
        self.matrix, _ = ScoreMatrix.load(path, mmap=mmap)
        self.positions = load_row(path / _POSITIONS_FILE, ("int64", "int32"), mmap=False, length=self.matrix.num_docs)

    def candidates(self, flat: np.ndarray, pointers: np.ndarray, k: int, dedupe: bool) -> Candidates:
        """This shard's admissions for each query (see the module), as global positions."""
        m = self.matrix
        absent = m.nonoccurrence if m.nonoccurrence is not None else np.zeros(0, dtype=m.data.dtype)
        docs, scores, ends = _compiled_admitted()(np.asarray(flat, dtype=np.int64), np.asarray(pointers, dtype=np.int64),
                                                  int(k), bool(dedupe), m.num_docs >= _BLOCKS_FROM, m.data, m.indptr,
                                                  m.indices, m.num_docs, np.asarray(absent, dtype=m.data.dtype))
        return self.positions[docs], scores, ends

    def nbytes(self) -> int:
        """The bytes of this shard's arrays (matrix and positions)."""
        m = self.matrix
        return int(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes + self.positions.nbytes)


def _admitted_source(ids, pointers, k, dedupe, blocks, data, indptr, indices, num_docs, absent):  # pragma: no cover - numba
    """For each query: the documents the exhaustive kernel's heap acts on (its first ``k``, then
    every one above the heap's smallest value), in document order, with their scores (summed as
    that kernel sums them: its :func:`bm25_kernel._accumulate`). With ``blocks``, blocks of 64
    documents no query term touched are skipped as that kernel skips them (their documents score
    the floor, which cannot beat a smallest value not below it)."""
    n = len(pointers) - 1
    k = min(k, num_docs)
    scores = np.zeros(num_docs, dtype=data.dtype)
    touched = np.zeros((num_docs + 63) >> 6 if blocks else 0, dtype=np.uint64)  # a bit per touched document
    values = np.empty(k + 1, dtype=data.dtype)
    where = np.zeros(k + 1, dtype=np.int32)
    values[k] = np.inf
    size = np.uint64(k)
    seen = np.empty(0, dtype=np.int64)
    cap = max(16, n * (4 * k + 16))
    out_docs = np.empty(cap, dtype=np.int64)
    out_scores = np.empty(cap, dtype=data.dtype)
    ends = np.zeros(n + 1, dtype=np.int64)
    used = 0
    scored_absent = len(absent) > 0
    nothing = np.zeros(1, dtype=data.dtype)[0]
    for q in range(n):
        start, end = pointers[q], pointers[q + 1]
        floor, seen = bm25_kernel._accumulate(ids, start, end, q, dedupe, seen, blocks, touched, scores, data,
                                              indptr, indices, absent, nothing)
        if scored_absent:
            for d in range(num_docs):
                scores[d] += floor
        if used + num_docs > cap:  # room for every document of this query: grow the output
            cap = max(2 * cap, used + num_docs)
            more_docs = np.empty(cap, dtype=np.int64)
            more_scores = np.empty(cap, dtype=data.dtype)
            more_docs[:used] = out_docs[:used]
            more_scores[:used] = out_scores[:used]
            out_docs, out_scores = more_docs, more_scores
        for d in range(k):
            value = scores[d]
            out_docs[used] = d
            out_scores[used] = value
            used += 1
            bm25_kernel._rise(values, where, d, value, d)
        block_start = k
        while block_start < num_docs:
            block_end = min(((block_start >> 6) + 1) << 6, num_docs)
            if blocks and touched[block_start >> 6] == 0 and values[0] >= floor:
                block_start = block_end
                continue
            for d in range(block_start, block_end):
                value = scores[d]
                if value > values[0]:
                    out_docs[used] = d
                    out_scores[used] = value
                    used += 1
                    bm25_kernel._replace_smallest(values, where, size, value, d)
            block_start = block_end
        if not blocks or scored_absent:
            scores[:] = 0
        for block in range(len(touched)):
            if touched[block]:
                scores[block << 6:min((block + 1) << 6, num_docs)] = 0
                touched[block] = 0
        ends[q + 1] = used
    return out_docs[:used], out_scores[:used], ends


def _replayed_source(positions, scores, ends, k, num_docs):  # pragma: no cover - numba
    """The single index's heap replayed over each query's merged admissions (positions ascending,
    the first ``k`` of the corpus among them): its hits, as :func:`bm25_kernel.top_k` returns
    them (document numbers, scores, how many above zero)."""
    n = len(ends) - 1
    k = min(k, num_docs)
    top_scores = np.zeros((n, k), dtype=scores.dtype)
    top_docs = np.zeros((n, k), dtype=np.int32)
    positive = np.zeros(n, dtype=np.int64)
    values = np.empty(k + 1, dtype=scores.dtype)
    where = np.zeros(k + 1, dtype=np.int32)
    values[k] = np.inf
    size = np.uint64(k)
    for q in range(n):
        for i in range(ends[q], ends[q + 1]):
            d, value = positions[i], scores[i]
            if d < k:
                bm25_kernel._rise(values, where, d, value, d)
            elif value > values[0]:
                bm25_kernel._replace_smallest(values, where, size, value, d)
        positive[q] = bm25_kernel._ranked(values, where, k, top_scores[q], top_docs[q])
    return top_docs, top_scores, positive


def _compiled_admitted():
    return compiled(_admitted_source)


def _compiled_replayed():
    return compiled(_replayed_source)


def merge(answers: Sequence[Candidates], k: int, num_docs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The single index's hits (:func:`bm25_kernel.top_k`'s answer) from every shard's
    :meth:`BM25Shard.candidates` for the same batch of queries."""
    n = len(answers[0][2]) - 1
    k = min(k, num_docs)
    if not n or not k:
        return np.zeros((n, k), dtype=np.int32), np.zeros((n, k), dtype=np.float32), np.zeros(n, dtype=np.int64)
    # every shard's admissions with their query number, sorted by (query, position) at once
    docs = np.concatenate([a[0] for a in answers])
    values = np.concatenate([a[1] for a in answers])
    query = np.concatenate([np.repeat(np.arange(n, dtype=np.int64), np.diff(a[2])) for a in answers])
    order = np.lexsort((docs, query))
    flat, values = docs[order], values[order]
    ends = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(query, minlength=n), out=ends[1:])
    # the replay needs the corpus's first k documents: every shard sends its first k
    if (np.diff(ends) < k).any() or (flat[ends[:-1] + k - 1] != k - 1).any():
        raise ValueError("shard answers lack some of the corpus's first k documents: not the answers of "
                         "every shard of this index")
    return _compiled_replayed()(flat, values, ends, int(k), int(num_docs))


# -- the front ---------------------------------------------------------------------------------

# A shard as the front calls it: (flat term ids, pointers, k, dedupe) -> its candidates.
ShardCall = Callable[[np.ndarray, np.ndarray, int, bool], Candidates]


class ShardedBM25(Retriever):
    """The ``bm25`` system over shards: queries analysed once here (the whole vocabulary), sent
    to every shard, the answers merged into the single index's hits (:func:`merge`).
    ``call_all(flat, pointers, k, dedupe)`` returns every shard's candidates, in shard order (the
    caller decides how: in this process, in parallel over Ray Serve handles)."""

    name = "bm25"
    query_params = frozenset({"dedupe_query"})

    def __init__(self, folder: str | Path, call_all: Callable[[np.ndarray, np.ndarray, int, bool], list[Candidates]],
                 corpus: Corpus | None = None) -> None:
        meta = read_plan(folder)
        if corpus is not None and corpus.fingerprint != meta["fingerprint"]:
            raise ValueError(f"{folder}: the shards were built from another corpus than {corpus.name!r}")
        self.meta = meta
        self.analyzer = Analyzer(AnalyzerConfig(**meta["analyzer"]))
        self.dedupe_query = bool(meta["dedupe_query"])
        self.vocab = json.loads((Path(folder) / _VOCAB_FILE).read_text(encoding="utf-8"))
        # the front holds every shard's ids: memory-mapped (format 1's JSON list made compact)
        self.doc_ids = (DocIds.load(folder, _IDS) if meta["format"] > 1 else
                        DocIds.of(json.loads((Path(folder) / _IDS_V1_FILE).read_text(encoding="utf-8"))))
        self.call_all = call_all
        self._terms: QueryTerms | None = None

    def terms(self) -> QueryTerms:
        if self._terms is None or self._terms.dedupe != self.dedupe_query:
            self._terms = QueryTerms(self.analyzer, self.vocab, self.dedupe_query)
        return self._terms

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        run: Run = {}
        batch = max(256, 250_000 // max(k, 1))  # as BM25Retriever.search_many
        for start in range(0, len(queries), batch):
            chunk = queries[start:start + batch]
            for query, (docs, scores) in zip(chunk, self.found([q.text for q in chunk], k), strict=True):
                run[query.id] = dict(zip(docs, scores, strict=True))
            if progress:
                progress(len(chunk))
        return run

    def found(self, texts: Sequence[str], k: int) -> list[tuple[list[str], list[float]]]:
        """(document ids, scores) of each text's hits, best first, documents scoring 0 left out:
        what :meth:`BM25Retriever._found <lexir.retrieval.bm25.BM25Retriever._found>` gives."""
        if not texts:
            return []
        flat, pointers = self.terms().raw_batch(texts)
        k = min(k, len(self.doc_ids))
        if not len(flat) or k <= 0:
            return [([], []) for _ in texts]
        docs, scores, positive = merge(self.call_all(flat, pointers, k, self.dedupe_query), k, len(self.doc_ids))
        names, values = self.doc_ids.take(docs), scores.ravel().tolist()
        width = docs.shape[1]
        return [(names[a:a + m], values[a:a + m])
                for a, m in zip(range(0, len(texts) * width, width), positive.tolist(), strict=True)]


def local(folder: str | Path, corpus: Corpus | None = None) -> ShardedBM25:
    """A :class:`ShardedBM25` over the shards of ``folder``, each loaded in this process."""
    shards = [BM25Shard(folder, i) for i in range(read_plan(folder)["shards"])]
    return ShardedBM25(folder, lambda flat, pointers, k, dedupe: [s.candidates(flat, pointers, k, dedupe)
                                                                   for s in shards], corpus)
