"""LLM systems: reform-bm25, reform-dense, react-bm25, rerank, ascr-h, translate
(and, from :mod:`lexir.llm.surrogates`, surrogate-bm25, doc2query-bm25, coverage-bm25, dtf).

Every system takes the LLM settings of :data:`lexir.llm.base.LLM_PARAMS` (``base_url``,
``model``, ``config``, ``api_key_env``, ``concurrency``, ``cache``, ...); unset ones come from
the environment or ``~/.config/lexir/llm.toml`` (see :mod:`lexir.llm.client`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lexir.llm import parsing
from lexir.llm.base import LLM_PARAMS, LLMRetriever, client_from_params, clip, numbered
from lexir.llm.client import LLMClient
from lexir.retrieval.base import Retriever, register_system
from lexir.retrieval.context import BuildContext
from lexir.types import Corpus, Document, Query, Run, ranked

# ---------------------------------------------------------------------------
# query reformulation (Greek paper §3.7)


class ReformRetriever(LLMRetriever):
    """One call rewrites the query (keywords for BM25, prose for dense), then ``inner`` searches."""

    def __init__(self, corpus: Corpus, client: LLMClient, inner: Retriever, style: str, keep_query: bool,
                 name: str) -> None:
        super().__init__(corpus, client)
        self.inner, self.style, self.keep_query, self.name = inner, style, keep_query, name
        self.rewrites: dict[str, str] = {}

    def rewrite(self, query: Query) -> str:
        if self.style == "sparse":
            parsed = self.ask("reform_sparse", {"language": self.language, "query": query.text},
                              lambda t: parsing.parse_text_field(t, "keywords"),
                              schema=parsing.text_schema("keywords", as_list=True), qid=query.id, role="reform")
        else:
            parsed = self.ask("reform_dense", {"language": self.language, "query": query.text},
                              lambda t: parsing.parse_text_field(t, "query"),
                              schema=parsing.text_schema("query"), qid=query.id, role="reform")
        # fallback: the original query when the rewrite is unusable
        text = parsed.value if parsed.value else query.text
        if self.keep_query and parsed.value:
            text = f"{query.text}\n{text}"
        self.rewrites[query.id] = text
        return text

    def search_query(self, query: Query, k: int) -> list[tuple[str, float]]:
        return self.inner.search(self.rewrite(query), k)


@register_system("reform-bm25", "LLM rewrites the query as legal keywords, then BM25 (Greek paper §3.7)",
                 bm25="bm25", keep_query=False, **LLM_PARAMS)
def build_reform_bm25(corpus: Corpus, *, bm25, keep_query, context: BuildContext, **llm) -> ReformRetriever:
    return ReformRetriever(corpus, client_from_params(llm, context.client), context.build(bm25, corpus, context.progress),
                           "sparse", keep_query, "reform-bm25")


@register_system("reform-dense", "LLM restates the query as a short legal statement, then dense retrieval",
                 dense="dense", keep_query=False, **LLM_PARAMS)
def build_reform_dense(corpus: Corpus, *, dense, keep_query, context: BuildContext, **llm) -> ReformRetriever:
    return ReformRetriever(corpus, client_from_params(llm, context.client), context.build(dense, corpus, context.progress),
                           "dense", keep_query, "reform-dense")


# ---------------------------------------------------------------------------
# ReAct-BM25 (Greek paper §3.8)


@dataclass
class _Kept:
    rounds: int
    first: int
    best: int


def react_order(kept: dict[str, _Kept], limit: int = 100) -> list[tuple[str, float]]:
    """Rounds kept (desc), earliest round kept (asc), best BM25 rank (asc), then id; scores descend."""
    order = sorted(kept, key=lambda d: (-kept[d].rounds, kept[d].first, kept[d].best, d))[:limit]
    return [(doc, float(len(order) - i)) for i, doc in enumerate(order)]


class ReactRetriever(LLMRetriever):
    """Planner writes a BM25 query, the observer keeps useful hits; repeat for ``rounds`` rounds.

    After :meth:`search_many`, ``run_by_round[r]`` is the run as it stood after round ``r``
    (for every ``r`` in ``report_rounds`` up to ``rounds``); ``trace[qid]`` lists each round's
    query and kept documents.
    """

    name = "react-bm25"

    def __init__(self, corpus: Corpus, client: LLMClient, bm25: Retriever, rounds: int, depth: int,
                 observer_batch: int, chars: int, report_rounds: Sequence[int], limit: int = 100) -> None:
        super().__init__(corpus, client)
        self.bm25, self.rounds, self.depth = bm25, rounds, depth
        self.observer_batch, self.chars, self.limit = max(1, observer_batch), chars, limit
        self.report_rounds = sorted({r for r in report_rounds if 1 <= r <= rounds} | {rounds})
        self.run_by_round: dict[int, Run] = {}
        self.trace: dict[str, list[dict]] = {}

    def plan(self, query: Query, history: list[str], kept: dict[str, _Kept], rnd: int) -> str:
        kept_docs = [self.corpus[d] for d, _ in react_order(kept, 15)]
        values = {
            "language": self.language, "query": query.text,
            "history": "\n".join(f"{i}. {q}" for i, q in enumerate(history, 1)) or "(none yet)",
            "kept": numbered(kept_docs, 200) if kept_docs else "(none yet)",
        }
        parsed = self.ask("react_planner", values, lambda t: parsing.parse_text_field(t, "query"),
                          schema=parsing.text_schema("query"), qid=query.id, role="planner", max_tokens=200, step=rnd)
        # fallback: the question itself
        return parsed.value or query.text

    def observe(self, query: Query, search: str, hits: list[str], rnd: int = 0) -> list[int]:
        """0-based positions in ``hits`` the observer keeps (batches of ``observer_batch``)."""
        keep: list[int] = []
        for start in range(0, len(hits), self.observer_batch):
            batch = hits[start:start + self.observer_batch]
            values = {"query": query.text, "search": search,
                      "candidates": numbered([self.corpus[d] for d in batch], self.chars)}
            n = len(batch)
            parsed = self.ask("react_observer", values, lambda t, n=n: parsing.parse_selection(t, n),
                              schema=parsing.selection_schema(len(batch)), qid=query.id, role="observer",
                              max_tokens=400, step=rnd)
            keep.extend(start + i for i in parsed.value)  # fallback: whatever valid numbers it gave
        return keep

    def search_rounds(self, query: Query) -> dict[int, list[tuple[str, float]]]:
        kept: dict[str, _Kept] = {}
        history: list[str] = []
        snapshots: dict[int, list[tuple[str, float]]] = {}
        trace = []
        for rnd in range(1, self.rounds + 1):
            search = self.plan(query, history, kept, rnd)
            history.append(search)
            hits = [d for d, _ in self.bm25.search(search, self.depth)]
            chosen = self.observe(query, search, hits, rnd) if hits else []
            for pos in chosen:
                doc = hits[pos]
                if doc in kept:
                    kept[doc].rounds += 1
                    kept[doc].best = min(kept[doc].best, pos + 1)
                else:
                    kept[doc] = _Kept(1, rnd, pos + 1)
            trace.append({"round": rnd, "query": search, "hits": len(hits), "kept": [hits[p] for p in chosen]})
            if rnd in self.report_rounds:
                snapshots[rnd] = react_order(kept, self.limit)
        self.trace[query.id] = trace
        return snapshots

    def search_query(self, query: Query, k: int) -> list[tuple[str, float]]:
        snapshots = self.search_rounds(query)
        for rnd, res in snapshots.items():
            self.run_by_round.setdefault(rnd, {})[query.id] = dict(res[:k])
        return snapshots[self.rounds][:k]


def _int_list(text: str) -> list[int]:
    return [int(x) for x in str(text).replace(";", ",").split(",") if x.strip()]


@register_system("react-bm25", "ReAct-BM25: LLM planner + BM25 + LLM observer over up to 10 rounds (Greek paper §3.8)",
                 rounds=10, depth=100, observer_batch=100, chars=600, report_rounds="1,2,3,5,10", bm25="bm25",
                 **LLM_PARAMS)
def build_react(corpus: Corpus, *, rounds, depth, observer_batch, chars, report_rounds, bm25,
                context: BuildContext, **llm) -> ReactRetriever:
    return ReactRetriever(corpus, client_from_params(llm, context.client), context.build(bm25, corpus, context.progress),
                          int(rounds), int(depth),
                          int(observer_batch), int(chars), _int_list(report_rounds))


# ---------------------------------------------------------------------------
# listwise reranking


class RerankRetriever(LLMRetriever):
    """Reorders the top ``depth`` of ``base`` in one listwise call; the rest of the base list follows.

    Malformed answers are retried once; then the parser's fallback applies (the model's valid
    order, then what it left out in base order; the base order when nothing is usable).
    ``accounting.total().statuses`` counts ok / wrong_format / repetition / missing_items.
    """

    name = "rerank"

    def __init__(self, corpus: Corpus, client: LLMClient, base: Retriever, depth: int, chars: int,
                 name: str = "rerank", first: Callable[[Query], list[str]] | None = None) -> None:
        super().__init__(corpus, client)
        self.base, self.depth, self.chars, self.name = base, depth, chars, name
        self.first = first  # explicitly cited articles, put first when given
        self.base_run: Run = {}

    def rerank(self, query: Query, hits: list[str]) -> list[str]:
        head, tail = hits[:self.depth], hits[self.depth:]
        if len(head) > 1:
            values = {"query": query.text, "n": len(head),
                      "candidates": numbered([self.corpus[d] for d in head], self.chars)}
            n = len(head)
            parsed = self.ask("rerank", values, lambda t, n=n: parsing.parse_ranking(t, n),
                              schema=parsing.ranking_schema(len(head)), qid=query.id, role="rerank",
                              max_tokens=8 * len(head) + 64)
            head = [head[i] for i in parsed.value]
        order = head + tail
        if self.first:
            cited = [d for d in self.first(query) if d in self.corpus]
            order = list(dict.fromkeys([*cited, *order]))
        return order

    def search_query(self, query: Query, k: int) -> list[tuple[str, float]]:
        hits = [d for d, _ in self.base.search(query.text, max(k, self.depth))]
        order = self.rerank(query, hits)[:k]
        return [(d, float(len(order) - i)) for i, d in enumerate(order)]

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        # the base system runs its own (often batched) search_many first
        self.base_run = self.base.search_many(list(queries), max(k, self.depth))
        base_run = self.base_run

        def one(query: Query) -> list[tuple[str, float]]:
            hits = [d for d, _ in ranked(base_run.get(query.id, {}))]
            order = self.rerank(query, hits)[:k]
            return [(d, float(len(order) - i)) for i, d in enumerate(order)]

        results = self.client.map(one, list(queries), on_done=(lambda *_: progress(1)) if progress else None)
        return {q.id: dict(r) for q, r in zip(queries, results, strict=True)}


@register_system("rerank", "LLM listwise reranking of the top 40 of a base system in one call",
                 base="bm25", depth=40, chars=800, **LLM_PARAMS)
def build_rerank(corpus: Corpus, *, base, depth, chars, context: BuildContext, **llm) -> RerankRetriever:
    return RerankRetriever(corpus, client_from_params(llm, context.client), context.build(base, corpus, context.progress),
                           int(depth), int(chars))


def cited_articles(corpus: Corpus) -> Callable[[Query], list[str]] | None:
    """Articles a query cites explicitly (``art. 148 § 1 k.k.``), by the citation finder of the
    corpus's legal order, where the order asks for it (``cited_first``: exam questions that cite their
    legal basis); None where it does not."""
    from lexir.jurisdiction import jurisdiction_of

    order = jurisdiction_of(corpus)
    if order is None or order.find_citations is None or not order.cited_first:
        return None
    from lexir.citations.model import known_articles

    find, known = order.find_citations, known_articles(corpus)

    def cited(query: Query) -> list[str]:
        return [c.id for c in find(query.text, known=known) if c.id]

    return cited


@register_system("ascr-h", "cascade and dense lists fused by weighted RRF (k0=20), then LLM listwise reranking "
                 "of the top 40; explicitly cited articles first (Polish paper)",
                 base="wrrf(systems=cascade+dense;weights=1,1;k0=20)", depth=40, chars=800, cited_first=True,
                 **LLM_PARAMS)
def build_ascr_h(corpus: Corpus, *, base, depth, chars, cited_first, context: BuildContext,
                 **llm) -> RerankRetriever:
    from lexir.retrieval.base import system_names

    missing = [s for s in ("cascade", "dense", "wrrf") if s in base and s not in system_names()]
    if missing:
        raise ValueError(f"ascr-h needs the system(s) {', '.join(missing)}, which are not available here")
    first = cited_articles(corpus) if cited_first else None
    return RerankRetriever(corpus, client_from_params(llm, context.client), context.build(base, corpus, context.progress),
                           int(depth), int(chars), name="ascr-h", first=first)


# ---------------------------------------------------------------------------
# query analysis (Polish paper: legal domain and explicitly cited provisions)


def analyse_query(client: LLMClient, corpus: Corpus, query: Query, system: str = "analysis") -> dict:
    """``{"domain", "acts", "provisions", "cited"}``: the model's reading of the query; ``cited``
    holds the article ids the query cites, found by the citation parser in the query and in
    the model's provisions. A malformed answer gives empty fields, never an error."""
    helper = LLMRetriever(corpus, client)
    helper.name = system
    acts = "\n".join(f"{a}: {corpus.acts[a].title if a in corpus.acts else ''}".rstrip(": ")
                     for a in corpus.act_ids())
    parsed = helper.ask("query_analysis", {"language": helper.language, "query": query.text, "acts": acts},
                        lambda t: parsing.parse_object(t, ["domain", "acts", "provisions"]),
                        schema=parsing.ANALYSIS_SCHEMA, qid=query.id, role="analysis", max_tokens=300)
    data = parsed.value if isinstance(parsed.value, dict) else {}
    out = {"domain": str(data.get("domain") or ""),
           "acts": [a for a in data.get("acts") or [] if isinstance(a, str)],
           "provisions": [p for p in data.get("provisions") or [] if isinstance(p, str)], "status": str(parsed.status)}
    cited: list[str] = []
    finder = cited_articles(corpus)
    if finder is not None:
        cited = finder(query) + [c for p in out["provisions"] for c in finder(Query(query.id, p))]
    out["cited"] = list(dict.fromkeys(cited))
    return out


