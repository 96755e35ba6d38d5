"""``lexir serve --backend ray``: lexir's HTTP service on Ray Serve, BM25 sharded by act.

Optional: ``pip install 'lexir[ray]'`` (``ray[data,serve]``). Two kinds of deployments:

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

A shard call that fails because its replica died (or did not answer in ``timeout_s``) is sent
again, up to ``retries`` times (backing off 50 ms, 100 ms, ...); Serve routes it to a live
replica (the shard's other replicas, or the one it starts again). ``retries=0``: the request
fails (503, ``shard_unavailable``). Serve's HTTP proxy on ``--host``/``--port`` spreads the
requests over the front replicas.

The shard folders live in the lexir cache (``<cache>/shards/``), keyed by the corpus's
fingerprint, the BM25 parameters and the number of shards; built once, by the process that
deploys. On a cluster the cache must be at the same path on every node (a shared filesystem).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lexir.distributed import init as init_runtime
from lexir.io.paths import cache_dir
from lexir.retrieval import bm25_shards

INSTALL_HINT = ("Ray Serve is not installed: pip install 'lexir[ray]' (or pip install 'ray[data,serve]>=2.40') "
                "for --backend ray")
DEFAULT_RETRIES = 3
DEFAULT_TIMEOUT_S = 30.0
APP_NAME = "lexir"
# The bm25 parameters a shard folder is built with (the system's index-time parameters but bigrams).
_BUILD_PARAMS = ("k1", "b", "method", "title_weight", "dedupe_query", "mode", "stopwords", "lemmatizer",
                 "language", "stoplist", "verb_lemmas")


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
        self.request_log = request_log
        self.state = ServiceState(Settings.from_env(data_dir=data_dir, **dict(settings or {})))
        self.state.add(corpus, made={sharded: lambda c: bm25_shards.ShardedBM25(folder, self.call_all, c)})
        self.state.settle()
        self.corpus, self.sharded = next(iter(self.state.corpora)), sharded

    def reconfigure(self, config: Mapping[str, Any]) -> None:
        """Serve's ``user_config``: ``retries`` and ``timeout_s`` of the shard calls (changed on the
        running replicas when the application is deployed again with other values)."""
        self.retries = int(config.get("retries", DEFAULT_RETRIES))
        self.timeout_s = float(config.get("timeout_s", DEFAULT_TIMEOUT_S))

    def __serve_build_asgi_app__(self):
        from lexir.service.app import create_app

        return create_app(self.state, request_log=2 if self.request_log else None)

    def call_all(self, flat: np.ndarray, pointers: np.ndarray, k: int, dedupe: bool) -> list[bm25_shards.Candidates]:
        """Every shard's candidates: all asked at once, each call that fails on a dead or
        unanswering replica sent again (``retries`` times at most)."""
        from lexir.service import observe

        pending = [h.candidates.remote(flat, pointers, k, dedupe) for h in self.shards]
        answers = []
        for i, handle in enumerate(self.shards):
            attempt = 0
            while True:
                try:
                    answers.append(pending[i].result(timeout_s=self.timeout_s))
                    break
                except _retryable() as exc:
                    if attempt >= self.retries:
                        raise _unavailable(i, attempt, exc) from None
                    attempt += 1
                    observe.SHARD_RETRIES.labels(str(i)).inc()
                    time.sleep(min(0.05 * 2 ** (attempt - 1), 1.0))
                    pending[i] = handle.candidates.remote(flat, pointers, k, dedupe)
        return answers

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


# -- deploying ---------------------------------------------------------------------------------


def deploy(corpus: str, *, data_dir: str | None = None, systems: Sequence[str] = ("bm25",), shards: int = 2,
           replicas: int = 2, shard_replicas: int = 2, retries: int = DEFAULT_RETRIES,
           timeout_s: float = DEFAULT_TIMEOUT_S, host: str = "127.0.0.1", port: int = 8000,
           settings: Mapping[str, Any] | None = None, request_log: bool = True, address: str | None = None,
           num_cpus: int | None = None, notify: Callable[[str], None] | None = None):
    """Serve ``corpus`` on Ray Serve (see the module): its shards built if the cache lacks them,
    ``shards`` shard deployments of ``shard_replicas`` replicas and a front of ``replicas``
    replicas behind Serve's HTTP proxy on ``host:port``. The served system that is plain ``bm25``
    (the first such of ``systems``) is sharded; the others are built on each front. Returns the
    front's deployment handle (its ``run`` and ``whoami`` methods)."""
    from lexir.datasets import open as open_data

    for name, value in (("shards", shards), ("replicas", replicas), ("shard_replicas", shard_replicas)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1 (got {value})")
    if retries < 0:
        raise ValueError(f"retries must be >= 0 (got {retries})")
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
    init(address, num_cpus)
    _, serve = require_serve()
    loaded = open_data(corpus, data_dir=data_dir, notify=notify, want="corpus")
    folder = str(ensure_shards(loaded, shards, params, notify))
    del loaded
    serve.start(http_options={"host": host, "port": port})
    options = {"ray_actor_options": {"num_cpus": 0}, "max_ongoing_requests": 64}
    shard_apps = [serve.deployment(ShardServer, name=f"bm25-shard-{i}", num_replicas=shard_replicas, **options)
                  .bind(folder, i) for i in range(shards)]
    front = serve.deployment(serve.ingress()(Front), name="front", num_replicas=replicas,
                             user_config={"retries": retries, "timeout_s": timeout_s}, **options)
    served = {"systems": tuple(systems), **dict(settings or {})}
    app = front.bind(corpus, data_dir, folder, shard_apps, sharded, served, request_log)
    if notify:
        notify(f"starting {shards} shards x {shard_replicas} replicas and {replicas} front replicas on Ray Serve …")
    return serve.run(app, name=APP_NAME, route_prefix="/", blocking=False)


def shard_replicas(shard: int) -> list[dict[str, Any]]:
    """The live replicas of a deployed shard (:meth:`ShardServer.whoami`), asked until two calls
    in a row find no new one (Serve spreads calls over replicas)."""
    _, serve = require_serve()
    handle = serve.get_deployment_handle(f"bm25-shard-{shard}", app_name=APP_NAME)
    found: dict[str, dict] = {}
    quiet = 0
    while quiet < 20:
        me = handle.whoami.remote().result(timeout_s=30)
        quiet = quiet + 1 if me["actor"] in found else 0
        found[me["actor"]] = me
    return list(found.values())


def shutdown() -> None:
    """Stop the Serve application (the Ray runtime stays)."""
    _, serve = require_serve()
    serve.shutdown()
