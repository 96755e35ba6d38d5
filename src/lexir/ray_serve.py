"""``lexir serve --backend ray``: lexir's HTTP service on Ray Serve, BM25 sharded by act.

Optional: ``pip install 'lexir[ray]'`` (``ray[data,serve]``). Three kinds of deployments:

* **shards** (``bm25-shard-<i>``, ``--shard-replicas`` replicas each): a shard's score matrix
  (:mod:`lexir.retrieval.bm25_shards`: whole acts, built with the whole corpus's BM25 statistics),
  memory-mapped from the shard folder, so a replica started again after a crash is answering in
  moments, and replicas on one node share its pages. A shard answers a batch of term ids with
  its heap's admissions (global positions and scores).
* **front** (``--replicas`` replicas): lexir's own FastAPI app (:func:`lexir.service.app.create_app`:
  the same routes, page, ``/metrics`` and JSON request log) over a :class:`ServiceState` whose
  ``bm25`` is a :class:`~lexir.retrieval.bm25_shards.ShardedBM25`: a question is analysed once
  here, sent to every shard at once, and the answers merged into exactly the hits one index
  gives (ties and their order included). Other served systems are built unsharded on each front.
  A front takes its HTTP requests from the ingress (:meth:`Front.http`: the request's method,
  path, headers and body, run through the app in the replica), not from Serve's proxy.
* **ingress** (``--ingress-replicas`` replicas): the application's ingress behind Serve's HTTP
  proxy on ``--host``/``--port``. It holds no corpus and does no work of its own: it reads a
  request (the body up to the service's limit and one byte more, so the front still answers 413),
  hands it to a front replica through a handle and returns the front's answer as it is.

A shard call that fails because its replica died (or did not answer in ``timeout_s``) is sent
again, up to ``retries`` times (backing off 50 ms, 100 ms, ...); Serve routes it to a live
replica (the shard's other replicas, or the one it starts again). ``retries=0``: the request
fails (503, ``shard_unavailable``). A shard call that is merely slow to answer is *hedged*: after
``hedge_s`` (or the 95th percentile of the front's recent calls, where longer) it is sent a second
time, to another replica, and the first answer is taken (:func:`await_shard`), so a replica that
stalls costs a call about a second, not ``timeout_s``. Likewise a request the ingress handed to a front replica
that died (or became unreachable) before answering, or that did not answer within
``front_timeout_s`` (a replica hung but alive: the attempt is abandoned and cancelled there,
best effort), is handed again to another, ``retries`` times at most, counted in
``lexir_front_retries_total{reason="died"|"timeout"}`` (and each abandoned attempt in
``lexir_front_timeouts_total``; the ingress adds its counts to the front's ``/metrics`` answer)
and logged (JSON lines ``"event": "front_retry"`` and ``"front_timeout"`` on the ingress's
stderr); ``retries=0`` or retries used up: 503 ``front_unavailable``, or 504 ``front_timeout``
when the last attempt timed out. Every route the front serves is read-only but ``POST
/judgements`` (it records a judgement): that one is not sent again (a front that died after
recording it would record it twice), and fails with 503 (504) instead.
The request keeps one ``X-Request-ID`` across attempts: the one Serve's proxy gives it (the
client's, else a new UUID) when the front's log would keep it, else a new one (logged, ``"event":
"request_id_replaced"``); the front's echo of it is dropped, as the proxy sets the header the
client sees. A request in flight in an *ingress* replica that dies is lost (Serve's proxy answers
500 and does not retry): the ingress does so little that it rarely dies, and several ingress
replicas (``--ingress-replicas``) keep the service up while Serve starts it again, but clients
must retry a 5xx of a read-only request themselves.

Every deployment's callers pick a replica with :class:`lexir.ray_routing.PassOverHung`: Serve's
power of two choices, but a replica that has stopped answering (a request sent to it neither
accepted nor refused for a second) is passed over until it answers again, so new requests and
resends soon stop going to a replica that hangs.

The shard folders live in the lexir cache (``<cache>/shards/``), keyed by the corpus's
fingerprint, the BM25 parameters and the number of shards; built once, by the process that
deploys. On a cluster the cache must be at the same path on every node (a shared filesystem).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, Counter, generate_latest

from lexir.distributed import init as init_runtime
from lexir.io.paths import cache_dir
from lexir.retrieval import bm25_shards

INSTALL_HINT = ("Ray Serve is not installed: pip install 'lexir[ray]' (or pip install 'ray[data,serve]>=2.40') "
                "for --backend ray")
DEFAULT_RETRIES = 3
DEFAULT_TIMEOUT_S = 30.0
# Seconds after which a front sends a shard call not yet answered a second time (hedges it), or
# the 95th percentile of its last RECENT_CALLS calls where that is longer: a live replica answers
# a batch in milliseconds, and Serve's router passes over a replica that owes an answer for a
# second (lexir.ray_routing), so a hedge sent then reaches another replica. 0: never.
DEFAULT_HEDGE_S = 1.0
RECENT_CALLS = 256
# How every deployment's callers pick a replica: Serve's power of two choices, passing over a
# replica that has stopped answering (imported by the callers' processes, where Serve is).
ROUTER = "lexir.ray_routing:PassOverHung"
# How long the ingress waits for a front replica's answer before it abandons the attempt: above a
# shard call's timeout (a front that waits on a hung shard replica resends that call itself and
# answers), like nginx's proxy_read_timeout. 0: no limit.
DEFAULT_FRONT_TIMEOUT_S = 60.0
APP_NAME = "lexir"
# What a front deployment and the ingress are called in the application.
FRONT, INGRESS = "front", "ingress"
# Requests the ingress never hands to a second front: those that change something (a front that
# died after doing it would do it twice).
NOT_RESENT = frozenset({("POST", "/judgements")})
# The ingress's own metrics, added to the /metrics answer of the front it passes the scrape to
# (a registry of its own: a front's registry never has them, so no series is there twice).
_INGRESS_REGISTRY = CollectorRegistry()
FRONT_RETRIES = Counter("lexir_front_retries", "Requests the ingress handed again to another front replica "
                        "after the one it had handed them to died or became unreachable (reason=died) or did "
                        "not answer within --front-timeout (reason=timeout) (lexir serve --backend ray)",
                        ["reason"], registry=_INGRESS_REGISTRY)
FRONT_TIMEOUTS = Counter("lexir_front_timeouts", "Attempts the ingress abandoned because the front replica did "
                         "not answer within --front-timeout (each then resent to another front, or answered "
                         "504 front_timeout) (lexir serve --backend ray)", registry=_INGRESS_REGISTRY)
INGRESS_FAILURES = Counter("lexir_ingress_failures", "Requests the ingress answered itself because no front "
                           "replica answered: 503 front_unavailable or 504 front_timeout (a front's "
                           "lexir_http_requests_total never sees these) (lexir serve --backend ray)",
                           ["method", "status", "code"], registry=_INGRESS_REGISTRY)
for _reason in ("died", "timeout"):
    FRONT_RETRIES.labels(_reason)  # both series from the start, at 0
# The bm25 parameters a shard folder is built with (the system's index-time parameters but bigrams).
_BUILD_PARAMS = ("k1", "b", "method", "title_weight", "dedupe_query", "mode", "stopwords", "lemmatizer",
                 "language", "stoplist", "verb_lemmas", "families", "compounds")


class ServeMissing(RuntimeError):
    """``--backend ray`` without Ray Serve installed."""


def require_serve():
    """``(ray, ray.serve)``, or :class:`ServeMissing` saying what to install."""
    try:
        import ray
        from ray import serve
    except ImportError:
        raise ServeMissing(INSTALL_HINT) from None
    return ray, serve


def init(address: str | None = None, num_cpus: int | None = None):
    """Connect to the cluster at ``address`` (or ``$RAY_ADDRESS``), else start a small local runtime
    (``num_cpus``, a 200 MB object store, no dashboard). The driver's ``LEXIR_*`` variables (and,
    for a local runtime, ``PYTHONPATH``) travel to the replicas. Returns the ``ray`` module."""
    require_serve()
    return init_runtime(address, num_cpus)


# -- the shard folders -------------------------------------------------------------------------


def bm25_params(system: str) -> dict[str, Any]:
    """The index-time parameters of a ``bm25`` spec (``bm25``, ``bm25(k1=0.9;mode=stem)``);
    ValueError for another system or phrase evidence (``bigrams``), which is not sharded."""
    from lexir.retrieval.base import get_system
    from lexir.retrieval.spec import parse_spec

    spec = parse_spec(system)
    if spec.name != "bm25":
        raise ValueError(f"only bm25 is sharded; {system!r} is {spec.name}")
    resolved = get_system("bm25").resolve(spec.param_dict)
    if resolved.get("bigrams"):
        raise ValueError(f"{system!r}: bm25 with bigrams (phrase evidence) is not sharded; serve plain bm25")
    return {key: resolved[key] for key in _BUILD_PARAMS}


def shards_folder(fingerprint: str, shards: int, params: Mapping[str, Any]) -> Path:
    """Where the shards of a corpus (by fingerprint) under ``params`` are kept in the cache."""
    key = json.dumps({"fingerprint": fingerprint, "shards": shards, "params": dict(params),
                      "format": bm25_shards.FORMAT_VERSION}, sort_keys=True, default=str)
    return cache_dir() / "shards" / f"bm25-{shards}-{hashlib.sha256(key.encode()).hexdigest()[:20]}"


def ensure_shards(corpus, shards: int, params: Mapping[str, Any],
                  notify: Callable[[str], None] | None = None) -> Path:
    """The folder of ``corpus`` cut into ``shards`` (:func:`bm25_shards.build`), built unless
    the cache has it (a folder is only ever complete: built beside it, then renamed)."""
    folder = shards_folder(corpus.fingerprint, shards, params)
    try:
        bm25_shards.read_plan(folder)
        return folder
    except ValueError:
        pass
    if notify:
        notify(f"cutting {corpus.name} ({len(corpus):,} documents) into {shards} BM25 shards by act …")
    building = folder.with_name(f"{folder.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    bm25_shards.build(corpus, building, shards, **params)
    shutil.rmtree(folder, ignore_errors=True)
    building.rename(folder)
    return folder


# -- the deployments' classes (plain classes: Serve wraps them in deploy()) ----------------------


class ShardServer:
    """One replica of one shard."""

    def __init__(self, folder: str, shard: int) -> None:
        self.index = bm25_shards.BM25Shard(folder, shard)
        self.index.candidates(np.zeros(1, dtype=np.int64), np.array([0, 1]), 1, True)  # compiled before serving

    def candidates(self, flat: np.ndarray, pointers: np.ndarray, k: int, dedupe: bool) -> bm25_shards.Candidates:
        return self.index.candidates(flat, pointers, k, dedupe)

    def whoami(self) -> dict[str, Any]:
        """This replica: its shard, process id, Ray actor name, and the bytes of its arrays."""
        import ray

        return {"shard": self.index.shard, "pid": os.getpid(), "actor": ray.get_runtime_context().get_actor_name(),
                "bytes": self.index.nbytes(), "documents": int(self.index.matrix.num_docs)}


class Front:
    """One replica of the front: lexir's app over a state whose ``sharded`` system is the shards'."""

    def __init__(self, corpus: str, data_dir: str | None, folder: str, shards: Sequence[Any], sharded: str,
                 settings: Mapping[str, Any] | None = None, request_log: bool = True) -> None:
        from lexir.service.state import ServiceState, Settings

        self.shards, self.retries, self.timeout_s = list(shards), DEFAULT_RETRIES, DEFAULT_TIMEOUT_S
        self.hedge_s, self.latencies = DEFAULT_HEDGE_S, RecentTimes()
        self.request_log = request_log
        self.state = ServiceState(Settings.from_env(data_dir=data_dir, **dict(settings or {})))
        self.state.add(corpus, made={sharded: lambda c: bm25_shards.ShardedBM25(folder, self.call_all, c)})
        self.corpus, self.sharded = next(iter(self.state.corpora)), sharded
        from lexir.service.workers import warm_hits

        loaded = self.state.get(self.corpus)  # made before Serve routes a request here, not by the first one
        warm_hits(loaded, self.state.retriever(loaded, sharded, {}))
        self.state.settle()
        from lexir.service.app import create_app

        self.app = create_app(self.state, request_log=2 if self.request_log else None)

    def reconfigure(self, config: Mapping[str, Any]) -> None:
        """Serve's ``user_config``: ``retries``, ``timeout_s`` and ``hedge_s`` of the shard calls.
        (:func:`deploy` called again does not reconfigure the running replicas: Serve replaces them
        all, fronts and ingress, with new ones; measured with Ray 2.60, new process ids.)"""
        self.retries = int(config.get("retries", DEFAULT_RETRIES))
        self.timeout_s = float(config.get("timeout_s", DEFAULT_TIMEOUT_S))
        self.hedge_s = float(config.get("hedge_s", DEFAULT_HEDGE_S))

    async def http(self, request: Mapping[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """One HTTP request the ingress read (:func:`_wire`: method, path, query string, headers,
        body, client) through lexir's app in this replica: its status, headers and body."""
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
                 "http_version": request.get("http_version", "1.1"), "method": request["method"],
                 "scheme": request.get("scheme", "http"), "path": request["path"],
                 "raw_path": request.get("raw_path") or request["path"].encode(), "root_path": "",
                 "query_string": request.get("query_string", b""), "headers": list(request.get("headers", ())),
                 "client": request.get("client"), "server": request.get("server")}
        body, sent = request.get("body", b""), False
        status, headers, chunks = 500, [], []
        finished = asyncio.Event()

        async def receive():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await finished.wait()  # the whole body was read: the client stays until the answer is sent
            return {"type": "http.disconnect"}

        async def send(message):
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status, headers = message["status"], list(message.get("headers", ()))
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    finished.set()

        try:
            await self.app(scope, receive, send)
        finally:
            finished.set()
        return status, headers, b"".join(chunks)

    def call_all(self, flat: np.ndarray, pointers: np.ndarray, k: int, dedupe: bool) -> list[bm25_shards.Candidates]:
        """Every shard's candidates: all asked at once, each call that fails on a dead or
        unanswering replica sent again (``retries`` times at most), and one that is slow to
        answer sent a second time (hedged) after :meth:`hedge_delay` seconds."""
        from lexir.service import observe

        pending = [h.candidates.remote(flat, pointers, k, dedupe) for h in self.shards]
        hedge_after = self.hedge_delay()
        answers = []
        for i, handle in enumerate(self.shards):
            shard = str(i)
            answer = await_shard(lambda handle=handle: handle.candidates.remote(flat, pointers, k, dedupe),
                                 first=pending[i], timeout_s=self.timeout_s, retries=self.retries,
                                 hedge_after_s=hedge_after, retryable=_retryable(),
                                 on_retry=lambda shard=shard: observe.SHARD_RETRIES.labels(shard).inc(),
                                 on_hedge=lambda won, shard=shard: observe.SHARD_HEDGES.labels(shard, won).inc(),
                                 failed=lambda attempts, exc, i=i: _unavailable(i, attempts, exc))
            if answer.took_s is not None:
                self.latencies.add(answer.took_s)
            answers.append(answer.value)
        return answers

    def hedge_delay(self) -> float | None:
        """Seconds after which a shard call not yet answered is sent a second time: ``hedge_s``,
        or the 95th percentile of the recent calls' times where that is longer (a hedge is for
        the slowest calls, not a second copy of the usual ones: see :func:`await_shard`); None
        where hedging is off (``hedge_s`` 0)."""
        if self.hedge_s <= 0:
            return None
        return max(self.hedge_s, self.latencies.p95())

    def run(self, queries: Sequence[tuple[str, str]], k: int = 100, system: str | None = None) -> dict:
        """A run over the served corpus: ``(query id, text)`` pairs through the served ``system``
        (default: the sharded one), as ``Retriever.search_many`` returns it."""
        from lexir.types import Query

        loaded = self.state.get(self.corpus)
        retriever = self.state.retriever(loaded, system or self.sharded, {})
        return retriever.search_many([Query(q, t) for q, t in queries], k)

    def whoami(self) -> dict[str, Any]:
        import ray

        return {"pid": os.getpid(), "actor": ray.get_runtime_context().get_actor_name()}


