"""The hostile-client probes of issue #19 against ``lexir serve CORPUS``: each request's status and
the server's resident memory before and after it.

    nice -n 5 python benchmarks/probe_service_bounds.py --corpus pl-codes

Starts the server as a subprocess on a free loopback port (no API key), waits for ``/healthz``,
then sends each probe once and prints ``status  RSS before -> after  time  probe``. On the code before
issue #19 the first probe alone grew the server from 0.28 to 11.3 GB (do not run it there).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def call(url: str, body: bytes | None = None) -> int:
    request = urllib.request.Request(url, data=body, headers={"content-type": "application/json"} if body else {})
    try:
        with urllib.request.urlopen(request, timeout=600) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as err:
        err.read()
        return err.code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="pl-codes")
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "LEXIR_API_KEY"}
    env.setdefault("LEXIR_CACHE", tempfile.mkdtemp(prefix="lexir-probe-"))
    env["PYTHONPATH"] = str(REPO / "src")
    proc = subprocess.Popen([sys.executable, "-m", "lexir.cli.main", "serve", args.corpus, "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 600
        while True:
            try:
                if call(base + "/healthz") == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise SystemExit("the server did not start")
            time.sleep(0.5)
        search = f"{base}/v1/{args.corpus}/search"
        probes = [
            ("GET ?q=kara (a plain search first: its first call compiles the kernel)", search + "?q=kara", None),
            ("GET ?q=kara&param=title_weight:1000000000", search + "?q=kara&param=title_weight:1000000000", None),
            ("GET ?q=kara&param=title_weight:5", search + "?q=kara&param=title_weight:5", None),
            ("GET ?q=kara&param=k1:nan", search + "?q=kara&param=k1:nan", None),
            ("GET ?q=kara&param=k1:inf", search + "?q=kara&param=k1:inf", None),
            ('POST {"k": true}', search, json.dumps({"queries": [{"text": "kara"}], "k": True}).encode()),
            ('POST {"k": "5"}', search, json.dumps({"queries": [{"text": "kara"}], "k": "5"}).encode()),
            ('POST {"text": "kara \\ud800"}', search, b'{"queries": [{"text": "kara \\ud800"}]}'),
            ("GET ?q=kara&param=dedupe_query:false (query-time)",
             search + "?" + urllib.parse.urlencode({"q": "kara kara", "param": "dedupe_query:false"}), None),
        ]
        print(f"corpus {args.corpus}; server RSS at start {rss_mb(proc.pid):.0f} MB")
        for name, url, body in probes:
            before = rss_mb(proc.pid)
            started = time.perf_counter()
            status = call(url, body)
            took = time.perf_counter() - started
            print(f"{status}  RSS {before:.0f} -> {rss_mb(proc.pid):.0f} MB  {took * 1000:.0f} ms  {name}")
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
