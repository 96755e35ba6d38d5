"""``bm25-qa``: each provision indexed together with the training questions judged relevant to it.

The score of a provision for a question is a weighted sum of evidence fields, each divided
by its largest value for that question (so a weight means the same for a short and a long
question)::

    score = base + w_joint * joint + w_field * field + w_neighbours * neighbours + w_prior * prior + ...

- ``base``: the base system's score (``bm25`` over the provision's own text, or the language's
  ``recommended`` pipeline), its top ``depth``;
- ``joint``: BM25 over each provision's text with its training questions appended, one field
  (doc2query with real questions; a provision no question cites keeps its text only);
- ``field``: BM25 over the training questions that cite a provision alone, as a field of its
  own (a provision no question cites has none);
- ``neighbours``: BM25 over the training questions one by one; the ``neighbours`` most similar
  ones vote for the provisions they cite, with their BM25 score times the judgement's grade;
- ``prior``: ``log(1 + n) / log(1 + n_max)`` for a provision cited by ``n`` training questions;
- ``dense_neighbours`` (with a dense encoder, :class:`DenseEvidence`): the ``DENSE_K`` training
  questions nearest by e5 cosine vote for the provisions they cite, with their cosine times the
  grade (lay questions resemble each other more than they resemble the statute);
- ``adapter``: a linear map from a question's e5 vector to the provisions, started at the
  provisions' own vectors (zero-shot dense retrieval) and fitted on the training questions by
  softmax cross-entropy with an L2 pull back to that start (dense domain adaptation that fits two
  CPU cores: the encoder stays frozen, the map is 384 x provisions);
- ``expansion``: the question expanded into statutory terms by lay-to-legal term associations
  learned from the question/provision pairs (:class:`TermAssociations`), scored by BM25 over the
  provisions' own text (so it reaches provisions no training question cites).

A model may also have a **recall stage**: a second set of weights, chosen for R@100, whose top
``CANDIDATES`` the weights above reorder (:func:`cascade`; :func:`choose_recall`).

Training (:func:`train_qa`) chooses the weights and the number of neighbours on inner folds of
the training questions alone (hash folds, :mod:`lexir.learning.folds`), by nDCG@10 pooled over
the inner folds, then indexes all training questions. Every BM25 index is lexir's own
(:class:`~lexir.retrieval.bm25.BM25Retriever`) with the language's analyzer.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from scipy import sparse

from lexir.datasets.folds import kfold_ids
from lexir.learning.model import Model, TrainingQuestion
from lexir.retrieval.base import Retriever, top_scores
from lexir.retrieval.bm25 import BM25Retriever, make_analyzer
from lexir.types import Corpus, Document, Qrels, Query, Run

# What training tries (each weight on the evidence of the module doc; the base weight is 1).
GRID: dict[str, tuple] = {
    "joint": (0.0, 0.5, 1.0, 2.0, 4.0),
    "field": (0.0, 0.5, 1.0, 2.0, 4.0),
    "neighbours": (0.0, 0.25, 0.5, 1.0, 2.0),
    "prior": (0.0, 0.05, 0.2, 0.4),
    "k": (30, 100),
}
# The dense evidence's extra weights (tried after GRID, with GRID's best weights fixed, then GRID again).
DENSE_GRID: dict[str, tuple] = {"dense_neighbours": (0.0, 0.5, 1.0, 2.0), "adapter": (0.0, 0.5, 1.0, 2.0)}
# The term associations' weight (tried last, at the best point of the others).
EXPANSION_GRID: dict[str, tuple] = {"expansion": (0.0, 0.5, 1.0, 2.0)}
# The recall stage (a first stage whose top CANDIDATES the nDCG@10 weights reorder): its weights are
# chosen for R@100 on the same inner folds, the dense ones again at its best lexical point; it is kept
# where it finds more judged provisions in the top 100 there and costs at most RECALL_TOLERANCE nDCG@10.
RECALL_GRID: dict[str, tuple] = {"joint": (0.0, 0.5, 1.0, 2.0), "field": (0.0, 0.5, 1.0, 2.0),
                                 "neighbours": (0.0, 0.5, 1.0, 2.0), "prior": (0.0, 0.05, 0.2, 0.4, 1.0),
                                 "expansion": (0.0, 0.5, 1.0, 2.0)}
RECALL_TOLERANCE = 0.005
DENSE_SPEC = "dense(encoder=onnx)"  # the encoder of the dense evidence (lexir[onnx], int8 e5-small)
DENSE_K = 30  # nearest training questions that vote, by e5 cosine
# What of a question e5 encodes: its first and its last QUESTION_WORDS words (the facts it opens
# with, the question it ends on), training questions and new ones alike. A latency budget, not a
# tuned setting: e5's cost grows with the tokens, and a lay question's median is about 290.
QUESTION_WORDS = 60
DENSE_AUTO_MAX = 3000  # dense=auto: only over corpora of at most this many provisions (encoding cost)
ADAPTER = {"l2": 1e-3, "epochs": 100, "scale": 20.0, "lr": 0.05}  # softmax temperature 1/scale, Adam
DEPTH = 1000  # base results used per question
BATCH = 128  # questions scored together (dense rows of the corpus's width)
SEEN = ("refuse", "warn", "allow")


class SeenQueryError(ValueError):
    """A run over questions a model was trained on (their scores would measure memory)."""


@dataclass(frozen=True)
class Weights:
    field: float
    neighbours: float
    prior: float
    k: int
    joint: float = 0.0
    dense_neighbours: float = 0.0
    adapter: float = 0.0
    expansion: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"joint": self.joint, "field": self.field, "neighbours": self.neighbours, "prior": self.prior,
                "k": self.k, "dense_neighbours": self.dense_neighbours, "adapter": self.adapter,
                "expansion": self.expansion}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Weights:
        """The weights of a manifest's ``params`` (or its ``recall`` stage); absent ones are 0."""
        return cls(float(values["field"]), float(values["neighbours"]), float(values["prior"]), int(values["k"]),
                   float(values.get("joint", 0.0)), float(values.get("dense_neighbours", 0.0)),
                   float(values.get("adapter", 0.0)), float(values.get("expansion", 0.0)))

    @property
    def learned(self) -> float:
        return (self.joint + self.field + self.neighbours + self.prior + self.dense_neighbours + self.adapter
                + self.expansion)

    @property
    def dense(self) -> bool:
        return bool(self.dense_neighbours or self.adapter)


