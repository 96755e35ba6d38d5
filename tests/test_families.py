"""Word families (``families=true``, lemma mode): a verb's two aspects and its noun meet, so an
everyday Polish question (``ukradłem``) finds the statute that names the act (``kradzież``,
``kradnie``). The table is ``lexir/analysis/data/families/pl.tsv``."""

from __future__ import annotations

import pytest

from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.analysis.analyzer import families, parse_families
from lexir.analysis.defaults import parse_defaults


def polish(**options) -> Analyzer:
    return Analyzer(AnalyzerConfig("pl", "lemma", lemmatizer="morfeusz", **options))


def test_a_perfective_past_meets_the_statutes_present_and_the_offences_name():
    with_families = polish(families=True)
    assert with_families("ukradłem") == with_families("kradnie") == with_families("kradzieży") == ["kradzież"]
    assert with_families("zabrałem") == with_families("zabiera")
    assert with_families("uderzyłem") == with_families("uderza")
    plain = polish()
    assert plain("ukradłem") != plain("kradzieży")  # Morfeusz alone: ukraść, kradzież
    assert plain("rower koledze") == with_families("rower koledze") == ["rower", "kolega"]


def test_a_later_reading_in_a_family_wins_over_the_first_reading():
    # Morfeusz reads "zniszczenie" first as a form of "zniszczeć" (to wear out)
    assert polish()("zniszczenie") == ["zniszczeć"]
    assert polish(families=True)("zniszczenie") == polish(families=True)("zniszczył") == ["niszczyć"]


def test_every_word_of_the_polish_table_lands_on_its_familys_head():
    heads, analyse = families("pl"), polish(families=True)
    astray = {word: analyse(word) for word, head in heads.items() if analyse(word) != [head]}
    assert astray == {}


def test_the_analyzer_name_says_families_so_no_index_is_reused_across():
    assert polish(families=True).config.name != polish().config.name
    assert "families" in polish(families=True).config.name


def test_families_need_lemma_mode_and_a_table():
    with pytest.raises(ValueError, match="mode 'lemma'"):
        AnalyzerConfig("pl", "stem", families=True)
    with pytest.raises(ValueError, match="families/el.tsv"):
        AnalyzerConfig("el", "lemma", families=True)


@pytest.mark.parametrize("text, message", [
    ("kradzież kraść\n", "line 1: expected 'head<TAB>"),
    ("# a comment\nkradzież\tkraść, , ukraść\n", "line 2: an empty lemma"),
    ("kradzież\tkraść\nrozbój\tkraść\n", "line 2: 'kraść' is already in the family of 'kradzież'"),
])
def test_a_bad_table_names_its_line(text, message):
    with pytest.raises(ValueError, match=message):
        parse_families(text, "families/xx.tsv")


def test_a_defaults_row_may_carry_families():
    rows = parse_defaults("*\traw\tbm25\tx\npl\tlemma;families=true\tbm25\tx\n")
    assert rows["pl"].options() == {"families": True}
    with pytest.raises(ValueError, match="line 1 .*families=true"):
        parse_defaults("pl\tlemma;families=yes\tbm25\tx\n*\traw\tbm25\tx\n")


def test_bm25_with_families_finds_theft_for_a_first_person_question(demo_bench):
    from lexir.retrieval.build import build_retriever
    from lexir.types import Query

    corpus = demo_bench.corpus
    question = [Query("q", "ukradłem rower koledze, co mi grozi?")]
    spec = "bm25(mode=lemma;lemmatizer=morfeusz{})"
    found = {flag: list(build_retriever(corpus, spec.format(flag), cache=False).search_many(question, 10)["q"])
             for flag in ("", ";families=true")}
    assert "kk::278" in found[";families=true"]
    assert "kk::278" not in found[""]


def test_morfeusz_survives_faiss_whichever_is_asked_for_first():
    """Morfeusz loaded before faiss crashed the process (a segmentation fault) on its next call;
    lexir loads faiss before Morfeusz, so a Polish analyzer made first and a dense index built after
    both work. A child process, since the failure takes the process down."""
    import subprocess
    import sys

    script = (
        "from lexir.analysis import Analyzer, AnalyzerConfig\n"
        "a = Analyzer(AnalyzerConfig('pl', 'lemma', lemmatizer='morfeusz', families=True))\n"
        "print(a('ukradłem'))\n"
        "import faiss, numpy\n"
        "index = faiss.IndexFlatIP(4); index.add(numpy.eye(4, dtype='float32'))\n"
        "print(a('kradzieży'), index.ntotal)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["['kradzież']", "['kradzież'] 4"]


def test_the_page_marks_the_words_recommended_matched(demo_bench):
    """A hit's snippet marks words with the analyzer of the BM25 that matched them, found however
    deep it sits: under an act cue and exam options (as in Polish recommended, less its dense
    part, which would encode the demo), the families'."""
    from lexir.retrieval.build import build_retriever
    from lexir.structure.hits import hit_analyzer, snippet

    nested = build_retriever(demo_bench.corpus, "act-cue(base=options(base=bm25(mode=lemma;lemmatizer=morfeusz;"
                                                "families=true);weight=0.5))")
    analyze = hit_analyzer(nested, "pl")
    assert analyze.config.families
    question = frozenset(analyze("ukradłem rower koledze"))
    text = next(d.text for d in demo_bench.corpus if d.id == "kk::279")  # "Kto kradnie z włamaniem"
    assert "<mark>kradnie</mark>" in snippet(text, question, analyze)
