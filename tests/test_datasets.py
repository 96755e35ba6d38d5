import json
import shutil

import pytest

from lexir.datasets import DatasetError, registry
from lexir.datasets.generic import load_corpus, load_queries
from lexir.datasets.polish import load_orycore_exam, load_polishlawllm_exams
from lexir.io import FormatError


def test_pl_codes_are_cleaned_and_split(data_dir):
    corpus = registry.load("pl-codes", data_dir)
    assert len(corpus) == 4318 and corpus.act_ids() == ["kc", "kk", "kks", "kpa", "kpc"]
    assert "kc::22^1" in corpus and "kc::4^1" not in corpus
    text = corpus["kk::4"].text
    assert "wymierzoną" in text and "-\n" not in text and "  " not in text
    levels = {u.level for u in corpus.units()}
    assert {"article", "par", "pkt"} <= levels
    kk1 = corpus.acts["kk"].articles[0]
    assert kk1.id == "kk::1" and [c.id for c in kk1.children] == ["kk::1/par:1", "kk::1/par:2", "kk::1/par:3"]


def test_pl_exams_gold_drops_and_splits(data_dir):
    bench = registry.load("pl-exams", data_dir)
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
    corpus = registry.load("pl-codes", data_dir)
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
    corpus = registry.load("pl-codes", data_dir)
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


def test_missing_and_corrupt_files_are_reported_with_provenance(data_dir, tmp_path):
    with pytest.raises(DatasetError, match=r"pl/codes/kc.json is missing: expected at .*kc.json; obtain it from "
                                           r"github.com/PiotrTyrakowski/PolishLawLLM-Benchmark \(commit 52d35ed"):
        registry.get("pl-codes").load(tmp_path / "empty")
    copy = tmp_path / "copy"
    shutil.copytree(data_dir / "pl", copy / "pl")
    (copy / "pl" / "codes" / "kk.json").chmod(0o644)
    with open(copy / "pl" / "codes" / "kk.json", "a", encoding="utf-8") as fh:
        fh.write(" ")
    files = {f.path: f for f in registry.get("pl-codes").files}
    assert registry.file_status(files["pl/codes/kk.json"], copy).startswith("corrupt")
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
    corpus = load_corpus(str(data_dir / "pl" / "codes" / "kk.json"), notify=messages.append)
    assert corpus.language == "pl" and "detected language 'pl'" in messages[0]
    assert len(corpus) == 458 and "kk::16" in corpus
    qs = load_queries(data_dir / "pl" / "exams_2012_2023.jsonl", "polishlawllm", corpus)
    assert len(qs) == 119 and {r for _, r, _ in qs.dropped} >= {"act not in corpus"}
    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text('{"_id": "x::1", "text": "Wer einen anderen Menschen tötet, wird bestraft."}\n', encoding="utf-8")
    assert load_corpus(str(jsonl), language="de").language == "de"
    with pytest.raises(ValueError, match="unknown query format 'csv'; valid: polishlawllm, orycore, beir, trec"):
        load_queries(jsonl, "csv", corpus)
    with pytest.raises(FormatError, match="no such file"):
        load_corpus(str(tmp_path / "nothing.jsonl"))
