import json
import shutil

import pytest

from lexir.datasets import DatasetError, load_queries, registry
from lexir.datasets import open as open_data
from lexir.io import FormatError
from lexir.jurisdictions.pl.datasets import load_orycore_exam, load_polishlawllm_exams


def test_pl_codes_are_cleaned_and_split(data_dir):
    corpus = open_data("pl-codes", data_dir=data_dir)
    assert len(corpus) == 4318 and corpus.act_ids() == ["kc", "kk", "kks", "kpa", "kpc"]
    assert "kc::22^1" in corpus and "kc::4^1" not in corpus
    text = corpus["kk::4"].text
    assert "wymierzoną" in text and "-\n" not in text and "  " not in text
    levels = {u.level for u in corpus.units()}
    assert {"article", "par", "pkt"} <= levels
    kk1 = corpus.acts["kk"].articles[0]
    assert kk1.id == "kk::1" and [c.id for c in kk1.children] == ["kk::1/par:1", "kk::1/par:2", "kk::1/par:3"]


def test_pl_exams_gold_drops_and_splits(data_dir):
    bench = open_data("pl-exams", data_dir=data_dir)
    qs = bench.queries
    assert len(qs) + len(qs.dropped) == 2166
    reasons = {r for _, r, _ in qs.dropped}
    assert "act not in corpus" in reasons  # k.s.h., k.p.k., ... are not among the five codes
    # every kept query has gold, every gold article is in the corpus
    assert all(qs.qrels[q.id] and all(g in bench.corpus for g in qs.qrels[q.id]) for q in qs.queries)
    tune, test = set(qs.splits["tune"]), set(qs.splits["test"])
    assert not tune & test and tune | test == {q.id for q in qs.queries}
    assert all(2012 <= q.meta["year"] <= 2017 for q in qs.split("tune").queries)
    # ids: {year}-{exam_type}-{id}, unique although ids restart in every exam
    assert "2012-adwokacki_radcowy-1" in qs.qrels and qs.qrels["2012-adwokacki_radcowy-1"] == {"kk::16": 1}
    assert len({q.id for q in qs.queries}) == len(qs)
    # query text = the stem plus the options
    q = next(q for q in qs.queries if q.id == "2012-adwokacki_radcowy-1")
    assert q.text.startswith("Zgodnie z Kodeksem karnym") and "tylko wtedy, gdy ustawa tak stanowi" in q.text


def test_orycore_uses_structured_gold_first(data_dir, tmp_path):
    corpus = open_data("pl-codes", data_dir=data_dir)
    sample = data_dir / "pl" / "orycore" / "exam-adw-2024-sample.json"
    qs = load_orycore_exam(sample, corpus)
    assert qs.qrels["1"] == {"kk::7": 1} and qs.qrels["2"] == {"kk::18": 1}
    assert len(qs) + len(qs.dropped) == 10
    # Structured gold wins over a raw string that flattens a superscript article.
    data = json.loads(sample.read_text(encoding="utf-8"))
    data["questions"] = data["questions"][:1]
    data["questions"][0]["legal_basis_raw"] = "art. 4541 k.c."
    data["questions"][0]["gold"] = [{"article": "454", "article_sup": "1", "article_key": "arti.454^1",
                                     "unit": None, "act_abbrev": "k.c.", "act_date": None, "act_name": None,
                                     "act_raw": "k.c."}]
    path = tmp_path / "exam.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_orycore_exam(path, corpus).qrels["1"] == {"kc::454^1": 1}
    # Without structured gold the raw string is parsed, and the superscript recovered.
    data["questions"][0]["gold"] = []
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_orycore_exam(path, corpus).qrels["1"] == {"kc::454^1": 1}


