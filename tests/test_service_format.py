"""Citations as lawyers write them, snippets and quote checks: the pure functions under the service."""

from __future__ import annotations

import pytest

from lexir.analysis import Analyzer
from lexir.service.hits import format_citation, snippet, unit_heading, verify_quote


@pytest.mark.parametrize(("unit_id", "language", "level", "expected"), [
    ("BGB::823/abs:1", "de", "para", "§ 823 Abs. 1 BGB"),
    ("StGB::243/abs:1/satz:2/nr:3", "de", "para", "§ 243 Abs. 1 S. 2 Nr. 3 StGB"),
    ("GG::1/abs:1", "de", "art", "Art. 1 Abs. 1 GG"),
    ("BLG 2000::body/satz:2", "de", "body", "S. 2 BLG 2000"),
    ("BGBEG::232§10/satz:1", "de", "para", "Art. 232 § 10 S. 1 BGBEG"),
    ("kc::415", "pl", "article", "art. 415 k.c."),
    ("kk::148/par:1", "pl", "article", "art. 148 § 1 k.k."),
    ("kc::4^1", "pl", "article", "art. 4¹ k.c."),
    ("kpc::505/pkt:2", "pl", "article", "art. 505 pkt 2 k.p.c."),
    ("CivC::914", "el", "article", "άρθρο 914 ΑΚ"),
    ("PK::187/par:1", "el", "article", "άρθρο 187 παρ. 1 ΠΚ"),
    ("N4624_2019::5", "el", "article", "άρθρο 5 ν. 4624/2019"),
])
def test_citations_follow_each_jurisdiction(unit_id, language, level, expected):
    assert format_citation(unit_id, language, level) == expected


def test_breadcrumb_headings():
    assert unit_heading("para", "823", "de", "Schadensersatzpflicht") == "§ 823 Schadensersatzpflicht"
    assert unit_heading("abs", "1", "de") == "Abs. 1"
    assert unit_heading("article", "415", "pl") == "art. 415"


def test_snippet_marks_matched_forms_and_escapes_html():
    analyze = Analyzer.create("de", "stem")
    text = "Vorwort <b>. " + "x " * 400 + "Wer vorsätzlich oder fahrlässig das Leben eines anderen verletzt, ist zum Ersatz " \
           "des daraus entstehenden Schadens verpflichtet. " + "y " * 400
    out = snippet(text, frozenset(analyze("Schaden Leben")), analyze, width=200)
    assert "<mark>Leben</mark>" in out and "<mark>Schadens</mark>" in out  # a stem match, not a string match
    assert out.startswith("… ") and out.endswith(" …") and len(out) < 400
    head = snippet(text, frozenset(analyze("Vorwort")), analyze, width=40)
    assert "&lt;b&gt;" in head and "<b>" not in head


def test_verify_quote():
    text = "§ 1. Kto zabija człowieka, podlega karze pozbawienia wolności na czas nie krótszy od lat 10."
    exact = verify_quote("KTO ZABIJA człowieka — podlega karze", text)
    assert exact["match"] == "exact" and exact["span"]["text"] == "Kto zabija człowieka, podlega karze"
    fuzzy = verify_quote("kto zabija czlowieka podlega karze pozbawienia wolnosci", text)
    assert fuzzy["verified"] and fuzzy["match"] == "fuzzy" and fuzzy["span"]["text"].startswith("Kto zabija")
    missing = verify_quote("podlega grzywnie albo karze ograniczenia wolności", text)
    assert not missing["verified"] and missing["match"] == "none" and missing["score"] < 0.85
    assert verify_quote("...", text)["verified"] is False


def test_a_missing_extra_says_how_to_install_it():
    from lexir.service import MissingExtra, require

    with pytest.raises(MissingExtra, match=r"no_such_package_xyz.*pip install 'lexir\[serve\]'"):
        require({"no_such_module_xyz": "no_such_package_xyz"})


def test_verify_quote_in_a_long_provision_finds_the_passage():
    # 20,000 words of other text around a passage: the window search is bounded, the passage still found
    filler = " ".join(f"wort{i % 997}" for i in range(20_000))
    passage = "Wer vorsätzlich oder fahrlässig das Leben eines anderen widerrechtlich verletzt"
    text = f"{filler} {passage} {filler}"
    found = verify_quote("wer vorsaetzlich oder fahrlassig das leben eines anderen widerrechtlich verletzt", text)
    assert found["verified"] and found["match"] == "fuzzy" and found["span"]["text"] == passage
