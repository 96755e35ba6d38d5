"""Incremental BM25: equal to bm25s's scores, and after any updates equal to a fresh build."""

import numpy as np
import pytest

from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.jurisdictions.de.history_dataset import load_german_history
from lexir.retrieval.bm25 import BM25Retriever
from lexir.retrieval.build import load_index
from lexir.retrieval.incremental import IncrementalBM25
from lexir.types import Corpus, Document

# A few laws with amendments on many dates (StGB, GG, UrhG, SGB II, KSchG): fast to parse.
SLUGS = {"stgb", "gg", "urhg", "sgb_2", "kschg"}
QUERIES = [
    "Wer einen Menschen tötet", "Beleidigung von Organen und Vertretern ausländischer Staaten",
    "Kündigungsschutz sozial ungerechtfertigte Kündigung", "Vervielfältigungsrecht des Urhebers",
    "Arbeitslosengeld II Leistungsberechtigte erwerbsfähig", "Bundesverfassungsgericht entscheidet über Beschwerden",
    "Sicherungsverwahrung Abstandsgebot", "Pressefreiheit Beihilfe Geheimnis",
]


@pytest.fixture(scope="module")
def history(data_dir):
    folder = data_dir / "de" / "history"
    return load_german_history(folder / "gesetze_history.tar.xz", folder / "versions.tsv", name="few",
                               cache=False, slugs=SLUGS)


def analyzer():
    return Analyzer(AnalyzerConfig(language="de", mode="raw", stopwords=True))


def fresh(corpus):
    return IncrementalBM25(analyzer()).index(corpus)


def assert_same(updated, rebuilt, queries=QUERIES, k=100):
    assert updated.stats() == rebuilt.stats()
    for q in queries:
        a, b = updated.search(q, k), rebuilt.search(q, k)
        assert [d for d, _ in a] == [d for d, _ in b], q
        assert np.allclose([s for _, s in a], [s for _, s in b], rtol=0, atol=1e-6)
        # and every document's score, not only the top
        sa, sb = updated.scores(q), rebuilt.scores(q)
        assert sa.keys() == sb.keys() and all(abs(sa[d] - sb[d]) <= 1e-6 for d in sa)


def test_scores_equal_bm25s_on_the_same_corpus(history):
    corpus = history.as_of("2013-06-01")
    ours = fresh(corpus)
    theirs = BM25Retriever(analyzer()).index(corpus)
    for q in QUERIES:
        ref = theirs.scores(q)
        mine = ours.scores(q)
        hits = {corpus.ids[i]: float(s) for i, s in enumerate(ref) if s > 0}
        assert mine.keys() == hits.keys()
        assert all(abs(mine[d] - hits[d]) <= 1e-6 for d in mine), q
        assert [d for d, _ in ours.search(q, 10)][:3] == [d for d, _ in theirs.search(q, 10)][:3]


def test_update_sequence_over_every_version_date_equals_rebuilds(history, tmp_path):
    dates = history.dates
    index = fresh(history.as_of(dates[0]))
    for i, day in enumerate(dates[1:], 1):
        corpus = history.as_of(day)
        if i % 4 == 0:  # now and then through a save and a load, as `lexir index update` does
            index.save(tmp_path / "idx")
            index = load_index(tmp_path / "idx")
        upserts, deletes = history.changes(dates[i - 1], day)
        if i % 2:  # found by the index (hashes) or told by the history: the same change set
            upserted, deleted = index.update_to(corpus)
        else:
            upserted, deleted = index.apply(upserts, deletes, corpus.fingerprint)
        assert (upserted, deleted) == (len(upserts), len(deletes))  # only what changed was applied
        assert index.fingerprint == corpus.fingerprint
        assert_same(index, fresh(corpus))
    # and backwards in one step: 2022 -> 2012 (many deletions and replacements)
    index.update_to(history.as_of(dates[0]))
    assert_same(index, fresh(history.as_of(dates[0])))


