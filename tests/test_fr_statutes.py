"""French codes (lexir.jurisdictions.fr.statutes) on the real legalize-fr snapshot."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from lexir.jurisdictions.fr.statutes import (
    CodeSyntaxError,
    article_label,
    code_counts,
    code_table,
    load_french_codes,
    parse_code,
    parse_member,
)
from lexir.structure.parsing import ParseError

DATA = Path("/work/shared/data/fr")
TAR = DATA / "codes.tar.xz"


@pytest.fixture(scope="module")
def parsed():
    if not TAR.is_file():
        pytest.skip(f"{TAR} missing")
    acts, errors = load_french_codes(TAR)
    return {a.id: a for a in acts}, errors


@pytest.fixture(scope="module")
def counts():
    if not TAR.is_file():
        pytest.skip(f"{TAR} missing")
    return code_counts(TAR)


def _expected() -> dict[str, tuple[str, int]]:
    with open(DATA / "codes.tsv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return {r["identifier"]: (r["format"], int(r["articles"] if r["format"] == "headings" else r["plain_article_lines"]))
            for r in rows}


# Differences from codes.tsv that are explained (identifier -> (parsed - expected, reason)).
JUSTIFIED = {
    # "##### Article  " (no number) before A471-36: left out and reported, never given a guessed label
    "LEGITEXT000044595989": -1,
    # two body lines "Article abrogé." start with "Article " but are text, not article headings
    "LEGITEXT000006069576": -2,
}


def test_article_counts_match_codes_tsv(counts):
    got, errors = counts
    expected = _expected()
    assert set(got) == set(expected), "every file of the archive is parsed"
    totals = {"headings": [0, 0], "plain": [0, 0]}
    differences = {}
    for ident, (fmt, n) in expected.items():
        assert got[ident].format == fmt, ident
        totals[fmt][0] += got[ident].articles
        totals[fmt][1] += n
        if got[ident].articles != n:
            differences[ident] = got[ident].articles - n
    print("parsed vs codes.tsv:", totals, "total", sum(t[0] for t in totals.values()), "vs",
          sum(t[1] for t in totals.values()))
    assert differences == JUSTIFIED
    assert [(e.path, e.line) for e in errors] == [("codes/LEGITEXT000044595989.md", 10751)]


def test_every_code_has_a_table_row(counts):
    got, _ = counts
    table = {e.identifier: e.source for e in code_table()}
    assert {c.source for c in got.values()} == {table[i] for i in got}
    assert len({c.source for c in got.values()}) == len(got)  # near-duplicates get distinct ids
    assert got["LEGITEXT000006074068"].source != got["LEGITEXT000031712069"].source
    assert got["LEGITEXT000006071007"].source != got["LEGITEXT000037673300"].source


def test_code_civil_1240_hierarchy_and_text(parsed):
    acts, _ = parsed
    civ = acts["Cciv"]
    path = [(d.level, d.label) for d in civ.division_path("Cciv::1240")]
    assert path == [("livre", "III"), ("titre", "III"), ("sous-titre", "II"), ("chapitre", "I")]
    assert civ.division_path("Cciv::1240")[-1].title == "La responsabilité extracontractuelle en général"
    art = next(a for a in civ.articles if a.id == "Cciv::1240")
    assert art.text.startswith("Tout fait quelconque de l'homme")
    assert [c.id for c in art.children] == ["Cciv::1240/al:1"]


def test_alineas_items_and_lits(parsed):
    acts, _ = parsed
    civ = {a.id: a for a in acts["Cciv"].articles}
    three = civ["Cciv::3"]
    assert [c.id for c in three.children] == ["Cciv::3/al:1", "Cciv::3/al:2", "Cciv::3/al:3"]
    assert three.children[1].text.startswith("Les immeubles, même ceux possédés par des étrangers")
    units = {u.id: u for a in acts.values() for u in a.units()}
    items = [u for u in units.values() if u.level == "item"]
    assert items and all(u.text.startswith(u.label.split("_")[0].split("~")[0]) for u in items)
    lits = [u for u in units.values() if u.level == "lit" and "/item:" in u.id]
    assert lits and all(u.text[0] == u.label[0] for u in lits)


def test_plain_format_code(parsed):
    acts, _ = parsed
    art = acts["Cartisanat"]
    first = art.articles[0]
    assert first.id == "Cartisanat::L111-1"
    assert [d.level for d in art.division_path(first.id)] == ["partie", "livre", "titre", "chapitre"]
    l121 = next(a for a in art.articles if a.id == "Cartisanat::L121-1")
    assert [c.label for c in l121.children if c.level == "item"] == [str(i) for i in range(1, 10)]


def test_labels():
    assert article_label("L. 1232-1") == "L1232-1"
    assert article_label("R*2122-1") == "R*2122-1"
    assert article_label("1er") == "1"
    assert article_label("12 bis") == "12_bis"
    assert article_label("Annexe à l'article R. 122-30") == "Annexe_à_l'article_R122-30"


FRONT = '---\ntitle: "Code test"\nidentifier: "LEGITEXT000000000001"\n---\n# Code test\n\n'


def test_heading_without_number_names_file_and_line():
    text = FRONT + "## Livre Ier : X\n\n##### Article 1\n\nUn.\n\n##### Article\n\nDeux.\n"
    with pytest.raises(CodeSyntaxError) as info:
        parse_code(text, "codes/x.md", strict=True)
    assert (info.value.error.path, info.value.error.line) == ("codes/x.md", 13)
    lenient = parse_code(text, "codes/x.md")
    assert [a.label for a in lenient.act.articles] == ["1"]
    assert [(p.path, p.line) for p in lenient.problems] == [("codes/x.md", 13)]


def test_neither_format_is_an_error_naming_the_file():
    result = parse_member("codes/bad.md", (FRONT + "Du texte sans article.\nEncore.\n").encode())
    assert isinstance(result, ParseError)
    assert result.path == "codes/bad.md" and result.line == 5 and "neither format" in result.message
    nofront = parse_member("codes/nofront.md", b"# Titre\n##### Article 1\nx\n")
    assert isinstance(nofront, ParseError) and nofront.line == 1
