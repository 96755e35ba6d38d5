import pytest

import lexir
from lexir.io import (
    FormatError,
    read_beir,
    read_corpus_jsonl,
    read_qrels,
    read_run,
    read_topics,
    write_beir,
    write_qrels,
    write_run,
)
from lexir.types import Document, Query, UnitId, top_k


def test_run_roundtrip_orders_by_score_and_cuts_depth(tmp_path):
    run = {"q1": {f"kk::{i}": float(i) for i in range(1, 150)}, "q2": {"kc::4^1": 2.0, "kc::4": 2.0}}
    path = tmp_path / "run.trec"
    write_run(run, path, tag="t", k=100)
    lines = path.read_text().splitlines()
    assert lines[0].split() == ["q1", "Q0", "kk::149", "1", "149.000000", "t"]
    back = read_run(path)
    assert len(back["q1"]) == 100 and min(back["q1"].values()) == 50.0
    # ties broken by id, ascending, so the file is reproducible
    q2 = [line.split()[2] for line in lines if line.startswith("q2")]
    assert q2 == ["kc::4", "kc::4^1"]


def test_a_run_write_that_fails_leaves_no_side_file(tmp_path):
    """A run goes to ``NAME.part`` and is renamed; when the write or the rename fails, the side
    file goes too (a folder in the way of the rename; an id that cannot be written)."""
    (tmp_path / "r.trec").mkdir()
    with pytest.raises(IsADirectoryError):
        write_run({"q1": {"kk::1": 1.0}}, tmp_path / "r.trec")
    with pytest.raises(ValueError, match="empty document id"):
        write_run({"q1": {"kk::1": 2.0, "": 1.0}}, tmp_path / "s.trec")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.trec"]


def test_beir_queries_with_an_id_given_twice_name_the_file_and_both_lines(tmp_path):
    from lexir.io import read_queries_jsonl

    path = tmp_path / "queries.jsonl"
    path.write_text('{"_id": "q1", "text": "kara"}\n\n{"_id": "q2", "text": "wina"}\n'
                    '{"id": "q1", "text": "zabójstwo"}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"queries.jsonl:4 \(field '_id'\): query id 'q1' given twice "
                                          r"\(first on line 1\)"):
        read_queries_jsonl(path)
    path.write_text('{"_id": "q1", "text": "kara"}\n{"_id": "q2", "text": "kara"}\n', encoding="utf-8")
    assert [q.id for q in read_queries_jsonl(path)] == ["q1", "q2"]  # the same text twice is fine


def test_a_jsonl_corpus_with_an_id_given_twice_names_the_file_and_both_lines(tmp_path):
    """Read as a list or loaded by path: the file and both lines, not only the id."""
    path = tmp_path / "laws.jsonl"
    path.write_text('{"_id": "a", "text": "kara"}\n\n{"_id": "b", "text": "wina"}\n'
                    '{"id": "a", "text": "zabójstwo"}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"laws.jsonl:4 \(field '_id'\): document id 'a' given twice "
                                          r"\(first on line 1\)"):
        read_corpus_jsonl(path)
    with pytest.raises(FormatError, match=r"laws.jsonl:4 .*'a' given twice"):
        lexir.load(str(path), language="pl")
    path.write_text('{"_id": "a", "text": "kara"}\n{"_id": "b", "text": "kara"}\n', encoding="utf-8")
    assert [d.id for d in read_corpus_jsonl(path)] == ["a", "b"]


