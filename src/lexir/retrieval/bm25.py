"""BM25 over article text with lexir's analyzers: lexir's BM25 core.

The index is a folder: the score matrix (:class:`~lexir.retrieval.bm25_matrix.ScoreMatrix`, in
bm25s's file layout, loaded memory-mapped), plus ``lexir.json`` holding the analyzer
configuration, BM25 parameters, document ids and a fingerprint of the corpus, so a saved index
answers queries exactly as the fresh one did and is never reused for a corpus it was not built
from. Queries become term ids through :class:`~lexir.retrieval.bm25_terms.QueryTerms` and are
scored by the matrix's :meth:`~lexir.retrieval.bm25_matrix.ScoreMatrix.top_k`.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, count
from pathlib import Path

import numpy as np

from lexir.analysis import MODES, Analyzer, AnalyzerConfig, bulk_lemmas, release_lemmatizer
from lexir.ids import DocIds
from lexir.io.generations import loads, new_generation
from lexir.io.markers import read_marker, write_marker
from lexir.retrieval import bm25_kernel
from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.bm25_matrix import METHODS, ScoreMatrix
from lexir.retrieval.bm25_pieces import PieceIds, analysed_pieces, expanded
from lexir.retrieval.bm25_terms import QueryTerms
from lexir.retrieval.params import Param
from lexir.types import Corpus, Document, DocumentStream, Query, Run

# 2: the document ids in two .npy files (DocIds), not in lexir.json; format 1 still loads
FORMAT_VERSION = 2
_READS = (1, 2)
_IDS = "doc_ids"
__all__ = ["METHODS", "BM25Retriever", "ScoreMatrix", "QueryTerms", "document_tokens", "make_analyzer"]


def corpus_fingerprint(corpus: Corpus) -> str:
    """The corpus's fingerprint (see :attr:`lexir.types.Corpus.fingerprint`)."""
    return corpus.fingerprint


def document_tokens(analyzer: Analyzer, title: str, text: str, title_weight: int = 1) -> list[str]:
    """The terms BM25 indexes for a document: the title's ``title_weight`` times, then the text's."""
    tokens = analyzer(text)
    if title and title_weight > 0:
        tokens = analyzer(title) * title_weight + tokens
    return tokens


def analysed(corpus: Iterable[Document], analyzer: Analyzer, title_weight: int = 1,
             progress: Callable[[int], None] | None = None,
             release: bool = False) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """What BM25 indexes of ``corpus`` (a Corpus, or any documents in order: a
    :class:`~lexir.types.DocumentStream`): every document's term ids (:func:`document_tokens`'s
    terms; int32), concatenated in corpus order, the documents' lengths (int64), and the
    vocabulary (term -> id, in order of first occurrence). With ``release``, simplemma's
    dictionaries (:func:`~lexir.analysis.release_lemmatizer`) and the analyzer's cached word forms
    (:meth:`~lexir.analysis.Analyzer.forget_forms`) are freed as soon as the last text is analysed."""
    # Term ids in order of first occurrence; the defaultdict hands out the next id to a new
    # term. The ids of all documents go into one flat int32 array (what the score matrix is built
    # from), so no document's token list outlives its document.
    vocab: defaultdict[str, int] = defaultdict(count().__next__)
    pieces = None
    with bulk_lemmas():
        if isinstance(analyzer, Analyzer):
            # each distinct piece of text analysed once, the rest looked up by numba (bm25_pieces)
            pieces = PieceIds(analyzer, vocab.__getitem__, keep_forms=not release)
            term_ids, lengths = analysed_pieces(corpus, analyzer, title_weight, pieces, progress)
        else:  # an analyzer of other terms (evidence.BigramAnalyzer: pairs of terms)
            term_ids, lengths = _analysed_terms(corpus, analyzer, vocab.__getitem__, title_weight, progress)
    if release:
        release_lemmatizer()
        if pieces is not None:
            analyzer.forget_forms()
    lengths_array = np.frombuffer(lengths, dtype=np.int64)
    if pieces is not None and pieces.several:
        return expanded(term_ids, lengths_array, pieces.several), lengths_array, dict(vocab)
    return np.frombuffer(term_ids, dtype=np.int32), lengths_array, dict(vocab)