def test_statistics_are_exact_and_deleted_terms_leave_no_trace():
    docs = [Document("A::1", "Der Hund bellt laut"), Document("A::2", "Die Katze schläft"),
            Document("A::3", "Hund und Katze")]
    index = IncrementalBM25(analyzer()).index(Corpus("t", docs, "de"))
    assert index.stats()["n_docs"] == 3 and index.stats()["df"]["hund"] == 2
    index.delete(["A::1"])
    stats = index.stats()
    assert "bellt" not in stats["df"] and "laut" not in stats["df"] and "bellt" not in index.vocab
    assert stats == fresh(Corpus("t", docs[1:], "de")).stats()
    # re-indexing an existing id replaces it, never counts it twice; an unchanged text is skipped
    assert index.upsert([Document("A::2", "Die Katze schläft")]) == 0
    assert index.upsert([Document("A::2", "Die Katze jagt den Hund")]) == 1
    expected = [docs[2], Document("A::2", "Die Katze jagt den Hund")]
    assert index.stats() == fresh(Corpus("t", expected, "de")).stats()
    assert index.n_docs == 2
    with pytest.raises(KeyError, match="A::9"):
        index.delete(["A::9"])
    index.delete(["A::2", "A::3"])
    assert index.stats() == {"n_docs": 0, "avgdl": 0.0, "df": {}} and index.search("Katze") == []


def test_save_and_load_keep_scores(history, tmp_path):
    corpus = history.as_of("2012-08-02")
    index = fresh(corpus)
    index.source = {"dataset": "few", "as_of": "2012-08-02"}
    index.save(tmp_path / "i")
    loaded = load_index(tmp_path / "i")
    assert isinstance(loaded, IncrementalBM25) and loaded.source == index.source
    assert_same(loaded, index)
    assert isinstance(load_index(BM25Retriever(analyzer()).index(corpus).save(tmp_path / "s")), BM25Retriever)


@pytest.mark.slow
def test_update_walk_over_all_laws_equals_rebuilds(data_dir):
    from lexir.datasets import open as open_data

    history = open_data("de-gesetze-history", data_dir=data_dir)
    index = fresh(history.as_of(history.first))
    for day in history.dates[1:]:
        corpus = history.as_of(day)
        index.update_to(corpus)
        assert_same(index, fresh(corpus), queries=QUERIES[:4])


def test_saves_append_delta_segments_that_loads_replay_exactly(history, tmp_path):
    """Each save of a loaded index writes only what changed (a delta segment beside the linked,
    unchanged ones); loading replays them: the index equals a fresh build at every date. Past
    MAX_DELTAS deltas or a large change, a save writes one whole segment again."""
    from lexir.io.generations import current
    from lexir.io.markers import read_marker

    folder = tmp_path / "idx"
    fresh(history.as_of(history.dates[0])).save(folder)
    deltas = []
    for day in [*history.dates[1:], *history.dates[1:], history.dates[0]]:
        index = IncrementalBM25.load(folder)
        index.update_to(history.as_of(day))
        index.save(folder)
        generation = current(folder)
        names = read_marker(generation / "lexir.json", "index")["deltas"]
        deltas.append(len(names))
        if names:  # the whole segment is the one saved before, linked, not written again
            assert (generation / "postings.npz").stat().st_nlink >= 2
        assert_same(IncrementalBM25.load(folder), fresh(history.as_of(day)))
    assert max(deltas) > 1 and 0 in deltas[deltas.index(max(deltas)):]  # deltas pile up, then are merged


def test_a_save_builds_a_delta_only_on_the_state_it_loaded(history, tmp_path):
    """Two copies loaded from one folder, both changed and saved: the second save finds a state it
    did not load and writes a whole segment (last writer wins, whole), never a delta on the wrong base."""
    from lexir.io.generations import current
    from lexir.io.markers import read_marker

    folder = tmp_path / "idx"
    first, second, third = history.dates[:3]
    fresh(history.as_of(first)).save(folder)
    a, b = IncrementalBM25.load(folder), IncrementalBM25.load(folder)
    a.update_to(history.as_of(second))
    a.save(folder)
    assert read_marker(current(folder) / "lexir.json", "index")["deltas"]
    b.update_to(history.as_of(third))
    b.save(folder)
    assert read_marker(current(folder) / "lexir.json", "index")["deltas"] == []
    assert_same(IncrementalBM25.load(folder), fresh(history.as_of(third)))
    b.save(tmp_path / "elsewhere")  # a save to another folder is whole too
    assert_same(IncrementalBM25.load(tmp_path / "elsewhere"), fresh(history.as_of(third)))


