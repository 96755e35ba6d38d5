"""lexir's HTTP client (:class:`lexir.integrations.search.RemoteSearch`, behind the LangChain and
LlamaIndex retrievers) sends a read-only request again when it is lost on the way, as docs/ray.md
asks of a client, and only then.

What loses a request in front of lexir is a proxy: Ray Serve's, whose replica died under the
request (a plain-text 500), or an operator's load balancer (502, 504, a dropped connection). Here
that is a real HTTP server on loopback between the client and a real ``lexir serve``: it does to
the next requests what its plan says (drop the connection, answer 500 as Serve's proxy does, answer
503 with a ``Retry-After``, stall), then passes every request on to lexir as it came and lexir's
answer back. Each test checks what reached the front and what reached lexir (its request log)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from test_service import Server  # noqa: E402

from lexir.integrations.search import LexirSearchError, RemoteSearch, resend_wait  # noqa: E402

QUESTION = "Kto zabija człowieka, podlega karze"
PREPARING = {"error": {"code": "preparing", "message": "system 'recommended' over demo is being built; ready: bm25"}}


class Front(ThreadingHTTPServer):
    """A proxy on loopback: faults from ``plan`` first, then lexir's own answers."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), FrontHandler)
        self.upstream = upstream
        self.plan: list[str] = []
        self.seen: list[tuple[str, str, str | None]] = []  # method, path, X-Request-ID
        self.ports: list[int] = []  # the client's port of each request: its connection
        self.lock = threading.Lock()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def next_fault(self, method: str, path: str, request_id: str | None, port: int) -> str | None:
        with self.lock:
            self.seen.append((method, path, request_id))
            self.ports.append(port)
            return self.plan.pop(0) if self.plan else None


class FrontHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self.handle_one()

    def do_POST(self) -> None:
        self.handle_one()

    def handle_one(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        fault = self.server.next_fault(self.command, self.path, self.headers.get("X-Request-ID"),
                                       self.client_address[1])
        if fault == "drop":  # the connection closed with no answer: a proxy that died under it
            self.close_connection = True
            return
        if fault == "stall":
            time.sleep(3)
            self.close_connection = True
            return
        if fault is not None:  # "500", "503:<retry-after>" (a load balancer's), "preparing" (lexir's 503)
            status, _, after = fault.partition(":")
            if status == "preparing":
                status, after, payload, kind = "503", "5", json.dumps(PREPARING).encode(), "application/json"
            else:
                payload, kind = f"Error {status}".encode(), "text/plain"
            self.send_response(int(status))
            self.send_header("Content-Type", kind)
            if after:
                self.send_header("Retry-After", after)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
        answer = httpx.request(self.command, self.server.upstream + self.path, headers=headers, content=body, timeout=60)
        self.send_response(answer.status_code)
        for key in ("content-type", "x-request-id", "retry-after"):
            if key in answer.headers:
                self.send_header(key, answer.headers[key])
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)


@pytest.fixture(scope="module")
def lexir_server(tmp_path_factory):
    srv = Server(["demo"], tmp_path_factory.mktemp("resend-cache"))
    yield srv
    srv.stop()


@pytest.fixture
def front(lexir_server):
    proxy = Front(lexir_server.url)
    yield proxy
    proxy.shutdown()
    proxy.server_close()


def logged_searches(server: Server) -> list[str]:
    """The request ids of the searches in lexir's request log (one JSON line per request)."""
    ids = []
    for line in server.log.read_text(encoding="utf-8").splitlines():
        if line.startswith("{") and '"request_id"' in line:
            entry = json.loads(line)
            if entry["route"].endswith("/search"):
                ids.append(entry["request_id"])
    return ids


def searches(front: Front) -> list[tuple[str, str, str | None]]:
    return [s for s in front.seen if "/search" in s[1]]


def test_a_request_lost_on_the_way_is_sent_again_with_one_request_id(front, lexir_server):
    want = RemoteSearch(lexir_server.url, "demo").search(QUESTION, 5)
    assert want  # the demo's bm25 finds the homicide articles
    front.plan = ["drop", "500"]
    remote = RemoteSearch(front.url, "demo")
    got = remote.search(QUESTION, 5)
    assert [(h.id, h.score, h.text) for h in got] == [(h.id, h.score, h.text) for h in want]
    sent = searches(front)
    assert len(sent) == 3 and remote.resent == 2
    assert len({rid for _, _, rid in sent}) == 1 and sent[0][2]
    # only the third reached lexir, under the id every attempt carried
    assert logged_searches(lexir_server).count(sent[0][2]) == 1


def test_async_search_is_sent_again_too_and_waits_a_short_retry_after(front, lexir_server):
    front.plan = ["503:1", "drop"]
    remote = RemoteSearch(front.url, "demo")
    start = time.monotonic()
    got = asyncio.run(remote.asearch(QUESTION, 3))
    assert time.monotonic() - start >= 1.0  # the server's Retry-After, not the 0.1 s back-off
    assert [h.id for h in got] == [h.id for h in RemoteSearch(lexir_server.url, "demo").search(QUESTION, 3)]
    assert len(searches(front)) == 3 and remote.resent == 2