class Ingress:
    """One replica of the ingress: each HTTP request handed to a front replica, and handed again
    to another when that one dies before answering (see the module)."""

    def __init__(self, front: Any, max_body_bytes: int = 1 << 20) -> None:
        self.front, self.max_body_bytes, self.retries = front, int(max_body_bytes), DEFAULT_RETRIES
        self.front_timeout_s = DEFAULT_FRONT_TIMEOUT_S

    def reconfigure(self, config: Mapping[str, Any]) -> None:
        """Serve's ``user_config``: ``retries`` (the fronts' ``retries`` too) and ``front_timeout_s``
        (seconds an attempt on a front replica may take; 0: no limit)."""
        self.retries = int(config.get("retries", DEFAULT_RETRIES))
        self.front_timeout_s = float(config.get("front_timeout_s", DEFAULT_FRONT_TIMEOUT_S))

    async def __call__(self, request):
        from starlette.responses import Response

        wire = await _wire(request, self.max_body_bytes)
        if wire["client_request_id"] is not None:  # not a sane id: the front logs the one given here
            _log({"event": "request_id_replaced", "request_id": wire["request_id"],
                  "client_request_id": wire["client_request_id"][:256]})
        resend = (wire["method"], wire["path"]) not in NOT_RESENT
        try:
            status, headers, body = await self._forward("http", (wire,), wire["request_id"], resend)
        except FrontUnavailable as exc:
            code, status = ("front_timeout", 504) if isinstance(exc, FrontTimeout) else ("front_unavailable", 503)
            from lexir.service.observe import METHODS

            method = wire["method"] if wire["method"] in METHODS else "other"
            INGRESS_FAILURES.labels(method, str(status), code).inc()
            payload = json.dumps({"error": {"code": code, "message": str(exc)}}).encode()
            # no X-Request-ID here: Serve's proxy adds the request's to every answer
            return Response(payload, status_code=status, media_type="application/json", headers={"retry-after": "1"})
        # Serve's proxy adds the X-Request-ID the client sees (the request's, which the front was
        # given): the front's own copy would be a second one.
        headers = [(k, v) for k, v in headers if k.lower() != b"x-request-id"]
        if wire["method"] == "GET" and wire["path"] == "/metrics" and status == 200:
            body = body + generate_latest(_INGRESS_REGISTRY)
            headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
        response = Response(body, status_code=status)
        response.raw_headers = headers
        return response

    async def run(self, queries: Sequence[tuple[str, str]], k: int = 100, system: str | None = None) -> dict:
        """:meth:`Front.run` on a front replica, handed again to another when it dies (as HTTP)."""
        return await self._forward("run", (queries, k, system), None, True)

    async def _forward(self, method: str, args: tuple, request_id: str | None, resend: bool):
        attempt = 0
        while True:
            try:
                return await self._attempt(method, args)
            except (_AttemptTimedOut, *_front_lost()) as exc:
                if isinstance(exc, _task_error()):  # the front answered with an error: not a lost front
                    raise
                timed_out = isinstance(exc, _AttemptTimedOut)
                again = resend and attempt < self.retries
                if timed_out:
                    FRONT_TIMEOUTS.inc()
                    _log({"event": "front_timeout", "request_id": request_id, "method": method,
                          "attempt": attempt + 1, "timeout_s": self.front_timeout_s, "resent": again})
                if not again:
                    unsent = "" if resend else " (a request that records something is not sent twice)"
                    if timed_out:
                        raise FrontTimeout(f"the front replica handling the request did not answer within "
                                           f"{self.front_timeout_s:g} s, {attempt + 1} attempt(s); try again"
                                           + unsent) from None
                    raise FrontUnavailable(f"the front replica handling the request died or became unreachable "
                                           f"after {attempt + 1} attempt(s) ({type(exc).__name__}); try again"
                                           + unsent) from None
                attempt += 1
                reason = "timeout" if timed_out else "died"
                FRONT_RETRIES.labels(reason).inc()
                _log({"event": "front_retry", "request_id": request_id, "method": method, "attempt": attempt,
                      "reason": reason, "error": "timeout" if timed_out else type(exc).__name__})
                await asyncio.sleep(min(0.05 * 2 ** (attempt - 1), 1.0))

    async def _attempt(self, method: str, args: tuple):
        """One call to a front replica, abandoned (and cancelled there, best effort) when it has
        not answered within ``front_timeout_s``: :class:`_AttemptTimedOut`."""
        response = getattr(self.front, method).remote(*args)
        limit = self.front_timeout_s if self.front_timeout_s > 0 else None
        try:
            async with asyncio.timeout(limit) as deadline:
                return await response
        except TimeoutError:
            if not deadline.expired():  # a TimeoutError of the call itself, not this limit
                raise
            try:
                response.cancel()
            except Exception:  # noqa: BLE001 - best effort: a hung replica may never see it
                pass
            raise _AttemptTimedOut() from None

    def whoami(self) -> dict[str, Any]:
        import ray

        return {"pid": os.getpid(), "actor": ray.get_runtime_context().get_actor_name()}


