"""German citations as units (issue #22, item 5): one citation per citation, non-statute kinds
(bylaw, bill, EU law) and the noun Art. Sentences come from the refex decisions and the statutes
in ../shared/data where they have the case; the issue's own sentences (from held-out decisions not
in this repository) are quoted as the issue gives them."""

from __future__ import annotations

import pytest

from lexir.jurisdictions.de.citations import eu_instrument, find_citations
from lexir.jurisdictions.de.refex import load_refex
from lexir.jurisdictions.de.statutes import parse_law, read_law_files

LAWS = {"AO 1977": "a/ao_1977/index.md", "BVerfSchG": "b/bverfschg/index.md", "FVG 1971": "f/fvg_1971/index.md"}


@pytest.fixture(scope="module")
def laws(data_dir):
    texts = read_law_files(data_dir / "de" / "gesetze_markdown_all.tar.gz", LAWS.values())
    return {jurabk: {a.id: a.text for a in parse_law(texts[path], path).articles} for jurabk, path in LAWS.items()}


@pytest.fixture(scope="module")
def decisions(data_dir):
    return {d.id: d.text for d in load_refex(data_dir / "de" / "refex")}


def _at(cites, text, needle):
    start = text.index(needle)
    return [c for c in cites if start <= c.start < start + len(needle)]


# ---------------------------------------------------------------------------
# one citation per citation


@pytest.mark.parametrize(("sentence", "act", "article", "paths"), [
    ("Versicherungspflichtig sind nach § 5 Abs. 1 Satz 1 und 4 SGB V die Beschäftigten.", "SGB 5", "5",
     ({"abs": "1", "satz": "1"}, {"abs": "1", "satz": "4"})),
    ("Die Voraussetzungen des § 312g Abs. 2 Nr. 3 a) und b) BGB liegen nicht vor.", "BGB", "312g",
     ({"abs": "2", "nr": "3", "lit": "a"}, {"abs": "2", "nr": "3", "lit": "b"})),
    ("Ausbildungsförderung wird nach § 15 Abs 3 Nr 1 und Abs 2 BAföG geleistet.", "BAföG", "15",
     ({"abs": "3", "nr": "1"}, {"abs": "2"})),
])
def test_a_continuation_is_part_of_one_citation(sentence, act, article, paths):
    (c,) = find_citations(sentence)
    assert (c.act, c.article, c.paths) == (act, article, paths)
    assert c.resolved_from == "explicit" and c.text == sentence[c.start : c.end]
    assert c.text.startswith("§ ") and c.text.endswith(" " + c.act_raw)
    assert c.unit_ids == tuple(f"{act}::{article}/" + "/".join(f"{k}:{v}" for k, v in p.items()) for p in paths)


def test_refex_enumeration_of_units_is_one_citation_per_paragraph(decisions):
    text = decisions["bgh_2010-05-12_79a71a550f5d"]
    needle = "§§ 3, 5 Abs. 1 und 2 Nr. 1 UWG"
    cites = _at(find_citations(text), text, needle)
    assert [(c.article, c.paths) for c in cites] == [("3", ({},)), ("5", ({"abs": "1"}, {"abs": "2", "nr": "1"}))]
    assert cites[-1].text == "5 Abs. 1 und 2 Nr. 1 UWG"


def test_statute_continuations_and_unit_ranges(laws):
    text = laws["FVG 1971"]["FVG 1971::5"]
    (c,) = _at(find_citations(text, default_act="FVG 1971"), text, "§ 4 Abs. 2 und 3")
    assert (c.text, c.paths) == ("§ 4 Abs. 2 und 3", ({"abs": "2"}, {"abs": "3"}))
    text = laws["BVerfSchG"]["BVerfSchG::22c"]
    needle = "§ 22b Absatz 1 bis 4 und 6"
    (c,) = _at(find_citations(text, default_act="BVerfSchG"), text, needle)
    assert c.text == needle and [p["abs"] for p in c.paths] == ["1", "2", "3", "4", "6"]
    # ends only without range expansion, as for ranges of §§
    (c,) = _at(find_citations(text, default_act="BVerfSchG", expand_ranges=False), text, needle)
    assert c.text == needle and [p["abs"] for p in c.paths] == ["1", "4", "6"]


def test_further_paragraphs_and_chains_stay_citations_of_their_own():
    assert [c.article for c in find_citations("gemäß §§ 823 Abs. 1 und 826 BGB")] == ["823", "826"]
    cites = find_citations("§ 33 Abs. 1 in Verbindung mit Abs. 3 des Bundesdisziplinargesetzes")
    assert [c.paths for c in cites] == [({"abs": "1"},), ({"abs": "3"},)]


