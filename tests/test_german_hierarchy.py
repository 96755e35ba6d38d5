"""The German hierarchy above the § (Buch, Teil, Abschnitt, Titel, Untertitel, Kapitel, ...), on
real laws of de-gesetze: BGB, StGB and ZPO (§ laws with different heading words and depths) and
the GG (Art headings under numbered sections without a heading word)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lexir.citations.format import division_crumbs, division_starts, find_unit, unit_breadcrumbs
from lexir.jurisdictions.de.statutes import parse_law, read_law_files
from lexir.structure.graph import build_graph
from lexir.structure.packed import pack_act, unpack_act
from lexir.types import Division, UnitId

TAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "de" / "gesetze_markdown_all.tar.gz"
FILES = {"BGB": "b/bgb/index.md", "StGB": "s/stgb/index.md", "ZPO": "z/zpo/index.md", "GG": "g/gg/index.md"}

pytestmark = pytest.mark.skipif(not TAR.is_file(), reason="de-gesetze archive not present")


@pytest.fixture(scope="module")
def markdown():
    return read_law_files(TAR, FILES.values())


@pytest.fixture(scope="module")
def laws(markdown):
    return {act_id: parse_law(markdown[path], path) for act_id, path in FILES.items()}


def _heading_counts(text: str) -> dict[str, int]:
    """Division headings of a law's Markdown, counted by the word that opens them, straight from
    the text (independent of the parser): ``## Buch 1 - ...``, ``### Erster Abschnitt - ...``."""
    out: dict[str, int] = {}
    for word in re.findall(r"^#{2,6} (?:\(XXXX\) )?(?:[A-ZÄÖÜ][a-zäöüß]+ )?(Buch|Teil|Abschnitt|Titel|Untertitel|"
                           r"Kapitel|Unterabschnitt)\b", text, flags=re.M):
        out[word.lower()] = out.get(word.lower(), 0) + 1
    return out


def test_bgb_823_stands_in_buch_abschnitt_titel(laws):
    path = laws["BGB"].division_path("BGB::823")
    assert [(d.level, d.label) for d in path] == [("buch", "2"), ("abschnitt", "8"), ("titel", "27")]
    assert [d.id for d in path] == ["BGB::buch:2", "BGB::buch:2/abschnitt:8", "BGB::buch:2/abschnitt:8/titel:27"]
    assert path[-1].title == "Unerlaubte Handlungen"
    assert path[-1].heading == "Titel 27"
    assert "BGB::826" in path[-1].articles and "BGB::853" in path[-1].articles
    # five levels deep in Buch 1: Untertitel 1 (Vereine) > Kapitel 1 (Allgemeine Vorschriften)
    deep = laws["BGB"].division_path("BGB::21")
    assert [d.level for d in deep] == ["buch", "abschnitt", "titel", "untertitel", "kapitel"]
    assert deep[3].title == "Vereine"


def test_stgb_ordinal_headings_become_numbers(laws):
    path = laws["StGB"].division_path("StGB::242")
    assert [(d.level, d.label) for d in path] == [("teil", "Besonderer"), ("abschnitt", "19")]
    assert path[-1].heading == "Neunzehnter Abschnitt"
    assert path[-1].title == "Diebstahl und Unterschlagung"
    assert [(d.level, d.label) for d in laws["StGB"].division_path("StGB::32")] == [
        ("teil", "Allgemeiner"), ("abschnitt", "2"), ("titel", "4")]


def test_zpo_and_gg(laws):
    assert [d.id for d in laws["ZPO"].division_path("ZPO::253")] == [
        "ZPO::buch:2", "ZPO::buch:2/abschnitt:1", "ZPO::buch:2/abschnitt:1/titel:1"]
    gg = laws["GG"]
    assert [d.id for d in gg.division_path("GG::1")] == ["GG::gliederung:I"]
    assert gg.division_path("GG::1")[0].title == "Die Grundrechte"
    assert [d.id for d in gg.division_path("GG::53a")] == ["GG::gliederung:IVa"]
    assert gg.division_path("GG::79")[0].label == "VII"