def test_malformed_exam_file_names_file_line_and_field(data_dir, tmp_path):
    corpus = open_data("pl-codes", data_dir=data_dir)
    path = tmp_path / "exams.jsonl"
    good = (data_dir / "pl" / "exams_2012_2023.jsonl").read_text(encoding="utf-8").splitlines()[0]
    path.write_text(good + "\n" + good.replace('"question"', '"pytanie"') + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"exams.jsonl:2 \(field 'question'\)"):
        load_polishlawllm_exams(path, corpus)
    path.write_text(good + "\n{broken\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"exams.jsonl:2: invalid JSON"):
        load_polishlawllm_exams(path, corpus)


def test_unknown_dataset_lists_registered_names():
    with pytest.raises(DatasetError, match="unknown dataset 'pl-exam'; registered: .*pl-exams"):
        registry.get("pl-exam")


def test_missing_and_changed_files_are_reported_with_provenance(data_dir, tmp_path):
    with pytest.raises(DatasetError, match=r"pl/codes/kc.json is missing: expected at .*kc.json; obtain it from "
                                           r"github.com/PiotrTyrakowski/PolishLawLLM-Benchmark \(commit 52d35ed"):
        open_data("pl-codes", data_dir=tmp_path / "empty")
    copy = tmp_path / "copy"
    shutil.copytree(data_dir / "pl", copy / "pl")
    (copy / "pl" / "codes" / "kk.json").chmod(0o644)
    with open(copy / "pl" / "codes" / "kk.json", "a", encoding="utf-8") as fh:
        fh.write(" ")
    files = {f.path: f for f in registry.get("pl-codes").files}
    status = registry.file_status(files["pl/codes/kk.json"], copy)
    assert status.startswith("changed (sha256 ") and "it loads, but results may differ" in status
    assert "kk::148" in open_data("pl-codes", data_dir=copy)  # and it does load
    assert registry.file_status(files["pl/codes/kc.json"], copy) == "ok"


def test_data_dir_resolution_order(tmp_path, monkeypatch):
    monkeypatch.setenv("LEXIR_DATA", str(tmp_path / "env"))
    assert registry.resolve_data_dir() == (tmp_path / "env").resolve()
    assert registry.resolve_data_dir(tmp_path / "flag") == (tmp_path / "flag").resolve()
    monkeypatch.delenv("LEXIR_DATA")
    beside = registry._PROJECT_ROOT.parent / "shared" / "data"
    if beside.is_dir():
        assert registry.resolve_data_dir() == beside.resolve()
    monkeypatch.setattr(registry, "_PROJECT_ROOT", tmp_path / "nowhere" / "checkout")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert registry.resolve_data_dir() == tmp_path / "xdg" / "lexir"


def test_corpus_and_queries_from_paths(data_dir, tmp_path):
    messages = []
    corpus = open_data(data_dir / "pl" / "codes" / "kk.json", notify=messages.append)
    assert corpus.language == "pl" and "detected language 'pl'" in messages[0]
    assert len(corpus) == 458 and "kk::16" in corpus
    qs = load_queries(data_dir / "pl" / "exams_2012_2023.jsonl", "polishlawllm", corpus)
    assert len(qs) == 119 and {r for _, r, _ in qs.dropped} >= {"act not in corpus"}
    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text('{"_id": "x::1", "text": "Wer einen anderen Menschen tötet, wird bestraft."}\n', encoding="utf-8")
    assert open_data(jsonl, language="de").language == "de"
    with pytest.raises(ValueError, match="unknown query format 'csv'; valid: polishlawllm, orycore, beir, trec"):
        load_queries(jsonl, "csv", corpus)
    with pytest.raises(FormatError, match="no such file"):
        open_data(tmp_path / "nothing.jsonl")


def test_open_takes_a_name_a_path_or_a_dated_name_and_says_what_is_wrong(data_dir, tmp_path):
    """datasets.open, the one door: a registered name (its content; want= its corpus or its
    benchmark), a path (a BEIR folder gives a benchmark, want="corpus" only the corpus), a language
    override of either, and a clear error for each bad spec."""
    bench = open_data("pl-exams", data_dir=data_dir)
    assert len(bench.queries) > 1000 and bench.corpus.language == "pl"
    corpus = open_data("pl-exams", data_dir=data_dir, want="corpus", language="de")
    assert corpus.language == "de" and len(corpus) == len(bench.corpus)
    assert open_data("pl-codes", data_dir=data_dir, want="corpus").fingerprint == bench.corpus.fingerprint
    with pytest.raises(DatasetError, match=r"dataset 'pl-codes' has no queries; datasets with queries: .*pl-exams"):
        open_data("pl-codes", data_dir=data_dir, want="queries")

    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "x::1", "text": "Wer einen anderen Menschen tötet, wird '
                                         'bestraft."}\n{"_id": "x::2", "text": "Der Käufer zahlt den Kaufpreis."}\n',
                                         encoding="utf-8")
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "Totschlag"}\n', encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tx::1\t1\n", encoding="utf-8")
    from_path = open_data(folder, language="de")
    assert from_path.queries.split("test").qrels == {"q1": {"x::1": 1}} and from_path.corpus.language == "de"
    assert open_data(str(folder), language="de", want="corpus").name == "beir"
    (folder / "queries.jsonl").unlink()
    with pytest.raises(FormatError, match="no queries.jsonl beside the corpus"):
        open_data(folder, language="de", want="queries")

    with pytest.raises(DatasetError, match=r"unknown dataset 'pl-exam'; registered: .*pl-exams"):
        open_data("pl-exam")
    with pytest.raises(DatasetError, match=r"'pl-exams@2013-13-01': the date after @ must be a day"):
        open_data("pl-exams@2013-13-01")
    with pytest.raises(DatasetError, match=r"dataset 'pl-exams' has no history.*de-gesetze-history"):
        open_data("pl-exams@2013-01-01", data_dir=data_dir)
    with pytest.raises(DatasetError, match=r"unknown dataset 'nope'"):
        open_data("nope@2013-01-01")
    with pytest.raises(ValueError, match="want='docs'"):
        open_data("pl-exams", want="docs")
