"""The learned lay-to-legal term associations (the ``expansion`` evidence) and the recall stage
of ``bm25-qa`` (issue 21): what each computes, and that a trained model uses them at query time."""

import dataclasses

import numpy as np
import pytest

import lexir
from lexir.learning.folds import kfold
from lexir.learning.qa import (
    CANDIDATES,
    QuestionAugmented,
    TermAssociations,
    Weights,
    cascade,
    questions_of,
    recall_at,
    text_index,
    vote_matrix,
)
from lexir.learning.train import train_system
from lexir.types import Corpus, Document, Query

STATUTE = [
    Document("BGB::573", "Der Vermieter kann nur kündigen, wenn er ein berechtigtes Interesse an der Beendigung des "
                         "Mietverhältnisses hat, insbesondere wenn er die Räume als Wohnung für sich benötigt."),
    Document("BGB::577a", "Ist an vermieteten Wohnräumen Wohnungseigentum begründet worden, so kann sich ein Erwerber "
                          "auf berechtigte Interessen erst nach drei Jahren berufen; die Kündigung des "
                          "Mietverhältnisses durch den Vermieter ist bis dahin ausgeschlossen."),
    Document("BGB::433", "Durch den Kaufvertrag wird der Verkäufer einer Sache verpflichtet, dem Käufer die Sache zu "
                         "übergeben und das Eigentum an der Sache zu verschaffen."),
    Document("BGB::611", "Durch den Dienstvertrag wird derjenige, welcher Dienste zusagt, zur Leistung der "
                         "versprochenen Dienste verpflichtet."),
    Document("BGB::1922", "Mit dem Tode einer Person geht deren Vermögen als Ganzes auf eine oder mehrere andere "
                          "Personen über."),
]
# lay questions: "Eigenbedarf" (own use) is the lay word; the statute never says it
TRAINING = [
    ("q1", "Mein Vermieter meldet Eigenbedarf an und will mich rauswerfen.", "BGB::573"),
    ("q2", "Eigenbedarf für seine Tochter, darf er das?", "BGB::573"),
    ("q3", "Wegen Eigenbedarf soll ich nach zehn Jahren ausziehen.", "BGB::573"),
    ("q4", "Ist der Eigenbedarf vorgeschoben, wenn er die Wohnung verkaufen will?", "BGB::573"),
    ("q5", "Ich habe ein Auto gekauft und der Händler liefert nicht.", "BGB::433"),
    ("q6", "Das gekaufte Fahrrad wurde nie geliefert.", "BGB::433"),
    ("q7", "Gekauft, bezahlt, aber nichts bekommen.", "BGB::433"),
    ("q8", "Meine Oma ist gestorben, wer erbt das Haus?", "BGB::1922"),
]


@pytest.fixture(scope="module")
def associations():
    corpus = Corpus("mini-bgb", STATUTE, language="de")
    questions = questions_of([Query(q, text) for q, text, _ in TRAINING], {q: {doc: 1} for q, _, doc in TRAINING})
    column = {d: i for i, d in enumerate(corpus.ids)}
    return corpus, TermAssociations(text_index(corpus, "de"), questions, vote_matrix(questions, column))


def test_a_lay_word_expands_to_the_statutes_terms_and_reaches_a_provision_no_question_cites(associations):
    corpus, assoc = associations
    question = Query("new", "Eigenbedarf angemeldet, was nun?")
    assert not assoc.text.scores(question.text).any()  # the statute's own words: nothing matches
    expansion = assoc.expand(question.text)
    names = {term: t for t, term in assoc.text.vocab.items()}
    expanded = {names[t] for t in expansion}
    assert {assoc.analyzer.tokens(w)[0] for w in ("Vermieter", "Mietverhältnisses")} <= expanded
    assert not {assoc.analyzer.tokens(w)[0] for w in ("Kaufvertrag", "Dienste")} & expanded
    scores = dict(zip(corpus.ids, assoc.matrix([question])[0], strict=True))
    assert scores["BGB::573"] == 1.0  # the row is normalised: the cited provision first
    # 577a is cited by no training question: its text shares the statutory terms 573's lay questions predict
    assert scores["BGB::577a"] > 0
    assert scores["BGB::577a"] > max(scores["BGB::433"], scores["BGB::611"], scores["BGB::1922"])


def test_a_word_fewer_than_support_questions_use_predicts_nothing(associations):
    _, assoc = associations
    assert assoc.SUPPORT == 3
    assert assoc.expand("Oma gestorben") == {}  # one question each
    assert assoc.expand("gekauft") != {}  # three questions


def test_the_cascade_reorders_the_first_stages_candidates_by_the_second():
    rng = np.random.default_rng(7)
    first, second = rng.random((4, 300)), rng.random((4, 300))
    out = cascade(first, second, candidates=50)
    for row in range(4):
        candidates = set(np.argsort(-first[row])[:50].tolist())
        order = np.argsort(-out[row]).tolist()
        assert set(order[:50]) == candidates  # the top 50 are the first stage's
        assert order[:50] == sorted(candidates, key=lambda d: -second[row, d])  # in the second stage's order
        assert order[50:60] == np.argsort(-first[row])[50:60].tolist()  # the rest in the first stage's


