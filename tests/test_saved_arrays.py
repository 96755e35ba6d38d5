"""A damaged saved index is refused when it is opened, with the file named: never a wrong answer,
never a kernel reading or writing out of place (numba checks no bounds).

Two guards: the manifest of a saved generation records each file's size, checked before any file
is read (:func:`lexir.io.generations.verified`); and the arrays themselves are checked as they are
mapped (:mod:`lexir.arrays`, ``ScoreMatrix.load``), which is all a folder without a manifest (saved
by bm25s, or before generations) has."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lexir.arrays import ascending_within, delimits, load_row
from lexir.datasets import open as open_data
from lexir.io.generations import current
from lexir.retrieval import bm25_shards
from lexir.retrieval.bm25 import BM25Retriever
from lexir.retrieval.build import build_retriever
from lexir.types import Query


@pytest.fixture(scope="module")
def codes():
    return open_data("pl-codes", want="corpus")


@pytest.fixture(scope="module")
def saved(codes, tmp_path_factory):
    """pl-codes' bm25 index, saved (a generation with its manifest), and its answers."""
    folder = tmp_path_factory.mktemp("saved") / "ix"
    fresh = build_retriever(codes, "bm25", {}, cache=False)
    fresh.save(folder)
    queries = [Query(str(i), d.text[:120]) for i, d in enumerate(list(codes)[::211])]
    return folder, queries, fresh.search_many(queries, 10)


def _copy(saved, tmp_path, manifest: bool):
    """A copy of the saved index: the whole folder (``manifest``), or its generation's files alone
    (a folder without a manifest). (where to load it from, where its files are)."""
    folder = saved[0]
    if manifest:
        shutil.copytree(folder, tmp_path / "ix")
        return tmp_path / "ix", current(tmp_path / "ix")
    shutil.copytree(current(folder), tmp_path / "plain")
    return tmp_path / "plain", tmp_path / "plain"


def _rewrite(name, change):
    def damage(files):
        array = np.load(files / name)
        np.save(files / name, change(array.copy()))
    return damage


def _postings_swapped(indices):
    """Two postings of one term (the first with two or more) in the wrong order."""
    indptr = np.load(_postings_swapped.indptr)
    term = int(np.flatnonzero(np.diff(indptr) >= 2)[0])
    a = indptr[term]
    indices[a], indices[a + 1] = indices[a + 1], indices[a]
    return indices


def _write(name, text):
    def damage(files):
        (files / name).write_text(text, encoding="utf-8")
    return damage


def _cut(name, keep=0.6):
    def damage(files):
        data = (files / name).read_bytes()
        (files / name).write_bytes(data[:int(len(data) * keep)])
    return damage


# Damage that keeps every file's size: only the arrays' own checks see it.
SAME_SIZE = [
    ("a document past the corpus", _rewrite("indices.csc.index.npy", lambda a: np.where(np.arange(len(a)) == 9, 10**8, a)),
     r"indices.csc.index.npy: posting 9 \(document 100000000\) is outside the 4318 documents or out of order"),
    ("a negative document", _rewrite("indices.csc.index.npy", lambda a: np.where(np.arange(len(a)) == 0, -1, a)),
     r"indices.csc.index.npy: posting 0 \(document -1\) is outside"),
    ("a term's postings out of order", "swap", r"indices.csc.index.npy: posting \d+ \(document \d+\) is outside .* or out of order"),
    ("pointers past the postings", _rewrite("indptr.csc.index.npy", lambda a: a * 2),
     r"indptr.csc.index.npy: \d+ pointers do not delimit \d+ postings"),
    ("pointers falling", _rewrite("indptr.csc.index.npy", lambda a: np.where(np.arange(len(a)) == 3, a[-1], a)),
     r"indptr.csc.index.npy: \d+ pointers do not delimit"),
    ("a window past the corpus", _rewrite("window_numbers.lexir.npy", lambda a: np.where(np.arange(len(a)) == 2, 99, a)),
     r"window_numbers.lexir.npy: entry 2 \(window 99\) is past the corpus's 5 windows of 1024 documents"),
    ("documents of another shape", _rewrite("indices.csc.index.npy", lambda a: a.reshape(2, -1)),
     r"indices.csc.index.npy: 2-d int32, expected 1-d int32"),
]
# Damage that changes a file's size: the manifest refuses it first, the arrays' checks without one.
RESIZED = [
    ("scores of another type", _rewrite("data.csc.index.npy", lambda a: a.astype(np.float64)),
     r"data.csc.index.npy: 1-d float64, expected 1-d float32"),
    ("fewer documents than scores", _rewrite("indices.csc.index.npy", lambda a: a[:-4]),
     r"indices.csc.index.npy: \d+ values, expected \d+"),
    ("an array cut short", _cut("indices.csc.index.npy"), r"indices.csc.index.npy: unreadable as a saved array"),
    ("an array of objects", _rewrite("data.csc.index.npy", lambda a: np.array(["x"], dtype=object)),
     r"data.csc.index.npy: unreadable as a saved array"),
    ("a term id past the columns", _write("vocab.index.json", json.dumps({"kara": 10**7})),
     r"vocab.index.json: a term id outside the matrix's \d+ columns"),
    ("no document count", _write("params.index.json", json.dumps({"k1": 1.2, "b": 0.75})),
     r"params.index.json: no document count"),
    ("a vocabulary that is a list", _write("vocab.index.json", json.dumps(["kara"])),
     r"vocab.index.json: not a vocabulary"),
    ("parameters cut short", _write("params.index.json", '{"k1": 1.2,'), r"params.index.json: unreadable"),
    ("window maxima that do not fit", _rewrite("window_maxima.lexir.npy", lambda a: a[:-1]),
     r"window_pointers.lexir.npy: \d+ pointers for \d+ terms do not delimit"),
    ("the ids' offsets cut short", _cut("doc_ids.offsets.npy", 0.9), r"doc_ids.offsets.npy: unreadable as a saved array"),
]