class FrontUnavailable(RuntimeError):
    """No front replica answered a request (they died, ``retries`` times)."""


class FrontTimeout(FrontUnavailable):
    """No front replica answered a request within ``front_timeout_s`` (the last attempt; HTTP 504)."""


class _AttemptTimedOut(Exception):
    """One attempt on a front replica took longer than ``front_timeout_s``."""


async def _wire(request, max_body_bytes: int) -> dict[str, Any]:
    """What :meth:`Front.http` needs of a Starlette request: method, path, query string, headers
    (with one ``X-Request-ID``, kept over attempts), client, and the body, read up to
    ``max_body_bytes`` and one byte more (the front's guard answers 413 to a longer one).

    The request id is the incoming ``X-Request-ID`` (Serve's proxy gives every request one: the
    client's, else a new UUID) when the front's log would keep it
    (:func:`~lexir.service.observe.sane_request_id`), else a new one given to the front in its
    place (``client_request_id``: the one replaced; None when none was)."""
    from lexir.service.observe import sane_request_id

    scope = request.scope
    headers = [(bytes(k), bytes(v)) for k, v in scope.get("headers", ())]
    incoming = next((v.decode("latin-1") for k, v in headers if k.lower() == b"x-request-id"), None)
    replaced = None
    if incoming is not None and sane_request_id(incoming):
        request_id = incoming
    else:
        request_id, replaced = os.urandom(12).hex(), incoming
        headers = [(k, v) for k, v in headers if k.lower() != b"x-request-id"]
        headers.append((b"x-request-id", request_id.encode()))
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_body_bytes:
            del body[max_body_bytes + 1:]
            break
    client = scope.get("client")
    server = scope.get("server")
    return {"method": scope["method"], "path": scope["path"], "raw_path": scope.get("raw_path"),
            "query_string": scope.get("query_string", b""), "headers": headers, "body": bytes(body),
            "client": tuple(client) if client else None, "server": tuple(server) if server else None,
            "scheme": scope.get("scheme", "http"), "http_version": scope.get("http_version", "1.1"),
            "request_id": request_id, "client_request_id": replaced}