def _analysed_terms(corpus: Iterable[Document], analyzer, term_id: Callable[[str], int], title_weight: int,
                    progress: Callable[[int], None] | None) -> tuple[array, array]:
    """analysed() for an analyzer of other terms: each document's terms looked up, each distinct
    title's once (when documents are paragraphs, many share their article's heading)."""
    term_ids, lengths = array("i"), array("q")
    add_ids, add_length = term_ids.extend, lengths.append
    titles: dict[str, array] = {}
    for doc in corpus:
        before = len(term_ids)
        if doc.title and title_weight > 0:
            head = titles.get(doc.title)
            if head is None:
                head = titles[doc.title] = array("i", map(term_id, analyzer(doc.title))) * title_weight
            add_ids(head)
        add_ids(map(term_id, analyzer(doc.text)))
        add_length(len(term_ids) - before)
        if progress:
            progress(1)
    return term_ids, lengths


class BM25Retriever(Retriever):
    name = "bm25"
    query_params = frozenset({"dedupe_query", "prune"})

    def __init__(
        self,
        analyzer: Analyzer,
        k1: float = 1.2,
        b: float = 0.75,
        method: str = "lucene",
        title_weight: int = 1,
        dedupe_query: bool = True,
        prune: str = "auto",
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown BM25 method {method!r}; valid: {', '.join(METHODS)}")
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1 (got k1={k1}, b={b})")
        self.analyzer = analyzer
        self.k1, self.b, self.method = float(k1), float(b), method
        self.title_weight = int(title_weight)
        self.dedupe_query = dedupe_query
        # Dynamic pruning of the top-k search (bm25_kernel.top_k): "auto" where it pays, "on",
        # "off"; the same hits either way. Not saved with the index: a search-time choice.
        if prune not in bm25_kernel.PRUNE:
            raise ValueError(f"prune={prune!r}: valid: {', '.join(bm25_kernel.PRUNE)}")
        self.prune = prune
        self._ids = DocIds.of([])
        self.vocab: dict[str, int] = {}
        self.fingerprint = ""
        self.matrix: ScoreMatrix | None = None
        self._terms: QueryTerms | None = None  # see terms()

    @property
    def doc_ids(self) -> DocIds:
        """Document number -> id, kept compactly (:class:`~lexir.ids.DocIds`; any sequence
        of ids assigned here is converted)."""
        return self._ids

    @doc_ids.setter
    def doc_ids(self, ids: Sequence[str]) -> None:
        self._ids = DocIds.of(ids)

    # -- building ---------------------------------------------------------------------------

    def document_tokens(self, title: str, text: str) -> list[str]:
        return document_tokens(self.analyzer, title, text, self.title_weight)

    def index(self, corpus: Corpus | DocumentStream, progress: Callable[[int], None] | None = None) -> BM25Retriever:
        # A stream is a corpus too large to hold, built by a process of its own (lexir index):
        # simplemma's dictionaries (German: 101 MiB) are freed once its texts are analysed, before
        # the matrix is counted (the build's peak); a later text with a word not yet seen loads
        # them again (a second). A Corpus's build keeps them: a service analysing questions must
        # not pay that.
        term_ids, lengths, vocab = analysed(corpus, self.analyzer, self.title_weight, progress,
                                            release=isinstance(corpus, DocumentStream))
        return self.index_flat(term_ids, lengths, vocab, corpus.ids, corpus_fingerprint(corpus))

    def index_ids(self, ids_per_doc: Sequence[Sequence[int]], vocab: dict[str, int], doc_ids: Sequence[str],
                  fingerprint: str) -> BM25Retriever:
        """Index documents given as their term ids (``vocab``'s): a corpus analysed once, indexed
        under several BM25 weights (:mod:`lexir.tuning`)."""
        lengths = np.fromiter(map(len, ids_per_doc), dtype=np.int64, count=len(ids_per_doc))
        term_ids = np.fromiter(chain.from_iterable(ids_per_doc), dtype=np.int64, count=int(lengths.sum()))
        return self.index_flat(term_ids, lengths, vocab, doc_ids, fingerprint)

    def index_flat(self, term_ids: np.ndarray, lengths: np.ndarray, vocab: dict[str, int], doc_ids: Sequence[str],
                   fingerprint: str) -> BM25Retriever:
        """Index documents given as the concatenation of their term ids and their lengths."""
        vocab.setdefault("", len(vocab))  # the empty column bm25s's files have (no term)
        self.matrix = ScoreMatrix.build(term_ids, lengths, len(vocab), self.k1, self.b, self.method)
        self.vocab, self.doc_ids, self.fingerprint = vocab, doc_ids, fingerprint
        return self

    # -- searching --------------------------------------------------------------------------

    def terms(self) -> QueryTerms:
        """Query text -> term ids, for this analyzer, vocabulary and ``dedupe_query`` (made anew
        if any is replaced)."""
        terms = self._terms
        if (terms is None or terms.vocab is not self.vocab or terms.source is not self.analyzer
                or terms.dedupe != self.dedupe_query):
            terms = self._terms = QueryTerms(self.analyzer, self.vocab, self.dedupe_query)
        return terms

    def query_ids(self, text: str) -> list[int]:
        """The term ids of a query (known terms only; repeats collapsed unless ``dedupe_query``
        is off)."""
        return self.terms().ids(text)

    def queries_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """``[query_ids(t) for t in texts]``, the texts analysed together."""
        return self.terms().lists(texts)

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
        """The hits of queries given as term ids (each term scored as often as it is listed)."""
        pointers = np.zeros(len(queries) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, queries), dtype=np.int64, count=len(queries)), out=pointers[1:])
        flat = np.fromiter(chain.from_iterable(queries), dtype=np.int64, count=int(pointers[-1]))
        return [list(zip(docs, scores, strict=True)) for docs, scores in self._hits(flat, pointers, k)]

    def _found(self, texts: Sequence[str], k: int) -> list[tuple[list[str], list[float]]]:
        """(document ids, scores) of each text's hits, best first; documents scoring 0 left out.
        The analysis's raw ids go to the kernel as they are: it skips unknown terms, the
        separators and (``dedupe_query``) repeats."""
        if not texts:
            return []
        return self._hits(*self.terms().raw_batch(texts), k, dedupe=self.dedupe_query)

    def _hits(self, flat: np.ndarray, pointers: np.ndarray, k: int,
              dedupe: bool = False) -> list[tuple[list[str], list[float]]]:
        """(document ids, scores) of each query's hits, best first, documents scoring 0 left out;
        query ``i`` is the term ids ``flat[pointers[i]:pointers[i + 1]]`` (see ScoreMatrix.top_k)."""
        if self.matrix is None:
            raise RuntimeError("BM25 index not built: call index() or load() first")
        n = len(pointers) - 1
        k = min(k, len(self.doc_ids))
        if not len(flat) or k <= 0:
            return [([], []) for _ in range(n)]
        return self.rows(*self.matrix.top_k(flat, pointers, k, dedupe, getattr(self, "prune", "auto")))

    def rows(self, docs: np.ndarray, scores: np.ndarray, positive: np.ndarray) -> list[tuple[list[str], list[float]]]:
        """The score matrix's :meth:`~ScoreMatrix.top_k` answer as (document ids, scores) per query,
        best first, documents scoring 0 left out."""
        n = len(positive)
        # Whole result matrices convert to Python at once, as two flat lists (document numbers to
        # ids: DocIds.take); each row is then its slice, cut to its hits above zero (a document
        # matching no query term is not a result), a prefix since rows are sorted. Flat lists,
        # not lists of rows: fewer objects for the garbage collector to walk.
        names, values = self.doc_ids.take(docs), scores.ravel().tolist()
        width = docs.shape[1]
        starts = range(0, n * width, width)
        if positive.min() == width:  # every row full: the usual case for long queries
            return [(names[a:a + width], values[a:a + width]) for a in starts]
        return [(names[a:a + m], values[a:a + m]) for a, m in zip(starts, positive.tolist(), strict=True)]

    def scores(self, text: str) -> np.ndarray:
        """The BM25 score of every document (in corpus order) for ``text``."""
        ids = self.query_ids(text)
        if not ids:
            return np.zeros(len(self.doc_ids), dtype=np.float32)
        return self.matrix.scores(ids)

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
        """A new generation of ``folder`` (:mod:`lexir.io.generations`): the score matrix's files,
        the document ids' (:meth:`DocIds.save <lexir.ids.DocIds.save>`) and ``lexir.json``."""
        folder = Path(folder)
        with new_generation(folder) as gen:
            self.matrix.save(gen.path, self.vocab)
            self.doc_ids.save(gen.path, _IDS)
            write_marker(gen / "lexir.json", self.config())
        return folder

    @classmethod
    @loads
    def load(cls, folder: str | Path, mmap: bool = True) -> BM25Retriever:
        folder = Path(folder)
        meta = read_marker(folder / "lexir.json", "lexir BM25 index", _READS)
        retriever = cls(
            Analyzer(AnalyzerConfig(**meta["analyzer"])),
            k1=meta["k1"], b=meta["b"], method=meta["method"],
            title_weight=meta["title_weight"], dedupe_query=meta["dedupe_query"],
        )
        retriever.matrix, retriever.vocab = ScoreMatrix.load(folder, mmap=mmap)
        # format 1 kept the ids in lexir.json; they are made compact here too
        retriever.doc_ids = meta["doc_ids"] if "doc_ids" in meta else DocIds.load(folder, _IDS, mmap=mmap)
        retriever.fingerprint = meta["fingerprint"]
        return retriever


