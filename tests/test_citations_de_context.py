"""German citations as written and resolved in context (issue #12): act_raw, kind, resolved_from,
repealed. Sentences come from the de-refex decisions in ../shared/data where they have the case;
the others are the decision sentences quoted in the issue."""

import json

import pytest

from lexir.citations.extract import cite_lines
from lexir.jurisdictions.de.citations import act_source, find_citations, repealed_acts
from lexir.jurisdictions.de.refex import load_refex, refex_split

BAG = "bag_1966-01-28_97c71edd7c89"
BVERFG = "bverfg_1987-07-01_5603d87f1423"
BGH = "bgh_2010-05-12_79a71a550f5d"
BAYOBLG = "bayerisches-oberstes-landesgericht_2001-10-05_295d35683e42"


@pytest.fixture(scope="module")
def decisions(data_dir):
    return {d.id: d.text for d in load_refex(data_dir / "de" / "refex")}


def _sentence(text, needle):
    i = text.index(needle)
    start = max(text.rfind("\n", 0, i), text.rfind(". ", 0, i) + 1) + 1
    end = text.find("\n", i)
    return text[start : end if end >= 0 else len(text)]


def test_json_carries_the_act_as_written():
    (line,) = cite_lines("Die Beschwerde nach § 19 FGG ist zulässig.", "de")
    row = json.loads(line)
    assert row["act_raw"] == "FGG" and row["act"] is None and row["id"] is None
    assert row["repealed"] is True and row["kind"] == "statute" and row["resolved_from"] == "explicit"
    assert repealed_acts()["FGG"].successor == "FamFG"


def test_common_abbreviations_and_long_names():
    (c,) = find_citations("Der Bebauungsplan ist nach § 9 BauGB festgesetzt.")
    assert (c.id, c.act_raw) == ("BBauG::9", "BauGB")
    (c,) = find_citations("nach § 236 Abs 1 Fünftes Buch Sozialgesetzbuch (SGB V) beitragspflichtig")
    assert (c.id, c.path, c.text) == ("SGB 5::236", {"abs": "1"}, "§ 236 Abs 1 Fünftes Buch Sozialgesetzbuch (SGB V)")
    (c,) = find_citations("Die Rücknahme richtet sich nach § 45 des Zehnten Buches Sozialgesetzbuch.")
    assert c.id == "SGB 10::45"
    assert act_source("des Umsatzsteuergesetzes") == act_source("UStG")
    assert act_source("der Finanzgerichtsordnung") == "FGO"
    assert act_source("EGGVG") == "GVGEG" and act_source("der Zivilprozessordnung") == "ZPO"


def test_act_in_the_same_paragraph_resolves_a_bare_reference():
    text = ("Die Beiträge bemessen sich nach dem SGB V. Für freiwillige Mitglieder gilt nach § 240 Abs 4 S 1 "
            "eine Mindestbemessungsgrundlage.")
    (c,) = find_citations(text)
    assert (c.id, c.path, c.resolved_from, c.act_raw) == ("SGB 5::240", {"abs": "4", "satz": "1"}, "context", "SGB V")
    # never across a heading or a new decision part
    (c,) = find_citations("Die Beiträge bemessen sich nach dem SGB V.\nGründe\nNach § 240 Abs 4 ist das so.")
    assert c.act is None and c.resolved_from is None
    # an act that has no § cannot hold a bare § (the Grundgesetz numbers Artikel; units from the index)
    (c,) = [c for c in find_citations("Art. 3 Abs. 1 GG ist verletzt. Nach § 5 Abs. 1 ist das so.") if c.article == "5"]
    assert c.act is None
    (c,) = [c for c in find_citations("Nach § 823 BGB und Art. 4 ist das so.") if c.article == "4"]
    assert c.act is None
    # in a statute the law being read wins: default_act
    (c,) = find_citations("Die Beiträge nach dem SGB V. Nach § 240 Abs 4", default_act="SGB 6")
    assert (c.act, c.resolved_from) == ("SGB 6", "default")


def test_absatz_alone_refers_to_the_last_cited_paragraph(decisions):
    sentence = _sentence(decisions[BAYOBLG], "§ 19 Abs. 1 Satz 1, Abs. 2 Satz 1 KostO")
    cites = find_citations(sentence + " Nach Abs. 2 ist der Wert maßgebend.")
    last = cites[-1]
    assert (last.text, last.article, last.path, last.resolved_from) == ("Abs. 2", "19", {"abs": "2"}, "context")
    assert last.act_raw == "KostO" and last.repealed
    # in the statute itself "Absatz 2" is a unit of the § being read: not resolved to the last §
    assert [c.text for c in find_citations("nach § 5 gilt Absatz 2 entsprechend", default_act="BGB")] == ["§ 5"]


