"""The Austrian statute parser on the real laws (``/work/shared/data/at``) and on small bad inputs."""

from __future__ import annotations

import csv
import io
import tarfile
from pathlib import Path

import pytest

from lexir.citations.model import read_act_table
from lexir.jurisdictions.at.statutes import (
    SOURCE_PREFIX,
    LawSyntaxError,
    act_id,
    load_austrian_laws,
    parse_law,
)
from lexir.types import Act

DATA = Path("/work/shared/data/at")
TABLE = Path(__file__).resolve().parents[1] / "src/lexir/jurisdictions/at/data/acts.tsv"

# Where the parsed § count differs from laws.tsv's "§ headings" column, and why. Every other law
# must agree exactly (the test fails on any new difference).
EXPECTED_DIFFERENCES = {
    # laws.tsv counts the heading "Art. 3 RAO — (Anm.: … zu den §§ 23 und 27a …)", an Artikel
    # (parsed as level "art", label "3") whose title only mentions §§.
    "RAO": -1,
    # laws.tsv counts 0 § headings: the law is numbered in Artikel (parsed as level "art").
    "EGVG": 0,
    "WechselG": 0,
}


def _header(markdown: str) -> str:
    return (
        "# BG.X — Testgesetz (X)\n**Typ:** Bundesgesetz  \n**Kurztitel:** X  \n"
        "**Langtitel:** Bundesgesetz über Tests (Testgesetz – X)  \n\n## Inhaltsverzeichnis\n\n"
        "* [§ 1 X — Eins](#-1-x)\n\n" + markdown
    )


@pytest.fixture(scope="module")
def parsed() -> tuple[dict[str, Act], list]:
    if not (DATA / "laws.tar.xz").exists():
        pytest.skip("no Austrian data at /work/shared/data/at")
    acts, errors = load_austrian_laws(DATA / "laws.tar.xz")
    return {a.id: a for a in acts}, errors


@pytest.fixture(scope="module")
def table_rows() -> list[dict[str, str]]:
    # laws.tsv cuts long titles inside a UTF-8 sequence: those bytes are replaced
    with (DATA / "laws.tsv").open(encoding="utf-8", errors="replace") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_all_44_laws_parse_without_errors(parsed):
    acts, errors = parsed
    assert errors == []
    assert len(acts) == 44
    assert all(key.startswith(SOURCE_PREFIX) and act.id == key for key, act in acts.items())
    assert "AT-VerG" in acts and "AT-VerG_2002" not in acts


def test_paragraph_counts_match_laws_tsv(parsed, table_rows):
    acts, _ = parsed
    diffs = {}
    total_tsv = total_parsed = 0
    for row in table_rows:
        kurz = row["short title"].split(",")[0].strip()
        act = acts[act_id(kurz)]
        n = sum(1 for a in act.articles if a.level == "para")
        expected = int(row["§ headings"])
        total_tsv += expected
        total_parsed += n
        if n != expected:
            diffs[kurz] = n - expected
    assert diffs == {k: v for k, v in EXPECTED_DIFFERENCES.items() if v}
    assert total_parsed == total_tsv - 1


def test_article_laws_have_artikel(parsed):
    acts, _ = parsed
    wechsel = acts["AT-WechselG"]
    assert wechsel.articles and all(a.level == "art" for a in wechsel.articles)
    assert wechsel.articles[0].id == "AT-WechselG::1"
    assert len(wechsel.articles) == 102
    assert [a.label for a in acts["AT-EGVG"].articles] == ["1", "2", "3", "4", "5"]


def test_labels_are_unique_per_law(parsed):
    acts, _ = parsed
    for act in acts.values():
        ids = [u.id for u in act.units()]
        assert len(ids) == len(set(ids)), act.id


def test_abgb_1295_absaetze(parsed):
    acts, _ = parsed
    art = next(a for a in acts["AT-ABGB"].articles if a.label == "1295")
    assert art.id == "AT-ABGB::1295" and art.level == "para"
    assert [c.id for c in art.children] == ["AT-ABGB::1295/abs:1", "AT-ABGB::1295/abs:2"]
    assert art.children[0].text.startswith("(1) Jedermann ist berechtigt, von dem Beschädiger")
    assert "\\" not in art.text  # Markdown escapes removed
    assert art.title == "1) von dem Schaden aus Verschulden;"


def test_ziffern_of_mrg_15a(parsed):
    acts, _ = parsed
    units = {u.id: u for u in acts["AT-MRG"].units()}
    z3 = units["AT-MRG::15a/abs:1/z:3"]
    assert z3.level == "z" and z3.label == "3"
    assert z3.text.startswith("3. C, wenn sie in brauchbarem Zustand ist")
    abs1 = units["AT-MRG::15a/abs:1"]
    assert [c.label for c in abs1.children] == ["1", "2", "3", "4"]
    assert z3.text in abs1.text  # a unit's text holds its children's


def test_litera_level(parsed):
    acts, _ = parsed
    lits = [u for a in acts.values() for u in a.units() if u.level == "lit"]
    assert len(lits) > 1000
    assert all(u.id.rsplit("/", 2)[-2].split(":")[0] in ("z", "abs") or "::" in u.id.rsplit("/", 2)[-2]
               for u in lits)  # a litera stands under a Ziffer, an Absatz or the § itself
    mrg = {u.id for u in acts["AT-MRG"].units()}
    assert any(i.startswith("AT-MRG::") and "/z:" in i and "/lit:" in i for i in mrg)


