"""A question in the first person is a told case (issue 30, item 2): lexir.analysis.shape finds the
first-person words of a language, and a weighted fusion with ``first_person=true`` gives such
questions ``long_weights`` and every other question ``weights``."""

from __future__ import annotations

import pytest

from lexir.analysis.shape import first_person_words, in_first_person, parse_first_person
from lexir.retrieval.build import build_retriever
from lexir.types import Query

PARTS = "systems=bm25+bm25(mode=stem)"


@pytest.mark.parametrize("text, language", [
    ("J'ai piqué le vélo de mon voisin dans son garage, qu'est-ce que je risque ?", "fr"),
    ("Mon patron m'a viré du jour au lendemain", "fr"),
    ("ukradłem rower koledze, co mi grozi?", "pl"),
    ("Mein Vermieter will die Kaution nicht zurückzahlen", "de"),
    ("My landlord keeps my deposit", "en"),
    # Polish drops the pronoun: the verb's ending says "I" (Morfeusz's fin, bedzie and aglt forms)
    ("Kupiłam buty, po tygodniu się rozkleiły, a sklep nie chce przyjąć reklamacji", "pl"),
    ("Potrąciłem pieszego na pasach", "pl"),
    ("ile odsetek mogę doliczyć za opóźnienie?", "pl"),
    ("czy będę odpowiadał za szkodę?", "pl"),
    ("Gdybym nie oddał pieniędzy, co by się stało?", "pl"),
])
def test_first_person_questions_are_found(text, language):
    assert in_first_person(text, language)


@pytest.mark.parametrize("text, language", [
    ("Le vol est la soustraction frauduleuse de la chose d'autrui.", "fr"),
    ("Kto zabiera w celu przywłaszczenia cudzą rzecz ruchomą, podlega karze pozbawienia wolności", "pl"),
    ("Der Mieter hat die Mietsache nach Beendigung des Mietverhältnisses zurückzugeben.", "de"),
    ("Combien de temps dure la période d'essai pour un cadre ?", "fr"),  # a question, but nobody's own case
    # Polish homographs of a first-person verb form, read whole as a noun or pronoun: not counted
    ("Czym jest wina umyślna i kto ponosi winę za szkodę wyrządzoną ze swoim udziałem?", "pl"),
    ("Sprawca ukradł rower, a pokrzywdzony zapłacił za naprawę", "pl"),  # third person past
    ("Ile lat trwa przedawnienie roszczeń z umowy najmu?", "pl"),
])
def test_statutes_and_impersonal_questions_are_not(text, language):
    assert not in_first_person(text, language)


def test_no_exam_question_of_the_demo_speaks_in_the_first_person(demo_bench):
    """Exam stems speak in the third person, like the code they quote: none is told by the rule."""
    questions = [q.text for q in demo_bench.queries.queries]
    assert len(questions) > 100
    assert [t for t in questions if in_first_person(t, "pl")] == []


def test_the_table_is_checked_line_by_line():
    assert parse_first_person("# comment\nfr\tje, moi\n")["fr"] == frozenset({"je", "moi"})
    for text, message in [("fr je, moi", "line 1: expected"), ("xx\tje", "line 1: unknown language 'xx'"),
                          ("fr\tje,,moi", "line 1: an empty word"), ("fr\tje\nfr\tmoi", "line 2: .*twice")]:
        with pytest.raises(ValueError, match=message):
            parse_first_person(text, "first_person.tsv")
    with pytest.raises(ValueError, match="first_person.tsv"):
        first_person_words("el")  # no Greek words ("με" is also "with")


@pytest.fixture(scope="module")
def demo_queries(demo_bench):
    told = [Query("t1", "ukradłem rower koledze, co mi grozi?"), Query("t2", "pobiłem sąsiada, co mi grozi"),
            Query("t3", "mój szef nie płaci mi pensji od trzech miesięcy")]
    return demo_bench.corpus, [*demo_bench.queries.queries[:20], Query("s1", "kradzież roweru"), *told]


@pytest.mark.parametrize("method", ["combsum", "wrrf"])
def test_first_person_questions_get_long_weights_and_the_others_weights(demo_queries, method):
    corpus, queries = demo_queries
    usual = build_retriever(corpus, f"{method}({PARTS};weights=1,0.2)", cache=False).search_many(queries, 10)
    heavy = build_retriever(corpus, f"{method}({PARTS};weights=1,3)", cache=False).search_many(queries, 10)
    gated = build_retriever(corpus, f"{method}({PARTS};weights=1,0.2;first_person=true;long_weights=1,3)",
                            cache=False).search_many(queries, 10)
    told = {q.id for q in queries if in_first_person(q.text, "pl")}
    assert told == {"t1", "t2", "t3"}
    assert any(usual[q] != heavy[q] for q in told)  # the weights matter here, so the test can fail
    for q in queries:
        assert gated[q.id] == (heavy if q.id in told else usual)[q.id], q.id


def test_first_person_is_a_query_time_parameter_and_refuses_what_it_cannot_use(demo_queries):
    corpus, queries = demo_queries
    plain = build_retriever(corpus, f"combsum({PARTS};weights=1,0.2)", cache=False)
    gated = build_retriever(corpus, f"combsum({PARTS};weights=1,0.2;first_person=true;long_weights=1,3)", cache=False)
    assert plain.with_params({"first_person": True, "long_weights": "1,3"}).search_many(queries, 10) == \
        gated.search_many(queries, 10)
    with pytest.raises(ValueError, match="first_person"):
        build_retriever(corpus, f"rrf({PARTS};first_person=true)", cache=False)
    greek = corpus.with_language("el")
    with pytest.raises(ValueError, match="first_person.tsv"):
        build_retriever(greek, f"combsum({PARTS};first_person=true;long_weights=1,3)", cache=False)