def test_recall_at_counts_the_judged_provisions_in_the_top_k():
    scores = np.array([[0.9, 0.8, 0.0, 0.1], [0.1, 0.2, 0.3, 0.4]])
    gains = np.array([[1, 0, 1, 0], [0, 0, 0, 0]], dtype=np.float32)
    assert recall_at(scores, gains, k=2).tolist() == [0.5, 0.0]
    assert recall_at(scores, gains, k=4).tolist() == [0.5, 0.0]  # a document scoring 0 is not retrieved


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory):
    bench = lexir.load("demo")
    train, test = kfold(bench.queries, 4)[0]
    out = tmp_path_factory.mktemp("stages") / "m"
    manifest = train_system("bm25-qa", bench.corpus, train, out, params={"folds": 2, "dense": "off"})
    return bench, train, test, out, manifest


def test_training_records_the_expansion_weight_and_the_recall_stage(demo_model):
    _, _, _, _, manifest = demo_model
    params, stage = manifest["params"], manifest["selection"]["recall_stage"]
    assert "expansion" in params and "recall" in params
    assert stage["objective"] == "R@100" and stage["candidates"] == CANDIDATES
    better = stage["with"]["R@100"] > stage["without"]["R@100"]
    level = stage["with"]["nDCG@10"] >= stage["without"]["nDCG@10"] - stage["tolerance_nDCG@10"] - 1e-4
    assert stage["used"] == (better and level)
    assert bool(params["recall"]) == stage["used"]


def test_the_expansion_and_the_recall_stage_are_used_at_query_time(demo_model):
    bench, _, test, out, _ = demo_model
    trained = lexir.build(bench.corpus, "bm25-qa", model=str(out), cache=False)
    w = dataclasses.replace(trained.weights, expansion=0.0)
    plain = QuestionAugmented(bench.corpus, trained.base, trained.model, w)
    expanded = QuestionAugmented(bench.corpus, trained.base, trained.model, dataclasses.replace(w, expansion=2.0))
    assert plain.search_many(test.queries) != expanded.search_many(test.queries)
    # a first stage dominated by the citation prior: its CANDIDATES are the provisions the training
    # questions cite, then the base's best; every result of the cascade is one of them
    staged = QuestionAugmented(bench.corpus, trained.base, trained.model, w,
                               recall=Weights(field=0.0, neighbours=0.0, prior=1000.0, k=w.k))
    assert "recall stage" in repr(staged)
    cited = {d for d, p in zip(bench.corpus.ids, staged.evidence.prior, strict=True) if p > 0}
    assert 10 < len(cited) < CANDIDATES - 10
    base_run = trained.base.search_many(test.queries, k=CANDIDATES)
    run = staged.search_many(test.queries, k=10)
    assert run != plain.search_many(test.queries, k=10)
    for q in test.queries:
        best_base = [d for d, _ in sorted(base_run[q.id].items(), key=lambda kv: -kv[1]) if d not in cited]
        allowed = cited | set(best_base[:CANDIDATES - len(cited)])
        assert set(run[q.id]) <= allowed, q.id


def test_the_dense_evidence_encodes_a_long_questions_head_and_tail():
    from lexir.learning.qa import QUESTION_WORDS, question_head_tail

    short = "Mein Vermieter meldet Eigenbedarf an."
    assert question_head_tail(short) == short
    story = [f"w{i}" for i in range(3 * QUESTION_WORDS)]
    cut = question_head_tail(" ".join(story)).split()
    assert cut[:QUESTION_WORDS] == story[:QUESTION_WORDS]
    assert cut[-QUESTION_WORDS:] == story[-QUESTION_WORDS:]  # the question a lay story ends on is kept
    assert len(cut) == 2 * QUESTION_WORDS + 1


def test_recall_off_trains_no_recall_stage_and_a_bad_value_is_refused(demo_model, tmp_path):
    bench, train, _, _, _ = demo_model
    manifest = train_system("bm25-qa", bench.corpus, train, tmp_path / "off",
                            params={"folds": 2, "dense": "off", "recall": "off"})
    assert manifest["params"]["recall"] == {} and "recall_stage" not in manifest["selection"]
    with pytest.raises(ValueError, match="recall='sometimes'"):
        train_system("bm25-qa", bench.corpus, train, tmp_path / "bad", params={"recall": "sometimes"})
    assert not (tmp_path / "bad").exists()


def _sparse_rows(rng, n, width, per_row):
    m = np.zeros((n, width), dtype=np.float32)
    for i in range(n):
        cols = rng.choice(width, size=per_row, replace=False)
        m[i, cols] = rng.random(per_row).astype(np.float32) + 0.01
    return m


