"""The HTTP API and the web page: one FastAPI app over a :class:`ServiceState`.

Safety lives in one ASGI guard in front of every route (section 4 of issue #9): the API key
(``X-API-Key`` or ``Authorization: Bearer``; a cookie for the page) on everything but
:data:`OPEN_PATHS` and :data:`OPEN_PREFIXES` (health, the key form and the files it loads), a cap
on the request body (413, counted as it arrives, not trusted from the header), and a bounded
number of requests in flight (beyond it ``429`` with ``Retry-After`` at once, instead of a growing
queue) on everything but ``/healthz``. Errors are JSON ``{"error": {"code", "message", "field",
"valid"}}`` (a 405 with ``Allow``), also for malformed HTTP (:class:`JSONErrorH11Protocol`); no
error carries a file path or a traceback. Request bodies are typed strictly (``"k": true`` and
``"k": "5"`` are no numbers) and text that is not valid Unicode (a lone surrogate) is refused
before anything reads it.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from typing import Any

import h11
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount
from uvicorn.protocols.http.h11_impl import H11Protocol

from lexir.service import core
from lexir.service.state import ServiceError, ServiceState

log = logging.getLogger("lexir.service")

# Open without the API key: health (load balancers), the key form (a reader must reach it to give the
# key) and the shipped stylesheet and script the form loads (no data of any corpus).
OPEN_PATHS = ("/healthz", "/login")
OPEN_PREFIXES = ("/static/",)
PAGE_KEY_COOKIE = "lexir_key"


def _lone_surrogate(value: Any, where: tuple) -> tuple | None:
    """The place of the first string (key or value) in ``value`` that no UTF-8 can carry."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _lone_surrogate(key, (*where, key)) or _lone_surrogate(item, (*where, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, (*where, i))
            if found is not None:
                return found
    return None


class Body(BaseModel):
    """A JSON request body: strict types, and every string valid Unicode."""

    model_config = ConfigDict(strict=True)

    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        where = _lone_surrogate(data, ())
        if where is not None:
            field = ".".join(str(p).encode("utf-8", "backslashreplace").decode() for p in where) or "body"
            raise PydanticCustomError("surrogate", "{field}: not valid Unicode (a lone surrogate)",
                                      {"field": field})
        return data


class SearchQuery(Body):
    id: str = Field(default="", max_length=200)
    text: str


class SearchBatch(Body):
    queries: list[SearchQuery]
    k: int = 10
    system: str | None = None
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    text: bool = True
    as_of: str | None = None


class CiteRequest(Body):
    text: str
    language: str


class VerifyRequest(Body):
    quote: str
    id: str | None = None
    citation: str | None = None
    corpus: str | None = None
    threshold: float = 0.85


async def _run(fast: bool, fn, *args, **kwargs):
    if fast:
        return fn(*args, **kwargs)
    return await run_in_threadpool(fn, *args, **kwargs)


def _json(body: dict) -> JSONResponse:
    """A response of plain JSON types, serialised directly: FastAPI's generic encoder walks every
    value and costs several times more than the search it reports."""
    return JSONResponse(body)


def _param(name: str, kind: str, description: str, required: bool = False, default: Any = None) -> dict:
    schema: dict[str, Any] = {"type": kind} if kind != "array" else {"type": "array", "items": {"type": "string"}}
    if default is not None:
        schema["default"] = default
    return {"name": name, "in": "query", "required": required, "description": description, "schema": schema}


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ServiceError(f"{name} must be an integer; got {value[:20]!r}", field=name) from None


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status, headers=headers)


