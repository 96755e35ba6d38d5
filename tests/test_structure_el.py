"""Greek statutes (Government Gazette text): cleaning, articles, paragraphs, items, ids."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from lexir.jurisdictions.el.statutes import (
    clean_lines,
    greek_acts,
    greek_stats,
    is_range_stub,
    load_greek_statutes,
    parse_greek_law,
    source_id_for,
)
from lexir.types import Act, Provision, UnitId

DATA = Path(os.environ.get("LEXIR_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
EL = DATA / "el"


@pytest.fixture(scope="module")
def el_dir() -> Path:
    if not (EL / "penal-code-cybercrime.json").is_file():
        pytest.skip(f"Greek statutes not found at {EL}")
    return EL


@pytest.fixture(scope="module")
def acts(el_dir: Path) -> dict[str, Act]:
    return {act.id: act for act in load_greek_statutes(el_dir)}


def raw(el_dir: Path, name: str) -> dict:
    return json.loads((el_dir / f"{name}.json").read_text(encoding="utf-8"))


def article(act: Act, label: str) -> Provision:
    matches = [a for a in act.articles if a.label == label]
    assert len(matches) == 1, f"{act.id} has {len(matches)} articles labelled {label!r}"
    return matches[0]


def labels(p: Provision, level: str) -> list[str]:
    return [c.label for c in p.children if c.level == level]


# ---------------------------------------------------------------------------
# the folder


def test_duplicate_file_is_loaded_once(el_dir, acts):
    cii, nis = raw(el_dir, "law-4577-2018-cii"), raw(el_dir, "law-4577-2018-nis")
    assert cii["id"] != nis["id"]
    assert {k: v for k, v in cii.items() if k != "id"} == {k: v for k, v in nis.items() if k != "id"}
    assert source_id_for(cii) == source_id_for(nis) == "N4577_2018"
    assert sorted(acts) == [
        "N1733_1987", "N2472_1997", "N3979_2011", "N4070_2012", "N4577_2018",
        "N4624_2019", "N4727_2020", "PD131_2003", "PK",
    ]  # fmt: skip
    assert len(acts["N4577_2018"].articles) == 19


def test_counts(acts):
    stats = greek_stats(acts.values())
    assert stats["acts"] == 9
    pk = acts["PK"]
    assert pk.title == "Ποινικός Κώδικας" and pk.language == "el"
    # 340 provisions in the source + 4 articles whose heading the source missed + 157 repealed stubs
    assert len(pk.articles) == 501
    assert sum(is_range_stub(a) for a in pk.articles) == 157
    assert len(acts["N4727_2020"].articles) == 237 and len(acts["N4624_2019"].articles) == 87
    assert stats["units_per_level"]["par"] > 2500 and stats["units_per_level"]["item"] > 1000


def test_ids_are_unique_and_parse(acts):
    for act in acts.values():
        ids = [u.id for u in act.units()]
        assert len(ids) == len(set(ids)), act.id
        for unit in act.units():
            uid = UnitId.parse(unit.id)
            assert uid.source == act.id and "/" not in act.id and "::" not in act.id


def test_table_lists_every_file(el_dir):
    table = greek_acts()
    for path in el_dir.glob("*.json"):
        obj = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(obj, dict) and "provisions" in obj:
            assert obj["id"] in table, path.name
    assert table["penal-code-cybercrime"].abbreviations == ("ΠΚ", "Π.Κ.")


# ---------------------------------------------------------------------------
# cleaning


def test_page_headers_and_page_numbers_removed(el_dir, acts):
    source = json.dumps(raw(el_dir, "penal-code-cybercrime"), ensure_ascii=False)
    assert source.count("ΕΦΗΜΕΡΙ∆Α TΗΣ ΚΥΒΕΡΝΗΣΕΩΣ") == 57  # the tests below would pass on no input
    assert "\\n11310\\n" in json.dumps(raw(el_dir, "law-4577-2018-cii"), ensure_ascii=False)
    for act in acts.values():
        for unit in act.units():
            assert "ΚΥΒΕΡΝΗΣΕΩΣ" not in unit.text, unit.id
            assert not re.search(r"(^|\n)\d{3,5}(\n|$)", unit.text), unit.id
            assert not re.search(r"[\x00-\x08\x0b-\x1f]", unit.text), unit.id


def test_header_inside_a_sentence(acts):
    # PK 7 (1): "… στρέφεται εναντίον Έλληνα" | page header | "πολίτη και είναι αξιόποινη …"
    p7 = article(acts["PK"], "7")
    assert labels(p7, "par") == ["1", "2"]
    assert "στρέφεται εναντίον Έλληνα πολίτη και είναι αξιόποινη" in p7.children[0].text
    assert p7.children[1].text == "2. Η διάταξη της παρ. 3 του προηγούμενου άρθρου έχει και εδώ εφαρμογή."


def test_hyphenated_line_breaks_joined(el_dir, acts):
    source = raw(el_dir, "law-3979-2011")["provisions"]
    assert sum(p["content"].count("−\n") for p in source) > 500  # U+2212 serves as hyphen there
    for act in acts.values():
        for unit in act.units():
            assert not re.search(r"[-−]\n", unit.text) and "\n" not in unit.title, unit.id
    p9 = article(acts["N3979_2011"], "9")
    assert p9.title == "Δικαίωμα πρόσβασης στις πληροφορίες των φορέων του δημόσιου τομέα"
    assert "Κώδικα Διοικητικής Διαδικασίας" in p9.children[0].text  # "Διαδικα−\nσίας" in the source


def test_promulgation_and_ratifying_law_cut(acts):
    last = acts["N4624_2019"].articles[-1]
    assert "Παραγγέλλομε" not in last.text and "Σφραγίδα" not in last.text
    assert "Άρθρο Δεύτερο" not in article(acts["PK"], "469").text


def test_clean_lines_on_shapes_seen_in_the_gazettes():
    content = "\n".join([
        "κείμενο πριν",
        "",
        "ΕΦΗΜΕΡΙ∆Α TΗΣ ΚΥΒΕΡΝΗΣΕΩΣ",
        "ΦΕΚ 50               ΕΦΗΜΙΕΡΙΣ ΤΗΣ ΚΥΒΕΡΝΗΣΕΩΣ (ΤΕΥΧΟΣ ΠΡΩΤΟ)                  693",
        "11310",
        "øîñì õðì÷ì÷ úùððò",
        "δημοσίευση στην Εφημερίδα της Κυβερνήσεως",
        "Παραγγέλλομε τη δημοσίευση του παρόντος",
        "Αθήνα",
    ])  # fmt: skip
    assert [s for s in clean_lines(content) if s] == [
        "κείμενο πριν",
        "δημοσίευση στην Εφημερίδα της Κυβερνήσεως",
    ]


# ---------------------------------------------------------------------------
# paragraphs and items on real articles


def test_paragraphs_of_penal_code_articles(acts):
    pk = acts["PK"]
    p2 = article(pk, "2")
    assert p2.id == "PK::2" and p2.title == "Αναδρομική ισχύς του ηπιότερου νόμου"
    assert [c.id for c in p2.children] == ["PK::2/par:1", "PK::2/par:2"]
    assert p2.children[1].text.endswith("όπως και η εκτέλεση των μέτρων ασφαλείας.")
    assert "Άρθρα 3" not in p2.text and "ΤΟΠΙΚΑ" not in p2.text  # the next heading and chapter title
    assert labels(article(pk, "5"), "par") == ["1", "2"]
    assert labels(article(pk, "80"), "par") == ["1", "2", "3", "4", "5", "6"]
    assert labels(article(pk, "1"), "par") == []
    assert article(pk, "1").text.startswith("Έγκλημα δεν υπάρχει χωρίς νόμο")


def test_items(acts):
    pk = acts["PK"]
    p8 = article(pk, "8")  # "… για τις εξής πράξεις …: α) … ια)", one per line, no paragraphs
    assert labels(p8, "item") == ["α", "β", "γ", "δ", "ε", "στ", "ζ", "η", "θ", "ι", "ια"]
    assert p8.children[6].id == "PK::8/item:ζ" and p8.children[6].text == "ζ) πειρατεία,"
    p367 = article(pk, "367")  # items written inline: "… πράξη: α) …, β) …, γ) … και δ) …"
    assert labels(p367.children[0], "item") == ["α", "β", "γ", "δ"]
    assert labels(p367.children[1], "item") == ["α", "β"]
    assert p367.children[0].children[3].text == "δ) σε ανάλογες περιπτώσεις."
    defs = article(acts["N4577_2018"], "3")  # definitions 1) … 19), with α) β) γ) under 1)
    assert labels(defs, "item") == [str(n) for n in range(1, 20)]
    assert labels(defs.children[0], "item") == ["α", "β", "γ"]
    assert defs.children[0].children[1].id == "N4577_2018::3/item:1/item:β"


def test_hidden_articles_and_repealed_ranges(acts):
    pk = acts["PK"]
    p82a = article(pk, "82Α")
    assert p82a.title == "Έγκλημα με ρατσιστικά χαρακτηριστικά"
    assert p82a.text.startswith("Εάν έχει τελεστεί έγκλημα κατά παθόντος")
    assert "Έγκλημα με ρατσιστικά" not in article(pk, "82").text
    for label in ("142Α", "187Β", "292Α"):
        assert not is_range_stub(article(pk, label))
    for label in ("3", "4"):
        stub = article(pk, label)
        assert stub.title == "Άρθρα 3 - 4" and stub.text == "(Καταργούνται)" and is_range_stub(stub)
    assert [a.label for a in pk.articles if a.label.startswith("137") and is_range_stub(a)] == [
        "137Β", "137Γ", "137Δ",
    ]  # fmt: skip
    # "Άρθρα 385 - 406" (merged into chapter 23) does not shadow the articles that exist
    assert not is_range_stub(article(pk, "386"))
    assert article(pk, "304Α").id == "PK::304Α"  # the source's Latin "304A"


def test_untitled_article_keeps_its_first_sentence(acts):
    # the source took the first line of untitled PK 460 as its title
    p460 = article(acts["PK"], "460")
    assert p460.title == ""
    assert p460.text == "Ο παρών Ποινικός Κώδικας αρχίζει να ισχύει από την 1η Ιουλίου 2019."
    assert article(acts["PK"], "305").title == "(Καταργείται)"


def test_quoted_amendments_are_not_split(acts):
    # N 4070/2012 art 171 (1) and (2) each replace a whole article, quoting its paragraphs 1.-6.
    p171 = article(acts["N4070_2012"], "171")
    assert labels(p171, "par") == ["1", "2"]
    assert "«1. Τα δεδομένα κίνησης" in p171.children[1].text


def test_parse_greek_law_small():
    obj = {
        "id": "law-1-2000",
        "short_name": "Ν. 1/2000",
        "title": "ΔΟΚΙΜΗ",
        "provisions": [
            {"provision_ref": "Art. 1", "section": "1", "title": "Άρθρο 1 - Σκοπός",
             "content": "Σκοπός\n1. Πρώτη παρά-\nγραφος: α) ένα, β) δύο.\n\nΕΦΗΜΕΡΙ∆Α TΗΣ ΚΥΒΕΡΝΗΣΕΩΣ\n\n"
                        "2. Δεύτερη «3. όχι\n4. ούτε αυτή».\nΚΕΦΑΛΑΙΟ Β΄"},
        ],
    }  # fmt: skip
    act = parse_greek_law(obj)
    assert act.id == "N1_2000" and act.title == "ΔΟΚΙΜΗ"
    (art,) = act.articles
    assert art.title == "Σκοπός" and labels(art, "par") == ["1", "2"]
    assert art.children[0].text == "1. Πρώτη παράγραφος:\nα) ένα,\nβ) δύο."
    assert art.children[1].text == "2. Δεύτερη «3. όχι 4. ούτε αυτή»."
    with pytest.raises(ValueError):
        parse_greek_law({"id": "x"})
