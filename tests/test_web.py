"""The web page in a real browser: Debian's Chromium driven by Playwright, against ``lexir serve``.

Skipped (not failed) where Playwright or a Chromium binary is missing. Set
``LEXIR_SCREENSHOT_DIR=docs`` to keep the screenshots (docs/service.md shows one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
sync_api = pytest.importorskip("playwright.sync_api")

from test_service import REPO, Server  # noqa: E402

CHROMIUM = next((p for p in (os.environ.get("LEXIR_CHROMIUM"), shutil.which("chromium"),
                             shutil.which("chromium-browser")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    cache = tmp_path_factory.mktemp("web-cache")
    srv = Server(["pl-codes"], cache)
    yield srv, cache
    srv.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def shot(page, tmp_path, name: str) -> None:
    folder = Path(os.environ.get("LEXIR_SCREENSHOT_DIR") or tmp_path)
    if not folder.is_absolute():
        folder = REPO / folder
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=False)


def test_search_read_follow_mark_export(site, browser, tmp_path):
    srv, cache = site
    page = browser.new_page(viewport={"width": 1280, "height": 860})
    # search: the box and the corpus picker, submitted like a reader would
    page.goto(srv.url + "/")
    page.fill("input[name=q]", "Kto zabija człowieka, podlega karze")
    page.select_option("select[name=corpus]", "pl-codes")
    page.click("button[type=submit]")
    page.wait_for_selector("ol.hits li.hit")
    assert "q=Kto+zabija" in page.url or "q=Kto%20zabija" in page.url  # a search is a link
    first = page.locator("li.hit").first
    assert first.locator("a.open").inner_text() == "art. 148 k.k."
    assert "Kodeks karny" in first.locator(".crumbs").inner_text()
    assert first.locator(".snippet mark").count() >= 2
    shot(page, tmp_path, "page-search")

    # mark the first result relevant and the second not
    first.locator("button.mark[data-grade='1']").click()
    sync_api.expect(first.locator(".saved")).to_have_text("saved")
    second = page.locator("li.hit").nth(1)
    second_id = second.get_attribute("data-id")
    second.locator("button.mark[data-grade='0']").click()
    sync_api.expect(second.locator(".saved")).to_have_text("saved")

    # open the provision: its act's table of contents with it highlighted, prev/next, cited-by
    first.locator("a.open").click()
    page.wait_for_selector("article.provision")
    assert page.inner_text("#citation") == "art. 148 k.k."
    assert page.inner_text(".toc li.current") == "art. 148 k.k."
    assert page.locator("a[rel=prev]").inner_text() == "← art. 147 k.k."
    assert page.locator("a[rel=next]").inner_text() == "art. 148a k.k. →"
    assert "Kto zabija człowieka" in page.inner_text(".text")
    page.click("button.copy")
    sync_api.expect(page.locator("button.copy")).to_have_text("Copied")
    shot(page, tmp_path, "page-provision")

    # follow a cited-by link: the citing unit's page, whose text names art. 148
    cited_by = page.locator(".cited-by a").first
    target = cited_by.inner_text()
    cited_by.click()
    page.wait_for_selector("article.provision")
    assert page.inner_text("#citation") == target
    assert "148" in page.inner_text(".text")

    # export: the page's link and the command give the same TREC qrels
    page.goto(srv.url + "/judgements/qrels")
    exported = page.inner_text("body").strip().splitlines()
    assert len(exported) == 2
    by_doc = {line.split()[2]: line.split() for line in exported}
    assert by_doc["kk::148"][3] == "1" and by_doc[second_id][3] == "0"
    assert by_doc["kk::148"][0] == by_doc[second_id][0] and by_doc["kk::148"][1] == "0"
    out = tmp_path / "qrels.txt"
    topics = tmp_path / "topics.tsv"
    subprocess.run([sys.executable, "-m", "lexir.cli.main", "qrels", "export", "-o", str(out), "--topics",
                    str(topics)], check=True, env={**os.environ, "LEXIR_CACHE": str(cache),
                                                   "PYTHONPATH": str(REPO / "src")}, cwd=REPO)
    assert out.read_text().strip().splitlines() == exported
    assert topics.read_text() == f"{by_doc['kk::148'][0]}\tKto zabija człowieka, podlega karze\n"
    page.close()


def test_unknown_provision_page_is_a_404_page(site, browser):
    srv, _ = site
    page = browser.new_page()
    response = page.goto(srv.url + "/p/pl-codes/kk::99999")
    assert response.status == 404
    assert "no provision" in page.inner_text(".error")
    page.close()
