import json

import pytest

from lexir.citations.extract import citation_codes, cite_lines
from lexir.citations.extract import find_citations as find_any
from lexir.io import FormatError
from lexir.jurisdictions.de.citations import act_source, find_citations
from lexir.jurisdictions.de.refex import load_refex, score_citations


def _check_spans(text, cites):
    for c in cites:
        assert text[c.start : c.end] == c.text


def test_full_citation_with_units():
    text = "Der Anspruch folgt aus § 823 Abs. 1 S. 2 BGB und § 280 Abs. 1 Satz 2 BGB."
    cites = find_citations(text)
    _check_spans(text, cites)
    assert [(c.id, c.path) for c in cites] == [
        ("BGB::823", {"abs": "1", "satz": "2"}),
        ("BGB::280", {"abs": "1", "satz": "2"}),
    ]
    assert cites[0].unit_id == "BGB::823/abs:1/satz:2"
    assert cites[0].text == "§ 823 Abs. 1 S. 2 BGB"


def test_list_range_ff_and_chain():
    text = "vgl. §§ 823, 826 BGB; §§ 3 bis 6 ZPO; § 823 ff. BGB; § 280 Abs. 1 i.V.m. § 241 Abs. 2 BGB"
    cites = find_citations(text)
    _check_spans(text, cites)
    assert [c.id for c in cites] == [
        "BGB::823", "BGB::826", "ZPO::3", "ZPO::4", "ZPO::5", "ZPO::6", "BGB::823", "BGB::280", "BGB::241",
    ]
    ends = find_citations("§§ 3 bis 6 ZPO", expand_ranges=False)
    assert [c.article for c in ends] == ["3", "6"]
    known = find_citations("§§ 3 bis 6 ZPO", known={"ZPO": {"3", "5", "6"}})
    assert [c.article for c in known] == ["3", "5", "6"]


def test_articles_letters_nr_lit():
    text = "Art. 1 Abs. 1 GG, § 15a InsO, § 1a Nr. 2 Buchst. b AsylbLG und § 74 a HGB"
    cites = find_citations(text)
    _check_spans(text, cites)
    assert [(c.id, c.path) for c in cites] == [
        ("GG::1", {"abs": "1"}),
        ("InsO::15a", {}),
        ("AsylbLG::1a", {"nr": "2", "lit": "b"}),
        ("HGB::74a", {}),
    ]


def test_real_refex_sentences(data_dir):
    docs = {d.id: d for d in load_refex(data_dir / "de" / "refex")}
    text = docs["bgh_2010-05-12_79a71a550f5d"].text
    start = text.index("(§ 4 Nr. 9 und 10, § 5 UWG)")
    cites = [c for c in find_citations(text) if start <= c.start < start + 30]
    _check_spans(text, cites)
    assert [(c.act, c.article, c.paths) for c in cites] == [  # Nr. 9 und 10: one citation of § 4
        ("UWG 2004", "4", ({"nr": "9"}, {"nr": "10"})), ("UWG 2004", "5", ({},)),
    ]
    assert cites[0].start == start + 1 and cites[-1].text == "§ 5 UWG"
    text = docs["bverfg_1987-07-01_5603d87f1423"].text
    cites = find_citations(text)
    _check_spans(text, cites)
    prefix = next(c for c in cites if c.text.startswith("SGG § 184"))
    assert (prefix.id, prefix.path) == ("SGG::184", {"abs": "1"})
    named = next(c for c in cites if c.text == "§ 184 des Sozialgerichtsgesetzes")
    assert named.id == "SGG::184"


def test_unknown_act_stays_unresolved():
    (c,) = find_citations("gemäß § 14 Abs. 3 Satz 2 KostO", default_act="BGB")
    assert (c.act, c.id, c.act_raw, c.article) == (None, None, "KostO", "14")
    assert c.repealed and c.resolved_from == "explicit"  # KostO: repealed 2013, data/de_repealed.tsv
    assert find_citations("nach § 10 des Vertrages") == []  # a contract clause, not a statute
    (c,) = find_citations("nach § 10 des Vertrages", default_act="BGB", kinds=None)
    assert (c.kind, c.act, c.id, c.act_raw) == ("contract", None, None, "des Vertrages")
    assert find_citations("AP Nr. 4 zu § 59 HGB") == []
    (c,) = find_citations("AP Nr. 4 zu § 59 HGB", kinds=None)
    assert c.kind == "collection"


def test_act_table_covers_corpus_and_variants(data_dir):
    import csv

    from lexir.jurisdictions.de.statutes import safe_act_id

    with open(data_dir / "de" / "laws_index.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    for row in rows[::50]:
        if row["jurabk"]:
            assert act_source(row["jurabk"]) == safe_act_id(row["jurabk"])
    assert act_source("AO") == "AO 1977"
    assert act_source("SGB V") == "SGB 5"
    assert act_source("EGBGB") == "BGBEG"
    assert act_source("bgb") == "BGB"
    assert act_source("des Sozialgerichtsgesetzes") == "SGG"


def test_refex_f1(data_dir):
    docs = load_refex(data_dir / "de" / "refex")
    assert sum(len(d.citations) for d in docs) == 172
    found = {d.id: find_citations(d.text, expand_ranges=False) for d in docs}
    for d in docs:
        _check_spans(d.text, found[d.id])
    # measured (session 3): paragraph F1 0.904, absatz F1 0.858 on all 7 (benchmarks/bench_citations.py
    # --errors lists every error); what is left is the gold's, see docs/citations.md
    # (0.908 / 0.864 before session 3: it now reads two citations the gold misreads or omits)
    assert score_citations(found, docs, "paragraph")["f1"] >= 0.90
    assert score_citations(found, docs, "absatz")["f1"] >= 0.855


def test_refex_malformed(tmp_path):
    (tmp_path / "documents.jsonl").write_text('{"doc_id": "a", "text": "x"}\n{oops\n', encoding="utf-8")
    (tmp_path / "annotations.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(FormatError) as err:
        load_refex(tmp_path)
    assert err.value.line == 2 and err.value.path.endswith("documents.jsonl")


def test_score_perfect_and_empty():
    from lexir.jurisdictions.de.refex import RefexCitation, RefexDocument

    text = "nach § 5 UWG"
    doc = RefexDocument("d", text, [RefexCitation("c1", 5, 12, "§ 5 UWG", "uwg", "5", {})])
    perfect = score_citations({"d": find_citations(text)}, [doc])
    assert (perfect["tp"], perfect["fp"], perfect["fn"], perfect["f1"]) == (1, 0, 0, 1.0)
    assert score_citations({}, [doc])["recall"] == 0.0


def test_extract_dispatch():
    assert {"de", "el", "pl"} <= set(citation_codes())
    assert find_any("art. 5 k.k.", "pl")[0].id == "kk::5"
    (line,) = cite_lines("§ 823 BGB", "de")
    assert json.loads(line)["id"] == "BGB::823"
    with pytest.raises(ValueError, match="unknown jurisdiction 'xx'"):
        find_any("x", "xx")
