"""Evidence that a provision is quoted: word-bigram BM25, and exam questions scored per option.

Exam questions and court decisions quote or closely paraphrase the provision they rest on, so
two words that stand side by side in the query and in an article ("pozbawienia wolności",
"Schadensersatz verpflichtet") are stronger evidence than the same words apart.

* :class:`PhraseBM25` adds a second BM25 index over adjacent pairs of index terms (after
  stopword removal, so "karze pozbawienia" and "karze do pozbawienia" are one pair) and scores
  ``bm25(unigrams) + weight * bm25(bigrams)``. It is ``bm25``'s ``bigrams=<weight>`` option.
* :class:`OptionsRetriever` scores an exam question (stem plus answer options) as the whole
  text and, for each option, the stem with that option alone; an article's score is the whole
  text's plus ``weight`` times its best single-option score (each list min-max normalised).
  A query without options in its meta (any non-exam query) is scored as the whole text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from itertools import chain
from pathlib import Path

import numpy as np

from lexir.analysis import Analyzer
from lexir.io.generations import loads, new_generation
from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.bm25 import BM25Retriever
from lexir.retrieval.bm25_matrix import ScoreMatrix
from lexir.retrieval.context import BuildContext
from lexir.retrieval.fusion import normalise
from lexir.retrieval.params import Param
from lexir.retrieval.spec import parse_spec_list
from lexir.types import Corpus, Query, Run, ranked

_PAIR = "\u00a0"  # joins the two terms of a bigram; never inside a term (tokens are \w runs)

class BigramAnalyzer:
    """An analyzer whose terms are the adjacent pairs of another analyzer's terms."""

    def __init__(self, base: Analyzer) -> None:
        self.base = base
        self.config = base.config
        self.language = base.language

    def tokens(self, text: str) -> list[str]:
        terms = self.base(text)
        return [a + _PAIR + b for a, b in zip(terms, terms[1:], strict=False)]

    __call__ = tokens

    def __repr__(self) -> str:
        return f"BigramAnalyzer({self.config.name})"


