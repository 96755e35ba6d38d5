"""German lay questions (gerlayqa-dev, read from ../shared, never shipped): the dataset's mapping
onto lexir's BGB and its hash splits, the maintained stopword lists, and verb lemmas in stem mode."""

from pathlib import Path

import pytest

from lexir.analysis import Analyzer, AnalyzerConfig, stopwords
from lexir.analysis.analyzer import stoplists
from lexir.io import read_corpus_jsonl
from lexir.jurisdictions.de.lay import FOLDER, fold_of, lay_questions
from lexir.types import Corpus

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "lexir"


@pytest.fixture(scope="module")
def lay_folder(data_dir) -> Path:
    folder = data_dir / FOLDER
    if not (folder / "queries.jsonl").is_file():
        pytest.skip(f"gerlayqa-dev not found at {folder}")
    return folder


def test_questions_map_onto_a_corpus_and_split_by_hash(lay_folder):
    docs = read_corpus_jsonl(lay_folder / "corpus.jsonl")
    bench = lay_questions(lay_folder, Corpus("bgb", docs, language="de"), "gerlayqa-dev")
    qs = bench.queries
    assert len(qs.queries) == 2151 and not qs.dropped
    assert sum(len(g) for g in qs.qrels.values()) == 3637
    dev, tune, held = (set(qs.splits[s]) for s in ("dev", "tune", "heldout"))
    assert tune | held == dev and not tune & held
    assert 0.15 < len(held) / len(dev) < 0.25
    folds = [set(qs.splits[f"fold{i}"]) for i in range(5)]
    assert set().union(*folds) == dev and sum(map(len, folds)) == len(dev)
    assert all(fold_of(q) == 0 for q in held)


def test_a_gold_provision_missing_from_the_corpus_drops_the_question_and_says_why(lay_folder):
    docs = [d for d in read_corpus_jsonl(lay_folder / "corpus.jsonl") if d.id != "BGB::573"]
    bench = lay_questions(lay_folder, Corpus("bgb", docs, language="de"), "x")
    assert bench.queries.dropped
    assert all(reason == "article not in corpus" and "BGB::573" in detail
               for _, reason, detail in bench.queries.dropped)
    assert not any("BGB::573" in g for g in bench.queries.qrels.values())