def _damage(kind, files):
    if kind == "swap":
        _postings_swapped.indptr = files / "indptr.csc.index.npy"
        kind = _rewrite("indices.csc.index.npy", _postings_swapped)
    kind(files)


@pytest.mark.parametrize(("what", "damage", "message"), SAME_SIZE + RESIZED, ids=[c[0] for c in SAME_SIZE + RESIZED])
def test_a_damaged_array_is_refused_naming_its_file(saved, tmp_path, what, damage, message):
    where, files = _copy(saved, tmp_path, manifest=False)
    _damage(damage, files)
    with pytest.raises(ValueError, match=message):
        BM25Retriever.load(where)


RESIZED_FILE = r"gen-\d+/[\w.]+: \d+ bytes, but its save wrote \d+ \(damaged or changed"
THROUGH_MANIFEST = SAME_SIZE + [(what, damage, RESIZED_FILE) for what, damage, _ in RESIZED]


@pytest.mark.parametrize(("what", "damage", "message"), THROUGH_MANIFEST, ids=[c[0] for c in THROUGH_MANIFEST])
def test_through_the_manifest_a_resized_file_is_refused_before_it_is_read(saved, tmp_path, what, damage, message):
    """A saved generation: a file of another size than its save wrote is refused by the manifest's
    sizes, whatever is in it; damage of the same size by the arrays' own checks."""
    where, files = _copy(saved, tmp_path, manifest=True)
    _damage(damage, files)
    with pytest.raises(ValueError, match=message):
        BM25Retriever.load(where)


def test_a_file_gone_is_named(saved, tmp_path):
    for manifest in (True, False):
        where, files = _copy(saved, tmp_path / str(manifest), manifest)
        (files / "indices.csc.index.npy").unlink()
        with pytest.raises(FileNotFoundError, match="indices.csc.index.npy: missing"):
            BM25Retriever.load(where)


def test_an_undamaged_copy_answers_as_the_saved_index(saved, tmp_path):
    """The checks refuse nothing sound: both copies load and answer as the index first built."""
    _, queries, want = saved
    for manifest in (True, False):
        where, _ = _copy(saved, tmp_path / str(manifest), manifest)
        assert BM25Retriever.load(where).search_many(queries, 10) == want


