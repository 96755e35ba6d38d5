"""``lexir serve`` with no ``--system``: ``recommended`` first, ``bm25`` beside it, and a first
build of recommended (the demo's dense encoding) that runs in the background while bm25 answers,
said on the console, in /v1/corpora, in every answer and on the page (lexir.service.preparing)."""

from __future__ import annotations

import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from test_service import Server  # noqa: E402

QUESTION = "ukradłem rower koledze, co mi grozi?"


def corpus_info(client, name="demo") -> dict:
    return next(c for c in client.get("/v1/corpora").json()["corpora"] if c["name"] == name)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """The demo served by default, over an empty cache: recommended must encode the demo."""
    cache = tmp_path_factory.mktemp("serve-default")
    srv = Server(["demo"], cache, default_systems=True)
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            yield srv, client, cache
    finally:
        srv.stop()


def test_a_first_build_runs_in_the_background_while_bm25_answers(fresh):
    srv, client, _ = fresh
    info = corpus_info(client)
    assert info["systems"] == ["recommended", "bm25"]
    assert info["default_system"] == "bm25"
    [prep] = info["preparing"]
    assert prep["system"] == "recommended" and prep["total"] == info["provisions"]
    assert 0 <= prep["done"] < prep["total"] and prep["error"] is None

    answer = client.get("/v1/demo/search", params={"q": QUESTION}).json()
    assert answer["system"] == "bm25" and answer["hits"]

    asked = client.get("/v1/demo/search", params={"q": QUESTION, "system": "recommended"})
    assert asked.status_code == 503 and int(asked.headers["retry-after"]) > 0
    error = asked.json()["error"]
    assert error["code"] == "preparing" and error["valid"] == ["bm25"] and error["field"] == "system"
    assert "being built" in error["message"]

    page = client.get("/", params={"q": QUESTION, "corpus": "demo"})
    assert page.status_code == 200
    assert "recommended over demo is being built" in page.text and "answers come from bm25" in page.text
    # the page a newcomer opens first: its form asks the system that answers now, not the first
    # listed (whose refusal would be the first answer they see)
    empty = client.get("/").text
    assert '<option value="bm25" selected>' in empty and '<option value="recommended" selected>' not in empty
    assert '<option value="bm25" selected>' in client.get("/", params={"corpus": "nowhere", "q": "x"}).text
    log = srv.log.read_text()
    assert "recommended over demo takes longer" in log


@pytest.mark.slow
def test_once_built_recommended_answers_and_a_restart_finds_it_cached(fresh):
    srv, client, cache = fresh
    deadline = time.time() + 900
    while corpus_info(client)["preparing"] and time.time() < deadline:
        assert not corpus_info(client)["preparing"][0]["error"]
        time.sleep(2)
    info = corpus_info(client)
    assert info["preparing"] == [] and info["default_system"] == "recommended"
    answer = client.get("/v1/demo/search", params={"q": QUESTION}).json()
    assert answer["system"] == "recommended" and answer["hits"]
    # the newcomer's question (issue 30): theft, art. 278, among the first ten (word families)
    assert "kk::278" in [hit["id"] for hit in answer["hits"][:10]]
    assert "recommended over demo is ready" in srv.log.read_text()
    page = client.get("/", params={"q": QUESTION, "corpus": "demo"}).text
    assert "is being built" not in page and "(recommended)" in page
    srv.stop()

    again = Server(["demo"], cache, default_systems=True)  # the same cache: nothing to encode
    try:
        with httpx.Client(base_url=again.url, timeout=60) as c:
            info = corpus_info(c)
            assert info["preparing"] == [] and info["default_system"] == "recommended"
            hits = c.get("/v1/demo/search", params={"q": QUESTION}).json()
            assert hits["system"] == "recommended"
            assert [h["id"] for h in hits["hits"]] == [h["id"] for h in answer["hits"]]
    finally:
        again.stop()