@pytest.mark.parametrize("act_id", list(FILES))
def test_divisions_are_well_formed(laws, markdown, act_id):
    act = laws[act_id]
    divisions = list(act.walk_divisions())
    assert divisions
    article_ids = [a.id for a in act.articles]
    # ids of the articles themselves are the plain scheme, untouched by the divisions
    assert all(a.id == f"{act_id}::{a.label}" for a in act.articles)
    # every division id parses as a lexir id, and never collides with an article id
    ids = [d.id for d in divisions]
    assert len(set(ids)) == len(ids)
    for d in divisions:
        parsed = UnitId.parse(d.id)
        assert parsed.source == act_id
        assert str(parsed) == d.id
        assert d.id.split("::", 1)[1].rsplit("/", 1)[-1] == f"{d.level}:{d.label}"
        assert d.articles or d.children  # no empty division is kept
        assert d.label[:1] not in ("-", "–", "_", "") and "/" not in d.label and ":" not in d.label
        for child in d.children:
            assert child.id.startswith(d.id + "/")
    assert not set(ids) & set(article_ids)
    # each article stands in at most one division, and a preorder walk meets them in document order
    placed = [a for d in divisions for a in d.articles]
    assert len(placed) == len(set(placed))
    assert set(placed) <= set(article_ids)
    order = {a: i for i, a in enumerate(article_ids)}

    def first_last(d: Division) -> tuple[int, int]:
        spans = [order[a] for a in d.articles] + [i for c in d.children for i in first_last(c)]
        return min(spans), max(spans)

    for d in divisions:  # siblings do not overlap and follow each other
        spans = [first_last(c) for c in d.children]
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


@pytest.mark.parametrize("act_id", ["BGB", "StGB", "ZPO"])
def test_every_printed_division_heading_is_kept(laws, markdown, act_id):
    """Each Buch / Abschnitt / Titel ... heading of the Markdown that has §§ below it is a division."""
    printed = _heading_counts(markdown[FILES[act_id]])
    kept: dict[str, int] = {}
    for d in laws[act_id].walk_divisions():
        kept[d.level] = kept.get(d.level, 0) + 1
    for level, count in printed.items():
        assert 0 < kept.get(level, 0) <= count, (level, kept, printed)
    assert sum(kept.values()) >= 0.9 * sum(printed.values())


def test_packing_keeps_divisions(laws):
    for act in laws.values():
        again = unpack_act(pack_act(act))
        assert again == act
        assert again.divisions == act.divisions


def test_graph_puts_divisions_between_act_and_articles(laws):
    graph = build_graph(laws.values(), cites=False)
    titel = "BGB::buch:2/abschnitt:8/titel:27"
    assert graph.parent_of("BGB::823") == titel
    assert graph.parent_of(titel) == "BGB::buch:2/abschnitt:8"
    assert graph.parent_of("BGB::buch:2") == "BGB"
    assert graph.level(titel) == "titel"
    assert graph.neighbours(titel, "contains")[:2] == ["BGB::823", "BGB::824"]
    # a division's words are its articles' words
    words = dict(zip(graph.ids, graph.words.tolist(), strict=True))
    assert words[titel] == sum(words[a] for a in find_unit(laws["BGB"], titel).articles)
    assert words["BGB"] == sum(words[a.id] for a in laws["BGB"].articles)
    # an article in no division (GG Präambel has none; Art 146 closes section XI) hangs where it stands
    for act in laws.values():
        for article in act.articles:
            path = act.division_path(article.id)
            assert graph.parent_of(article.id) == (path[-1].id if path else act.id)
    n_divisions = sum(1 for act in laws.values() for _ in act.walk_divisions())
    by_level = graph.stats()["nodes_by_level"]
    provision_levels = {u.level for act in laws.values() for u in act.units()}
    assert sum(c for lv, c in by_level.items() if lv not in provision_levels and lv != "act") == n_divisions
    assert by_level["kapitel"] == sum(d.level == "kapitel" for d in laws["BGB"].walk_divisions()) > 0