def test_contract_and_bylaw_clauses_are_not_statutes(decisions):
    sentence = _sentence(decisions[BAG], "in § 10 des Vertrages vom 31. Dezember 1955")
    assert [c for c in find_citations(sentence) if c.article == "10"] == []
    (c,) = [c for c in find_citations(sentence, kinds=None) if c.article == "10"]
    assert (c.kind, c.act, c.id) == ("contract", None, None)
    (c,) = find_citations("Der Vermieter kann nach § 3 Nr. 8 des Mietvertrages kündigen.", kinds=None)
    assert c.kind == "contract"
    (c,) = find_citations("Der Ausschluss nach § 10 Abs 2 der Satzung war wirksam.", kinds=None)
    assert (c.kind, c.path) == ("bylaw", {"abs": "2"})
    assert find_citations("Einigungsvertrag: Art. 8 des Einigungsvertrages", kinds=None)[0].kind == "statute"


def test_collections_and_commentaries_are_not_statutes(decisions):
    text = "(BSG SozR 3-2500 § 13 Nr 33 S 155)"
    assert find_citations(text) == []
    assert [c.kind for c in find_citations(text, kinds=None)] == ["collection"]
    sentence = _sentence(decisions[BGH], "§ 3 UWG Rdn. 4")
    kinds = {c.text: c.kind for c in find_citations(sentence, kinds=None)}
    assert kinds["§ 3 UWG"] == "commentary"
    assert "§ 3 UWG" not in {c.text for c in find_citations(sentence)}
    # a § right after a book's edition, with no act after it, is a place in the book
    sentence = _sentence(decisions[BAG], "7. Aufl., 1963, § 54 III 5")
    (c,) = [c for c in find_citations(sentence, kinds=None) if c.article == "54"]
    assert c.kind == "commentary"


def test_partly_repealed_act_is_flagged_only_for_missing_paragraphs(decisions):
    sentence = _sentence(decisions[BVERFG], "§ 80 RVO")
    (c,) = [c for c in find_citations(sentence, known={"RVO": {"1", "2"}}) if c.act == "RVO"]
    assert c.repealed and c.id == "RVO::80"
    (c,) = [c for c in find_citations(sentence, known={"RVO": {"80"}}) if c.act == "RVO"]
    assert not c.repealed


def test_repealed_table_names_acts_absent_from_the_corpus():
    for abbrev, row in repealed_acts().items():
        assert row.repealed_by and row.successor, abbrev
        if row.scope == "all":
            assert act_source(abbrev) is None, abbrev  # a repealed act must not resolve to a corpus act
        else:
            assert act_source(abbrev) is not None, abbrev


def test_refex_split_is_deterministic_and_disjoint(data_dir):
    docs = load_refex(data_dir / "de" / "refex")
    dev, held = refex_split(docs, "dev"), refex_split(docs, "heldout")
    assert dev and held and {d.id for d in dev}.isdisjoint(d.id for d in held)
    assert len(dev) + len(held) == len(docs) == len(refex_split(docs, "all"))
    with pytest.raises(ValueError, match="dev"):
        refex_split(docs, "test")


def test_cli_all_kinds(tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app

    text = tmp_path / "t.txt"
    text.write_text("Nach § 10 Abs 2 der Satzung und § 19 FGG.", encoding="utf-8")
    runner = CliRunner()
    plain = [json.loads(x) for x in runner.invoke(app, ["cite", str(text), "--lang", "de"]).output.splitlines()]
    assert [(r["act_raw"], r["kind"], r["repealed"]) for r in plain] == [("FGG", "statute", True)]
    every = runner.invoke(app, ["cite", str(text), "--lang", "de", "--all-kinds"])
    rows = [json.loads(x) for x in every.output.splitlines()]
    assert every.exit_code == 0 and [r["kind"] for r in rows] == ["bylaw", "statute"]
    assert rows[0]["path"] == {"abs": "2"} and rows[0]["id"] is None


def test_short_titles_are_learnt_from_bgbl_references(data_dir, tmp_path):
    """The corpus titles are long titles (KredWG: "Gesetz über das Kreditwesen"); laws cite each
    other by short title and BGBl. reference, which is the Neufassung in KredWG's own header."""
    import tarfile

    from lexir.jurisdictions.de.act_table import mine_short_titles

    members = ["./k/kredwg/index.md", "./b/bafinbefugv/index.md", "./k/kwgvermv/index.md"]
    mini = tmp_path / "mini.tar.gz"
    with tarfile.open(data_dir / "de" / "gesetze_markdown_all.tar.gz") as src, tarfile.open(mini, "w:gz") as out:
        for name in members:
            info = src.getmember(name)
            out.addfile(info, src.extractfile(info))
    assert mine_short_titles(mini).get("Kreditwesengesetz") == "KredWG"
    assert mine_short_titles(mini, min_votes=3).get("Kreditwesengesetz") is None  # only two laws cite it here
    # the shipped table has it, from the whole corpus
    assert act_source("des Kreditwesengesetzes") == "KredWG"
    assert act_source("des Bundes-Immissionsschutzgesetzes") == "BImSchG"