def test_art_and_para_clashes_in_mrg(parsed):
    acts, _ = parsed
    labels = [a.label for a in acts["AT-MRG"].articles]
    assert "3§2" in labels and "Art2" in labels and "Art2~2" in labels
    assert "2" in labels  # § 2 MRG keeps its plain number
    dsg = acts["AT-DSG"]
    assert [a.label for a in dsg.articles][:3] == ["1", "4", "5"]  # Art. 1 § 1 DSG is § 1, Art. 2 § 4 is § 4


def test_divisions(parsed):
    acts, _ = parsed
    mrg = acts["AT-MRG"]
    first = mrg.divisions[0]
    assert first.id == "AT-MRG::hauptstück:I" and first.title == "Miete"
    assert "AT-MRG::1" in first.articles
    abgb = acts["AT-ABGB"]
    path = [d.id for d in abgb.division_path("AT-ABGB::1295")]
    assert path[0].startswith("AT-ABGB::teil:2")
    assert any(":hauptstück:" in p or "/hauptstück:" in p for p in path)


def test_annexes(parsed):
    acts, _ = parsed
    asvg = [a for a in acts["AT-ASVG"].articles if a.level == "anlage"]
    assert len(asvg) == 13 and asvg[0].label == "Anlage 1"
    assert "AT-IO::Anlage A" in {a.id for a in acts["AT-IO"].articles}


def test_act_table_lists_every_law(parsed):
    acts, _ = parsed
    entries = {e.source: e for e in read_act_table(TABLE)}
    assert set(entries) == set(acts)
    for source, entry in entries.items():
        assert source.removeprefix(SOURCE_PREFIX) in entry.abbreviations
        assert acts[source].title in entry.names
    assert "Mietrechtsgesetz" in entries["AT-MRG"].names


# ---------------------------------------------------------------------------
# bad input


def test_heading_without_number_names_line():
    md = _header("## I. Hauptstück\n\n### § 1 X — Eins\n\n> `(1)` Text\\.\n\n### § X — Ohne Nummer\n\n> Text\n")
    with pytest.raises(LawSyntaxError) as info:
        parse_law(md, "laws/BG.X.md")
    err = info.value.error
    assert err.path == "laws/BG.X.md"
    assert err.line == md.split("\n").index("### § X — Ohne Nummer") + 1
    assert "without a number" in err.message


def test_law_without_units_is_an_error():
    md = _header("## I. Hauptstück\n\nNur Text.\n")
    with pytest.raises(LawSyntaxError) as info:
        parse_law(md, "laws/BG.X.md")
    assert info.value.error.path == "laws/BG.X.md" and info.value.error.line > 0


def test_no_kurztitel_is_an_error():
    with pytest.raises(LawSyntaxError) as info:
        parse_law("# BG.Y — Y\n\n### § 1 Y\n", "laws/BG.Y.md")
    assert info.value.error.line == 1


def test_synthetic_tree_and_escapes():
    md = _header(
        "## 1. Abschnitt\n## Allgemeines\n\n### § 1 X — Eins\n\n> `(1)` Es gilt:\n\n>> `1.` erstens,\n\n"
        ">>> `a)` klein a,\n\n>>> `b)` klein b;\n\n>> `2.` zweitens\\.\n\n> Schlussworte\\.\n\n"
        "> `(2)` Nichtig\\.\n\n\\[ [🔗 Permalink](x) \\]\n\n----\n\n### § 1a X\n\n> `1.` Eins\\.\n"
    )
    act = parse_law(md, "laws/BG.X.md")
    units = {u.id: u for u in act.units()}
    assert act.id == "AT-X" and act.title == "Bundesgesetz über Tests (Testgesetz – X)"
    assert units["AT-X::1/abs:1/z:1/lit:b"].text == "b) klein b;"
    assert units["AT-X::1/abs:1"].text.endswith("Schlussworte.")  # back to the Absatz
    assert units["AT-X::1/abs:2"].text == "(2) Nichtig."
    assert "Permalink" not in units["AT-X::1"].text
    assert units["AT-X::1a/z:1"].text == "1. Eins."
    assert act.divisions[0].id == "AT-X::abschnitt:1" and act.divisions[0].title == "Allgemeines"
    assert act.divisions[0].articles == ["AT-X::1", "AT-X::1a"]


def test_bad_law_does_not_lose_the_others(tmp_path):
    good = _header("### § 1 X — Eins\n\n> `(1)` Gut\\.\n")
    bad = _header("### § 1 X\n\n> Text\n\n### Art. — Ohne\n").replace("Kurztitel:** X", "Kurztitel:** Z")
    tar_path = tmp_path / "laws.tar.xz"
    with tarfile.open(tar_path, "w:xz") as tar:
        for name, text in (("laws/BG.Z.md", bad), ("laws/BG.X.md", good)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    acts, errors = load_austrian_laws(tar_path)
    assert [a.id for a in acts] == ["AT-X"]
    assert len(errors) == 1 and errors[0].path == "laws/BG.Z.md"
    assert errors[0].line == bad.split("\n").index("### Art. — Ohne") + 1