def _log(event: Mapping[str, Any]) -> None:
    """A JSON line on this process's stderr (a replica's: Ray's log folder)."""
    line = json.dumps({"ts": datetime.now(UTC).isoformat(timespec="milliseconds"), **event, "pid": os.getpid()})
    try:
        os.write(2, (line + "\n").encode())
    except OSError:
        pass


def _front_lost() -> tuple[type[BaseException], ...]:
    """What a call to a front replica fails with when that replica died or cannot be reached."""
    from ray import exceptions as rex
    from ray.serve import exceptions as sex

    kinds = [rex.RayActorError, rex.ActorUnavailableError]
    kinds += [getattr(sex, name) for name in ("DeploymentUnavailableError",) if hasattr(sex, name)]
    return tuple(kinds)


def _task_error() -> type[BaseException]:
    from ray.exceptions import RayTaskError

    return RayTaskError


def _retryable() -> tuple[type[BaseException], ...]:
    """What a retried shard call may fail with: its replica died or is unreachable, or it did not
    answer in time (Serve's and Ray's exceptions)."""
    from ray import exceptions as rex
    from ray.serve import exceptions as sex

    kinds = [rex.RayActorError, rex.ActorUnavailableError, rex.GetTimeoutError, TimeoutError]
    kinds += [getattr(sex, name) for name in ("RequestCancelledError", "BackPressureError", "DeploymentUnavailableError")
              if hasattr(sex, name)]
    return tuple(kinds)