def test_update_from_the_history_change_set_when_the_index_holds_the_recorded_corpus(history, tmp_path):
    """An index that holds ``since`` (its fingerprint) takes the history's change set instead of
    comparing every document: through a save and a load, the result equals a fresh build, and it
    is the change set that was applied (one left out stays unapplied: the fast path was taken)."""
    dates = history.dates
    folder = tmp_path / "idx"
    fresh(history.as_of(dates[0])).save(folder)
    for before, day in zip(dates, dates[1:], strict=False):
        index = IncrementalBM25.load(folder)
        since, corpus = history.as_of(before), history.as_of(day)
        upserts, deletes = history.changes(before, day)
        assert index.holds(since)
        assert index.update_to(corpus, since, (upserts, deletes)) == (len(upserts), len(deletes))
        assert index.fingerprint == corpus.fingerprint
        assert_same(index, fresh(corpus))
        index.save(folder)
    assert_same(IncrementalBM25.load(folder), fresh(history.as_of(dates[-1])))
    # a change set with one document left out: trusted, so that document stays as it was
    first, second = next((a, b) for a, b in zip(dates[::-1][1:], dates[::-1], strict=True)
                         if any(history.as_of(a).get(d.id) for d in history.changes(a, b)[0]))
    upserts, deletes = history.changes(first, second)
    index = fresh(history.as_of(first))
    left_out = next(d for d in upserts if history.as_of(first).get(d.id) is not None)
    rest = [d for d in upserts if d.id != left_out.id]
    assert index.update_to(history.as_of(second), history.as_of(first), (rest, deletes)) == (len(rest), len(deletes))
    assert index.stats() != fresh(history.as_of(second)).stats()
    assert index.scores(left_out.text) != fresh(history.as_of(second)).scores(left_out.text)


def test_update_falls_back_to_comparing_every_document_when_the_index_holds_something_else(history):
    """An index that does not hold the corpus the change set starts from (another date, or changed
    since) ignores the change set and compares every document: it still equals a fresh build."""
    first, before, day = history.dates[0], history.dates[-2], history.dates[-1]
    target, claimed = history.as_of(day), history.as_of(before)
    # built at the first date, but the caller claims it holds the one before the last: the change
    # set from there is not enough
    index = fresh(history.as_of(first))
    assert not index.holds(claimed)
    index.update_to(target, claimed, history.changes(before, day))
    assert_same(index, fresh(target))
    # at the date claimed, but one document changed by hand since (no fingerprint recorded then)
    index = fresh(claimed)
    doc = claimed.documents[0]
    index.upsert([Document(doc.id, doc.text + " Zusatz", doc.title)])
    assert not index.holds(claimed)
    index.update_to(target, claimed, ([], []))  # an empty change set: not trusted
    assert_same(index, fresh(target))
    assert index.fingerprint == target.fingerprint


@pytest.mark.slow
def test_index_update_takes_the_history_change_set_only_for_an_index_that_holds_its_date(data_dir, tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app
    from lexir.datasets import open as open_data

    def invoke(*args):
        return CliRunner().invoke(app, [str(a) for a in [*args, "--data-dir", data_dir]])

    target = open_data("de-gesetze-history", data_dir=data_dir).as_of("2013-01-11")
    fast, slow, rebuilt = tmp_path / "fast", tmp_path / "slow", tmp_path / "rebuilt"
    for folder in (fast, slow):
        assert invoke("index", "de-gesetze-history", "--as-of", "2012-12-02", "-o", folder).exit_code == 0
    assert invoke("index", "de-gesetze-history", "--as-of", "2013-01-11", "-o", rebuilt).exit_code == 0
    # one article changed by hand: the index no longer holds the corpus of the date it records
    index = IncrementalBM25.load(slow)
    doc = index_doc = next(d for d in target if d.id == "BGB::1")
    index.upsert([Document(doc.id, doc.text + " Zusatz", doc.title)])
    index.save(slow)
    rebuilt = IncrementalBM25.load(rebuilt)
    for folder, how in ((fast, "the history's changes since the recorded date"), (slow, "every document compared")):
        result = invoke("index", "update", folder, "--as-of", "2013-01-11")
        assert result.exit_code == 0, result.output
        assert how in result.output
        updated = IncrementalBM25.load(folder)
        assert updated.fingerprint == target.fingerprint
        assert_same(updated, rebuilt, queries=[*QUERIES[:3], index_doc.text[:200]])
