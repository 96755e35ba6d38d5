"""``greekbar``: GreekBarRetrieval from a local copy of its hub repository. The real data is not
reachable here, so each test writes a small fixture in exactly the hub's layout: subsets corpus,
queries, qrels and greekbarbench, each with a test split, as parquet (through pyarrow, the hub's
``SUBSET/test-00000-of-00001.parquet``) or as JSON lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lexir.dataset_stats import stats
from lexir.datasets import open as open_data
from lexir.datasets.registry import DatasetError
from lexir.experiment import Experiment, run_experiment
from lexir.jurisdictions.el.greekbar import load_greekbar

REPO = Path(__file__).resolve().parents[1]

CORPUS = [
    {"id": "CivC::281", "text": "Η άσκηση του δικαιώματος απαγορεύεται αν υπερβαίνει προφανώς τα όρια που "
                                "επιβάλλουν η καλή πίστη ή τα χρηστά ήθη ή ο κοινωνικός ή οικονομικός σκοπός του δικαιώματος."},
    {"id": "CivC::361", "text": "Για τη σύσταση ή αλλοίωση ενοχής με δικαιοπραξία απαιτείται σύμβαση, "
                                "εφόσον ο νόμος δεν ορίζει διαφορετικά."},
    {"id": "CivC::914", "text": "Όποιος ζημιώσει άλλον παράνομα και υπαίτια έχει υποχρέωση να τον αποζημιώσει."},
    {"id": "CivC::932", "text": "Σε περίπτωση αδικοπραξίας το δικαστήριο μπορεί να επιδικάσει εύλογη χρηματική "
                                "ικανοποίηση για ηθική βλάβη."},
    {"id": "PenC::299", "text": "Όποιος με πρόθεση σκότωσε άλλον τιμωρείται με ισόβια κάθειρξη."},
    {"id": "PenC::372", "text": "Όποιος αφαιρεί ξένο ολικά ή εν μέρει κινητό πράγμα από την κατοχή άλλου με "
                                "σκοπό να το ιδιοποιηθεί παράνομα τιμωρείται με φυλάκιση."},
    {"id": "PenC::386", "text": "Όποιος με σκοπό να αποκομίσει παράνομο περιουσιακό όφελος βλάπτει ξένη περιουσία "
                                "πείθοντας κάποιον σε πράξη με εν γνώσει παράσταση ψευδών γεγονότων ως αληθινών "
                                "τιμωρείται για απάτη."},
    {"id": "CCP::216", "text": "Η αγωγή πρέπει να περιέχει σαφή έκθεση των γεγονότων που θεμελιώνουν την αγωγή "
                               "και ορισμένο αίτημα."},
    {"id": "CCP::933", "text": "Η ανακοπή κατά της εκτέλεσης ασκείται ενώπιον του μονομελούς πρωτοδικείου."},
]
RECORDS = [
    {"id": "q1", "facts": "Ο Α παρέλαβε από τον γιατρό Ι θεραπεία και μετά την επέμβαση υπέστη βλάβη στο πρόσωπο.",
     "question": "Ποια είναι η ευθύνη του Ι για αποζημίωση και χρηματική ικανοποίηση;",
     "area": "Αστικό Δίκαιο", "date": "2015-10", "number": 1, "answer": "Ευθύνη κατά ΑΚ 914 και 932.",
     "gold": ["CivC::914", "CivC::932"]},
    {"id": "q2", "facts": "Ο Β αφαίρεσε από το κατάστημα του Γ ένα κινητό τηλέφωνο χωρίς να πληρώσει.",
     "question": "Ποιο έγκλημα τέλεσε ο Β;", "area": "Ποινικό Δίκαιο", "date": "2016-05", "number": 2,
     "answer": "Κλοπή, ΠΚ 372.", "gold": ["PenC::372"]},
    {"id": "q3", "facts": "Ο Δ έπεισε τον Ε με ψευδή γεγονότα να του μεταβιβάσει χρήματα.",
     "question": "Τιμωρείται ο Δ για απάτη;", "area": "Ποινικό Δίκαιο", "date": "2016-05", "number": 3,
     "answer": "Ναι, ΠΚ 386.", "gold": ["PenC::386"]},
    {"id": "q4", "facts": "Ο Ζ άσκησε αγωγή χωρίς να εκθέσει τα γεγονότα που τη θεμελιώνουν.",
     "question": "Είναι η αγωγή ορισμένη;", "area": "Πολιτική Δικονομία", "date": "2017-11", "number": 1,
     "answer": "Όχι, ΚΠολΔ 216.", "gold": ["CCP::216", "CCP::999"]},  # CCP::999 is not in the corpus
    {"id": "q5", "facts": "Ο Η σύναψε σύμβαση με τον Θ.", "question": "Πώς συστήνεται η ενοχή;",
     "area": "Αστικό Δίκαιο", "date": "2017-11", "number": 2, "answer": "ΑΚ 361.", "gold": ["CivC::999"]},
]


def query_text(record: dict) -> str:
    return f"{record['facts']}\n\n{record['question']}"


def subsets() -> dict[str, list[dict]]:
    return {
        "corpus": [dict(row, title="") for row in CORPUS],
        "queries": [{"id": r["id"], "text": query_text(r)} for r in RECORDS],
        "qrels": [{"query-id": r["id"], "corpus-id": d, "score": 1} for r in RECORDS for d in r["gold"]],
        "greekbarbench": [{k: v for k, v in r.items() if k != "gold"} for r in RECORDS],
    }


def write_parquet(folder: Path) -> Path:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    for subset, rows in subsets().items():
        (folder / subset).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), folder / subset / "test-00000-of-00001.parquet")
    return folder


def write_jsonl(folder: Path) -> Path:
    for subset, rows in subsets().items():
        (folder / subset).mkdir(parents=True, exist_ok=True)
        with open(folder / subset / "test.jsonl", "w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return folder


@pytest.mark.parametrize("writer", [write_parquet, write_jsonl], ids=["parquet", "jsonl"])
def test_loads_the_hub_layout(tmp_path, writer):
    bench = load_greekbar(writer(tmp_path / "el" / "greekbar"))
    corpus, queries = bench.corpus, bench.queries
    assert [d.id for d in corpus] == [row["id"] for row in CORPUS] and corpus.language == "el"
    assert corpus["PenC::372"].text == CORPUS[5]["text"]
    assert sorted(corpus.acts) == ["CCP", "CivC", "PenC"] and len(corpus.acts["CivC"].articles) == 4
    kept = [r for r in RECORDS if any(d in corpus for d in r["gold"])]
    assert [q.id for q in queries.queries] == [r["id"] for r in kept] and queries.splits == {"test": [r["id"] for r in kept]}
    for q, r in zip(queries.queries, kept, strict=True):
        assert q.text == query_text(r) and q.text.split("\n\n") == [r["facts"], r["question"]]
        assert {k: q.meta[k] for k in ("area", "date", "number", "answer")} == {k: r[k] for k in ("area", "date", "number", "answer")}
        assert queries.qrels[q.id] == {d: 1 for d in r["gold"] if d in corpus}
    # a gold article the corpus lacks is reported, never silently dropped; a query left with none is dropped
    assert ("q4", "citation: article not in corpus", "CCP::999") in queries.dropped
    assert ("q5", "article not in corpus", "CivC::999") in queries.dropped and len(queries.dropped) == 2


def test_parquet_and_jsonl_copies_load_alike(tmp_path):
    a = load_greekbar(write_parquet(tmp_path / "a"))
    b = load_greekbar(write_jsonl(tmp_path / "b"))
    assert list(a.corpus) == list(b.corpus)
    assert [(q.id, q.text, dict(q.meta)) for q in a.queries.queries] == [(q.id, q.text, dict(q.meta)) for q in b.queries.queries]
    assert a.queries.qrels == b.queries.qrels


def test_registered_under_the_data_dir_with_stats_per_area(tmp_path):
    write_jsonl(tmp_path / "el" / "greekbar")
    bench = open_data("greekbar", data_dir=tmp_path)
    result = stats(bench)
    kept = [r for r in RECORDS if any(d in bench.corpus for d in r["gold"])]
    want = {}
    for r in kept:
        entry = want.setdefault(r["area"], {"queries": 0, "qrels": 0})
        entry["queries"] += 1
        entry["qrels"] += sum(d in bench.corpus for d in r["gold"])
    assert {a: {k: v[k] for k in ("queries", "qrels")} for a, v in result["per area"].items()} == want
    assert sum(v["queries"] for v in result["per date"].values()) == len(kept)
    assert result["queries dropped"] == 1 and result["corpus"]["articles per act"] == {"CivC": 4, "PenC": 3, "CCP": 2}


def test_missing_copy_says_what_to_download_and_where(tmp_path):
    with pytest.raises(DatasetError) as err:
        open_data("greekbar", data_dir=tmp_path)
    message = str(err.value)
    assert str(tmp_path / "el" / "greekbar") in message and "revision v2.0" in message
    assert all(f"{s}/" in message for s in ("corpus", "queries", "qrels", "greekbarbench"))
    folder = write_jsonl(tmp_path / "partial")
    (folder / "qrels" / "test.jsonl").unlink()
    with pytest.raises(DatasetError, match="no test split of subset 'qrels'"):
        load_greekbar(folder)


def test_bad_rows_name_the_file_and_row(tmp_path):
    folder = write_jsonl(tmp_path / "g")
    path = folder / "queries" / "test.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"queries/test\.jsonl:2: invalid JSON"):
        load_greekbar(folder)
    path.write_text("\n".join([lines[0], json.dumps({"id": "q9"}), *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"queries/test\.jsonl: row 2 has no 'text'"):
        load_greekbar(folder)
    write_jsonl(folder)
    (folder / "corpus" / "test.jsonl").write_text(json.dumps({"id": "no-source", "text": "x"}) + "\n")
    with pytest.raises(DatasetError, match="'no-source' is not SOURCE::ARTICLE"):
        load_greekbar(folder)


def test_the_paper_experiment_runs_once_the_data_is_present(tmp_path):
    """experiments/greekbar-paper.yaml runs end to end over a copy in the hub's layout (the fixture
    here; the real repository once it is placed at el/greekbar)."""
    write_parquet(tmp_path / "data" / "el" / "greekbar")
    exp = Experiment.from_file(REPO / "experiments" / "greekbar-paper.yaml")
    assert {s.name for s in exp.systems} >= {"bm25-paper", "rank-bm25", "dense", "bm25-prf", "rrf"}
    exp.output = tmp_path / "out"
    (result,) = run_experiment(exp, tmp_path / "data", log=lambda m: None)
    estimates = result.comparison.estimates
    assert set(estimates) == {s.name for s in exp.systems}
    recall = {name: next(e for m, e in measures.items() if str(m) == "R@100").mean for name, measures in estimates.items()}
    assert all(0.0 <= r <= 1.0 for r in recall.values()) and recall["bm25-paper"] > 0  # the gold is findable
    llm = Experiment.from_file(REPO / "experiments" / "greekbar-paper-llm.yaml")  # parses without an LLM
    assert [s.name for s in llm.systems] == ["bm25-paper", "reform-bm25", "react-bm25"]