def make_analyzer(corpus: Corpus, language: str, mode: str, stopwords: bool, lemmatizer: str,
                  stoplist: str = "", verb_lemmas: bool = False, families: bool = False,
                  compounds: str = "") -> Analyzer:
    """The analyzer of ``language`` (else the corpus's); ``mode="auto"`` is that language's default
    analysis from ``lexir/analysis/data/defaults.tsv`` (each chosen on that language's development
    data): its mode and the options the row names beside it (German: stopwords-iso, verb lemmas),
    a ``stoplist`` or an option turned on here taking precedence."""
    language = language or corpus.language
    if not language:
        raise ValueError(f"corpus {corpus.name!r} has no language: pass language=… (any Snowball language)")
    if mode == "auto":
        from lexir.analysis import language_defaults

        row = language_defaults(language)
        mode, options = row.mode, row.options()
        stoplist = stoplist or str(options.get("stoplist", ""))
        verb_lemmas = verb_lemmas or bool(options.get("verb_lemmas", False))
        families = families or bool(options.get("families", False))
        compounds = compounds or str(options.get("compounds", ""))
    return Analyzer(AnalyzerConfig(language=language, mode=mode, stopwords=stopwords, lemmatizer=lemmatizer,
                                   stoplist=stoplist, verb_lemmas=verb_lemmas, families=families,
                                   compounds=compounds))


