"""Depth-wise citation matching and ToER on hand-computed examples."""

from __future__ import annotations

import pytest

from lexir.evaluation.depth import (
    DEPTHS,
    RefPath,
    Retrieved,
    decode_reference,
    decode_unit,
    depth_recall,
    matches,
    recovered,
    toer,
)


def test_decode_unit():
    assert decode_unit("BGB::823/abs:1/satz:2") == RefPath("BGB", "823", "1", "2")
    assert decode_unit("StGB::243/abs:1/satz:2/nr:3/lit:a") == RefPath("StGB", "243", "1", "2", "3")
    assert decode_unit("BGB::613/satz:2") == RefPath("BGB", "613", None, "2")
    assert decode_unit("BGB::823#w3") == RefPath("BGB", "823")
    assert decode_unit("UWG 2004") == RefPath("UWG 2004")
    assert decode_unit("BGB::823/abs:1").depth == 2


def test_decode_reference_accepts_annotation_names():
    assert decode_reference("SGG", "184", {"absatz": "2"}) == RefPath("SGG", "184", "2")
    assert decode_reference("UWG", "2", {"nummer": "1", "buchstabe": "a"}) == RefPath("UWG", "2", nr="1")
    assert decode_reference("GG", "80", {"abs": "1", "satz": "2"}) == RefPath("GG", "80", "1", "2")


def test_matches_prefixes_and_implicit_hits():
    gold = RefPath("SGG", "184", "2")
    assert matches(RefPath("SGG", "184", "2", "1"), gold, 4)  # deeper retrieved unit; satz/nr implicit
    assert matches(RefPath("sgg", "184", "2"), gold, 2)  # act ids compare case-insensitively
    assert matches(RefPath("SGG", "184", "1"), gold, 1)
    assert not matches(RefPath("SGG", "184", "1"), gold, 2)
    assert not matches(RefPath("SGG", "185"), gold, 1)
    assert matches(RefPath("SGG", "185"), gold, 0)
    assert not matches(RefPath("ZPO", "184", "2"), gold, 0)
    # a whole § is coarser than the cited Absatz: no hit at Absatz depth unless ancestors count
    assert not matches(RefPath("SGG", "184"), gold, 2)
    assert matches(RefPath("SGG", "184"), gold, 2, credit_ancestors=True)
    # gold without Absatz: any Absatz is an implicit hit, the Satz must agree
    assert matches(RefPath("BGB", "613", "1", "2"), RefPath("BGB", "613", satz="2"), 4)
    assert not matches(RefPath("BGB", "613", satz="1"), RefPath("BGB", "613", satz="2"), 3)


GOLD = [
    RefPath("UWG 2004", "5"),
    RefPath("BGB", "613", satz="2"),
    RefPath("SGG", "184", "2"),
    RefPath("UWG 2004", "2", nr="1"),
]
RETRIEVED = ["BGB::613/satz:2", "SGG::184", "UWG 2004::2/abs:1/satz:1/nr:1", "UWG 2004::5/abs:3/satz:1"]


def test_depth_recall_by_hand():
    paths = [decode_unit(u) for u in RETRIEVED]
    assert depth_recall(paths, GOLD) == {"code": 1.0, "para": 1.0, "abs": 0.75, "satz": 0.75, "nr": 0.75}
    assert depth_recall(paths, GOLD, credit_ancestors=True)["nr"] == 1.0
    # duplicates of a gold reference count once
    assert recovered(paths, GOLD + GOLD, 4) == 3
    only_code = [decode_unit("BGB::1")]
    assert depth_recall(only_code, GOLD) == {"code": 0.25, "para": 0.0, "abs": 0.0, "satz": 0.0, "nr": 0.0}
    assert depth_recall(paths, []) == dict.fromkeys(DEPTHS, 0.0)


def test_toer_micro_average_and_charging():
    results = {
        # q1: 2 hits (40 + 60 words) and one expanded unit (100 words)
        "q1": [Retrieved("SGG::184/abs:2/satz:1", 40), Retrieved("BGB::1", 60),
               Retrieved("BGB::613", 100, expanded=True)],
        # q2: one hit of 100 words, wrong §
        "q2": [Retrieved("UWG 2004::4", 100)],
    }
    gold = {"q1": [RefPath("SGG", "184", "2"), RefPath("BGB", "613", satz="2")],
            "q2": [RefPath("UWG 2004", "5"), RefPath("UWG 2004", "5")]}
    out = toer(results, gold)
    # q1: SGG 184 Abs 2 recovered at every depth; BGB 613 S. 2 at code and § (the expanded § 613
    # is coarser than Satz 2), q2: code only. Uncharged words 200, charged 300, distinct gold 3.
    assert out["code"]["recovered"] == 3 and out["para"]["recovered"] == 2 and out["abs"]["recovered"] == 2
    assert out["satz"]["recovered"] == 1 and out["nr"]["recovered"] == 1
    assert out["code"]["toer"] == pytest.approx(1000 * 3 / 200)
    assert out["code"]["toer_charged"] == pytest.approx(1000 * 3 / 300)
    assert out["nr"]["toer"] == pytest.approx(1000 * 1 / 200)
    assert out["para"]["recall"] == pytest.approx(2 / 3)
    assert out["code"]["gold"] == 3 and out["code"]["words"] == 200 and out["code"]["words_charged"] == 300


def test_toer_query_without_results_counts_its_gold():
    out = toer({}, {"q": [RefPath("BGB", "1")]})
    assert out["code"]["toer"] == 0.0 and out["code"]["recall"] == 0.0 and out["code"]["gold"] == 1
