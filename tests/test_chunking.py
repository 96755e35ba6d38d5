"""Chunking acts at § / Absatz / Satz / Nummer / Buchstabe and 100-word windows; bm25-chunks."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from test_graph import read_laws  # tests/ is on sys.path (pytest rootdir-relative import)

from lexir.retrieval.base import _SYSTEMS
from lexir.retrieval.structured import Hit, build_chunk_retriever  # registers bm25-chunks
from lexir.structure.chunking import LEVELS, chunk_act, chunk_corpus, unit_of_chunk
from lexir.structure.graph import build_graph
from lexir.types import Act, Corpus, Document, Provision

MARKER = re.compile(r"^\(\d+[a-z]?\)$")


@pytest.fixture(scope="module")
def laws(data_dir: Path) -> dict[str, Act]:
    return read_laws(data_dir)


def article(laws, act: str, label: str) -> Provision:
    return next(a for a in laws[act].articles if a.label == label)


def ids(act: Act, level: str, label: str) -> list[str]:
    return [c.id for c in chunk_act(Act(act.id, articles=[a for a in act.articles if a.label == label]), level)]


def test_levels_on_real_articles(laws):
    bgb, stgb = laws["BGB"], laws["StGB"]
    assert ids(bgb, "para", "823") == ["BGB::823"]
    assert ids(bgb, "abs", "823") == ["BGB::823/abs:1", "BGB::823/abs:2"]
    assert ids(bgb, "satz", "823") == ["BGB::823/abs:1/satz:1", "BGB::823/abs:2/satz:1", "BGB::823/abs:2/satz:2"]
    # § 613 has no Absätze: at Absatz level the whole § stays, at Satz level its Sätze
    assert ids(bgb, "abs", "613") == ["BGB::613"]
    assert ids(bgb, "satz", "613") == ids(bgb, "nr", "613") == ["BGB::613/satz:1", "BGB::613/satz:2"]
    # § 243 StGB: Abs. 1 Satz 2 introduces Nr. 1-7; at Nummer level the intro is its own chunk
    nr = ids(stgb, "nr", "243")
    assert nr[:3] == ["StGB::243/abs:1/satz:1", "StGB::243/abs:1/satz:2", "StGB::243/abs:1/satz:2/nr:1"]
    assert nr[-1] == "StGB::243/abs:2/satz:1" and len(nr) == 10
    intro = next(c for c in chunk_act(stgb, "nr") if c.id == "StGB::243/abs:1/satz:2")
    assert intro.text == "Ein besonders schwerer Fall liegt in der Regel vor, wenn der Täter"
    assert ids(stgb, "satz", "243")[1] == "StGB::243/abs:1/satz:2"  # whole Satz with its list


@pytest.mark.parametrize("level", LEVELS)
def test_no_text_lost_or_repeated(laws, level):
    for act in (laws["StGB"], laws["GG"]):
        chunks = list(chunk_act(act, level))
        assert len({c.id for c in chunks}) == len(chunks)
        by_article: dict[str, list[str]] = {}
        for c in chunks:
            by_article.setdefault(unit_of_chunk(c.unit).split("/")[0], []).extend(c.text.split())
        for art in act.articles:
            want = [w for w in art.text.split() if not MARKER.match(w)]
            got = [w for w in by_article.get(art.id, []) if not MARKER.match(w)]
            assert sorted(got) == sorted(want), (level, art.id)


def test_words100_windows(laws):
    art = article(laws, "BGB", "823")
    n = len(art.text.split())
    windows = [c for c in chunk_act(laws["BGB"], "words100") if c.unit == "BGB::823"]
    assert [c.id for c in windows] == [f"BGB::823#w{i}" for i in range(math.ceil(n / 100))]
    assert all(len(c.text.split()) == 100 for c in windows[:-1])
    assert " ".join(c.text for c in windows).split() == art.text.split()
    assert unit_of_chunk("BGB::823#w1") == "BGB::823"


def test_chunk_corpus_mapping(laws):
    corpus, mapping = chunk_corpus([laws["GG"]], "abs")
    assert mapping["GG::1/abs:1"] == "GG::1/abs:1" and corpus["GG::1/abs:1"].text.startswith("(1) Die Würde")
    assert (corpus.language, corpus.jurisdiction) == ("de", "")  # German law: the acts name no other order
    import dataclasses

    austrian = dataclasses.replace(laws["GG"], jurisdiction="at")  # the acts' order, not their language's
    assert (chunk_corpus([austrian], "abs")[0].jurisdiction, chunk_corpus([austrian], "abs")[0].language) == ("at", "de")
    assert set(mapping) == set(corpus.ids)
    with pytest.raises(ValueError, match="unknown chunking level"):
        list(chunk_act(laws["GG"], "kapitel"))


# ---------------------------------------------------------------------------
# bm25-chunks


@pytest.fixture(scope="module")
def small(laws):
    return Corpus("de-small", [], language="de", acts=[laws["BGB"]])


@pytest.fixture(scope="module")
def satz_retriever(small):
    graph = build_graph(small.acts.values())
    return build_chunk_retriever(small, "satz", graph=graph)


QUERY = "vorsätzlich fahrlässig Leben Körper Gesundheit Freiheit Eigentum widerrechtlich verletzt Ersatz Schadens"


def test_bm25_chunks_returns_units(satz_retriever):
    hits = satz_retriever.search(QUERY, 5)
    assert hits[0][0] == "BGB::823/abs:1/satz:1"
    assert all(s > 0 for _, s in hits) and len(hits) == 5


def test_expansion_parent_and_cites(satz_retriever):
    base = satz_retriever.hits(QUERY, 3)
    parent = satz_retriever.expand_hits(base, "parent")
    assert parent[0] == base[0]
    assert parent[1] == Hit("BGB::823/abs:1", parent[1].score, "BGB::823/abs:1/satz:1")
    assert base[0].score > parent[1].score > base[1].score
    assert [h.id for h in parent if not h.expanded] == [h.id for h in base]
    assert len({h.id for h in parent}) == len(parent)
    # § 829 Satz 1 cites §§ 823 to 826
    hits = satz_retriever.expand_hits([Hit("BGB::829/satz:1", 5.0)], "cites")
    assert {"BGB::823", "BGB::826"} <= {h.id for h in hits[1:]} and all(h.origin == "BGB::829/satz:1" for h in hits[1:])
    both = satz_retriever.expand_hits([Hit("BGB::829/satz:1", 5.0)], "both")
    assert both[1].id == "BGB::829" and {h.id for h in hits} < {h.id for h in both}
    scores = [h.score for h in both]
    assert scores == sorted(scores, reverse=True)
    assert satz_retriever.words("BGB::829") == len(next(
        a for a in satz_retriever.units.values() if a.id == "BGB::829").text.split())


def test_registered_system_article_aggregation(small):
    system = _SYSTEMS["bm25-chunks"]  # registered on importing lexir.retrieval.structured
    # the graph object itself (not a path): given to the factory, as System.build passes no such context
    retriever = system.factory(small, **system.resolve({"level": "satz", "aggregate": "article", "expand": "cites"}),
                               statute_graph=build_graph([small.acts["BGB"]], cites=False))
    hits = retriever.hits(QUERY, 3)
    assert hits[0].id == "BGB::823" and not hits[0].expanded
    assert all("/" not in h.id for h in hits)
    with pytest.raises(ValueError, match="valid"):
        system.resolve({"depth": "1"})
    with pytest.raises(ValueError, match="no parsed acts"):
        build_chunk_retriever(Corpus("empty", [], language="de"), "para")


def test_batched_search_equals_one_query_at_a_time(satz_retriever):
    """search_many takes BM25's batched top-k; each query's hits are those hits() finds one
    query at a time from the full score vector."""
    from lexir.types import Query

    texts = [QUERY, "Eigentum Besitz", "Kündigung Mietverhältnis Frist", "Testament Erbe", "xyzzy"]
    queries = [Query(f"q{i}", t) for i, t in enumerate(texts)]
    everything = len(satz_retriever.bm25.doc_ids)
    run = satz_retriever.search_many(queries, k=everything)
    for q in queries:
        assert run[q.id] == {h.id: h.score for h in satz_retriever.hits(q.text, everything)}, q.text
    assert run["q4"] == {} and len(run["q0"]) > 100
    top = satz_retriever.search_many(queries[:1], k=5)["q0"]
    assert list(top) == [h.id for h in satz_retriever.hits(QUERY, 5)]
    satz_retriever.expand = "parent"
    try:
        expanded = satz_retriever.search_many(queries[:2], k=5)
        for q in queries[:2]:
            assert expanded[q.id] == {h.id: h.score for h in satz_retriever.hits(q.text, 5)}
    finally:
        satz_retriever.expand = "none"


def test_saved_chunk_index_loads_memory_mapped_with_identical_results(laws, tmp_path):
    """bm25-chunks saves its BM25 part (loaded memory-mapped), its chunk texts packed and its
    partial chunks; the unit table and graph come from the corpus. A loaded index answers,
    expands and gives texts exactly as the fresh one; one from another corpus is refused."""
    from lexir.retrieval.build import load_index, save_index
    from lexir.retrieval.structured import ChunkRetriever, PackedTexts
    from lexir.types import Query

    small = corpus_of(laws["BGB"])
    fresh = build_chunk_retriever(small, "lit", expand="both")
    save_index(fresh, tmp_path / "idx", "bm25-chunks")
    loaded = load_index(tmp_path / "idx", small)
    assert isinstance(loaded, ChunkRetriever) and isinstance(loaded.chunk_text, PackedTexts)
    assert type(loaded.bm25.matrix.data).__name__ == "memmap"
    assert loaded.partial == fresh.partial and len(fresh.partial) > 10
    titles = sorted({a.title for a in small.acts["BGB"].articles if a.title})[::40]
    queries = [Query(f"q{i}", t) for i, t in enumerate([QUERY, *titles])]
    assert len(queries) > 20
    assert loaded.search_many(queries, 20) == fresh.search_many(queries, 20)
    for q in queries[:8]:
        hits = fresh.hits(q.text, 10)
        assert loaded.hits(q.text, 10) == hits and any(h.expanded for h in hits)
        assert [loaded.text_of(h.id) for h in hits] == [fresh.text_of(h.id) for h in hits]
    # Every chunk's text comes back from the packed file exactly.
    assert all(loaded.chunk_text[i] == fresh.chunk_text[i] for i in fresh.bm25.doc_ids)
    # Saved again from a loaded index: the same files (in each folder's current generation).
    from lexir.io.generations import current

    save_index(loaded, tmp_path / "again", "bm25-chunks")
    assert (current(tmp_path / "again") / "texts.bin").read_bytes() == (current(tmp_path / "idx") / "texts.bin").read_bytes()

    other = corpus_of(laws["BGB"], laws["GG"])
    with pytest.raises(ValueError, match="different corpus"):
        load_index(tmp_path / "idx", other)
    # Without a corpus, a corpus that is not registered cannot give the unit texts: said clearly.
    alone = load_index(tmp_path / "idx")
    assert alone.hits(QUERY, 5, "none") == fresh.hits(QUERY, 5, "none")
    with pytest.raises(ValueError, match="needs the corpus it was built from"):
        alone.text_of("BGB::823")


def test_index_cache_loads_chunk_index_only_for_its_corpus(laws):
    """What ``lexir serve`` does: build_retriever loads a cached bm25-chunks index (memory-mapped)
    instead of rebuilding; a corpus with other text (another fingerprint) never gets it."""
    from lexir.retrieval.build import build_retriever
    from lexir.retrieval.structured import PackedTexts
    from lexir.service.state import ServiceState, Settings

    small = corpus_of(laws["BGB"])
    first = build_retriever(small, "bm25-chunks(level=abs)")
    again = build_retriever(small, "bm25-chunks(level=abs)")
    assert not isinstance(first.chunk_text, PackedTexts) and isinstance(again.chunk_text, PackedTexts)
    assert type(again.bm25.matrix.data).__name__ == "memmap"
    assert again.search(QUERY, 10) == first.search(QUERY, 10)
    assert again.units["BGB::823"].text == article(laws, "BGB", "823").text
    other = corpus_of(laws["BGB"], laws["GG"])
    stale = build_retriever(other, "bm25-chunks(level=abs)")
    assert not isinstance(stale.chunk_text, PackedTexts) and stale.fingerprint == other.fingerprint
    # The service's path: a served system is taken from the cache.
    state = ServiceState(Settings(systems=("bm25-chunks(level=abs)",)))
    served = state.retriever(_served(state, small), None, {})
    assert isinstance(served.chunk_text, PackedTexts) and served.search(QUERY, 10) == first.search(QUERY, 10)


def _served(state, corpus):
    from lexir.service.state import LoadedCorpus

    return LoadedCorpus(corpus.name, corpus, {})


def corpus_of(*acts: Act) -> Corpus:
    """A corpus as the registry makes one: the acts' articles as documents (its fingerprint is theirs)."""
    return Corpus("de-small", [Document(a.id, a.text, a.title) for act in acts for a in act.articles],
                  language="de", acts=list(acts))
