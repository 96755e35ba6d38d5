"""What operators watch: Prometheus metrics (``GET /metrics``) and one JSON log line per request.

:class:`Observe` is the outermost ASGI middleware, so it sees every request, also those the
:class:`~lexir.service.app.Guard` refuses (401, 413, 429). For each request it

* takes a request id: the incoming ``X-Request-ID`` when it is sane (1-128 characters of
  ``A-Za-z0-9._:-``), else a new random one, and echoes it in the response's ``X-Request-ID``;
* counts it and times it by *route template* (``/v1/{corpus}/search``, never the raw path, whose
  values are unbounded) and corpus (a served corpus's name; ``""`` for routes without one, and
  ``"other"`` for a name that is not served, so a client cannot mint label values);
* writes one JSON line (``--log-file`` or stderr): ``ts, request_id, method, route, corpus,
  status, duration_ms, pid``. No query text, no path values, no key: a log is no copy of the questions.

Several worker processes (``lexir serve --workers N``) share one view: the metrics use
prometheus_client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, set by ``lexir serve``
before this module is imported), so a scrape answered by any worker reports the sums over all
of them, dead workers' counters included (a counter never goes back).
"""

from __future__ import annotations

import os
import re
import sys
import time
from datetime import UTC, datetime
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
from prometheus_client import multiprocess as _mp

from lexir._version import __version__
from lexir.structure.hits import snippet_cache

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
if MULTIPROCESS and not getattr(values.ValueClass, "_multiprocess", False):
    # prometheus_client was imported before the variable was set: values must go to its files
    values.ValueClass = values.get_value_class()

_REGISTRY = CollectorRegistry()  # one process: collected as is; several: each writes its files
# Latency buckets (seconds): a BM25 search is about a millisecond, a dated corpus's first load seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUESTS = Counter("lexir_http_requests", "HTTP requests answered, by method, route template, corpus "
                   "and status", ["method", "route", "corpus", "status"], registry=_REGISTRY)
ERRORS = Counter("lexir_http_errors", "HTTP requests answered with a 4xx or 5xx, by route template and status",
                 ["route", "status"], registry=_REGISTRY)
LATENCY = Histogram("lexir_http_request_duration_seconds", "Time from a request's arrival to the end of "
                    "its response, by method, route template and corpus", ["method", "route", "corpus"],
                    buckets=BUCKETS, registry=_REGISTRY)
IN_FLIGHT = Gauge("lexir_http_requests_in_flight", "Requests being answered (all workers)",
                  registry=_REGISTRY, multiprocess_mode="livesum")
CACHE_BYTES = Gauge("lexir_cache_bytes", "Estimated bytes held by a service cache, summed over workers "
                    "(dated: corpora as of a date; snippet_parts: the arrays of the parts' words and terms)",
                    ["cache"], registry=_REGISTRY, multiprocess_mode="livesum")
CACHE_ENTRIES = Gauge("lexir_cache_entries", "Entries of a service cache, summed over workers (dated; "
                      "hit_fields: the query-independent fields of hits, kept per corpus; snippet_parts: the "
                      "distinct pieces of text between whitespace the snippets analysed; snippet_texts: the "
                      "texts they keep laid out)", ["cache"], registry=_REGISTRY, multiprocess_mode="livesum")
CACHE_BUDGET = Gauge("lexir_cache_budget_bytes", "The byte budget of a service cache, per worker", ["cache"],
                     registry=_REGISTRY, multiprocess_mode="livemax")
RETRIEVERS = Gauge("lexir_retrievers", "Retrievers held for a served corpus (served systems, variants and "
                   "query-time parameter variants), most held by one worker", ["corpus"],
                   registry=_REGISTRY, multiprocess_mode="livemax")
CORPUS = Gauge("lexir_corpus_info", "A served corpus (value 1): its language and data fingerprint",
               ["corpus", "language", "fingerprint"], registry=_REGISTRY, multiprocess_mode="livemax")
PROVISIONS = Gauge("lexir_corpus_provisions", "Provisions of a served corpus", ["corpus"],
                   registry=_REGISTRY, multiprocess_mode="livemax")
