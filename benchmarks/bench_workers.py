"""Memory of ``lexir serve --workers N``: resident, proportional and shared memory of the
supervisor and of each worker, for each N, after the same searches.

    nice -n 10 python benchmarks/bench_workers.py --corpus de-gesetze --workers 1,2 [--system bm25]

For each N the script starts ``lexir serve CORPUS --workers N --system bm25`` (or the ``--system`` given) on loopback, sends ``--searches``
GET searches from 8 client threads (a new connection each, so that every worker answers and
touches the index's pages), then reads ``/proc/PID/smaps_rollup`` of every process of the
service: RSS (what ``ps`` shows: shared pages counted in full in each process), PSS (each
shared page divided among the processes sharing it: the PSS of all processes add up to the
memory the service really holds), and the shared and private parts. With one worker the
supervisor is the server itself.

Queries are those of benchmarks/bench_service.py (development data, never a test split).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_service import queries_for, start_server  # noqa: E402

from lexir.service.workers import child_pids  # noqa: E402

FIELDS = ("Rss", "Pss", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty")


def rollup(pid: int) -> dict[str, float]:
    """Memory of a process from /proc/PID/smaps_rollup, MiB."""
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in FIELDS:
            out[key] = int(rest.split()[0]) / 1024
    return out


def searches(port: int, corpus: str, queries: list[str], n: int, clients: int = 8) -> float:
    """``n`` GET searches from ``clients`` threads, a new connection each; requests/s."""
    paths = [f"http://127.0.0.1:{port}/v1/{corpus}/search?" + urllib.parse.urlencode({"q": q, "k": 10})
             for q in queries]
    counter = iter(range(n))
    lock = threading.Lock()

    def client() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            with urllib.request.urlopen(paths[i % len(paths)], timeout=60) as r:
                r.read()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return n / (time.perf_counter() - t0)


def measure(corpus: str, workers: int, queries: list[str], n: int, systems: list[str]) -> dict:
    options = ["--workers", str(workers), "--no-request-log", *[a for s in systems for a in ("--system", s)]]
    proc, port, log, startup = start_server(corpus, options, "bench-workers")
    try:
        loaded = {pid: rollup(pid) for pid in [proc.pid, *child_pids(proc.pid)]}
        rate = searches(port, corpus, queries, n)
        after = {pid: rollup(pid) for pid in [proc.pid, *child_pids(proc.pid)]}
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()
    return {"workers": workers, "startup_s": round(startup, 1), "searches_per_s": round(rate, 1),
            "supervisor": proc.pid, "loaded": loaded, "after": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="de-gesetze")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--searches", type=int, default=2000)
    parser.add_argument("--json", type=Path, help="Also write the figures here")
    parser.add_argument("--system", action="append", default=[],
                        help="lexir serve --system (repeatable; default bm25 alone: lexir serve's default, "
                             "recommended, encodes the corpus first, and its workers wait for that)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from lexir.datasets import open as open_data

    corpus = open_data(args.corpus, want="corpus")
    queries = queries_for(args.corpus, corpus)
    del corpus
    report = []
    for n in (int(w) for w in args.workers.split(",")):
        found = measure(args.corpus, n, queries, args.searches, args.system or ["bm25"])
        report.append(found)
        print(f"\n== {args.corpus}, --workers {n}: up in {found['startup_s']} s, {found['searches_per_s']} "
              f"searches/s ({args.searches} GET searches, 8 clients, a new connection each); MiB after them:")
        print(f"{'process':>12} {'pid':>8} " + " ".join(f"{f:>13}" for f in FIELDS))
        for pid, mem in found["after"].items():
            role = "server" if n == 1 else ("supervisor" if pid == found["supervisor"] else "worker")
            print(f"{role:>12} {pid:>8} " + " ".join(f"{mem.get(f, 0):>13.1f}" for f in FIELDS))
        total = {f: sum(m.get(f, 0) for m in found["after"].values()) for f in ("Rss", "Pss")}
        print(f"{'all':>12} {'':>8} {total['Rss']:>13.1f} {total['Pss']:>13.1f}   (the sum of PSS is what the "
              f"service holds; the sum of RSS counts shared pages once per process)")
    if len(report) > 1:
        one = sum(m["Pss"] for m in report[0]["after"].values())
        for r in report[1:]:
            pss = sum(m["Pss"] for m in r["after"].values())
            print(f"--workers {r['workers']}: {pss:.0f} MiB PSS in all, {pss / one:.2f}x the {one:.0f} MiB of "
                  f"--workers 1")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
