"""The MCP server as an agent meets it: ``lexir mcp demo`` over stdio, driven by the SDK's own client."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("fastapi")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def run_session(tmp_path, script, corpora=("demo",), timeout=180):
    """Start ``lexir mcp CORPORA`` as a subprocess, initialise a client session, run ``script(session)``."""
    env = {"PYTHONPATH": str(REPO / "src"), "LEXIR_CACHE": str(tmp_path / "cache"),
           **{k: os.environ[k] for k in ("LEXIR_DATA", "PATH", "HOME") if k in os.environ}}
    params = StdioServerParameters(command=sys.executable, args=["-m", "lexir.cli.main", "mcp", *corpora, "--system", "bm25"],
                                   env=env, cwd=str(REPO))

    async def main():
        with open(tmp_path / "mcp-stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    session_instructions[:] = [init.instructions]
                    return await script(session)

    return asyncio.run(asyncio.wait_for(main(), timeout))


session_instructions: list[str | None] = [None]  # the last session's server instructions


def payload(result) -> dict:
    assert result.content and result.content[0].type == "text"
    return json.loads(result.content[0].text)


def test_tools_over_stdio(tmp_path):
    async def script(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        out = {"tools": tools}
        out["corpora"] = payload(await session.call_tool("list_corpora", {}))
        out["search"] = payload(await session.call_tool("search_statutes",
                                                        {"query": "Kto zabija człowieka podlega karze", "k": 3}))
        out["provision"] = payload(await session.call_tool("get_provision", {"id": "kk::148",
                                                                              "context": "parent,toc"}))
        long_id = "kk::115"  # the definitions article: longer than one page
        first = payload(await session.call_tool("get_provision", {"id": long_id}))
        pages = [first]
        while pages[-1]["next_cursor"]:
            pages.append(payload(await session.call_tool("get_provision",
                                                         {"id": long_id, "cursor": pages[-1]["next_cursor"]})))
        out["pages"] = pages
        out["cite"] = payload(await session.call_tool("resolve_citations",
                                                      {"text": "Zob. art. 148 § 2 k.k. i art. 415 k.c.",
                                                       "jurisdiction": "pl"}))
        out["verify"] = payload(await session.call_tool("verify_quote", {
            "quote": "kto zabija człowieka", "id_or_citation": "art. 148 § 1 k.k."}))
        out["bad_id"] = await session.call_tool("get_provision", {"id": "../../etc/passwd"})
        out["by_citation"] = payload(await session.call_tool("get_provision", {"citation": "art. 148 § 2 k.k."}))
        out["citation_unknown"] = await session.call_tool("get_provision", {"citation": "art. 9999 k.k."})
        out["id_and_citation"] = await session.call_tool("get_provision", {"id": "kk::148", "citation": "art. 1 k.k."})
        out["neither"] = await session.call_tool("get_provision", {})
        out["instructions"] = session_instructions[0]
        out["bad_k"] = await session.call_tool("search_statutes", {"query": "x", "k": 500})
        out["bad_corpus"] = await session.call_tool("search_statutes", {"query": "x", "corpus": "nope"})
        return out

    out = run_session(tmp_path, script)
    # the history tools only where a served corpus has a history (test_mcp_history.py): not on the demo
    assert set(out["tools"]) == {"search_statutes", "get_provision", "resolve_citations", "verify_quote",
                                 "list_corpora"}
    assert set(out["tools"]["search_statutes"].input_schema["properties"]) == {"query", "corpus", "k", "system",
                                                                                   "as_of"}
    assert out["corpora"]["corpora"][0]["name"] == "demo"
    hits = out["search"]["hits"]
    assert hits[0]["id"] == "kk::148" and hits[0]["citation"] == "art. 148 k.k."
    assert "«zabija»" in hits[0]["snippet"] and "text" not in hits[0] and len(hits) == 3
    prov = out["provision"]
    assert prov["citation"] == "art. 148 k.k." and prov["path"] == "Kodeks karny > art. 148"
    assert prov["parent"]["id"] == "kk" and prov["next_cursor"] is None
    # the Kodeks karny has 458 articles: 50 of them, around art. 148, and the count
    assert len(prov["toc"]) == 50 and prov["toc_total"] == 458
    assert "kk::148" in [t["id"] for t in prov["toc"]] and prov["toc_from"] > 0
    pages = out["pages"]
    assert len(pages) > 1  # paged, and the pages put together are the whole text
    assert pages[0]["total_chars"] == sum(len(p["text"]) for p in pages)
    assert [p["text_start"] for p in pages] == [sum(len(q["text"]) for q in pages[:i]) for i in range(len(pages))]
    assert [c["id"] for c in out["cite"]["citations"]] == ["kk::148/par:2", "kc::415"]
    assert [c["ids"] for c in out["cite"]["citations"]] == [["kk::148/par:2"], ["kc::415"]]
    assert out["cite"]["citations"][0]["citations"] == ["art. 148 § 2 k.k."]
    assert out["cite"]["citations"][1]["in_corpora"] == []  # the demo holds only the Kodeks karny
    assert out["verify"]["verified"] and out["verify"]["match"] == "exact"
    by_citation = out["by_citation"]  # an agent that holds a citation needs no resolve_citations first
    assert by_citation["id"] == "kk::148/par:2" and by_citation["citation"] == "art. 148 § 2 k.k."
    assert by_citation["text"].startswith("Kto zabija człowieka") or "zabija" in by_citation["text"]
    assert "9999" in tool_error(out["citation_unknown"])["error"]
    for name in ("id_and_citation", "neither"):
        assert out[name].is_error and tool_error(out[name])["valid"] == ["id", "citation"]
    # the registered legal orders, not a list written once
    assert "Poland" in out["instructions"] and "Austria" in out["instructions"] and "France" in out["instructions"]
    for name in ("bad_id", "bad_k", "bad_corpus"):
        result = out[name]
        assert result.is_error, name
        error = tool_error(result)
        assert error["retryable"] is False and error["error"]
    assert tool_error(out["bad_corpus"])["valid"] == ["demo"]
    assert "kk" in tool_error(out["bad_id"])["valid"]


@pytest.mark.slow
def test_the_law_as_it_stood_over_mcp(tmp_path):
    """as_of on a corpus with a history: BGB § 1631d was inserted on 2013-01-11."""
    query = "Beschneidung des nicht einsichts- und urteilsfähigen männlichen Kindes"

    async def script(session):
        out = {"corpora": payload(await session.call_tool("list_corpora", {}))}
        for day in ("2012-09-01", "2013-06-01"):
            out[f"search {day}"] = payload(await session.call_tool(
                "search_statutes", {"query": query, "k": 20, "as_of": day}))
        out["in force"] = payload(await session.call_tool("get_provision",
                                                          {"id": "BGB::1631d", "as_of": "2013-06-01"}))
        out["not yet"] = await session.call_tool("get_provision", {"id": "BGB::1631d", "as_of": "2012-09-01"})
        out["too early"] = await session.call_tool("search_statutes", {"query": query, "as_of": "2010-01-01"})
        return out

    out = run_session(tmp_path, script, corpora=("de-gesetze-history",), timeout=400)
    assert out["corpora"]["corpora"][0]["dates"]["first"] == "2012-08-02"
    assert out["search 2013-06-01"]["hits"][0]["id"] == "BGB::1631d"
    assert "BGB::1631d" not in [h["id"] for h in out["search 2012-09-01"]["hits"]]
    assert "Beschneidung" in out["in force"]["text"]
    assert out["not yet"].is_error
    assert "in force from 2013-01-11" in tool_error(out["not yet"])["error"]
    assert out["too early"].is_error and "the first is 2012-08-02" in tool_error(out["too early"])["error"]


def tool_error(result) -> dict:
    """The JSON reason of a tool error: the whole text is JSON (no 'Error executing tool NAME: '
    before it, as the SDK writes a ToolError)."""
    assert result.is_error
    return json.loads(result.content[0].text)


def test_streamable_http(tmp_path):
    """``lexir mcp --http``: the same tools over streamable HTTP on a loopback port."""
    import socket
    import subprocess
    import time

    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "LEXIR_CACHE": str(tmp_path / "cache")}
    log = open(tmp_path / "mcp-http.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "lexir.cli.main", "mcp", "demo", "--system", "bm25", "--http", "--port", str(port)],
                            env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            assert proc.poll() is None, (tmp_path / "mcp-http.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)

        async def main():
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return payload(await session.call_tool("search_statutes", {"query": "kradzież rzeczy", "k": 2}))

        result = asyncio.run(asyncio.wait_for(main(), 60))
        assert len(result["hits"]) == 2 and result["hits"][0]["id"].startswith("kk::")
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
