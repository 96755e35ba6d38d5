"""A provision's versions and the diff between two dates, on de-gesetze-history (real data): as MCP
tools (``lexir mcp`` over stdio, driven by the SDK's own client) and on the HTTP API (a real
``lexir serve`` on loopback). What changed a version is checked against versions.tsv itself; the
diff against ``lexir diff``'s output."""

from __future__ import annotations

import asyncio
import csv
import os
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("mcp")
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from test_mcp import payload, tool_error  # noqa: E402
from test_service import REPO, Server  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

import lexir  # noqa: E402
from lexir.jurisdictions.de.history import version_date  # noqa: E402

pytestmark = pytest.mark.slow  # the history of 36 laws is parsed once per session (about a minute)


def session_cache(tmp_path_factory) -> Path:
    """conftest's per-session cache: the MCP and HTTP servers share the parsed history with the tests."""
    return tmp_path_factory.getbasetemp() / "lexir-cache"


def messages(data_dir: Path, slug: str) -> dict[str, str]:
    """versions.tsv's message of each version date of one law (a day's last row, as the history
    keeps): the commit date, or the later date of the last amending act the member's header names."""
    folder = data_dir / "de" / "history"
    with open(folder / "versions.tsv", encoding="utf-8", newline="") as fh:
        rows = [row for row in list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))[1:] if row and row[0] == slug]
    with tarfile.open(folder / "gesetze_history.tar.xz") as tar:
        def day(row: list[str]) -> str:
            text = tar.extractfile(f"{slug}/{row[2]}_{row[3][:8]}.md").read().decode("utf-8")
            return version_date(row[2], text)

        return {day(row): row[6] for row in rows}


def words(text: str) -> str:
    return " ".join(text.split())


