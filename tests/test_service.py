"""The HTTP API: a real ``lexir serve`` process on a loopback port, spoken to over HTTP with httpx.

The shipped demo corpus (Kodeks karny) keeps start-up to seconds; pl-codes is served beside it
where a test needs two corpora holding the same act.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

REPO = Path(__file__).resolve().parents[1]
FUSED = "rrf(systems=bm25+bm25(mode=stem))"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m lexir.cli.main serve ...`` in a subprocess, stopped at the end. Without a
    ``--system`` in ``args`` it serves ``bm25`` alone: the tests that check what a search finds
    check bm25's ranking, and a fresh cache would otherwise encode the corpus for ``recommended``
    (the default, tested on its own in ``test_serve_default``)."""

    def __init__(self, args: list[str], cache: Path, env: dict[str, str] | None = None,
                 default_systems: bool = False) -> None:
        if "--system" not in args and not default_systems:
            args = [*args, "--system", "bm25"]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full_env = {**os.environ, "LEXIR_CACHE": str(cache), "PYTHONPATH": str(REPO / "src"), **(env or {})}
        if "LEXIR_API_KEY" not in (env or {}):
            full_env.pop("LEXIR_API_KEY", None)
        self.log = cache / f"server-{self.port}.log"
        cache.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lexir.cli.main", "serve", *args, "--port", str(self.port)],
            env=full_env, stdout=open(self.log, "w"), stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.time() + 240
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"server did not start: {self.log.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(["demo", "pl-codes", "--system", "bm25", "--system", FUSED, "--variant", "bm25(k1=0.3)"],
                 tmp_path_factory.mktemp("serve-cache"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


@pytest.fixture(scope="module")
def locked(tmp_path_factory):
    """A server that wants a key and lets one request in flight at a time."""
    srv = Server(["demo", "--max-in-flight", "1"], tmp_path_factory.mktemp("serve-key"),
                 env={"LEXIR_API_KEY": "s3cret-key"})
    yield srv
    srv.stop()


def no_paths(body: str) -> None:
    """An error body names no file of the server."""
    for secret in (str(REPO), "/work", "/tmp", "kk.json", "shared/data", "site-packages", "Traceback"):
        assert secret not in body, body


# ---------------------------------------------------------------------------
# routes


def test_health_and_corpora(client):
    assert client.get("/healthz").json() == {"status": "ok", "corpora": ["demo", "pl-codes"]}
    corpora = {c["name"]: c for c in client.get("/v1/corpora").json()["corpora"]}
    pl = corpora["pl-codes"]
    assert pl["language"] == "pl" and pl["acts"] == 5 and pl["provisions"] > 4000
    assert pl["systems"] == ["bm25", FUSED]
    files = pl["provenance"]["files"]
    assert {f["path"] for f in files} >= {"pl/codes/kc.json"} and all(len(f["sha256"]) == 64 for f in files)
    assert corpora["demo"]["graph"]["cites"] > 0


def test_search_get_returns_cited_provisions(client):
    # A sentence of art. 148 § 1 k.k. finds that article first, with its citation and place.
    r = client.get("/v1/demo/search", params={"q": "Kto zabija człowieka podlega karze", "k": 5})
    assert r.status_code == 200
    body = r.json()
    assert body["query"]["text"] == "Kto zabija człowieka podlega karze"
    top = body["hits"][0]
    assert top["id"] == "kk::148" and top["rank"] == 1
    assert top["citation"] == "art. 148 k.k."
    assert top["act"] == {"id": "kk", "title": "Kodeks karny"}
    assert [p["id"] for p in top["path"]] == ["kk", "kk::148"]
    assert "<mark>zabija</mark>" in top["snippet"] and "<mark>człowieka</mark>" in top["snippet"]
    assert "Kto zabija człowieka" in top["text"]
    # Anserini / Pyserini REST candidate fields
    assert top["docid"] == top["id"] and top["doc"]["contents"] == top["text"]
    scores = [h["score"] for h in body["hits"]]
    assert scores == sorted(scores, reverse=True) and len(scores) == 5


def test_answers_are_the_json_starlette_would_send(client):
    """The service serialises with orjson (lexir.service.http.FastJSON): the bytes of a real answer
    (Polish text, marks, floats, nested lists) are those of Starlette's own JSONResponse."""
    from starlette.responses import JSONResponse

    r = client.get("/v1/demo/search", params={"q": "Kto zabija człowieka podlega karze", "k": 5})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.content == JSONResponse(r.json()).body
    assert int(r.headers["content-length"]) == len(r.content)
    refused = client.get("/v1/demo/search", params={"q": "x", "k": "many"})
    assert refused.status_code == 400 and refused.content == JSONResponse(refused.json()).body


def test_search_post_batch_and_params(client):
    r = client.post("/v1/pl-codes/search", json={"queries": [
        {"id": "a", "text": "odpowiedzialność za szkodę wyrządzoną z winy"},
        {"id": "b", "text": "kradzież rzeczy ruchomej"}], "k": 3, "text": False})
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["query"]["id"] for x in results] == ["a", "b"]
    assert all(len(x["hits"]) == 3 and "text" not in x["hits"][0] for x in results)
    # a batch answers each query as GET does, also two queries under one id
    twice = client.post("/v1/pl-codes/search", json={"queries": [
        {"id": "x", "text": "kradzież rzeczy ruchomej"}, {"id": "x", "text": "zabójstwo człowieka"}],
        "k": 3, "text": False}).json()["results"]
    for result in twice:
        alone = client.get("/v1/pl-codes/search", params={"q": result["query"]["text"], "k": 3,
                                                          "text": "false"}).json()
        assert result["query"]["id"] == "x" and result["hits"] == alone["hits"]
    assert twice[0]["hits"] != twice[1]["hits"]
    # A variant of a served system the operator allowed (--variant) is served and changes the scores.
    base = client.get("/v1/demo/search", params={"q": "kradzież rzeczy", "k": 1}).json()["hits"][0]
    tuned = client.get("/v1/demo/search", params={"q": "kradzież rzeczy", "k": 1, "param": "k1:0.3"}).json()
    assert tuned["hits"][0]["score"] != base["score"]


