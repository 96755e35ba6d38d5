"""Document ids kept compactly (lexir.ids.DocIds) and the indexes that save them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lexir import ids as ids_module
from lexir.datasets import open as open_data
from lexir.ids import DocIds
from lexir.io.generations import current
from lexir.retrieval import bm25_shards
from lexir.retrieval.bm25 import BM25Retriever
from lexir.retrieval.build import build_retriever
from lexir.types import Query

# ids as users write them, the separator take() uses, characters beyond Latin-1 and beyond the BMP
_ID = st.text(alphabet=st.sampled_from("aZ09 §./:-\nÄßłżΑ€😀\t"), max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ID, max_size=40), st.data())
def test_every_way_of_reading_gives_the_ids(ids, data):
    kept = DocIds.of(ids)
    assert len(kept) == len(ids) and kept == ids and ids == kept and list(kept) == ids
    if ids:
        numbers = data.draw(st.lists(st.integers(0, len(ids) - 1), max_size=150))  # few (<= 64) and more
        assert kept.take(np.array(numbers, dtype=np.int64)) == [ids[i] for i in numbers]
        assert kept.take(np.array(numbers, dtype=np.int32).reshape(-1, 1)) == [ids[i] for i in numbers]
        i = data.draw(st.integers(-len(ids), len(ids) - 1))
        assert kept[i] == ids[i] and kept[np.int64(i)] == ids[i]
        cut = slice(*data.draw(st.tuples(st.integers(-50, 50), st.integers(-50, 50), st.sampled_from([1, 2, -1]))))
        assert kept[cut] == ids[cut]
    assert kept.take(np.array([], dtype=np.int64)) == []


def test_an_id_holding_the_separator_is_decoded_on_its_own():
    """take() decodes its ids at once, split at a newline; an id with a newline must not shift the
    others (it fails if the split's result is used without the count check)."""
    ids = ["a\nb", "c", "", "d\n"]
    kept = DocIds.of(ids)
    assert kept.take(np.array([3, 0, 1, 2, 0])) == ["d\n", "a\nb", "c", "", "a\nb"]


def test_offsets_are_int64_past_2_gib_of_ids(monkeypatch):
    monkeypatch.setattr(ids_module, "_INT32_BYTES", 5)
    assert DocIds.of(["ab", "cd"]).offsets.dtype == np.int32
    wide = DocIds.of(["ab", "cde"])
    assert wide.offsets.dtype == np.int64 and wide.take(np.array([1, 0])) == ["cde", "ab"]


def test_one_query_s_ids_are_reused_strings_and_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(ids_module, "_RECENT", 5)
    ids = [f"kk::{i}" for i in range(20)]
    kept = DocIds.of(ids)
    first = kept.take(np.array([3, 1, 3]))
    again = kept.take(np.array([1, 3]))
    assert first == ["kk::3", "kk::1", "kk::3"] and again[0] is first[1] and again[1] is first[0]
    for start in range(0, 20, 3):  # past the bound: forgotten, then found again
        assert kept.take(np.arange(start, min(start + 3, 20))) == ids[start:start + 3]
        assert len(kept._recent) <= 5
    assert kept.take(np.arange(70) % 20) == [ids[i % 20] for i in range(70)]  # more than a few: compiled
    with pytest.raises(IndexError, match="out of range"):
        kept.take(np.array([0, 20]))


def test_iteration_in_chunks_and_comparisons(monkeypatch):
    monkeypatch.setattr(ids_module, "_CHUNK", 3)
    ids = [f"BGB::{i}" for i in range(10)]
    kept = DocIds.of(ids)
    assert list(kept) == ids and kept.tolist() == ids and "BGB::9" in kept and kept.index("BGB::4") == 4
    assert kept != ids[:-1] and kept != [*ids[:-1], "BGB::x"] and kept != "BGB::0"
    assert DocIds.of(kept) is kept and DocIds.of(ids) == kept
    assert "BGB::0" in repr(kept) and "10 ids" in repr(kept)
    with pytest.raises(TypeError):
        hash(kept)


def _first_repeat(ids):
    first = {}
    for at, doc_id in enumerate(ids):
        if doc_id in first:
            return doc_id, first[doc_id], at
        first[doc_id] = at
    return None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="abcd", max_size=3), max_size=30), st.booleans())
def test_a_collector_finds_the_first_repeated_id(ids, collide):
    """Hashes equal for distinct ids (all of one length, with ``collide``) are not repeats, and a
    repeat among them is found (three or more ids of one hash included)."""
    collector = ids_module.IdsCollector(hashes=True)
    if collide:
        collector._hash = len
    for doc_id in ids:
        collector.add(doc_id)
    assert collector.repeated() == _first_repeat(ids)
    assert collector.ids() == ids and len(collector) == len(ids)


def _mapped(array) -> bool:
    """Whether ``array`` reads a memory-mapped file (DocIds keeps plain views of its maps)."""
    return type(array) is np.ndarray and isinstance(array.base, np.memmap)


def test_numbers_out_of_range_are_refused():
    kept = DocIds.of(["a", "b"])
    assert kept.take(np.array([1, 0], dtype=np.uint16)) == ["b", "a"] and kept.take([]) == []
    with pytest.raises(TypeError, match="integers, not float64"):
        kept.take(np.array([1.0]))
    for bad in ([2], [-1], [0, 5]):
        with pytest.raises(IndexError, match="out of range"):
            kept.take(np.array(bad))
    with pytest.raises(IndexError, match="out of range"):
        kept[2]
    with pytest.raises(IndexError):
        DocIds.of([]).take(np.array([0]))


