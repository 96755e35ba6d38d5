"""Per-language defaults, the recommended system, phrase evidence, exam options and dev sets."""

import pytest

from lexir.analysis import all_language_defaults, language_defaults
from lexir.analysis.defaults import parse_defaults
from lexir.datasets import open as open_data
from lexir.datasets.devsets import known_item_set, sentences
from lexir.retrieval.base import get_system, top_scores
from lexir.retrieval.build import build_retriever
from lexir.retrieval.evidence import BigramAnalyzer, OptionsRetriever, PhraseBM25
from lexir.types import Corpus, Document, Query


@pytest.fixture(scope="module")
def el_statutes(data_dir):
    return open_data("el-statutes", data_dir=data_dir)


def test_bm25_loads_the_default_mode_of_the_corpus_language(el_statutes, demo_bench):
    # Without mode=..., the analysis follows the corpus language's row of defaults.tsv; the
    # Greek and Polish rows differ, so a default that ignored the language would fail one side.
    greek = get_system("bm25").build(el_statutes)
    polish = get_system("bm25").build(demo_bench.corpus)
    assert greek.analyzer.config.mode == language_defaults("el").mode
    assert polish.analyzer.config.mode == language_defaults("pl").mode
    assert greek.analyzer.config.mode != polish.analyzer.config.mode
    # An explicit mode keeps its meaning.
    assert get_system("bm25").build(el_statutes, {"mode": "raw"}).analyzer.config.mode == "raw"


def test_defaults_table_rows_are_valid_and_unknown_languages_fall_back():
    rows = {d.language: d for d in all_language_defaults()}
    assert {"pl", "el", "de", "en", "*"} <= set(rows)
    assert language_defaults("fi") == rows["*"]
    assert language_defaults("greek") == rows["el"]


def test_a_bad_defaults_row_names_its_line_and_field():
    with pytest.raises(ValueError, match=r"t.tsv line 2 \(field 'mode'\)"):
        parse_defaults("*\traw\tbm25\tx\nel\tstemm\tbm25\tx\n", "t.tsv")
    with pytest.raises(ValueError, match="t.tsv line 1: expected 4"):
        parse_defaults("el\tstem\n", "t.tsv")
    with pytest.raises(ValueError, match="t.tsv line 1 \\(field 'language'\\)"):
        parse_defaults("elvish\tstem\tbm25\tx\n", "t.tsv")
    with pytest.raises(ValueError, match="no '\\*' row"):
        parse_defaults("el\tstem\tbm25\tx\n", "t.tsv")


def test_recommended_builds_the_language_pipeline(demo_bench, el_statutes):
    # Small real corpora, so a row that fuses dense retrieval encodes a few dozen articles here,
    # not a whole code: the 10 first demo questions' articles among 20 others of the Kodeks karny.
    queries = demo_bench.queries.queries[:10]
    gold = {d for q in queries for d in demo_bench.queries.qrels[q.id]}
    others = [d for d in demo_bench.corpus.documents if d.id not in gold and len(d.text.split()) >= 8][:20]
    kk = Corpus("kk-small", [d for d in demo_bench.corpus.documents if d.id in gold] + others, "pl")
    rec = build_retriever(kk, "recommended")
    assert rec.spec == f"explicit(base={language_defaults('pl').recommended})"  # cited articles first
    run = rec.search_many(queries, 10)
    hits = sum(any(d in demo_bench.queries.qrels[q.id] for d in run[q.id]) for q in queries)
    assert hits >= 8  # the shipped demo's questions find their article in the top 10
    cited = others[3].id.split("::")[1]
    assert rec.search(f"{queries[0].text} (art {cited} kk)", 1)[0][0] == others[3].id  # the question cites it
    el = Corpus("el-small", sorted(el_statutes.documents, key=lambda d: (len(d.text), d.id))[200:230], "el")
    rec_el = build_retriever(el, "recommended")
    assert rec_el.spec == f"explicit(base={language_defaults('el').recommended})"
    target = el.documents[7]
    assert rec_el.search(target.text, 3)[0][0] == target.id  # an article's own text finds it first
    with pytest.raises(ValueError, match="has no language"):
        build_retriever(Corpus("x", [Document("a::1", "text")]), "recommended")


PHRASES = Corpus("phrases", [
    Document("a::1", "pozbawienia kary wolności nie orzeka się wobec sprawcy"),
    Document("a::2", "kary pozbawienia wolności nie orzeka się wobec sprawcy"),
], language="pl")


def test_bigram_evidence_prefers_the_article_with_the_quoted_phrase(tmp_path):
    plain = build_retriever(PHRASES, "bm25", {"mode": "raw"}, cache=False)
    assert plain.search("kara pozbawienia wolności", 2)[0][1] == pytest.approx(plain.search(
        "kara pozbawienia wolności", 2)[1][1])  # the same words: a tie without phrase evidence
    phrase = build_retriever(PHRASES, "bm25", {"mode": "raw", "bigrams": 0.5}, cache=False)
    assert isinstance(phrase, PhraseBM25)
    assert [d for d, _ in phrase.search("kara pozbawienia wolności", 2)] == ["a::2", "a::1"]
    assert BigramAnalyzer(plain.analyzer)("kary pozbawienia wolności") == ["kary\xa0pozbawienia",
                                                                           "pozbawienia\xa0wolności"]
    again = PhraseBM25.load(phrase.save(tmp_path / "idx"))
    assert again.search("kara pozbawienia wolności", 2) == phrase.search("kara pozbawienia wolności", 2)


