"""Polish citation finding and resolution, checked on the real exam and OryCore data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lexir.jurisdictions.pl.citations import (
    act_source,
    find_citations,
    gold_from_orycore,
    parse_legal_basis,
    resolve_article,
)

# data_dir (tests/conftest.py): $LEXIR_DATA or ../shared/data beside the repo, else skip
CODES = ("kc", "kk", "kks", "kpa", "kpc")


@pytest.fixture(scope="module")
def known(data_dir: Path) -> dict[str, set[str]]:
    return {s: set(json.loads((data_dir / "pl" / "codes" / f"{s}.json").read_text())) for s in CODES}


@pytest.fixture(scope="module")
def exam_bases(data_dir: Path) -> list[str]:
    with open(data_dir / "pl" / "exams_2012_2023.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["legal_basis"] for line in f]


def one(text: str, **kw) -> dict:
    found = parse_legal_basis(text, **kw)
    assert len(found) == 1, found
    return found[0].to_json()


# ---------------------------------------------------------------------------
# real exam legal bases


@pytest.mark.parametrize(
    "basis, act, article, path",
    [
        ("art. 16 § 2 k.k.", "kk", "16", {"par": "2"}),
        ("art. 31 § 2 pkt 1 k.r. i o.", "kro", "31", {"par": "2", "pkt": "1"}),
        ("art. 31 § 2 pkt 1 k. r. i o.", "kro", "31", {"par": "2", "pkt": "1"}),
        ("art. 37 § 1 pkt 3 k.r.io.", "kro", "37", {"par": "1", "pkt": "3"}),
        ("art. 39 pkt 2d k.k.", "kk", "39", {"pkt": "2d"}),
        ("art. 325e § 1a k.p.k.", "kpk", "325e", {"par": "1a"}),
        ("art. 845 § 2a k.p.c.", "kpc", "845", {"par": "2a"}),
        ("art. 299 § 1 k.s.h", "ksh", "299", {"par": "1"}),
        ("art. 72 § 2 k.p.s.w.", "kpsw", "72", {"par": "2"}),
        ("art. 20 § 2 pkt 1 k.w.", "kw", "20", {"par": "2", "pkt": "1"}),
    ],
)
def test_real_exam_bases(exam_bases, basis, act, article, path):
    assert basis in exam_bases  # keep the cases real
    got = one(basis)
    assert (got["act"], got["article"], got["path"]) == (act, article, path)
    assert got["id"] == f"{act}::{article}"
    assert got["span"] == {"start": 0, "end": len(basis), "text": basis}


def test_exam_bases_share(exam_bases, known):
    """Every exam legal basis gives a citation of a known act spanning the whole string;
    every one into our five codes names an article we have, except kks art. 53, which
    the corpus lacks."""
    ok = 0
    in_corpus, missing = 0, []
    for basis in exam_bases:
        found = parse_legal_basis(basis, known)
        if found and found[0].act and found[-1].end == len(basis.rstrip()):
            ok += 1
        if found and found[0].act in known:
            in_corpus += 1
            if found[0].article not in known[found[0].act]:
                missing.append(found[0].id)
    assert len(exam_bases) == 2166
    assert ok / len(exam_bases) >= 0.995  # measured: 1.0
    assert in_corpus >= 1490  # measured: 1,498
    assert set(missing) <= {"kks::53"}


# ---------------------------------------------------------------------------
# several citations in one string


def test_multiple_citations():
    text = "art. 415 i 416 k.c., art. 10 § 1 k.c. oraz art. 5 k.k.; art. 23 i art. 24 k.c."
    found = find_citations(text)
    assert [c.id for c in found] == ["kc::415", "kc::416", "kc::10", "kk::5", "kc::23", "kc::24"]
    assert [c.text for c in found] == [
        "art. 415",
        "416 k.c.",
        "art. 10 § 1 k.c.",
        "art. 5 k.k.",
        "art. 23",
        "art. 24 k.c.",
    ]
    for c in found:
        assert text[c.start : c.end] == c.text


def test_bare_labels_continue_the_level_before():
    found = find_citations("art. 58 § 1 i § 3 pkt 2 lit. b i c oraz art. 415, 416 k.c.")
    assert [(c.article, c.path) for c in found] == [
        ("58", {"par": "1"}),
        ("58", {"par": "3", "pkt": "2", "lit": "b"}),
        ("58", {"par": "3", "pkt": "2", "lit": "c"}),
        ("415", {}),
        ("416", {}),
    ]
    assert {c.act for c in found} == {"kc"}


def test_lists_ranges_and_connectors():
    found = find_citations("art. 5 § 1–3 w zw. z art. 6 zd. drugie i art. 7 i n. k.p.c.")
    assert [(c.article, c.path) for c in found] == [
        ("5", {"par": "1"}),
        ("5", {"par": "3"}),
        ("6", {"zd": "2"}),
        ("7", {}),
    ]
    assert all(c.act == "kpc" for c in found)


def test_year_after_comma_is_not_an_article():
    found = find_citations("art. 5, 2013 r. poz. 12")
    assert [c.article for c in found] == ["5"]
    assert found[0].act is None and found[0].id is None


# ---------------------------------------------------------------------------
# superscripts


def test_superscript_in_three_forms(known):
    assert "454^1" in known["kc"] and "4541" not in known["kc"]
    caret, unicode_, flat = (
        parse_legal_basis(t, known)[0] for t in ("art. 454^1 k.c.", "art. 454¹ k.c.", "art. 4541 k.c.")
    )
    assert caret.id == unicode_.id == flat.id == "kc::454^1"
    assert unicode_.text == "art. 454¹ k.c."
    assert find_citations("art. 41¹ k.k.")[0].article == "41^1"
    # without the article list a flattened number stays as written
    assert find_citations("art. 4541 k.c.")[0].id == "kc::4541"


def test_superscript_with_letter_and_in_units():
    found = find_citations("art. 130¹a § 2^1 oraz art. 64 § 1¹ k.p.c.")
    assert [(c.article, c.path) for c in found] == [("130^1a", {"par": "2^1"}), ("64", {"par": "1^1"})]


def test_resolve_article(known):
    assert resolve_article("kc", "4541", known) == "454^1"
    assert resolve_article("kc", "415", known) == "415"
    assert resolve_article("kpc", "50522", known) == "505^22"
    assert resolve_article("kpc", "479115", known) == "479^115"
    assert resolve_article("kc", "99999", known) == "99999"
    assert resolve_article("ksh", "4541", known) == "4541"  # act outside the corpus
    # of two readings the shorter superscript wins; a real article is never re-read
    assert resolve_article("x", "4541", {"x": {"45^41", "454^1"}}) == "454^1"
    assert resolve_article("kc", "553", known) == "553" and "55^3" in known["kc"]


# ---------------------------------------------------------------------------
# acts


def test_named_acts():
    text = (
        "art. 5 ust. 1 pkt 2 lit. a ustawy z dnia 6 września 2001 r. o dostępie do informacji publicznej "
        "oraz art. 23 ustawy z dnia 23 kwietnia 1964 r. – Kodeks cywilny (Dz. U. z 2020 r. poz. 1740), "
        "art. 148 Kodeksu karnego i art. 2 Konstytucji RP"
    )
    found = find_citations(text)
    assert [c.id for c in found] == ["udip::5", "kc::23", "kk::148", "konst::2"]
    assert found[0].path == {"ust": "1", "pkt": "2", "lit": "a"}
    assert found[1].act_raw == "ustawy z dnia 23 kwietnia 1964 r. – Kodeks cywilny"
    assert "Dz. U." not in found[1].text


@pytest.mark.parametrize(
    "designation, source",
    [
        ("k.c.", "kc"),
        ("KC", "kc"),
        ("kc", "kc"),
        ("Kodeks cywilny", "kc"),
        ("Kodeksem cywilnym", "kc"),
        ("k. r. i o.", "kro"),
        ("k.r. i o", "kro"),
        ("krio", "kro"),
        ("k.s.h", "ksh"),
        ("k.k.s.", "kks"),
        ("k.p.w.", "kpsw"),
        ("Kodeksu postępowania w sprawach o wykroczenia", "kpsw"),
        ("ustawy z dnia 23 kwietnia 1964 r. – Kodeks cywilny", "kc"),
        ("ustawa z dnia 23 kwietnia 1964 r. Kodeks cywilny", "kc"),
        # a code's title with another date is another act: never guessed
        ("ustawy z dnia 1 stycznia 1990 r. – Kodeks cywilny", None),
        ("ustawy o ubezpieczeniach obowiązkowych", None),
        ("k.x.", None),
    ],
)
def test_act_designations(designation, source):
    assert act_source(designation) == source


def test_unknown_act_stays_unresolved():
    text = (
        "art. 34 ust. 1 ustawy z dnia 22 maja 2003 r. o ubezpieczeniach obowiązkowych, "
        "Ubezpieczeniowym Funduszu Gwarancyjnym i Polskim Biurze Ubezpieczycieli Komunikacyjnych"
    )
    (found,) = find_citations(text)
    assert found.act is None and found.id is None and found.unit_id is None
    assert found.article == "34" and found.path == {"ust": "1"}
    assert found.act_raw.startswith("ustawy z dnia 22 maja 2003 r. o ubezpieczeniach")
    assert found.to_json()["id"] is None
    # a title with a comma is found whole when the act is in the table
    (lok,) = find_citations(
        "art. 19f ust. 2 ustawy z dnia 21 czerwca 2001 r. o ochronie praw lokatorów, "
        "mieszkaniowym zasobie gminy i o zmianie Kodeksu cywilnego"
    )
    assert lok.id == "uopl::19f"


def test_no_act_written():
    (found,) = find_citations("Przepis art. 5 § 2 stosuje się odpowiednio.")
    assert (found.act, found.act_raw, found.id, found.article) == (None, "", None, "5")
    (found,) = find_citations("Przepis art. 5 § 2 stosuje się odpowiednio.", default_act="kk")
    assert (found.act, found.id, found.resolved_from) == ("kk", "kk::5", "default")
    named = find_citations("art. 5 k.c. i art. 7", default_act="kk")  # an act written wins; a bare group: the default
    assert [(c.id, c.resolved_from) for c in named] == [("kc::5", "explicit"), ("kk::7", "default")]


def test_every_language_finder_has_one_signature():
    """find_citations(text, known, default_act, *, kinds) means the same in every language, so the
    one entry point passes its arguments through unchanged (no per-language renaming)."""
    import importlib
    import inspect

    from lexir.citations import citation_codes
    from lexir.citations import find_citations as find_any
    from lexir.jurisdiction import get_jurisdiction

    shared = ["text", "known", "default_act", "kinds"]
    for code in citation_codes():
        module = importlib.import_module(f"lexir.jurisdictions.{code}.citations")
        params = inspect.signature(module.find_citations).parameters
        assert get_jurisdiction(code).find_citations is not None, code
        lang = code
        assert [p for p in params if p in shared] == shared, (lang, list(params))
        assert params["kinds"].kind is inspect.Parameter.KEYWORD_ONLY
    texts = {"pl": "art. 5 § 2", "de": "§ 823 Abs. 1", "el": "άρθρο 5"}
    for lang, text in texts.items():
        (bare,) = find_any(text, lang, known={}, kinds=None)
        (dated,) = find_any(text, lang, known={}, default_act="X", kinds=None)
        assert bare.act is None and (dated.act, dated.resolved_from) == ("X", "default"), lang


# ---------------------------------------------------------------------------
# offsets, JSON, legal-basis leniency


def test_offsets_in_running_text():
    text = (
        "Zgodnie z art. 5 § 1 i 2 oraz art. 6 Kodeksu cywilnego, a także art. 7 zd. drugie k.p.c.,\n"
        "sąd stosuje art. 148 § 2 pkt 1 k.k. (zob. też art. 41¹ k.k.)."
    )
    found = find_citations(text)
    assert len(found) == 6
    for c in found:
        assert text[c.start : c.end] == c.text
    assert [c.unit_id for c in found] == [
        "kc::5/par:1",
        "kc::5/par:2",
        "kc::6",
        "kpc::7/zd:2",
        "kk::148/par:2/pkt:1",
        "kk::41^1",
    ]
    assert [c.start for c in found] == sorted(c.start for c in found)


def test_to_json_shape():
    (c,) = find_citations("art. 16 § 2 k.k.")
    assert c.to_json() == {
        "span": {"start": 0, "end": 16, "text": "art. 16 § 2 k.k."},
        "act": "kk",
        "article": "16",
        "path": {"par": "2"},
        "id": "kk::16",
        "act_raw": "k.k.",
        "kind": "statute",
        "resolved_from": "explicit",
        "repealed": False,
        "also": [],  # further units of the same article (German "Abs. 1 und 4"); none here
        "following": False,  # "§§ 1 ff.", "articles 1231-1 et suivants"
        "instrument": None,  # the EU instrument of kind eu
    }
    (bare,) = find_citations("art. 16 § 2")
    assert (bare.to_json()["act_raw"], bare.to_json()["resolved_from"]) == ("", None)


def test_art_without_its_dot_before_a_number_as_questions_are_typed(data_dir):
    """``art 148 kk`` (no dot, as a search box gets it) was no citation at all, so the question's
    cited article could not be put first; ``art`` without a dot counts only before a number, and
    not one citation of the five codes or of the 2,166 exam questions changes with it."""
    assert [(c.id, c.unit_id) for c in find_citations("ukradłem rower, art 278 kk")] == [("kk::278", "kk::278")]
    assert [c.unit_id for c in find_citations("Art 148 § 2 KK")] == ["kk::148/par:2"]
    assert [c.id for c in find_citations("art 415 kc i art 445 kc")] == ["kc::415", "kc::445"]
    assert find_citations("start 5 kk") == [] and find_citations("art kk") == [] and find_citations("arta 5") == []
    texts = [text for code in CODES
             for text in json.loads((data_dir / "pl" / "codes" / f"{code}.json").read_text(encoding="utf-8")).values()]
    with open(data_dir / "pl" / "exams_2012_2023.jsonl", encoding="utf-8") as f:
        texts += [json.loads(line)["question"] for line in f]
    undotted = [t for t in texts if re.search(r"(?<![\w.])art(?=\s+\d)", t, re.I)]
    assert len(texts) > 6000 and undotted == []  # the data never writes it: nothing found there changes


def test_legal_basis_leniency():
    assert parse_legal_basis("a rt. 358 § 1 k.c.")[0].id == "kc::358"
    assert parse_legal_basis("415 k.c.")[0].id == "kc::415"
    assert find_citations("a rt. 358 § 1 k.c.") == []
    assert parse_legal_basis("brak podstawy prawnej") == []
    assert parse_legal_basis("") == []


# ---------------------------------------------------------------------------
# OryCore gold


def test_orycore_gold_matches_raw(data_dir, known):
    sample = json.loads((data_dir / "pl" / "orycore" / "exam-adw-2024-sample.json").read_text())
    checked = 0
    for q in sample["questions"]:
        for item in q["gold"] or []:
            gold = gold_from_orycore(item)
            parsed = parse_legal_basis(q["legal_basis_raw"], known)
            assert gold is not None and parsed
            assert (gold.id, gold.path) == (parsed[0].id, parsed[0].path)
            assert gold.act_raw == item["act_raw"]
            checked += 1
    assert checked == 10


def test_orycore_gold_variants():
    sup = {"article": "454", "article_sup": "1", "unit": "§ 1 pkt 2", "act_abbrev": "k.c.", "act_raw": "k.c."}
    assert gold_from_orycore(sup).unit_id == "kc::454^1/par:1/pkt:2"
    named = {
        "article": "5",
        "article_sup": None,
        "unit": "ust. 1",
        "act_abbrev": None,
        "act_name": "o dostępie do informacji publicznej",
        "act_raw": "ustawy z dnia 6 września 2001 r. o dostępie do informacji publicznej",
    }
    assert gold_from_orycore(named).unit_id == "udip::5/ust:1"
    unknown = {
        "article": "114",
        "unit": None,
        "act_abbrev": None,
        "act_name": None,
        "act_raw": "ustawy z dnia – Prawo o czymś",
    }
    got = gold_from_orycore(unknown)
    assert got.act is None and got.id is None and got.article == "114"
    assert gold_from_orycore({"article": None, "act_abbrev": "k.c."}) is None


# ---------------------------------------------------------------------------
# kks.json: art. 106ł run into 106l; art. 53 absent from the source


def test_kks_embedded_article_is_split_and_missing_one_reported(data_dir, caplog):
    import logging

    from lexir.jurisdictions.pl.datasets import (
        load_codes,
        missing_articles,
        read_code_file,
        split_embedded_articles,
    )

    path = data_dir / "pl" / "codes" / "kks.json"
    raw = read_code_file(path)
    articles = split_embedded_articles(raw)
    assert "106ł" not in raw and "Art. 106ł." in raw["106l"]
    assert "Art. 106ł" not in articles["106l"] and articles["106l"].rstrip().endswith("skarbowe.")
    assert articles["106ł"].startswith("§ 1. Kto, nie dopełniając obowiązku nadzoru")
    assert list(articles).index("106ł") == list(articles).index("106l") + 1
    assert "53" in missing_articles(articles) and "52" not in missing_articles(articles)
    with caplog.at_level(logging.INFO, logger="lexir.jurisdictions.pl.datasets"):
        corpus = load_codes({"kks": path})
    assert "kks::106ł" in corpus and "kks::106l" in corpus and "kks::53" not in corpus
    assert any("kks.json" in r.getMessage() and " 53" in r.getMessage() for r in caplog.records)
    (cite,) = find_citations("art. 106ł § 1 k.k.s.", known={"kks": {d.id.split("::")[1] for d in corpus}})
    assert cite.id == "kks::106ł"