def cli_diff(data_dir: Path, pid: str, old: str, new: str) -> str:
    """``lexir diff``'s words (the console wraps long lines at 200 columns)."""
    from lexir.cli.main import app

    result = CliRunner().invoke(app, ["diff", "de-gesetze-history", pid, "--from", old, "--to", new,
                                      "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    return words(result.output.split("\n", 1)[1])  # after the "ID: version -> version" line


@pytest.fixture(scope="module")
def mcp_out(tmp_path_factory, data_dir):
    """One ``lexir mcp de-gesetze-history demo`` session asking everything the tests check."""
    env = {"PYTHONPATH": str(REPO / "src"), "LEXIR_CACHE": str(session_cache(tmp_path_factory)),
           "LEXIR_DATA": str(data_dir), **{k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}}
    params = StdioServerParameters(command=sys.executable, args=["-m", "lexir.cli.main", "mcp",
                                                                 "de-gesetze-history", "demo", "--system", "bm25"], env=env, cwd=str(REPO))
    log = tmp_path_factory.mktemp("mcp-history") / "stderr.log"

    async def script(session):
        call = session.call_tool
        out = {"tools": {t.name: t for t in (await session.list_tools()).tools}}
        for pid in ("BGB::1631d", "BGB::312g", "StGB::43a"):
            out[pid] = payload(await call("provision_history", {"id": pid}))
        out["diff 312g"] = payload(await call("diff_provision", {"id": "BGB::312g", "from_date": "2012-08-02",
                                                                 "to_date": "2012-08-06"}))
        out["diff 1631d"] = payload(await call("diff_provision", {"id": "BGB::1631d", "from_date": "2012-09-01",
                                                                  "to_date": "2013-06-01"}))
        out["same"] = payload(await call("diff_provision", {"id": "BGB::823", "from_date": "2012-08-02",
                                                            "to_date": "2013-01-11"}))
        pages = [payload(await call("diff_provision", {"id": "BGB::309", "from_date": "2012-08-02",
                                                       "to_date": "2022-03-03"}))]
        while pages[-1]["next_cursor"]:
            pages.append(payload(await call("diff_provision", {"id": "BGB::309", "from_date": "2012-08-02",
                                                               "to_date": "2022-03-03",
                                                               "cursor": pages[-1]["next_cursor"]})))
        out["pages"] = pages
        for cited in ("§ 651 BGB", "§ 312b Abs. 5 BGB"):  # written citations, read in the law of 2013-06-01
            out[cited] = payload(await call("get_provision", {"citation": cited, "as_of": "2013-06-01"}))
        out["651 by id"] = payload(await call("get_provision", {"id": "BGB::651", "as_of": "2013-06-01"}))
        out["312b/abs:5 by id"] = payload(await call("get_provision", {"id": "BGB::312b/abs:5", "as_of": "2013-06-01"}))
        out["cited today"] = await call("get_provision", {"citation": "§ 651 BGB"})
        out["unknown"] = await call("provision_history", {"id": "BGB::99999"})
        out["no history"] = await call("provision_history", {"id": "kk::148", "corpus": "demo"})
        out["bad date"] = await call("diff_provision", {"id": "BGB::823", "from_date": "2012-13-01",
                                                        "to_date": "2013-01-01"})
        out["too early"] = await call("diff_provision", {"id": "BGB::823", "from_date": "2010-01-01",
                                                         "to_date": "2013-01-01"})
        out["neither"] = await call("diff_provision", {"id": "BGB::1631d", "from_date": "2012-08-02",
                                                       "to_date": "2012-09-01"})
        out["bad cursor"] = await call("diff_provision", {"id": "BGB::309", "from_date": "2012-08-02",
                                                          "to_date": "2022-03-03", "cursor": "x"})
        return out

    async def main():
        with open(log, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await script(session)

    return asyncio.run(asyncio.wait_for(main(), 600))


@pytest.fixture(scope="module")
def server(tmp_path_factory, data_dir):
    srv = Server(["de-gesetze-history", "demo"], session_cache(tmp_path_factory), env={"LEXIR_DATA": str(data_dir)})
    yield srv
    srv.stop()


def test_the_tools_are_listed_with_their_arguments(mcp_out):
    tools = mcp_out["tools"]
    assert set(tools["provision_history"].input_schema["properties"]) == {"id", "corpus"}
    assert set(tools["diff_provision"].input_schema["properties"]) == {"id", "from_date", "to_date", "corpus", "cursor"}


def test_provision_history_lists_versions_and_what_changed_them(mcp_out, data_dir):
    history = lexir.load("de-gesetze-history")
    bgb, stgb = messages(data_dir, "bgb"), messages(data_dir, "stgb")
    for pid, said in (("BGB::1631d", bgb), ("BGB::312g", bgb), ("StGB::43a", stgb)):
        got = mcp_out[pid]
        want = history.versions(pid)
        assert [(v["version"], v["valid_from"], v["valid_to"], v["title"]) for v in got["versions"]] == \
            [(v.version, v.valid_from, v.valid_to, v.title) for v in want]
        for v in got["versions"]:
            assert v["changed_by"] == (None if v["valid_from"] == min(said) else said[v["valid_from"]])
            assert v["commit"] and v["commit"] in {w.source.rsplit("_", 1)[-1][:8] for w in want}
    (only,) = mcp_out["BGB::1631d"]["versions"]  # § 1631d BGB: inserted on 2013-01-11, still in force
    assert only["valid_from"] == "2013-01-11" and only["valid_to"] is None and "Beschneidung" in only["changed_by"]
    last = mcp_out["StGB::43a"]["versions"][-1]  # repealed: no version follows, and what ended it is named
    assert last["valid_to"] is not None and last["ended_by"] == stgb[last["valid_to"]]
    assert all(v["ended_by"] is None for v in mcp_out["BGB::312g"]["versions"])


def test_diff_provision_is_lexir_diffs(mcp_out, data_dir):
    diff = mcp_out["diff 312g"]
    assert diff["changed"] and "[-eines Tele- oder Mediendienstes-] {+der" in diff["diff"]
    assert diff["before"]["version"] == "BGB::312g@2012-08-02" and diff["after"]["version"] == "BGB::312g@2012-08-06"
    assert words(diff["diff"]) == cli_diff(data_dir, "BGB::312g", "2012-08-02", "2012-08-06")
    inserted = mcp_out["diff 1631d"]  # not in force on the first date: all of it added
    assert inserted["before"] is None and inserted["diff"].startswith("{+") and inserted["diff"].endswith("+}")
    assert not mcp_out["same"]["changed"] and mcp_out["same"]["diff"] == ""
    pages = mcp_out["pages"]
    assert len(pages) > 1 and pages[0]["total_chars"] == sum(len(p["diff"]) for p in pages)
    assert words("".join(p["diff"] for p in pages)) == cli_diff(data_dir, "BGB::309", "2012-08-02", "2022-03-03")


def test_get_provision_reads_a_citation_in_the_law_of_its_date(mcp_out, data_dir):
    # § 651 BGB (Werklieferungsvertrag until 2018) is no § of today's BGB, and § 312b of 2013 had an
    # Abs. 5 that the 2014 reform removed: as of 2013-06-01 both resolve, as the same ids do.
    history = lexir.load("de-gesetze-history")
    assert "BGB::651" not in history.corpus and "BGB::651" in history.as_of("2013-06-01")
    assert mcp_out["cited today"].is_error and "names no provision" in tool_error(mcp_out["cited today"])["error"]
    by_citation, by_id = mcp_out["§ 651 BGB"], mcp_out["651 by id"]
    assert by_citation["id"] == "BGB::651" and by_citation == by_id
    assert by_citation["text"].startswith(history.version("BGB::651", "2013-06-01").text[:200])
    abs5 = mcp_out["§ 312b Abs. 5 BGB"]
    assert abs5["id"] == "BGB::312b/abs:5" and abs5 == mcp_out["312b/abs:5 by id"]
    assert abs5["text"] == history.version("BGB::312b/abs:5", "2013-06-01").text


def test_refusals_are_tool_errors_that_say_why(mcp_out):
    for name in ("unknown", "no history", "bad date", "too early", "neither", "bad cursor"):
        assert mcp_out[name].is_error, name
        assert tool_error(mcp_out[name])["retryable"] is False
    assert "nearest" in tool_error(mcp_out["unknown"])["error"]
    assert tool_error(mcp_out["no history"])["valid"] == ["de-gesetze-history"]
    assert "not a date" in tool_error(mcp_out["bad date"])["error"]
    assert "the first is 2012-08-02" in tool_error(mcp_out["too early"])["error"]
    assert "in force on neither" in tool_error(mcp_out["neither"])["error"]


def test_the_same_over_http(server, mcp_out):
    with httpx.Client(base_url=server.url, timeout=240) as c:
        got = c.get("/v1/de-gesetze-history/history/BGB::312g")
        assert got.status_code == 200 and got.json() == mcp_out["BGB::312g"]
        diff = c.get("/v1/de-gesetze-history/diff/BGB::312g", params={"from": "2012-08-02", "to": "2012-08-06"})
        assert diff.status_code == 200
        paging = ("diff_start", "total_chars", "next_cursor")  # MCP pages long diffs; HTTP sends them whole
        assert diff.json() == {k: v for k, v in mcp_out["diff 312g"].items() if k not in paging}
        valid = c.post("/v1/de-gesetze-history/validity", json={"ids": ["BGB::1631d", "BGB::312g", "BGB::nope"],
                                                                 "as_of": "2013-06-01"}).json()
        assert valid["versions"]["BGB::1631d"]["valid_from"] == "2013-01-11"
        assert valid["versions"]["BGB::312g"]["version"] == "BGB::312g@2012-08-06" and valid["versions"]["BGB::nope"] is None
        assert set(valid["not_in_force"]) == {"BGB::nope"}
        # the 2012 ZPO holds §§ 802a-802j as "(zukünftig in Kraft)": not in force, with the day they are
        early = c.post("/v1/de-gesetze-history/validity", json={"ids": ["ZPO::802a", "ZPO::802k/abs:1", "ZPO::802k"],
                                                                 "as_of": "2012-09-01"}).json()
        assert early["versions"]["ZPO::802a"] is None and early["versions"]["ZPO::802k/abs:1"] is None
        assert early["not_in_force"]["ZPO::802a"] == "ZPO::802a is not in force on 2012-09-01; in force from 2013-01-11"
        assert early["versions"]["ZPO::802k"]["valid_from"] == "2012-08-02"  # its Abs. 3-4 were
        refused = {
            "unknown": (c.get("/v1/de-gesetze-history/history/BGB::99999"), 404, "id"),
            "no history": (c.get("/v1/demo/history/kk::148"), 400, "corpus"),
            "bad date": (c.get("/v1/de-gesetze-history/diff/BGB::823", params={"from": "2012-02-30", "to": "2013-01-01"}),
                         400, "from"),
            "no to": (c.get("/v1/de-gesetze-history/diff/BGB::823", params={"from": "2012-08-02"}), 400, "to"),
            "reversed": (c.get("/v1/de-gesetze-history/diff/BGB::312g", params={"from": "2012-08-06", "to": "2012-08-02"}),
                         400, "from"),
            "basic date": (c.get("/v1/de-gesetze-history/provisions/BGB::823", params={"as_of": "20130601"}), 400, "as_of"),
            "too early": (c.get("/v1/de-gesetze-history/diff/BGB::823", params={"from": "2012-08-02", "to": "1999-01-01"}),
                          400, "to"),
            "neither": (c.get("/v1/de-gesetze-history/diff/BGB::1631d", params={"from": "2012-08-02", "to": "2012-09-01"}),
                        404, "id"),
            "bad body": (c.post("/v1/de-gesetze-history/validity", content=b"{nope",
                                headers={"content-type": "application/json"}), 400, None),
            "bad ids": (c.post("/v1/de-gesetze-history/validity", json={"ids": "BGB::823"}), 400, "ids"),
            "bad as_of": (c.post("/v1/de-gesetze-history/validity", json={"ids": [], "as_of": 20130601}), 400, "as_of"),
            "unknown corpus": (c.get("/v1/nope/history/BGB::823"), 404, "corpus"),
        }
        for name, (response, status, field) in refused.items():
            assert response.status_code == status, (name, response.text)
            error = response.json()["error"]
            assert error["message"] and error.get("field") == field, (name, error)
            assert str(REPO.parent) not in error["message"], (name, error)  # no file path
        schema = c.get("/openapi.json").json()["paths"]
        assert {"/v1/{corpus}/history/{unit_id}", "/v1/{corpus}/diff/{unit_id}", "/v1/{corpus}/validity"} <= set(schema)