def test_fused_search_explains_each_part(client):
    body = client.get("/v1/demo/search", params={"q": "zabójstwo człowieka", "k": 5, "system": FUSED}).json()
    assert body["system"] == FUSED
    for hit in body["hits"]:
        assert set(hit["explain"]) <= {"bm25", "bm25(mode=stem)"} and hit["explain"]
        for part in hit["explain"].values():
            assert part["rank"] >= 1
    # rrf(k=60): a hit's fused score is the sum of 1/(60 + rank) over the parts that found it
    hit = body["hits"][0]
    assert hit["score"] == pytest.approx(sum(1 / (60 + p["rank"]) for p in hit["explain"].values()), abs=1e-5)


def test_provision_in_context(client):
    r = client.get("/v1/pl-codes/provisions/kk::148/par:1", params={"context": "parent,children,siblings,toc"})
    assert r.status_code == 200
    p = r.json()
    assert p["citation"] == "art. 148 § 1 k.k."
    assert [c["label"] for c in p["path"]] == ["Kodeks karny", "art. 148", "§ 1"]
    assert p["parent"]["id"] == "kk::148"
    assert [s["id"] for s in p["siblings"]][:2] == ["kk::148/par:1", "kk::148/par:2"]
    assert p["prev"]["id"] == "kk::147" and p["next"]["id"] == "kk::148a"
    assert p["toc"][0]["id"] == "kk::1" and len(p["toc"]) > 300
    # What cites it comes from the statute graph: every citing unit's text names art. 148.
    assert p["cited_by"]
    for ref in p["cited_by"]:
        text = client.get(f"/v1/pl-codes/provisions/{ref['id']}").json()["text"]
        assert "148" in text
    # An article's cites: art. 148 § 4 ... see a unit that cites others
    cites = client.get("/v1/pl-codes/provisions/kk::115/par:20").json()["cites"]
    assert cites is not None


def test_a_provision_page_marks_the_words_of_its_question(client):
    """Reached from a search (``?q=``), the text marks the words the question matched, as the
    snippet does; the question itself is escaped; without one nothing is marked."""
    import re

    body = client.get("/p/pl-codes/kk::148", params={"q": "Kto zabija człowieka <b>"}).text
    text = body.split('<div class="text">', 1)[1].split("</div>", 1)[0]
    assert {m.casefold() for m in re.findall(r"<mark>(.*?)</mark>", text)} >= {"zabija", "człowieka"}
    assert "<b>" not in body
    plain = client.get("/p/pl-codes/kk::148").text
    assert "<mark>" not in plain.split('<div class="text">', 1)[1].split("</div>", 1)[0]


