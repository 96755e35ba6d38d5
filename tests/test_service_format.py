"""Citations as lawyers write them, snippets and quote checks: the pure functions under the service."""

from __future__ import annotations

import pytest

from lexir.analysis import Analyzer
from lexir.citations.format import format_citation, unit_heading
from lexir.service.hits import verify_quote
from lexir.structure.hits import snippet


@pytest.mark.parametrize(("unit_id", "jurisdiction", "level", "expected"), [
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
    ("Cciv::1240/al:2", "fr", "article", "art. 1240 al. 2 C. civ."),
    ("Ctrav::L1232-1/item:1/lit:a", "fr", "article", "art. L. 1232-1 1° a) C. trav."),
    ("Ctrav::R*2122-1", "fr", "article", "art. R.* 2122-1 C. trav."),
    ("AT-ABGB::1295/abs:1", "at", "para", "§ 1295 Abs 1 ABGB"),
    ("AT-MRG::2/abs:1/z:3/lit:a", "at", "para", "§ 2 Abs 1 Z 3 lit a MRG"),
    ("AT-MRG::3§2", "at", "para", "Art 3 § 2 MRG"),
    ("AT-EGVG::Art2", "at", "art", "Art 2 EGVG"),
])
def test_citations_follow_each_jurisdiction(unit_id, jurisdiction, level, expected):
    assert format_citation(unit_id, jurisdiction, level) == expected


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


@pytest.mark.parametrize("layout", ["spaced", "lines", "escaped"])
def test_snippet_is_the_marked_window_of_the_text(layout):
    """Whatever the text's layout (single spaces; newlines and runs of spaces; characters HTML
    escapes), a snippet unescaped and unmarked is a window of the text with its whitespace
    collapsed, and exactly the words analysing to a query term are marked."""
    import html
    import re

    analyze = Analyzer.create("pl", "stem")
    words = ("Kto zabija człowieka podlega karze pozbawienia wolności na czas nie krótszy od lat 10 albo "
             "karze dożywotniego pozbawienia wolności sprawca czynu zabronionego").split() * 6
    sep = {"spaced": " ", "lines": "\n  ", "escaped": " & "}[layout]
    text = " ".join(w + (sep if i % 7 == 6 else "") for i, w in enumerate(words))
    terms = frozenset(analyze("karze wolności sprawca"))
    for width in (40, 120, 280, 5000):
        out = snippet(text, terms, analyze, width=width)
        body = out.removeprefix("… ").removesuffix(" …")
        assert "&" not in body.replace("&amp;", "")  # every & escaped
        if width >= 120:  # a window that wide spans one of the text's &s, if it has them
            assert ("&amp;" in body) == (layout == "escaped")
        plain = html.unescape(body.replace("<mark>", "").replace("</mark>", ""))
        assert plain in " ".join(text.split()) and "  " not in plain and "\n" not in plain
        marked = re.findall(r"<mark>(.*?)</mark>", body)
        assert marked and all(frozenset(analyze(w)) & terms for w in marked)
        unmarked = re.sub(r"<mark>.*?</mark>", " ", body)
        assert not any(frozenset(analyze(w)) & terms for w in re.findall(r"\w+", html.unescape(unmarked)))


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


def test_a_long_quote_costs_a_bounded_number_of_comparisons(monkeypatch):
    """A quote near the service's 5,000-character cap, against a real 9,556-character article
    (art. 115 k.k.), is ranked word by word and compared character by character with two spans
    only: a few dozen comparisons, where each window compared by characters cost 26 s for a
    2,000-character quote before (benchmarks/bench_verify.py). A paraphrase is still verified,
    its span fitted to the passage; a phrase repeated to the cap is not."""
    import difflib

    import lexir

    corpus = lexir.load("pl-codes")
    text = corpus["kk::115"].text
    words = text.split()
    start = len(words) // 4
    paraphrase = " ".join(w for i, w in enumerate(words[start:]) if i % 12 != 11)[:5000]  # a word in 12 dropped
    repeated = " ".join(["zabija człowieka podlega karze pozbawienia wolności"] * 100)[:5000]
    calls = []
    ratio = difflib.SequenceMatcher.ratio

    def counted(self):
        calls.append((self.autojunk, len(self.a), len(self.b)))
        return ratio(self)

    monkeypatch.setattr(difflib.SequenceMatcher, "ratio", counted)
    found = verify_quote(paraphrase, text)
    assert found["verified"] and found["match"] == "fuzzy" and found["score"] >= 0.9
    assert found["span"]["text"].split()[:3] == words[start:start + 3]
    by_chars = [c for c in calls if not c[0]]
    assert len(by_chars) <= 2 and len(calls) <= 100, (len(by_chars), len(calls))
    calls.clear()
    assert not verify_quote(repeated, text)["verified"]
    assert len([c for c in calls if not c[0]]) <= 2 and len(calls) <= 100