SYSTEM = Gauge("lexir_system_info", "A served system (value 1): its spec, whether the default, a served "
               "system or an operator's variant, and the index format", ["system", "role", "index_format"],
               registry=_REGISTRY, multiprocess_mode="livemax")
BUILD = Gauge("lexir_build_info", "The lexir version serving (value 1)", ["version", "python"],
              registry=_REGISTRY, multiprocess_mode="livemax")
WORKERS = Gauge("lexir_workers", "Worker processes serving (the supervisor's count)",
                registry=_REGISTRY, multiprocess_mode="livemax")
RESTARTS = Counter("lexir_worker_restarts", "Worker processes restarted after they died", registry=_REGISTRY)
SHARD_RETRIES = Counter("lexir_shard_retries", "Calls to a BM25 shard sent again after its replica died or did "
                        "not answer (lexir serve --backend ray), by shard", ["shard"], registry=_REGISTRY)
SHARD_HEDGES = Counter("lexir_shard_hedges", "Calls to a BM25 shard sent a second time because the first had "
                       "not answered after --shard-hedge seconds (lexir serve --backend ray), by shard and by "
                       "which call answered first (won: first, hedge, or neither: both lost, sent again)",
                       ["shard", "won"], registry=_REGISTRY)
RESIDENT = Gauge("lexir_process_resident_bytes", "Resident memory of a process by pid: each worker's "
                 "(refreshed after a request, at most every 10 s) and the supervisor's after loading", registry=_REGISTRY, multiprocess_mode="liveall")

