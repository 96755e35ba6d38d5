import json

from lexir.jurisdictions.el.citations import act_source, find_citations, fold


def _check(text, cites):
    for c in cites:
        assert text[c.start : c.end] == c.text


def test_codes_and_units():
    text = "κατά το άρθρο 914 ΑΚ και το άρθρ. 281 ΚΠολΔ, άρθρο 5 παρ. 2 περ. α΄ εδ. 2 του ν. 4624/2019"
    cites = find_citations(text)
    _check(text, cites)
    assert [(c.act, c.article, c.path) for c in cites] == [
        ("CivC", "914", {}),
        ("kpold", "281", {}),
        ("N4624_2019", "5", {"par": "2", "item": "α", "sent": "2"}),
    ]
    assert cites[2].unit_id == "N4624_2019::5/par:2/item:α/sent:2"


def test_lists_ranges_and_unit_first():
    text = "τα άρθρα 914 και 932 ΑΚ, τα άρθρα 1-3 του Συντάγματος και η παρ. 3 του άρθρου 37 του παρόντος"
    cites = find_citations(text, default_act="N4727_2020")
    _check(text, cites)
    assert [c.id for c in cites] == [
        "CivC::914", "CivC::932", "syntagma::1", "syntagma::2", "syntagma::3", "N4727_2020::37",
    ]
    assert cites[-1].path == {"par": "3"} and cites[-1].text == "παρ. 3 του άρθρου 37 του παρόντος"


def test_accent_and_case_insensitive():
    for kw in ("άρθρο", "ΑΡΘΡΟ", "αρθρο", "Άρθρο", "αρ."):
        (c,) = find_citations(f"{kw} 5 Α.Κ.")
        assert (c.act, c.article) == ("CivC", "5")
    assert fold("ΆΡΘΡΟΥ") == "αρθρου"
    assert act_source("κπολδ") == "kpold" and act_source("Ν. 2472/1997") == "N2472_1997"


def test_unknown_acts_unresolved():
    (c,) = find_citations("το άρθρο 52 του ν. 3669/2008", default_act="N4070_2012")
    assert (c.act, c.id, c.act_raw) == (None, None, "ν. 3669/2008")
    (c,) = find_citations("άρθρο 9 παράγραφος 1 του ΓΚΠΔ", default_act="x")
    assert c.act is None and c.path == {"par": "1"}
    (c,) = find_citations("αρ. 5")
    assert c.act is None and c.article == "5"


def test_json_says_how_the_act_was_found():
    (c,) = find_citations("το άρθρο 52 του ν. 3669/2008", default_act="N4070_2012")
    row = c.to_json()
    assert (row["act_raw"], row["act"], row["id"], row["resolved_from"], row["kind"]) == (
        "ν. 3669/2008", None, None, "explicit", "statute")
    (c,) = find_citations("αρ. 5", default_act="N4070_2012")
    assert (c.act, c.act_raw, c.resolved_from) == ("N4070_2012", "", "default")
    (c,) = find_citations("αρ. 5")
    assert c.resolved_from is None


def test_real_statute_sentences(data_dir):
    law = json.loads((data_dir / "el" / "law-4070-2012.json").read_text(encoding="utf-8"))
    texts = [p["content"] for p in law["provisions"]]
    text = next(t for t in texts if "του άρθρου 2 του ν. 4070/2012" in t) if any(
        "του άρθρου 2 του ν. 4070/2012" in t for t in texts) else None
    found = [c for t in texts for c in find_citations(t, default_act="N4070_2012")]
    assert len(found) > 100
    assert any(c.act is None for c in found) and any(c.act == "N4070_2012" for c in found)
    if text:
        cites = find_citations(text)
        _check(text, cites)
    penal = json.loads((data_dir / "el" / "penal-code-cybercrime.json").read_text(encoding="utf-8"))
    for p in penal["provisions"][:80]:
        cites = find_citations(p["content"], default_act="PK")
        _check(p["content"], cites)
