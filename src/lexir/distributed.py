"""Ray as a backend for what outgrows one machine: experiment grids, dense encoding, LLM annotation.

Optional: ``pip install 'lexir[ray]'``. Each entry point does the same work as its local
counterpart and leaves the same files behind, so a result never depends on where it was made:

* :func:`ray_cells` — the experiment hook (:data:`lexir.experiment.CellBackend`): every missing
  (dataset, system) cell is one Ray task; the driver writes each run file into the run cache as
  soon as its task finishes, so a grid killed half-way resumes with the finished cells reused.
* :func:`encode_missing` — dense encoding: the chunks a local build would encode and the
  embedding cache lacks go through ``ray.data`` (``map_batches``, one encoder per actor); the
  driver commits each batch of vectors to the same embedding cache, after which the local build
  finds every vector there and writes the same index.
* :func:`RayAnnotator` — surrogate annotation (:func:`lexir.llm.surrogates.annotate`'s
  ``runner``): shards of articles are tasks; every worker's LLM client looks answers up in one
  cache actor that owns the driver's call cache, claims a request before making it (so no call
  is made twice across workers) and counts the new-call budget for all of them; the driver
  merges every worker's call records into its own accounting.

Workers see the driver's ``LEXIR_*`` variables (cache, data folder, LLM settings). On a
cluster (``--address`` or ``RAY_ADDRESS``) the data folder and the lexir cache must be
reachable at those paths on every node; results and call-cache rows come back to the driver.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from lexir.types import Corpus, Document, Run

INSTALL_HINT = "Ray is not installed: pip install 'lexir[ray]' (or pip install 'ray[data]')"
OBJECT_STORE_BYTES = 200 * 1024**2  # a local runtime only: small, the machine is shared


class RayMissing(RuntimeError):
    """``--backend ray`` without the extra installed."""


def require_ray():
    try:
        import ray
    except ImportError:
        raise RayMissing(INSTALL_HINT) from None
    return ray


def init(address: str | None = None, num_cpus: int | None = None):
    """Connect to the cluster at ``address`` (or ``$RAY_ADDRESS``), else start a small local runtime.

    The driver's ``LEXIR_*`` variables (and, for a local runtime, ``PYTHONPATH``) travel to the
    workers. Returns the ``ray`` module.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    env = {k: v for k, v in os.environ.items() if k.startswith("LEXIR_")}
    address = address or os.environ.get("RAY_ADDRESS") or None
    if not address and os.environ.get("PYTHONPATH"):  # a local runtime's workers import what the driver does
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    runtime_env = {"env_vars": env} if env else None
    if address:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
    else:
        ray.init(num_cpus=num_cpus, object_store_memory=OBJECT_STORE_BYTES, include_dashboard=False,
                 runtime_env=runtime_env, log_to_driver=False)
    return ray


def _cluster_cpus(ray) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _node_cpus(ray) -> int:
    """The CPUs of the largest live node (an actor cannot ask for more)."""
    return max([int(n.get("Resources", {}).get("CPU", 0)) for n in ray.nodes() if n.get("Alive")] or [1]) or 1


# ---------------------------------------------------------------------------
# experiment cells


def _cell_task(cell):
    from lexir.experiment import compute_cell

    return compute_cell(cell)


def ray_cells(address: str | None = None, log: Callable[[str], None] | None = None):
    """An experiment backend: each missing cell is a Ray task; runs are handed to ``done``
    (which writes the run file) in the order they finish."""

    def backend(cells, done: Callable[[Any, Run], None]) -> None:
        ray = init(address)
        task = ray.remote(num_cpus=1, max_retries=0)(_cell_task)
        pending = {task.remote(cell): cell for cell in cells}
        failures = []
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            cell = pending.pop(ready[0])
            try:
                run = ray.get(ready[0])
            except Exception as exc:  # the other cells still finish and are kept
                failures.append(f"{cell.key}: {cell.name}: {_cause(exc)}")
                continue
            done(cell, run)
            if log:
                log(f"{cell.key}: {cell.name} done ({len(pending)} cells left)")
        if failures:
            raise RuntimeError(f"{len(failures)} of {len(cells)} cells failed on Ray workers (the finished "
                               f"runs are cached): " + "; ".join(failures))

    return backend


def _cause(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)
    return f"{type(cause).__name__}: {cause}" if cause is not None else str(exc).strip().splitlines()[-1]


# ---------------------------------------------------------------------------
# dense encoding