def _unavailable(shard: int, attempts: int, exc: BaseException):
    from lexir.service.state import Unavailable

    error = Unavailable(f"BM25 shard {shard} did not answer after {attempts + 1} attempt(s) "
                        f"({type(exc).__name__}); try again", field="system")
    error.code = "shard_unavailable"
    return error


# -- one shard call: resent when lost, hedged when slow ----------------------------------------


class RecentTimes:
    """The last :data:`RECENT_CALLS` answered shard calls' times (seconds), for their 95th
    percentile. Shared by a front's request threads: appends and copies of a bounded deque."""

    def __init__(self, size: int | None = None) -> None:
        self.times: collections.deque[float] = collections.deque(maxlen=size or RECENT_CALLS)

    def add(self, seconds: float) -> None:
        self.times.append(seconds)

    def p95(self) -> float:
        """The 95th percentile of the recent times (0 before any)."""
        times = sorted(self.times.copy())
        return times[min(len(times) - 1, int(0.95 * len(times)))] if times else 0.0


@dataclass(frozen=True)
class ShardAnswer:
    """A shard call's answer (``value``), and how long it took where the call first sent gave it
    (``took_s``; None where a hedge or a resend did: the times :class:`RecentTimes` keeps, so that
    a stalled replica does not lengthen the next calls' wait for a hedge)."""

    value: Any
    took_s: float | None