@pytest.mark.parametrize("mmap", [True, False])
def test_saved_ids_load_memory_mapped_or_read(tmp_path, mmap):
    ids = ["kk::art. 278", "Ärzte-ZV::1/abs:2", "", "Α.Κ.::1"]
    DocIds.of(ids).save(tmp_path, "doc_ids")
    back = DocIds.load(tmp_path, "doc_ids", mmap=mmap)
    assert back == ids and _mapped(back.blob) is mmap
    assert back.nbytes == sum(len(i.encode()) for i in ids) + 4 * (len(ids) + 1)  # int32 offsets


def test_damaged_files_are_a_clear_error_naming_the_file(tmp_path):
    blob_file, offsets_file = DocIds.files("doc_ids")

    def saved():
        DocIds.of(["a", "bc", "d"]).save(tmp_path, "doc_ids")

    saved()
    (tmp_path / blob_file).unlink()
    with pytest.raises(FileNotFoundError, match=blob_file):
        DocIds.load(tmp_path, "doc_ids")
    saved()
    np.save(tmp_path / offsets_file, np.array([0, 3, 1, 4], dtype=np.int64))  # not ascending
    with pytest.raises(ValueError, match=f"{offsets_file}.*not ascending"):
        DocIds.load(tmp_path, "doc_ids")
    np.save(tmp_path / offsets_file, np.array([0, 1, 3, 9], dtype=np.int64))  # past the bytes
    with pytest.raises(ValueError, match=f"{offsets_file}.*do not delimit"):
        DocIds.load(tmp_path, "doc_ids")
    np.save(tmp_path / offsets_file, np.array([0, 1, 3, 4], dtype=np.int16))
    with pytest.raises(ValueError, match=f"{offsets_file}: 1-d int16, expected 1-d int32 or int64"):
        DocIds.load(tmp_path, "doc_ids")
    (tmp_path / offsets_file).write_bytes((tmp_path / offsets_file).read_bytes()[:-3])  # cut short
    with pytest.raises(ValueError, match=f"{offsets_file}: unreadable as a saved array"):
        DocIds.load(tmp_path, "doc_ids")
    np.save(tmp_path / offsets_file, np.array([0, 1, 3, 4], dtype=np.int64))  # int64 offsets load too
    assert DocIds.load(tmp_path, "doc_ids") == ["a", "bc", "d"]


# -- the indexes that keep them ------------------------------------------------------------------


@pytest.fixture(scope="module")
def codes():
    return open_data("pl-codes", want="corpus")


def _questions(corpus):
    return [Query(str(i), d.text[:200]) for i, d in enumerate(list(corpus)[::97])] + [Query("kara", "kara")]


def test_a_saved_bm25_index_maps_its_ids_and_answers_as_the_fresh_one(codes, tmp_path):
    fresh = build_retriever(codes, "bm25", {}, cache=False)
    fresh.save(tmp_path)
    gen = current(tmp_path)
    meta = json.loads((gen / "lexir.json").read_text(encoding="utf-8"))
    assert meta["format"] == 2 and "doc_ids" not in meta  # the ids are in their own files
    loaded = BM25Retriever.load(tmp_path)
    assert _mapped(loaded.doc_ids.blob) and loaded.doc_ids == codes.ids
    queries = _questions(codes)
    want = fresh.search_many(queries, 100)
    assert loaded.search_many(queries, 100) == want and sum(map(len, want.values())) > 2000

    # an index of format 1 (the ids as a JSON list in lexir.json) still loads, the same hits
    for file in DocIds.files("doc_ids"):
        (gen / file).unlink()
    (gen / "lexir.json").write_text(json.dumps({**meta, "format": 1, "doc_ids": codes.ids}), encoding="utf-8")
    # (read as a folder without a manifest: the manifest's sizes would refuse the files changed)
    old = BM25Retriever.load(gen)
    assert isinstance(old.doc_ids, DocIds) and old.search_many(queries, 100) == want

    (gen / "lexir.json").write_text(json.dumps({**meta, "format": 3}), encoding="utf-8")
    with pytest.raises(ValueError, match="format 3 is not 1 or 2; rebuild it"):
        BM25Retriever.load(gen)


def test_sharded_ids_map_and_format_1_shards_still_load(codes, tmp_path):
    single = build_retriever(codes, "bm25", {}, cache=False)
    bm25_shards.build(codes, tmp_path, 2)
    sharded = bm25_shards.local(tmp_path, codes)
    assert _mapped(sharded.doc_ids.blob) and sharded.doc_ids == codes.ids
    queries = _questions(codes)
    want = single.search_many(queries, 10)
    assert sharded.search_many(queries, 10) == want

    plan = tmp_path / "lexir-shards.json"
    meta = json.loads(plan.read_text(encoding="utf-8"))
    for file in DocIds.files("doc_ids"):
        (tmp_path / file).unlink()
    (tmp_path / "doc_ids.json").write_text(json.dumps(codes.ids), encoding="utf-8")
    plan.write_text(json.dumps({**meta, "format": 1}), encoding="utf-8")
    assert bm25_shards.local(tmp_path, codes).search_many(queries, 10) == want