class Evidence:
    """The learned fields over one corpus from a set of training questions."""

    def __init__(self, corpus: Corpus, questions: Sequence[TrainingQuestion], language: str = "",
                 dense: Any = None, adapter: tuple[np.ndarray, np.ndarray] | None = None,
                 text: BM25Retriever | None = None) -> None:
        """``text``: :func:`text_index` of ``corpus`` and ``language``, when the caller builds
        several Evidence over one corpus (the inner folds): it does not depend on the questions."""
        self.doc_ids = corpus.ids
        column = {doc: i for i, doc in enumerate(self.doc_ids)}
        self.column = column
        analyzer = evidence_analyzer(corpus, language)
        kept = [q for q in questions if any(d in column for d in q.relevant)]
        self.unused = len(questions) - len(kept)  # questions citing nothing in this corpus
        by_doc: dict[str, list[str]] = {}
        for q in kept:
            for doc in q.relevant:
                if doc in column:
                    by_doc.setdefault(doc, []).append(q.text)
        cited = [doc for doc in self.doc_ids if doc in by_doc]
        self.field_cols = np.array([column[d] for d in cited], dtype=np.int64)
        self.field = BM25Retriever(analyzer).index(
            Corpus("qa-field", [Document(d, "\n".join(by_doc[d])) for d in cited])) if cited else None
        self.field_col = {d: column[d] for d in cited}
        self.joint = BM25Retriever(analyzer).index(Corpus("qa-joint", [
            Document(d.id, "\n".join([d.text, *by_doc.get(d.id, [])]), d.title) for d in corpus]))
        self.neighbour_index = BM25Retriever(analyzer).index(
            Corpus("qa-questions", [Document(f"q{i}", q.text) for i, q in enumerate(kept)])) if kept else None
        self.votes = vote_matrix(kept, column)
        counts = np.asarray((self.votes > 0).sum(axis=0)).ravel().astype(np.float64)
        self.prior = (np.log1p(counts) / np.log1p(counts.max())).astype(np.float32) if counts.max() > 0 \
            else np.zeros(len(self.doc_ids), dtype=np.float32)
        self.dense = DenseEvidence(dense, self.doc_ids, [q.text for q in kept], self.votes, adapter) \
            if dense is not None and kept else None
        self.associations = TermAssociations(text or text_index(corpus, language), kept, self.votes) \
            if kept else None

    def expansion_matrix(self, queries: Sequence[Query]) -> np.ndarray:
        """The ``expansion`` evidence (:class:`TermAssociations`), one normalised row per query."""
        if self.associations is None:
            return np.zeros((len(queries), len(self.doc_ids)), dtype=np.float32)
        return self.associations.matrix(queries)

    def dense_matrices(self, queries: Sequence[Query]) -> tuple[np.ndarray, np.ndarray] | None:
        """(dense neighbour votes, adapter scores), one normalised row per query; None without an encoder."""
        return self.dense.matrices(queries) if self.dense is not None else None

    def matrices(self, queries: Sequence[Query], ks: Sequence[int],
                 joint: bool = True) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]]:
        """(joint scores, field scores, {k: neighbour votes of the k nearest questions}): dense
        rows, one per query, each normalised by its largest value (joint: zeros unless asked)."""
        n, width = len(queries), len(self.doc_ids)
        joint_scores = np.zeros((n, width), dtype=np.float32)
        if joint:
            _fill(joint_scores, queries, self.joint.search_many(queries, k=min(DEPTH, width)), self.column)
            _normalise(joint_scores)
        field = np.zeros((n, width), dtype=np.float32)
        if self.field is not None:
            run = self.field.search_many(queries, k=len(self.field.doc_ids))
            _fill(field, queries, run, self.field_col)
        votes = {k: np.zeros((n, width), dtype=np.float32) for k in ks}
        if self.neighbour_index is not None and ks:
            top = max(ks)
            run = self.neighbour_index.search_many(queries, k=top)
            for k in ks:
                rows, cols, vals = [], [], []
                for i, q in enumerate(queries):
                    for j, (qid, score) in enumerate(sorted(run.get(q.id, {}).items(), key=lambda kv: -kv[1])):
                        if j >= k:
                            break
                        rows.append(i)
                        cols.append(int(qid[1:]))
                        vals.append(score)
                near = sparse.csr_matrix((vals, (rows, cols)), shape=(n, self.votes.shape[0]), dtype=np.float32)
                votes[k] = np.asarray((near @ self.votes).todense(), dtype=np.float32)
                _normalise(votes[k])
        _normalise(field)
        return joint_scores, field, votes


def evidence_analyzer(corpus: Corpus, language: str = ""):
    """The analyzer of every lexical evidence field: the language's default analysis, with lemmas."""
    return make_analyzer(corpus, language, "auto", True, "simplemma")


def text_index(corpus: Corpus, language: str = "") -> BM25Retriever:
    """BM25 over the provisions' own text with :func:`evidence_analyzer` (what the term
    associations' expansions are scored against)."""
    return BM25Retriever(evidence_analyzer(corpus, language)).index(corpus)


def uses_dense(*stages: Weights | None) -> bool:
    """Whether any of these weights (the nDCG@10 weights, a recall stage) weighs the dense evidence."""
    return any(stage is not None and stage.dense for stage in stages)


