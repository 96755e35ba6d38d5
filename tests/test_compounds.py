"""Compounds split into their parts (``compounds=true``): a German question's compound meets the
statute's words (``Mietvertragskündigung`` meets ``Kündigung``). The splitter is
:mod:`lexir.analysis.compounds`; its table is ``lexir/analysis/data/compounds/de.tsv``."""

from __future__ import annotations

import pytest

from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.analysis.compounds import MIN_PART, Splitter, parse_counts, word_counts
from lexir.analysis.defaults import parse_defaults
from lexir.retrieval.bm25 import BM25Retriever
from lexir.structure.hits import snippet
from lexir.types import Corpus, Document, Query


def german(**options) -> Analyzer:
    return Analyzer(AnalyzerConfig("de", "stem", stoplist="iso", verb_lemmas=True, **options))


@pytest.fixture(scope="module")
def split():
    return Splitter(word_counts("de")).parts


@pytest.mark.parametrize("word, parts", [
    ("mietvertragskündigung", ("mietvertrag", "kündigung")),  # the Fugen-s is neither part's
    ("arbeitsvertrag", ("arbeit", "vertrag")),
    ("schadensersatzanspruch", ("schadensersatz", "anspruch")),
    ("verkehrsunfall", ("verkehr", "unfall")),
    ("eigenbedarfskündigung", ("eigen", "bedarf", "kündigung")),  # the rest splits again
])
def test_compounds_of_the_german_table_split_where_a_lawyer_would(split, word, parts):
    assert split(word) == parts


@pytest.mark.parametrize("word", [
    "gesellschaft",  # used more often whole than its would-be parts: never split
    "kaufvertrag", "krankenversicherung",
    "vollendung", "gesetzlichen", "bestehen",  # no part of five letters or more that is a word
    "mietvertrag",  # miet- has four letters: below MIN_PART
])
def test_words_the_statutes_use_whole_stay_whole(split, word):
    assert split(word) == ()


def test_the_whole_word_wins_where_it_is_more_frequent_than_its_parts():
    counts = {"haftung": 100, "pflicht": 100, "haftpflicht": 10, "abcde": 1, "fghij": 1, "abcdefghij": 5}
    parts = Splitter(counts).parts
    assert parts("haftungpflicht") == ("haftung", "pflicht")  # not a word itself: count 0
    assert parts("abcdefghij") == ()  # sqrt(1 * 1) < 5
    assert Splitter({**counts, "abcdefghij": 1}).parts("abcdefghij") == ()  # a tie keeps it whole
    assert parts("abcdesfghij") == ("abcde", "fghij")  # a linking s
    assert parts("abcdexfghij") == ()  # x links nothing
    assert all(len(p) >= MIN_PART for p in parts("haftungpflicht"))


def test_the_analyzer_puts_the_parts_after_the_compound():
    plain, split = german(), german(compounds=True)
    text = "Die Mietvertragskündigung des Vermieters"
    assert split(text) == [*plain("Mietvertragskündigung"), *plain("Mietvertrag"), *plain("Kündigung"),
                           *plain("Vermieters")]
    assert split.surface(text) == ["die", "mietvertragskündigung", "mietvertrag", "kündigung", "des", "vermieters"]
    # the batch path of a search (pieces of folded text) reads the same tokens
    pieces = split.pieces_joined([text])
    assert [t for p in pieces for t in split.piece_tokens(p)] == split.surface(text)


def test_a_question_with_a_compound_finds_the_statute_that_writes_it_apart():
    docs = [Document("BGB::573", "Der Vermieter kann nur kündigen, wenn er ein berechtigtes Interesse an der Kündigung "
                     "des Mietvertrags hat. Eigenbedarf ist ein solches Interesse.", "Ordentliche Kündigung"),
            Document("BGB::535", "Durch den Mietvertrag wird der Vermieter verpflichtet, dem Mieter den Gebrauch der "
                     "Mietsache zu gewähren.", "Inhalt und Hauptpflichten des Mietvertrags"),
            Document("BGB::433", "Durch den Kaufvertrag wird der Verkäufer einer Sache verpflichtet.", "Kaufvertrag")]
    corpus = Corpus("mini", docs, language="de")
    question = Query("q", "Ist eine Eigenbedarfskündigung zulässig?")
    plain = BM25Retriever(german()).index(corpus).search_many([question], 3)["q"]
    split = BM25Retriever(german(compounds=True)).index(corpus).search_many([question], 3)["q"]
    assert plain == {}  # no word of the question is in any provision
    assert max(split, key=split.get) == "BGB::573"


def test_a_snippet_marks_the_compound_a_part_of_the_question_matched():
    analyze = german(compounds=True)
    text = "Die Kündigungsfrist beträgt drei Monate."
    assert "<mark>Kündigungsfrist</mark>" in snippet(text, frozenset(analyze("Frist")), analyze)
    assert "<mark>" not in snippet(text, frozenset(german()("Frist")), german())


def test_the_analyzer_name_says_compounds_so_no_index_is_reused_across():
    assert german(compounds=True).config.name != german().config.name
    assert "compounds" in german(compounds=True).config.name


def test_compounds_need_a_table_and_a_mode_that_reads_words_as_written():
    with pytest.raises(ValueError, match="compounds/pl.tsv"):
        AnalyzerConfig("pl", "stem", compounds=True)
    with pytest.raises(ValueError, match="modes 'raw' and 'stem'"):
        AnalyzerConfig("de", "lemma", compounds=True)
    assert Analyzer.create("de", "raw", compounds=True)("Verkehrsunfall") == ["verkehrsunfall", "verkehr", "unfall"]


@pytest.mark.parametrize("text, message", [
    ("kündigung\n", "line 1: expected 2 tab-separated fields"),
    ("# a comment\nkündigung\tzwei\n", "line 2 \\(field 'count'\\)"),
    ("kündigung\t0\n", "line 1 \\(field 'count'\\)"),
    ("kündigung\t3\n frist\t2\n", "line 2 \\(field 'word'\\)"),
])
def test_a_bad_table_names_its_line(text, message):
    with pytest.raises(ValueError, match=message):
        parse_counts(text, "compounds/xx.tsv")


def test_a_defaults_row_may_turn_compounds_on():
    rows = parse_defaults("de\tstem;compounds=true\tbm25\tsomewhere\n*\traw\tbm25\tfallback\n")
    assert rows["de"].options() == {"compounds": True}
    with pytest.raises(ValueError, match="line 1 \\(field 'mode'\\).*compounds=true\\|false"):
        parse_defaults("de\tstem;compound=true\tbm25\tsomewhere\n*\traw\tbm25\tfallback\n")
