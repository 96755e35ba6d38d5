"""Requests for dates (``as_of``) on a real ``lexir serve de-gesetze-history``: issue 19's probe.

    python benchmarks/bench_dated.py [--data-dir DIR] [--src SRC] [--out FILE]
    python benchmarks/bench_dated.py --estimate      # in-process: estimated bytes per interval, RSS

Starts the server on a loopback port with a fresh cache folder (only the parsed history is
copied in, so no request finds a graph or index of a date built before), then, each phase
with dates no earlier phase asked for:

1. six new dates at once, each in another interval of versions in force;
2. six new dates at once, all in one interval (2013-01-11 to 2018-11-08);
3. a loaded date asked 0.3 s after a new date's request, while that date loads (twice);
4. the six dates of phase 2 again, at once (all loaded).

Each request is a search (``/v1/de-gesetze-history/search?q=...&as_of=DATE``); it prints each
phase's latencies (seconds, from the phase's start) and the server's RSS after it. ``--src``
runs the server from another source tree (``git archive HEAD`` unpacked elsewhere: the code
before a change). ``--out`` writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
NAME = "de-gesetze-history"
QUERY = "Beschneidung des nicht einsichts- und urteilsfähigen männlichen Kindes"
SIX_INTERVALS = ["2012-08-04", "2012-08-20", "2012-09-12", "2012-10-01", "2012-11-01", "2012-12-15"]
ONE_INTERVAL = ["2013-03-01", "2014-01-01", "2015-03-01", "2015-03-02", "2016-07-01", "2017-12-31"]
LOADED, NEW = "2017-06-01", ["2019-05-01", "2022-02-15"]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def ask(url: str, day: str, start: float, out: dict[str, float]) -> None:
    r = httpx.get(f"{url}/v1/{NAME}/search", params={"q": QUERY, "k": 10, "as_of": day}, timeout=600)
    r.raise_for_status()
    out[day] = round(time.perf_counter() - start, 3)


def at_once(url: str, days: list[str]) -> dict[str, float]:
    start, out = time.perf_counter(), {}
    threads = [threading.Thread(target=ask, args=(url, d, start, out)) for d in days]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {d: out[d] for d in days}


def serve(src: Path, cache: Path, data_dir: str | None) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "LEXIR_CACHE": str(cache), "PYTHONPATH": str(src)}
    env.pop("LEXIR_API_KEY", None)
    env["LEXIR_DATA"] = data_dir or os.environ.get("LEXIR_DATA") or str(ROOT.parent / "shared" / "data")
    log = open(cache / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "lexir.cli.main", "serve", NAME, "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=src.parent)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 600
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {(cache / 'server.log').read_text()[-2000:]}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("server did not start")


def probe(args) -> dict:
    from lexir.io.paths import cache_dir

    src = Path(args.src).resolve()
    cache = Path(tempfile.mkdtemp(prefix="bench-dated-"))
    if (cache_dir() / "history").is_dir():  # the parsed history only: graphs and indexes are built afresh
        shutil.copytree(cache_dir() / "history", cache / "history")
    proc, url = serve(src, cache, args.data_dir)
    figures: dict = {"src": str(src), "rss_mb": {"started": round(rss_mb(proc.pid), 1)}}
    try:
        phases = [("six new dates, six intervals", SIX_INTERVALS), ("six new dates, one interval", ONE_INTERVAL)]
        for label, days in phases:
            figures[label] = at_once(url, days)
            figures["rss_mb"][label] = round(rss_mb(proc.pid), 1)
            print(f"{label}: {figures[label]}  (RSS {figures['rss_mb'][label]} MB)", flush=True)
        waits = []
        at_once(url, [LOADED])
        for new in NEW:
            start, out = time.perf_counter(), {}
            loading = threading.Thread(target=ask, args=(url, new, start, out))
            loading.start()
            time.sleep(0.3)
            ask(url, LOADED, start, out)
            loading.join()
            waits.append({"loaded date answered": round(out[LOADED] - 0.3, 3), "new date answered": out[new]})
        figures["a loaded date while a new one loads"] = waits
        figures["rss_mb"]["after phase 3"] = round(rss_mb(proc.pid), 1)
        print(f"a loaded date while a new one loads: {waits}", flush=True)
        label = "the six dates of one interval again"
        figures[label] = at_once(url, ONE_INTERVAL)
        figures["rss_mb"][label] = round(rss_mb(proc.pid), 1)
        print(f"{label}: {figures[label]}  (RSS {figures['rss_mb'][label]} MB)", flush=True)
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(cache, ignore_errors=True)
    return figures


def estimate(args) -> dict:
    """Each interval of de-gesetze-history loaded in turn in this process: its estimated bytes
    (what the cache counts) and the growth of RSS."""
    import gc

    from lexir.datasets import open as open_data
    from lexir.service.state import ServiceState, Settings

    state = ServiceState(Settings(data_dir=args.data_dir))
    state.add(NAME)
    history = open_data(NAME, data_dir=args.data_dir)
    gc.collect()
    base = rss_mb(os.getpid())
    rows = []
    for start in history.change_points():
        begun = time.perf_counter()
        state.get(NAME, start)
        took = time.perf_counter() - begun
        gc.collect()
        rows.append({"interval": start, "estimate_mb": round(state.dated.nbytes((NAME, start)) / 2**20, 1),
                     "load_s": round(took, 2), "rss_mb": round(rss_mb(os.getpid()), 1)})
        print(rows[-1], flush=True)
    total = sum(r["estimate_mb"] for r in rows)
    grown = rows[-1]["rss_mb"] - base
    print(f"{len(rows)} intervals: estimates {total:.1f} MB in all ({total / len(rows):.1f} per interval); "
          f"RSS grew {grown:.1f} MB ({grown / len(rows):.1f} per interval) from {base:.1f} MB; "
          f"budget {state.settings.dated_cache_mb} MB; cache {state.dated.stats()}")
    return {"intervals": rows, "rss_base_mb": base, "budget_mb": state.settings.dated_cache_mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir")
    parser.add_argument("--src", default=str(ROOT / "src"), help="the source tree the server runs")
    parser.add_argument("--estimate", action="store_true", help="in-process: bytes per interval and RSS")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    figures = estimate(args) if args.estimate else probe(args)
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
