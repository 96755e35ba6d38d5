"""French citations (lexir.jurisdictions.fr.citations) resolved against the parsed Code civil and
Code du travail."""

from __future__ import annotations

from pathlib import Path

import pytest

from lexir.jurisdictions.fr.citations import find_citations, tokenise
from lexir.jurisdictions.fr.statutes import load_french_codes
from lexir.jurisdictions.fr.travail import load_code_du_travail

DATA = Path("/work/shared/data/fr")


@pytest.fixture(scope="module")
def units():
    """Every unit id and the article labels (``known``) of the Code civil and the Code du travail."""
    if not (DATA / "codes.tar.xz").is_file() or not (DATA / "code-du-travail.json.xz").is_file():
        pytest.skip(f"{DATA} missing")
    acts, _ = load_french_codes(DATA / "codes.tar.xz")
    chosen = [a for a in acts if a.id == "Cciv"] + [load_code_du_travail(DATA / "code-du-travail.json.xz")]
    ids = {u.id for act in chosen for u in act.units()}
    known = {act.id: {a.label for a in act.articles} for act in chosen}
    return ids, known


CASES = [
    # text, expected unit ids (in order), resolved_from of the first
    ("article 1240 du code civil", ["Cciv::1240"], "explicit"),
    ("Selon l'article 1240 du Code civil, tout fait", ["Cciv::1240"], "explicit"),
    ("art. 1240 C. civ.", ["Cciv::1240"], "explicit"),
    ("C. civ., art. 1103", ["Cciv::1103"], "prefix"),
    ("art. L. 1232-1 C. trav.", ["Ctrav::L1232-1"], "explicit"),
    ("articles L. 1232-1 et L. 1232-2 du code du travail", ["Ctrav::L1232-1", "Ctrav::L1232-2"], "group"),
    ("articles 1103 à 1105 du code civil", ["Cciv::1103", "Cciv::1104", "Cciv::1105"], "explicit"),
    ("l'article 1240, alinéa 2, du code civil", None, "explicit"),  # 1240 has one alinéa: checked below
    ("l'article 3, al. 2, C. civ.", ["Cciv::3/al:2"], "explicit"),
    ("le deuxième alinéa de l'article 3 du code civil", ["Cciv::3/al:2"], "explicit"),
    ("article L. 1237-19-1, 1° du code du travail", ["Ctrav::L1237-19-1/item:1"], "explicit"),
    ("art. R*2122-1 C. trav.", ["Ctrav::R*2122-1"], "explicit"),
    ("article 1er du code civil", ["Cciv::1"], "explicit"),
]


@pytest.mark.parametrize("text,expected,how", CASES)
def test_forms_resolve_to_parsed_units(units, text, expected, how):
    ids, known = units
    cites = find_citations(text, known=known)
    assert cites and cites[0].resolved_from == how
    got = [c.unit_id for c in cites]
    if expected is not None:
        assert got == expected
    for c in cites:
        assert c.text == text[c.start:c.end]
        assert c.id in ids  # the article exists in the parsed code
    if expected is not None:
        assert all(u in ids for u in got)


def test_alinea_path_matches_provision_levels(units):
    ids, known = units
    (c,) = find_citations("l'article 1240, alinéa 2, du code civil", known=known)
    assert c.path == {"al": "2"} and c.unit_id == "Cciv::1240/al:2"
    assert "Cciv::1240/al:1" in ids and c.unit_id not in ids  # the article has one alinéa only


def test_lit_under_item(units):
    ids, known = units
    lits = sorted(u for u in ids if u.startswith("Ctrav::") and "/item:" in u and "/lit:" in u)
    article, rest = lits[0].split("::", 1)[1].split("/", 1)
    item, lit = rest.split("/")[0].split(":")[1], rest.split("/")[1].split(":")[1]
    text = f"au {lit}) du {item}° de l'article {article} du code du travail"
    (c,) = find_citations(text, known=known)
    assert c.unit_id == lits[0]


def test_et_suivants_marks_the_first_article(units):
    _, known = units
    (c,) = find_citations("les articles 1231-1 et suivants du code civil", known=known)
    assert c.id == "Cciv::1231-1" and c.following
    (d,) = find_citations("l'article 1231-1 du code civil", known=known)
    assert not d.following


def test_range_without_known_cites_both_ends():
    cites = find_citations("articles 1103 à 1105 du code civil")
    assert [c.id for c in cites] == ["Cciv::1103", "Cciv::1105"]


def test_default_and_context():
    (c,) = find_citations("En application de l'article 1240, la victime", default_act="Cciv")
    assert (c.id, c.resolved_from) == ("Cciv::1240", "default")
    (c,) = find_citations("Vu le code du travail, notamment l'article L. 1232-1 ;")
    assert (c.id, c.resolved_from) == ("Ctrav::L1232-1", "context")
    (c,) = find_citations("Vu le code du travail ;\nVu l'article L. 1232-1 ;")
    assert c.act is None and c.id is None  # another paragraph: no context
    (c,) = find_citations("l'article 5 du présent code", default_act="Cpen")
    assert c.id == "Cpen::5" and c.resolved_from == "default"


def test_a_law_is_not_a_code_article():
    text = "l'article 3 de la loi n° 89-462 du 6 juillet 1989, et non l'article 1240 du code civil"
    cites = find_citations(text, default_act="Cciv")
    assert [(c.act, c.article, c.id, c.instrument) for c in cites] == [
        (None, "3", None, "loi n° 89-462"), ("Cciv", "1240", "Cciv::1240", None)]
    (law,) = find_citations("la loi n° 89-462 du 6 juillet 1989 tendant à améliorer", default_act="Cciv")
    assert law.act is None and law.article is None and law.unit_id is None


def test_unknown_code_is_never_guessed():
    (c,) = find_citations("article 12 du code des marchés publics", default_act="Cciv")
    assert (c.act, c.id, c.act_raw) == (None, None, "code des marchés publics")


def test_tokenise_finds_codes_and_laws():
    toks = tokenise("Le code de procédure civile, le C. pr. pén. et la loi n° 65-557 du 10 juillet 1965.")
    assert [(t.kind, t.source) for t in toks] == [("code", "CPC"), ("code", "CPP"), ("law", None)]