def test_phrase_bm25_batches_give_the_per_query_sums(demo_bench, tmp_path):
    # search_many scores a batch through one merged term+pair matrix; it must rank exactly as
    # the plain sum of the two full score vectors (scores()) does, fresh and after loading.
    phrase = build_retriever(demo_bench.corpus, "bm25", {"bigrams": 0.5}, cache=False)
    assert phrase.merged() is not None
    queries = [*demo_bench.queries.queries[:60], Query("empty", ""), Query("unknown", "qqqzzz")]
    for retriever in (phrase, PhraseBM25.load(phrase.save(tmp_path / "idx"))):
        run = retriever.search_many(queries, 20)
        assert run["empty"] == {} and run["unknown"] == {}
        for q in queries[:60]:
            expected = top_scores(phrase.scores(q.text), phrase.doc_ids, 20)
            assert list(run[q.id]) == [d for d, _ in expected], q.id
            assert list(run[q.id].values()) == pytest.approx([s for _, s in expected], rel=1e-5)


def test_exam_options_are_scored_with_the_stem(demo_bench):
    base = build_retriever(demo_bench.corpus, "bm25")
    q = next(q for q in demo_bench.queries.queries if q.meta.get("options"))
    assert q.text.startswith(q.meta["question"])
    with_options = OptionsRetriever(base, weight=1.0).search_many([q], 10)[q.id]
    whole = OptionsRetriever(base, weight=0.0).search_many([q], 10)[q.id]
    assert list(whole) == list(base.search_many([q], 10)[q.id])  # weight 0 is the base ranking
    assert with_options != whole
    stem_only = Query("stem", q.meta["question"], q.meta)  # loaded with fields="question"
    assert list(OptionsRetriever(base).search_many([stem_only], 10)["stem"]) == list(
        base.search_many([stem_only], 10)["stem"])
    no_options = Query("plain", q.text)  # not an exam question: scored as its whole text
    assert list(OptionsRetriever(base).search_many([no_options], 10)["plain"]) == list(whole)


def test_known_item_sets_hide_the_query_words_and_are_deterministic(el_statutes):
    a = known_item_set(el_statutes, "el-x", n_per_kind=40)
    b = known_item_set(el_statutes, "el-x", n_per_kind=40)
    assert [q.text for q in a.queries.queries] == [q.text for q in b.queries.queries]
    assert {k: len(v) for k, v in a.queries.splits.items()} == {"heading": 40, "sentence": 40}
    for q in a.queries.queries:
        (gold,) = a.queries.qrels[q.id]
        doc, original = a.corpus[gold], el_statutes[gold]
        if q.meta["kind"] == "heading":
            assert doc.title == "" and q.text == original.title and doc.text == original.text
        else:
            assert q.text in original.text and q.text not in doc.text and doc.title == original.title
    untouched = set(el_statutes.ids) - {g for rel in a.queries.qrels.values() for g in rel}
    assert all(a.corpus[i] == el_statutes[i] for i in untouched)


def test_sentences_do_not_split_at_abbreviations():
    text = "Nach § 5 Abs. 2 Nr. 3 gilt dies. Der Antrag ist schriftlich zu stellen.\n(2) Neu."
    assert sentences(text) == ["Nach § 5 Abs. 2 Nr. 3 gilt dies.", "Der Antrag ist schriftlich zu stellen.",
                               "(2) Neu."]


def test_act_names_are_found_longest_first():
    from lexir.retrieval.evidence import ActNames

    names = ActNames("pl", {"kk", "kks", "kc", "kpc"})
    assert names("Zgodnie z Kodeksem karnym skarbowym, sprawca") == {"kks"}
    assert names("Zgodnie z Kodeksem karnym, sprawca") == {"kk"}
    assert names("w myśl k.p.c. oraz KODEKSU CYWILNEGO") == {"kpc", "kc"}
    assert ActNames("pl", {"kc"})("Kodeks karny") == set()  # only the corpus's acts


def test_act_cue_ranks_the_named_code_first():
    corpus = Corpus("two", [
        Document("kk::1", "kto zabiera w celu przywłaszczenia cudzą rzecz ruchomą podlega karze"),
        Document("kc::1", "rzecz ruchoma cudza może być zasiedziana"),
    ], language="pl")
    query = Query("q", "Zgodnie z Kodeksem cywilnym, kto zabiera w celu przywłaszczenia cudzą rzecz")
    plain = build_retriever(corpus, "bm25", cache=False).search_many([query], 10)["q"]
    cued = build_retriever(corpus, "act-cue", cache=False).search_many([query], 10)["q"]
    assert max(plain, key=plain.get) == "kk::1" and max(cued, key=cued.get) == "kc::1"
    assert set(cued) == set(plain)  # reordered, nothing dropped
    unnamed = Query("u", "kto zabiera cudzą rzecz")
    assert list(build_retriever(corpus, "act-cue", cache=False).search_many([unnamed], 10)["u"]) == list(
        build_retriever(corpus, "bm25", cache=False).search_many([unnamed], 10)["u"])


def test_known_item_ids_with_whitespace_become_trec_safe():
    text = "Erster Satz des Paragraphen steht hier. " + " ".join(
        f"Der {n}. Satz enthält genug Wörter für eine eigene Anfrage an das Gesetz." for n in ("Zweite", "Dritte"))
    corpus = Corpus("de", [Document(f"SGB 5::{i}", text.replace("Gesetz", f"Gesetz {i}"), f"Überschrift {i}")
                           for i in range(4)], language="de")
    bench = known_item_set(corpus, "de-x", n_per_kind=2, min_words=5)
    assert all(" " not in d.id for d in bench.corpus) and all(" " not in q.id for q in bench.queries.queries)
    assert all(next(iter(rel)) in bench.corpus for rel in bench.queries.qrels.values())