class PhraseBM25(Retriever):
    """BM25 over terms plus ``weight`` times BM25 over adjacent term pairs (see the module).

    Both indexes are score matrices (one column of per-document scores per term), so the sum
    is itself one matrix: the pair columns, times ``weight``, appended after the term columns
    (:meth:`ScoreMatrix.appended`). A batch of queries is then scored by the BM25 kernel in one
    call, as plain ``bm25`` is.
    """

    name = "bm25"

    def __init__(self, terms: BM25Retriever, pairs: BM25Retriever, weight: float) -> None:
        if weight <= 0:
            raise ValueError(f"bigram weight must be > 0 (got {weight})")
        self.terms, self.pairs, self.weight = terms, pairs, float(weight)
        self._merged: ScoreMatrix | None = None

    @classmethod
    def build(cls, corpus: Corpus, analyzer: Analyzer, weight: float, progress=None, **bm25) -> PhraseBM25:
        terms = BM25Retriever(analyzer, **bm25).index(corpus, progress)
        pairs = BM25Retriever(BigramAnalyzer(analyzer), **bm25).index(corpus)  # type: ignore[arg-type]
        return cls(terms, pairs, weight)

    @property
    def doc_ids(self) -> list[str]:
        return self.terms.doc_ids

    @property
    def analyzer(self) -> Analyzer:
        return self.terms.analyzer

    def scores(self, text: str) -> np.ndarray:
        """The combined score of every document (in corpus order) for ``text``."""
        return self.terms.scores(text) + self.weight * self.pairs.scores(text)

    def merged(self) -> ScoreMatrix:
        """The two score matrices as one (pair columns scaled by ``weight`` after the term
        columns; made once)."""
        if self._merged is None:
            self._merged = self.terms.matrix.appended(self.pairs.matrix, self.weight)
        return self._merged

    def batch_ids(self, texts: Sequence[str], offset: int) -> tuple[np.ndarray, np.ndarray]:
        """Each query's term ids then its pair ids (shifted by ``offset``) in the merged
        matrix, as one flat array and the query boundaries (``flat[pointers[i]:pointers[i + 1]]``)."""
        terms = self.terms.queries_ids(texts)
        pairs = self.pairs.queries_ids(texts)
        lists = [t + [i + offset for i in p] for t, p in zip(terms, pairs, strict=True)]
        pointers = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)), out=pointers[1:])
        flat = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(pointers[-1]))
        return flat, pointers

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        merged = self.merged()
        run: Run = {}
        batch = 256
        k = min(k, len(self.terms.doc_ids))
        for start in range(0, len(queries), batch):
            chunk = queries[start:start + batch]
            flat, pointers = self.batch_ids([q.text for q in chunk], self.terms.matrix.n_terms)
            for query in chunk:
                run[query.id] = {}
            if len(flat) and k > 0:
                docs, scores, _ = merged.top_k(flat, pointers, k)
                for row, query in enumerate(chunk):
                    keep = scores[row] > 0
                    d, s = docs[row][keep], scores[row][keep]
                    order = np.lexsort((d, -s))  # ties by corpus position, as top_scores orders them
                    run[query.id] = dict(zip(self.terms.doc_ids.take(d[order]), s[order].tolist(), strict=True))
            if progress:
                progress(len(chunk))
        return run

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        with new_generation(folder) as gen:
            self.terms.save(gen / "terms")
            self.pairs.save(gen / "pairs")
            (gen / "phrase.json").write_text(json.dumps({"weight": self.weight}), encoding="utf-8")
        return folder

    @classmethod
    @loads
    def load(cls, folder: str | Path, mmap: bool = True) -> PhraseBM25:
        folder = Path(folder)
        weight = json.loads((folder / "phrase.json").read_text(encoding="utf-8"))["weight"]
        terms = BM25Retriever.load(folder / "terms", mmap=mmap)
        pairs = BM25Retriever.load(folder / "pairs", mmap=mmap)
        pairs.analyzer = BigramAnalyzer(pairs.analyzer)  # type: ignore[assignment]
        return cls(terms, pairs, weight)


class OptionsRetriever(Retriever):
    """An exam question scored whole and stem-plus-each-option (see the module docstring)."""

    name = "options"

    def __init__(self, base: Retriever, weight: float = 1.0, depth: int = 100) -> None:
        self.base, self.weight, self.depth = base, float(weight), depth

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        whole = self.base.search_many(queries, self.depth)
        parts: list[Query] = []
        owners: dict[str, list[str]] = {}
        for q in queries:
            options = q.meta.get("options") if q.meta else None
            stem = q.meta.get("question", "") if q.meta else ""
            # Only where the query text holds the options (a question-only query stays as asked).
            if not options or self.weight == 0 or not all(str(o).strip() in q.text for o in options.values()):
                continue
            for key, option in options.items():
                pid = f"{q.id}\0{key}"
                parts.append(Query(pid, f"{stem} {option}"))
                owners.setdefault(q.id, []).append(pid)
        per_option = self.base.search_many(parts, self.depth) if parts else {}
        run: Run = {}
        for q in queries:
            fused = normalise(whole.get(q.id, {}))
            if q.id in owners:
                best: dict[str, float] = {}
                for pid in owners[q.id]:
                    for doc, score in normalise(per_option.get(pid, {})).items():
                        if score > best.get(doc, -1.0):
                            best[doc] = score
                for doc, score in best.items():
                    fused[doc] = fused.get(doc, 0.0) + self.weight * score
            run[q.id] = dict(ranked(fused)[:k])
            if progress:
                progress(1)
        return run


@register_system("options", "exam questions: the whole text plus the stem with each answer option alone "
                 "(best option, min-max normalised, times weight); other queries as the base system",
                 base="bm25", weight=Param(1.0, "weight of the best stem-plus-one-option score (0 = the base alone)"),
                 depth=100)
