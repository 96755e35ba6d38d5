"""Compounds split into their parts (``compounds=query|both``): a German question's compound meets
the statute's words (``Mietvertragskündigung`` meets ``Kündigung``). The splitter is
:mod:`lexir.analysis.compounds`; its table is ``lexir/analysis/data/compounds/de.tsv``."""

from __future__ import annotations

import pytest

from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.analysis.compounds import MIN_PART, Splitter, parse_counts, word_counts
from lexir.analysis.defaults import parse_defaults
from lexir.retrieval.bm25 import BM25Retriever
from lexir.structure.hits import UnitIndex, format_hits, snippet
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


@pytest.mark.parametrize("compounds", ["query", "both"])
def test_a_question_with_a_compound_finds_the_statute_that_writes_it_apart(compounds):
    docs = [Document("BGB::573", "Der Vermieter kann nur kündigen, wenn er ein berechtigtes Interesse an der Kündigung "
                     "des Mietvertrags hat. Eigenbedarf ist ein solches Interesse.", "Ordentliche Kündigung"),
            Document("BGB::535", "Durch den Mietvertrag wird der Vermieter verpflichtet, dem Mieter den Gebrauch der "
                     "Mietsache zu gewähren.", "Inhalt und Hauptpflichten des Mietvertrags"),
            Document("BGB::433", "Durch den Kaufvertrag wird der Verkäufer einer Sache verpflichtet.", "Kaufvertrag")]
    corpus = Corpus("mini", docs, language="de")
    question = Query("q", "Ist eine Eigenbedarfskündigung zulässig?")
    plain = BM25Retriever(german()).index(corpus).search_many([question], 3)["q"]
    split = BM25Retriever(german(compounds=compounds)).index(corpus).search_many([question], 3)["q"]
    assert plain == {}  # no word of the question is in any provision
    assert max(split, key=split.get) == "BGB::573"


def test_query_compounds_split_the_question_and_leave_the_provisions_whole():
    index_side = german(compounds="query")
    query_side = index_side.for_queries()
    assert index_side("Eigenbedarfskündigung") == german()("Eigenbedarfskündigung")  # provisions: as written
    assert query_side("Eigenbedarfskündigung") == german(compounds="both")("Eigenbedarfskündigung")
    assert query_side is index_side.for_queries() and query_side.for_queries() is query_side
    assert german(compounds="both").for_queries().config == german(compounds="both").config
    # a provision that writes the compound is not found by one of its parts
    docs = [Document("BGB::1", "Der Verkehrsunfall ist zu melden."), Document("BGB::2", "Ein Unfall ist zu melden.")]
    corpus = Corpus("mini", docs, language="de")
    found = BM25Retriever(index_side).index(corpus).search_many([Query("q", "Unfall")], 2)["q"]
    assert set(found) == {"BGB::2"}
    both = BM25Retriever(german(compounds="both")).index(corpus).search_many([Query("q", "Unfall")], 2)["q"]
    assert set(both) == {"BGB::1", "BGB::2"}


def test_a_snippet_marks_what_the_search_matched():
    analyze = german(compounds=True)
    text = "Die Kündigungsfrist beträgt drei Monate. Eine Frist ist einzuhalten."
    assert "<mark>Kündigungsfrist</mark>" in snippet(text, frozenset(analyze("Frist")), analyze)
    assert "<mark>Kündigungsfrist</mark>" not in snippet(text, frozenset(german()("Frist")), german())
    # compounds="query": the question's parts mark the provision's words, not the provision's parts
    query = german(compounds="query")
    hits = format_hits(UnitIndex(Corpus("mini", [Document("BGB::1", text)], language="de")), [("BGB::1", 1.0)],
                       "Fristberechnung", query)
    assert "<mark>Frist</mark>" in hits[0]["snippet"] and "<mark>Kündigungsfrist</mark>" not in hits[0]["snippet"]


def test_the_analyzer_name_says_compounds_so_no_index_is_reused_across():
    names = {german(compounds=c).config.name for c in ("", "query", "both")}
    assert len(names) == 3


def test_compounds_need_a_table_and_a_mode_that_reads_words_as_written():
    with pytest.raises(ValueError, match="unknown compounds 'always'"):
        AnalyzerConfig("de", "stem", compounds="always")
    assert AnalyzerConfig("de", "stem", compounds=True).compounds == "both"
    assert AnalyzerConfig("de", "stem", compounds=False).compounds == ""
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
    rows = parse_defaults("de\tstem;compounds=query\tbm25\tsomewhere\n*\traw\tbm25\tfallback\n")
    assert rows["de"].options() == {"compounds": "query"}
    for bad in ("compound=query", "compounds=true"):
        with pytest.raises(ValueError, match="line 1 \\(field 'mode'\\).*compounds=query\\|both"):
            parse_defaults(f"de\tstem;{bad}\tbm25\tsomewhere\n*\traw\tbm25\tfallback\n")