def test_a_damaged_cache_entry_is_built_again(codes, saved, tmp_path, monkeypatch, caplog):
    """An index cache entry damaged on disk is not trusted: the next build says so and makes it
    anew, and its answers are the fresh index's."""
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    _, queries, want = saved
    build_retriever(codes, "bm25", {})
    entry = next((tmp_path / "cache" / "indexes").iterdir())
    first = current(entry)
    _rewrite("indices.csc.index.npy", lambda a: np.where(np.arange(len(a)) == 9, 10**8, a))(first)
    with caplog.at_level("WARNING", logger="lexir.retrieval.build"):
        again = build_retriever(codes, "bm25", {})
    assert current(entry) != first  # a new generation
    assert any("cannot be used (ValueError:" in r.getMessage() and "posting 9" in r.getMessage()
               and "building it again" in r.getMessage() for r in caplog.records), caplog.text
    assert again.search_many(queries, 10) == want


def test_a_shard_with_positions_that_do_not_fit_is_refused(codes, tmp_path):
    """Sharded folders (lexir serve --backend ray's) are loaded shard by shard, each checked, and
    `lexir index check` loads them so."""
    from typer.testing import CliRunner

    from lexir.cli.main import app

    bm25_shards.build(codes, tmp_path / "sh", 2)
    result = CliRunner().invoke(app, ["index", "check", str(tmp_path / "sh")])
    assert result.exit_code == 0 and "sound; loads as 2 BM25 shards" in result.output, result.output
    np.save(tmp_path / "sh" / "shard-1" / "positions.npy", np.arange(7, dtype=np.int64))
    with pytest.raises(ValueError, match=r"shard-1/positions.npy: 7 values, expected \d+"):
        bm25_shards.local(tmp_path / "sh", codes)
    result = CliRunner().invoke(app, ["index", "check", str(tmp_path / "sh")])
    assert result.exit_code == 1 and "positions.npy: 7 values" in result.output, result.output


@settings(max_examples=200, deadline=None)
@given(runs=st.lists(st.lists(st.integers(-3, 40), max_size=6), max_size=6), limit=st.integers(0, 41))
def test_ascending_within_finds_the_first_value_out_of_place(runs, limit):
    """The compiled check against the rule read plainly: the first value, run by run, that is not
    above the one before it in its run, or not in [0, limit)."""
    values = np.array([v for run in runs for v in run], dtype=np.int32)
    pointers = np.cumsum([0, *map(len, runs)]).astype(np.int64)
    want, at = -1, 0
    for run in runs:
        for i, v in enumerate(run):
            if want < 0 and (not 0 <= v < limit or (i and v <= run[i - 1])):
                want = at + i
        at += len(run)
    assert delimits(pointers, len(values))
    assert ascending_within(pointers, values, limit) == want


def test_delimits_and_load_row_refuse_what_does_not_fit(tmp_path):
    assert delimits(np.array([0, 2, 2, 5]), 5) and not delimits(np.array([0, 3, 2, 5]), 5)
    assert not delimits(np.array([1, 5]), 5) and not delimits(np.array([0, 4]), 5) and not delimits(np.array([]), 0)
    np.save(tmp_path / "a.npy", np.arange(4, dtype=np.int64))
    assert load_row(tmp_path / "a.npy", ("int64",), length=4).tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match=r"a.npy: 4 values, expected 3"):
        load_row(tmp_path / "a.npy", ("int64",), length=3)
    with pytest.raises(ValueError, match=r"a.npy: 1-d int64, expected 2-d int64"):
        load_row(tmp_path / "a.npy", ("int64",), ndim=2)
    (tmp_path / "b.npy").write_bytes(b"not an array")
    with pytest.raises(ValueError, match=r"b.npy: unreadable as a saved array"):
        load_row(tmp_path / "b.npy", ("int64",), mmap=False)
    with pytest.raises(FileNotFoundError, match=r"c.npy: missing"):
        load_row(tmp_path / "c.npy", ("int64",))


def test_lexir_index_check_reads_every_byte_against_the_checksums(saved, tmp_path):
    """`lexir index check`: a sound copy passes; a score changed in place (same size, so a load
    does not see it) is named by its checksum; a folder without a manifest is checked by loading it."""
    from typer.testing import CliRunner

    from lexir.cli.main import app

    where, files = _copy(saved, tmp_path / "a", manifest=True)
    result = CliRunner().invoke(app, ["index", "check", str(where)])
    assert result.exit_code == 0 and "sound; loads as BM25Retriever" in result.output, result.output
    _rewrite("data.csc.index.npy", lambda a: a + np.float32(0.5))(files)
    assert BM25Retriever.load(where)  # a load cannot tell
    result = CliRunner().invoke(app, ["index", "check", str(where)])
    assert result.exit_code == 1 and "data.csc.index.npy: its bytes changed since its save" in result.output
    plain, files = _copy(saved, tmp_path / "b", manifest=False)
    _damage(SAME_SIZE[0][1], files)
    result = CliRunner().invoke(app, ["index", "check", str(plain)])
    assert result.exit_code == 1 and "posting 9 (document 100000000) is outside" in result.output, result.output
    assert "no generations" in result.output
    (where.parent / "ix" / "lexir-current.json").write_text("{", encoding="utf-8")  # the manifest itself
    result = CliRunner().invoke(app, ["index", "check", str(where)])
    assert result.exit_code == 1 and "lexir-current.json: not a lexir manifest" in result.output, result.output