def test_an_unknown_provision_page_links_the_close_ids(client):
    import re

    r = client.get("/p/pl-codes/kk::1488")
    assert r.status_code == 404 and "no provision" in r.text
    links = re.findall(r'<a href="(/p/pl-codes/[^"]+)">([^<]+)</a>', r.text.split('class="suggestions"', 1)[1])
    assert ("/p/pl-codes/kk%3A%3A148", "art. 148 k.k.") in links
    for href, _ in links:
        assert client.get(href).status_code == 200
    assert 'class="suggestions"' not in client.get("/p/nope/kk::1488").text  # no corpus, nothing to link


def test_cite(client):
    r = client.post("/v1/cite", json={"text": "Zgodnie z art. 415 k.c. oraz art. 148 § 1 k.k. i art. 1 k.x.",
                                      "language": "pl"})
    assert r.status_code == 200
    found = r.json()["citations"]
    assert [c["span"]["text"] for c in found[:2]] == ["art. 415 k.c.", "art. 148 § 1 k.k."]
    assert found[0]["id"] == "kc::415" and found[0]["corpora"] == ["pl-codes"]
    assert found[1]["unit_id"] == "kk::148/par:1" and found[1]["corpora"] == ["demo", "pl-codes"]
    assert "annotated" not in r.json() or r.json()["annotated"] is None
    marked = client.post("/v1/cite", json={"text": "Zgodnie z art. 415 k.c. & art. 1 k.x. <b>", "jurisdiction": "pl",
                                           "annotate": True}).json()["annotated"]
    assert marked == ('Zgodnie z <cite data-id="kc::415" data-unit="kc::415"><a href="/p/pl-codes/kc::415">'
                      'art. 415 k.c.</a></cite> &amp; <cite class="unresolved">art. 1</cite> k.x. &lt;b&gt;')
    r = client.post("/v1/cite", json={"text": "x", "jurisdiction": "xx"})
    assert r.status_code == 400 and {"de", "el", "pl"} <= set(r.json()["error"]["valid"])
    assert r.json()["error"]["field"] == "jurisdiction"
    # not named: the served corpora's order (demo and pl-codes are Polish law)
    unnamed = client.post("/v1/cite", json={"text": "Zgodnie z art. 415 k.c."})
    assert unnamed.status_code == 200 and unnamed.json()["jurisdiction"] == "pl"
    assert unnamed.json()["citations"][0]["id"] == "kc::415"
    # one citation naming two units of an article: both listed, not only the first
    merged = client.post("/v1/cite", json={"text": "nach § 5 Abs. 1 Satz 1 und 4 SGB V", "language": "de"}).json()
    first = merged["citations"][0]
    assert first["unit_id"] == "SGB 5::5/abs:1/satz:1"
    assert first["unit_ids"] == ["SGB 5::5/abs:1/satz:1", "SGB 5::5/abs:1/satz:4"]
    assert first["citations"] == ["§ 5 Abs. 1 S. 1 SGB 5", "§ 5 Abs. 1 S. 4 SGB 5"]


def test_verify_exact_fuzzy_and_refused(client):
    exact = client.post("/v1/verify", json={"quote": "kto zabija człowieka, podlega karze", "id": "kk::148/par:1",
                                            "corpus": "pl-codes"}).json()
    assert exact["verified"] and exact["match"] == "exact" and exact["score"] == 1.0
    assert exact["span"]["text"] == "Kto zabija człowieka, podlega karze"
    fuzzy = client.post("/v1/verify", json={"quote": "Kto zabija czlowieka podlega karze pozbawienia wolnosci",
                                            "citation": "art. 148 § 1 k.k.", "corpus": "pl-codes"}).json()
    assert fuzzy["verified"] and fuzzy["match"] == "fuzzy" and 0.85 <= fuzzy["score"] < 1
    assert fuzzy["id"] == "kk::148/par:1" and fuzzy["span"]["text"].startswith("Kto zabija")
    wrong = client.post("/v1/verify", json={"quote": "Kto zabiera w celu przywłaszczenia cudzą rzecz ruchomą",
                                            "id": "kk::148", "corpus": "pl-codes"}).json()
    assert not wrong["verified"] and wrong["score"] < 0.85
    # kk is served twice (demo, pl-codes): without a corpus the id is ambiguous
    r = client.post("/v1/verify", json={"quote": "Kto zabija", "id": "kk::148"})
    assert r.status_code == 400 and r.json()["error"]["valid"] == ["demo", "pl-codes"]
    assert client.post("/v1/verify", json={"quote": "x", "id": "kc::415"}).json()["corpus"] == "pl-codes"
    r = client.post("/v1/verify", json={"quote": "x", "citation": "art. 99999 k.c."})
    assert r.status_code == 404 and "art. 99999 k.c." in r.json()["error"]["message"]