async def _send_json(send, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


class JSONErrorH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering a request it cannot parse (bad framing, a request line or
    headers over the limit) with lexir's JSON error instead of uvicorn's plain text."""

    def send_400_response(self, msg: str) -> None:
        body = json.dumps({"error": {"code": "bad_http", "message":
                                     "malformed HTTP request (request line, headers or framing)"}}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers, reason=b"Bad Request")))
        self.transport.write(self.conn.send(h11.Data(data=body)))
        self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()


class Guard:
    """ASGI middleware: API key, body size cap and in-flight bound, before any route runs."""

    def __init__(self, app, state: ServiceState) -> None:
        self.app = app
        self.settings = state.settings
        self.in_flight = 0
        self.lock = threading.Lock()

    def _authorised(self, scope) -> bool:
        key = self.settings.api_key
        path = scope["path"]
        if not key or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES) \
                or scope.get("method") == "OPTIONS":  # CORS preflights carry no credentials
            return True
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        given = headers.get("x-api-key", "")
        auth = headers.get("authorization", "")
        if not given and auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        if not given and "cookie" in headers:
            for part in headers["cookie"].split(";"):
                name, _, value = part.strip().partition("=")
                if name == PAGE_KEY_COOKIE:
                    given = value
        return bool(given) and hmac.compare_digest(given.encode(), key.encode())

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._authorised(scope):
            accept = next((v for k, v in scope.get("headers", []) if k.lower() == b"accept"), b"")
            if scope.get("method") == "GET" and b"text/html" in accept and not scope["path"].startswith("/v1/"):
                # a reader at the page: to the key form, not a JSON error
                await send({"type": "http.response.start", "status": 303,
                            "headers": [(b"location", b"/login"), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
            await _send_json(send, 401, {"error": {"code": "unauthorised", "message":
                             "an API key is required: header X-API-Key or Authorization: Bearer"}},
                             {"www-authenticate": "Bearer"})
            return
        if scope["path"] == "/healthz":  # cheap, and what a load balancer asks: never refused for load
            await self.app(scope, receive, send)
            return
        limit = self.settings.max_body_bytes
        for k, v in scope.get("headers", []):
            if k.lower() == b"content-length":
                try:
                    declared = int(v)
                except ValueError:
                    declared = -1
                if declared > limit or declared < 0:
                    await _send_json(send, 413, {"error": {"code": "too_large", "message":
                                     f"the request body may have at most {limit} bytes"}})
                    return
        with self.lock:
            if self.in_flight >= self.settings.max_in_flight:
                busy = True
            else:
                busy = False
                self.in_flight += 1
        if busy:
            await _send_json(send, 429, {"error": {"code": "busy", "message":
                             f"{self.settings.max_in_flight} requests are in flight; retry shortly"}},
                             {"retry-after": str(self.settings.retry_after_s)})
            return
        received = 0
        started = False

        async def counted_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge()
            return message

        async def tracked_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except _TooLarge:
            if not started:
                await _send_json(send, 413, {"error": {"code": "too_large", "message":
                                 f"the request body may have at most {limit} bytes"}})
        finally:
            with self.lock:
                self.in_flight -= 1


class _TooLarge(Exception):
    pass


def create_app(state: ServiceState) -> FastAPI:
    """The FastAPI app serving ``state``: the API under ``/v1``, the page at ``/``."""
    settings = state.settings
    app = FastAPI(title="lexir", version="0.1.0",
                  description="Statutory provisions for a legal question: search, provisions in context, "
                              "citations, quote verification.")
    app.state.lexir = state

    @app.exception_handler(ServiceError)
    async def service_error(_request: Request, exc: ServiceError):
        return JSONResponse(exc.to_json(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError):
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return _error(400, "bad_json", "the request body is not valid JSON")
        bad_text = next((e for e in errors if e.get("type") == "surrogate"), None)
        if bad_text is not None:
            field = (bad_text.get("ctx") or {}).get("field")
            return _error(400, "bad_text", f"{field}: not valid Unicode (a lone surrogate); send UTF-8 text",
                          field=field)
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return _error(422, "invalid", f"{where or 'request'}: {first.get('msg', 'invalid')}", field=where or None)

    def too_large() -> JSONResponse:
        return _error(413, "too_large", f"the request body may have at most {settings.max_body_bytes} bytes")

    @app.exception_handler(_TooLarge)
    async def body_too_large(_request: Request, _exc: Exception):
        return too_large()

    def allowed(scope) -> str:
        """The methods some route takes at this path (a 405's ``Allow``): every route, not only
        the first that matched the path (GET and POST search are two routes)."""
        methods: set[str] = set()
        for route in app.router.routes:
            if isinstance(route, Mount):
                if route.matches(scope)[0] is not Match.NONE:
                    methods |= {"GET", "HEAD"}  # static files
            elif getattr(route, "methods", None) and route.matches(scope)[0] is not Match.NONE:
                methods |= set(route.methods)
        return ", ".join(sorted(methods))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if isinstance(exc.__cause__, _TooLarge):  # FastAPI wraps a failed body read as a 400
            return too_large()
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "error")
        message = exc.detail if exc.status_code != 404 else "no such route; see /openapi.json"
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = allowed(request.scope) or headers.get("Allow", "")
            message = f"method {request.method} not allowed here; allowed: {headers['Allow']}"
        return _error(exc.status_code, code, str(message), headers=headers or None)

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception):
        log.exception("unexpected error")
        return _error(500, "internal", "internal error (logged by the server)")

    @app.get("/healthz", tags=["service"])
    async def healthz() -> dict:
        return {"status": "ok", "corpora": list(state.corpora)}

    @app.get("/v1/corpora", tags=["service"])
    def corpora() -> dict:
        return {"corpora": state.describe()}

    def _fast(corpus: str, system: str | None, params: dict) -> bool:
        loaded = state.corpora.get(corpus)
        return loaded is not None and state.is_fast(loaded, system, params)

    # Searches run in the event loop when they are fast (a built BM25 index: about a millisecond, less
    # than handing the work to a thread and back); anything that may take longer (a first build, a
    # dense encoder, a large batch) runs in the thread pool.
    # GET routes read their query string themselves: FastAPI's per-request parameter machinery
    # costs more than a BM25 search (benchmarks/bench_service.py). The parameters are documented
    # in the OpenAPI schema all the same.
    @app.get("/v1/{corpus}/search", tags=["search"], openapi_extra={"parameters": [
        _param("q", "string", "the question or case description", required=True),
        _param("k", "integer", "number of hits (1-1000)", default=10),
        _param("system", "string", "one of the served systems (default: the first)"),
        _param("param", "array", "system parameter key:value (repeatable)"),
        _param("text", "boolean", "include each hit's text (and doc)", default=True),
        _param("as_of", "string", "YYYY-MM-DD: only provisions in force on that date (corpora with a history)")]})
    async def search_get(corpus: str, request: Request) -> dict:
        args = request.query_params
        if "q" not in args:
            raise ServiceError("the query parameter q is required", field="q")
        k = _int(args.get("k", "10"), "k")
        params = core.parse_param_pairs(args.getlist("param"))
        with_text = args.get("text", "true").lower() not in ("false", "0", "no")
        system = args.get("system")
        as_of = args.get("as_of") or None
        found = await _run(_fast(corpus, system, params) and not as_of, core.search, state, corpus,
                           [("q", args["q"])], k, system, params, with_text=with_text, as_of=as_of)
        return _json(found[0])

    @app.post("/v1/{corpus}/search", tags=["search"])
    async def search_post(corpus: str, body: SearchBatch) -> dict:
        queries = [(q.id or f"q{i + 1}", q.text) for i, q in enumerate(body.queries)]
        if not queries:
            raise ServiceError("queries is empty", field="queries")
        fast = len(queries) <= 4 and _fast(corpus, body.system, body.params) and not body.as_of
        results = await _run(fast, core.search, state, corpus, queries, body.k, body.system, None,
                             with_text=body.text, as_of=body.as_of, typed=body.params)
        return _json({"results": results})

    @app.get("/v1/{corpus}/provisions/{unit_id:path}", tags=["provisions"], openapi_extra={"parameters": [
        _param("context", "array", "parent, children, siblings, toc (repeatable or comma-separated)"),
        _param("as_of", "string", "YYYY-MM-DD: the provision as it stood on that date (corpora with a history)")]})
    async def provision(corpus: str, unit_id: str, request: Request) -> dict:
        wanted = [c.strip() for item in request.query_params.getlist("context") for c in item.split(",")
                  if c.strip()]
        as_of = request.query_params.get("as_of") or None
        if as_of:  # the first request for a date loads that version of the corpus: not in the event loop
            return _json(await _run(False, core.provision, state, corpus, unit_id, wanted, as_of))
        return _json(core.provision(state, corpus, unit_id, wanted))

    @app.post("/v1/cite", tags=["citations"])
    def cite(body: CiteRequest) -> dict:
        return core.cite(state, body.text, body.language)

    @app.post("/v1/verify", tags=["citations"])
    def verify(body: VerifyRequest) -> dict:
        return core.verify(state, body.quote, body.id, body.citation, body.corpus, body.threshold)

    from lexir.service.history_routes import add_history_routes
    from lexir.service.web import add_page_routes

    add_history_routes(app, state)
    add_page_routes(app, state)

    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins),
                           allow_methods=["GET", "POST"], allow_headers=["X-API-Key", "Authorization",
                                                                        "Content-Type"])
    app.add_middleware(Guard, state=state)
    return app