# ---------------------------------------------------------------------------
# translation baseline


class TranslateRetriever(LLMRetriever):
    name = "translate"

    def __init__(self, corpus: Corpus, client: LLMClient, inner: Retriever, target: str, chars: int) -> None:
        super().__init__(corpus, client)
        self.inner, self.target, self.chars = inner, target, chars

    def search_query(self, query: Query, k: int) -> list[tuple[str, float]]:
        return self.inner.search(translate_text(self, query.text, self.target, self.chars, query.id), k)


def translate_text(helper: LLMRetriever, text: str, target: str, chars: int, qid: str) -> str:
    """The model's translation; fallback: the text untranslated."""
    parsed = helper.ask("translate", {"source": helper.language, "target": target, "text": clip(text, chars)},
                        lambda t: parsing.parse_text_field(t, "translation"),
                        schema=parsing.text_schema("translation"), qid=qid, role="translate",
                        max_tokens=max(256, chars // 2))
    return parsed.value or text


def translate_corpus(corpus: Corpus, client: LLMClient, target: str = "English", chars: int = 4000,
                     progress: Callable[[int], None] | None = None, language: str = "en") -> Corpus:
    """The corpus with every article translated (cached call by call, so an interrupted run resumes)."""
    helper = LLMRetriever(corpus, client)
    helper.name = "translate"

    def one(doc: Document) -> Document:
        return Document(doc.id, translate_text(helper, doc.text, target, chars, f"doc:{doc.id}"), doc.title)

    docs = client.map(one, corpus.documents, on_done=(lambda *_: progress(1)) if progress else None)
    return Corpus(f"{corpus.name}-{language}", docs, language=language, jurisdiction=corpus.jurisdiction)


@register_system("translate", "queries and corpus translated by the LLM, then BM25 in the target language",
                 target="English", target_code="en", chars=4000, bm25="bm25(mode=stem)", **LLM_PARAMS)
def build_translate(corpus: Corpus, *, target, target_code, chars, bm25, context: BuildContext,
                    **llm) -> TranslateRetriever:
    llm_client = client_from_params(llm, context.client)
    translated = translate_corpus(corpus, llm_client, target, int(chars), context.progress, target_code)
    return TranslateRetriever(corpus, llm_client, context.build(bm25, translated), target, int(chars))


# surrogate systems register themselves on import
from lexir.llm import surrogates as _surrogates  # noqa: E402,F401