def await_shard(send: Callable[[], Any], *, first: Any = None, timeout_s: float, retries: int,
                hedge_after_s: float | None, retryable: tuple[type[BaseException], ...],
                on_retry: Callable[[], None] = lambda: None,
                on_hedge: Callable[[str], None] = lambda won: None,
                failed: Callable[[int, BaseException], BaseException] | None = None,
                poll_s: float = 0.01, hedges: int = 2) -> ShardAnswer:
    """The answer to one shard call, sent by ``send()`` (a Serve response: ``result(timeout_s=)``,
    ``cancel()``; ``first``: the first one, already sent).

    *Resent when lost*: a call whose replica died (an exception in ``retryable`` that is not a
    timeout) or that did not answer within ``timeout_s`` is sent again, after 50 ms, 100 ms, ...
    (up to 1 s), ``retries`` times at most; then ``failed(attempts, exc)`` is raised.
    *Hedged when slow* ("The Tail at Scale", Dean and Barroso, 2013): a call not answered after
    ``hedge_after_s`` is sent once more, without giving up on the first; whichever answers first
    is taken and the others cancelled (best effort). Serve sends the second call to another replica
    where it can tell: one that owes an answer for a second is passed over (:mod:`lexir.ray_routing`),
    and its queue-length probe goes unanswered. A replica that stalled *after* accepting the first
    call owes nothing yet, so the hedge may go to it too; it then owes that one, is passed over a
    second later, and the next hedge (``hedges`` in all, each ``hedge_after_s`` after the last)
    goes elsewhere. So a replica that stalls (a pause, swapping, SIGSTOP) costs a call one or two
    ``hedge_after_s`` instead of ``timeout_s``. ``on_hedge(won)``: ``"first"``, ``"hedge"`` (any of
    them), or ``"neither"`` (all lost: resent as above). ``hedge_after_s=None``: never hedged."""
    attempt = 0
    max_hedges = hedges if hedge_after_s is not None else 0
    while True:
        sent = time.monotonic()
        original = first if first is not None else send()
        pending, sent_hedges, error, first = [original], 0, None, None
        deadline = sent + timeout_s
        while pending:
            now = time.monotonic()
            if now >= deadline:
                error = TimeoutError(f"no answer within {timeout_s:g} s")
                break
            next_hedge = sent + hedge_after_s * (sent_hedges + 1) if sent_hedges < max_hedges else None
            if next_hedge is not None and now >= next_hedge:
                pending.append(send())
                sent_hedges += 1
                continue
            if len(pending) > 1:
                wait = poll_s  # several calls: look at each in turn
            elif next_hedge is not None:
                wait = min(deadline, next_hedge) - now
            else:
                wait = deadline - now
            for response in list(pending):
                try:
                    value = response.result(timeout_s=max(wait, 0.0))
                except TimeoutError:  # not yet (Ray's GetTimeoutError is one)
                    continue
                except retryable as exc:  # its replica died, or refused it: the other call may answer
                    pending.remove(response)
                    error = exc
                    continue
                for other in pending:
                    if other is not response:
                        _cancel(other)
                if sent_hedges:
                    on_hedge("first" if response is original else "hedge")
                took = time.monotonic() - sent if response is original and attempt == 0 else None
                return ShardAnswer(value, took)
        for response in pending:
            _cancel(response)
        if sent_hedges:
            on_hedge("neither")
        if attempt >= retries:
            raise failed(attempt, error) if failed else error
        attempt += 1
        on_retry()
        time.sleep(min(0.05 * 2 ** (attempt - 1), 1.0))