def test_openapi(client):
    schema = client.get("/openapi.json").json()
    assert {"/v1/{corpus}/search", "/v1/cite", "/v1/verify", "/v1/corpora"} <= set(schema["paths"])
    # the hit shape is documented: GET search answers a SearchResult of Hits
    ok = schema["paths"]["/v1/{corpus}/search"]["get"]["responses"]["200"]["content"]["application/json"]
    assert ok["schema"]["$ref"].endswith("/SearchResult")
    hit = schema["components"]["schemas"]["Hit"]["properties"]
    assert {"rank", "score", "id", "act", "path", "citation", "snippet", "explain", "text"} <= set(hit)


def test_every_answer_has_its_documented_shape(client):
    """Each route's answer validates against its response model in /openapi.json, no field more
    or less (lexir.service.models): what the schema says is what comes back."""
    from lexir.service import models

    answers = [
        (models.Health, client.get("/healthz")),
        (models.Corpora, client.get("/v1/corpora")),
        (models.SearchResult, client.get("/v1/pl-codes/search", params={"q": "kradzież rzeczy ruchomej", "k": 5})),
        (models.SearchResult, client.get("/v1/demo/search", params={"q": "zabójstwo", "k": 3, "system": FUSED,
                                                                    "text": "false"})),
        (models.SearchResults, client.post("/v1/demo/search", json={"queries": [{"text": "rozbój"}], "k": 2})),
        (models.ProvisionAnswer, client.get("/v1/pl-codes/provisions/kk::148/par:1",
                                            params={"context": "parent,children,siblings,toc"})),
        (models.ProvisionAnswer, client.get("/v1/demo/provisions/kk::1")),
        (models.Citations, client.post("/v1/cite", json={"text": "art. 148 § 1 k.k. i art. 415 k.c.",
                                                         "language": "pl"})),
        (models.Verification, client.post("/v1/verify", json={"quote": "Kto zabija człowieka", "id": "kk::148",
                                                              "corpus": "demo"})),
    ]
    for model, r in answers:
        assert r.status_code == 200, r.text
        model.model_validate(r.json())
    fused = answers[3][1].json()["hits"]
    assert all(h["explain"] and "text" not in h for h in fused)


# ---------------------------------------------------------------------------
# refusals


def test_unknown_corpus_and_id_are_404_with_valid_names(client):
    r = client.get("/v1/nope/search", params={"q": "x"})
    assert r.status_code == 404 and r.json()["error"]["valid"] == ["demo", "pl-codes"]
    r = client.get("/v1/pl-codes/provisions/kk::148zz")
    assert r.status_code == 404 and "kk::148" in r.json()["error"]["valid"]
    for raw in ("/v1/pl-codes/provisions/..%2F..%2Fetc%2Fpasswd", "/v1/pl-codes/provisions/../../etc/passwd",
                "/v1/..%2F..%2Fetc%2Fpasswd/search?q=x", "/v1/%2Fetc%2Fpasswd/provisions/kk::1"):
        # sent as written: httpx would otherwise resolve the dot segments itself
        r = client.send(client.build_request("GET", httpx.URL(server_url(client) + raw)))
        assert r.status_code == 404, raw
        assert "root:" not in r.text
        no_paths(r.text)


def raw_status(url: str, request: bytes) -> int:
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        try:
            s.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer and close before reading it all
        reply = s.recv(4096).decode("latin-1")
    return int(reply.split(" ", 2)[1])


def server_url(client) -> str:
    return str(client.base_url).rstrip("/")


