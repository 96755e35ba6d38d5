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
from itertools import chain, count
from pathlib import Path

import bm25s
import numpy as np

from lexir.analysis import MODES, Analyzer, AnalyzerConfig
from lexir.io.markers import read_marker, write_marker
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
        self._ids: _TermIds | None = None  # see _term_ids()

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
        """``[query_ids(t) for t in texts]``, the texts analysed together (one normalisation,
        case fold and tokenisation for all: :meth:`Analyzer.surface_many`)."""
        analyzer = self.analyzer
        if type(analyzer) is not Analyzer:  # another analyzer (bigrams): its terms, looked up
            surfaces, get = [analyzer(t) for t in texts], self._known_term
        else:
            surfaces = [analyzer.surface(texts[0])] if len(texts) == 1 else analyzer.surface_many(list(texts))
            get = self._term_ids().__getitem__
        if not self.dedupe_query:
            return [[i for i in map(get, tokens) if i is not None] for tokens in surfaces]
        out = []
        for tokens in surfaces:
            # Each repeat of a query term would add its score again; collapsing repeats is the
            # classic BM25 query model and measured better on the Polish exams. (dict.fromkeys
            # keeps first occurrences in order; the None key collects unknown terms.)
            ids = dict.fromkeys(map(get, tokens))
            ids.pop(None, None)
            out.append(list(ids))
        return out

    def _known_term(self, term: str) -> int | None:
        return self.vocab.get(term) if term else None  # "" is bm25s's empty token, no query term

    def _term_ids(self) -> _TermIds:
        """Surface token -> term id, for this analyzer and vocabulary (rebuilt if either changes)."""
        ids = self._ids
        if ids is None or ids.vocab is not self.vocab or ids.analyzer is not self.analyzer:
            ids = self._ids = _TermIds(self.analyzer, self.vocab)
        return ids

    def search_many(
        self, queries: Sequence[Query], k: int = 100, progress: Callable[[int], None] | None = None
    ) -> Run:
        run: Run = {}
        batch = 256
        for start in range(0, len(queries), batch):
            chunk = queries[start:start + batch]
            results = self._retrieve(self.queries_ids([q.text for q in chunk]), k)
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
        asked = [queries[i] for i in todo] if len(todo) < len(queries) else queries
        docs, scores = _top_k(self._bm25, asked, k)
        # Whole result matrices convert to Python at once (document numbers to ids by indexing
        # an object array). A document matching no query term is not a result; hits come best
        # first, so the kept ones are a prefix of each row unless scores can be negative.
        names, values = self._doc_names()[docs].tolist(), scores.tolist()
        keep = scores > 0
        n_keep = keep.sum(axis=1).tolist()
        prefix = bool((keep[:, :-1] >= keep[:, 1:]).all())
        for row, (i, n, d, s) in enumerate(zip(todo, n_keep, names, values, strict=True)):
            if prefix:
                out[i] = (d[:n], s[:n]) if n < k else (d, s)
            else:
                mask = keep[row].tolist()
                out[i] = ([x for x, m in zip(d, mask, strict=True) if m],
                          [x for x, m in zip(s, mask, strict=True) if m])
        return out

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
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._bm25.save(str(folder), corpus=None)
        write_marker(folder / "lexir.json", {**self.config(), "doc_ids": self.doc_ids})
        return folder

    @classmethod
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


class _TermIds(dict):
    """Surface token -> term id, or None for a stopword or a term the index lacks: the analysis
    of a query token after folding (stopword test, stem or lemma) and the vocabulary look-up,
    done once per distinct token. Cleared when it grows past ``limit`` (a service meets new
    words for ever)."""

    __slots__ = ("analyzer", "limit", "vocab")

    def __init__(self, analyzer: Analyzer, vocab: dict[str, int], limit: int = 1 << 20) -> None:
        super().__init__()
        self.analyzer, self.vocab, self.limit = analyzer, vocab, limit

    def __missing__(self, token: str) -> int | None:
        if len(self) >= self.limit:
            self.clear()
        term = self.analyzer.term(token)
        found = self[token] = self.vocab.get(term) if term else None
        return found


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


def _top_k(engine: bm25s.BM25, queries: list[list[int]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """(document numbers, scores) of the best ``k`` documents for each query (lists of known
    term ids, none empty), best first.

    ``BM25.retrieve`` re-checks every id against the vocabulary and turns each query into an
    array of its own, in Python, before its kernel runs: as long again as the kernel on short
    queries. lexir's ids come from the index's vocabulary, so the batch goes to the kernel as
    one flat array and the query boundaries.
    """
    kernel = _kernel() if _DIRECT_KERNEL and engine.backend == "numba" else None
    if kernel is None:
        return engine.retrieve(queries, k=k, show_progress=False, n_threads=1, return_as="tuple")
    int_dtype = np.dtype(engine.int_dtype)
    lengths = np.fromiter(map(len, queries), dtype=int_dtype, count=len(queries))
    pointers = np.zeros(len(queries) + 1, dtype=int_dtype)
    np.cumsum(lengths, out=pointers[1:])
    flat = np.fromiter(chain.from_iterable(queries), dtype=int_dtype, count=int(pointers[-1]))
    matrix = engine.scores
    scores, docs = kernel(
        query_tokens_ids_flat=flat, query_pointers=pointers, k=k, sorted=True, dtype=np.dtype(engine.dtype),
        int_dtype=int_dtype, data=matrix["data"], indptr=matrix["indptr"], indices=matrix["indices"],
        num_docs=matrix["num_docs"], nonoccurrence_array=engine.nonoccurrence_array, weight_mask=None,
    )
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


def make_analyzer(corpus: Corpus, language: str, mode: str, stopwords: bool, lemmatizer: str) -> Analyzer:
    """The analyzer of ``language`` (else the corpus's); ``mode="auto"`` is that language's default
    mode from ``lexir/analysis/data/defaults.tsv`` (each chosen on that language's development data)."""
    language = language or corpus.language
    if not language:
        raise ValueError(f"corpus {corpus.name!r} has no language: pass language=… (any Snowball language)")
    if mode == "auto":
        from lexir.analysis import language_defaults

        mode = language_defaults(language).mode
    return Analyzer(AnalyzerConfig(language=language, mode=mode, stopwords=stopwords, lemmatizer=lemmatizer))


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
    method="lucene", title_weight=1, dedupe_query=True,
    bigrams=Param(0.0, "weight of BM25 over adjacent term pairs added to the score (phrase evidence; 0 = off)"),
)
def build_bm25(corpus: Corpus, *, k1, b, mode, stopwords, lemmatizer, language, method, title_weight,
               dedupe_query, bigrams, progress=None) -> Retriever:
    analyzer = make_analyzer(corpus, language, mode, stopwords, lemmatizer)
    if bigrams:  # phrase evidence: adjacent term pairs in a second index, weighted (retrieval/evidence.py)
        from lexir.retrieval.evidence import PhraseBM25

        return PhraseBM25.build(corpus, analyzer, bigrams, progress, k1=k1, b=b, method=method,
                                title_weight=title_weight, dedupe_query=dedupe_query)
    return BM25Retriever(analyzer, k1, b, method, title_weight, dedupe_query).index(corpus, progress)
