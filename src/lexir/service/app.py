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

import h11
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount, Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from lexir.service import observe
from lexir.service.http import PAGE_KEY_COOKIE, error, json_response, state_of
from lexir.service.routes import citations, corpora, history, provisions, search
from lexir.service.state import ServiceError, ServiceState
from lexir.service.web import mount_page

log = logging.getLogger("lexir.service")

# Open without the API key: health (load balancers), the key form (a reader must reach it to give the
# key) and the shipped stylesheet and script the form loads (no data of any corpus).
OPEN_PATHS = ("/healthz", "/login")
OPEN_PREFIXES = ("/static/",)
# Never refused for load (429): health and the metrics scrape, whose answers matter most when busy.
UNBOUNDED_PATHS = ("/healthz", "/metrics")
ROUTERS = (corpora.router, search.router, provisions.router, citations.router, history.router)


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
        if scope["path"] in UNBOUNDED_PATHS:  # cheap, and what a load balancer or a scraper asks: never refused for load
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


# -- errors: every refusal as JSON {"error": {"code", "message", ...}} -------------------------


async def service_error(_request: Request, exc: ServiceError) -> JSONResponse:
    retry = getattr(exc, "retry_after_s", None)  # 503 of a system still being built
    return json_response(exc.to_json(), exc.status, {"retry-after": str(retry)} if retry else None)


async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return error(400, "bad_json", "the request body is not valid JSON")
    bad_text = next((e for e in errors if e.get("type") == "surrogate"), None)
    if bad_text is not None:
        field = (bad_text.get("ctx") or {}).get("field")
        return error(400, "bad_text", f"{field}: not valid Unicode (a lone surrogate); send UTF-8 text",
                     field=field)
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    if first.get("type") == "extra_forbidden":  # a misspelt field (top_k for k) would otherwise be ignored
        valid = _body_fields(_request, first.get("loc", ())[:-1])
        return error(422, "invalid", f"{where}: unknown field" + (f"; valid: {', '.join(valid)}" if valid else ""),
                     field=where, **({"valid": valid} if valid else {}))
    return error(422, "invalid", f"{where or 'request'}: {first.get('msg', 'invalid')}", field=where or None)


def _body_fields(request: Request, loc: tuple) -> list[str]:
    """The field names of the body model at ``loc`` (``("body", "queries", 0)``: a query's)."""
    import typing

    from pydantic import BaseModel

    route = request.scope.get("route")
    model = getattr(getattr(getattr(route, "body_field", None), "field_info", None), "annotation", None)
    for step in loc[1:]:
        if isinstance(step, int):
            args = [a for a in typing.get_args(model) if isinstance(a, type)]
            model = args[0] if args else None
        elif isinstance(model, type) and issubclass(model, BaseModel) and step in model.model_fields:
            model = model.model_fields[step].annotation
        else:
            return []
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def too_large(request: Request) -> JSONResponse:
    limit = state_of(request).settings.max_body_bytes
    return error(413, "too_large", f"the request body may have at most {limit} bytes")


async def body_too_large(request: Request, _exc: Exception) -> JSONResponse:
    return too_large(request)


def allowed(request: Request) -> str:
    """The methods some route takes at this path (a 405's ``Allow``): every route, not only
    the first that matched the path (GET and POST search are two routes)."""
    methods: set[str] = set()
    routes = list(request.app.router.routes)
    while routes:
        route = routes.pop()
        if hasattr(route, "original_router"):  # an included router (FastAPI >= 0.120 keeps it whole)
            routes.extend(route.original_router.routes)
        elif isinstance(route, Mount):
            if route.matches(request.scope)[0] is not Match.NONE:
                methods |= {"GET", "HEAD"}  # static files
        elif getattr(route, "methods", None) and route.matches(request.scope)[0] is not Match.NONE:
            methods |= set(route.methods)
    return ", ".join(sorted(methods))


async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    if isinstance(exc.__cause__, _TooLarge):  # FastAPI wraps a failed body read as a 400
        return too_large(request)
    if exc.status_code == 400 and isinstance(exc.__cause__, (ValueError, RecursionError)):
        # a body FastAPI could not parse: JSON nested thousands deep (RecursionError), bad UTF-8
        deep = " (nested too deeply)" if isinstance(exc.__cause__, RecursionError) else ""
        return error(400, "bad_json", f"the request body is not valid JSON{deep}")
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "error")
    message = exc.detail if exc.status_code != 404 else "no such route; see /openapi.json"
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = allowed(request) or headers.get("Allow", "")
        message = f"method {request.method} not allowed here; allowed: {headers['Allow']}"
    return error(exc.status_code, code, str(message), headers=headers or None)


async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error")
    return error(500, "internal", "internal error (logged by the server)")


HANDLERS = {ServiceError: service_error, RequestValidationError: validation_error, _TooLarge: body_too_large,
            StarletteHTTPException: http_error, Exception: unexpected}


def metrics(_request: Request) -> Response:
    """``GET /metrics``: Prometheus's text format (:mod:`lexir.service.observe`), under the API key
    when one is set, like every route but health and the key form."""
    return Response(observe.exposition(), media_type=observe.CONTENT_TYPE)


def create_app(state: ServiceState, request_log: int | None = None) -> FastAPI:
    """The FastAPI app serving ``state`` (``app.state.lexir``, where the routes read it): the
    routers of :mod:`lexir.service.routes` under ``/v1``, the page at ``/``, ``/metrics``, errors
    as JSON, :class:`Guard` in front of everything and :class:`~lexir.service.observe.Observe`
    in front of it (request ids, metrics, and a JSON line per request on the file descriptor
    ``request_log``; None: no request log)."""
    app = FastAPI(title="lexir", version="0.1.0",
                  description="Statutory provisions for a legal question: search, provisions in context, "
                              "citations, quote verification.")
    app.state.lexir = state

    for kind, handler in HANDLERS.items():
        app.add_exception_handler(kind, handler)
    for router in ROUTERS:
        app.include_router(router)
    # GET search, the hot path, as a plain Starlette route in front of its FastAPI route (kept for
    # the OpenAPI schema): it reads its request itself, so FastAPI's per-request machinery
    # (dependency solving, endpoint wrapping) would only add its cost, about 35 us a request.
    plain = Route("/v1/{corpus}/search", search.search_get, methods=["GET"], include_in_schema=False)
    plain.methods = {"GET"}  # as the FastAPI route: no implicit HEAD (a 405's Allow stays GET, POST)
    app.router.routes.insert(0, plain)
    mount_page(app)
    if state.settings.learn is not None:  # lexir serve --learn: the learner thread and GET /v1/{corpus}/model
        from lexir.service.learner import mount_learning

        mount_learning(app, state)
    app.add_api_route("/metrics", metrics, methods=["GET"], include_in_schema=False)

    settings = state.settings
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins),
                           allow_methods=["GET", "POST"], allow_headers=["X-API-Key", "Authorization",
                                                                        "Content-Type"])
    app.add_middleware(Guard, state=state)
    app.add_middleware(observe.Observe, state=state, log_fd=request_log)  # outermost: sees refusals too
    observe.describe_service(state)
    return app
