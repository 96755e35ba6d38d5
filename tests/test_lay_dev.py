"""The everyday development questions of ``benchmarks/lay_dev.py`` (Polish, French, Austrian): each
file parses, its ids are unique, and every question names gold articles that exist in the corpus it
is searched over, as the corpus's parser reads it now (a parser change that renames articles would
otherwise make the questions unanswerable without a word). A malformed line names its file and line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))
import lay_dev as LAY  # noqa: E402


@pytest.mark.parametrize("name", sorted(LAY.LAY_SETS))
def test_every_lay_question_cites_articles_of_its_corpus(name, data_dir, monkeypatch):
    monkeypatch.setenv("LEXIR_DATA", str(data_dir))
    lay = LAY.LAY_SETS[name]
    queries, qrels = LAY.lay_questions(BENCH / "data" / lay.file)
    assert len({q.id for q in queries}) == len(queries), "two questions share an id"
    assert all(q.text.strip() and qrels[q.id] for q in queries)
    corpus = lay.corpus()
    missing = LAY.missing_gold(qrels, corpus)
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