def test_cli_search_json_has_the_service_hit_shape():
    """``lexir search --format json`` prints the hits of the service's search: one shape (citation,
    breadcrumbs, snippet, text), field for field."""
    import json

    from typer.testing import CliRunner

    from lexir.cli.main import app
    from lexir.service import core
    from lexir.service.state import ServiceState, Settings

    query = "Kto zabija człowieka podlega karze"
    result = CliRunner().invoke(app, ["search", "demo", query, "-k", "5", "--format", "json", "--system", "bm25"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)["hits"]
    state = ServiceState(Settings())
    state.add("demo", graph=False)
    served = core.search(state, "demo", [("q", query)], 5)[0]["hits"]
    assert printed == served
    assert printed[0]["citation"] == "art. 148 k.k." and "<mark>zabija</mark>" in printed[0]["snippet"]


def test_a_fused_retriever_explains_its_own_run():
    """explain_many: the same run as search_many, and for each result each part's rank and score in
    that part's own run; the service asks the retriever instead of fusing again."""
    import lexir
    from lexir.retrieval.base import explains
    from lexir.types import Query, ranked

    corpus = lexir.load("demo")
    fused = lexir.build(corpus, "rrf(systems=bm25+bm25(mode=stem);depth=20)", cache=False)
    bm25 = lexir.build(corpus, "bm25", cache=False)
    assert explains(fused) and not explains(bm25)
    queries = [Query("a", "zabójstwo człowieka"), Query("b", "kradzież rzeczy ruchomej")]
    run, explained = fused.explain_many(queries, 5)
    assert run == fused.search_many(queries, 5)
    parts = [p.search_many(queries, 20) for p in fused.parts]
    for q in queries:
        assert set(explained[q.id]) == set(run[q.id])
        for doc_id, by_part in explained[q.id].items():
            for name, part in zip(fused.part_names, parts, strict=True):
                ranks = [d for d, _ in ranked(part[q.id])]
                assert (name in by_part) == (doc_id in ranks)
                if name in by_part:
                    assert by_part[name]["rank"] == ranks.index(doc_id) + 1
            assert run[q.id][doc_id] == pytest.approx(sum(1 / (60 + p["rank"]) for p in by_part.values()))


def test_a_batch_is_one_search_many(monkeypatch):
    """A batch of queries reaches the retriever as one search_many (its batched path), never query
    by query."""
    from lexir.retrieval.bm25 import BM25Retriever
    from lexir.service import core
    from lexir.service.state import ServiceState, Settings

    state = ServiceState(Settings())
    state.add("demo", graph=False)
    calls = []
    original = BM25Retriever.search_many

    def counted(self, queries, k=100, progress=None):
        calls.append(len(queries))
        return original(self, queries, k, progress)

    monkeypatch.setattr(BM25Retriever, "search_many", counted)
    found = core.search(state, "demo", [("a", "zabójstwo"), ("b", "kradzież"), ("a", "rozbój")], 3)
    assert calls == [3] and [r["query"]["id"] for r in found] == ["a", "b", "a"]
    assert found[0]["hits"] != found[2]["hits"]


def test_kept_hit_fields_are_bounded_and_shared_unchanged(monkeypatch):
    """The query-independent fields of a hit are kept per document within MAX_KEPT documents, and
    a second hit on a document gets the same values (not copies that a caller could have changed)."""
    import lexir
    from lexir.structure import hits

    corpus = lexir.load("demo").corpus
    view = hits.UnitIndex(corpus)
    analyze = hits.hit_analyzer(None, corpus.language)
    monkeypatch.setattr(hits, "MAX_KEPT", 5)
    ids = [d.id for d in corpus.documents[:12]]
    for doc_id in ids:
        hits.format_hits(view, [(doc_id, 1.0)], "kara", analyze)
        assert len(view.kept) <= 5
    first = hits.format_hits(view, [(ids[-1], 1.0)], "kara", analyze)[0]
    again = hits.format_hits(view, [(ids[-1], 2.0)], "kara pozbawienia", analyze)[0]
    assert first["path"] is again["path"] and first["path"] == hits.breadcrumbs(view, ids[-1])
    assert again["rank"] == 1 and again["score"] == 2.0


def test_a_document_of_a_corpus_without_acts_has_one_crumb_its_title_not_an_invented_article():
    """A JSONL corpus's ``doc1`` was shown as act ``doc1`` > ``art. doc1 Umowa najmu``."""
    from lexir.structure.hits import UnitIndex, breadcrumbs
    from lexir.types import Corpus, Document

    view = UnitIndex(Corpus("j", [Document("doc1", "Najemca płaci czynsz.", "Umowa najmu"),
                                  Document("doc2", "Wynajmujący wypowiada."), Document("kk::1", "Kara.")],
                            language="pl"))
    assert breadcrumbs(view, "doc1") == [{"id": "doc1", "level": "document", "label": "Umowa najmu"}]
    assert breadcrumbs(view, "doc2") == [{"id": "doc2", "level": "document", "label": "doc2"}]
    assert [c["level"] for c in breadcrumbs(view, "kk::1")] == ["act", "article"]  # an id with an act keeps it