def vote_matrix(questions: Sequence[TrainingQuestion], column: Mapping[str, int]) -> sparse.csr_matrix:
    """One row per question, its grade in the column of each provision it cites (those in ``column``)."""
    rows, cols, vals = [], [], []
    for i, q in enumerate(questions):
        for doc, grade in q.relevant.items():
            if doc in column and grade > 0:
                rows.append(i)
                cols.append(column[doc])
                vals.append(float(grade))
    return sparse.csr_matrix((vals, (rows, cols)), shape=(len(questions), len(column)), dtype=np.float32)


class TermAssociations:
    """Lay-to-legal term associations learned from question/provision pairs, used to expand a
    question into statutory terms before BM25 over the provisions' own text (the ``expansion``
    evidence; statistical translation in the spirit of Berger & Lafferty, with counts).

    For a word ``w`` of the training questions (as the analyzer gives it, so the lay vocabulary
    is kept whether the statute uses it or not) and a term ``t`` of the statute, over every pair
    (training question, provision it cites): ``P(t | w)`` is the share of the pairs whose question
    has ``w`` whose provision has ``t``, ``P(t)`` the share of all pairs whose provision has ``t``.
    A word counts only once ``SUPPORT`` training questions use it. A new question's expansion is

        e(t) = sum over its words w of idf(w) * P(t | w) * log(P(t | w) / P(t))   (where P(t | w) > P(t))

    (idf over the training questions; the log-ratio is the lift, weighted by how often it holds),
    cut to its ``TERMS`` heaviest terms and scored as one weighted BM25 query over the provisions'
    text, so it reaches provisions no training question cites: "Eigenbedarf" expands to
    ``vermiet``, ``kundig``, ``mietverhaltnis``, ``wohnraum``, ``573`` ...
    """

    SUPPORT = 3  # training questions a word must occur in before it predicts anything
    TERMS = 100  # statutory terms a question expands to

    def __init__(self, text: BM25Retriever, questions: Sequence[TrainingQuestion],
                 votes: sparse.csr_matrix) -> None:
        """``text``: BM25 over the provisions' text (:func:`text_index`); its analyzer reads the
        questions too."""
        self.text = text
        self.analyzer = analyzer = text.analyzer
        matrix = text.matrix
        n_docs = len(text.doc_ids)
        indptr = np.asarray(matrix.indptr)
        # provision x statutory term: whether the provision's text has the term
        self.has_term = sparse.csc_matrix(
            (np.ones(int(indptr[-1]), dtype=np.float32), np.asarray(matrix.indices), indptr),
            shape=(n_docs, matrix.n_terms)).tocsr()
        self.vocab: dict[str, int] = {}
        rows, cols = [], []
        for i, q in enumerate(questions):
            for word in set(analyzer.tokens(q.text)):
                rows.append(i)
                cols.append(self.vocab.setdefault(word, len(self.vocab)))
        words = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                                  shape=(len(questions), len(self.vocab)))
        cites = (votes > 0).astype(np.float32)
        self.word_cites = (words.T @ cites).tocsr()  # word x provision: pairs
        self.word_pairs = np.asarray(self.word_cites.sum(axis=1)).ravel()
        self.word_questions = np.asarray(words.sum(axis=0)).ravel()
        pairs_per_doc = np.asarray(cites.sum(axis=0)).ravel()
        self.term_share = (pairs_per_doc @ self.has_term) / max(pairs_per_doc.sum(), 1.0)  # P(t)
        self.idf = np.log(max(len(questions), 1) / np.maximum(self.word_questions, 1))

    def expand(self, text: str) -> dict[int, float]:
        """The statutory term ids a question expands to, with their weights (empty: no word known)."""
        words = [self.vocab[w] for w in set(self.analyzer.tokens(text))
                 if w in self.vocab and self.word_questions[self.vocab[w]] >= self.SUPPORT]
        if not words:
            return {}
        # P(t|w) for the (word, term) pairs that occur: sparse, since a corpus has far more terms
        # than any word's provisions use (600k German terms; a dense row per word cost 0.3 s)
        pairs = (self.word_cites[words] @ self.has_term).tocoo()
        row, term = pairs.row, pairs.col
        given = pairs.data / self.word_pairs[words][row]
        share = self.term_share[term]
        with np.errstate(divide="ignore", invalid="ignore"):
            lift = np.divide(given, share, out=np.zeros_like(given), where=share > 0)
            gain = np.where(lift > 1, given * np.log(np.maximum(lift, 1.0)), 0.0)
        weights = np.bincount(term, weights=self.idf[words][row] * gain, minlength=self.has_term.shape[1])
        m = min(self.TERMS, len(weights))
        top = np.argpartition(-weights, m - 1)[:m]
        return {int(t): float(weights[t]) for t in top if weights[t] > 0}

    def matrix(self, queries: Sequence[Query], depth: int = DEPTH) -> np.ndarray:
        """BM25 of each question's expansion over the provisions' text, its best ``depth``
        provisions kept (as the base's run is cut at DEPTH: a hundred terms reach most of a large
        corpus, 85k of the 107k German articles): one normalised row per query."""
        out = np.zeros((len(queries), len(self.text.doc_ids)), dtype=np.float32)
        for i, q in enumerate(queries):
            terms = self.expand(q.text)
            if terms:
                row = self.text.matrix.weighted(terms)
                if depth < len(row):
                    top = np.argpartition(-row, depth - 1)[:depth]
                    out[i, top] = row[top]
                else:
                    out[i] = row
        _normalise(out)
        return out


