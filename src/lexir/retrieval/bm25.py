"""BM25 over article text, on bm25s, with lexir's analyzers.

The index is a folder: bm25s's sparse score matrix (loaded memory-mapped), plus
``lexir.json`` holding the analyzer configuration, BM25 parameters, document ids and a
fingerprint of the corpus, so a saved index answers queries exactly as the fresh one did
and is never reused for a corpus it was not built from.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from itertools import count
from pathlib import Path

import bm25s
import numpy as np

from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.retrieval.base import Retriever, register_system
from lexir.types import Corpus, Query, Run

FORMAT_VERSION = 1
METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


def corpus_fingerprint(corpus: Corpus) -> str:
    digest = hashlib.sha256()
    for doc in corpus:
        digest.update(doc.id.encode())
        digest.update(b"\0")
        digest.update(doc.title.encode())
        digest.update(b"\0")
        digest.update(doc.text.encode())
        digest.update(b"\1")
    return digest.hexdigest()


class BM25Retriever(Retriever):
    name = "bm25"

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

    # -- building ---------------------------------------------------------------------------

    def document_tokens(self, title: str, text: str) -> list[str]:
        tokens = self.analyzer(text)
        if title and self.title_weight > 0:
            tokens = self.analyzer(title) * self.title_weight + tokens
        return tokens

    def index(self, corpus: Corpus, progress: Callable[[int], None] | None = None) -> BM25Retriever:
        # Term ids in order of first occurrence; the defaultdict hands out the next id to a new
        # term, so mapping a document's tokens to ids is one C-level map() instead of a Python loop.
        vocab: defaultdict[str, int] = defaultdict(count().__next__)
        term_id = vocab.__getitem__
        document_tokens = self.document_tokens
        ids_per_doc: list[list[int]] = []
        append = ids_per_doc.append
        for doc in corpus:
            append(list(map(term_id, document_tokens(doc.title, doc.text))))
            if progress:
                progress(1)
        return self._index_ids(ids_per_doc, dict(vocab), corpus.ids, corpus_fingerprint(corpus))

    def _index_ids(self, ids_per_doc, vocab, doc_ids, fingerprint) -> BM25Retriever:
        # bm25s scores a query with no known term through an "empty" token; it must exist.
        vocab.setdefault("", len(vocab))
        engine = bm25s.BM25(k1=self.k1, b=self.b, method=self.method, backend="numba")
        engine.index((ids_per_doc, vocab), show_progress=False)
        self._bm25, self.vocab, self.doc_ids, self.fingerprint = engine, vocab, list(doc_ids), fingerprint
        return self

    # -- searching --------------------------------------------------------------------------

    def query_ids(self, text: str) -> list[int]:
        vocab = self.vocab
        tokens = self.analyzer(text)
        if "" in tokens:
            tokens = [t for t in tokens if t]
        if self.dedupe_query:
            # Each repeat of a query term would add its score again; collapsing repeats is the
            # classic BM25 query model and measured better on the Polish exams. (dict.fromkeys
            # keeps first occurrences in order; the None key collects unknown terms.)
            ids = dict.fromkeys(map(vocab.get, tokens))
            ids.pop(None, None)
            return list(ids)
        return [i for i in map(vocab.get, tokens) if i is not None]

    def search(self, text: str, k: int = 100) -> list[tuple[str, float]]:
        return self.search_ids([self.query_ids(text)], k)[0]

    def search_many(
        self, queries: Sequence[Query], k: int = 100, progress: Callable[[int], None] | None = None
    ) -> Run:
        run: Run = {}
        batch = 256
        query_ids = self.query_ids
        for start in range(0, len(queries), batch):
            chunk = queries[start:start + batch]
            results = self._retrieve([query_ids(q.text) for q in chunk], k)
            for query, (docs, scores) in zip(chunk, results, strict=True):
                run[query.id] = dict(zip(docs, scores, strict=True))
            if progress:
                progress(len(chunk))
        return run

    def search_ids(self, queries: list[list[int]], k: int = 100) -> list[list[tuple[str, float]]]:
        return [list(zip(docs, scores, strict=True)) for docs, scores in self._retrieve(queries, k)]

    def _retrieve(self, queries: list[list[int]], k: int) -> list[tuple[list[str], list[float]]]:
        """(document ids, scores) of each query's hits, best first; documents scoring 0 left out."""
        if self._bm25 is None:
            raise RuntimeError("BM25 index not built: call index() or load() first")
        out: list[tuple[list[str], list[float]]] = [([], []) for _ in queries]
        todo = [i for i, q in enumerate(queries) if q]
        if not todo:
            return out
        k = min(k, len(self.doc_ids))
        docs, scores = self._bm25.retrieve(
            [queries[i] for i in todo], k=k, show_progress=False, n_threads=1, return_as="tuple"
        )
        # A document matching no query term is not a result. Hits come best first, so the kept
        # ones are usually a prefix of each row; whole rows convert to Python at once.
        keep = scores > 0
        n_keep = keep.sum(axis=1).tolist()
        prefix = bool((keep[:, :-1] >= keep[:, 1:]).all())
        doc_name = self.doc_ids.__getitem__
        for row, (i, n, d, s) in enumerate(zip(todo, n_keep, docs.tolist(), scores.tolist(), strict=True)):
            if prefix:
                out[i] = (list(map(doc_name, d[:n])), s[:n])
            else:
                mask = keep[row].tolist()
                out[i] = ([doc_name(x) for x, m in zip(d, mask, strict=True) if m],
                          [x for x, m in zip(s, mask, strict=True) if m])
        return out

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
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._bm25.save(str(folder), corpus=None)
        meta = {**self.config(), "doc_ids": self.doc_ids}
        # lexir.json is written last: its presence marks a complete index.
        tmp = folder / "lexir.json.part"
        tmp.write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
        tmp.replace(folder / "lexir.json")
        return folder

    @classmethod
    def load(cls, folder: str | Path, mmap: bool = True) -> BM25Retriever:
        folder = Path(folder)
        meta_path = folder / "lexir.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"{folder} is not a complete lexir BM25 index (no lexir.json)")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"{meta_path}: index format {meta.get('format')} is not {FORMAT_VERSION}; rebuild it")
        retriever = cls(
            Analyzer(AnalyzerConfig(**meta["analyzer"])),
            k1=meta["k1"], b=meta["b"], method=meta["method"],
            title_weight=meta["title_weight"], dedupe_query=meta["dedupe_query"],
        )
        engine = bm25s.BM25.load(str(folder), mmap=mmap, load_vocab=True)
        engine.backend = "numba"
        retriever._bm25 = engine
        retriever.vocab = engine.vocab_dict
        retriever.doc_ids = meta["doc_ids"]
        retriever.fingerprint = meta["fingerprint"]
        return retriever


def make_analyzer(corpus: Corpus, language: str, mode: str, stopwords: bool, lemmatizer: str) -> Analyzer:
    language = language or corpus.language
    if not language:
        raise ValueError(f"corpus {corpus.name!r} has no language: pass language=… (any Snowball language)")
    return Analyzer(AnalyzerConfig(language=language, mode=mode, stopwords=stopwords, lemmatizer=lemmatizer))


@register_system(
    "bm25",
    "BM25 (bm25s) over article text with lexir's analyzer (raw, stem or lemma)",
    k1=1.2, b=0.75, mode="raw", stopwords=True, lemmatizer="simplemma", language="",
    method="lucene", title_weight=1, dedupe_query=True,
)
def build_bm25(corpus: Corpus, *, k1, b, mode, stopwords, lemmatizer, language, method, title_weight,
               dedupe_query, progress=None) -> BM25Retriever:
    analyzer = make_analyzer(corpus, language, mode, stopwords, lemmatizer)
    return BM25Retriever(analyzer, k1, b, method, title_weight, dedupe_query).index(corpus, progress)
