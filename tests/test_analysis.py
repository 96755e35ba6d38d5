import json
from contextlib import nullcontext

import pytest

from lexir.analysis import Analyzer, AnalyzerConfig, detect_language, normalise_language, stopwords


def test_greek_folding_strips_accents_and_final_sigma():
    tokens = Analyzer.create("el", "raw", stopwords=False)("Ποινικός Κώδικας ΆΡΘΡΟ")
    assert tokens == ["ποινικοσ", "κωδικασ", "αρθρο"]


def test_greek_stopwords_match_after_folding():
    # "της" and "και" are stopwords; they must be removed even though the list is accent-free
    assert Analyzer.create("el", "raw")("της ποινής και του") == ["ποινησ"]


def test_hyphenated_line_break_is_repaired():
    text = "karę obniża się do wy-\n       mierzoną"
    assert "wymierzoną" in Analyzer.create("pl", "raw")(text)


def test_polish_stopwords_removed_and_repeats_kept():
    tokens = Analyzer.create("pl", "raw")("Kara i kara w czasie czynu")
    assert tokens == ["kara", "kara", "czasie", "czynu"]


def test_modes_give_different_forms():
    text = "popełnienia przestępstw przez sprawców"
    raw = Analyzer.create("pl", "raw")(text)
    stem = Analyzer.create("pl", "stem")(text)
    lemma = Analyzer.create("pl", "lemma")(text)
    assert raw == ["popełnienia", "przestępstw", "sprawców"]
    assert stem != raw and all(len(s) <= len(r) for s, r in zip(stem, raw, strict=True))
    assert lemma[1] == "przestępstwo" and lemma[2] == "sprawca"


def test_morfeusz_lemmatizer_for_polish():
    tokens = Analyzer.create("pl", "lemma", lemmatizer="morfeusz")("sądu okręgowego")
    assert tokens == ["sąd", "okręgowy"]


def test_morfeusz_rejected_for_other_languages():
    with pytest.raises(ValueError, match="Polish only"):
        AnalyzerConfig("de", "lemma", lemmatizer="morfeusz")


def test_german_and_english_stemming():
    assert Analyzer.create("de", "stem")("Schadensersatzpflicht der Verletzten") == ["schadensersatzpflicht", "verletzt"]
    assert Analyzer.create("en", "stem")("the courts ruled") == ["court", "rule"]


def test_unknown_language_and_mode_list_valid_names():
    with pytest.raises(ValueError, match="valid:.*pl \\(polish\\)"):
        normalise_language("klingon")
    with pytest.raises(ValueError, match="raw, stem, lemma"):
        AnalyzerConfig("pl", "soundex")


def test_language_names_accepted():
    assert normalise_language("Polish") == "pl"
    assert normalise_language("el") == "el"


def test_stopword_lists_are_data():
    assert "oraz" in stopwords("pl") and "und" in stopwords("de") and "και" in stopwords("el")
    assert stopwords("fi") == frozenset()  # no list: nothing removed, no error


def test_empty_text_gives_no_tokens():
    assert Analyzer.create("pl", "stem")("  ,;  ") == []


def test_detect_language_on_real_statutes(data_dir):
    kk = json.loads((data_dir / "pl" / "codes" / "kk.json").read_text(encoding="utf-8"))
    assert detect_language(list(kk.values())[:30])[0] == "pl"
    greek = json.loads((data_dir / "el" / "law-2472-1997.json").read_text(encoding="utf-8"))
    assert detect_language([p["content"] for p in greek["provisions"][:10]])[0] == "el"
    assert detect_language(["Wer vorsätzlich oder fahrlässig das Leben eines anderen verletzt, ist zum Ersatz "
                            "des daraus entstehenden Schadens verpflichtet."])[0] == "de"


def test_greek_lemmas_differ_from_raw_tokens_on_real_statute(data_dir):
    # simplemma knows accented Greek forms only; lemmatising after accent stripping found no
    # lemma at all and made mode=lemma silently equal to raw.
    law = json.loads((data_dir / "el" / "law-2472-1997.json").read_text(encoding="utf-8"))
    text = " ".join(p["content"] for p in law["provisions"][:20])
    raw = Analyzer.create("el", "raw")(text)
    lemma = Analyzer.create("el", "lemma")(text)
    assert len(lemma) == len(raw)  # one term per token, the same stopwords removed
    changed = sum(r != m for r, m in zip(raw, lemma, strict=True)) / len(raw)
    assert changed > 0.25, f"only {changed:.0%} of Greek tokens got a lemma"
    # Inflected forms of one word meet in one folded lemma.
    forms = Analyzer.create("el", "lemma")("του δικαστηρίου τα δικαστήρια διατάξεις διάταξη")
    assert forms == ["δικαστηριο", "δικαστηριο", "διαταξη", "διαταξη"]


