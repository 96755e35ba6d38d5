#!/usr/bin/env python
"""``lexir serve --backend ray`` with a shard replica that stalls: how long the requests it holds
wait, with the front's shard calls hedged and without.

On a local Ray runtime (``--cpus``), the corpus is served with two front replicas and two shards
of two replicas each, ``--shard-timeout`` (default 30 s, lexir's default), once with
``--shard-hedge`` (default 1 s, lexir's default) and once with ``--shard-hedge 0`` (never), taking
turns for ``--rounds`` rounds. Each round, ``--clients`` HTTP clients ask the corpus's questions
one at a time (GET through Serve's proxy, the ingress and a front) for ``--seconds``; one second
in, one replica of a shard is stopped (SIGSTOP: alive, answering nothing) the moment it is seen
computing, and let go on (SIGCONT) ``--stall`` seconds later, or once every client has its last
answer, whichever is later. Per round: requests answered and failed, p50 / p99 / longest wait,
the requests that waited over 2 s, and the hedges (``lexir_shard_hedges_total``) and resends
(``lexir_shard_retries_total``) the fronts counted.

    PYTHONPATH=src LEXIR_DATA=../shared/data python benchmarks/bench_ray_shard_stall.py --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ray_hang import ask, counter, setup, stop_when_busy  # noqa: E402


def scrape(url: str, name: str, scrapes: int = 8) -> float:
    """The largest of several scrapes of the counter ``name`` (each reaches one front; the counts
    of both fronts grow, so the largest is a lower bound of their total)."""
    return max(counter(url, name) for _ in range(scrapes))


def one_round(base: str, texts: list[str], victim: int, clients: int, seconds: float, stall: float) -> dict:
    stop = time.monotonic() + seconds
    waits, failed, lock = [], 0, threading.Lock()

    def client(c: int) -> None:
        nonlocal failed
        i = c
        while time.monotonic() < stop:
            i += clients
            t0 = time.monotonic()
            status = ask(base + urllib.parse.urlencode({"q": texts[i % len(texts)], "k": 10}))
            with lock:
                if status == 200:
                    waits.append(time.monotonic() - t0)
                else:
                    failed += 1

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    busy = stop_when_busy(victim, time.monotonic() + 1.0)
    stopped = time.monotonic()
    try:
        # let go on after ``stall`` seconds, or once the clients are done: a thread, since a client
        # held by the stopped replica (no hedge) only finishes when it goes on or the timeout passes
        letgo = threading.Timer(stall, os.kill, (victim, signal.SIGCONT))
        letgo.start()
        for t in threads:
            t.join()
        letgo.cancel()
    finally:
        os.kill(victim, signal.SIGCONT)
    waits.sort()
    return {"answered": len(waits), "failed": failed, "stopped_busy": busy,
            "stopped_s": round(time.monotonic() - stopped, 1),
            "p50_ms": round(1000 * statistics.median(waits), 1) if waits else None,
            "p99_ms": round(1000 * waits[min(len(waits) - 1, int(0.99 * len(waits)))], 1) if waits else None,
            "longest_s": round(waits[-1], 2) if waits else None,
            "over_2s": sum(w > 2 for w in waits)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="pl-codes", choices=("pl-codes", "de-gesetze"))
    parser.add_argument("--rounds", type=int, default=4, help="rounds of each setting, taking turns")
    parser.add_argument("--seconds", type=float, default=6.0, help="how long the clients ask, each round")
    parser.add_argument("--stall", type=float, default=10.0, help="seconds the shard replica stays stopped")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--shard-timeout", type=float, default=30.0)
    parser.add_argument("--shard-hedge", type=float, default=1.0)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--output", type=Path, default=None, help="write the figures here as JSON")
    args = parser.parse_args(argv)

    from lexir import ray_serve

    texts, port = setup(args.corpus, "stall")
    url = f"http://127.0.0.1:{port}"
    base = f"{url}/v1/{args.corpus}/search?"
    settings = {f"hedge_{args.shard_hedge:g}s": args.shard_hedge, "no_hedge": 0.0}
    out: dict = {"corpus": args.corpus, "clients": args.clients, "seconds": args.seconds, "stall_s": args.stall,
                 "shard_timeout_s": args.shard_timeout, "rounds": {name: [] for name in settings}}
    ray_serve.init(num_cpus=args.cpus)
    try:
        for r in range(args.rounds):
            for name, hedge in settings.items():
                ray_serve.deploy(args.corpus, shards=2, replicas=2, shard_replicas=2, retries=3,
                                 timeout_s=args.shard_timeout, hedge_s=hedge, port=port, request_log=False)
                for _ in range(20):  # warm: every front and shard replica compiled and answering
                    ask(base + urllib.parse.urlencode({"q": texts[0], "k": 10}))
                victim = ray_serve.shard_replicas(r % 2)[0]["pid"]
                hedges, retries = scrape(url, "lexir_shard_hedges_total"), scrape(url, "lexir_shard_retries_total")
                got = one_round(base, texts, victim, args.clients, args.seconds, args.stall)
                got["hedges"] = scrape(url, "lexir_shard_hedges_total") - hedges
                got["resends"] = scrape(url, "lexir_shard_retries_total") - retries
                out["rounds"][name].append(got)
                print(json.dumps({"round": r, "setting": name, **got}), flush=True)
    finally:
        ray_serve.shutdown()
        import ray

        ray.shutdown()
    out["total"] = {name: {"answered": sum(g["answered"] for g in rounds), "failed": sum(g["failed"] for g in rounds),
                           "over_2s": sum(g["over_2s"] for g in rounds),
                           "longest_s": max(g["longest_s"] or 0 for g in rounds),
                           "p99_ms_median": statistics.median(g["p99_ms"] or 0 for g in rounds)}
                    for name, rounds in out["rounds"].items()}
    print(json.dumps(out["total"]))
    if args.output:
        args.output.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    sys.exit(main() and 0)