def test_no_resends_fail_with_what_the_front_answered(front):
    front.plan = ["500"]
    with pytest.raises(LexirSearchError, match="answered 500: Error 500") as err:
        RemoteSearch(front.url, "demo", retries=0).search(QUESTION, 3)
    assert err.value.status == 500 and len(searches(front)) == 1


def test_resends_used_up_say_how_many_attempts(front):
    front.plan = ["drop", "drop", "drop"]
    with pytest.raises(LexirSearchError, match=r"cannot reach lexir at .*\(3 attempts\)"):
        RemoteSearch(front.url, "demo", retries=2).search(QUESTION, 3)
    front.plan = ["500", "502", "504"]
    with pytest.raises(LexirSearchError, match=r"answered 504 \(the last of 3 attempts\)") as err:
        RemoteSearch(front.url, "demo").search(QUESTION, 3)
    assert err.value.status == 504 and len(searches(front)) == 6


def test_a_refusal_a_long_retry_after_and_a_read_timeout_are_not_sent_again(front):
    # lexir's own refusal (an unknown corpus) would be refused again
    with pytest.raises(LexirSearchError, match="no corpus 'nope'") as err:
        RemoteSearch(front.url, "nope").search(QUESTION, 3)
    assert err.value.status == 404 and len(searches(front)) == 1
    # lexir's system still being built (for minutes): its message at once, not seconds of waiting
    front.plan = ["preparing"]
    start = time.monotonic()
    with pytest.raises(LexirSearchError, match="being built; ready: bm25") as err:
        RemoteSearch(front.url, "demo").search(QUESTION, 3)
    assert time.monotonic() - start < 2 and err.value.status == 503 and err.value.code == "preparing"
    # a front that asks for five minutes' patience: not waited for
    front.plan = ["503:300"]
    start = time.monotonic()
    with pytest.raises(LexirSearchError, match="answered 503: Error 503"):
        RemoteSearch(front.url, "demo").search(QUESTION, 3)
    assert time.monotonic() - start < 2 and len(searches(front)) == 3
    # a server slower than the timeout may still be at work: not asked twice
    front.plan = ["stall"]
    with pytest.raises(LexirSearchError, match="ReadTimeout"):
        RemoteSearch(front.url, "demo", timeout=0.5).search(QUESTION, 3)
    assert len(searches(front)) == 4


def test_the_framework_retrievers_pass_retries_on(front):
    lc = pytest.importorskip("lexir.integrations.langchain")
    li = pytest.importorskip("lexir.integrations.llamaindex")
    front.plan = ["500", "drop"]
    assert lc.LexirRetriever(url=front.url, corpus="demo", k=2).invoke(QUESTION)
    front.plan = ["500"]
    with pytest.raises(LexirSearchError, match="500"):
        li.LexirRetriever(url=front.url, corpus="demo", k=2, retries=0).retrieve(QUESTION)
    assert len(searches(front)) == 4


def test_searches_share_one_connection_kept_alive(front, lexir_server):
    """One client for every sync search (httpx made one per search, and a TLS context with it: about
    30 ms each, benchmarks/bench_remote.py): the same connection until it drops, then a new one."""
    with RemoteSearch(front.url, "demo") as remote:
        first = remote.search(QUESTION, 3)
        assert remote.search(QUESTION, 3) == first
        assert len(set(front.ports)) == 1 and len(front.ports) == 3  # search, corpora, search
        front.plan = ["drop"]  # the front closes that connection: the resend opens another
        assert remote.search(QUESTION, 3) == first and remote.resent == 1
        assert len(set(front.ports)) == 2 and front.ports[-2] == front.ports[0] != front.ports[-1]
    assert remote._client is None  # closed; a later search opens one again
    assert remote.search(QUESTION, 3) == first and len(set(front.ports)) == 3
    remote.close()
    assert asyncio.run(remote.asearch(QUESTION, 3)) == first


def test_resend_rule():
    connect = httpx.ConnectError("refused")
    assert [resend_wait(a, 3, error=connect) for a in range(4)] == [0.1, 0.2, 0.4, None]
    assert resend_wait(0, 2, error=httpx.ReadTimeout("slow")) is None
    assert resend_wait(0, 2, error=httpx.RemoteProtocolError("disconnected")) == 0.1
    assert [resend_wait(0, 2, status) for status in (400, 404, 409, 422, 429, 500, 502, 503, 504)] == \
        [None, None, None, None, 0.1, 0.1, 0.1, 0.1, 0.1]
    assert resend_wait(0, 2, 503, "2") == 2.0 and resend_wait(0, 2, 503, "11") is None
    assert resend_wait(0, 2, 503, "5", code="preparing") is None
    assert resend_wait(0, 2, 503, code="shard_unavailable") == 0.1
    assert resend_wait(1, 2, 429, "Wed, 21 Oct 2026 07:28:00 GMT") == 0.2
    with pytest.raises(LexirSearchError, match="retries") as err:
        RemoteSearch("http://127.0.0.1:9", "demo", retries=-1)
    assert err.value.field == "retries"
