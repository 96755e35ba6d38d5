"""The Code du travail (lexir.jurisdictions.fr.travail) from the real legi-data JSON."""

from __future__ import annotations

import json
import lzma
from collections import Counter
from pathlib import Path

import pytest

from lexir.jurisdictions.fr.travail import paragraphs, parse_code_du_travail, read_code_du_travail

PATH = Path("/work/shared/data/fr/code-du-travail.json.xz")


@pytest.fixture(scope="module")
def travail():
    if not PATH.is_file():
        pytest.skip(f"{PATH} missing")
    return read_code_du_travail(PATH)


@pytest.fixture(scope="module")
def tree():
    if not PATH.is_file():
        pytest.skip(f"{PATH} missing")
    with lzma.open(PATH, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def _leaves(node):
    if node.get("type") == "article":
        yield node
    for child in node.get("children", []) or []:
        yield from _leaves(child)


def test_every_article_leaf_is_an_article(travail, tree):
    leaves = list(_leaves(tree))
    assert len(travail.act.articles) == len(leaves)
    assert travail.errors == []
    ids = [a.id for a in travail.act.articles]
    assert len(set(ids)) == len(ids)
    # the numbers printed twice (annexes) are the only ones that needed a ~2
    twice = {n for n, k in Counter(leaf["data"]["num"].strip() for leaf in leaves).items() if k > 1}
    assert {a.label.split("~")[0] for a in travail.act.articles if "~" in a.label} == {
        n.replace(" ", "_") for n in twice}


def test_l1232_1(travail):
    act = travail.act
    assert act.id == "Ctrav"
    art = next(a for a in act.articles if a.id == "Ctrav::L1232-1")
    assert [c.id for c in art.children] == ["Ctrav::L1232-1/al:1", "Ctrav::L1232-1/al:2"]
    assert art.children[1].text == "Il est justifié par une cause réelle et sérieuse."
    path = [(d.level, d.label) for d in act.division_path("Ctrav::L1232-1")]
    assert path == [("partie", "législative"), ("partie", "1"), ("livre", "II"), ("titre", "III"),
                    ("chapitre", "II"), ("section", "1")]
    assert travail.meta["Ctrav::L1232-1"].date_debut == "2008-06-27"


def test_star_numbers_and_items(travail):
    ids = {u.id for u in travail.act.units()}
    assert "Ctrav::R*2122-1" in ids
    assert {"Ctrav::L1237-19-1/item:1", "Ctrav::L1237-19-1/item:4_bis"} <= ids


def test_paragraphs_from_html_and_fallback():
    assert paragraphs("<p>Un&nbsp;:</p><p>1° deux ;<br/>2° trois.</p><p></p>") == ["Un :", "1° deux ;", "2° trois."]
    assert paragraphs("", "a\nb") == ["a", "b"]


def test_article_without_number_is_reported():
    tree = {"type": "code", "data": {"cid": "LEGITEXT000006072050", "title": "Code du travail"}, "children": [
        {"type": "section", "data": {"title": "Livre Ier : X\r\n"}, "children": [
            {"type": "article", "data": {"num": "L1", "texteHtml": "<p>a</p>"}},
            {"type": "article", "data": {"num": " ", "texteHtml": "<p>b</p>", "id": "LEGIARTI1"}}]}]}
    out = parse_code_du_travail(tree, "t.json")
    assert [a.id for a in out.act.articles] == ["Ctrav::L1"]
    assert len(out.errors) == 1 and out.errors[0].path == "t.json" and "LEGIARTI1" in out.errors[0].message
