"""The HTTP routes of provisions through time (what :mod:`lexir.service.history` answers):

* ``GET /v1/{corpus}/history/{id}``: a provision's versions, with what changed them;
* ``GET /v1/{corpus}/diff/{id}?from=DATE&to=DATE``: the word-level diff between two dates;
* ``POST /v1/{corpus}/validity`` ``{"ids": [...], "as_of": DATE}``: the version of each id in force
  on a date (what the framework retrievers attach to hits).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from lexir.service.history import MAX_IDS, diff_provision, provision_history, validity
from lexir.service.http import json_response, param, state_of
from lexir.service.state import ServiceError

router = APIRouter(tags=["history"])


# The first request loads the corpus's history (parsed once per process): not in the event loop.
@router.get("/v1/{corpus}/history/{unit_id:path}")
async def history_route(corpus: str, unit_id: str, request: Request) -> JSONResponse:
    return json_response(await run_in_threadpool(provision_history, state_of(request), corpus, unit_id))


@router.get("/v1/{corpus}/diff/{unit_id:path}", openapi_extra={"parameters": [
    param("from", "string", "the earlier date, YYYY-MM-DD", True),
    param("to", "string", "the later date, YYYY-MM-DD", True)]})
async def diff_route(corpus: str, unit_id: str, request: Request) -> JSONResponse:
    args = request.query_params
    for name in ("from", "to"):
        if name not in args:
            raise ServiceError(f"the query parameter {name} is required", field=name)
    return json_response(await run_in_threadpool(diff_provision, state_of(request), corpus, unit_id,
                                                 args["from"], args["to"]))


@router.post("/v1/{corpus}/validity", openapi_extra={"requestBody": {"required": True, "content": {
    "application/json": {"schema": {"type": "object", "required": ["ids"], "properties": {
        "ids": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_IDS},
        "as_of": {"type": "string", "description": "YYYY-MM-DD (default: the latest version)"}},
        "additionalProperties": False}}}}})
async def validity_route(corpus: str, request: Request) -> JSONResponse:
    try:
        body = await request.json()
    except (ValueError, RecursionError) as exc:  # RecursionError: arrays nested thousands deep
        error = ServiceError("the request body is not valid JSON" + (" (nested too deeply)" if isinstance(
            exc, RecursionError) else ""))
        error.code = "bad_json"
        raise error from None
    if not isinstance(body, dict) or "ids" not in body:
        raise ServiceError('the body is a JSON object {"ids": [...], "as_of": "YYYY-MM-DD"}', field="ids")
    unknown = sorted(set(body) - {"ids", "as_of"})
    if unknown:  # as the typed bodies (422 invalid): a misspelt field would otherwise be ignored
        error = ServiceError(f"{unknown[0]}: unknown field; valid: ids, as_of", valid=["ids", "as_of"],
                             field=unknown[0])
        error.status, error.code = 422, "invalid"
        raise error
    return json_response(await run_in_threadpool(validity, state_of(request), corpus, body["ids"], body.get("as_of")))
