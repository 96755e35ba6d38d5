#!/usr/bin/env python
"""What one search costs the caller of lexir's HTTP client (``RemoteSearch``, behind the LangChain
and LlamaIndex retrievers) against a ``lexir serve`` on loopback, beside what the same GET costs
with an httpx client made for each search (as the client did before it kept one).

Starts ``lexir serve CORPUS --system bm25`` on a free port (or uses ``--url``), asks ``--n``
questions in ``--rounds`` interleaved rounds, and prints the median milliseconds per search of
each way:

* ``remote.search``: ``RemoteSearch.search`` (one client, its connection kept alive);
* ``remote.asearch``: ``RemoteSearch.asearch`` inside one event loop (a client per call, one TLS
  context for all);
* ``client per search``: ``with httpx.Client(...)`` around each GET (httpx builds a TLS context
  for every client, even for http://).

    PYTHONPATH=src LEXIR_DATA=../shared/data python benchmarks/bench_remote.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTIONS = ["Kto zabija człowieka", "kradzież roweru", "obrona konieczna", "groźba karalna",
             "ukradłem rower koledze, co mi grozi?"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(corpus: str) -> tuple[subprocess.Popen, str]:
    import httpx

    port = free_port()
    env = {**os.environ, "LEXIR_CACHE": os.environ.get("LEXIR_CACHE") or tempfile.mkdtemp(prefix="lexir-remote-")}
    proc = subprocess.Popen([sys.executable, "-m", "lexir.cli.main", "serve", corpus, "--system", "bm25",
                             "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("lexir serve did not start")


def per_search(fn, n: int) -> float:
    began = time.perf_counter()
    for i in range(n):
        fn(QUESTIONS[i % len(QUESTIONS)])
    return (time.perf_counter() - began) / n * 1000


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="demo")
    parser.add_argument("--url", default=None, help="a running lexir serve (else one is started)")
    parser.add_argument("--n", type=int, default=200, help="searches per way and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-k", type=int, default=5)
    args = parser.parse_args(argv)

    import httpx

    from lexir.integrations.search import RemoteSearch

    proc, url = (None, args.url) if args.url else start(args.corpus)
    try:
        remote = RemoteSearch(url, args.corpus)
        remote.search(QUESTIONS[0], args.k)

        def fresh_client(q: str) -> None:
            with httpx.Client(base_url=url, timeout=60) as client:
                client.get(f"/v1/{args.corpus}/search", params=[("q", q), ("k", str(args.k))]).json()

        def in_one_loop(q: str) -> None:
            loop.run_until_complete(remote.asearch(q, args.k))

        loop = asyncio.new_event_loop()
        ways = {"remote.search": lambda q: remote.search(q, args.k), "remote.asearch": in_one_loop,
                "client per search": fresh_client}
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, fn in ways.items():
                times[name].append(per_search(fn, args.n))
        loop.close()
        remote.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
    out = {name: round(statistics.median(ms), 2) for name, ms in times.items()}
    print(json.dumps({"ms_per_search_median": out, "n": args.n, "rounds": args.rounds, "corpus": args.corpus}))
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    sys.exit(main() and 0)