# -- bm25-inc: segments in .npz archives ---------------------------------------------------------


@pytest.fixture(scope="module")
def incremental(codes, tmp_path_factory):
    """A bm25-inc index of 400 pl-codes articles, saved whole, then changed (three articles gone,
    two changed, one added) and saved again as a delta segment; and its answers."""
    from lexir.analysis import Analyzer, AnalyzerConfig
    from lexir.io.markers import read_marker
    from lexir.retrieval.incremental import IncrementalBM25
    from lexir.types import Document

    docs = list(codes)[:400]
    folder = tmp_path_factory.mktemp("inc") / "ix"
    IncrementalBM25(Analyzer(AnalyzerConfig(language="pl", mode="raw"))).index(
        type(codes)("few", docs, language="pl")).save(folder)
    index = IncrementalBM25.load(folder)
    changed = [Document(d.id, d.text + " zmieniony przepis", d.title) for d in docs[10:12]]
    index.apply([*changed, Document("nowy::1", "nowy artykuł o karze", "")], [d.id for d in docs[:3]])
    index.save(folder)
    generation = current(folder)
    (delta,) = read_marker(generation / "lexir.json", "index")["deltas"]
    queries = [Query(str(i), d.text[:120]) for i, d in enumerate(docs[::37])] + [Query("n", "nowy artykuł")]
    return generation, delta, queries, index.search_many(queries, 10)


def _archive(path, **change):
    """Rewrite the .npz at ``path`` with ``change`` (a member: a function of it, or None: left out)."""
    arrays = dict(np.load(path))
    for name, how in change.items():
        if how is None:
            arrays.pop(name)
        else:
            arrays[name] = how(arrays[name])
    np.savez(path, **arrays)


def _set(at, value):
    return lambda a: np.where(np.arange(len(a)) == at, value, a)


INC_DAMAGE = [
    ("cut", "postings.npz", lambda p: p.write_bytes(p.read_bytes()[:3000]), r"postings\.npz: unreadable as saved arrays"),
    ("slot past the end", "postings.npz", lambda p: _archive(p, slots=_set(5, 10**8)),
     r"postings\.npz: slots\[5\] = 100000000 is outside the 400 slots"),
    ("negative slot", "postings.npz", lambda p: _archive(p, slots=_set(5, -1)), r"slots\[5\] = -1 is outside"),
    ("pointers doubled", "postings.npz", lambda p: _archive(p, term_indptr=lambda a: a * 2),
     r"postings\.npz: term_indptr \(\d+ pointers\) does not cut the \d+ slots into \d+ runs"),
    ("term past the end", "postings.npz", lambda p: _archive(p, doc_terms=_set(3, 10**8)),
     r"postings\.npz: doc_terms\[3\] = 100000000 is outside the \d+ terms"),
    ("lengths short", "postings.npz", lambda p: _archive(p, lengths=lambda a: a[:-5]), r"395 lengths for 400 slots"),
    ("tf of floats", "postings.npz", lambda p: _archive(p, tf=lambda a: a.astype(np.float64)),
     r"postings\.npz: tf is 1-d float64, expected 1-d int32"),
    ("tf gone", "postings.npz", lambda p: _archive(p, tf=None), r"postings\.npz: no tf in it"),
    ("tf short", "postings.npz", lambda p: _archive(p, tf=lambda a: a[:-3]), r"\d+ tf for \d+ slots"),
    ("ids not a list", "docs.json", lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "doc_ids": 7})),
     r"docs\.json: doc_ids holds int, expected a list"),
    ("not JSON", "docs.json", lambda p: p.write_text("{"), r"docs\.json: unreadable"),
    ("delta slot far past the end", "DELTA.npz", lambda p: _archive(p, slots=_set(0, 10**12)),
     r"\.npz: slots\[0\] = 1000000000000 is out of order or past the 400 slots"),
    ("delta slots out of order", "DELTA.npz", lambda p: _archive(p, slots=lambda a: a[::-1].copy()),
     r"\.npz: slots\[1\] = \d+ is out of order"),
    ("delta term past the end", "DELTA.npz", lambda p: _archive(p, doc_terms=_set(0, 10**8)),
     r"\.npz: doc_terms\[0\] = 100000000 is outside the \d+ terms"),
    ("delta tf short", "DELTA.npz", lambda p: _archive(p, doc_tf=lambda a: a[:-1]), r"\d+ doc_tf for \d+ doc_terms"),
    ("delta ids short", "DELTA.json", lambda p: p.write_text(json.dumps({**json.loads(p.read_text()),
                                                                         "hashes": []})),
     r"\.json: hashes holds 0 entries, expected \d+"),
]


