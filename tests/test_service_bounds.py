"""Bounded requests (issue #19): every system parameter has a range, a request builds no index,
request bodies are typed strictly, text that is no Unicode is refused, and every 4xx the service
controls is lexir's JSON error. Unit checks on the registry, then a real ``lexir serve`` on a
loopback port (the shipped demo corpus)."""

from __future__ import annotations

import json
import re
import select
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lexir.cli.main import app as cli
from lexir.datasets import open as open_data
from lexir.retrieval.base import get_system, system_names
from lexir.retrieval.build import build_retriever
from lexir.types import Query

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from test_service import FUSED, Server, no_paths  # noqa: E402

QUERY = "kradzież kradzież rzeczy ruchomej"


# ---------------------------------------------------------------------------
# the registry: ranges, strict types, query-time parameters


def test_every_number_parameter_of_every_system_has_a_range_holding_its_default():
    for name in system_names():
        for key, param in get_system(name).params.items():
            if param.kind in (int, float):
                assert param.low is not None and param.high is not None, (name, key)
                if param.default is not None:
                    assert param.within(param.default), (name, key, param.default)


@pytest.mark.parametrize(("params", "named"), [
    ({"title_weight": "1000000000"}, "title_weight=1000000000 is out of range; valid: 0 to 10"),
    ({"title_weight": -1}, "title_weight=-1 is out of range; valid: 0 to 10"),
    ({"k1": "nan"}, "k1=nan: expected a finite float"),
    ({"k1": "inf"}, "k1=inf: expected a finite float"),
    ({"k1": "1e400"}, "k1=inf: expected a finite float"),
    ({"k1": 11}, "k1=11.0 is out of range; valid: 0 to 10"),
    ({"b": 1.5}, "b=1.5 is out of range; valid: 0 to 1"),
    ({"k1": True}, "k1=True: expected float"),
    ({"title_weight": True}, "title_weight=True: expected int"),
    ({"title_weight": 2.5}, "title_weight=2.5: expected int"),
    ({"dedupe_query": 1}, "dedupe_query=1: expected bool"),
    ({"mode": ["stem"]}, "mode=['stem']: expected str"),
    ({"mode": 5}, "mode='5' is not allowed; valid: auto, raw, stem, lemma"),
])
def test_out_of_range_non_finite_and_mistyped_values_are_refused_by_name(params, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        get_system("bm25").resolve(params)


def test_strict_values_take_no_strings_and_strings_still_parse_where_not_strict():
    bm25 = get_system("bm25")
    resolved = bm25.resolve({"title_weight": "5", "k1": "0.9", "dedupe_query": "false"})
    assert (resolved["title_weight"], resolved["k1"], resolved["dedupe_query"]) == (5, 0.9, False)
    for given in ({"title_weight": "5"}, {"k1": "0.9"}, {"dedupe_query": "false"}):
        with pytest.raises(ValueError, match="got a string"):
            bm25.resolve(strict=given)
    assert bm25.resolve(strict={"title_weight": 5, "k1": 1, "dedupe_query": False})["k1"] == 1.0


def test_lexir_systems_shows_each_range_and_the_query_time_parameters():
    out = CliRunner().invoke(cli, ["systems", "bm25"], env={"COLUMNS": "250"}).output
    line = next(ln for ln in out.splitlines() if "title_weight" in ln)
    assert "0 to 10" in line
    assert "query-time" in next(ln for ln in out.splitlines() if "dedupe_query" in ln)
    assert "query-time" not in line


@pytest.fixture(scope="module")
def demo():
    return open_data("demo", want="corpus")


@pytest.mark.parametrize(("system", "changes"), [
    ("bm25", {"dedupe_query": False}),
    (FUSED, {"k": 5.0, "depth": 7}),
    ("wrrf(systems=bm25+bm25(mode=stem))", {"weights": "1,0.25", "k0": 3.0}),
    ("combsum(systems=bm25+bm25(mode=stem))", {"norm": "zscore", "weights": "0.5,1"}),
    ("bm25-prf", {"docs": 3}),
])
def test_a_query_time_variant_ranks_as_a_fresh_build_and_leaves_the_built_one_alone(demo, system, changes, tmp_path,
                                                                                    monkeypatch):
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path))
    queries = [Query("a", QUERY), Query("b", "zabójstwo człowieka z premedytacją")]
    built = build_retriever(demo, system)
    before = built.search_many(queries, 10)
    variant = built.with_params(changes)
    fresh = build_retriever(demo, system, changes, cache=False)
    assert variant.search_many(queries, 10) == fresh.search_many(queries, 10)
    assert built.search_many(queries, 10) == before  # the built retriever is not changed
    assert variant.search_many(queries, 10) != before  # the change is real


