"""``POST /v1/cite`` (the citations in a text) and ``POST /v1/verify`` (a quote against the law)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from lexir.service import core
from lexir.service.http import json_response, state_of
from lexir.service.models import Citations, CiteRequest, Verification, VerifyRequest
from lexir.service.state import ServiceError

router = APIRouter(tags=["citations"])


@router.post("/v1/cite", response_model=Citations)
def cite(body: CiteRequest, request: Request) -> JSONResponse:
    if body.jurisdiction and body.language and body.jurisdiction != body.language:
        raise ServiceError(f"jurisdiction {body.jurisdiction!r} and language {body.language!r} (its old name) "
                           "disagree: give one", field="jurisdiction")
    return json_response(core.cite(state_of(request), body.text, body.jurisdiction or body.language, body.annotate))


@router.post("/v1/verify", response_model=Verification)
def verify(body: VerifyRequest, request: Request) -> JSONResponse:
    return json_response(core.verify(state_of(request), body.quote, body.id, body.citation, body.corpus,
                                     body.threshold))