def test_breadcrumbs(laws):
    bgb = laws["BGB"]
    crumbs = unit_breadcrumbs(bgb, "BGB::823/abs:1", "de")
    assert [c["label"] for c in crumbs] == [
        "Bürgerliches Gesetzbuch", "Buch 2 Recht der Schuldverhältnisse",
        "Abschnitt 8 Einzelne Schuldverhältnisse", "Titel 27 Unerlaubte Handlungen",
        "§ 823 Schadensersatzpflicht", "Abs. 1"]
    assert [c["id"] for c in crumbs][-2:] == ["BGB::823", "BGB::823/abs:1"]
    assert [c.get("division", False) for c in crumbs] == [False, True, True, True, False, False]
    assert [c["label"] for c in unit_breadcrumbs(laws["StGB"], "StGB::242", "de")] == [
        "Strafgesetzbuch", "Besonderer Teil", "Neunzehnter Abschnitt Diebstahl und Unterschlagung",
        "§ 242 Diebstahl"]
    assert [c["label"] for c in unit_breadcrumbs(laws["GG"], "GG::1", "de")][1:] == [
        "I. Die Grundrechte", "Art. 1"]
    assert division_crumbs(laws["GG"], "GG::146")[-1]["id"] == "GG::gliederung:XI"
    assert division_crumbs(laws["BGB"], "BGB::no-such") == []
    # a division's own crumbs end at it
    assert [c["id"] for c in unit_breadcrumbs(bgb, "BGB::buch:2/abschnitt:8", "de")] == [
        "BGB", "BGB::buch:2", "BGB::buch:2/abschnitt:8"]


def test_show_and_the_service_give_every_unit_the_same_breadcrumbs(laws):
    """``lexir show`` (walking the act) and the service's hits (its index of units) build a unit's
    breadcrumbs from one function: the same crumbs for every unit of the four laws."""
    from lexir.structure.hits import UnitIndex, breadcrumbs
    from lexir.types import Corpus, Document

    for act in laws.values():
        corpus = Corpus(act.id, [Document(a.id, a.text, a.title) for a in act.articles], language="de",
                        acts=[act])
        view = UnitIndex(corpus)
        units = list(act.units())
        assert len(units) > 100
        for unit in units:
            assert breadcrumbs(view, unit.id) == unit_breadcrumbs(act, unit.id, "de"), unit.id


def test_toc_headings_open_at_the_first_article(laws):
    starts = division_starts(laws["BGB"])
    assert [(depth, d.id) for depth, d in starts["BGB::1"]] == [
        (0, "BGB::buch:1"), (1, "BGB::buch:1/abschnitt:1"), (2, "BGB::buch:1/abschnitt:1/titel:1")]
    assert [d.id for _, d in starts["BGB::823"]] == ["BGB::buch:2/abschnitt:8/titel:27"]
    assert "BGB::824" not in starts
    assert sum(len(v) for v in starts.values()) == sum(1 for _ in laws["BGB"].walk_divisions())


def test_service_breadcrumbs_and_toc(laws):
    """The service's breadcrumbs and table of contents over the real laws (core, as HTTP serves it),
    and the page's template rendering division crumbs unlinked and their headings in the toc."""
    import jinja2

    from lexir.service import core
    from lexir.service.state import LoadedCorpus, ServiceState, Settings
    from lexir.types import Corpus, Document

    acts = list(laws.values())
    docs = [Document(a.id, a.text, a.title) for act in acts for a in act.articles]
    loaded = LoadedCorpus("de-four", Corpus("de-four", docs, "de", acts), {})
    loaded.index_units()
    state = ServiceState(Settings())
    state.corpora["de-four"] = loaded
    crumbs = core.breadcrumbs(loaded, "BGB::823")
    assert [c["id"] for c in crumbs] == ["BGB", "BGB::buch:2", "BGB::buch:2/abschnitt:8",
                                         "BGB::buch:2/abschnitt:8/titel:27", "BGB::823"]
    found = core.provision(state, "de-four", "StGB::242/abs:1", ["toc"])
    assert [c["label"] for c in found["path"]][1:3] == ["Besonderer Teil",
                                                       "Neunzehnter Abschnitt Diebstahl und Unterschlagung"]
    assert [d["id"] for d in found["toc_divisions"]["StGB::242"]] == ["StGB::teil:Besonderer/abschnitt:19"]
    folder = Path(core.__file__).parent / "templates"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), autoescape=True)
    html = env.get_template("provision.html").render(p=core.provision(state, "de-four", "BGB::823", ["toc"]),
                                                     corpus="de-four", qs="", q="")
    assert "Titel 27 Unerlaubte Handlungen</small></li>" in html
    assert 'href="/p/de-four/BGB%3A%3Abuch' not in html  # a division is no page to open
    assert "<span>Titel 27 Unerlaubte Handlungen</span> › " in html  # the crumb, as text