def _cancel(response: Any) -> None:
    try:
        response.cancel()
    except Exception:  # noqa: BLE001 - best effort: a stalled replica may never see it
        pass


# -- deploying ---------------------------------------------------------------------------------


def deploy(corpus: str, *, data_dir: str | None = None, systems: Sequence[str] = ("bm25",), shards: int = 2,
           replicas: int = 2, shard_replicas: int = 2, ingress_replicas: int = 1, retries: int = DEFAULT_RETRIES,
           timeout_s: float = DEFAULT_TIMEOUT_S, front_timeout_s: float = DEFAULT_FRONT_TIMEOUT_S,
           hedge_s: float = DEFAULT_HEDGE_S, host: str = "127.0.0.1", port: int = 8000,
           settings: Mapping[str, Any] | None = None, request_log: bool = True, address: str | None = None,
           num_cpus: int | None = None, notify: Callable[[str], None] | None = None):
    """Serve ``corpus`` on Ray Serve (see the module): its shards built if the cache lacks them,
    ``shards`` shard deployments of ``shard_replicas`` replicas, a front of ``replicas``
    replicas and an ingress of ``ingress_replicas`` replicas behind Serve's HTTP proxy on
    ``host:port``. The served system that is plain ``bm25`` (the first such of ``systems``) is
    sharded; the others are built on each front. ``timeout_s``: how long a front waits for a
    shard call; ``front_timeout_s``: how long the ingress waits for a front (0: no limit); either
    then sends the call again (``retries``). ``hedge_s``: after how long a front sends a shard call
    not yet answered a second time (:func:`await_shard`; 0, or one replica per shard: never). Returns the ingress's deployment handle: its
    ``run`` is :meth:`Front.run` on a front replica, handed again to another if that one dies."""
    from lexir.datasets import open as open_data
    from lexir.service.state import Settings

    for name, value in (("shards", shards), ("replicas", replicas), ("shard_replicas", shard_replicas),
                        ("ingress_replicas", ingress_replicas)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1 (got {value})")
    if retries < 0:
        raise ValueError(f"retries must be >= 0 (got {retries})")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 (got {timeout_s})")
    if not front_timeout_s >= 0:
        raise ValueError(f"front_timeout_s must be >= 0 (got {front_timeout_s}; 0: no limit)")
    if not hedge_s >= 0:
        raise ValueError(f"hedge_s must be >= 0 (got {hedge_s}; 0: never)")
    sharded, params = None, None
    for system in systems:
        try:
            params = bm25_params(system)
        except ValueError:
            continue
        sharded = system
        break
    if sharded is None:
        raise ValueError(f"--backend ray shards plain bm25: serve it (--system bm25); asked for {', '.join(systems)}")
    served = {"systems": tuple(systems), **dict(settings or {})}
    max_body_bytes = Settings.from_env(data_dir=data_dir, **served).max_body_bytes
    init(address, num_cpus)
    _, serve = require_serve()
    loaded = open_data(corpus, data_dir=data_dir, notify=notify, want="corpus")
    folder = str(ensure_shards(loaded, shards, params, notify))
    del loaded
    serve.start(http_options={"host": host, "port": port})
    from ray.serve.config import RequestRouterConfig

    # Serve's routing, but a replica that has stopped answering is passed over (lexir.ray_routing)
    routing = {"request_router_config": RequestRouterConfig(request_router_class=ROUTER)}
    options = {"ray_actor_options": {"num_cpus": 0}, "max_ongoing_requests": 64, **routing}
    shard_apps = [serve.deployment(ShardServer, name=f"bm25-shard-{i}", num_replicas=shard_replicas, **options)
                  .bind(folder, i) for i in range(shards)]
    # A hedge needs a second replica to go to: with one, it would only load the one that is slow.
    user_config = {"retries": retries, "timeout_s": timeout_s, "front_timeout_s": front_timeout_s,
                   "hedge_s": hedge_s if shard_replicas > 1 else 0.0}
    front = serve.deployment(Front, name=FRONT, num_replicas=replicas, user_config=user_config, **options)
    fronts = front.bind(corpus, data_dir, folder, shard_apps, sharded, served, request_log)
    # The ingress holds every request its fronts are answering: room for all of theirs.
    ingress = serve.deployment(Ingress, name=INGRESS, num_replicas=ingress_replicas, user_config=user_config,
                               ray_actor_options={"num_cpus": 0}, max_ongoing_requests=64 * replicas + 64,
                               **routing)
    app = ingress.bind(fronts, max_body_bytes)
    if notify:
        notify(f"starting {shards} shards x {shard_replicas} replicas, {replicas} front replicas and "
               f"{ingress_replicas} ingress replica(s) on Ray Serve …")
    return serve.run(app, name=APP_NAME, route_prefix="/", blocking=False)


def replicas_of(deployment: str) -> list[dict[str, Any]]:
    """The live replicas of a deployment of the application (their ``whoami``: process id, Ray
    actor name, ...), asked until twenty calls in a row find no new one (Serve spreads calls
    over replicas)."""
    _, serve = require_serve()
    handle = serve.get_deployment_handle(deployment, app_name=APP_NAME)
    found: dict[str, dict] = {}
    quiet = 0
    while quiet < 20:
        me = handle.whoami.remote().result(timeout_s=30)
        quiet = quiet + 1 if me["actor"] in found else 0
        found[me["actor"]] = me
    return list(found.values())


def shard_replicas(shard: int) -> list[dict[str, Any]]:
    """The live replicas of a deployed shard (:meth:`ShardServer.whoami`)."""
    return replicas_of(f"bm25-shard-{shard}")


def shutdown() -> None:
    """Stop the Serve application (the Ray runtime stays)."""
    _, serve = require_serve()
    serve.shutdown()
