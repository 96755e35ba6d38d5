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
    # the question's words marked in the text, as the snippet marked them
    marked = {m.casefold() for m in page.locator(".text mark").all_inner_texts()}
    assert {"zabija", "człowieka"} <= marked and "podlega" in marked
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


def test_phone_keyboard_back_and_a_lost_connection(site, browser, tmp_path):
    """What an audit in Chromium found wrong: at 390 px the form wraps and nothing scrolls
    sideways; Back shows the mark made since (no page from the browser's cache); a mark that cannot
    be sent says so; the interface is English and the statute text in its own language; the act's
    contents link without the question, which goes along when one is followed; no console error."""
    srv, _ = site
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    errors = []
    phone.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    phone.on("pageerror", lambda e: errors.append(str(e)))
    question = "kradzież rzeczy ruchomej"
    phone.goto(srv.url + "/?corpus=pl-codes&q=" + question.replace(" ", "+"))
    phone.wait_for_selector("ol.hits li.hit")
    assert phone.evaluate("document.scrollingElement.scrollWidth") <= 390
    box = phone.locator("button[type=submit]").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert phone.get_attribute("html", "lang") == "en" and phone.get_attribute("ol.hits", "lang") == "pl"
    assert phone.evaluate("document.activeElement.tagName") != "INPUT"  # a results page does not grab the focus
    assert phone.locator("a.skip").get_attribute("href") == "#main"
    shot(phone, tmp_path, "page-phone")

    first = phone.locator("li.hit").first
    first.locator("button.mark[data-grade='1']").click()
    sync_api.expect(first.locator("button.mark[data-grade='1']")).to_have_attribute("aria-pressed", "true")
    first.locator("a.open").click()
    phone.wait_for_selector("article.provision")
    assert phone.evaluate("document.scrollingElement.scrollWidth") <= 390
    assert phone.get_attribute("article.provision", "lang") == "pl"
    assert all("q=" not in (href or "") for href in phone.locator(".toc a").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))"))
    phone.locator(".provision button.mark[data-grade='0']").click()  # changed my mind on the page
    sync_api.expect(phone.locator(".provision .saved")).to_have_text("saved")
    phone.go_back()
    phone.wait_for_selector("ol.hits li.hit")
    again = phone.locator("li.hit").first
    sync_api.expect(again.locator("button.mark[data-grade='0']")).to_have_attribute("aria-pressed", "true")
    assert again.locator("button.mark[data-grade='1']").get_attribute("aria-pressed") == "false"

    # a link of the act's contents followed: the question goes along (the next page can be marked)
    again.locator("a.open").click()
    phone.wait_for_selector("article.provision")
    phone.locator(".toc li:not(.current) a").nth(3).click()
    phone.wait_for_selector("article.provision .marks")
    assert "q=kradzie" in phone.url

    assert errors == [], errors  # no favicon 404, no script error on any page so far

    # the server out of reach: the mark says it was not saved (the browser logs the failed request
    # itself; no script error)
    phone.route("**/judgements", lambda route: route.abort())
    phone.locator(".provision button.mark[data-grade='1']").click()
    sync_api.expect(phone.locator(".provision .saved")).to_have_text("not saved (no connection to the server)")
    assert [e for e in errors if "ERR_FAILED" not in e] == [], errors
    phone.close()


def test_a_provision_page_refuses_a_question_longer_than_a_search_takes(site, browser):
    srv, _ = site
    page = browser.new_page()
    response = page.goto(srv.url + "/p/pl-codes/kk::148?q=" + "ż" * 10_001)
    assert response.status == 400 and "at most 10000" in page.inner_text(".error")
    page.close()
