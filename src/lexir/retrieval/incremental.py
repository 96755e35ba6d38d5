"""BM25 that takes additions, replacements and deletions without a rebuild.

The static index (:class:`~lexir.retrieval.bm25_matrix.ScoreMatrix`) stores each (term, document) score precomputed, and every score depends on the
document count and average length, so one added document changes them all: it cannot add
or remove documents. This index keeps what the scores are made of instead: per term the
documents it occurs in with their term frequency, each document's length and terms, the
document count and the total length. Scores are computed at query time with the score matrix's idf
and term-frequency functions (:mod:`lexir.retrieval.bm25_matrix`), in its float32 arithmetic, so on the same corpus they are those
of :class:`~lexir.retrieval.bm25.BM25Retriever` (tested), and after any sequence of
:meth:`IncrementalBM25.upsert` / :meth:`IncrementalBM25.delete` they are exactly those of a
fresh build over the resulting documents:

* the statistics are recomputed from what is stored, never adjusted by estimates: a deleted
  document's terms leave its postings, a term whose last document goes leaves the vocabulary
  (no document frequency of zero stays behind);
* a document is keyed by id: upserting an id that is present replaces it (removed, then
  added), and upserting an unchanged text (same hash) does nothing, so nothing counts twice;
* results are ordered by score, ties by id, so the order does not depend on the order in
  which documents came in.

Methods whose scores need a non-occurrence term (bm25l, bm25+) are not offered.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from lexir.analysis import Analyzer, AnalyzerConfig, bulk_lemmas
from lexir.arrays import DAMAGED, ascending_within, delimits, load_json, load_members, refuse_outside
from lexir.io.generations import Generation, loads, new_generation
from lexir.io.markers import read_marker, write_marker
from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.bm25 import document_tokens, make_analyzer
from lexir.retrieval.bm25_matrix import idf, tfc
from lexir.types import Corpus, Document, Query, Run

FORMAT_VERSION = 2  # segments; format 1 (postings.npz + docs.json, before segments) still loads
SYSTEM = "bm25-inc"
METHODS = ("lucene", "robertson", "atire")
MARKER = "lexir.json"
MAX_DELTAS = 8  # a save after this many delta segments writes one whole segment instead
MAX_DELTA_SHARE = 0.25  # ... and so does one once the deltas hold this share of the documents' slots
_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32))


def document_hash(doc: Document) -> str:
    return hashlib.sha1(f"{doc.title}\0{doc.text}".encode()).hexdigest()


class IncrementalBM25(Retriever):
    name = SYSTEM

    def __init__(self, analyzer: Analyzer, k1: float = 1.2, b: float = 0.75, method: str = "lucene",
                 title_weight: int = 1, dedupe_query: bool = True) -> None:
        if method not in METHODS:
            raise ValueError(f"{SYSTEM} offers the BM25 methods {', '.join(METHODS)}; got {method!r}")
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1 (got k1={k1}, b={b})")
        self.analyzer = analyzer
        self.k1, self.b, self.method = float(k1), float(b), method
        self.title_weight, self.dedupe_query = int(title_weight), dedupe_query
        # the same analysis of documents and queries as BM25Retriever
        self._tokens = partial(document_tokens, analyzer, title_weight=int(title_weight))
        self.vocab: dict[str, int] = {}
        self._terms: list[str | None] = []  # term id -> term (None: free)
        self._free_terms: list[int] = []
        self._post = _Postings()  # term id -> (slots, term frequencies)
        self.doc_ids: list[str | None] = []  # slot -> id (None: free)
        self._slot: dict[str, int] = {}
        self._free_slots: list[int] = []
        self._lengths = np.zeros(0, dtype=np.int64)
        self._doc_terms: list[np.ndarray | None] = []  # slot -> its distinct term ids
        self._hashes: list[str | None] = []
        self.n_docs = 0
        self.total_length = 0
        self.fingerprint = ""  # of the corpus the index holds, when it was set from one
        self.source: dict = {}  # where the documents came from (dataset, as_of), for `index update`
        # what changed since the index was last loaded or saved (a save appends only that), and the
        # saved state it changed from: its token and segments
        self._dirty_slots: set[int] = set()
        self._dirty_terms: set[int] = set()
        self._doc_tf: dict[int, np.ndarray] = {}  # slot -> term frequencies (of _doc_terms), for new documents
        self._saved: tuple[str, list[str], int] | None = None  # (token, delta segments, slots in them)

    # -- building and changing --------------------------------------------------------------

    def index(self, corpus: Corpus, progress: Callable[[int], None] | None = None) -> IncrementalBM25:
        self._apply([], list(corpus), progress)
        self.fingerprint = corpus.fingerprint
        return self

    def upsert(self, docs: Iterable[Document]) -> int:
        """Add documents, or replace those whose id is present; unchanged ones are skipped.
        Returns how many were added or replaced."""
        changed, replaced = self._changed(docs)
        self._apply(replaced, changed)
        if changed:
            self.fingerprint = ""
        return len(changed)

    def _changed(self, docs: Iterable[Document]) -> tuple[list[Document], list[int]]:
        """The documents that are new or whose text or title changed, and the slots they replace."""
        if not isinstance(docs, Corpus):  # a corpus's ids are unique
            fresh: dict[str, Document] = {}
            for doc in docs:
                fresh[doc.id] = doc  # the last of repeated ids wins, as in a corpus update
            docs = fresh.values()
        slot_of, hashes, sha1 = self._slot, self._hashes, hashlib.sha1
        # document_hash, inline: this runs over every document of a corpus an update moves to
        changed = [d for d in docs if (s := slot_of.get(d.id)) is None
                   or hashes[s] != sha1(f"{d.title}\0{d.text}".encode()).hexdigest()]
        return changed, [slot_of[d.id] for d in changed if d.id in slot_of]

    def delete(self, ids: Iterable[str]) -> int:
        """Remove documents by id; an id not in the index is an error (nothing is removed then)."""
        ids = list(dict.fromkeys(ids))
        unknown = [i for i in ids if i not in self._slot]
        if unknown:
            more = f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else ""
            raise KeyError(f"not in the index: {', '.join(unknown[:5])}{more}")
        self._apply([self._slot[i] for i in ids], [])
        if ids:
            self.fingerprint = ""
        return len(ids)

    def holds(self, corpus: Corpus) -> bool:
        """Whether the index records that it holds exactly ``corpus`` (its fingerprint)."""
        return bool(self.fingerprint) and self.fingerprint == corpus.fingerprint

    def update_to(self, corpus: Corpus, since: Corpus | None = None,
                  changes: tuple[Iterable[Document], Iterable[str]] | None = None) -> tuple[int, int]:
        """Make the index hold exactly ``corpus``'s documents, touching only those whose text or
        title changed, that are new, or that are gone. Returns (added or replaced, deleted).

        ``changes`` (documents to add or replace, ids to remove) are what turns ``since`` into
        ``corpus`` (``StatuteHistory.changes(old, new)``): when the index :meth:`holds` ``since``,
        only they are looked at (their hashes skip the unchanged ones among them), not every
        document; otherwise (or without them) every document of ``corpus`` is compared."""
        if since is not None and changes is not None and self.holds(since):
            upserts, deletes = changes
            changed, replaced = self._changed(upserts)
            upserted = {d.id for d in changed}
            gone = [i for i in dict.fromkeys(deletes) if i in self._slot and i not in upserted]
            self._apply(replaced + [self._slot[i] for i in gone], changed)
            self.fingerprint = corpus.fingerprint
            return len(changed), len(gone)
        if isinstance(corpus, Corpus):
            gone = [i for i in self._slot if corpus.get(i) is None]
        else:
            wanted = {d.id for d in corpus}
            gone = [i for i in self._slot if i not in wanted]
        changed, replaced = self._changed(corpus)
        self._apply(replaced + [self._slot[i] for i in gone], changed)  # one pass over the postings
        self.fingerprint = corpus.fingerprint
        return len(changed), len(gone)

    def apply(self, upserts: Iterable[Document], deletes: Iterable[str], fingerprint: str = "") -> tuple[int, int]:
        """Apply a change set the caller already knows (``StatuteHistory.changes(old, new)``), without
        hashing the unchanged documents as :meth:`update_to` must; ``fingerprint`` is the resulting
        corpus's, when the caller vouches that the index then holds exactly it."""
        counts = self.upsert(upserts), self.delete(deletes)
        self.fingerprint = fingerprint
        return counts

    def _apply(self, remove: Sequence[int], add: Sequence[Document],
               progress: Callable[[int], None] | None = None) -> None:
        # slots removed in this call: their postings go before new documents may reuse the slots
        dead = np.zeros(len(self.doc_ids), dtype=bool)
        dead[list(remove)] = True
        self._dirty_slots.update(remove)
        removed_terms = _concat([self._doc_terms[slot] for slot in remove], np.int64)
        for slot in remove:
            self.n_docs -= 1
            self.total_length -= int(self._lengths[slot])
            del self._slot[self.doc_ids[slot]]
            self._lengths[slot] = 0
            self.doc_ids[slot] = self._doc_terms[slot] = self._hashes[slot] = None
            self._doc_tf.pop(slot, None)
            self._free_slots.append(slot)
        vocab, term_id = self.vocab, self._term_id
        new_slots = []
        with bulk_lemmas():  # lemmas from the fast dictionaries while documents are analysed
            for doc in add:
                tokens = self._tokens(doc.title, doc.text)
                counts = Counter(tokens)
                slot = self._new_slot()
                new_slots.append(slot)
                self.doc_ids[slot], self._hashes[slot] = doc.id, document_hash(doc)
                self._slot[doc.id] = slot
                self._lengths[slot] = len(tokens)
                self.total_length += len(tokens)
                self.n_docs += 1
                get = vocab.get
                tids = [get(term) for term in counts]
                if None in tids:
                    tids = [term_id(term) if t is None else t for term, t in zip(counts, tids, strict=True)]
                self._doc_terms[slot] = np.array(tids, dtype=np.int64)
                self._doc_tf[slot] = np.fromiter(counts.values(), dtype=np.int32, count=len(counts))
                if progress:
                    progress(1)
        self._dirty_slots.update(new_slots)
        add_terms = [self._doc_terms[slot] for slot in new_slots]
        empty = self._merge(dead, removed_terms, _concat(add_terms, np.int64),
                            np.repeat(np.array(new_slots, dtype=np.int64), [len(t) for t in add_terms]),
                            _concat([self._doc_tf[slot] for slot in new_slots], np.int32))
        for t in empty:  # the term's last document went: it leaves the vocabulary
            del self.vocab[self._terms[t]]
            self._terms[t] = None
            self._free_terms.append(t)
            self._dirty_terms.add(t)

    def _merge(self, dead: np.ndarray, removed_terms: np.ndarray, add_terms: np.ndarray, add_slots: np.ndarray,
               add_tf: np.ndarray) -> list[int]:
        """Take the ``dead`` slots out of the postings of ``removed_terms`` and append the postings
        (``add_terms``, ``add_slots``, ``add_tf``), all terms at once: the affected terms' postings
        gathered into flat arrays, filtered, and written with the new ones (after them, per term)
        into one array cut into a view per term. Returns the terms left with no document."""
        affected = np.union1d(removed_terms, add_terms)
        n = len(affected)
        if not n:
            return []
        terms = affected.tolist()
        held = [self._post.get(t, _EMPTY) for t in terms]
        sizes = np.fromiter((len(p[0]) for p in held), dtype=np.int64, count=n)
        slots = _concat([p[0] for p in held], np.int64)
        tf = _concat([p[1] for p in held], np.int32)
        owner = np.repeat(np.arange(n), sizes)  # position in ``affected`` of each gathered posting
        if len(slots) and dead.any():
            keep = ~dead[slots]
            slots, tf, owner = slots[keep], tf[keep], owner[keep]
        kept = np.bincount(owner, minlength=n)
        new_owner = np.searchsorted(affected, add_terms)
        order = np.argsort(new_owner, kind="stable")
        new_owner, add_slots, add_tf = new_owner[order], add_slots[order], add_tf[order]
        added = np.bincount(new_owner, minlength=n)
        start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(kept + added, out=start[1:])
        out_slots = np.empty(int(start[-1]), dtype=np.int64)
        out_tf = np.empty(int(start[-1]), dtype=np.int32)
        # each group is contiguous and in order: its k-th posting goes k places after its start
        first = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(kept, out=first[1:])
        at = start[owner] + np.arange(len(slots)) - first[owner]
        out_slots[at], out_tf[at] = slots, tf
        np.cumsum(added, out=first[1:])
        at = start[new_owner] + kept[new_owner] + np.arange(len(new_owner)) - first[new_owner]
        out_slots[at], out_tf[at] = add_slots, add_tf
        empty = []
        post = self._post
        for t, a, e in zip(terms, start[:-1].tolist(), start[1:].tolist(), strict=True):
            if e > a:
                post[t] = (out_slots[a:e], out_tf[a:e])
            else:
                post.pop(t, None)
                empty.append(t)
        return empty

    def _term_id(self, term: str) -> int:
        if self._free_terms:
            t = self._free_terms.pop()
            self._terms[t] = term
        else:
            t = len(self._terms)
            self._terms.append(term)
        self.vocab[term] = t
        self._dirty_terms.add(t)
        return t

    def _new_slot(self) -> int:
        if self._free_slots:
            return self._free_slots.pop()
        slot = len(self.doc_ids)
        self.doc_ids.append(None)
        self._doc_terms.append(None)
        self._hashes.append(None)
        if slot >= len(self._lengths):
            grown = np.zeros(max(16, 2 * len(self._lengths)), dtype=np.int64)
            grown[: len(self._lengths)] = self._lengths
            self._lengths = grown
        return slot

    # -- statistics -------------------------------------------------------------------------

    def stats(self) -> dict:
        """Document count, average length and every term's document frequency (for checks)."""
        return {
            "n_docs": self.n_docs,
            "avgdl": self.total_length / self.n_docs if self.n_docs else 0.0,
            "df": {self._terms[t]: len(p[0]) for t, p in self._post.items()},
        }

    def ids(self) -> list[str]:
        return [i for i in self.doc_ids if i is not None]

    # -- searching --------------------------------------------------------------------------

    def query_ids(self, text: str) -> list[int]:
        tokens = [t for t in self.analyzer.for_queries()(text) if t]
        ids = [self.vocab[t] for t in tokens if t in self.vocab]
        return list(dict.fromkeys(ids)) if self.dedupe_query else ids

    def score_array(self, term_ids: Sequence[int]) -> np.ndarray:
        """float32 BM25 scores by slot, summed over ``term_ids`` in order (as bm25s does)."""
        scores = np.zeros(len(self.doc_ids), dtype=np.float32)
        if not self.n_docs:
            return scores
        l_avg = self.total_length / self.n_docs
        for t in term_ids:
            slots, tf = self._post[t]
            weight = np.float32(idf(self.method, len(slots), self.n_docs))
            scores[slots] += (weight * tfc(self.method, tf.astype(np.float32), self._lengths[slots], l_avg,
                                           self.k1, self.b)).astype(np.float32)
        return scores

    def scores(self, text: str) -> dict[str, float]:
        """The score of every document that matches a query term, by id."""
        scores = self.score_array(self.query_ids(text))
        hit = np.flatnonzero(scores > 0)
        return {self.doc_ids[i]: float(scores[i]) for i in hit.tolist()}

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        return self.each(queries, lambda q: self._top(self.score_array(self.query_ids(q.text)), k), progress)

    def _top(self, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Best ``k`` by score, ties by id (so the order never depends on slots); score 0 is no hit."""
        hits = int(np.count_nonzero(scores > 0))
        k = min(k, hits)
        if k <= 0:
            return []
        if k < hits:
            cut = np.partition(scores, len(scores) - k)[len(scores) - k]  # the k-th best score
            chosen = np.flatnonzero(scores >= cut)
        else:
            chosen = np.flatnonzero(scores > 0)
        ids, values = self.doc_ids, scores[chosen].tolist()
        best = sorted(zip(chosen.tolist(), values, strict=True), key=lambda sv: (-sv[1], ids[sv[0]]))[:k]
        return [(ids[s], v) for s, v in best]

    # -- persistence ------------------------------------------------------------------------

    def config(self) -> dict:
        return {
            "format": FORMAT_VERSION, "system": SYSTEM, "analyzer": self.analyzer.config.to_dict(),
            "k1": self.k1, "b": self.b, "method": self.method, "title_weight": self.title_weight,
            "dedupe_query": self.dedupe_query,
        }

    def save(self, folder: str | Path) -> Path:
        """A new generation of ``folder`` (:mod:`lexir.io.generations`). The index is stored as
        segments: one whole (``postings.npz``, ``docs.json``), then per save a delta segment holding
        only what changed since the index was loaded from (or saved to) the generation it replaces,
        whose segments are linked in, not written again. After :data:`MAX_DELTAS` deltas, or once they hold
        :data:`MAX_DELTA_SHARE` of the slots, a save writes one whole segment again."""
        folder = Path(folder)
        with new_generation(folder) as gen:
            deltas, in_deltas = self._plan(gen)
            if deltas is None:
                deltas, in_deltas = [], 0
                self._write_whole(gen.path)
            else:
                for name in ("postings.npz", "docs.json", *(d + ext for d in deltas for ext in (".npz", ".json"))):
                    gen.keep(name)
                name = f"delta-{len(deltas) + 1:06d}"
                in_deltas += self._write_delta(gen / name)
                deltas = [*deltas, name]
            token = uuid.uuid4().hex
            write_marker(gen / MARKER, {**self.config(), "n_docs": self.n_docs, "total_length": self.total_length,
                                        "fingerprint": self.fingerprint, "source": self.source,
                                        "deltas": deltas, "state": token, "delta_slots": in_deltas})
        self._saved = (token, deltas, in_deltas)
        self._dirty_slots, self._dirty_terms, self._doc_tf = set(), set(), {}
        return folder

    def _plan(self, gen: Generation) -> tuple[list[str] | None, int]:
        """The delta segments a new delta can follow, and the slots they hold: those of the
        generation replaced, if it holds the state this index was loaded from or saved as and the
        deltas stay few and small; None when the save must write a whole segment."""
        if self._saved is None or gen.previous is None:
            return None, 0
        token, deltas, in_deltas = self._saved
        try:
            before = json.loads((gen.previous / MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None, 0
        if (before.get("state") != token or before.get("deltas") != deltas or len(deltas) >= MAX_DELTAS
                or in_deltas + len(self._dirty_slots) > MAX_DELTA_SHARE * max(1, len(self.doc_ids))):
            return None, 0
        return deltas, in_deltas

    def _write_whole(self, folder: Path) -> None:
        n_terms = len(self._terms)
        posting_terms = sorted(self._post)
        df = np.zeros(n_terms, dtype=np.int64)
        for t in posting_terms:
            df[t] = len(self._post[t][0])
        term_indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(df, out=term_indptr[1:])
        live = [s for s, i in enumerate(self.doc_ids) if i is not None]
        doc_len = np.zeros(len(self.doc_ids), dtype=np.int64)
        for s in live:
            doc_len[s] = len(self._doc_terms[s])
        doc_indptr = np.zeros(len(self.doc_ids) + 1, dtype=np.int64)
        np.cumsum(doc_len, out=doc_indptr[1:])
        np.savez(
            folder / "postings.npz",
            term_indptr=term_indptr,
            slots=_concat([self._post[t][0] for t in posting_terms], np.int64),
            tf=_concat([self._post[t][1] for t in posting_terms], np.int32),
            lengths=self._lengths[: len(self.doc_ids)],
            doc_indptr=doc_indptr,
            doc_terms=_concat([self._doc_terms[s] for s in live], np.int64),
        )
        (folder / "docs.json").write_text(json.dumps(
            {"terms": self._terms, "doc_ids": self.doc_ids, "hashes": self._hashes}, ensure_ascii=False),
            encoding="utf-8")

    def _write_delta(self, stem: Path) -> int:
        """The slots and terms changed since the last save: each slot's document now (or none),
        with its terms and their frequencies; each term's string now (or none). Returns the slots."""
        slots = sorted(self._dirty_slots)
        terms = sorted(self._dirty_terms)
        live = [s for s in slots if self.doc_ids[s] is not None]
        doc_len = np.zeros(len(slots), dtype=np.int64)
        for i, s in enumerate(slots):
            if self.doc_ids[s] is not None:
                doc_len[i] = len(self._doc_terms[s])
        doc_indptr = np.zeros(len(slots) + 1, dtype=np.int64)
        np.cumsum(doc_len, out=doc_indptr[1:])
        np.savez(
            stem.with_suffix(".npz"),
            slots=np.array(slots, dtype=np.int64),
            lengths=self._lengths[slots] if slots else np.zeros(0, dtype=np.int64),
            doc_indptr=doc_indptr,
            doc_terms=_concat([self._doc_terms[s] for s in live], np.int64),
            doc_tf=_concat([self._doc_tf[s] for s in live], np.int32),
            term_ids=np.array(terms, dtype=np.int64),
        )
        stem.with_suffix(".json").write_text(json.dumps(
            {"doc_ids": [self.doc_ids[s] for s in slots], "hashes": [self._hashes[s] for s in slots],
             "terms": [self._terms[t] for t in terms]}, ensure_ascii=False), encoding="utf-8")
        return len(slots)

    @classmethod
    @loads
    def load(cls, folder: str | Path) -> IncrementalBM25:
        folder = Path(folder)
        meta = read_marker(folder / MARKER, f"lexir {SYSTEM} index", (1, FORMAT_VERSION))
        if meta.get("system") != SYSTEM:
            raise ValueError(f"{folder} holds a {meta.get('system')} index, not {SYSTEM}")
        index = cls(Analyzer(AnalyzerConfig(**meta["analyzer"])), k1=meta["k1"], b=meta["b"],
                    method=meta["method"], title_weight=meta["title_weight"], dedupe_query=meta["dedupe_query"])
        deltas = meta.get("deltas") or []  # format 1: none
        index._read_whole(folder)
        for name in deltas:
            index._read_delta(folder / name)
        index.vocab = dict(zip(index._terms, range(len(index._terms)), strict=True))
        index.vocab.pop(None, None)  # type: ignore[call-overload]  # free term ids
        index._free_terms = [t for t, term in enumerate(index._terms) if term is None]
        index._slot = dict(zip(index.doc_ids, range(len(index.doc_ids)), strict=True))
        index._slot.pop(None, None)  # type: ignore[call-overload]  # free slots
        index._free_slots = [s for s, i in enumerate(index.doc_ids) if i is None]
        index.n_docs, index.total_length = meta["n_docs"], meta["total_length"]
        if index.n_docs != len(index._slot):
            raise ValueError(f"{folder}: the segments hold {len(index._slot)} documents, {MARKER} says "
                             f"{index.n_docs} (damaged; rebuild it)")
        index.fingerprint, index.source = meta["fingerprint"], meta.get("source") or {}
        if meta.get("state"):
            index._saved = (meta["state"], deltas, int(meta.get("delta_slots", 0)))
        return index

    def _read_whole(self, folder: Path) -> None:
        docs, arrays = _whole_segment(folder)
        self._terms, self.doc_ids, self._hashes = docs["terms"], docs["doc_ids"], docs["hashes"]
        self._lengths = arrays["lengths"].copy()
        self._post = _Postings(arrays["term_indptr"], arrays["slots"], arrays["tf"])
        ptr, terms = arrays["doc_indptr"], arrays["doc_terms"]
        starts, ends = ptr[:-1].tolist(), ptr[1:].tolist()
        self._doc_terms = [terms[a:e] if i is not None else None
                           for i, a, e in zip(self.doc_ids, starts, ends, strict=True)]

    def _read_delta(self, stem: Path) -> None:
        """Apply a delta segment: the changed slots' old documents out, the terms renamed, the new
        documents in (their postings appended), as the save that wrote it had them."""
        docs, arrays = _delta_segment(stem, len(self.doc_ids), len(self._terms))
        slots = arrays["slots"].tolist()
        top = max(slots, default=-1) + 1
        if top > len(self.doc_ids):
            grow = top - len(self.doc_ids)
            self.doc_ids += [None] * grow
            self._hashes += [None] * grow
            self._doc_terms += [None] * grow
            self._lengths = np.concatenate([self._lengths, np.zeros(grow, dtype=np.int64)])
        dead = np.zeros(len(self.doc_ids), dtype=bool)
        old = [s for s in slots if self.doc_ids[s] is not None]
        dead[old] = True
        removed_terms = _concat([self._doc_terms[s] for s in old], np.int64)
        for t, term in zip(arrays["term_ids"].tolist(), docs["terms"], strict=True):
            if t >= len(self._terms):
                self._terms += [None] * (t + 1 - len(self._terms))
            self._terms[t] = term
        ptr, terms, tfs = arrays["doc_indptr"], arrays["doc_terms"], arrays["doc_tf"]
        self._lengths[slots] = arrays["lengths"]
        bounds = ptr.tolist()
        for i, s in enumerate(slots):
            self.doc_ids[s], self._hashes[s] = docs["doc_ids"][i], docs["hashes"][i]
            self._doc_terms[s] = terms[bounds[i]:bounds[i + 1]] if self.doc_ids[s] is not None else None
        self._merge(dead, removed_terms, terms, np.repeat(arrays["slots"], np.diff(ptr)), tfs)


_WHOLE = {"term_indptr": ("int64",), "slots": ("int64",), "tf": ("int32",), "lengths": ("int64",),
          "doc_indptr": ("int64",), "doc_terms": ("int64",)}
_DELTA = {"slots": ("int64",), "lengths": ("int64",), "doc_indptr": ("int64",), "doc_terms": ("int64",),
          "doc_tf": ("int32",), "term_ids": ("int64",)}


def _lists(path: Path, docs, **sizes: int | None) -> None:
    """``docs`` (a segment's JSON) is an object whose entries ``sizes`` names are lists that long
    (None: of any length)."""
    if not isinstance(docs, dict):
        raise ValueError(f"{path}: not an object ({DAMAGED})")
    for key, size in sizes.items():
        found = docs.get(key)
        if not isinstance(found, list) or size is not None and len(found) != size:
            held = f"{len(found)} entries" if isinstance(found, list) else type(found).__name__
            raise ValueError(f"{path}: {key} holds {held}, expected {'a list' if size is None else size} "
                             f"({DAMAGED})")


def _runs(path: Path, name: str, pointers: np.ndarray, runs: int, over: str, n: int) -> None:
    if len(pointers) != runs + 1 or not delimits(pointers, n):
        raise ValueError(f"{path}: {name} ({len(pointers)} pointers) does not cut the {n} {over} into "
                         f"{runs} runs ({DAMAGED})")


def _whole_segment(folder: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The whole segment's ``docs.json`` and ``postings.npz``, checked against each other: the
    pointers cut their rows, every posting's slot is a slot, every document's term a term."""
    docs = load_json(folder / "docs.json")
    _lists(folder / "docs.json", docs, terms=None, doc_ids=None)
    n_terms, n_slots = len(docs["terms"]), len(docs["doc_ids"])
    _lists(folder / "docs.json", docs, hashes=n_slots)
    path = folder / "postings.npz"
    arrays = load_members(path, _WHOLE)
    if len(arrays["lengths"]) != n_slots:
        raise ValueError(f"{path}: {len(arrays['lengths'])} lengths for {n_slots} slots ({DAMAGED})")
    _runs(path, "term_indptr", arrays["term_indptr"], n_terms, "slots", len(arrays["slots"]))
    _runs(path, "doc_indptr", arrays["doc_indptr"], n_slots, "doc_terms", len(arrays["doc_terms"]))
    if len(arrays["tf"]) != len(arrays["slots"]):
        raise ValueError(f"{path}: {len(arrays['tf'])} tf for {len(arrays['slots'])} slots ({DAMAGED})")
    refuse_outside(path, "slots", arrays["slots"], n_slots, f"outside the {n_slots} slots")
    refuse_outside(path, "doc_terms", arrays["doc_terms"], n_terms, f"outside the {n_terms} terms")
    return docs, arrays


def _delta_segment(stem: Path, n_slots: int, n_terms: int) -> tuple[dict, dict[str, np.ndarray]]:
    """A delta segment's JSON and arrays, checked against each other and the index it is applied
    to (``n_slots`` slots, ``n_terms`` terms so far): slots and terms ascending, no more new ones
    than it holds, the pointers cut their rows, every document's term a term."""
    path = stem.with_suffix(".npz")
    arrays = load_members(path, _DELTA)
    docs = load_json(stem.with_suffix(".json"))
    slots, term_ids = arrays["slots"], arrays["term_ids"]
    _lists(stem.with_suffix(".json"), docs, doc_ids=len(slots), hashes=len(slots), terms=len(term_ids))
    for name, ids, limit, what in (("slots", slots, n_slots, "slots"), ("term_ids", term_ids, n_terms, "terms")):
        at = ascending_within(np.array([0, len(ids)]), ids, limit + len(ids))
        if at >= 0:
            raise ValueError(f"{path}: {name}[{at}] = {ids[at]} is out of order or past the {limit} {what} "
                             f"and the {len(ids)} this segment may add ({DAMAGED})")
    if len(arrays["lengths"]) != len(slots):
        raise ValueError(f"{path}: {len(arrays['lengths'])} lengths for {len(slots)} slots ({DAMAGED})")
    _runs(path, "doc_indptr", arrays["doc_indptr"], len(slots), "doc_terms", len(arrays["doc_terms"]))
    if len(arrays["doc_tf"]) != len(arrays["doc_terms"]):
        raise ValueError(f"{path}: {len(arrays['doc_tf'])} doc_tf for {len(arrays['doc_terms'])} doc_terms "
                         f"({DAMAGED})")
    known = max(n_terms, int(term_ids[-1]) + 1 if len(term_ids) else 0)
    refuse_outside(path, "doc_terms", arrays["doc_terms"], known, f"outside the {known} terms")
    return docs, arrays


class _Postings:
    """Term id -> (slots, term frequencies): the postings of a loaded whole segment, sliced from its
    arrays when first asked for (loading does not make one pair per term), under those changed since."""

    __slots__ = ("_changed", "_ptr", "_slots", "_tf")

    def __init__(self, ptr: np.ndarray | None = None, slots: np.ndarray | None = None,
                 tf: np.ndarray | None = None) -> None:
        self._ptr = ptr.tolist() if ptr is not None else [0]  # a list: a look-up is two list reads
        self._slots, self._tf = slots, tf
        self._changed: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}  # None: gone

    def get(self, t: int, default=None):
        if t in self._changed:
            found = self._changed[t]
            return default if found is None else found
        if 0 <= t < len(self._ptr) - 1:
            a, e = self._ptr[t], self._ptr[t + 1]
            if e > a:
                return self._slots[a:e], self._tf[a:e]
        return default

    def __getitem__(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        found = self.get(t)
        if found is None:
            raise KeyError(t)
        return found

    def __setitem__(self, t: int, value: tuple[np.ndarray, np.ndarray]) -> None:
        self._changed[t] = value

    def pop(self, t: int, default=None):
        found = self.get(t, default)
        self._changed[t] = None
        return found

    def __contains__(self, t: int) -> bool:
        return self.get(t) is not None

    def __iter__(self):
        base = np.flatnonzero(np.diff(np.asarray(self._ptr)) > 0).tolist()
        changed = self._changed
        yield from (t for t in base if t not in changed)
        yield from (t for t, v in changed.items() if v is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def items(self):
        return ((t, self[t]) for t in self)


def _concat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


@register_system(
    SYSTEM,
    "BM25 that takes document additions, replacements and deletions without a rebuild "
    "(scores as bm25's; lexir index update moves it to another date)",
    k1=1.2, b=0.75, mode="raw", stopwords=True, lemmatizer="simplemma", language="",
    method="lucene", title_weight=1, dedupe_query=True,
)
def build_incremental(corpus: Corpus, *, k1, b, mode, stopwords, lemmatizer, language, method, title_weight,
                      dedupe_query, progress=None) -> IncrementalBM25:
    analyzer = make_analyzer(corpus, language, mode, stopwords, lemmatizer)
    return IncrementalBM25(analyzer, k1, b, method, title_weight, dedupe_query).index(corpus, progress)
