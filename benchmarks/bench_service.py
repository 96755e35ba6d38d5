"""Load benchmark of ``lexir serve`` on loopback: requests/s, p50/p99 latency and errors at 1, 8
and 32 concurrent clients, against the same searches made in-process; server memory.

    nice -n 10 python benchmarks/bench_service.py --corpus pl-codes --corpus de-gesetze --seconds 10

With ``--batch N`` (default 32) each client level runs again with POSTs of N queries (one
``search_many`` each), and the same batches are timed in-process.

For each corpus the script starts ``lexir serve CORPUS --system bm25`` (BM25 only, in-flight bound
above the largest client count, so every refusal would be an error) as a subprocess, then runs
``GET /v1/CORPUS/search?q=...&k=10`` from N client threads (stdlib ``http.client``, keep-alive,
one connection each) for ``--seconds`` each, cycling through the queries. In-process figures
time the same queries (a) on the retriever alone and (b) through the service's own search
function (hit formatting: citations, breadcrumbs, snippets), single-threaded.

Queries are development data, never a test split: for pl-codes the question texts of the
pl-exams ``tune`` split; for de-gesetze, article headings (``§`` titles) sampled with a fixed
seed, which read like the short topical queries a user types.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def queries_for(corpus_name: str, corpus, n: int = 300) -> list[str]:
    if corpus_name == "pl-codes":
        from lexir.datasets import open as open_data

        bench = open_data("pl-exams")
        return [q.text for q in bench.queries.split("tune").queries][:n]
    titles = sorted({d.title for d in corpus.documents if d.title and len(d.title) > 8
                     and "weggefallen" not in d.title})
    random.Random(13).shuffle(titles)
    return titles[:n]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(corpus: str, options: list[str], name: str) -> tuple[subprocess.Popen, int, object, float]:
    """``lexir serve CORPUS OPTIONS`` on a free loopback port, its output in /tmp/NAME-PORT.log,
    waited for until ``/healthz`` answers: (process, port, open log file, seconds to start). The
    caller terminates the process and closes the log."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("LEXIR_API_KEY", None)
    log = open(f"/tmp/{name}-{port}.log", "w")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "lexir.cli.main", "serve", corpus, "--port", str(port), *options],
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    while True:
        if proc.poll() is not None:
            log.close()
            raise SystemExit(f"server exited; see {log.name}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                conn.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
                if conn.recv(12).startswith(b"HTTP/1."):
                    break
        except OSError:
            pass
        time.sleep(0.5)
    return proc, port, log, time.perf_counter() - t0


def rss_mib(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of a process, MiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user and system) used so far by a process and every descendant alive (the
    workers of ``lexir serve --workers N``)."""
    parents, cpu = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    tree, frontier = {pid}, [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier and child not in tree]
        tree.update(frontier)
    return sum(cpu.get(p, 0.0) for p in tree)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def one_search_ms(port: int, corpus: str, query: str) -> float:
    """Milliseconds of one GET search on a new connection (its answer must be 200)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        t0 = time.perf_counter()
        conn.request("GET", f"/v1/{corpus}/search?" + urllib.parse.urlencode({"q": query, "k": 10}))
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"first search answered {response.status}")
        return 1000 * (time.perf_counter() - t0)
    finally:
        conn.close()


def load_path(port: int, path: str, seconds: float, clients: int = 1, server: int = 0) -> dict:
    return load(port, "", [], clients, seconds, [path], server=server)


def batches(queries: list[str], size: int) -> list[bytes]:
    """POST bodies of ``size`` queries each, cycling through ``queries``."""
    n = len(queries)
    return [json.dumps({"queries": [{"text": queries[(i + j) % n]} for j in range(size)], "k": 10}).encode()
            for i in range(0, n, size)]


