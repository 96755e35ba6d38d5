"""``GET /healthz`` and ``GET /v1/corpora``: what is served."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from lexir.service.http import json_response, state_of
from lexir.service.models import Corpora, Health

router = APIRouter(tags=["service"])


@router.api_route("/healthz", methods=["GET", "HEAD"], response_model=Health)  # HEAD: load balancers' probes
async def healthz(request: Request) -> JSONResponse:
    return json_response({"status": "ok", "corpora": list(state_of(request).corpora)})


@router.get("/v1/corpora", response_model=Corpora)
def corpora(request: Request) -> JSONResponse:
    return json_response({"corpora": state_of(request).describe()})
