"""``GET /v1/{corpus}/search?q=...`` (one question) and ``POST /v1/{corpus}/search`` (a batch).

A search runs in the event loop when it is fast (a built BM25 index), else in the thread pool
(a first build, a dense encoder, a large batch). The GET route reads its path and query string
itself: FastAPI's per-request parameter machinery costs more than a BM25 search
(benchmarks/bench_service.py); the parameters are documented in the OpenAPI schema all the same.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from lexir.service import core
from lexir.service.http import json_response, param, parse_bool, parse_int, run, single, state_of
from lexir.service.models import SearchBatch, SearchResult, SearchResults
from lexir.service.state import ServiceError, ServiceState

router = APIRouter(tags=["search"])

FAST_BATCH = 4  # queries of a batch still answered in the event loop when the system is fast


def _fast(state: ServiceState, corpus: str, system: str | None, params: dict) -> bool:
    loaded = state.corpora.get(corpus)
    return loaded is not None and state.is_fast(loaded, system, params)


@router.get("/v1/{corpus}/search", response_model=SearchResult, openapi_extra={"parameters": [
    param("corpus", "string", "a served corpus (GET /v1/corpora)", required=True, where="path"),
    param("q", "string", "the question or case description", required=True),
    param("k", "integer", "number of hits (1-1000)", default=10),
    param("system", "string", "one of the served systems (default: the first)"),
    param("param", "array", "system parameter key:value (repeatable)"),
    param("text", "boolean", "include each hit's text (and doc)", default=True),
    param("as_of", "string", "YYYY-MM-DD: only provisions in force on that date (corpora with a history)")]})
async def search_get(request: Request) -> JSONResponse:
    state = state_of(request)
    corpus = request.path_params["corpus"]  # not a declared parameter: FastAPI's machinery costs more than a search
    args = request.query_params
    q = single(args, "q")
    if q is None:
        raise ServiceError("the query parameter q is required", field="q")
    k = parse_int(single(args, "k", "10"), "k")
    params = core.parse_param_pairs(args.getlist("param"))
    with_text = parse_bool(single(args, "text", "true"), "text")
    system = single(args, "system")
    as_of = single(args, "as_of") or None
    try:
        found = await run(_fast(state, corpus, system, params) and not as_of, core.search, state, corpus,
                          [("q", q)], k, system, params, with_text=with_text, as_of=as_of)
    except ServiceError as exc:
        if exc.field == "queries[0].text":  # the batch's name for the one question a GET asks: its q
            exc.field = "q"
        raise
    return json_response(found[0])


@router.post("/v1/{corpus}/search", response_model=SearchResults)
async def search_post(corpus: str, body: SearchBatch, request: Request) -> JSONResponse:
    state = state_of(request)
    queries = [(q.id or f"q{i + 1}", q.text) for i, q in enumerate(body.queries)]
    if not queries:
        raise ServiceError("queries is empty", field="queries")
    fast = len(queries) <= FAST_BATCH and _fast(state, corpus, body.system, body.params) and not body.as_of
    results = await run(fast, core.search, state, corpus, queries, body.k, body.system, None,
                        with_text=body.text, as_of=body.as_of, typed=body.params)
    return json_response({"results": results})
