"""``GET /v1/{corpus}/provisions/{id}``: a provision in its act, with the context asked for."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from lexir.service import core
from lexir.service.http import json_response, param, run, state_of
from lexir.service.models import ProvisionAnswer

router = APIRouter(tags=["provisions"])


@router.get("/v1/{corpus}/provisions/{unit_id:path}", response_model=ProvisionAnswer, openapi_extra={"parameters": [
    param("context", "array", "parent, children, siblings, toc (repeatable or comma-separated)"),
    param("as_of", "string", "YYYY-MM-DD: the provision as it stood on that date (corpora with a history)")]})
async def provision(corpus: str, unit_id: str, request: Request) -> JSONResponse:
    state = state_of(request)
    wanted = [c.strip() for item in request.query_params.getlist("context") for c in item.split(",") if c.strip()]
    as_of = request.query_params.get("as_of") or None
    # the first request for a date loads that version of the corpus: not in the event loop
    return json_response(await run(not as_of, core.provision, state, corpus, unit_id, wanted, as_of))
