"""Incremental BM25: equal to bm25s's scores, and after any updates equal to a fresh build."""

import numpy as np
import pytest

from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.datasets.history import load_german_history
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
    from lexir.datasets import registry

    history = registry.load("de-gesetze-history", data_dir)
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