class DenseEvidence:
    """The e5 side of the evidence: the training questions' vectors (their nearest ``DENSE_K`` vote)
    and the linear adapter (trained here unless given, e.g. read from a model folder)."""

    def __init__(self, dense: Any, doc_ids: Sequence[str], texts: Sequence[str], votes: sparse.csr_matrix,
                 adapter: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.retriever = dense
        self.vectors = dense.encode_queries([question_head_tail(t) for t in texts]).astype(np.float32)
        self.votes = votes
        if adapter is None:
            start = np.stack([dense.article_vector(d) for d in doc_ids]).astype(np.float32).T
            adapter = train_adapter(self.vectors, votes, start)
        self.weights, self.bias = adapter

    def matrices(self, queries: Sequence[Query]) -> tuple[np.ndarray, np.ndarray]:
        v = self.retriever.encode_queries([question_head_tail(q.text) for q in queries]).astype(np.float32)
        sim = v @ self.vectors.T
        k = min(DENSE_K, sim.shape[1])
        top = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        near = np.zeros_like(sim)
        np.put_along_axis(near, top, np.maximum(np.take_along_axis(sim, top, axis=1), 0), axis=1)
        votes = (sparse.csr_matrix(near) @ self.votes).toarray().astype(np.float32)
        _normalise(votes)
        logits = ADAPTER["scale"] * v @ self.weights + self.bias
        adapted = np.exp(logits - logits.max(axis=1, keepdims=True)).astype(np.float32)  # in (0, 1], top 1
        return votes, adapted


def question_head_tail(text: str, words: int = QUESTION_WORDS) -> str:
    """``text`` as the dense evidence encodes it: whole up to ``2 * words`` words, else its first
    and its last ``words`` words, joined by an ellipsis."""
    split = text.split()
    if len(split) <= 2 * words:
        return text
    return " ".join(split[:words]) + " … " + " ".join(split[-words:])


def train_adapter(vectors: np.ndarray, votes: sparse.csr_matrix, start: np.ndarray,
                  params: Mapping[str, float] = ADAPTER) -> tuple[np.ndarray, np.ndarray]:
    """(W, b): softmax(scale * x W + b) over the provisions fitted to each training question's
    judgements (grades, normalised to sum 1) by full-batch Adam; an L2 term pulls W back to
    ``start`` (the provisions' vectors, so an untrained column scores as zero-shot dense retrieval)."""
    target = np.asarray(votes.todense(), dtype=np.float32)
    target /= np.maximum(target.sum(axis=1, keepdims=True), 1e-9)
    x, scale, l2, lr = vectors.astype(np.float32), params["scale"], params["l2"], params["lr"]
    w, b = start.astype(np.float32).copy(), np.zeros(start.shape[1], dtype=np.float32)
    moments = [[np.zeros_like(w), np.zeros_like(w)], [np.zeros_like(b), np.zeros_like(b)]]
    for t in range(1, int(params["epochs"]) + 1):
        z = scale * (x @ w) + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - target) / len(x)
        grads = (scale * (x.T @ g) + l2 * (w - start), g.sum(axis=0))
        for value, grad, (m, v) in zip((w, b), grads, moments, strict=True):
            m *= 0.9
            m += 0.1 * grad
            v *= 0.999
            v += 0.001 * grad * grad
            value -= lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return w, b


def load_adapter(path: str | Path, doc_ids, dense) -> tuple[np.ndarray, np.ndarray]:
    """A model's adapter with its columns in ``doc_ids``' order; a provision it has no column for
    starts where training started (its own vector, bias 0)."""
    with np.load(path, allow_pickle=False) as data:
        weights, bias, ids = data["weights"], data["bias"], [str(i) for i in data["ids"]]
    at = {d: i for i, d in enumerate(ids)}
    if list(doc_ids) == ids:
        return weights, bias
    w = np.empty((weights.shape[0], len(doc_ids)), dtype=np.float32)
    b = np.zeros(len(doc_ids), dtype=np.float32)
    for j, doc in enumerate(doc_ids):
        if doc in at:
            w[:, j], b[j] = weights[:, at[doc]], bias[at[doc]]
        else:
            w[:, j] = dense.article_vector(doc)
    return w, b


def _fill(matrix: np.ndarray, queries: Sequence[Query], run: Run, column: Mapping[str, int]) -> None:
    for i, q in enumerate(queries):
        hits = run.get(q.id)
        if hits:
            cols = [column[d] for d in hits if d in column]
            matrix[i, cols] = [s for d, s in hits.items() if d in column]


def _normalise(matrix: np.ndarray) -> None:
    """Each row divided by its largest value (rows with none above zero stay zero)."""
    top = matrix.max(axis=1, keepdims=True) if matrix.size else np.zeros((len(matrix), 1))
    np.divide(matrix, top, out=matrix, where=top > 0)
    np.maximum(matrix, 0, out=matrix)


def base_matrix(base: Retriever, queries: Sequence[Query], doc_ids: Sequence[str], depth: int = DEPTH,
                column: Mapping[str, int] | None = None) -> np.ndarray:
    """``column``: the position of each of ``doc_ids`` (made here unless given: a served model's
    evidence keeps one, since over 107k provisions making it costs a question 0.1 s)."""
    column = column if column is not None else {d: i for i, d in enumerate(doc_ids)}
    matrix = np.zeros((len(queries), len(doc_ids)), dtype=np.float32)
    _fill(matrix, queries, base.search_many(queries, k=min(depth, len(doc_ids))), column)
    _normalise(matrix)
    return matrix


def combine(base: np.ndarray, joint: np.ndarray, field: np.ndarray, votes: np.ndarray, prior: np.ndarray,
            w: Weights, dense: tuple[np.ndarray, np.ndarray] | None = None,
            expansion: np.ndarray | None = None) -> np.ndarray:
    score = base.copy()
    if w.expansion and expansion is not None:
        score += w.expansion * expansion
    if dense is not None:
        if w.dense_neighbours:
            score += w.dense_neighbours * dense[0]
        if w.adapter:
            score += w.adapter * dense[1]
    if w.joint:
        score += w.joint * joint
    if w.field:
        score += w.field * field
    if w.neighbours:
        score += w.neighbours * votes
    if w.prior:
        score += w.prior * (prior if prior.ndim == 2 else prior[None, :])  # 2-D: a compacted fold's
    return score