def test_the_questions_are_not_shipped_in_the_package(lay_folder):
    # Research use only: no file of the package may carry the set's questions.
    first = (lay_folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()[0]
    probe = first.split('"text": "', 1)[1][:60]
    for path in PACKAGE.rglob("*"):
        if path.is_file() and path.suffix in {".txt", ".tsv", ".json", ".jsonl", ".py", ".md", ".yaml"}:
            assert probe not in path.read_text(encoding="utf-8", errors="ignore"), path


@pytest.mark.slow
def test_every_judgement_maps_to_the_bgb_of_de_gesetze(data_dir, lay_folder):
    from lexir.datasets import open as open_data

    bench = open_data("gerlayqa-dev", data_dir=data_dir)
    assert {d.act for d in bench.corpus} == {"BGB"} and "BGB" in bench.corpus.acts
    assert len(bench.queries.queries) == 2151 and not bench.queries.dropped
    assert sum(len(g) for g in bench.queries.qrels.values()) == 3637


def test_snowball_list_is_the_one_bm25s_ships():
    bm25s_stop = pytest.importorskip("bm25s.stopwords")
    assert stopwords("de", "snowball") == frozenset(w.casefold() for w in bm25s_stop.STOPWORDS_GERMAN)
    assert {"snowball", "iso"} <= set(stoplists("de"))


def test_iso_lists_are_stopwords_iso():
    iso = pytest.importorskip("stopwordsiso")
    for lang in ("de", "el", "pl", "en"):
        assert stopwords(lang, "iso") == frozenset(Analyzer.create(lang).normalise(w) for w in iso.stopwords(lang))


def test_the_stopword_list_changes_what_a_question_searches_for():
    question = "Mein Vermieter hat mir wegen Eigenbedarf gekündigt. Was kann ich tun?"
    for name in ("", "snowball", "iso"):
        terms = Analyzer(AnalyzerConfig("de", "stem", stoplist=name))(question)
        assert "eigenbedarf" in terms
        # the hand-written list keeps the pronouns that ranked the oath of Art. 56 GG first
        assert ("mir" in terms) == (name == "")
    with pytest.raises(ValueError, match="no stopword list 'nope' for language 'de'.*iso"):
        AnalyzerConfig("de", "stem", stoplist="nope")


def test_verb_lemmas_make_a_participle_meet_its_noun_and_leave_nouns_alone():
    plain = Analyzer.create("de", "stem")
    verbs = Analyzer.create("de", "stem", verb_lemmas=True)
    assert plain("gekündigt") != plain("Kündigung")
    assert verbs("gekündigt") == verbs("Kündigung") == verbs("kündigte")
    assert verbs("Gericht Gesellschaft Geschäft") == plain("Gericht Gesellschaft Geschäft")
    assert verbs.config.name != plain.config.name
    with pytest.raises(ValueError, match="verb_lemmas is an option of mode 'stem'"):
        AnalyzerConfig("de", "raw", verb_lemmas=True)


# Art. 56 GG as de-gesetze has it: the oath that lexir's hand-written stopwords let an everyday
# question ("mir", "ich", "mein") find first.
GG56 = ('Der Bundespräsident leistet bei seinem Amtsantritt vor den versammelten Mitgliedern des Bundestages und des '
        'Bundesrates folgenden Eid:\n* "Ich schwöre, daß ich meine Kraft dem Wohle des deutschen Volkes widmen, seinen '
        'Nutzen mehren, Schaden von ihm wenden, das Grundgesetz und die Gesetze des Bundes wahren und verteidigen, meine '
        'Pflichten gewissenhaft erfüllen und Gerechtigkeit gegen jedermann üben werde. So wahr mir Gott helfe."\n'
        'Der Eid kann auch ohne religiöse Beteuerung geleistet werden.')
EIGENBEDARF = ("Mein Vermieter hat mir wegen Eigenbedarf gekündigt, obwohl er die Wohnung gar nicht selbst nutzen will. "
               "Was kann ich tun?")


def test_a_newcomers_question_finds_the_tenancy_law_not_the_oath(lay_folder):
    import lexir
    from lexir.types import Document

    docs = read_corpus_jsonl(lay_folder / "corpus.jsonl") + [Document("GG::56", GG56)]
    corpus = Corpus("bgb+gg56", docs, language="de")
    top = lambda **p: list(lexir.retrieve(lexir.build(corpus, "bm25", cache=False, **p), {"q": EIGENBEDARF}, k=5)["q"])  # noqa: E731
    assert top(mode="stem")[0] == "GG::56"  # the analysis German had before (hand-written stopwords)
    found = top()  # German's default analysis now (mode=auto)
    assert "GG::56" not in found and "BGB::573" in found  # § 573: the landlord's notice for own use


def test_a_language_row_carries_analyzer_options_and_mode_auto_uses_them():
    from lexir.analysis.defaults import parse_defaults
    from lexir.retrieval.bm25 import make_analyzer

    rows = parse_defaults("de\tstem;stoplist=snowball;verb_lemmas=true\tbm25\tx\n*\traw\tbm25\tx\n")
    assert rows["de"].mode == "stem" and rows["de"].options() == {"stoplist": "snowball", "verb_lemmas": True}
    with pytest.raises(ValueError, match="line 1 \\(field 'mode'\\): bad analyzer option 'stopset=x'"):
        parse_defaults("de\tstem;stopset=x\tbm25\tx\n*\traw\tbm25\tx\n")
    corpus = Corpus("c", [], language="de")
    auto = make_analyzer(corpus, "", "auto", True, "simplemma").config
    explicit = make_analyzer(corpus, "", "stem", True, "simplemma").config
    assert (explicit.stoplist, explicit.verb_lemmas) == ("", False)  # an explicit mode is what it says
    from lexir.analysis import language_defaults

    assert (auto.mode, auto.stoplist, auto.verb_lemmas) == (language_defaults("de").mode,
                                                            language_defaults("de").options().get("stoplist", ""),
                                                            language_defaults("de").options().get("verb_lemmas", False))
    chosen = make_analyzer(corpus, "", "auto", True, "simplemma", stoplist="lexir").config
    assert chosen.stoplist == ""  # lexir's own list asked for by name, over the row's choice