def test_bad_input_is_refused_with_the_right_status(client):
    r = client.post("/v1/demo/search", content=b'{"queries": [', headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_json"
    r = client.post("/v1/demo/search", json={"queries": [{"text": 5}]})
    assert r.status_code == 422 and "queries.0.text" in r.json()["error"]["message"]
    big = "a " * (5 * 1024 * 1024)  # a 10 MB query
    r = client.post("/v1/demo/search", json={"queries": [{"text": big}]})
    assert r.status_code == 413
    def chunks():  # no Content-Length: the cap holds as the body streams in
        yield b'{"queries": [{"text": "'
        for _ in range(200):
            yield b"a " * 5000
        yield b'"}]}'
    r = client.post("/v1/demo/search", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"
    # httpx will not even build a 10 MB URL; a raw client sends one and gets a 4xx, not a hang or a 500
    status = raw_status(server_url(client), b"GET /v1/demo/search?q=" + b"a+" * (5 * 1024 * 1024)
                        + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status in (400, 413, 414, 431)
    r = client.post("/v1/demo/search", json={"queries": [{"text": "słowo " * 5000}]})
    assert r.status_code == 400 and r.json()["error"]["field"] == "queries[0].text"
    r = client.get("/v1/demo/search", params={"q": "kradzież", "k": 5000})
    assert r.status_code == 400 and r.json()["error"]["field"] == "k"
    r = client.get("/v1/demo/search", params={"q": "kradzież", "system": "dense"})
    assert r.status_code == 400 and r.json()["error"]["valid"] == ["bm25", FUSED]
    r = client.get("/v1/demo/search", params={"q": "kradzież", "param": "k1:abc"})
    assert r.status_code == 400 and r.json()["error"]["field"] == "params"
    r = client.get("/v1/demo/provisions/kk::1", params={"context": "everything"})
    assert r.status_code == 400 and "toc" in r.json()["error"]["valid"]
    r = client.post("/v1/verify", json={"quote": "x"})
    assert r.status_code == 400
    for response in (r,):
        no_paths(response.text)
    assert client.get("/healthz").status_code == 200  # still serving


def test_cors_is_off_by_default(client):
    r = client.get("/v1/corpora", headers={"Origin": "https://example.org"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_api_key(locked):
    with httpx.Client(base_url=locked.url, timeout=30) as c:
        assert c.get("/healthz").status_code == 200
        r = c.get("/v1/corpora")
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorised"
        assert c.get("/v1/corpora", headers={"X-API-Key": "wrong"}).status_code == 401
        assert c.get("/v1/corpora", headers={"X-API-Key": "s3cret-key"}).status_code == 200
        assert c.get("/v1/demo/search", params={"q": "kradzież"},
                     headers={"Authorization": "Bearer s3cret-key"}).status_code == 200
        assert c.post("/v1/cite", json={"text": "art. 1 k.k.", "language": "pl"}).status_code == 401
        assert c.get("/openapi.json").status_code == 401
        # the page sends a reader to the key form; the right key sets a cookie that opens the page
        r = c.get("/", headers={"Accept": "text/html"})
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert c.post("/login", data={"key": "wrong"}).status_code == 401
        r = c.post("/login", data={"key": "s3cret-key"})
        assert r.status_code == 303 and "lexir_key" in r.cookies
        assert c.get("/", params={"q": "kradzież"}).status_code == 200
        c.cookies.clear()
        assert c.get("/", params={"q": "kradzież"}).status_code == 401


def test_requests_beyond_the_in_flight_bound_get_429(locked):
    # Hold one request in flight: headers sent, body not finished. The next one is refused at once.
    body = json.dumps({"queries": [{"text": "kradzież"}]}).encode()
    with socket.create_connection(("127.0.0.1", locked.port), timeout=10) as s:
        s.sendall(b"POST /v1/demo/search HTTP/1.1\r\nHost: x\r\nX-API-Key: s3cret-key\r\n"
                  b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
                  + body[:5])
        time.sleep(0.5)
        with httpx.Client(base_url=locked.url, timeout=10) as c:
            r = c.get("/v1/corpora", headers={"X-API-Key": "s3cret-key"})
            assert r.status_code == 429 and r.headers["retry-after"] == "1"
            assert c.get("/healthz").status_code == 200  # health is never refused for load
        s.sendall(body[5:])
        reply = s.recv(65536).decode("utf-8", "replace")
        assert reply.startswith("HTTP/1.1 200")
    with httpx.Client(base_url=locked.url, timeout=10) as c:
        assert c.get("/v1/corpora", headers={"X-API-Key": "s3cret-key"}).status_code == 200


@pytest.fixture(scope="module")
def greek(tmp_path_factory):
    srv = Server(["el-statutes"], tmp_path_factory.mktemp("serve-el"))
    yield srv
    srv.stop()


def test_greek_statutes(greek):
    with httpx.Client(base_url=greek.url, timeout=60) as c:
        hits = c.get("/v1/el-statutes/search", params={"q": "Όποιος σκότωσε άλλον τιμωρείται με κάθειρξη",
                                                       "k": 5}).json()["hits"]
        assert hits[0]["id"] == "PK::299" and hits[0]["citation"] == "άρθρο 299 ΠΚ"
        assert "<mark>σκότωσε</mark>" in hits[0]["snippet"]
        p = c.get("/v1/el-statutes/provisions/PK::299/par:1").json()
        assert p["citation"] == "άρθρο 299 παρ. 1 ΠΚ" and p["text"].startswith("1. Όποιος σκότωσε")
        found = c.post("/v1/cite", json={"text": "σύμφωνα με το άρθρο 299 παρ. 1 ΠΚ και το άρθρο 5 του ν. 4624/2019",
                                         "language": "el"}).json()["citations"]
        assert [(x["unit_id"], x["citation"], x["corpora"]) for x in found] == [
            ("PK::299/par:1", "άρθρο 299 παρ. 1 ΠΚ", ["el-statutes"]),
            ("N4624_2019::5", "άρθρο 5 ν. 4624/2019", ["el-statutes"])]
        v = c.post("/v1/verify", json={"quote": "όποιος σκότωσε άλλον τιμωρείται", "citation": "άρθρο 299 ΠΚ"}).json()
        assert v["verified"] and v["match"] == "exact" and v["id"] == "PK::299"


# -- the law as it stood: as_of on a corpus with a history ------------------------------------


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    srv = Server(["de-gesetze-history", "demo"], tmp_path_factory.mktemp("serve-history"))
    yield srv
    srv.stop()


@pytest.mark.slow
def test_search_and_provisions_as_of_a_date(history):
    with httpx.Client(base_url=history.url, timeout=240) as c:
        served = {d["name"]: d for d in c.get("/v1/corpora").json()["corpora"]}
        assert served["de-gesetze-history"]["dates"]["first"] == "2012-08-02" and served["demo"]["dates"] is None
        query = "Beschneidung des nicht einsichts- und urteilsfähigen männlichen Kindes"
        before = c.get("/v1/de-gesetze-history/search", params={"q": query, "k": 20, "as_of": "2012-09-01"})
        after = c.get("/v1/de-gesetze-history/search", params={"q": query, "k": 20, "as_of": "2013-06-01"})
        assert before.status_code == 200 and after.status_code == 200, (before.text, after.text)
        assert after.json()["hits"][0]["id"] == "BGB::1631d"  # introduced on 2013-01-11
        assert "BGB::1631d" not in [h["id"] for h in before.json()["hits"]]
        batch = c.post("/v1/de-gesetze-history/search",
                       json={"queries": [{"id": "a", "text": query}], "k": 5, "as_of": "2013-06-01"})
        assert batch.json()["results"][0]["hits"][0]["id"] == "BGB::1631d"
        r = c.get("/v1/de-gesetze-history/provisions/BGB::1631d", params={"as_of": "2013-06-01"})
        assert r.status_code == 200 and "Beschneidung" in r.json()["text"]
        r = c.get("/v1/de-gesetze-history/provisions/BGB::1631d", params={"as_of": "2012-09-01"})
        assert r.status_code == 404
        assert "not in force on 2012-09-01; in force from 2013-01-11" in r.json()["error"]["message"]
        r = c.get("/v1/de-gesetze-history/search", params={"q": query, "as_of": "2010-01-01"})
        assert r.status_code == 400 and "the first is 2012-08-02" in r.json()["error"]["message"]
        r = c.get("/v1/demo/search", params={"q": "zabójstwo", "as_of": "2013-06-01"})
        assert r.status_code == 400 and "has no history" in r.json()["error"]["message"]