def test_show_works_on_a_corpus_without_history():
    """``lexir show`` prints any corpus's provision (it used to refuse: "no history of provision
    versions"); ``--as-of`` there is still refused, naming the datasets that have one."""
    import json

    from typer.testing import CliRunner

    from lexir.cli.main import app

    runner = CliRunner()
    ok = runner.invoke(app, ["show", "demo", "kk::148", "--format", "json"])
    assert ok.exit_code == 0, ok.output
    shown = json.loads(ok.output)
    assert shown["id"] == "kk::148" and shown["citation"].startswith("art. 148")
    assert shown["path"][0] == "Kodeks karny" and "zabija" in shown["text"]
    assert [c["id"] for c in shown["contents"]][:1] == ["kk::148/par:1"]
    missing = runner.invoke(app, ["show", "demo", "kk::99999"])
    assert missing.exit_code != 0 and "no provision or division 'kk::99999'" in missing.output
    dated = runner.invoke(app, ["show", "demo", "kk::148", "--as-of", "2013-01-01"])
    assert dated.exit_code != 0 and "has no history" in dated.output


def test_parent_climbs_above_the_article(laws):
    from lexir.structure.chunking import chunk_act, parent_unit

    bgb = laws["BGB"]
    chain, node = [], "BGB::823/abs:1/satz:1"
    while node is not None:
        chain.append(node)
        node = parent_unit(bgb, node)
    assert chain == ["BGB::823/abs:1/satz:1", "BGB::823/abs:1", "BGB::823", "BGB::buch:2/abschnitt:8/titel:27",
                     "BGB::buch:2/abschnitt:8", "BGB::buch:2"]
    assert parent_unit(laws["GG"], "GG::1") == "GG::gliederung:I"
    # every chunk's unit climbs to its act's top without leaving the act, as the graph does
    graph = build_graph([bgb], cites=False)
    for chunk in list(chunk_act(bgb, "abs"))[:400]:
        up = parent_unit(bgb, chunk.unit)
        assert up == graph.parent_of(chunk.unit) or (up is None and graph.parent_of(chunk.unit) == "BGB")


def test_a_hit_below_the_article_is_cited_with_its_articles_level(laws):
    """A hit on a unit below the article (an Absatz of the GG, an Art-numbered law) is cited
    ``Art. 1 Abs. 1 GG``, not ``§``: the level is its article's, the same for ``lexir search
    --format json`` (a UnitIndex) as for the service (a LoadedCorpus)."""
    from lexir.analysis import Analyzer
    from lexir.service.state import LoadedCorpus
    from lexir.structure.hits import UnitIndex, format_hits
    from lexir.types import Corpus, Document

    gg = laws["GG"]
    article = next(a for a in gg.articles if a.id == "GG::1")
    absatz = article.children[0]
    assert article.level == "art" and absatz.id == "GG::1/abs:1"
    corpus = Corpus("gg-units", [Document(u.id, u.text) for u in gg.units()], "de", [gg])
    loaded = LoadedCorpus("gg-units", corpus, {})
    loaded.index_units()
    analyze = Analyzer.create("de", "stem")
    shown = [format_hits(view, [(absatz.id, 2.0), ("GG::1", 1.0)], "Würde des Menschen", analyze)
             for view in (UnitIndex(corpus), loaded)]
    assert shown[0] == shown[1]
    hit = shown[0][0]
    assert hit["citation"] == "Art. 1 Abs. 1 GG" and shown[0][1]["citation"] == "Art. 1 GG"
    assert [c["id"] for c in hit["path"]][-2:] == ["GG::1", "GG::1/abs:1"]
    assert "<mark>Würde</mark>" in hit["snippet"] and hit["text"] == absatz.text
