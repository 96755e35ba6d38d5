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
from lexir.types import Act, Corpus, Provision

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
    retriever = system.build(small, {"level": "satz", "aggregate": "article", "expand": "cites"},
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