def build_options(corpus: Corpus, *, base, weight, depth, context: BuildContext) -> OptionsRetriever:
    (spec,) = parse_spec_list(base)[:1]
    return OptionsRetriever(context.build(spec, corpus, context.progress), weight, depth)


# ---------------------------------------------------------------------------
# the act a question names


class ActNames:
    """Finds the acts a text names (``Kodeksem karnym``, ``k.p.c.``), from the citation tables.

    Names and dotted abbreviations of the legal order's act table (``Jurisdiction.acts``:
    ``lexir/jurisdictions/<code>/data/acts.tsv``; the corpus's order, else the home order of
    ``language``) are matched in folded text (case and, in Greek, accents ignored), longest first,
    so that ``Kodeks karny skarbowy`` names only the fiscal code. Abbreviations without a dot
    (``BGB``, ``OR``) are not: folded, many are everyday words (``or``, ``ao``). Only acts in
    ``acts`` (the corpus's) are reported.
    """

    def __init__(self, language: str, acts: set[str], jurisdiction: str = "") -> None:
        import re

        from lexir.citations.model import read_act_table
        from lexir.jurisdiction import find_jurisdiction

        self.analyzer = Analyzer.create(language, "raw")
        order = find_jurisdiction(jurisdiction or None, language)
        forms: dict[str, str] = {}
        if order is not None and order.acts is not None:
            for entry in read_act_table(order.acts):
                if entry.source not in acts:
                    continue
                for form in (*entry.names, *(a for a in entry.abbreviations if "." in a)):
                    forms.setdefault(self.analyzer.normalise(form), entry.source)
        self.forms = forms
        ordered = sorted(forms, key=len, reverse=True)
        self.pattern = (re.compile(r"(?<!\w)(" + "|".join(map(re.escape, ordered)) + r")(?!\w)")
                        if ordered else None)

    def __call__(self, text: str) -> set[str]:
        if self.pattern is None:
            return set()
        return {self.forms[m.group(1)] for m in self.pattern.finditer(self.analyzer.normalise(text))}


class ActCueRetriever(Retriever):
    """Ranks the articles of the acts a query names above all others (each part in the base order).

    Exam questions say which code they ask about ("Zgodnie z Kodeksem karnym, ..."); an article
    of another code is then almost never the answer. A query naming no act of the corpus is
    left as the base system ranked it.
    """

    name = "act-cue"

    def __init__(self, base: Retriever, names: ActNames, depth: int = 100) -> None:
        self.base, self.names, self.depth = base, names, depth

    def _rerank(self, text: str, results: dict[str, float]) -> dict[str, float]:
        named = self.names(text)
        if not named or not results:
            return results
        # The named acts' articles are lifted above every other by a constant, so each group
        # keeps the base system's scores and order.
        lift = max(results.values()) - min(results.values()) + 1.0
        return {doc: score + lift if doc.split("::", 1)[0] in named else score for doc, score in results.items()}

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        base = self.base.search_many(queries, self.depth)
        run: Run = {}
        for q in queries:
            run[q.id] = dict(ranked(self._rerank(q.text, base.get(q.id, {})))[:k])
            if progress:
                progress(1)
        return run


@register_system("act-cue", "ranks the articles of the acts a query names (names and dotted abbreviations of "
                 "the legal order's act table) above the others, over any base system", base="bm25", depth=100)
def build_act_cue(corpus: Corpus, *, base, depth, context: BuildContext) -> ActCueRetriever:
    if not corpus.language:
        raise ValueError(f"corpus {corpus.name!r} has no language: act names are looked up per language")
    (spec,) = parse_spec_list(base)[:1]
    return ActCueRetriever(context.build(spec, corpus, context.progress), ActNames(corpus.language, set(corpus.act_ids()),
                                                                               corpus.jurisdiction),
                           depth)