def load(port: int, corpus: str, queries: list[str], clients: int, seconds: float,
         paths: list[str] | None = None, batch: int = 0, server: int = 0) -> dict:
    """``clients`` threads sending requests for ``seconds``: GET searches of one query each, or
    with ``batch``, POSTs of ``batch`` queries (``searches`` counts queries, not requests). With
    ``server`` (its pid), also the CPU time the server's processes spent per request
    (``server_cpu_ms``): unlike requests/s, it does not depend on the clients' share of the
    machine's cores."""
    paths = paths or [f"/v1/{corpus}/search?" + urllib.parse.urlencode({"q": q, "k": 10}) for q in queries]
    bodies = batches(queries, batch) if batch else []
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    statuses: dict[int, int] = {}
    start_gate = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        j = i * 7919
        start_gate.wait()
        while time.perf_counter() < stop_at[0]:
            path = paths[j % len(paths)]
            j += 1
            t0 = time.perf_counter()
            try:
                if bodies:
                    conn.request("POST", f"/v1/{corpus}/search", bodies[j % len(bodies)],
                                 {"Content-Type": "application/json"})
                else:
                    conn.request("GET", path)
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
                if not ok:
                    statuses[response.status] = statuses.get(response.status, 0) + 1
            except (OSError, http.client.HTTPException):
                ok = False
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            latencies[i].append(time.perf_counter() - t0)
            if not ok:
                errors[i] += 1
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    stop_at[0] = time.perf_counter() + seconds + 0.001
    cpu0 = tree_cpu_s(server) if server else 0.0
    t0 = time.perf_counter()
    start_gate.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    cpu = tree_cpu_s(server) - cpu0 if server else 0.0
    flat = [x for per in latencies for x in per]
    return {"clients": clients, "batch": batch, "requests": len(flat), "rps": len(flat) / elapsed,
            "server_cpu_ms": 1000 * cpu / max(len(flat), 1) if server else None,
            "searches_per_s": len(flat) * max(batch, 1) / elapsed,
            "p50_ms": 1000 * percentile(flat, 50), "p99_ms": 1000 * percentile(flat, 99),
            "errors": sum(errors), "statuses": statuses}


def timed(call, inputs: list, seconds: float) -> list[float]:
    """The seconds of each ``call(x)``, cycling through ``inputs`` for about ``seconds``."""
    times, i = [], 0
    stop = time.perf_counter() + seconds
    while time.perf_counter() < stop:
        t0 = time.perf_counter()
        call(inputs[i % len(inputs)])
        times.append(time.perf_counter() - t0)
        i += 1
    return times


def snippet_cpu(state, corpus: str, queries: list[str], passes: int = 5) -> dict:
    """CPU microseconds of one hit's snippet (:func:`lexir.structure.hits.snippets`, one query's
    hits at a time): the texts and query terms of every hit of ``queries`` (top 10), best pass
    (CPU time, so other work on the machine weighs less than in wall time). ``cpu_us``: texts
    kept from the pass before (a service's steady traffic over a small corpus); ``new_text_cpu_us``:
    every text new to the snippets (a large corpus's), each of its parts (the pieces between
    whitespace) seen before."""
    from lexir.service import core
    from lexir.structure import hits

    loaded = state.get(corpus)
    analyze = hits.hit_analyzer(state.retriever(loaded, None, {}), loaded.language)
    groups = []
    for q in queries:
        terms = frozenset(analyze.for_queries()(q) if hasattr(analyze, "for_queries") else analyze(q))
        groups.append(([hit["text"] for hit in core.search(state, corpus, [("q", q)], 10)[0]["hits"]], terms))
    n = max(sum(len(texts) for texts, _ in groups), 1)
    best = {"cpu_us": float("inf"), "new_text_cpu_us": float("inf")}
    for _ in range(passes):
        for name in ("new_text_cpu_us", "cpu_us"):
            if name == "new_text_cpu_us":
                hits._kept(analyze).texts.clear()
            t0 = time.process_time()
            for texts, terms in groups:
                hits.snippets(texts, terms, analyze)
            best[name] = min(best[name], 1e6 * (time.process_time() - t0) / n)
    return {**best, "hits": n}


