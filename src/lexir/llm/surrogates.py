"""Document surrogates (Polish paper): per article an LLM-written summary, theme, concept set and
hypothetical questions, and the retrievers and the DTF system built on them.

:func:`annotate` writes one JSON line per article to a JSONL file whose first line is a header
naming the corpus and its fingerprint, so annotations never meet another version of the
corpus. It is concurrent and resumable: lines are written as answers arrive, a rerun skips
annotated articles (and the client's cache makes even a lost line free).

Systems (no model call at query time; the annotation must exist — ``lexir annotate CORPUS``):

* ``surrogate-bm25``: BM25 over summary + theme + concepts + questions alone;
* ``doc2query-bm25``: BM25 over the article text with its questions appended;
* ``coverage-bm25``: BM25 over the questions alone;
* ``dtf``: dense + text BM25 + coverage, weighted RRF (1.0, 0.7, 1.0; k0=20), then a
  deterministic re-score (see :func:`dtf_rescore`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lexir.io.paths import cache_dir, safe_name
from lexir.jurisdiction import code_of
from lexir.llm import parsing
from lexir.llm.accounting import Usage
from lexir.llm.base import LLMRetriever, clip
from lexir.llm.client import LLMClient
from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.bm25 import corpus_fingerprint
from lexir.retrieval.context import BuildContext
from lexir.retrieval.params import Param
from lexir.types import Corpus, Document, Query, Run, act_of, ranked

FORMAT = "lexir-surrogates"
VERSION = 1
FIELDS = ("summary", "theme", "concepts", "questions")


def default_path(corpus: Corpus) -> Path:
    return cache_dir() / "surrogates" / f"{safe_name(corpus.name, 'corpus')}-{corpus.fingerprint[:16]}.jsonl"


@dataclass
class AnnotationReport:
    path: Path
    total: int
    already: int
    new: int
    statuses: dict[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)

    def __str__(self) -> str:
        return (f"{self.path}: {self.already + self.new}/{self.total} articles annotated "
                f"({self.new} new; statuses {self.statuses}); {self.usage}")


def _read(path: Path) -> tuple[dict | None, dict[str, dict], int]:
    """(header, records by id, byte length of the complete lines)."""
    header, records, good = None, {}, 0
    with path.open("rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                break  # a line cut short by a kill: dropped, redone
            try:
                obj = json.loads(raw)
            except ValueError:
                break
            good += len(raw)
            if header is None:
                header = obj
            elif isinstance(obj, dict) and "id" in obj:
                records[obj["id"]] = obj
    return header, records, good


def load_surrogates(path: str | Path, corpus: Corpus | None = None) -> dict[str, dict]:
    """Article id -> surrogate fields; with ``corpus``, checks the file was made for it."""
    path = Path(path)
    if not path.is_file():
        hint = f" (run: lexir annotate {corpus.name})" if corpus is not None else ""
        raise FileNotFoundError(f"no surrogate annotation at {path}{hint}")
    header, records, _ = _read(path)
    if not header or header.get("format") != FORMAT:
        raise ValueError(f"{path} is not a lexir surrogate file")
    if corpus is not None and header.get("fingerprint") != corpus_fingerprint(corpus):
        raise ValueError(f"{path} annotates another version of corpus {header.get('corpus')!r}; re-annotate")
    return records


def annotation_helper(corpus: Corpus, client: LLMClient) -> LLMRetriever:
    """The asker behind annotation; its calls are accounted as system ``annotate``."""
    helper = LLMRetriever(corpus, client)
    helper.name = "annotate"
    return helper


def annotate_one(corpus: Corpus, helper: LLMRetriever, doc: Document, chars: int = 3000) -> dict:
    """One article's surrogate record (one call, or two when the first answer is malformed)."""
    act = corpus.acts[doc.act].title if doc.act in corpus.acts else doc.act
    parsed = helper.ask("surrogate", {"act": act or doc.act, "article_id": doc.id, "language": helper.language,
                                      "text": clip(doc.text, chars)},
                        lambda t: parsing.parse_object(t, FIELDS), schema=parsing.SURROGATE_SCHEMA,
                        qid=f"doc:{doc.id}", role="annotate", max_tokens=700)
    data = parsed.value if isinstance(parsed.value, dict) else {}
    rec: dict[str, Any] = {"id": doc.id, "status": str(parsed.status)}
    for key in FIELDS:
        value = data.get(key)
        if key in ("concepts", "questions"):
            rec[key] = [str(v).strip() for v in value if str(v).strip()] if isinstance(value, list) else []
        else:
            rec[key] = str(value).strip() if isinstance(value, str) else ""
    return rec


