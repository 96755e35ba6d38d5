"""What the routes share: the served state of a request, running work in or off the event loop,
JSON answers and errors, and query parameters documented in the OpenAPI schema."""

from __future__ import annotations

import re
from typing import Any

import orjson
from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from lexir.service.state import ServiceError, ServiceState

PAGE_KEY_COOKIE = "lexir_key"  # the page's API key, set by the key form


def state_of(request: Request) -> ServiceState:
    """The :class:`ServiceState` the app serves (``app.state.lexir``)."""
    return request.app.state.lexir


async def run(fast: bool, fn, *args, **kwargs):
    """``fn(*args)`` in the event loop when it is ``fast`` (a built BM25 index: about a millisecond,
    less than handing the work to a thread and back), else in the thread pool."""
    if fast:
        return fn(*args, **kwargs)
    return await run_in_threadpool(fn, *args, **kwargs)


class FastJSON(JSONResponse):
    """A JSON response serialised by orjson: the same JSON as Starlette's ``JSONResponse`` (UTF-8,
    no spaces), over ten times faster on a page of hits, whose texts are most of its bytes (with the
    standard library's encoder, serialising a search's answer cost more than the search)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


def json_response(body: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    """A response of plain JSON types, serialised directly (:class:`FastJSON`): FastAPI's generic
    encoder (and a response model's validation) walk every value and cost several times more than
    a search."""
    return FastJSON(body, status_code=status_code, headers=headers)


def error(status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    return json_response({"error": {"code": code, "message": message, **extra}}, status, headers)


def param(name: str, kind: str, description: str, required: bool = False, default: Any = None,
          where: str = "query") -> dict:
    """An OpenAPI parameter (``where``: query or path), for a route that reads its request itself."""
    schema: dict[str, Any] = {"type": kind} if kind != "array" else {"type": "array", "items": {"type": "string"}}
    if default is not None:
        schema["default"] = default
    return {"name": name, "in": where, "required": required, "description": description, "schema": schema}


_INTEGER = re.compile(r"-?[0-9]{1,18}")


def parse_int(value: str, name: str) -> int:
    """An integer as a query string writes one: ASCII digits, an optional minus (Python's int()
    would also take ``5_0``, `` 5`` and other scripts' digits)."""
    if not _INTEGER.fullmatch(value):
        raise ServiceError(f"{name} must be an integer; got {value[:20]!r}", field=name)
    return int(value)


def parse_bool(value: str, name: str) -> bool:
    """true/false (also 1/0, yes/no; any case), else a 400 naming the parameter."""
    folded = value.strip().lower()
    if folded in ("true", "1", "yes"):
        return True
    if folded in ("false", "0", "no"):
        return False
    raise ServiceError(f"{name} must be true or false; got {value[:20]!r}", field=name)


def single(args, name: str, default: str | None = None) -> str | None:
    """The one value of query parameter ``name`` (``default`` when absent); given twice, a 400
    (which one was meant cannot be told)."""
    values = args.getlist(name)
    if len(values) > 1:
        raise ServiceError(f"the query parameter {name} is given {len(values)} times; give it once", field=name)
    return values[0] if values else default
