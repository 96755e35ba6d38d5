#!/usr/bin/env python
"""``lexir serve --backend ray`` with an ingress replica killed under load: what lexir's own HTTP
client (``RemoteSearch``, behind the LangChain and LlamaIndex retrievers) loses, sending nothing
again and sending a lost request again.

A request in flight in an ingress replica that dies is answered 500 by Serve's proxy, which sends
nothing again (docs/ray.md); the client is what can. On a local Ray runtime (``--cpus``), the
corpus is served with ``--ingress-replicas`` ingress replicas, two fronts and two shards. Each
round, ``--clients`` threads ask the corpus's questions one at a time for ``--seconds`` through
Serve's proxy, half with ``retries=0`` and half with ``retries=2`` (the default); one second in,
one ingress replica is SIGKILLed the moment it is seen computing, and the next round waits until
Serve has started it again. Per round and per half: searches answered, searches failed (with
their messages), requests sent again.

    PYTHONPATH=src LEXIR_DATA=../shared/data python benchmarks/bench_ray_ingress_kill.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ray_hang import setup, stop_when_busy  # noqa: E402


def one_round(url: str, corpus: str, texts: list[str], victim: int, clients: int, seconds: float) -> dict:
    from lexir.integrations.search import LexirSearchError, RemoteSearch

    stop = time.monotonic() + seconds
    halves = {retries: {"answered": 0, "failed": 0, "resent": 0, "errors": []} for retries in (0, 2)}
    lock = threading.Lock()

    def client(c: int) -> None:
        retries = 0 if c % 2 == 0 else 2
        remote = RemoteSearch(url, corpus, retries=retries, timeout=120)
        out = halves[retries]
        i = c
        while time.monotonic() < stop:
            i += clients
            try:
                remote.search(texts[i % len(texts)], 10)
                ok, error = True, None
            except LexirSearchError as exc:
                ok, error = False, str(exc)[:160]
            with lock:
                if ok:
                    out["answered"] += 1
                else:
                    out["failed"] += 1
                    out["errors"].append(error)
        with lock:
            out["resent"] += remote.resent

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    busy = stop_when_busy(victim, time.monotonic() + 1.0, signal.SIGKILL)
    for t in threads:
        t.join()
    return {"killed_busy": busy, "retries_0": halves[0], "retries_2": halves[2]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="pl-codes", choices=("pl-codes", "de-gesetze"))
    parser.add_argument("--ingress-replicas", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=6.0, help="each round's length")
    parser.add_argument("--clients", type=int, default=4, help="half send nothing again, half twice at most")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--output", type=Path, default=None, help="write the figures here as JSON")
    args = parser.parse_args(argv)

    from lexir import ray_serve

    texts, port = setup(args.corpus, "ingress")
    url = f"http://127.0.0.1:{port}"
    out: dict = {"corpus": args.corpus, "ingress_replicas": args.ingress_replicas, "clients": args.clients,
                 "seconds": args.seconds, "rounds": []}
    ray_serve.init(num_cpus=args.cpus)
    try:
        ray_serve.deploy(args.corpus, shards=2, replicas=2, shard_replicas=1, ingress_replicas=args.ingress_replicas,
                         port=port, request_log=False)
        from lexir.integrations.search import RemoteSearch

        RemoteSearch(url, args.corpus).search(texts[0], 10)
        for r in range(args.rounds):
            deadline = time.monotonic() + 120
            while len(ingress := ray_serve.replicas_of(ray_serve.INGRESS)) < args.ingress_replicas:
                if time.monotonic() > deadline:
                    raise SystemExit(f"Serve did not start the killed ingress replica again: {ingress}")
                time.sleep(1)
            got = one_round(url, args.corpus, texts, ingress[0]["pid"], args.clients, args.seconds)
            out["rounds"].append(got)
            print(json.dumps({"round": r, **got}), flush=True)
    finally:
        ray_serve.shutdown()
        import ray

        ray.shutdown()
    rounds = out["rounds"]
    out["total"] = {half: {key: sum(r[half][key] for r in rounds) for key in ("answered", "failed", "resent")}
                    for half in ("retries_0", "retries_2")}
    print(json.dumps(out["total"]))
    if args.output:
        args.output.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    sys.exit(main() and 0)
