"""Legal orders as one folder each: the registry, how each order writes its units, which order a
corpus is read as, and a German and an Austrian corpus served side by side (real data)."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO

import lexir
from lexir.citations.format import format_citation, unit_heading
from lexir.jurisdiction import (
    Jurisdiction,
    code_of,
    find_jurisdiction,
    get_jurisdiction,
    jurisdictions,
    register_jurisdiction,
)
from lexir.types import Corpus, Document

DATA = REPO.parent / "shared" / "data"


def test_the_catalogue_registers_every_folder():
    from pathlib import Path

    folders = sorted(p.parent.name for p in (Path(lexir.__file__).parent / "jurisdictions").glob("*/__init__.py"))
    assert sorted(j.code for j in jurisdictions()) == folders
    for order in jurisdictions():
        assert order.find_citations is not None and order.acts is not None and order.acts.is_file(), order.code
    with pytest.raises(ValueError, match="unknown jurisdiction 'xx'; valid: pl, de"):
        get_jurisdiction("xx")
    with pytest.raises(ValueError, match="registered twice"):
        register_jurisdiction(Jurisdiction(code="de", name="Germany again", language="de"))
    # a second order at home in German would silently claim every German text that names no order
    with pytest.raises(ValueError, match="'de' is already the home order of language 'de'.*home_of_language=False"):
        register_jurisdiction(Jurisdiction(code="ch", name="Switzerland", language="de"))
    assert "ch" not in [j.code for j in jurisdictions()]


def test_an_order_with_an_id_prefix_writes_it_before_every_act_id():
    """``id_prefix`` keeps an order's act ids apart from another order's of the same language
    (AT-StGB, StGB): every act of its table and of its corpora carries it."""
    from lexir.citations.model import read_act_table

    prefixed = [order for order in jurisdictions() if order.id_prefix]
    assert prefixed  # Austria
    for order in prefixed:
        sources = [entry.source for entry in read_act_table(order.acts)]
        assert sources and all(s.startswith(order.id_prefix) for s in sources), order.code
        others = {entry.source for o in jurisdictions() if o is not order for entry in read_act_table(o.acts)}
        assert not others & set(sources), order.code
    laws = lexir.load("at-laws", data_dir=DATA)
    assert laws.acts and all(act.startswith(get_jurisdiction("at").id_prefix) for act in laws.acts)


def test_a_profile_whose_citation_table_is_missing_names_it(tmp_path, monkeypatch):
    import sys

    from lexir.jurisdictions.de.citations import Profile, find_citations

    package = tmp_path / "toyorder"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "data" / "acts.tsv").write_text("source\tabbreviations\tnames\nTOY\tTG\tToy-Gesetz\n",
                                               encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toyorder", raising=False)
    with pytest.raises(FileNotFoundError, match=r"toyorder: the citation table data/keywords.tsv is missing"):
        find_citations("§ 1 TG", profile=Profile(package="toyorder"))


def test_each_order_lists_the_data_files_of_its_own_datasets(tmp_path):
    """An order's table of data files lives in its folder (``Jurisdiction.files``) and names only
    datasets that order registers; every pinned file of a registered dataset comes from one; a
    malformed row is refused with the table and the line."""
    from lexir.datasets.registry import DatasetError, _order_files, names

    for order in jurisdictions():
        assert order.files is not None and order.files.is_file(), order.code
        rows = _order_files(order.files)
        assert rows, order.code
        for row in rows:
            loader = lexir.datasets.registry.get(row.dataset).loader
            module = getattr(loader, "func", loader).__module__
            assert module.startswith(f"lexir.jurisdictions.{order.code}"), (order.code, row.dataset, module)
    pinned = {(f.dataset, f.path) for name in names() for f in lexir.datasets.registry.get(name).files}
    listed = {(f.dataset, f.path) for order in jurisdictions() for f in _order_files(order.files)}
    assert pinned == listed and len(listed) == sum(len(_order_files(o.files)) for o in jurisdictions())
    bad = tmp_path / "files.tsv"
    bad.write_text("# a comment\nat-laws\tat/laws.tar.xz\tgithub.com/x\tb9d25e5\tfiles\n", encoding="utf-8")
    for table in (bad, str(bad)):  # a Traversable or Path, or a path as a string
        with pytest.raises(DatasetError, match=r"files.tsv line 2: expected 6 tab-separated fields, got 5"):
            _order_files(table)


def test_language_is_not_jurisdiction():
    """German text is German law unless the corpus says it is Austrian; a language no order
    claims has no order (ids written as they are, no citations)."""
    assert find_jurisdiction(language="de").code == "de"
    assert find_jurisdiction("at", "de").code == "at"
    assert find_jurisdiction(language="fr").code == "fr"
    assert find_jurisdiction(language="it") is None
    plain = Corpus("folder", [Document("ABGB::1", "x")], language="de")
    assert code_of(plain) == "de"
    assert code_of(Corpus("folder", [Document("AT-ABGB::1", "x")], language="de", jurisdiction="at")) == "at"
    assert code_of(Corpus("folder", [Document("x::1", "x")], language="it")) == ""
    assert format_citation("x::5/co:2", "") == "5 co 2 x"


def test_breadcrumb_headings_follow_the_order():
    assert unit_heading("abs", "1", "de") == "Abs. 1"
    assert unit_heading("abs", "1", "at") == "Abs 1"
    assert unit_heading("al", "2", "fr") == "al. 2"
    assert unit_heading("para", "1295", "at", "Schadenersatz") == "§ 1295 Schadenersatz"


def test_the_same_citation_in_two_orders():
    """``§ 127 StGB`` is Austrian theft in an Austrian text and another § in a German one."""
    (austrian,) = lexir.find_citations("Diebstahl nach § 127 StGB", "at")
    (german,) = lexir.find_citations("Diebstahl nach § 127 StGB", "de")
    assert (austrian.id, german.id) == ("AT-StGB::127", "StGB::127")


def test_recommended_is_the_legal_orders_own_where_it_chose_one():
    """Austria chose its own ``recommended`` on Austrian development data: an Austrian corpus gets
    it (built, keyed, trained over), German law and German text of no named order keep German's
    row, and ``lexir systems`` shows both."""
    from lexir.analysis import language_defaults
    from lexir.learning.recommended import pipeline_spec, recommended_spec
    from lexir.learning.train import default_base
    from lexir.retrieval.base import get_system
    from lexir.retrieval.build import effective_spec

    austria, german = get_jurisdiction("at").recommended, language_defaults("de").recommended
    assert austria and austria != german
    assert pipeline_spec("de", jurisdiction="at") == austria
    assert pipeline_spec("de", jurisdiction="de") == pipeline_spec("de") == german
    assert not get_jurisdiction("fr").recommended and pipeline_spec("fr", jurisdiction="fr") == \
        language_defaults("fr").recommended
    # recommended: that pipeline with the articles a question cites first (each of these orders has a finder)
    assert recommended_spec("de", jurisdiction="at") == f"explicit(base={austria})"
    assert recommended_spec("fr") == f"explicit(base={language_defaults('fr').recommended})"
    assert recommended_spec("en") == language_defaults("en").recommended  # no English citation finder
    from dataclasses import replace

    from lexir.learning.recommended import cites_first
    assert cites_first(get_jurisdiction("de")) and not cites_first(None)
    assert not cites_first(replace(get_jurisdiction("de"), recommended_cites_first=False))  # an order may opt out
    # what a saved run is keyed by follows the order, alone and as a part
    for system in ("recommended", "rrf(systems=recommended+bm25)"):
        assert effective_spec(system, None, "de", "at") != effective_spec(system, None, "de") == \
            effective_spec(system, None, "de", "de")
    assert effective_spec("recommended", None, "de", "at") == effective_spec(f"explicit(base={austria})", None, "de")
    texts = ["Wer eine fremde bewegliche Sache einem anderen wegnimmt, ist zu bestrafen.",
             "Wer einen anderen am Körper verletzt, ist mit Freiheitsstrafe zu bestrafen.",
             "Wer fremdes Gut beschädigt, ist zu bestrafen."]
    at = Corpus("at-mini", [Document(f"AT-StGB::{127 + i}", t) for i, t in enumerate(texts)], language="de",
                jurisdiction="at")
    de = Corpus("de-mini", [Document(f"StGB::{242 + i}", t) for i, t in enumerate(texts)], language="de")
    assert default_base("recommended", at) == austria and default_base("recommended", de) == german
    built = {c.name: lexir.build(c, "recommended") for c in (at, de)}
    assert (built["at-mini"].spec, built["de-mini"].spec) == (f"explicit(base={austria})", f"explicit(base={german})")
    # the article a question cites goes first, whatever the pipeline ranks first
    assert built["at-mini"].search("Fahrrad weggenommen, § 129 StGB?", 1)[0][0] == "AT-StGB::129"
    assert built["at-mini"].search("Ich habe meinem Nachbarn das Fahrrad weggenommen", 1)[0][0] == "AT-StGB::127"
    assert austria in get_system("recommended").description


@pytest.fixture(scope="module")
def at_laws():
    if not (DATA / "at" / "laws.tar.xz").is_file():
        pytest.skip("no ../shared/data/at")
    return lexir.load("at-laws")


def test_at_laws_is_an_austrian_corpus(at_laws):
    assert at_laws.jurisdiction == "at" and at_laws.language == "de" and not at_laws.parse_errors
    assert len(at_laws.acts) == 44 and all(a.startswith("AT-") for a in at_laws.acts)
    assert all(act.jurisdiction == "at" for act in at_laws.acts.values())
    assert "Diebstahl" in at_laws["AT-StGB::127"].title
    # the German analyzer reads it (Austrian law is written in German)
    hits = lexir.build(at_laws, "bm25").search("Wer eine fremde bewegliche Sache wegnimmt", k=5)
    assert "AT-StGB::127" in [doc for doc, _ in hits]


def test_cli_cite_and_show_austrian(at_laws, tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app

    runner = CliRunner()
    out = runner.invoke(app, ["cite", "--jurisdiction", "at"], input="gemäß § 2 Abs 1 Z 3 MRG und §§ 1 ff KSchG\n")
    rows = [json.loads(line) for line in out.output.splitlines()]
    assert out.exit_code == 0 and [r["id"] for r in rows] == ["AT-MRG::2", "AT-KSchG::1"]
    assert rows[0]["path"] == {"abs": "1", "z": "3"}
    shown = runner.invoke(app, ["show", "at-laws", "AT-ABGB::1295"])
    assert shown.exit_code == 0, shown.output
    assert "§ 1295 ABGB" in shown.output and "Schaden" in shown.output


def test_a_folder_of_austrian_law_is_read_as_austrian_when_told(at_laws, tmp_path, monkeypatch):
    """A JSONL corpus of real Austrian articles given by path is German law by default (the home
    order of German); --jurisdiction at / jurisdiction="at" reads it as Austria's: its language is
    the order's (nothing detected), hits are written as Austria writes them, and caches of what an
    order shapes (the graph, indexes) are kept apart. A registered dataset or an unknown code is
    refused with what to do."""
    from typer.testing import CliRunner

    from lexir.cli.main import app
    from lexir.datasets import stream
    from lexir.retrieval.build import index_key
    from lexir.structure.graph import graph_folder

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "laws.jsonl"
    path.write_text("".join(json.dumps({"_id": d.id, "title": d.title, "text": d.text}, ensure_ascii=False) + "\n"
                            for d in at_laws.documents if d.act in ("AT-StGB", "AT-MRG")), encoding="utf-8")
    told, notes = lexir.load(path, jurisdiction="at", notify=lambda m: None), []
    plain = lexir.load(path, notify=notes.append)
    assert "detected language 'de'" in notes[0]  # by default the language is detected ...
    assert (plain.jurisdiction, code_of(plain)) == ("", "de")  # ... and German text is German law
    assert (told.jurisdiction, told.language, code_of(told)) == ("at", "de", "at")
    assert told.fingerprint == plain.fingerprint
    assert index_key("bm25", {}, told) != index_key("bm25", {}, plain)
    assert graph_folder(told) != graph_folder(plain)
    assert index_key("bm25", {}, plain) == index_key("bm25", {}, plain.with_jurisdiction("de"))  # the home order: as before
    streamed = stream(path, jurisdiction="at")
    assert (streamed.jurisdiction, streamed.language) == ("at", "de")

    runner = CliRunner()
    question = ["search", str(path), "Wer eine fremde bewegliche Sache wegnimmt", "--system", "bm25", "-k", "3",
                "--format", "json"]
    as_at = runner.invoke(app, [*question, "--jurisdiction", "at"])
    as_de = runner.invoke(app, question)
    assert as_at.exit_code == 0 and as_de.exit_code == 0, (as_at.output, as_de.output)
    theft_at = next(h for h in json.loads(as_at.stdout)["hits"] if h["id"] == "AT-StGB::127")
    theft_de = next(h for h in json.loads(as_de.stdout)["hits"] if h["id"] == "AT-StGB::127")
    assert theft_at["citation"] == "§ 127 StGB" and theft_de["citation"] == "§ 127 AT-StGB"
    refused = runner.invoke(app, ["search", "at-laws", "Diebstahl", "--jurisdiction", "at"])
    assert refused.exit_code != 0 and "named only for a corpus given by path" in refused.output
    unknown = runner.invoke(app, [*question, "--jurisdiction", "xx"])
    assert unknown.exit_code != 0 and "unknown jurisdiction 'xx'; valid: pl, de, el, fr, at" in unknown.output


def test_lexir_serve_reads_a_folder_as_austrian_law_when_told(at_laws, tmp_path):
    """``lexir serve PATH --jurisdiction at``: the hits are written as Austria writes them, and a
    citation with no jurisdiction named is read as the served corpus's order (Austria's)."""
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("fastapi")
    from test_service import Server

    path = tmp_path / "laws.jsonl"
    path.write_text("".join(json.dumps({"_id": d.id, "title": d.title, "text": d.text}, ensure_ascii=False) + "\n"
                            for d in at_laws.documents if d.act in ("AT-StGB", "AT-MRG")), encoding="utf-8")
    server = Server([str(path), "--jurisdiction", "at"], tmp_path / "cache")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as c:
            hits = c.get("/v1/laws/search", params={"q": "Wer eine fremde bewegliche Sache wegnimmt", "k": 3}).json()
            theft = next(h for h in hits["hits"] if h["id"] == "AT-StGB::127")
            assert theft["citation"] == "§ 127 StGB"
            cited = c.post("/v1/cite", json={"text": "nach § 127 StGB"}).json()
            assert cited["jurisdiction"] == "at" and cited["citations"][0]["corpora"] == ["laws"]
    finally:
        server.stop()


@pytest.mark.slow
def test_a_german_and_an_austrian_corpus_in_one_service(at_laws, tmp_path_factory):
    """de-gesetze-history (the German StGB, ZPO, BGB ...) and at-laws side by side: ids never
    collide, each hit is written as its own order writes it, and a citation resolves in the order
    of the corpus it is looked up in."""
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("fastapi")
    from test_service import Server

    srv = Server(["de-gesetze-history", "at-laws", "--system", "bm25"], tmp_path_factory.mktemp("serve-de-at"))
    try:
        with httpx.Client(base_url=srv.url, timeout=240) as c:
            served = {d["name"]: d for d in c.get("/v1/corpora").json()["corpora"]}
            assert served["at-laws"]["jurisdiction"] == "at" and served["de-gesetze-history"]["jurisdiction"] == "de"
            at = c.get("/v1/at-laws/provisions/AT-StGB::127").json()
            de = c.get("/v1/de-gesetze-history/provisions/StGB::242").json()
            assert at["citation"] == "§ 127 StGB" and "fremde bewegliche Sache" in at["text"]
            assert de["citation"] == "§ 242 StGB" and "fremde bewegliche Sache" in de["text"]
            hits = c.get("/v1/at-laws/search", params={"q": "Diebstahl einer fremden beweglichen Sache",
                                                       "k": 10}).json()["hits"]
            assert all(h["id"].startswith("AT-") for h in hits)
            assert any(h["id"] == "AT-StGB::127" for h in hits)
            crumbs = [b["label"] for b in c.get("/v1/at-laws/provisions/AT-MRG::2/abs:1").json()["path"]]
            assert crumbs[-2].startswith("§ 2") and crumbs[-1] == "Abs 1", crumbs
            cited = c.post("/v1/cite", json={"text": "nach § 127 StGB", "jurisdiction": "at"}).json()["citations"]
            assert cited[0]["unit_id"] == "AT-StGB::127" and cited[0]["corpora"] == ["at-laws"]
            cited = c.post("/v1/cite", json={"text": "nach § 242 StGB", "jurisdiction": "de"}).json()["citations"]
            assert cited[0]["corpora"] == ["de-gesetze-history"]
            unnamed = c.post("/v1/cite", json={"text": "nach § 242 StGB"})  # two orders served: say which
            assert unnamed.status_code == 400 and unnamed.json()["error"]["field"] == "jurisdiction"
            assert "the law of at, de" in unnamed.json()["error"]["message"]
            # a written citation is looked up in the order of the corpus it names
            v = c.post("/v1/verify", json={"quote": "eine fremde bewegliche Sache", "citation": "§ 127 StGB",
                                           "corpus": "at-laws"}).json()
            assert v["id"] == "AT-StGB::127" and v["verified"]
            v = c.post("/v1/verify", json={"quote": "eine fremde bewegliche Sache", "citation": "§ 242 StGB",
                                           "corpus": "de-gesetze-history"}).json()
            assert v["id"] == "StGB::242" and v["verified"]
    finally:
        srv.stop()


def test_langchain_and_llamaindex_over_austrian_law(at_laws):
    """The retrievers of the integrations write Austrian hits as Austrians cite them."""
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from lexir.integrations import langchain as lc
    from lexir.integrations import llamaindex as li

    question = "Wer einem anderen eine fremde bewegliche Sache wegnimmt"
    docs = lc.LexirRetriever(corpus="at-laws", k=5).invoke(question)
    assert "AT-StGB::127" in [d.id for d in docs]
    theft = next(d for d in docs if d.id == "AT-StGB::127")
    assert theft.metadata["citation"] == "§ 127 StGB" and theft.metadata["corpus"] == "at-laws"
    assert theft.metadata["breadcrumb_ids"][0] == "AT-StGB"
    nodes = li.LexirRetriever(corpus="at-laws", k=5).retrieve(question)
    assert [n.node.id_ for n in nodes] == [d.id for d in docs]


def test_catalogue_order_whatever_was_imported_first():
    """Importing one folder directly (as a test or a script may) registers it early; the registry
    still lists the orders as the catalogue names them."""
    import subprocess
    import sys
    from pathlib import Path

    import lexir.jurisdictions

    catalogue = Path(lexir.jurisdictions.__file__).read_text(encoding="utf-8")
    named = re.findall(r'^add_jurisdiction_modules\("lexir\.jurisdictions\.(\w+)"\)', catalogue, re.M)
    assert len(named) >= 5, named  # pl, de, el, fr, at at least
    last = named[-1]  # imported first, registered first: listed where the catalogue names it all the same
    code = (f"import lexir.jurisdictions.{last}\nfrom lexir.jurisdiction import codes\nprint(','.join(codes()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ",".join(named)