def test_a_retriever_refuses_to_vary_what_its_index_holds(demo, tmp_path, monkeypatch):
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path))
    with pytest.raises(ValueError, match="title_weight"):
        build_retriever(demo, "bm25").with_params({"title_weight": 3})


# ---------------------------------------------------------------------------
# the service


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(["demo", "--system", "bm25", "--system", FUSED], tmp_path_factory.mktemp("bounds-cache"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    """A server whose operator allowed one variant of bm25 with another k1."""
    srv = Server(["demo", "--variant", "bm25(k1=0.3)"], tmp_path_factory.mktemp("bounds-variants"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


def error_of(r, status: int) -> dict:
    """The JSON error of a response that must have ``status``."""
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json"), r.headers
    error = r.json()["error"]
    assert isinstance(error["code"], str) and isinstance(error["message"], str)
    no_paths(r.text)
    return error


def search(client, *params: str, **args):
    return client.get("/v1/demo/search", params=[("q", args.pop("q", QUERY)), ("k", "3"),
                                                 *[("param", p) for p in params], *args.items()])


def test_a_parameter_that_needs_a_new_index_is_refused_and_builds_nothing(client, server):
    rss = rss_bytes(server.proc.pid)
    error = error_of(search(client, "title_weight:5"), 400)  # in range, but another index
    assert error["field"] == "params" and "title_weight" in error["message"] and "fixed" in error["message"]
    assert error["valid"] == ["dedupe_query"]  # what a request may vary for bm25
    error = error_of(search(client, "title_weight:1000000000"), 400)
    assert "title_weight" in error["message"] and "0 to 10" in error["message"]
    for bad in ("k1:nan", "k1:inf", "k1:-1", "b:2", "mode:stem", "stopwords:false"):
        error = error_of(search(client, bad), 400)
        assert error["field"] == "params" and bad.split(":")[0] in error["message"], bad
    assert rss_bytes(server.proc.pid) - rss < 64 << 20  # nothing was built


def test_query_time_parameters_are_served(client):
    base = search(client).json()["hits"][0]
    assert search(client, "k1:1.2").json()["hits"][0] == base  # the served value itself
    repeated = search(client, "dedupe_query:false").json()["hits"][0]
    assert repeated["score"] > base["score"]  # the repeated word counts twice
    fused = search(client, "k:1", "depth:2", system=FUSED).json()
    hit = fused["hits"][0]
    assert hit["score"] == pytest.approx(sum(1 / (1 + p["rank"]) for p in hit["explain"].values()), abs=1e-5)
    assert all(p["rank"] <= 2 for h in fused["hits"] for p in h["explain"].values())
    error_of(search(client, "systems:bm25", system=FUSED), 400)  # the parts are the index


def test_only_the_variants_the_operator_allowed_are_served(variants):
    with httpx.Client(base_url=variants.url, timeout=60) as c:
        base = search(c).json()["hits"][0]
        tuned = search(c, "k1:0.3")  # the operator's --variant
        assert tuned.status_code == 200 and tuned.json()["hits"][0]["score"] != base["score"]
        both = search(c, "k1:0.3", "dedupe_query:false")  # and a query-time change on top of it
        assert both.status_code == 200 and both.json()["hits"][0]["score"] > tuned.json()["hits"][0]["score"]
        error = error_of(search(c, "k1:0.4"), 400)  # not among the variants
        assert "k1=0.4" in error["message"] and "--variant" in error["message"]


def post(client, body, path="/v1/demo/search"):
    return client.post(path, content=body if isinstance(body, bytes) else json.dumps(body).encode(),
                       headers={"content-type": "application/json"})


@pytest.mark.parametrize(("body", "field"), [
    ({"queries": [{"text": "kara"}], "k": True}, "k"),
    ({"queries": [{"text": "kara"}], "k": "5"}, "k"),
    ({"queries": [{"text": "kara"}], "k": 5.0}, "k"),
    ({"queries": [{"text": "kara"}], "text": 1}, "text"),
    ({"queries": [{"text": "kara", "id": 7}]}, "queries.0.id"),
])
def test_json_bodies_are_typed_strictly(client, body, field):
    assert error_of(post(client, body), 422)["field"] == field


@pytest.mark.parametrize("params", [{"title_weight": True}, {"dedupe_query": "false"}, {"dedupe_query": 0},
                                    {"k1": "nan"}])
def test_json_parameters_are_typed_strictly(client, params):
    error = error_of(post(client, {"queries": [{"text": "kara"}], "params": params}), 400)
    assert error["field"] == "params" and next(iter(params)) in error["message"]


def test_a_typed_query_time_parameter_in_a_body_is_served(client):
    r = post(client, {"queries": [{"text": QUERY}], "k": 1, "params": {"dedupe_query": False}})
    assert r.status_code == 200 and r.json()["results"][0]["hits"]


@pytest.mark.parametrize(("path", "raw", "field"), [
    ("/v1/demo/search", b'{"queries": [{"text": "kara \\ud800"}]}', "queries.0.text"),
    ("/v1/demo/search", b'{"queries": [{"text": "kara", "id": "\\udfff"}]}', "queries.0.id"),
    ("/v1/demo/search", b'{"queries": [{"text": "kara"}], "params": {"\\ud800": 1}}', "params.\\ud800"),
    ("/v1/cite", b'{"text": "art. 148 k.k. \\ud800", "language": "pl"}', "text"),
    ("/v1/verify", b'{"quote": "zabija \\ud800", "id": "kk::148"}', "quote"),
])
def test_text_that_is_no_unicode_is_refused_before_analysis(client, path, raw, field):
    error = error_of(post(client, raw, path), 400)
    assert error["code"] == "bad_text" and error["field"] == field
    assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize("path", ["/v1/demo/search", "/v1/cite", "/v1/verify", "/v1/demo/validity",
                                  "/judgements"])
def test_json_nested_thousands_deep_is_bad_json_on_every_post_route(client, path):
    """Arrays nested 5,000 deep overflow Python's JSON parser (RecursionError): a 400 bad_json on
    every route that takes a body, never a 500 (the validity route reads its body itself)."""
    for raw in (b"[" * 5000 + b"]" * 5000, b'{"ids": ' + b"[" * 5000 + b"]" * 5000 + b"}"):
        error = error_of(post(client, raw, path), 400)
        assert error["code"] == "bad_json" and "not valid JSON (nested too deeply)" in error["message"], error
    error = error_of(post(client, b'{"ids": [', path), 400)  # plain bad JSON: the same code
    assert error["code"] == "bad_json"
    assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize(("path", "body", "field", "valid"), [
    ("/v1/demo/search", {"queries": [{"text": "kara"}], "top_k": 3}, "top_k", "k"),
    ("/v1/demo/search", {"queries": [{"text": "kara", "qid": "a"}]}, "queries.0.qid", "id"),
    ("/v1/cite", {"text": "art. 148 k.k.", "lang": "pl"}, "lang", "jurisdiction"),
    ("/v1/verify", {"quote": "zabija", "id": "kk::148", "treshold": 0.5}, "treshold", "threshold"),
    ("/judgements", {"corpus": "demo", "query": "kara", "id": "kk::148", "grade": 1, "judge": "x"}, "judge", "grade"),
    ("/v1/demo/validity", {"ids": ["kk::148"], "asof": "2020-01-01"}, "asof", "as_of"),
])
def test_an_unknown_body_field_is_refused_by_name_with_the_valid_ones(client, path, body, field, valid):
    """A misspelt field (``top_k`` for ``k``) is refused, not silently ignored (a search at the
    default k would look like an answer)."""
    error = error_of(post(client, body, path), 422)
    assert error["field"] == field and "unknown field" in error["message"] and valid in error["valid"]


def test_verify_refuses_an_id_or_citation_longer_than_any_and_echoes_none_of_it(client):
    for field in ("id", "citation"):
        r = client.post("/v1/verify", json={"quote": "zabija człowieka", field: "kk::148" + "x" * 900_000})
        error = error_of(r, 400)
        assert error["field"] == field and "at most 500 characters" in error["message"] and len(r.content) < 500


def test_a_batch_asking_for_more_than_ten_thousand_hits_is_refused(client):
    """queries x k is bounded as one search's window is in Elasticsearch: 100 queries at k=1000
    (a 9.8 kB body) would be an answer of up to 100,000 hits."""
    body = {"queries": [{"text": QUERY}] * 100, "k": 1000}
    error = error_of(post(client, body), 400)
    assert error["field"] == "k" and "up to 100,000 hits; at most 10,000 a request" in error["message"]
    assert post(client, {**body, "k": 100}).status_code == 200  # 10,000: the bound itself is served
    assert post(client, {"queries": [{"text": QUERY}] * 10, "k": 1000}).status_code == 200


@pytest.mark.parametrize(("query", "field", "said"), [
    ([("q", QUERY), ("k", "5_0")], "k", "k must be an integer"),
    ([("q", QUERY), ("k", "\u0665")], "k", "k must be an integer"),  # an Arabic-Indic five
    ([("q", QUERY), ("k", "  5")], "k", "k must be an integer"),
    ([("q", QUERY), ("text", "maybe")], "text", "text must be true or false"),
    ([("q", QUERY), ("q", "zabójstwo")], "q", "q is given 2 times"),
    ([("q", QUERY), ("k", "3"), ("k", "5")], "k", "k is given 2 times"),
    ([("q", "")], "q", "the query is empty"),
])
def test_get_search_parameters_are_read_strictly(client, query, field, said):
    error = error_of(client.get("/v1/demo/search", params=query), 400)
    assert error["field"] == field and said in error["message"], error
    for text, shown in (("FALSE", False), ("1", True)):
        hits = client.get("/v1/demo/search", params={"q": QUERY, "k": "2", "text": text}).json()["hits"]
        assert ("text" in hits[0]) is shown


def test_cite_refuses_a_jurisdiction_and_a_language_that_disagree(client):
    error = error_of(client.post("/v1/cite", json={"text": "art. 148 k.k.", "jurisdiction": "pl", "language": "de"}),
                     400)
    assert error["field"] == "jurisdiction" and "disagree" in error["message"]
    assert client.post("/v1/cite", json={"text": "art. 148 k.k.", "jurisdiction": "pl", "language": "pl"}).status_code == 200


def test_healthz_answers_head_as_a_load_balancer_probes(client):
    r = client.head("/healthz")
    assert r.status_code == 200 and r.content == b""


def test_every_4xx_is_a_json_error_and_a_405_says_what_is_allowed(client):
    r = client.put("/v1/demo/search")
    error_of(r, 405)
    assert set(r.headers["allow"].split(", ")) == {"GET", "POST"}
    r = client.delete("/healthz")
    assert "GET" in error_of(r, 405)["message"] and "GET" in r.headers["allow"]
    r = client.post("/static/style.css")
    error_of(r, 405)
    assert r.headers["allow"] == "GET, HEAD"
    error_of(client.get("/static/nothing-here.css"), 404)
    error_of(client.get("/no/such/route"), 404)
    error_of(client.get("/v1/demo/search"), 400)
    error_of(client.get("/v1/demo/search", params={"q": "kara", "k": "x"}), 400)
    error_of(post(client, b'{"queries": ['), 400)
    # an upgrade request is an ordinary request: no WebSocket library answers it with a bare 403
    r = client.get("/v1/nope/search", params={"q": "x"}, headers={
        "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    error_of(r, 404)


def raw_reply(port: int, request: bytes) -> tuple[str, bytes]:
    """Send ``request`` in pieces until the server answers (then stop: bytes it never reads would
    make its close a reset that loses the answer), and read the answer to the end."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        for start in range(0, len(request), 8192):
            s.sendall(request[start:start + 8192])
            if select.select([s], [], [], 0.5)[0]:
                break
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return head.decode("latin-1"), body


@pytest.mark.parametrize("request_bytes", [
    b"NOT HTTP AT ALL\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    b"GET /v1/demo/search?q=" + b"a+" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n",
], ids=["garbage", "bad-content-length", "long-request-line", "long-header"])
def test_malformed_http_gets_the_json_error_shape(server, request_bytes):
    head, body = raw_reply(server.port, request_bytes)
    assert head.startswith("HTTP/1.1 400"), head
    assert "content-type: application/json" in head.lower()
    assert json.loads(body)["error"]["code"] == "bad_http"


# ---------------------------------------------------------------------------
# a server that wants a key


@pytest.fixture(scope="module")
def locked(tmp_path_factory):
    srv = Server(["demo"], tmp_path_factory.mktemp("bounds-key"), env={"LEXIR_API_KEY": "s3cret-key"})
    yield srv
    srv.stop()


def test_open_routes_are_the_documented_ones_and_still_bounded(locked):
    with httpx.Client(base_url=locked.url, timeout=30) as c:
        # open: health, the key form and the stylesheet and script it loads
        assert c.get("/healthz").status_code == 200
        assert c.get("/login").status_code == 200
        assert c.get("/static/style.css").status_code == 200
        assert c.get("/static/page.js").status_code == 200
        # everything else wants the key
        for path in ("/v1/corpora", "/openapi.json", "/docs", "/judgements/qrels", "/v1/demo/provisions/kk::148"):
            assert error_of(c.get(path), 401)["code"] == "unauthorised", path
        # the open key form is under the body cap like every route (it read any body before)
        r = c.post("/login", content=b"key=" + b"a" * (2 << 20),
                   headers={"content-type": "application/x-www-form-urlencoded"})
        assert error_of(r, 413)["code"] == "too_large"


def test_the_page_cookie_is_secure_over_tls(locked):
    with httpx.Client(base_url=locked.url, timeout=30) as c:
        plain = c.post("/login", data={"key": "s3cret-key"})
        assert plain.status_code == 303 and "secure" not in plain.headers["set-cookie"].lower()
    with httpx.Client(base_url=locked.url, timeout=30) as c:
        # a TLS-terminating proxy on loopback (uvicorn trusts 127.0.0.1's X-Forwarded-Proto)
        tls = c.post("/login", data={"key": "s3cret-key"}, headers={"X-Forwarded-Proto": "https"})
        assert tls.status_code == 303
        cookie = tls.headers["set-cookie"].lower()
        assert "secure" in cookie and "httponly" in cookie and "samesite=strict" in cookie


def test_a_variant_must_be_of_a_served_system():
    out = CliRunner().invoke(cli, ["serve", "demo", "--variant", "dense(chunk_words=50)"])
    assert out.exit_code != 0 and "no variant of a served system" in out.output
    out = CliRunner().invoke(cli, ["serve", "demo", "--variant", "bm25(title_weight=99)"])
    assert out.exit_code != 0 and "title_weight=99 is out of range" in out.output


def test_in_process_search_with_parameters_builds_that_system_up_front(demo, tmp_path, monkeypatch):
    from lexir.integrations.search import LocalSearch

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path))
    tuned = LocalSearch("demo", params={"k1": 0.3}).search(QUERY, 3)
    expected = build_retriever(demo, "bm25", {"k1": 0.3}).search(QUERY, 3)
    assert [(h.id, h.score) for h in tuned] == [(d, round(score, 6)) for d, score in expected]
    assert tuned[0].score != round(build_retriever(demo, "bm25").search(QUERY, 1)[0][1], 6)


def test_an_id_that_is_no_unicode_is_refused_by_the_history_routes():
    from lexir.service import history
    from lexir.service.state import ServiceError

    with pytest.raises(ServiceError, match="lone surrogate"):
        history._check_id("BGB::1\ud800")  # validity echoes ids as keys: no UTF-8 carries this one
    assert history._check_id("BGB::1") == "BGB::1"