class _EncodeActor:
    """One encoder per actor, built once; a batch of chunk texts in, their vectors out."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        from lexir.encoders import get_encoder

        self.encoder = get_encoder(**spec)

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        vectors = np.asarray(self.encoder.encode_passages([str(t) for t in batch["text"]]), dtype=np.float32)
        return {"key": batch["key"], "vector": vectors}


def encode_missing(corpus: Corpus, params: Mapping[str, Any], *, address: str | None = None,
                   actors: int | None = None, batch_size: int = 64,
                   progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Encode, on Ray, the passages of a dense build over ``corpus`` with resolved ``params``
    that the embedding cache lacks, and commit them to that cache batch by batch.

    The chunks are exactly those :class:`~lexir.retrieval.dense.DenseRetriever` makes and the
    cache keys those :class:`~lexir.encoders.CachedEncoder` looks up, so the build that follows
    encodes nothing. Returns counts: ``chunks``, ``cached`` (already there), ``encoded``.
    """
    import numpy as np

    from lexir.encoders import EmbeddingCache, chunk_words, get_encoder
    from lexir.encoders.cache import default_folder, text_key
    from lexir.retrieval.dense import _DocProgress, document_text

    spec = {"kind": params["encoder"], "model": params["model"], "base_url": params["base_url"],
            "batch_size": params["batch_size"], "num_threads": params["threads"]}
    texts = [chunk for doc in corpus
             for chunk in chunk_words(document_text(doc.title, doc.text), params["chunk_words"],
                                      params["chunk_overlap"])]
    encoder = get_encoder(**spec)  # its name and size name the cache, as in a local build
    cache = EmbeddingCache(default_folder(encoder.name), encoder.dim)
    try:
        keys = [text_key("passage", t) for t in texts]
        found = cache.get_many(keys)
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        stats = {"chunks": len(texts), "cached": len(texts) - len(missing), "encoded": 0}
        # progress counts articles (as a local build's does), in proportion to the chunks done
        advance = _DocProgress(progress, len(texts), len(corpus)) if progress else None
        if advance:
            advance(stats["cached"])
        if not missing:
            return stats
        ray = init(address)
        # an actor asks for its encoder's threads, never more CPUs than a node could have
        threads = min(max(1, int(params["threads"] or 1)), _node_cpus(ray))
        size = actors or max(1, _cluster_cpus(ray) // threads)
        rows = [{"key": k, "text": t} for k, t in sorted(missing.items(), key=lambda kv: len(kv[1]))]
        dataset = ray.data.from_items(rows, override_num_blocks=max(1, min(len(rows) // batch_size, 4 * size)))
        vectors = dataset.map_batches(_EncodeActor, fn_constructor_kwargs={"spec": spec}, batch_size=batch_size,
                                      compute=ray.data.ActorPoolStrategy(min_size=1, max_size=size),
                                      num_cpus=threads, batch_format="numpy")
        for batch in vectors.iter_batches(batch_size=batch_size, batch_format="numpy"):
            block = np.asarray(batch["vector"], dtype=np.float32)
            if block.ndim != 2 or block.shape[1] != encoder.dim:
                raise ValueError(f"encoder {encoder.name} returned vectors of shape {block.shape} on a worker")
            cache.put_many(zip((str(k) for k in batch["key"]), block, strict=True))  # one commit per batch
            stats["encoded"] += len(block)
            if advance:
                advance(len(block))
        return stats
    finally:
        cache.close()


# ---------------------------------------------------------------------------
# LLM annotation


class _CallCacheActor:
    """The driver's LLM call cache, served to every worker; one method runs at a time, so a
    claim is atomic: a request is looked up, or claimed by exactly one worker, or waited for."""

    def __init__(self, path: str, budget: int | None) -> None:
        from lexir.llm.client import CallCache

        self.cache = CallCache(path)
        self.budget = budget
        self.new_calls = 0
        self.inflight: set[str] = set()

    def claim(self, key: str):
        hit = self.cache.get(key)
        if hit is not None:
            return "hit", (hit.text, hit.prompt_tokens, hit.completion_tokens, hit.seconds, hit.finish_reason)
        if key in self.inflight:
            return "wait", None
        if self.budget is not None and self.new_calls >= self.budget:
            return "budget", None
        self.new_calls += 1
        self.inflight.add(key)
        return "go", None

    def put(self, key: str, model: str, request: dict, fields: tuple) -> None:
        from lexir.llm.client import ChatResult

        text, prompt_tokens, completion_tokens, seconds, finish = fields
        self.cache.put(key, model, request, ChatResult(text, prompt_tokens, completion_tokens, seconds, False,
                                                       finish))
        self.inflight.discard(key)

    def release(self, keys: list[str]) -> None:
        self.inflight.difference_update(keys)

    def stats(self) -> dict[str, int]:
        return {"new_calls": self.new_calls, "rows": len(self.cache)}

    def close(self) -> None:
        self.cache.close()


class _RemoteCache:
    """What a worker's :class:`~lexir.llm.client.LLMClient` sees as its cache: the actor above."""

    def __init__(self, actor, ray) -> None:
        self.actor, self.ray = actor, ray
        self.claimed: set[str] = set()

    def get(self, key: str):
        from lexir.llm.client import BudgetExhausted, ChatResult

        while True:
            state, fields = self.ray.get(self.actor.claim.remote(key))
            if state == "hit":
                return ChatResult(*fields[:4], True, fields[4] or "")
            if state == "go":
                self.claimed.add(key)
                return None
            if state == "budget":
                raise BudgetExhausted("budget of new LLM calls spent (counted across all Ray workers)")
            time.sleep(0.05)  # another worker is making this very call: wait for its answer

    def put(self, key: str, model: str, request: Mapping[str, Any], result) -> None:
        fields = (result.text, result.prompt_tokens, result.completion_tokens, result.seconds,
                  result.finish_reason)
        self.ray.get(self.actor.put.remote(key, model, dict(request), fields))
        self.claimed.discard(key)

    def close(self) -> None:
        if self.claimed:  # calls that failed: let another worker (or a rerun) make them
            self.ray.get(self.actor.release.remote(sorted(self.claimed)))
            self.claimed.clear()


def _annotate_shard(corpus: Corpus, config, doc_ids: list[str], chars: int, actor):
    """Annotate some articles on a worker; returns (id, record) pairs in the order they finished,
    the worker's call records and events, and the budget message if the budget ran out."""
    import ray

    from lexir.llm.client import BudgetExhausted, LLMClient
    from lexir.llm.surrogates import annotate_one, annotation_helper

    client = LLMClient(replace(config, cache=False, budget=None))
    client.cache = _RemoteCache(actor, ray)
    helper = annotation_helper(corpus, client)
    finished: list[tuple[str, dict]] = []
    stopped = ""
    try:
        client.map(lambda doc: annotate_one(corpus, helper, doc, chars), [corpus[d] for d in doc_ids],
                   on_done=lambda doc, rec: finished.append((doc.id, rec)))
    except BudgetExhausted as exc:
        stopped = str(exc)
    finally:
        client.close()
    return finished, client.accounting.records, dict(client.accounting.events), stopped


class RayAnnotator:
    """A ``runner`` for :func:`lexir.llm.surrogates.annotate` that spreads articles over Ray workers.

    ``shard`` articles make one task; at most ``workers`` tasks run at once (default: the
    cluster's CPUs), each with the client's own ``concurrency`` of requests in flight.
    """

    def __init__(self, address: str | None = None, shard: int = 8, workers: int | None = None) -> None:
        self.address, self.shard, self.workers = address, max(1, int(shard)), workers

    def __call__(self, corpus: Corpus, client, todo: Sequence[Document], chars: int,
                 on_done: Callable[[Document, dict], None]) -> None:
        from lexir.llm.client import BudgetExhausted, default_cache_path

        if not todo:
            return
        ray = init(self.address)
        config = client.config
        cache_path = str(config.cache_path or default_cache_path()) if config.cache else ""
        budget = None if config.budget is None else max(0, config.budget - client.new_calls)
        here = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
            ray.get_runtime_context().get_node_id(), soft=False)  # the cache file is on the driver's node
        if not cache_path:  # no cache asked for: a throwaway one, still where claims and the budget live
            import tempfile

            cache_path = os.path.join(tempfile.mkdtemp(prefix="lexir-calls-"), "calls.sqlite")
        actor = ray.remote(num_cpus=0)(_CallCacheActor).options(scheduling_strategy=here).remote(cache_path, budget)
        if client.cache is not None:
            client.cache.close()  # the actor writes the file now; the driver reopens it after
        task = ray.remote(num_cpus=1, max_retries=0)(_annotate_shard)
        corpus_ref = ray.put(corpus)
        shards = [[d.id for d in todo[i:i + self.shard]] for i in range(0, len(todo), self.shard)]
        limit = self.workers or _cluster_cpus(ray)
        pending: dict = {}
        by_id = {d.id: d for d in todo}
        stopped = ""
        try:
            while shards or pending:
                while shards and len(pending) < limit and not stopped:
                    ids = shards.pop(0)
                    pending[task.remote(corpus_ref, config, ids, chars, actor)] = ids
                if not pending:
                    break
                ready, _ = ray.wait(list(pending), num_returns=1)
                pending.pop(ready[0])
                try:
                    finished, records, events, spent = ray.get(ready[0])
                except Exception as exc:
                    raise RuntimeError(f"annotation failed on a Ray worker: {_cause(exc)}") from None
                for record in records:
                    client.accounting.add(record)
                for name, count in events.items():
                    client.accounting.events[name] += count
                client.new_calls += sum(1 for r in records if not r.cached)
                for doc_id, rec in finished:
                    on_done(by_id[doc_id], rec)
                stopped = stopped or spent
        finally:
            for ref in pending:
                ray.cancel(ref)
            ray.get(actor.close.remote())
            ray.kill(actor)
            if client.cache is not None:
                from lexir.llm.client import CallCache

                client.cache = CallCache(client.cache.path)
        if stopped:
            raise BudgetExhausted(stopped)