# Learning to rank (LightGBM lambdarank) over the evidence: the linear combination's top
# CANDIDATES reordered by a model fitted on the inner folds' out-of-fold evidence, kept only when
# it beats the linear combination on inner folds it was not fitted on.
CANDIDATES = 100
LTR_KS = (10, 30, 100)
FEATURES = ("linear", "base", "joint", "field", "votes@10", "votes@30", "votes@100", "prior", "rank", "log_length")
LTR_PARAMS = {"objective": "lambdarank", "metric": "ndcg", "eval_at": [10], "learning_rate": 0.05,
              "num_leaves": 15, "min_data_in_leaf": 20, "feature_fraction": 0.9, "bagging_fraction": 0.8,
              "bagging_freq": 1, "lambdarank_truncation_level": 20, "num_threads": 1, "seed": 21,
              "deterministic": True, "force_row_wise": True, "verbose": -1}
LTR_ROUNDS = 200


def lightgbm():
    try:
        import lightgbm as lgb
    except ImportError:
        raise ImportError("learning to rank needs LightGBM: pip install 'lexir[learn]' (or lightgbm)") from None
    return lgb


def ltr_features(base: np.ndarray, joint: np.ndarray, field: np.ndarray, votes: Mapping[int, np.ndarray],
                 prior: np.ndarray, length: np.ndarray, w: Weights,
                 dense: tuple[np.ndarray, np.ndarray] | None = None,
                 expansion: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(candidates: each row's top documents by the linear score, best first; their features,
    one row per (question, candidate); the linear scores)."""
    linear = combine(base, joint, field, votes[w.k], prior, w, dense, expansion)
    c = min(CANDIDATES, linear.shape[1])
    top = np.argpartition(-linear, c - 1, axis=1)[:, :c]
    order = np.lexsort((top, -np.take_along_axis(linear, top, axis=1)), axis=1)
    top = np.take_along_axis(top, order, axis=1)
    columns = [np.take_along_axis(m, top, axis=1) for m in (linear, base, joint, field, *(votes[k] for k in LTR_KS))]
    columns += [at_rows(prior, top), np.broadcast_to(np.arange(1, c + 1, dtype=np.float32), top.shape),
                at_rows(length, top)]
    return top, np.stack(columns, axis=-1).reshape(-1, len(FEATURES)).astype(np.float32), linear


def at_rows(values: np.ndarray, top: np.ndarray) -> np.ndarray:
    """``values`` at each row's documents ``top``: one vector for every row, or one row per row (a
    compacted inner fold's prior and lengths)."""
    return np.take_along_axis(values, top, axis=1) if values.ndim == 2 else values[top]


def reranked(top: np.ndarray, predicted: np.ndarray, linear: np.ndarray) -> np.ndarray:
    """Scores in which the candidates come first, in the order ``predicted``, then every other
    document in the linear order (each row's candidates score in (2, 3], the others at most 1)."""
    n, c = top.shape
    predicted = predicted.reshape(n, c)
    low, high = predicted.min(axis=1, keepdims=True), predicted.max(axis=1, keepdims=True)
    span = np.where(high > low, high - low, 1.0)
    top_linear = linear.max(axis=1, keepdims=True)
    out = np.divide(linear, top_linear, out=np.zeros_like(linear), where=top_linear > 0)
    np.minimum(out, 1.0, out=out)
    has = np.take_along_axis(linear, top, axis=1) > 0  # a candidate scoring 0 matched nothing
    np.put_along_axis(out, top, np.where(has, 2.0 + (predicted - low + 1e-6) / (span + 1e-6), 0.0), axis=1)
    return out


def cascade(first: np.ndarray, second: np.ndarray, candidates: int = CANDIDATES) -> np.ndarray:
    """Scores in which each row's top ``candidates`` by ``first`` come first, in the order of
    ``second``, then every other document in ``first``'s order (a first stage for recall, its
    candidates reordered by a second stage for the top ranks)."""
    c = min(candidates, first.shape[1])
    top = np.argpartition(-first, c - 1, axis=1)[:, :c]
    return reranked(top, np.take_along_axis(second, top, axis=1), first)


def recall_at(scores: np.ndarray, gains: np.ndarray, k: int = 100) -> np.ndarray:
    """Recall@k of each row (the share of its judged provisions in its top ``k`` scoring above 0)."""
    k = min(k, scores.shape[1])
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    found = ((np.take_along_axis(gains, top, axis=1) > 0) & (np.take_along_axis(scores, top, axis=1) > 0)).sum(axis=1)
    relevant = (gains > 0).sum(axis=1)
    return np.divide(found, relevant, out=np.zeros(len(found)), where=relevant > 0)


def fit_ltr(features: Sequence[np.ndarray], labels: Sequence[np.ndarray], rounds: int = LTR_ROUNDS):
    """A lambdarank booster over groups of CANDIDATES rows (one group per question)."""
    lgb = lightgbm()
    x = np.concatenate(features)
    y = np.concatenate(labels).astype(np.int32)
    c = min(CANDIDATES, len(y))
    data = lgb.Dataset(x, y, group=[c] * (len(y) // c), feature_name=list(FEATURES), free_raw_data=True)
    return lgb.train(LTR_PARAMS, data, num_boost_round=rounds)


class QuestionAugmented(Retriever):
    """A base system plus the evidence of a model's training questions (module doc)."""

    name = "bm25-qa"

    def __init__(self, corpus: Corpus, base: Retriever, model: Model, weights: Weights, *,
                 depth: int = DEPTH, seen: str = "refuse", base_spec: str = "", ranker=None, dense: Any = None,
                 adapter: tuple[np.ndarray, np.ndarray] | None = None, recall: Weights | None = None) -> None:
        if seen not in SEEN:
            raise ValueError(f"seen={seen!r}; valid: {', '.join(SEEN)}")
        self.base, self.model, self.weights, self.depth, self.seen = base, model, weights, depth, seen
        self.base_spec, self.ranker, self.recall = base_spec, ranker, recall
        self.length = provision_lengths(corpus)
        encoded = uses_dense(weights, recall)
        if encoded and dense is None:
            raise ValueError(f"model {model.folder.name!r} weighs dense evidence: it needs its dense encoder")
        self.evidence = Evidence(corpus, model.questions, corpus.language, dense if encoded else None, adapter)
        self.doc_ids = corpus.ids
        self.warnings: list[str] = []

    def _check_seen(self, queries: Sequence[Query]) -> None:
        if self.seen == "allow":
            return
        seen = self.model.seen(queries)
        if not seen:
            return
        message = (f"{len(seen)} of {len(queries)} questions (first: {seen[0]!r}) are questions the model "
                   f"{self.model.folder.name!r} was trained on: their scores measure memory, not retrieval")
        if self.seen == "refuse":
            raise SeenQueryError(message + "; evaluate on held-out questions, or pass -p seen=allow "
                                  '(in Python: seen="allow")')
        import warnings

        self.warnings.append(message)
        warnings.warn(message, stacklevel=2)

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        self._check_seen(queries)
        run: Run = {}
        ev, w, recall = self.evidence, self.weights, self.recall
        stages = [w] if recall is None else [w, recall]
        for start in range(0, len(queries), BATCH):
            chunk = list(queries[start:start + BATCH])
            base = base_matrix(self.base, chunk, self.doc_ids, self.depth, ev.column)
            dense = ev.dense_matrices(chunk) if uses_dense(*stages) else None
            expansion = ev.expansion_matrix(chunk) if any(x.expansion for x in stages) else None
            if self.ranker is not None:
                joint, field, votes = ev.matrices(chunk, sorted({*LTR_KS, w.k}))
                top, features, linear = ltr_features(base, joint, field, votes, ev.prior, self.length, w, dense,
                                                     expansion)
                scores = reranked(top, self.ranker.predict(features), linear)
            else:
                ks = sorted({x.k for x in stages if x.neighbours})
                joint, field, votes = ev.matrices(chunk, ks, joint=any(x.joint for x in stages))
                scores = combine(base, joint, field, votes.get(w.k, field), ev.prior, w, dense, expansion)
                if recall is not None:
                    first = combine(base, joint, field, votes.get(recall.k, field), ev.prior, recall, dense, expansion)
                    scores = cascade(first, scores)
            for i, q in enumerate(chunk):
                run[q.id] = dict(top_scores(scores[i], self.doc_ids, k))
            if progress:
                progress(len(chunk))
        return run

    def __repr__(self) -> str:
        recall = f", recall stage {self.recall}" if self.recall is not None else ""
        return f"QuestionAugmented(base={self.base_spec or self.base!r}, {self.weights}{recall})"


def provision_lengths(corpus: Corpus) -> np.ndarray:
    return np.log1p(np.array([len(d.text.split()) for d in corpus], dtype=np.float32))


# -- training ---------------------------------------------------------------------------------


def ndcg_at(scores: np.ndarray, gains: np.ndarray, ideal: np.ndarray, k: int = 10) -> np.ndarray:
    """nDCG@k of each row of ``scores`` given the dense grade matrix ``gains`` and each row's
    ideal DCG (from all its judgements); documents scoring zero are not retrieved."""
    k = min(k, scores.shape[1])
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    top_scores = np.take_along_axis(scores, top, axis=1)
    order = np.argsort(-top_scores, axis=1, kind="stable")
    top, top_scores = np.take_along_axis(top, order, axis=1), np.take_along_axis(top_scores, order, axis=1)
    g = np.take_along_axis(gains, top, axis=1) * (top_scores > 0)
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = ((2.0 ** g - 1) * discount).sum(axis=1)
    return np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)


def ideal_dcg(qrels: Qrels, qids: Sequence[str], k: int = 10) -> np.ndarray:
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    out = np.zeros(len(qids))
    for i, q in enumerate(qids):
        grades = sorted((g for g in qrels.get(q, {}).values() if g > 0), reverse=True)[:k]
        out[i] = sum((2.0 ** g - 1) * discount[j] for j, g in enumerate(grades))
    return out


def grade_matrix(qrels: Qrels, qids: Sequence[str], column: Mapping[str, int]) -> np.ndarray:
    gains = np.zeros((len(qids), len(column)), dtype=np.float32)
    for i, q in enumerate(qids):
        for doc, g in qrels.get(q, {}).items():
            if doc in column and g > 0:
                gains[i, column[doc]] = g
    return gains


def questions_of(queries: Sequence[Query], qrels: Qrels) -> list[TrainingQuestion]:
    return [TrainingQuestion(q.id, q.text, dict(qrels.get(q.id, {}))) for q in queries]


class InnerFold(NamedTuple):
    """One inner fold's evidence for its held-out questions (dense rows, one per question), built
    from the other folds' questions only: what the weights, the recall stage and the ranker are
    chosen on."""

    base: np.ndarray
    joint: np.ndarray
    field: np.ndarray
    votes: dict[int, np.ndarray]
    prior: np.ndarray
    gains: np.ndarray
    ideal: np.ndarray
    dense: tuple[np.ndarray, np.ndarray] | None
    expansion: np.ndarray
    columns: np.ndarray | None = None  # compacted: each row's documents (corpus positions; None: all)

    def linear(self, w: Weights) -> np.ndarray:
        return combine(self.base, self.joint, self.field, self.votes[w.k], self.prior, w, self.dense, self.expansion)

    def compact(self) -> InnerFold:
        """The fold over each row's candidates only: the documents some evidence of that question
        scores (a matrix, the prior) or its judgements grade, padded with zeros to the longest row.
        A document no evidence scores is not retrieved (:func:`ndcg_at`, :func:`recall_at` and
        :func:`reranked` skip a zero score), so every measure is the same up to the order of
        equal scores, and over a large corpus a row shrinks from its width (107k German articles)
        to the few thousand documents its evidence reaches. Not with dense evidence: its adapter
        scores every document."""
        if self.dense is not None or self.columns is not None:
            return self
        touched = (self.gains != 0) | (self.prior != 0)[None, :]
        for m in (self.base, self.joint, self.field, self.expansion, *self.votes.values()):
            touched |= m != 0
        counts = touched.sum(axis=1)
        width = int(counts.max()) if len(counts) else 0
        if width > 0.5 * touched.shape[1]:
            return self
        columns = np.zeros((len(counts), width), dtype=np.int64)
        valid = np.arange(width)[None, :] < counts[:, None]
        columns[valid] = np.nonzero(touched)[1]  # row-major: each row's documents in corpus order
        del touched

        def take(m: np.ndarray) -> np.ndarray:
            return np.where(valid, np.take_along_axis(m, columns, axis=1), 0).astype(m.dtype)

        return InnerFold(take(self.base), take(self.joint), take(self.field),
                         {k: take(v) for k, v in self.votes.items()},
                         np.where(valid, self.prior[columns], 0).astype(self.prior.dtype), take(self.gains),
                         self.ideal, None, take(self.expansion), columns)

    def positions(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one per document of the corpus) at this fold's columns."""
        return values if self.columns is None else values[self.columns]


def choose_weights(corpus: Corpus, base: Retriever, queries: Sequence[Query], qrels: Qrels, *,
                   folds: int = 3, grid: Mapping[str, Sequence] | None = None, depth: int = DEPTH,
                   dense: Any = None, force_dense: bool = False,
                   log: Callable[[str], None] | None = None) -> tuple[Weights, dict[str, Any]]:
    """The grid point with the best nDCG@10 pooled over ``folds`` inner folds of ``queries``
    (each fold's evidence built from the other folds' questions only). With ``dense`` (a dense
    retriever over ``corpus``), the dense weights of DENSE_GRID are tried at GRID's best point,
    then GRID's joint, field and prior again beside the best dense weights; ``force_dense``: the
    best point with some dense weight, even where the inner folds prefer none (like ``ltr=on``)."""
    grid = {**GRID, **DENSE_GRID, **EXPANSION_GRID, **dict(grid or {})}
    queries = [q for q in queries if qrels.get(q.id)]
    by_id = {q.id: q for q in queries}
    start = time.perf_counter()
    all_base = base_matrix(base, queries, corpus.ids, depth)
    text = text_index(corpus, corpus.language)  # the same for every inner fold
    row_of = {q.id: i for i, q in enumerate(queries)}
    column = {d: i for i, d in enumerate(corpus.ids)}
    parts = []
    for train_ids, test_ids in kfold_ids([q.id for q in queries], folds, seed="lexir-inner"):
        if not train_ids or not test_ids:
            continue
        evidence = Evidence(corpus, questions_of([by_id[i] for i in train_ids], qrels), corpus.language, dense,
                            text=text)
        test = [by_id[i] for i in test_ids]
        joint, field, votes = evidence.matrices(test, sorted({*grid["k"], *LTR_KS}))
        parts.append(InnerFold(all_base[[row_of[i] for i in test_ids]], joint, field, votes, evidence.prior,
                               grade_matrix(qrels, test_ids, column), ideal_dcg(qrels, test_ids),
                               evidence.dense_matrices(test), evidence.expansion_matrix(test)).compact())
    del all_base
    if not parts:
        raise ValueError(f"training needs at least {folds} judged questions to choose its weights on inner folds")
    def score(w: Weights) -> float:
        return float(np.concatenate([ndcg_at(part.linear(w), part.gains, part.ideal) for part in parts]).mean())

    def lexical(dn: float = 0.0, ad: float = 0.0, at: Weights | None = None) -> list[tuple[float, Weights]]:
        out = []  # with ``at``: its neighbours and k kept, the other lexical weights tried again
        neighbours, ks = ((at.neighbours,), (at.k,)) if at else (grid["neighbours"], grid["k"])
        for wj, wf, wn, wp, k in itertools.product(grid["joint"], grid["field"], neighbours, grid["prior"], ks):
            if not wn and k != grid["k"][0]:
                continue  # k changes nothing without neighbours
            w = Weights(float(wf), float(wn), float(wp), int(k), float(wj), dn, ad)
            out.append((score(w), w))
        return out

    results = lexical()
    has_dense = all(part.dense is not None for part in parts)
    if has_dense:
        results.sort(key=lambda r: (-r[0], r[1].learned))
        at = results[0][1]
        tried = [(score(w), w) for w in (dataclasses.replace(at, dense_neighbours=float(dn), adapter=float(ad))
                                         for dn, ad in itertools.product(grid["dense_neighbours"], grid["adapter"]))]
        tried.sort(key=lambda r: (-r[0], r[1].learned))
        dense_best = next(w for _, w in tried if w.dense or not force_dense)
        results += tried
        if dense_best.dense:
            results += lexical(dense_best.dense_neighbours, dense_best.adapter, at)
    results.sort(key=lambda r: (-r[0], r[1].learned))
    best_score, best = next((s, w) for s, w in results if w.dense or not (force_dense and has_dense))
    base_only = next(s for s, w in results if not w.learned)
    # the term associations, at the best point of the others
    results += [(score(w), w) for w in (dataclasses.replace(best, expansion=float(e))
                                        for e in grid["expansion"] if e)]
    results.sort(key=lambda r: (-r[0], r[1].learned))
    best_score, best = next((s, w) for s, w in results if w.dense or not (force_dense and has_dense))
    info = {
        "objective": "nDCG@10", "inner_folds": folds, "questions": len(queries),
        "best": {"nDCG@10": round(best_score, 4), **best.as_dict()},
        "base_only": {"nDCG@10": round(base_only, 4)},
        "top": [{"nDCG@10": round(s, 4), **w.as_dict()} for s, w in results[:10]],
        "grid": {key: list(values) for key, values in grid.items()}, "dense": has_dense,
        "seconds": round(time.perf_counter() - start, 2),
    }
    if log:
        log(f"inner {folds}-fold nDCG@10: base alone {base_only:.4f}, best {best_score:.4f} at {best.as_dict()}")
    info["_parts"] = parts  # for choose_ranker and choose_recall (not saved)
    return best, info


def choose_recall(parts: Sequence[InnerFold], w: Weights, *, grid: Mapping[str, Sequence] | None = None,
                  log: Callable[[str], None] | None = None) -> tuple[Weights | None, dict[str, Any]]:
    """The recall stage for the nDCG@10 weights ``w`` (see RECALL_GRID): the weights with the best
    R@100 pooled over the inner folds ``parts`` (``w``'s k; the dense weights tried again at the
    best lexical point when there is dense evidence), kept if the cascade (its top CANDIDATES
    reordered by ``w``) beats ``w`` alone on R@100 there and loses at most RECALL_TOLERANCE nDCG@10."""
    start = time.perf_counter()
    grid = {**RECALL_GRID, **dict(grid or {})}

    def pooled(scores: Callable[[InnerFold], np.ndarray]) -> dict[str, float]:
        ndcg, recall = [], []
        for part in parts:
            s = scores(part)
            ndcg.append(ndcg_at(s, part.gains, part.ideal))
            recall.append(recall_at(s, part.gains))
        return {"nDCG@10": float(np.concatenate(ndcg).mean()), "R@100": float(np.concatenate(recall).mean())}

    def recall(x: Weights) -> float:
        return float(np.concatenate([recall_at(part.linear(x), part.gains) for part in parts]).mean())

    dense_kept = {"dense_neighbours": w.dense_neighbours, "adapter": w.adapter}
    tried = [(recall(x), x) for x in (
        Weights(float(f), float(n), float(p), w.k, float(j), expansion=float(e), **dense_kept)
        for j, f, n, p, e in itertools.product(grid["joint"], grid["field"], grid["neighbours"], grid["prior"],
                                               grid["expansion"]))]
    tried.sort(key=lambda r: (-r[0], r[1].learned))
    if all(part.dense is not None for part in parts):
        at = tried[0][1]
        tried += [(recall(x), x) for x in (dataclasses.replace(at, dense_neighbours=float(dn), adapter=float(ad))
                                           for dn, ad in itertools.product(DENSE_GRID["dense_neighbours"],
                                                                           DENSE_GRID["adapter"]))]
        tried.sort(key=lambda r: (-r[0], r[1].learned))
    first = tried[0][1]
    alone = pooled(lambda part: part.linear(w))
    both = pooled(lambda part: cascade(part.linear(first), part.linear(w)))
    used = both["R@100"] > alone["R@100"] and both["nDCG@10"] >= alone["nDCG@10"] - RECALL_TOLERANCE
    info = {"objective": "R@100", "candidates": CANDIDATES, "tolerance_nDCG@10": RECALL_TOLERANCE,
            "weights": first.as_dict(), "without": {k: round(v, 4) for k, v in alone.items()},
            "with": {k: round(v, 4) for k, v in both.items()}, "used": used,
            "top": [{"R@100": round(r, 4), **x.as_dict()} for r, x in tried[:5]],
            "seconds": round(time.perf_counter() - start, 2)}
    if log:
        log(f"recall stage on inner folds: R@100 {both['R@100']:.4f} vs {alone['R@100']:.4f}, nDCG@10 "
            f"{both['nDCG@10']:.4f} vs {alone['nDCG@10']:.4f} -> {'used' if used else 'not used'}")
    return (first if used else None), info


def choose_ranker(corpus: Corpus, parts: Sequence[InnerFold], w: Weights, *, force: bool = False,
                  log: Callable[[str], None] | None = None) -> tuple[Any, dict[str, Any]]:
    """A lambdarank booster over the linear combination's top CANDIDATES, or None when it does not
    beat the linear combination on the inner folds: each fold's questions reranked by a booster
    fitted on the other folds' (their evidence built without them), then one fitted on all."""
    start = time.perf_counter()
    length = provision_lengths(corpus)
    sets = []
    for part in parts:
        top, x, linear = ltr_features(part.base, part.joint, part.field, part.votes, part.prior,
                                      part.positions(length), w, part.dense, part.expansion)
        sets.append((top, x, linear, np.take_along_axis(part.gains, top, axis=1).reshape(-1), part.gains, part.ideal))
    linear_scores, ranked_scores = [], []
    for i, (top, x, linear, _, gains, ideal) in enumerate(sets):
        others = [s for j, s in enumerate(sets) if j != i]
        booster = fit_ltr([s[1] for s in others], [s[3] for s in others])
        ranked_scores.append(ndcg_at(reranked(top, booster.predict(x), linear), gains, ideal))
        linear_scores.append(ndcg_at(linear, gains, ideal))
    linear_mean = float(np.concatenate(linear_scores).mean())
    ranked_mean = float(np.concatenate(ranked_scores).mean())
    info = {"objective": "nDCG@10", "linear": round(linear_mean, 4), "lambdarank": round(ranked_mean, 4),
            "features": list(FEATURES), "rounds": LTR_ROUNDS, "candidates": CANDIDATES,
            "params": {k: v for k, v in LTR_PARAMS.items() if k != "eval_at"}}
    used = ranked_mean > linear_mean
    info["used"] = used
    booster = fit_ltr([s[1] for s in sets], [s[3] for s in sets]) if used or force else None
    info["seconds"] = round(time.perf_counter() - start, 2)
    if log:
        log(f"lambdarank on inner folds: nDCG@10 {ranked_mean:.4f} vs linear {linear_mean:.4f} -> "
            f"{'used' if used else 'not used'}")
    return booster, info
