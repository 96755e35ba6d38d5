"""The everyday development questions of ``benchmarks/lay_dev.py`` (Polish, French, Austrian): each
file parses, its ids are unique, and every question names gold articles that exist in the corpus it
is searched over, as the corpus's parser reads it now (a parser change that renames articles would
otherwise make the questions unanswerable without a word). A malformed line names its file and line."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _lay_dev():
    spec = importlib.util.spec_from_file_location("lay_dev", BENCH / "lay_dev.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("lay_dev", module)  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return sys.modules["lay_dev"]


LAY = _lay_dev()


@pytest.mark.parametrize("name", sorted(LAY.LAY_SETS))
def test_every_lay_question_cites_articles_of_its_corpus(name, data_dir, monkeypatch):
    monkeypatch.setenv("LEXIR_DATA", str(data_dir))
    lay = LAY.LAY_SETS[name]
    queries, qrels = LAY.lay_questions(BENCH / "data" / lay.file)
    assert len({q.id for q in queries}) == len(queries), "two questions share an id"
    assert all(q.text.strip() and qrels[q.id] for q in queries)
    corpus = lay.corpus()
    missing = sorted({doc for gold in qrels.values() for doc in gold} - set(corpus.ids))
    assert not missing, f"{lay.file}: gold articles not in {corpus.name}: {missing}"


def test_a_malformed_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "lay.jsonl"
    path.write_text('{"id": "q1", "text": "Ich habe ...", "gold": ["AT-StGB::127"]}\n\n'
                    '{"id": "q2", "text": "Mein Vermieter ..."}\n', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"lay\.jsonl:3: 'gold'"):
        LAY.lay_questions(path)
    path.write_text('{"id": "q1", "text": "Ich habe ..., "gold": []}\n', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"lay\.jsonl:1: "):
        LAY.lay_questions(path)
    path.write_text('{"id": "q1", "text": "Ich habe ...", "gold": ["AT-StGB::127"]}\n', encoding="utf-8")
    queries, qrels = LAY.lay_questions(path)
    assert [(q.id, q.text) for q in queries] == [("q1", "Ich habe ...")] and qrels == {"q1": {"AT-StGB::127": 1}}
