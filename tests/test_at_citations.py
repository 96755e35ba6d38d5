"""Austrian citations, resolved against the units parsed from the real laws (``/work/shared/data/at``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lexir.jurisdictions.at.citations import act_source, find_citations, known_from_acts
from lexir.jurisdictions.at.statutes import load_austrian_laws

DATA = Path("/work/shared/data/at")


@pytest.fixture(scope="module")
def units() -> set[str]:
    return {u.id for act in _acts() for u in act.units()}


@pytest.fixture(scope="module")
def known() -> dict[str, set[str]]:
    return known_from_acts(_acts())


_CACHE: list = []


def _acts():
    if not (DATA / "laws.tar.xz").exists():
        pytest.skip("no Austrian data at /work/shared/data/at")
    if not _CACHE:
        acts, errors = load_austrian_laws(DATA / "laws.tar.xz")
        assert not errors
        _CACHE.extend(acts)
    return _CACHE


def _one(text: str, **kw):
    cites = find_citations(text, **kw)
    assert len(cites) == 1, cites
    return cites[0]


# (text, unit ids) of every form the finder must read; each id must exist in the parsed laws
CASES = [
    ("§ 1295 Abs 1 ABGB", ["AT-ABGB::1295/abs:1"]),
    ("§ 1295 Abs. 1 ABGB", ["AT-ABGB::1295/abs:1"]),
    ("§ 879 Abs 3 ABGB", ["AT-ABGB::879/abs:3"]),
    ("§ 15a Abs 1 Z 3 MRG", ["AT-MRG::15a/abs:1/z:3"]),
    ("§ 127 StGB", ["AT-StGB::127"]),
    ("§ 1 VerG 2002", ["AT-VerG::1"]),
]


@pytest.mark.parametrize(("text", "ids"), CASES)
def test_single_forms_resolve_to_parsed_units(text, ids, units, known):
    cite = _one(text, known=known)
    assert cite.text == text
    assert list(cite.unit_ids) == ids
    assert all(i in units for i in cite.unit_ids)
    assert cite.resolved_from == "explicit"


def test_ziffer_and_litera_levels(units):
    cite = _one("nach § 2 Abs 1 Z 3 lit a MRG gilt")
    assert cite.path == {"abs": "1", "z": "3", "lit": "a"}
    assert cite.unit_id == "AT-MRG::2/abs:1/z:3/lit:a"
    z = _one("§ 2 Z 3 MRG")
    assert z.unit_id == "AT-MRG::2/z:3" and z.act == "AT-MRG"
    # a real litera: find one under a Ziffer and cite it back
    lit = next(u for u in sorted(units) if u.startswith("AT-MRG::") and "/z:" in u and u.endswith("/lit:a"))
    article, rest = lit.removeprefix("AT-MRG::").split("/", 1)
    words = {"abs": "Abs", "z": "Z", "lit": "lit"}
    text = f"§ {article} " + " ".join(f"{words[s.split(':')[0]]} {s.split(':')[1]}" for s in rest.split("/")) + " MRG"
    assert _one(text).unit_id == lit


def test_ff_names_the_first_article(units):
    for text, expected in (("§§ 1 ff KSchG", "AT-KSchG::1"), ("§§ 1 ff. ABGB", "AT-ABGB::1")):
        cite = _one(text)
        assert cite.unit_id == expected and expected in units
        assert cite.text == text


def test_enumeration_shares_the_act(units):
    cites = find_citations("§§ 1295, 1298 ABGB")
    assert [c.unit_id for c in cites] == ["AT-ABGB::1295", "AT-ABGB::1298"]
    assert [c.resolved_from for c in cites] == ["group", "explicit"]
    assert all(c.unit_id in units for c in cites)


def test_ivm_chain(units):
    cites = find_citations("Der Antrag nach § 16 iVm § 18 MRG ist zulässig.")
    assert [c.unit_id for c in cites] == ["AT-MRG::16", "AT-MRG::18"]
    assert [c.text for c in cites] == ["§ 16", "§ 18 MRG"]
    mixed = find_citations("§ 16 Abs 1 MRG i.V.m. § 1096 ABGB")
    assert [c.unit_id for c in mixed] == ["AT-MRG::16/abs:1", "AT-ABGB::1096"]
    assert all(c.unit_id in units for c in mixed)


def test_austrian_stgb_is_never_the_german_one():
    cite = _one("§ 127 StGB")
    assert cite.id == "AT-StGB::127" and cite.act == "AT-StGB"
    assert act_source("StGB") == "AT-StGB" and act_source("ZPO") == "AT-ZPO"


def test_unknown_act_is_not_guessed():
    cite = _one("Art 7 B-VG")
    assert cite.act is None and cite.id is None and cite.unit_id is None
    assert cite.act_raw == "B-VG" and cite.article == "7"
    other = _one("§ 3 FooG")
    assert other.act is None and other.id is None and other.act_raw == "FooG"


def test_default_act():
    cite = _one("gemäß § 12 Abs 3", default_act="AT-MRG")
    assert cite.act == "AT-MRG" and cite.resolved_from == "default" and cite.unit_id == "AT-MRG::12/abs:3"
    bare = _one("gemäß § 12 Abs 3")
    assert bare.act is None and bare.resolved_from is None


def test_units_of_one_article_are_one_citation(units):
    cite = _one("§ 2 Abs 1 und 2 MRG")
    assert cite.unit_ids == ("AT-MRG::2/abs:1", "AT-MRG::2/abs:2")
    cite = _one("§ 15a Abs 1 Z 1 und Abs 3 Z 4 MRG")
    assert cite.unit_ids == ("AT-MRG::15a/abs:1/z:1", "AT-MRG::15a/abs:3/z:4")
    assert all(i in units for i in cite.unit_ids)


def test_ranges(known):
    cites = find_citations("§§ 3 bis 6 KSchG")
    assert [c.article for c in cites] == ["3", "4", "5", "6"]
    ends = find_citations("§§ 3 bis 6 KSchG", expand_ranges=False)
    assert [c.article for c in ends] == ["3", "6"]
    with_known = find_citations("§§ 28 bis 30 KSchG", known=known)
    assert all(c.article in known["AT-KSchG"] for c in with_known)


def test_artikel_labels_follow_the_parser(units, known):
    assert _one("Art. 3 § 2 MRG").unit_id == "AT-MRG::3§2"
    assert _one("Art II MRG", known=known).unit_id == "AT-MRG::Art2"
    assert _one("Art. 2 § 4 DSG", known=known).unit_id == "AT-DSG::4"
    assert _one("Art 1 WechselG", known=known).unit_id == "AT-WechselG::1"
    for uid in ("AT-MRG::3§2", "AT-MRG::Art2", "AT-DSG::4", "AT-WechselG::1"):
        assert uid in units


def test_no_false_positives():
    assert find_citations("Der Mieter zahlt 5 Euro. Siehe Abschnitt 3.") == []
    assert [c.unit_id for c in find_citations("§ 5 ABGB und 6 Monate später")] == ["AT-ABGB::5"]


def test_kinds_filter():
    assert find_citations("§ 127 StGB", kinds=("contract",)) == []
    assert len(find_citations("§ 127 StGB", kinds=None)) == 1


def test_citations_in_the_laws_resolve(units):
    """Citations the laws make of themselves and each other: most explicit ones land on a unit."""
    acts = {a.id: a for a in _acts()}
    text = "\n".join(u.text for u in acts["AT-MRG"].articles[:60])
    cites = [c for c in find_citations(text) if c.act == "AT-ABGB"]
    assert cites
    landed = sum(c.id in units for c in cites)
    assert landed == len(cites)