def test_a_compacted_inner_fold_measures_every_weight_as_the_full_width_one():
    """Over a corpus much wider than any question's evidence, each row keeps only its candidates;
    nDCG@10, R@100, the cascade and the ranker's features are those of the full rows."""
    from lexir.learning.qa import InnerFold, at_rows, ideal_dcg, ltr_features, ndcg_at

    rng = np.random.default_rng(7)
    n, width = 12, 5000
    base, joint, field, expansion = (_sparse_rows(rng, n, width, k) for k in (150, 120, 30, 150))
    votes = {k: _sparse_rows(rng, n, width, 10) for k in (10, 30, 100)}
    prior = np.zeros(width, dtype=np.float32)
    prior[rng.choice(width, 40, replace=False)] = rng.random(40).astype(np.float32)
    gains = np.zeros((n, width), dtype=np.float32)
    qrels = {}
    for i in range(n):  # judged: some the evidence reaches, one it never does
        judged = [*np.flatnonzero(base[i])[:3], int(np.flatnonzero((base[i] == 0) & (joint[i] == 0))[0])]
        gains[i, judged] = 1
        qrels[f"q{i}"] = {f"d{j}": 1 for j in judged}
    full = InnerFold(base, joint, field, votes, prior, gains, ideal_dcg(qrels, list(qrels)), None, expansion)
    small = full.compact()
    assert small.columns is not None and small.base.shape[1] < width / 5
    assert small.compact() is small
    length = rng.random(width).astype(np.float32)
    for w in (Weights(1.0, 0.5, 0.2, 30, 2.0, expansion=1.0), Weights(0.0, 2.0, 0.4, 10, 0.0),
              Weights(0.5, 0.0, 0.0, 100, 1.0, expansion=0.5)):
        assert np.allclose(ndcg_at(small.linear(w), small.gains, small.ideal),
                           ndcg_at(full.linear(w), full.gains, full.ideal))
        assert np.allclose(recall_at(small.linear(w), small.gains), recall_at(full.linear(w), full.gains))
        assert recall_at(full.linear(w), full.gains).max() < 1  # the never-reached judgement counts
        first = dataclasses.replace(w, prior=1.0)
        assert np.allclose(ndcg_at(cascade(small.linear(first), small.linear(w)), small.gains, small.ideal),
                           ndcg_at(cascade(full.linear(first), full.linear(w)), full.gains, full.ideal))
        top_s, x_s, _ = ltr_features(small.base, small.joint, small.field, small.votes, small.prior,
                                     small.positions(length), w, None, small.expansion)
        top_f, x_f, _ = ltr_features(full.base, full.joint, full.field, full.votes, full.prior, length, w,
                                     None, full.expansion)
        assert (small.columns[np.arange(n)[:, None], top_s] == top_f).all()  # same candidates, same order
        assert np.array_equal(x_s, x_f)
    assert np.array_equal(at_rows(prior, top_f), prior[top_f])


def test_a_fold_with_dense_evidence_is_not_compacted():
    from lexir.learning.qa import InnerFold

    m = np.zeros((2, 50), dtype=np.float32)
    m[:, 1] = 1
    fold = InnerFold(m, m, m, {10: m}, np.zeros(50, np.float32), m, np.ones(2), (m, m + 0.1), m)
    assert fold.compact() is fold


def test_an_expansion_keeps_its_best_depth_provisions(associations):
    _, assoc = associations
    query = [Query("new", "Der Vermieter will Eigenbedarf anmelden und die Wohnung kündigen.")]
    whole = assoc.matrix(query)
    cut = assoc.matrix(query, depth=1)
    assert (whole > 0).sum() > 1 and (cut > 0).sum() == 1
    assert cut.argmax() == whole.argmax()


def test_weighted_scores_equal_a_term_by_term_sum():
    bm25 = text_index(Corpus("mini-bgb", STATUTE, language="de"), "de")
    m = bm25.matrix
    weights = {t: 0.5 + t for t in range(min(6, m.n_terms))}
    expected = np.zeros(m.num_docs)
    for t, w in weights.items():
        for j in range(m.indptr[t], m.indptr[t + 1]):
            expected[m.indices[j]] += w * float(m.data[j])
    assert np.array_equal(m.weighted(weights), expected)
    assert not m.weighted({}).any()


def test_an_expansion_is_the_dense_formula_over_every_term(associations):
    """expand works on the (word, term) pairs that occur; the weights are those of the formula
    written over every term of the corpus: sum over words of idf * P(t|w) * log(P(t|w) / P(t))."""
    _, assoc = associations
    text = "Der Vermieter meldet Eigenbedarf an, ich habe gekauft und nichts bekommen."
    words = [assoc.vocab[w] for w in set(assoc.analyzer.tokens(text))
             if w in assoc.vocab and assoc.word_questions[assoc.vocab[w]] >= assoc.SUPPORT]
    assert len(words) >= 2
    given = (assoc.word_cites[words] @ assoc.has_term).toarray() / assoc.word_pairs[words][:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        lift = np.divide(given, assoc.term_share, out=np.zeros_like(given), where=assoc.term_share > 0)
        gain = np.where(lift > 1, given * np.log(np.maximum(lift, 1.0)), 0.0)
    expected = assoc.idf[words] @ gain
    got = assoc.expand(text)
    assert got and set(got) == {int(t) for t in np.flatnonzero(expected > 0)}
    assert all(np.isclose(w, expected[t], rtol=1e-12) for t, w in got.items())
