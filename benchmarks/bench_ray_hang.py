#!/usr/bin/env python
"""``lexir serve --backend ray`` with a front replica that hangs: how many requests wait out the
front timeout, and how many fail, round after round.

On a local Ray runtime (``--cpus``), the corpus is served with two front replicas, ``--shards``
shards of ``--shard-replicas`` replicas each, ``--retries`` and ``--front-timeout``. Each round, ``--clients`` HTTP
clients ask the corpus's questions one at a time (GET through Serve's proxy and the ingress) for
``--seconds``; one second in, one front replica is stopped (SIGSTOP: alive, answering nothing)
the moment it is seen computing, and let go on (SIGCONT) only once every client has its last
answer: a request sent in the stop must be answered by the other front within its attempts. Per round: the requests answered, the
requests failed (503/504 once ``--retries`` were used up), and the attempts the ingress abandoned
(``lexir_front_timeouts_total``). Each abandoned attempt is a request that waited
``--front-timeout`` seconds for nothing: the fewer, the better the routing passes over the stopped
front, and over a shard replica that the stopped front stalls (Ray: a replica that was answering
the stopped front waits for it before it accepts anything else).

    PYTHONPATH=src LEXIR_DATA=../shared/data python benchmarks/bench_ray_hang.py --rounds 10

Run it on two checkouts (each with its own ``PYTHONPATH``) to compare their routing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import corpus_of  # noqa: E402


def setup(corpus: str, tag: str) -> tuple[list[str], int]:
    """What every Ray benchmark here starts from: the corpus's first 500 questions, a cache of its
    own (``LEXIR_CACHE``, unless set) and a free loopback port for Serve's proxy."""
    _, texts = corpus_of(corpus)
    os.environ.setdefault("LEXIR_CACHE", tempfile.mkdtemp(prefix=f"lexir-bench-{tag}-"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return texts[:500], port


def counter(url: str, name: str) -> float:
    """The counter ``name`` in one scrape of ``/metrics`` (summed over its labels)."""
    with urllib.request.urlopen(url + "/metrics", timeout=60) as response:
        body = response.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in body.splitlines() if line.startswith(name))


def ask(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def stop_when_busy(pid: int, deadline: float, sig: int = signal.SIGSTOP) -> bool:
    """Send ``sig`` (SIGSTOP; SIGKILL to kill) to ``pid`` the moment it is seen computing (its CPU
    time grows between two looks 5 ms apart: most likely in the middle of answering), or at
    ``deadline``: whether it was busy."""
    last = cpu_ticks(pid)
    while time.monotonic() < deadline:
        time.sleep(0.005)
        now = cpu_ticks(pid)
        if now > last:
            os.kill(pid, sig)
            return True
        last = now
    os.kill(pid, sig)
    return False


def one_round(base: str, texts: list[str], victim: int, clients: int, seconds: float) -> dict:
    stop = time.monotonic() + seconds
    out = {"answered": 0, "failed": 0, "statuses": {}}
    lock = threading.Lock()

    def client(c: int) -> None:
        i = c
        while time.monotonic() < stop:
            i += clients
            status = ask(base + urllib.parse.urlencode({"q": texts[i % len(texts)], "k": 10}))
            with lock:
                if status == 200:
                    out["answered"] += 1
                else:
                    out["failed"] += 1
                    out["statuses"][str(status)] = out["statuses"].get(str(status), 0) + 1

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    busy = stop_when_busy(victim, time.monotonic() + 1.0)
    try:
        for t in threads:
            t.join()
    finally:
        os.kill(victim, signal.SIGCONT)
    out["stopped_busy"] = busy
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="pl-codes", choices=("pl-codes", "de-gesetze"))
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--shard-replicas", type=int, default=2,
                        help="replicas per shard (a stopped front can stall a shard replica it was calling: "
                             "with one, that shard stalls)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=8.0, help="each round's length")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--retries", type=int, default=1)
    parser.add_argument("--front-timeout", type=float, default=1.0)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--output", type=Path, default=None, help="write the figures here as JSON")
    args = parser.parse_args(argv)

    from lexir import ray_serve

    texts, port = setup(args.corpus, "hang")
    out: dict = {"corpus": args.corpus, "shard_replicas": args.shard_replicas, "clients": args.clients, "retries": args.retries,
                 "front_timeout_s": args.front_timeout, "seconds": args.seconds, "rounds": []}
    ray_serve.init(num_cpus=args.cpus)
    try:
        ray_serve.deploy(args.corpus, shards=args.shards, replicas=2, shard_replicas=args.shard_replicas, retries=args.retries,
                         front_timeout_s=args.front_timeout, port=port, request_log=False)
        url = f"http://127.0.0.1:{port}"
        base = f"{url}/v1/{args.corpus}/search?"
        ask(base + urllib.parse.urlencode({"q": texts[0], "k": 10}))
        for r in range(args.rounds):
            fronts = ray_serve.replicas_of(ray_serve.FRONT)
            before = counter(url, "lexir_front_timeouts_total")
            got = one_round(base, texts, fronts[0]["pid"], args.clients, args.seconds)
            got["timeouts"] = counter(url, "lexir_front_timeouts_total") - before
            out["rounds"].append(got)
            print(json.dumps({"round": r, **got}), flush=True)
    finally:
        ray_serve.shutdown()
        import ray

        ray.shutdown()
    rounds = out["rounds"]
    out["total"] = {key: sum(r[key] for r in rounds) for key in ("answered", "failed", "timeouts")}
    out["worst_round_timeouts"] = max(r["timeouts"] for r in rounds)
    print(json.dumps({k: v for k, v in out.items() if k != "rounds"}))
    if args.output:
        args.output.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    sys.exit(main() and 0)