def in_process(state, corpus: str, queries: list[str], seconds: float, batch: int = 0) -> dict:
    """Single-threaded: the retriever alone, then the service's search (with formatting); with
    ``batch``, also both on batches of that many queries."""
    from lexir.service import core
    from lexir.types import Query

    loaded = state.get(corpus)
    retriever = state.retriever(loaded, None, {})
    out = {}
    for name, call in (("retriever", lambda q: retriever.search(q, 10)),
                       ("service_search", lambda q: core.search(state, corpus, [("q", q)], 10))):
        for q in queries[:20]:  # warm-up, as the server had: the first searches load the index's pages
            call(q)
        times = timed(call, queries, seconds)
        out[name] = {"rps": len(times) / sum(times), "p50_ms": 1000 * statistics.median(times),
                     "p99_ms": 1000 * percentile(times, 99), "requests": len(times)}
    out["snippets"] = snippet_cpu(state, corpus, queries)
    if batch:  # the same batches as the POSTs: the retriever's batch search, the service's
        groups = [[Query(f"q{j}", q["text"]) for j, q in enumerate(json.loads(body)["queries"])]
                  for body in batches(queries, batch)]
        for name, call in (("retriever_batch", lambda g: retriever.search_many(g, 10)),
                           ("service_search_batch", lambda g: core.search(state, corpus, [(q.id, q.text) for q in g], 10))):
            call(groups[0])
            times = timed(call, groups, seconds)
            out[name] = {"searches_per_s": batch * len(times) / sum(times), "requests": len(times),
                         "p50_ms": 1000 * statistics.median(times)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", default=[])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--json", type=Path, help="Also write the figures here")
    parser.add_argument("--batch", type=int, default=32,
                        help="also POST batches of this many queries (0: GET searches only; default %(default)s)")
    parser.add_argument("--workers", type=int, default=1, help="lexir serve --workers (default %(default)s)")
    parser.add_argument("--system", action="append", default=[],
                        help="lexir serve --system (repeatable; default bm25 alone: lexir serve's default, recommended "
                             "beside bm25, would run recommended's dense encoding in the background while timed, "
                             "when it is not cached)")
    parser.add_argument("--also", action="append", default=[], metavar="PARAMS",
                        help="also time the GET searches with these query parameters added (repeatable), e.g. "
                             "text=false: what an answer without the hits' texts costs the server")
    parser.add_argument("--no-request-log", action="store_true",
                        help="serve without the JSON request log (default: the log on, into the server's log file)")
    args = parser.parse_args()
    corpora = args.corpus or ["pl-codes"]
    levels = [int(c) for c in args.clients.split(",")]
    sys.path.insert(0, str(REPO / "src"))
    from lexir.service.state import ServiceState, Settings

    report = {"seconds": args.seconds, "cpus": os.cpu_count(), "corpora": {}}
    for corpus in corpora:
        proc, port, log, startup = start_server(corpus, [
            *[a for s in (args.system or ["bm25"]) for a in ("--system", s)],
            "--max-in-flight", str(max(levels) * 2), "--workers", str(args.workers),
            *(["--no-request-log"] if args.no_request_log else [])], "bench-service")
        try:
            state = ServiceState(Settings())
            state.add(corpus)
            queries = queries_for(corpus, state.get(corpus).corpus)
            state.settle()  # as the server does; the client threads run in this process too
            rss_loaded = rss_mib(proc.pid)
            # the server's first searches, one at a time: what the first users wait (texts and
            # words new to the snippets, anything the start did not prepare)
            first = [one_search_ms(port, corpus, q) for q in queries[:5]]
            load(port, corpus, queries, 2, 1.0)  # warm-up: first requests fill caches
            floor = load_path(port, "/healthz", 3.0, server=proc.pid)  # the HTTP stack alone, one client
            # the HTTP stack alone at each client level, interleaved with the searches (the same load on the machine)
            healthz, results = {}, []
            for n in levels:
                healthz[n] = load_path(port, "/healthz", args.seconds, n, server=proc.pid)
                results.append(load(port, corpus, queries, n, args.seconds, server=proc.pid))
                for extra in args.also:
                    paths = [f"/v1/{corpus}/search?" + urllib.parse.urlencode({"q": q, "k": 10}) + "&" + extra
                             for q in queries]
                    results.append({**load(port, corpus, queries, n, args.seconds, paths, server=proc.pid),
                                    "also": extra})
            if args.batch:
                results += [load(port, corpus, queries, n, args.seconds, batch=args.batch, server=proc.pid)
                            for n in levels]
            rss_after = rss_mib(proc.pid)
            local = in_process(state, corpus, queries, min(args.seconds, 10.0), args.batch)
            del state
            gc.unfreeze()
            gc.collect()
        finally:
            proc.terminate()
            proc.wait(30)
            log.close()
        entry = {"queries": len(queries), "startup_s": round(startup, 1), "first_searches_ms": first, "server_rss_mib_loaded": rss_loaded[0],
                 "server_rss_mib_after": rss_after[0], "server_peak_rss_mib": rss_after[1],
                 "healthz_1_client": floor, "healthz": healthz, "load": results, "in_process": local}
        report["corpora"][corpus] = entry
        print(f"\n== {corpus}: {len(queries)} queries, server up in {startup:.1f}s, "
              f"RSS {rss_loaded[0]:.0f} MiB loaded, {rss_after[0]:.0f} MiB after load (peak {rss_after[1]:.0f}); "
              f"its first 5 searches: {', '.join(f'{ms:.1f}' for ms in first)} ms")
        print(f"{'clients':>8} {'batch':>6} {'requests':>9} {'req/s':>8} {'searches/s':>11} {'p50 ms':>8} "
              f"{'p99 ms':>8} {'errors':>7} {'server CPU ms/req':>18}")
        for r in results:
            print(f"{r['clients']:>8} {r['batch'] or 1:>6} {r['requests']:>9} {r['rps']:>8.1f} {r['searches_per_s']:>11.1f} "
                  f"{r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['errors']:>7} {r['server_cpu_ms']:>18.3f}"
                  + (f"  {r['statuses']}" if r["statuses"] else "") + (f"  (GET with {r['also']})" if "also" in r else ""))
        for n, h in healthz.items():
            searched = next(r for r in results if r["clients"] == n and not r["batch"] and "also" not in r)
            print(f"{'healthz':>8} {n:>6} {h['requests']:>9} {h['rps']:>8.1f} {'':>11} {h['p50_ms']:>8.2f} "
                  f"{h['p99_ms']:>8.2f} {h['errors']:>7} {h['server_cpu_ms']:>18.3f}  search / healthz at {n} "
                  f"clients: {searched['rps'] / h['rps']:.0%} (server CPU per request: "
                  f"{h['server_cpu_ms'] / searched['server_cpu_ms']:.0%})")
        print(f"{'healthz':>8} {1:>6} {floor['requests']:>9} {floor['rps']:>8.1f} {'':>11} {floor['p50_ms']:>8.2f} "
              f"{floor['p99_ms']:>8.2f} {floor['errors']:>7} {floor['server_cpu_ms']:>18.3f}  (1 client: the HTTP stack alone)")
        for name, r in local.items():
            if name == "snippets":
                print(f"in-process {name:<21} {r['cpu_us']:>8.1f} us of CPU each, {r['new_text_cpu_us']:.1f} for a text "
                      f"not kept (best of 5 passes over {r['hits']} hits)")
            elif "rps" in r:
                print(f"in-process {name:<21} {r['rps']:>8.1f} req/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms")
            else:
                print(f"in-process {name:<21} {r['searches_per_s']:>8.1f} searches/s  p50 {r['p50_ms']:.2f} ms "
                      f"per batch of {args.batch}")
        best = max(r["rps"] for r in results if not r["batch"] and "also" not in r)
        one = results[0]
        print(f"overhead per request at 1 client: {one['p50_ms'] - local['retriever']['p50_ms']:.2f} ms (p50, vs the "
              f"retriever), {one['p50_ms'] - local['service_search']['p50_ms']:.2f} ms (vs the service's search in-process)")
        print(f"best service throughput / in-process retriever throughput: {best / local['retriever']['rps']:.0%} "
              f"(GET, one query a request); the HTTP stack alone (/healthz) reaches "
              f"{floor['rps'] / local['retriever']['rps']:.0%}")
        print(f"in-process: the service's search (formatting included) / the retriever alone: "
              f"{local['service_search']['rps'] / local['retriever']['rps']:.0%}")
        if args.batch:
            best_batch = max(r["searches_per_s"] for r in results if r["batch"])
            print(f"batches of {args.batch}: best service searches/s / the retriever's batch search in-process: "
                  f"{best_batch / local['retriever_batch']['searches_per_s']:.0%}; the service's search in-process / "
                  f"the retriever's: {local['service_search_batch']['searches_per_s'] / local['retriever_batch']['searches_per_s']:.0%}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