def _auto_modes() -> str:
    from lexir.analysis import all_language_defaults

    return ", ".join(f"{d.language} {d.mode}" if d.language != "*" else f"others {d.mode}"
                     for d in all_language_defaults())


@register_system(
    "bm25",
    "BM25 (lexir's score matrix, bm25s's formulas) over article text with lexir's analyzer (raw, stem or lemma; mode=auto is the language's "
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
    families=Param(False, "mode=lemma: the lemmas of a word family meet (lexir/analysis/data/families/<lang>.tsv: "
                   "a verb's two aspects and its noun, ukradłem meets kradzież; pl)"),
    compounds=Param("", "mode=raw|stem: a compound's parts follow it (lexir/analysis/data/compounds/<lang>.tsv; de): "
                    "query (in the question alone: Mietvertragskündigung meets Kündigung), both (in the "
                    "provisions too), '' off; mode=auto: the language's row", choices=("", "query", "both")),
    method="lucene", title_weight=1, dedupe_query=True,
    bigrams=Param(0.0, "weight of BM25 over adjacent term pairs added to the score (phrase evidence; 0 = off)"),
)
def build_bm25(corpus: Corpus, *, k1, b, mode, stopwords, lemmatizer, language, stoplist, verb_lemmas, families,
               compounds, method, title_weight, dedupe_query, bigrams, progress=None) -> Retriever:
    analyzer = make_analyzer(corpus, language, mode, stopwords, lemmatizer, stoplist, verb_lemmas, families,
                             compounds)
    if bigrams:  # phrase evidence: adjacent term pairs in a second index, weighted (retrieval/evidence.py)
        from lexir.retrieval.evidence import PhraseBM25

        return PhraseBM25.build(corpus, analyzer, bigrams, progress, k1=k1, b=b, method=method,
                                title_weight=title_weight, dedupe_query=dedupe_query)
    return BM25Retriever(analyzer, k1, b, method, title_weight, dedupe_query).index(corpus, progress)
