"""What operators see of ``lexir serve``: /metrics (Prometheus), the JSON request log with its
request ids, and ``--workers N`` (several processes, one service). Real servers on loopback."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
parser = pytest.importorskip("prometheus_client.parser")

from test_service import Server  # noqa: E402

from lexir.service.workers import child_pids  # noqa: E402

QUERY = "kradzież cudzej rzeczy ruchomej"
KEY = "ops-key-7"
SEARCH = "/v1/{corpus}/search"


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """(sample name, labels) -> value of a Prometheus text exposition."""
    out = {}
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def log_lines(path: Path) -> list[dict]:
    """The JSON request-log lines of a log file (other lines: the server's own messages)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


@pytest.fixture(scope="module")
def one(tmp_path_factory):
    srv = Server(["demo"], tmp_path_factory.mktemp("ops-one"))
    yield srv
    srv.stop()


def test_one_process_has_searched_before_its_first_request(tmp_path):
    """A single-process server makes a search of its own before it listens (as the supervisor of
    workers does before forking), so the first request does not load the kernels and make the
    first-use tables: its hit-field cache holds the warm-up's hits before any request searched."""
    srv = Server(["demo"], tmp_path)
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            found = samples(c.get("/metrics").text)
        assert value(found, "lexir_cache_entries", cache="hit_fields") > 0
        assert value(found, "lexir_cache_entries", cache="snippet_texts") > 0
        assert not any(name == "lexir_http_requests_total" and dict(labels).get("route") == SEARCH
                       for name, labels in found)
    finally:
        srv.stop()


def test_metrics_show_what_the_snippets_keep(one):
    """/metrics counts the snippets' kept parts and texts and the bytes of their table; a search
    whose hits are new texts makes them grow."""
    with httpx.Client(base_url=one.url, timeout=60) as c:
        before = samples(c.get("/metrics").text)
        r = c.get(SEARCH.format(corpus="demo"), params={"q": "pozbawienie życia człowieka umyślnie", "k": 10})
        assert r.status_code == 200 and r.json()["hits"]
        after = samples(c.get("/metrics").text)
    for name, cache in (("lexir_cache_entries", "snippet_parts"), ("lexir_cache_entries", "snippet_texts"),
                        ("lexir_cache_bytes", "snippet_parts")):
        assert value(after, name, cache=cache) > 0, (name, cache)
    assert value(after, "lexir_cache_entries", cache="snippet_texts") > \
        value(before, "lexir_cache_entries", cache="snippet_texts")


def test_metrics_count_by_route_template_and_served_corpus(one):
    with httpx.Client(base_url=one.url, timeout=60) as c:
        before = samples(c.get("/metrics").text)
        for _ in range(3):
            assert c.get("/v1/demo/search", params={"q": QUERY, "k": 3}).status_code == 200
        assert c.get("/v1/demo/provisions/kk::art-278").status_code in (200, 404)
        assert c.get("/v1/no-such-corpus/search", params={"q": QUERY}).status_code == 404
        assert c.get("/v1/demo/search").status_code == 400  # no q
        assert c.get("/no/such/route/at/all").status_code == 404
        r = c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    after = samples(r.text)

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("lexir_http_requests_total", method="GET", route=SEARCH, corpus="demo", status="200") == 3
    assert grew("lexir_http_request_duration_seconds_count", method="GET", route=SEARCH, corpus="demo") == 4
    assert grew("lexir_http_requests_total", method="GET", route=SEARCH, corpus="demo", status="400") == 1
    # a corpus that is not served is "other": a client cannot mint label values
    assert grew("lexir_http_requests_total", method="GET", route=SEARCH, corpus="other", status="404") == 1
    assert grew("lexir_http_errors_total", route=SEARCH, status="404") == 1
    assert grew("lexir_http_requests_total", method="GET", route="unmatched", corpus="", status="404") == 1
    assert "no-such-corpus" not in r.text and "/no/such" not in r.text and "kradzie" not in r.text
    assert value(after, "lexir_build_info", version=__import__("lexir").__version__,
                 python=".".join(map(str, __import__("sys").version_info[:3]))) == 1
    assert value(after, "lexir_system_info", system="bm25", role="default", index_format="2") == 1
    assert value(after, "lexir_corpus_provisions", corpus="demo") > 100
    assert any(n == "lexir_corpus_info" and dict(labels)["corpus"] == "demo" for n, labels in after)
    assert value(after, "lexir_cache_budget_bytes", cache="dated") > 0
    assert ("lexir_cache_bytes", frozenset({("cache", "dated")})) in after
    assert value(after, "lexir_cache_entries", cache="hit_fields") >= 3  # the hits of the searches above
    assert value(after, "lexir_retrievers", corpus="demo") >= 1
    # the latency histogram's buckets are cumulative and end at +Inf = count
    inf = value(after, "lexir_http_request_duration_seconds_bucket", method="GET", route=SEARCH, corpus="demo",
                le="+Inf")
    assert inf == value(after, "lexir_http_request_duration_seconds_count", method="GET", route=SEARCH, corpus="demo")


def test_each_request_logs_one_json_line_with_its_request_id(one):
    with httpx.Client(base_url=one.url, timeout=60) as c:
        given = c.get("/v1/demo/search", params={"q": QUERY, "k": 2}, headers={"X-Request-ID": "trace-42.a:b"})
        minted = c.get("/v1/demo/search", params={"q": QUERY, "k": 2})
        insane = c.get("/healthz", headers={"X-Request-ID": "no spaces or <tags> please"})
        too_long = c.get("/healthz", headers={"X-Request-ID": "x" * 200})
    assert given.headers["x-request-id"] == "trace-42.a:b"
    ids = [r.headers["x-request-id"] for r in (minted, insane, too_long)]
    assert all(len(i) == 24 and int(i, 16) >= 0 for i in ids) and len(set(ids)) == 3
    deadline = time.time() + 10
    while time.time() < deadline:
        lines = {line["request_id"]: line for line in log_lines(one.log)}
        if all(i in lines for i in ["trace-42.a:b", *ids]):
            break
        time.sleep(0.2)
    line = lines["trace-42.a:b"]
    assert set(line) == {"ts", "request_id", "method", "route", "corpus", "status", "duration_ms", "pid"}
    assert (line["method"], line["route"], line["corpus"], line["status"]) == ("GET", SEARCH, "demo", 200)
    assert line["pid"] == one.proc.pid and 0 < line["duration_ms"] < 60_000
    assert lines[ids[1]]["route"] == "/healthz"
    assert "kradzie" not in one.log.read_text(encoding="utf-8")  # the questions are not logged


def test_metrics_and_health_are_not_refused_for_load(tmp_path):
    """With one request allowed in flight, /metrics and /healthz still answer while a slow one runs
    (here: a batch of searches) and a search beside it gets its 429, counted by status."""
    srv = Server(["demo", "--max-in-flight", "1"], tmp_path / "busy")
    try:
        body = {"queries": [{"text": f"{QUERY} {i}"} for i in range(100)], "k": 100}
        with httpx.Client(base_url=srv.url, timeout=120) as c:
            busy = threading.Event()

            def slow():
                while not busy.is_set():
                    httpx.post(srv.url + "/v1/demo/search", json=body, timeout=120)

            worker = threading.Thread(target=slow)
            worker.start()
            try:
                statuses = set()
                deadline = time.time() + 60
                while 429 not in statuses and time.time() < deadline:
                    statuses.add(c.get("/v1/demo/search", params={"q": QUERY}).status_code)
                    assert c.get("/metrics").status_code == 200
                    assert c.get("/healthz").status_code == 200
            finally:
                busy.set()
                worker.join()
            assert 429 in statuses
            found = samples(c.get("/metrics").text)
        assert value(found, "lexir_http_requests_total", method="GET", route=SEARCH, corpus="demo", status="429") >= 1
        assert value(found, "lexir_http_errors_total", route=SEARCH, status="429") >= 1
    finally:
        srv.stop()


# ---------------------------------------------------------------------------
# several workers


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    cache = tmp_path_factory.mktemp("ops-two")
    log = cache / "requests.jsonl"
    srv = Server(["demo", "--workers", "2", "--log-file", str(log)], cache, env={"LEXIR_API_KEY": KEY})
    srv.requests = log
    yield srv
    srv.stop()


def workers_of(srv) -> set[int]:
    """The pids of the supervisor's children (the workers), from /proc."""
    return set(child_pids(srv.proc.pid))


def spread(srv, n: int, clients: int = 6) -> list[int]:
    """``n`` searches from ``clients`` threads, a new connection each; their statuses."""
    statuses: list[int] = []
    lock = threading.Lock()

    def run(count):
        for _ in range(count):
            r = httpx.get(srv.url + "/v1/demo/search", params={"q": QUERY, "k": 5},
                          headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
            with lock:
                statuses.append(r.status_code)

    threads = [threading.Thread(target=run, args=(n // clients,)) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses


def test_two_workers_answer_and_metrics_add_up_over_both(two):
    assert len(workers_of(two)) == 2
    with httpx.Client(base_url=two.url, timeout=60) as c:
        assert c.get("/metrics").status_code == 401  # the key guards /metrics like the API
        statuses = spread(two, 60)
        assert statuses == [200] * 60
        r = c.get("/metrics", headers={"X-API-Key": KEY})
    assert r.status_code == 200
    found = samples(r.text)
    time.sleep(0.5)
    pids = {line["pid"] for line in log_lines(two.requests) if line["route"] == SEARCH}
    assert pids == workers_of(two), (pids, workers_of(two))  # both answered
    # every search counted once, whichever worker answered it: the scrape sums both workers' files
    assert value(found, "lexir_http_requests_total", method="GET", route=SEARCH, corpus="demo", status="200") == 60
    assert value(found, "lexir_http_requests_total", method="GET", route="/metrics", corpus="", status="401") == 1
    assert value(found, "lexir_workers") == 2
    assert value(found, "lexir_corpus_provisions", corpus="demo") > 100  # not summed over workers
    resident = {dict(labels)["pid"] for name, labels in found if name == "lexir_process_resident_bytes"}
    assert {str(p) for p in pids} <= resident


def test_a_killed_worker_is_replaced_and_the_service_keeps_answering(two):
    before = workers_of(two)
    assert len(before) == 2
    with httpx.Client(base_url=two.url, timeout=60, headers={"X-API-Key": KEY}) as c:
        counted = samples(c.get("/metrics").text)
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    statuses = spread(two, 30)  # at once: the other worker answers meanwhile
    assert statuses == [200] * 30
    deadline = time.time() + 30
    while time.time() < deadline and (victim in workers_of(two) or len(workers_of(two)) < 2):
        time.sleep(0.2)
    after = workers_of(two)
    assert victim not in after and len(after) == 2 and before - {victim} <= after
    with httpx.Client(base_url=two.url, timeout=60, headers={"X-API-Key": KEY}) as c:
        found = samples(c.get("/metrics").text)
    assert value(found, "lexir_worker_restarts_total") == 1
    # the dead worker's counts stay in the sums (a counter never goes back); its live gauges go
    grew = (value(found, "lexir_http_requests_total", method="GET", route=SEARCH, corpus="demo", status="200")
            - value(counted, "lexir_http_requests_total", method="GET", route=SEARCH, corpus="demo", status="200"))
    assert grew == 30
    resident = {dict(labels)["pid"] for name, labels in found if name == "lexir_process_resident_bytes"}
    assert str(victim) not in resident
    assert "exited (signal 9)" in two.log.read_text()


def test_a_signal_to_the_supervisor_stops_every_worker(two):
    """... gracefully: a request in flight (a large batch) is answered before its worker exits."""
    workers = workers_of(two)
    assert len(workers) == 2
    body = {"queries": [{"text": f"{QUERY} {i}"} for i in range(100)], "k": 100}
    answered = []
    batch = threading.Thread(target=lambda: answered.append(httpx.post(
        two.url + "/v1/demo/search", json=body, headers={"X-API-Key": KEY}, timeout=60).status_code))
    batch.start()
    time.sleep(0.3)
    two.proc.send_signal(signal.SIGINT)  # Ctrl-C, as a terminal sends it to the supervisor
    batch.join()
    assert answered == [200]
    assert two.proc.wait(40) == 0
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


def test_workers_do_not_outlive_a_killed_supervisor(tmp_path):
    srv = Server(["demo", "--workers", "2", "--no-request-log"], tmp_path / "orphans")
    try:
        workers = workers_of(srv)
        assert len(workers) == 2
        srv.proc.kill()  # SIGKILL: no chance to stop them itself
        srv.proc.wait(10)
        deadline = time.time() + 30
        while time.time() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
            time.sleep(0.2)
        assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
        with pytest.raises(httpx.TransportError):
            httpx.get(srv.url + "/healthz", timeout=5)
    finally:
        srv.stop()


def test_bad_serve_options_are_refused_before_loading(tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app as cli

    result = CliRunner().invoke(cli, ["serve", "demo", "--log-file", str(tmp_path / "no" / "such" / "x.log")])
    assert result.exit_code == 2 and "cannot write the request log" in result.output
    assert "loading" not in result.output
    result = CliRunner().invoke(cli, ["serve", "demo", "--workers", "0"])
    assert result.exit_code == 2 and "--workers" in result.output


def test_port_0_serves_on_the_port_the_system_chose_and_says_which(tmp_path):
    """``--port 0``: the address printed is the one listening (was ``:0``); the same port taken
    again is one line naming it, exit 2, one worker or several."""
    import re
    import subprocess
    import sys

    from test_service import REPO

    env = {**os.environ, "LEXIR_CACHE": str(tmp_path), "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-m", "lexir.cli.main", "serve", "demo", "--system", "bm25", "--no-request-log"]
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([*cmd, "--port", "0"], env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        deadline, url = time.time() + 120, None
        while url is None and time.time() < deadline and proc.poll() is None:
            found = re.search(r"on (http://127\.0\.0\.1:(\d+)/)", log.read_text())
            url = found.group(1) if found else time.sleep(0.2)
        assert url is not None, log.read_text()
        assert int(found.group(2)) > 0
        assert httpx.get(url + "healthz", timeout=10).json()["corpora"] == ["demo"]
        for workers in ("1", "2"):
            taken = subprocess.run([*cmd, "--port", found.group(2), "--workers", workers], env=env,
                                   capture_output=True, text=True, timeout=120)
            assert taken.returncode == 2, taken.stderr
            assert f"cannot listen on 127.0.0.1:{found.group(2)}: Address already in use" in taken.stderr
            assert "Traceback" not in taken.stderr
    finally:
        proc.terminate()
        proc.wait(10)