# ---------------------------------------------------------------------------
# non-statutes


def test_a_clause_of_an_amended_bylaw_is_no_statute():
    text = "Nach dem SGB V gilt § 11 Nr 9 der geänderten Satzung."
    assert find_citations(text) == []  # not the SGB V of the context
    (c,) = find_citations(text, kinds=None)
    assert (c.kind, c.act, c.id, c.act_raw, c.path) == ("bylaw", None, None, "der geänderten Satzung", {"nr": "9"})
    (c,) = find_citations("nach § 3 des notariellen Vertrages vom 5. Mai 1999 und § 433 BGB", kinds=("contract",))
    assert (c.kind, c.act_raw) == ("contract", "des notariellen Vertrages")


def test_a_paragraph_of_a_bill_is_no_statute():
    text = "Nach dem SGB V gilt das nicht (vgl. Begründung zu § 59, BT-Drucks. 16/3100)."
    assert find_citations(text) == []
    (c,) = find_citations(text, kinds=None)
    assert (c.kind, c.act, c.id, c.article, c.text) == ("bill", None, None, "59", "§ 59")
    assert find_citations("Nach dem SGB V gilt das nicht (vgl. § 59).")[0].id == "SGB 5::59"


def test_the_noun_art_is_no_article():
    assert find_citations("Beschwerden psychischer Art. 3 Jahre nach dem Unfall", kinds=None) == []
    assert find_citations("Leistungen jeder Art 2 mal", kinds=None) == []
    assert [c.id for c in find_citations("Art. 2 Abs. 1 oder Art. 3 GG")] == ["GG::2", "GG::3"]
    assert [c.id for c in find_citations("nach Maßgabe der Art. 3 und 4 GG")] == ["GG::3", "GG::4"]


# ---------------------------------------------------------------------------
# EU law


def test_eu_law_is_its_own_kind_with_the_instrument_named(decisions, laws):
    (text,) = [t for t in decisions.values() if "Art. 234 EGV" in t]
    assert not _at(find_citations(text), text, "Art. 234 EGV")  # no statute with an empty act
    (c,) = _at(find_citations(text, kinds=None), text, "Art. 234 EGV")
    assert (c.kind, c.act, c.id, c.article, c.instrument) == ("eu", None, None, "234", "TEC")
    text = laws["AO 1977"]["AO 1977::29b"]
    (c,) = _at(find_citations(text, default_act="AO 1977", kinds=None), text,
               "Artikel 9 Absatz 1 der Verordnung (EU) 2016/679")
    assert (c.kind, c.act, c.article, c.path, c.instrument) == (
        "eu", None, "9", {"abs": "1"}, "Regulation (EU) 2016/679")
    text = laws["FVG 1971"]["FVG 1971::5"]
    cites = _at(find_citations(text, default_act="FVG 1971", kinds=None), text, "Artikel 360 bis 367")
    assert sorted(c.article for c in cites) == [str(n) for n in range(360, 368)]  # a range of articles
    assert {(c.kind, c.act, c.act_raw, c.instrument) for c in cites} == {
        ("eu", None, "der Richtlinie 2006/112/EG", "Directive 2006/112/EC")}
    (c,) = find_citations("Der Senat legt die Frage nach Art. 267 AEUV dem EuGH vor.", kinds=None)
    assert (c.kind, c.instrument) == ("eu", "TFEU")
    # the ordinance EUV of the corpus numbers by §; by Art. EUV is the Treaty on European Union
    assert [(c.kind, c.act, c.instrument) for c in find_citations("Art. 4 EUV und § 3 EUV", kinds=None)] == [
        ("eu", None, "TEU"), ("statute", "EUV", None)]


@pytest.mark.parametrize(("written", "instrument"), [
    ("der Richtlinie 2006/112/EG", "Directive 2006/112/EC"),
    ("Richtlinie (EU) 2015/2366", "Directive (EU) 2015/2366"),
    ("der Verordnung (EG) Nr. 883/2004", "Regulation (EC) No 883/2004"),
    ("des Vertrages über die Arbeitsweise der Europäischen Union", "TFEU"),
    ("MwStSystRL", "Directive 2006/112/EC"),
    ("des Bürgerlichen Gesetzbuchs", None),
])
def test_eu_instrument_names(written, instrument):
    assert eu_instrument(written) == instrument