# Annotates articles somewhere else (Ray): (corpus, client, articles, chars, done(article, record)).
AnnotationRunner = Callable[[Corpus, LLMClient, list[Document], int, Callable[[Document, dict], None]], None]


def annotate(corpus: Corpus, client: LLMClient, out_path: str | Path | None = None,
             progress: bool | Callable[[int, Usage], None] = True, limit: int | None = None,
             chars: int = 3000, runner: AnnotationRunner | None = None) -> AnnotationReport:
    """Annotate every article of ``corpus`` not yet in ``out_path`` (default :func:`default_path`).

    ``progress``: True shows a rich progress bar with the running token count, a callable
    gets ``(articles done, usage so far)`` after each article, False is silent. ``limit``
    annotates at most that many new articles (for a trial or a budget). ``runner`` annotates
    the articles elsewhere (:class:`lexir.distributed.RayAnnotator`): it gets ``(corpus, client,
    articles, chars, done)`` and calls ``done(article, record)`` in this process as each
    finishes, having added every call's record to ``client.accounting``.
    """
    path = Path(out_path) if out_path else default_path(corpus)
    path.parent.mkdir(parents=True, exist_ok=True)
    fingerprint = corpus_fingerprint(corpus)
    done: dict[str, dict] = {}
    if path.is_file() and path.stat().st_size:
        header, done, good = _read(path)
        if not header or header.get("format") != FORMAT:
            raise ValueError(f"{path} exists and is not a lexir surrogate file")
        if header.get("fingerprint") != fingerprint:
            raise ValueError(f"{path} annotates another version of corpus {header.get('corpus')!r} "
                             f"(fingerprint {str(header.get('fingerprint'))[:12]}…); choose another path or delete it")
        with path.open("r+b") as fh:  # drop a half-written last line
            fh.truncate(good)
    else:
        header = {"format": FORMAT, "version": VERSION, "corpus": corpus.name, "fingerprint": fingerprint,
                  "documents": len(corpus), "model": client.config.model, "prompt": "surrogate"}
        path.write_text(json.dumps(header, ensure_ascii=False) + "\n", encoding="utf-8")
    todo = [d for d in corpus if d.id not in done]
    if limit is not None:
        todo = todo[:limit]
    start_records = len(client.accounting.records)
    statuses: dict[str, int] = {}

    def usage_now() -> Usage:
        u = Usage()
        for r in client.accounting.records[start_records:]:
            u.add(r)
        return u

    bar = None
    if progress is True:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        bar = Progress(TextColumn("annotating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                       TextColumn("{task.description}"), transient=False)
        task = bar.add_task("", total=len(todo))
        bar.start()
    count = 0
    with path.open("a", encoding="utf-8") as out:
        def write(_doc: Document, rec: dict) -> None:
            nonlocal count
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            out.flush()
            count += 1
            statuses[rec["status"]] = statuses.get(rec["status"], 0) + 1
            if bar is not None:
                u = usage_now()
                bar.update(task, advance=1, description=f"{u.tokens} tokens, {u.new_calls} new calls")
            elif callable(progress):
                progress(count, usage_now())

        try:
            if runner is None:
                helper = annotation_helper(corpus, client)
                client.map(lambda doc: annotate_one(corpus, helper, doc, chars), todo, on_done=write)
            else:
                runner(corpus, client, todo, chars, write)
        finally:
            if bar is not None:
                bar.stop()
    return AnnotationReport(path, len(corpus), len(done), count, statuses, usage_now())


# ---------------------------------------------------------------------------
# retrievers over surrogates


def surrogate_text(rec: Mapping[str, Any] | None, view: str, doc: Document) -> str:
    rec = rec or {}
    questions = "\n".join(rec.get("questions") or [])
    if view == "surrogate":
        return "\n".join([rec.get("summary") or "", rec.get("theme") or "", "; ".join(rec.get("concepts") or []),
                          questions]).strip()
    if view == "doc2query":
        return f"{doc.text}\n{questions}".strip()
    if view == "coverage":
        return questions
    raise ValueError(f"unknown surrogate view {view!r}; valid: surrogate, doc2query, coverage")


def surrogate_corpus(corpus: Corpus, records: Mapping[str, Mapping[str, Any]], view: str) -> Corpus:
    """A corpus with the same ids whose text is the chosen view (unannotated articles: empty text)."""
    docs = [Document(d.id, surrogate_text(records.get(d.id), view, d), d.title if view == "doc2query" else "")
            for d in corpus]
    return Corpus(f"{corpus.name}-{view}", docs, language=corpus.language, jurisdiction=corpus.jurisdiction)


class _Skipping(Retriever):
    """Leaves out documents whose indexed text was empty (they can only score by accident)."""

    def __init__(self, inner: Retriever, empty: set[str], name: str) -> None:
        self.inner, self.empty, self.name = inner, empty, name

    def search_many(self, queries, k=100, progress=None) -> Run:
        run = self.inner.search_many(queries, k, progress)
        return {q: {d: s for d, s in res.items() if d not in self.empty} for q, res in run.items()}


def build_view(corpus: Corpus, view: str, surrogates: str, bm25: str, context: BuildContext) -> Retriever:
    records = load_surrogates(surrogates or default_path(corpus), corpus)
    derived = surrogate_corpus(corpus, records, view)
    empty = {d.id for d in derived if not d.text.strip()}
    return _Skipping(context.build(bm25, derived), empty, f"{view}-bm25")


@register_system("surrogate-bm25", "BM25 over the LLM surrogate alone (summary, theme, concepts, questions)",
                 surrogates="", bm25="bm25")
def build_surrogate_bm25(corpus: Corpus, *, surrogates, bm25, context: BuildContext) -> Retriever:
    return build_view(corpus, "surrogate", surrogates, bm25, context)


@register_system("doc2query-bm25", "BM25 over article text with the LLM's hypothetical questions appended",
                 surrogates="", bm25="bm25")
def build_doc2query_bm25(corpus: Corpus, *, surrogates, bm25, context: BuildContext) -> Retriever:
    return build_view(corpus, "doc2query", surrogates, bm25, context)


@register_system("coverage-bm25", "BM25 over the LLM's hypothetical questions alone (coverage retriever)",
                 surrogates="", bm25="bm25")
def build_coverage_bm25(corpus: Corpus, *, surrogates, bm25, context: BuildContext) -> Retriever:
    return build_view(corpus, "coverage", surrogates, bm25, context)


# ---------------------------------------------------------------------------
# DTF


def named_acts(text: str, jurisdiction: str) -> set[str]:
    """Acts a query names, as its legal order writes them (``Zgodnie z Kodeksem karnym``, ``art. 5
    k.c.``): those its citations name, and those the order's ``acts_named`` finds alone."""
    from lexir.jurisdiction import find_jurisdiction

    order = find_jurisdiction(jurisdiction or None)
    if order is None or order.find_citations is None:
        return set()
    acts = {c.act for c in order.find_citations(text) if c.act}
    if order.acts_named is not None:
        acts |= order.acts_named(text)
    return acts


def _words(text: str) -> set[str]:
    return {w[:6] for w in re.findall(r"\w+", text.lower()) if len(w) > 3}


def dtf_rescore(query: str, lists: Sequence[Mapping[str, float]], fused: Mapping[str, float],
                concepts: Mapping[str, Sequence[str]], acts: set[str], beta: float = 0.35, tau0: float = 0.04,
                gamma: float = 0.02, rho: float = 0.15, pi: float = 1.0) -> dict[str, float]:
    """Deterministic re-score of a fused list (no model call).

    The Polish paper gives the constants (β, τ0, γ, ρ, π) = (0.35, 0.04, 0.02, 0.15, 1.0) but
    not, in the text we have, the equation; this is our reading of it. With F̂ the fused score
    divided by its maximum, a candidate with F̂ ≥ τ0 scores

        F̂ + β·agreement + γ·min(5, concepts matched) + ρ·[first in some list] + π·[its act is named]

    where agreement is the share of the other lists that also rank it in their top 10, a
    concept matches when each of its words (6-letter prefixes) occurs in the query, and the
    named acts are those the query names (π=1 exceeds every other term: a named act partitions
    the list). Candidates below τ0 keep F̂.
    """
    if not fused:
        return {}
    top = max(fused.values()) or 1.0
    tops = [{d for d, _ in ranked(lst)[:10]} for lst in lists]
    firsts = {ranked(lst)[0][0] for lst in lists if lst}
    qwords = _words(query)
    out = {}
    for doc, score in fused.items():
        f = score / top
        if f >= tau0:
            n_in = sum(doc in t for t in tops)
            agreement = (n_in - 1) / (len(lists) - 1) if len(lists) > 1 and n_in else 0.0
            matched = sum(1 for c in concepts.get(doc, ()) if _words(c) and _words(c) <= qwords)
            f += beta * agreement + gamma * min(5, matched) + rho * (doc in firsts) + pi * (act_of(doc) in acts)
        out[doc] = f
    return out


class DTFRetriever(Retriever):
    name = "dtf"

    def __init__(self, parts: list[Retriever], weights: list[float], k0: float, depth: int,
                 concepts: Mapping[str, Sequence[str]], params: dict[str, float], act_prior: bool,
                 jurisdiction: str = "") -> None:
        self.parts, self.weights, self.k0, self.depth = parts, weights, k0, depth
        self.concepts, self.params, self.act_prior = concepts, params, act_prior
        self.jurisdiction = jurisdiction

    def _one(self, text: str, lists: list[Mapping[str, float]], k: int) -> list[tuple[str, float]]:
        from lexir.retrieval.fusion import weighted_rrf

        fused = weighted_rrf(lists, self.weights, self.k0, self.depth)
        acts = named_acts(text, self.jurisdiction) if self.act_prior else set()
        return ranked(dtf_rescore(text, lists, fused, self.concepts, acts, **self.params))[:k]

    def search_many(self, queries: Sequence[Query], k: int = 100, progress=None) -> Run:
        runs = [p.search_many(list(queries), self.depth) for p in self.parts]
        return self.each(queries, lambda q: self._one(q.text, [r.get(q.id, {}) for r in runs], k), progress)


@register_system("dtf", "dense + text BM25 + coverage retriever, weighted RRF (1.0, 0.7, 1.0; k0=20), then a "
                 "deterministic re-score (Polish paper)",
                 dense="dense", text="bm25", surrogates="", weights="1.0,0.7,1.0", k0=20.0, depth=100,
                 beta=Param(0.35, "re-score weight of agreement (share of the other lists ranking it top 10)"),
                 tau0=Param(0.04, "re-score only candidates whose max-normalised fused score reaches this"),
                 gamma=Param(0.02, "re-score weight per query-matched concept (at most 5)"),
                 rho=Param(0.15, "re-score bonus for being first in some list"),
                 pi=Param(1.0, "re-score bonus when the query names the candidate's act"),
                 act_prior=Param(True, "apply the named-act bonus (pi)"))
def build_dtf(corpus: Corpus, *, dense, text, surrogates, weights, k0, depth, beta, tau0, gamma, rho, pi, act_prior,
              context: BuildContext) -> DTFRetriever:
    w = [float(x) for x in str(weights).split(",") if x.strip()]
    records = load_surrogates(surrogates or default_path(corpus), corpus)
    coverage = build_view(corpus, "coverage", surrogates, "bm25", context)
    parts = [context.build(text, corpus), coverage]
    part_w = [w[1], w[2]] if len(w) == 3 else w
    if dense:
        parts.insert(0, context.build(dense, corpus))
        part_w = w
    if len(part_w) != len(parts):
        raise ValueError(f"dtf: {len(part_w)} weights for {len(parts)} retrievers")
    concepts = {d: rec.get("concepts") or [] for d, rec in records.items()}
    params = {"beta": beta, "tau0": tau0, "gamma": gamma, "rho": rho, "pi": pi}
    return DTFRetriever(parts, part_w, float(k0), int(depth), concepts, params, bool(act_prior),
                        code_of(corpus))