def test_lemma_mode_removes_stopwords_before_lemmatising():
    assert Analyzer.create("el", "lemma")("της ποινής και του") == ["ποινη"]
    assert Analyzer.create("pl", "lemma", stopwords=False)("i kara") == ["i", "kara"]


@pytest.mark.parametrize("options", [{"mode": "stem"}, {"mode": "stem", "compounds": True}, {"mode": "lemma"}])
def test_an_analyzer_keeps_a_bounded_number_of_word_forms(options):
    # a service analyses every new word its questions bring: what the analyzer keeps must not grow with them
    from lexir.analysis.analyzer import MAX_FORMS

    analyzer, fresh = Analyzer.create("de", **options), Analyzer.create("de", **options)
    kept = [cache for cache in (analyzer._forms, analyzer._split) if cache is not None]
    assert kept and all(cache.limit == MAX_FORMS for cache in kept)
    for cache in kept:
        cache.limit = 50
    words = [f"Wort{i}er Kündigungsfrist{i} Mietvertragskündigung" for i in range(200)]
    got = [analyzer(w) for w in words]
    assert all(len(cache) <= 50 for cache in kept)
    assert got == [fresh(w) for w in words]  # forms computed again after a clear are the same forms


def test_lexirs_simplemma_lemmatizers_give_simplemmas_lemmas_and_can_be_released(data_dir):
    # lexir owns simplemma's dictionaries (one lemmatizer of each kind per process): the full ones for
    # an index's analysis, the low-memory ones for a question's words in a process that only loaded
    # an index; a streamed build frees them before its matrix. Whichever answers, the lemmas must be
    # the library's own.
    import simplemma

    from lexir.analysis import bulk_lemmas, release_lemmatizer
    from lexir.analysis.analyzer import SIMPLEMMA
    from lexir.io import read_corpus_jsonl
    from lexir.retrieval.bm25 import BM25Retriever
    from lexir.types import Corpus, DocumentStream

    docs = read_corpus_jsonl(data_dir / "de" / "gerlayqa-dev" / "corpus.jsonl")[:300]
    words = {"de": sorted({w for d in docs for w in Analyzer.create("de").surface(d.text)})[:400],
             "fr": "le salarié licencié a contesté les heures supplémentaires impayées".split()}
    for bulk in (False, True):
        SIMPLEMMA.__init__()  # nothing loaded, nothing used
        with bulk_lemmas() if bulk else nullcontext():
            for language, some in words.items():
                for word in some:
                    assert SIMPLEMMA.lemmatize(word, language) == simplemma.lemmatize(word, lang=language), \
                        (bulk, language, word)
        assert SIMPLEMMA.loaded() == {"full" if bulk else "low-memory"}

    SIMPLEMMA.__init__()
    analyzer = Analyzer.create("de", "stem", stoplist="iso", verb_lemmas=True)
    BM25Retriever(analyzer).index(Corpus("bgb", docs, language="de"))
    assert SIMPLEMMA.loaded() == {"full"}  # a Corpus's build keeps them: the next build or question is fast
    BM25Retriever(analyzer).index(DocumentStream("bgb", lambda: iter(docs), language="de"))
    assert SIMPLEMMA.loaded() == set()  # a stream's build (lexir index FILE) frees them for its matrix
    question = "Die Vermieterin kündigte, der Mieter widersprach"
    assert analyzer(question) == Analyzer.create("de", "stem", stoplist="iso", verb_lemmas=True)(question)
    assert SIMPLEMMA.loaded() == {"low-memory"}  # a question's new words, outside any build
    assert release_lemmatizer() == set()  # the low-memory ones serve questions: kept
    with bulk_lemmas():
        analyzer("Kündigungsschutzklage eingereicht")
    assert SIMPLEMMA.loaded() == {"full", "low-memory"} and release_lemmatizer() == {"full"}


def test_a_released_lemmatizer_is_freed_at_once():
    """simplemma's strategies reference one another (a cycle): release_lemmatizer() must free the
    dictionaries itself, not leave them to whenever the cycle collector next runs."""
    import gc

    from lexir.analysis import bulk_lemmas, release_lemmatizer
    from lexir.analysis.analyzer import SIMPLEMMA

    SIMPLEMMA.__init__()
    with bulk_lemmas():
        SIMPLEMMA.lemmatize("gekündigt", "de")
    released = id(SIMPLEMMA._full), type(SIMPLEMMA._full)
    gc.disable()  # no collection but the one release_lemmatizer() makes
    try:
        assert release_lemmatizer() == {"full"}
        assert not any(id(o) == released[0] and type(o) is released[1] for o in gc.get_objects())
    finally:
        gc.enable()