def test_qrels_judging_a_document_twice_for_a_query_name_both_lines(tmp_path):
    """The later grade silently won (a run listing a document twice was already refused)."""
    path = tmp_path / "q.qrels"
    path.write_text("q1 0 d1 2\nq2 0 d1 1\n\nq1 0 d1 0\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"q.qrels:4: document 'd1' judged twice for query 'q1' \(first on line 1\)"):
        read_qrels(path)


def test_qrels_roundtrip(tmp_path):
    qrels = {"a": {"kk::1": 1, "kk::2": 2}}
    write_qrels(qrels, tmp_path / "q.txt")
    assert read_qrels(tmp_path / "q.txt") == qrels


def test_malformed_run_names_file_and_line(tmp_path):
    path = tmp_path / "bad.trec"
    path.write_text("q1 Q0 kk::1 1 3.2 t\nq1 Q0 kk::2 2 notanumber t\n")
    with pytest.raises(FormatError, match=r"bad.trec:2: score 'notanumber'"):
        read_run(path)
    path.write_text("q1 Q0 kk::1 1\n")
    with pytest.raises(FormatError, match=r"bad.trec:1: expected 6"):
        read_run(path)


def test_beir_roundtrip(tmp_path):
    docs = [Document("kk::1", "text one", "T"), Document("kk::2", "text two")]
    queries = [Query("q1", "what")]
    write_beir(tmp_path / "b", docs, queries, {"q1": {"kk::2": 1}})
    d, q, r = read_beir(tmp_path / "b")
    assert d == docs and q[0].id == "q1" and r == {"q1": {"kk::2": 1}}


def test_jsonl_corpus_errors_name_line_and_field(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"_id": "a", "text": "x"}\n{"_id": "b"}\n')
    with pytest.raises(FormatError, match=r"c.jsonl:2 \(field 'text or contents'\)"):
        read_corpus_jsonl(path)
    path.write_text('{"_id": "a", "text": "x"}\n{oops\n')
    with pytest.raises(FormatError, match=r"c.jsonl:2: invalid JSON"):
        read_corpus_jsonl(path)


def test_trec_topics_both_forms(tmp_path):
    sgml = tmp_path / "topics.txt"
    sgml.write_text("<top>\n<num> Number: 301\n<title> odpowiedzialność karna\n<desc> Description:\nlong\n</top>\n")
    assert [(q.id, q.text) for q in read_topics(sgml)] == [("301", "odpowiedzialność karna")]
    tsv = tmp_path / "topics.tsv"
    tsv.write_text("q1\tpierwsze\nq2\tdrugie\n")
    assert [q.id for q in read_topics(tsv)] == ["q1", "q2"]
    tsv.write_text("q1 no tab here\n")
    with pytest.raises(FormatError, match="topics.tsv:1"):
        read_topics(tsv)


def test_unit_ids_parse_and_print():
    unit = UnitId.parse("BGB::823/abs:1/satz:2")
    assert (unit.source, unit.article, unit.path) == ("BGB", "823", (("abs", "1"), ("satz", "2")))
    assert str(unit) == "BGB::823/abs:1/satz:2" and unit.canonical == "BGB::823"
    with pytest.raises(ValueError):
        UnitId.parse("kk-16")


def test_top_k_does_not_mutate():
    run = {"q": {"a": 1.0, "b": 3.0, "c": 2.0}}
    assert top_k(run, 2) == {"q": {"b": 3.0, "c": 2.0}}
    assert len(run["q"]) == 3


def test_ids_with_whitespace_survive_trec_files(tmp_path):
    # German acts such as "AO 1977" put a space into the id; a TREC field cannot hold one
    run = {"q 1": {"AO 1977::177": 2.0, "BGB::823": 1.0, "x%y::1": 0.5}}
    write_run(run, tmp_path / "r.trec")
    lines = (tmp_path / "r.trec").read_text().splitlines()
    assert lines[0].split() == ["q%201", "Q0", "AO%201977::177", "1", "2.000000", "lexir"]
    assert "x%25y::1" in lines[2] and "BGB::823" in lines[1]
    assert read_run(tmp_path / "r.trec") == run
    write_qrels({"q 1": {"AO 1977::177": 1}}, tmp_path / "q.txt")
    assert read_qrels(tmp_path / "q.txt") == {"q 1": {"AO 1977::177": 1}}


LINES = ['{"_id": "a", "text": "x"}\n', '  {"_id": "a"}  \n', '{"a": 1} {"b": 2}\n', '{"a": 1}x\n', '{oops\n',
         '[1, 2]\n', '"s"\n', '{"a": "\\ud800"}\n', '{"a": 1}', '\t{"a": [1, {"b": null}]}\t\r\n', '{"a":\n', 'nul\n',
         '{"a": NaN}\n', '{"a": 1e999}\n', '{"a": "\u00e4\u00df\u00a7"}\n', '}\n', '{"a": 1}\n\n']


@pytest.mark.parametrize("line", LINES)
def test_a_jsonl_line_reads_as_json_loads_reads_it(line):
    """read_jsonl's fast path (the decoder's scanner, see io.jsonl._loads) gives json.loads's
    object, or its error with the same message, for every kind of line."""
    import json

    from lexir.io.jsonl import _loads

    try:
        want = json.loads(line)
    except json.JSONDecodeError as err:
        with pytest.raises(json.JSONDecodeError) as got:
            _loads(line)
        assert (got.value.msg, got.value.pos) == (err.msg, err.pos)
    else:
        assert repr(_loads(line)) == repr(want)


def test_jsonl_corpus_fields_as_field_reads_them(tmp_path):
    """Ids and texts under either name, numbers as strings, the first present name winning,
    a wrong type named; the same documents whichever path read them."""
    path = tmp_path / "c.jsonl"
    path.write_text('{"_id": "a", "text": "x", "title": "T"}\n{"id": 7, "contents": "y"}\n'
                    '{"_id": null, "id": "c", "text": null, "contents": "z"}\n{"_id": 2.5, "id": "d", "text": "w"}\n')
    assert read_corpus_jsonl(path) == [Document("a", "x", "T"), Document("7", "y"), Document("c", "z"),
                                       Document("2.5", "w")]
    path.write_text('{"_id": "a", "text": ["x"]}\n')
    with pytest.raises(FormatError, match=r"c.jsonl:1 \(field 'text'\).*expected str, got list"):
        read_corpus_jsonl(path)
    path.write_text('{"_id": {"x": 1}, "text": "x"}\n')
    with pytest.raises(FormatError, match=r"c.jsonl:1 \(field '_id'\)"):
        read_corpus_jsonl(path)
