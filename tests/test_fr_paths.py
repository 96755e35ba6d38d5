"""Every path on French law (real data): the dataset, search, the page in Chromium, the MCP server
through the SDK's client, ``lexir show`` / ``cite``, and the codes through time with the 2016
renumbering (art. 1382 -> 1240)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO

import lexir

DATA = Path(os.environ.get("LEXIR_DATA") or REPO.parent / "shared" / "data")
pytestmark = pytest.mark.skipif(not (DATA / "fr" / "codes.tar.xz").is_file(), reason="no ../shared/data/fr")
TORT = "Tout fait quelconque de l'homme, qui cause à autrui un dommage"


@pytest.fixture(scope="module")
def codes():
    return lexir.load("fr-codes")


def test_fr_codes_is_the_68_codes_and_the_code_du_travail(codes):
    import csv

    with open(DATA / "fr" / "codes.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    listed = sum(int(r["articles"]) if r["format"] == "headings" else int(r["plain_article_lines"]) for r in rows)
    assert codes.jurisdiction == "fr" and codes.language == "fr"
    assert len(codes.acts) == len(rows) + 1 and "Ctrav" in codes.acts
    parsed = len(codes) - len(codes.acts["Ctrav"].articles)
    # every article heading of codes.tsv but three: a heading without a number (reported in
    # parse_errors with its file and line) and two "Article abrogé." lines that are text
    assert listed - parsed == 3, (listed, parsed)
    (missing,) = codes.parse_errors
    assert missing.path.startswith("codes/LEGITEXT") and missing.line > 0 and "number" in missing.message
    assert len(codes.acts["Ctrav"].articles) == 11545
    assert TORT in codes["Cciv::1240"].text


def test_french_analysis_and_search(codes):
    from lexir.analysis.analyzer import Analyzer

    terms = Analyzer.create("fr", "stem")("L'employeur qui licencie un salarié jusqu'à l'entretien préalable")
    assert "l" not in terms and "qu" not in terms and "jusqu" not in terms  # elided articles and conjunctions
    assert Analyzer.create("fr", "stem")("licenciement")[0] == Analyzer.create("fr", "stem")("licenciements")[0]
    bm25 = lexir.build(codes, "bm25(mode=stem)")
    hits = [doc for doc, _ in bm25.search("l'entretien préalable avant le licenciement du salarié", k=10)]
    assert "Ctrav::L1232-2" in hits  # convocation à l'entretien préalable


def test_cli_cite_and_show(codes):
    from typer.testing import CliRunner

    from lexir.cli.main import app

    runner = CliRunner()
    text = "Vu l'article 1240 du code civil et l'art. L. 1232-1 C. trav. ; la loi n° 89-462 du 6 juillet 1989.\n"
    rows = [json.loads(line) for line in runner.invoke(app, ["cite", "--jurisdiction", "fr"], input=text).output.splitlines()]
    assert [r["id"] for r in rows][:2] == ["Cciv::1240", "Ctrav::L1232-1"]
    assert all(r["id"] is None or r["act"] in codes.acts for r in rows)  # the 1989 law is no code article
    shown = runner.invoke(app, ["show", "fr-codes", "Cciv::1240"])
    assert shown.exit_code == 0, shown.output
    assert "art. 1240 C. civ." in shown.output and "Sous-titre II" in shown.output and TORT in shown.output


def test_the_renumbering_through_time():
    """The 2016 contract-law reform moved tort from art. 1382 to 1240; 1382 now speaks of evidence."""
    before = lexir.load("fr-codes-history@2015-06-01")
    after = lexir.load("fr-codes-history@2017-01-01")
    assert before.jurisdiction == "fr" and TORT in before["Cciv::1382"].text
    assert TORT in after["Cciv::1240"].text and TORT not in after["Cciv::1382"].text
    assert "présomptions" in after["Cciv::1382"].text.lower()
    assert "Cciv::1240" not in before or TORT not in before["Cciv::1240"].text


@pytest.mark.slow
def test_page_and_mcp_on_fr_codes(tmp_path_factory, tmp_path):
    """``lexir serve fr-codes``: the page in Debian's Chromium (search, a provision with its
    breadcrumbs); ``lexir mcp fr-codes`` through the SDK's stdio client."""
    pytest.importorskip("fastapi")
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = next((p for p in (os.environ.get("LEXIR_CHROMIUM"), shutil.which("chromium")) if p), None)
    if chromium is None:
        pytest.skip("no chromium binary")
    from test_mcp import payload, run_session
    from test_service import Server

    srv = Server(["fr-codes", "--system", "bm25"], tmp_path_factory.mktemp("serve-fr"))
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.goto(srv.url + "/")
            page.fill("input[name=q]", "réparer le dommage causé à autrui par sa faute")
            page.click("button[type=submit]")
            page.wait_for_selector("ol.hits li.hit")
            opened = page.locator("li.hit a.open").all_inner_texts()
            assert "art. 1240 C. civ." in opened, opened
            folder = Path(os.environ.get("LEXIR_SCREENSHOT_DIR") or tmp_path)
            page.screenshot(path=str(folder / "page-fr-search.png"))
            page.goto(srv.url + "/p/fr-codes/Cciv::1240")
            page.wait_for_selector("article.provision")
            assert page.inner_text("#citation") == "art. 1240 C. civ."
            assert "Sous-titre II" in page.inner_text("body") and TORT in page.inner_text(".text")
            page.screenshot(path=str(folder / "page-fr-provision.png"))
            # the citations in a provision's text are marked and lead to the cited provision
            page.goto(srv.url + "/p/fr-codes/Cciv::121")
            page.wait_for_selector("article.provision .text cite")
            cited = page.locator(".text cite[data-id='Cciv::120'] a").first
            assert cited.inner_text() == "l'article 120"
            cited.click()
            page.wait_for_selector("article.provision")
            assert page.inner_text("#citation") == "art. 120 C. civ."
            browser.close()
    finally:
        srv.stop()

    async def script(session):
        out = {"search": payload(await session.call_tool("search_statutes", {
            "query": "réparer le dommage causé à autrui par sa faute", "k": 10}))}
        out["provision"] = payload(await session.call_tool("get_provision", {"id": "Cciv::1240"}))
        out["cite"] = payload(await session.call_tool("resolve_citations", {
            "text": "l'article L. 1232-1 du code du travail", "jurisdiction": "fr"}))
        return out

    out = run_session(tmp_path, script, corpora=("fr-codes",), timeout=400)
    assert "Cciv::1240" in [h["id"] for h in out["search"]["hits"]], out["search"]
    assert out["provision"]["citation"] == "art. 1240 C. civ." and TORT in out["provision"]["text"]
    assert out["cite"]["citations"][0]["id"] == "Ctrav::L1232-1"
    assert out["cite"]["citations"][0]["in_corpora"] == ["fr-codes"]