METHODS = frozenset({"GET", "POST", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"})
_SANE_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")


def sane_request_id(text: str) -> bool:
    """Whether an incoming ``X-Request-ID`` is kept as the request's id (1-128 characters of
    ``A-Za-z0-9._:-``); another is replaced by a new random one."""
    return _SANE_ID.fullmatch(text) is not None


def exposition() -> bytes:
    """The metrics in Prometheus's text format: this process's, or (multiprocess mode) the sums
    over every worker's files."""
    if MULTIPROCESS:
        registry = CollectorRegistry()
        _mp.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(_REGISTRY)


def mark_dead(pid: int) -> None:
    """A worker died: its live gauges (in flight, cache bytes ...) stop counting."""
    if MULTIPROCESS:
        _mp.mark_process_dead(pid)


def describe_service(state: Any) -> None:
    """The served corpora, systems and version as info gauges (set once, before workers fork)."""
    from lexir.retrieval.build import INDEX_FORMAT

    BUILD.labels(__version__, ".".join(map(str, sys.version_info[:3]))).set(1)
    settings = state.settings
    for i, system in enumerate(settings.systems):
        SYSTEM.labels(system, "default" if i == 0 else "served", str(INDEX_FORMAT)).set(1)
    for variant in settings.variants:
        SYSTEM.labels(variant, "variant", str(INDEX_FORMAT)).set(1)
    for name, loaded in state.corpora.items():
        CORPUS.labels(name, loaded.language, str(loaded.corpus.fingerprint)).set(1)
        PROVISIONS.labels(name).set(len(loaded.corpus))
    CACHE_BUDGET.labels("dated").set(state.dated.budget)
    RESIDENT.set(_resident_bytes())  # this process's (with workers: the supervisor's, after loading)


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class Observe:
    """ASGI middleware: request id, metrics and the JSON request log, around everything else."""

    def __init__(self, app, state: Any, log_fd: int | None = 2) -> None:
        self.app = app
        self.state = state
        self.log_fd = log_fd  # None: no request log
        self._children: dict[tuple, tuple] = {}  # (method, route, corpus, status) -> metric children
        self._seen: tuple | None = None  # what the cache gauges last showed
        self._rss_at = 0.0
        self._routes: list | None = None

    # -- labels ------------------------------------------------------------------------

    def _route_of(self, scope) -> Any:
        """The route that matches the request (the router's, else found here for a refused one)."""
        route = scope.get("route")
        if route is not None:
            return route
        from starlette.routing import Match

        if self._routes is None:
            self._routes = _flat_routes(scope["app"].router.routes) if "app" in scope else []
        partial = None
        for candidate in self._routes:
            match, child = candidate.matches(scope)
            if match is Match.FULL:
                scope.setdefault("path_params", child.get("path_params", {}))
                return candidate
            if match is Match.PARTIAL and partial is None:
                partial = candidate
        return partial

    def _labels(self, scope) -> tuple[str, str]:
        route = self._route_of(scope)
        template = getattr(route, "path", None) if route is not None else None
        if template is None:
            return "unmatched", ""
        corpus = (scope.get("path_params") or {}).get("corpus")
        if corpus is None and b"corpus=" in scope.get("query_string", b""):
            from urllib.parse import parse_qsl

            corpus = next((v for k, v in parse_qsl(scope["query_string"].decode("latin-1")) if k == "corpus"), None)
        if not corpus:
            return template, ""
        return template, corpus if corpus in self.state.corpora else "other"

    def _metrics_of(self, method: str, route: str, corpus: str, status: int) -> tuple:
        key = (method, route, corpus, status)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = (
                REQUESTS.labels(method, route, corpus, str(status)), LATENCY.labels(method, route, corpus),
                ERRORS.labels(route, str(status)) if status >= 400 else None)
        return found

    # -- gauges of this worker ---------------------------------------------------------------

    def refresh(self, force: bool = False) -> None:
        """The cache gauges when the caches changed; resident memory every 10 s (or ``force``)."""
        state = self.state
        dated = state.dated
        served = state.corpora.values()
        snippets = snippet_cache()
        seen = (dated.loads, dated.evictions, tuple(len(c.retrievers) for c in served),
                sum(len(c.kept) for c in served), snippets["parts"], snippets["texts"])
        if seen != self._seen:
            self._seen = seen
            stats = dated.stats()
            CACHE_BYTES.labels("dated").set(stats["bytes"])
            CACHE_ENTRIES.labels("dated").set(stats["entries"])
            CACHE_ENTRIES.labels("hit_fields").set(seen[3])
            CACHE_ENTRIES.labels("snippet_parts").set(snippets["parts"])
            CACHE_ENTRIES.labels("snippet_texts").set(snippets["texts"])
            CACHE_BYTES.labels("snippet_parts").set(snippet_cache(sizes=True)["table_bytes"])
            for name, loaded in state.corpora.items():
                RETRIEVERS.labels(name).set(len(loaded.retrievers))
        now = time.monotonic()
        if force or now - self._rss_at > 10:
            self._rss_at = now
            RESIDENT.set(_resident_bytes())

    # -- the request -----------------------------------------------------------------------

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        request_id = None
        for k, v in scope.get("headers", ()):
            if k == b"x-request-id":
                text = v.decode("latin-1")
                if sane_request_id(text):
                    request_id = text
                break
        if request_id is None:
            request_id = os.urandom(12).hex()
        echoed = request_id.encode()
        status = 500
        IN_FLIGHT.inc()

        async def send_with_id(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (b"x-request-id", echoed)]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            IN_FLIGHT.dec()
            elapsed = time.perf_counter() - start
            method = scope.get("method", "")
            if method not in METHODS:
                method = "other"
            route, corpus = self._labels(scope)
            requests, latency, errors = self._metrics_of(method, route, corpus, status)
            requests.inc()
            latency.observe(elapsed)
            if errors is not None:
                errors.inc()
            self.refresh()
            if self.log_fd is not None:
                ts = datetime.now(UTC).isoformat(timespec="milliseconds")
                line = orjson.dumps({"ts": ts, "request_id": request_id, "method": method, "route": route,
                                     "corpus": corpus, "status": status, "duration_ms": round(elapsed * 1000, 3),
                                     "pid": os.getpid()}, option=orjson.OPT_APPEND_NEWLINE)
                try:
                    os.write(self.log_fd, line)
                except OSError:
                    pass  # a full disk or a closed pipe must not fail the request


def _flat_routes(routes) -> list:
    """The app's routes, included routers opened (FastAPI >= 0.120 keeps them whole)."""
    out = []
    for route in routes:
        if hasattr(route, "original_router"):
            out.extend(_flat_routes(route.original_router.routes))
        else:
            out.append(route)
    return out