@pytest.mark.parametrize(("what", "name", "damage", "message"), INC_DAMAGE, ids=[c[0] for c in INC_DAMAGE])
def test_a_damaged_bm25_inc_segment_is_refused_naming_its_file(incremental, tmp_path, what, name, damage, message):
    """bm25-inc's segments (.npz archives and their JSON) are checked as they are read: the
    arrays' types, the pointers that cut them, every slot and term id inside the index (a delta's
    new slots no more than it holds: no allocation led by a damaged number), the JSON's lists."""
    from lexir.retrieval.incremental import IncrementalBM25

    generation, delta, _, _ = incremental
    copy = tmp_path / "gen"
    shutil.copytree(generation, copy)  # the generation folder itself: no manifest sizes to stop it first
    damage(copy / name.replace("DELTA", delta))
    with pytest.raises(ValueError, match=message) as refused:
        IncrementalBM25.load(copy)
    assert "damaged: rebuild the index" in str(refused.value)


def test_an_undamaged_bm25_inc_copy_answers_as_the_index_saved(incremental, tmp_path):
    from lexir.retrieval.incremental import IncrementalBM25

    generation, _, queries, answers = incremental
    shutil.copytree(generation, tmp_path / "gen")
    assert IncrementalBM25.load(tmp_path / "gen").search_many(queries, 10) == answers
    assert answers["n"]  # the article the delta added is found


@pytest.mark.parametrize(("damage", "message"), [
    (lambda p: p.write_bytes(p.read_bytes()[:40]), r"graph\.npz: unreadable as saved arrays"),
    (lambda p: _archive(p, parent=_set(2, 99)), r"graph\.npz: parent\[2\] = 99 is not one of the 5 nodes"),
    (lambda p: _archive(p, cites_dst=lambda a: a - 100), r"graph\.npz: cites_dst\[0\] = -96 is not one of"),
    (lambda p: _archive(p, cites_src=lambda a: a[:-1]), r"1 citing and 2 cited nodes"),
    (lambda p: _archive(p, words=lambda a: a[:-1]), r"graph\.npz: 4 words for 5 nodes"),
    (lambda p: _archive(p, levels=lambda a: a.astype(np.float32)), r"levels is 1-d float32, expected 1-d int8"),
    (lambda p: _archive(p, cites_src=None), r"graph\.npz: no cites_src in it"),
], ids=["cut", "parent past the nodes", "citation before the nodes", "citations unpaired", "words short",
        "levels of floats", "cites gone"])
def test_a_damaged_saved_statute_graph_is_refused_naming_its_file(tmp_path, damage, message):
    """The statute graph's arrays are read the same way: every parent and citation a node, one
    entry per node, their types; the file named. An undamaged copy loads as saved."""
    from lexir.structure.graph import StatuteGraph

    graph = StatuteGraph(["A", "A::1", "A::2", "B", "B::1"], ["act", "article"], [0, 1, 1, 0, 1],
                         [-1, 0, 0, -1, 3], [0, 5, 6, 0, 4], [1, 2], [4, 4])
    graph.save(tmp_path / "g")
    assert StatuteGraph.load(tmp_path / "g").neighbours("A::2", "cites") == graph.neighbours("A::2", "cites")
    damage(tmp_path / "g" / "graph.npz")
    with pytest.raises(ValueError, match=message):
        StatuteGraph.load(tmp_path / "g")
