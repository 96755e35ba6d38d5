"""The pruned BM25 top-k (block-max windows, bm25_kernel._pruned_source) against the exhaustive
kernel: the same documents, scores and order, ties included, query by query, on random matrices
full of ties and on every question of real benchmark sets."""

import numpy as np
import pytest

from lexir.analysis import Analyzer
from lexir.retrieval import bm25_kernel
from lexir.retrieval.bm25 import BM25Retriever, make_analyzer
from lexir.retrieval.bm25_matrix import ScoreMatrix


@pytest.fixture
def window_bits(monkeypatch):
    """Set the pruned kernel's window size (its bounds are recomputed for it)."""
    def set_bits(bits: int) -> None:
        monkeypatch.setattr(bm25_kernel, "_WINDOW_BITS", bits)
    return set_bits


def same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def assert_identical(matrix, flat, pointers, k, dedupe):
    """Pruned == exhaustive, bit for bit (documents, scores, order, positive counts); and, the
    weaker property stated for pruning, the same multiset of scores per query."""
    off = matrix.top_k(flat, pointers, k, dedupe, "off")
    on = matrix.top_k(flat, pointers, k, dedupe, "on")
    assert np.array_equal(np.sort(off[1], axis=1), np.sort(on[1], axis=1)), k
    bad = [q for q in range(len(pointers) - 1)
           if not (np.array_equal(off[0][q], on[0][q]) and np.array_equal(off[1][q], on[1][q]))]
    assert not bad, f"k={k}: {len(bad)} queries differ, first {bad[:5]}"
    assert np.array_equal(off[2], on[2])
    return off


def random_matrix(rng, n_docs, n_terms, values):
    columns = [np.sort(rng.choice(n_docs, size=rng.integers(1, max(2, n_docs // 3)), replace=False))
               for _ in range(n_terms)]
    indptr = np.concatenate([[0], np.cumsum([len(c) for c in columns])]).astype(np.int64)
    indices = np.concatenate(columns).astype(np.int32)
    data = rng.choice(np.asarray(values, dtype=np.float32), size=len(indices))
    return ScoreMatrix(data, indices, indptr, n_docs)


@pytest.mark.parametrize("bits", [6, 10, 13])
def test_pruned_equals_exhaustive_on_random_matrices_full_of_ties(window_bits, bits):
    """Few distinct scores, so many documents tie at the k-th place: which of them the heap keeps
    depends on its whole history, and the pruned kernel must reproduce it. Repeated and unknown
    (negative) query terms, with and without dedupe; k from 1 to more than the corpus."""
    window_bits(bits)
    rng = np.random.default_rng(bits)
    for n_docs in (50, 3000, 20000):
        matrix = random_matrix(rng, n_docs, 40, [0.1, 0.25, 0.3, 0.5, 1.0, 2.0])
        queries = [rng.choice(40, size=rng.integers(1, 25), replace=True) for _ in range(150)]
        queries.append(np.array([-1, -1]))  # nothing known
        pointers = np.concatenate([[0], np.cumsum([len(q) for q in queries])]).astype(np.int64)
        flat = np.concatenate(queries).astype(np.int64)
        flat[::13] = -1
        for k in (1, 10, 100, n_docs + 5):
            for dedupe in (False, True):
                assert_identical(matrix, flat, pointers, k, dedupe)


def test_a_wrong_bound_is_caught(window_bits):
    """Bounds that are too low (each window maximum halved) pass over windows holding documents
    that belong in the top k: the comparison the tests make sees it."""
    window_bits(8)
    rng = np.random.default_rng(3)
    matrix = random_matrix(rng, 5000, 30, [0.1, 0.5, 1.0, 2.0, 3.0])
    queries = [rng.choice(30, size=rng.integers(1, 4), replace=False) for _ in range(100)]
    pointers = np.concatenate([[0], np.cumsum([len(q) for q in queries])]).astype(np.int64)
    flat = np.concatenate(queries).astype(np.int64)
    wp, wn, wm, bits = bm25_kernel.window_maxima(matrix)
    right = bm25_kernel.compiled_pruned()(flat, pointers, 10, False, matrix.data, matrix.indptr, matrix.indices,
                                          matrix.num_docs, wp, wn, wm, bits)
    wrong = bm25_kernel.compiled_pruned()(flat, pointers, 10, False, matrix.data, matrix.indptr, matrix.indices,
                                          matrix.num_docs, wp, wn, wm * 0.5, bits)
    assert same(right, matrix.top_k(flat, pointers, 10, False, "off"))
    assert not same(wrong, right)


def test_switch():
    """prune=on falls back to the exhaustive kernel where pruning is not exact (bm25l, bm25+: scores
    of absence); auto prunes short queries at small k, long questions never, and a wrong value is
    refused."""
    small = random_matrix(np.random.default_rng(1), 1000, 10, [0.5, 1.0])
    middle = ScoreMatrix(small.data, small.indices, small.indptr, 1 << 17)
    large = ScoreMatrix(small.data, small.indices, small.indptr, 1 << 20)
    for matrix in (small, middle, large):
        assert bm25_kernel.prunable(matrix)
        assert bm25_kernel.pruning_pays(matrix, 10, 1.0) and bm25_kernel.pruning_pays(matrix, 10, 2.5)
        assert not bm25_kernel.pruning_pays(matrix, 10, 57.0) and not bm25_kernel.pruning_pays(matrix, 5000, 1.0)
    # k = 100 with four words: the large corpus's windows pass over more than the middle one's
    assert bm25_kernel.pruning_pays(large, 100, 4.0) and not bm25_kernel.pruning_pays(middle, 100, 4.0)
    negative = ScoreMatrix(-small.data, small.indices, small.indptr, small.num_docs)
    assert not bm25_kernel.prunable(negative) and not bm25_kernel.pruning_pays(negative, 10, 1.0)
    with pytest.raises(ValueError, match="prune"):
        small.top_k(np.array([1]), np.array([0, 1]), 10, False, "yes")
    with pytest.raises(ValueError, match="prune"):
        BM25Retriever(Analyzer.create("pl", "raw"), prune="always")


def _check_benchmark(bench, queries=None, method="lucene"):
    corpus = bench.corpus
    retriever = BM25Retriever(make_analyzer(corpus, "", "auto", True, "simplemma"), method=method).index(corpus)
    texts = [q.text for q in (queries or bench.queries.queries)]
    flat, pointers = retriever.terms().raw_batch(texts)
    for k in (10, 100):
        off = assert_identical(retriever.matrix, flat, pointers, k, retriever.dedupe_query)
        assert (off[2] > 0).mean() > 0.9  # real questions: hits
    # Through the retriever: the switch as a query-time parameter, same run.
    sample = list(bench.queries.queries)[:200]
    runs = [retriever.with_params({"prune": p}).search_many(sample, k=10) for p in ("off", "on", "auto")]
    assert runs[0] == runs[1] == runs[2]
    return retriever


@pytest.mark.parametrize("bits", [6, 10])
def test_demo_and_pl_exams(data_dir, window_bits, bits):
    import lexir

    window_bits(bits)
    _check_benchmark(lexir.load("demo"))
    _check_benchmark(lexir.load("pl-exams", data_dir=data_dir))
    _check_benchmark(lexir.load("demo"), method="bm25l")  # not prunable: the exhaustive kernel


@pytest.mark.parametrize("bits", [6, 10])
def test_gerlayqa_dev(data_dir, window_bits, bits):
    """2,151 long lay questions over the BGB."""
    import lexir

    window_bits(bits)
    bench = lexir.load("gerlayqa-dev", data_dir=data_dir)
    assert len(bench.queries.queries) > 2000
    _check_benchmark(bench)


@pytest.mark.slow
def test_de_gesetze_articles(data_dir):
    """The 107k German articles (several windows of the default size), every gerlayqa-dev
    question and 3,000 article titles as queries."""
    import lexir
    from lexir.types import Query

    corpus = lexir.load("de-gesetze", data_dir=data_dir)
    corpus = getattr(corpus, "corpus", corpus)
    assert len(corpus) > 100_000
    retriever = BM25Retriever(make_analyzer(corpus, "", "auto", True, "simplemma")).index(corpus)
    titles = list(dict.fromkeys(d.title for d in corpus if d.title))[::10][:3000]
    questions = [q.text for q in lexir.load("gerlayqa-dev", data_dir=data_dir).queries.queries]
    for texts in (questions, titles):
        flat, pointers = retriever.terms().raw_batch(texts)
        for k in (10, 100):
            assert_identical(retriever.matrix, flat, pointers, k, retriever.dedupe_query)
    sample = [Query(str(i), t) for i, t in enumerate(questions[:100])]
    assert retriever.search_many(sample, k=10) == retriever.with_params({"prune": "off"}).search_many(sample, k=10)


def test_the_service_warm_up_makes_the_pruned_kernels_bounds_before_forking():
    """`lexir serve --workers` warms up in the supervisor before forking, so that what a first search
    makes is shared: a short query there loads the pruned kernel and, for an index saved without
    them, makes the window maxima, which every worker would otherwise make for itself."""
    from lexir.service.state import ServiceState, Settings
    from lexir.service.workers import warm

    state = ServiceState(Settings(systems=("bm25",)))
    loaded = state.add("demo", graph=False)
    matrix = state.retriever(loaded, "bm25", {}).matrix
    matrix.ceilings = None  # as an index saved before the maxima were saved with it
    warm(state)
    assert matrix.ceilings is not None and matrix.ceilings[1] is not None


def test_a_saved_index_brings_its_window_maxima(tmp_path):
    """A saved BM25 index keeps the pruned kernel's bounds (memory-mapped on load, nothing computed
    at the first short query); an index saved without them (before they were saved) loads and makes
    them when needed, with the same hits; a kernel of other window sizes makes its own; damaged
    files are refused with the file named; a matrix that cannot be pruned (bm25l) saves none."""
    import json

    import lexir
    from lexir.io.generations import current
    from lexir.types import Query

    corpus = lexir.load("demo").corpus
    built = BM25Retriever(make_analyzer(corpus, "", "auto", True, "simplemma")).index(corpus)
    built.save(tmp_path / "ix")
    loaded = BM25Retriever.load(tmp_path / "ix")
    bits, bounds = loaded.matrix.ceilings
    assert bits == bounds[3] == bm25_kernel._WINDOW_BITS
    assert all(isinstance(array, np.memmap) for array in bounds[:3])
    fresh = bm25_kernel.window_maxima(ScoreMatrix(built.matrix.data, built.matrix.indices, built.matrix.indptr,
                                                  built.matrix.num_docs))
    assert all(np.array_equal(a, b) for a, b in zip(bounds[:3], fresh[:3], strict=True))
    queries = [Query(str(i), d.title or d.text[:40]) for i, d in enumerate(corpus.documents)][:300]
    want = built.with_params({"prune": "off"}).search_many(queries, k=10)
    assert loaded.with_params({"prune": "on"}).search_many(queries, k=10) == want

    gen = current(tmp_path / "ix")
    # damaged: a window short (refused by the manifest's sizes, and by the arrays themselves where
    # the folder is read without its manifest), a file gone, a window past the corpus
    numbers = np.load(gen / "window_numbers.lexir.npy")
    np.save(gen / "window_numbers.lexir.npy", numbers[:-1])
    with pytest.raises(ValueError, match="window_numbers.lexir.npy: .* bytes, but its save wrote"):
        BM25Retriever.load(tmp_path / "ix")
    with pytest.raises(ValueError, match="window_pointers.lexir.npy: .* do not delimit"):
        BM25Retriever.load(gen)
    np.save(gen / "window_numbers.lexir.npy", np.where(np.arange(len(numbers)) == 7, 1 << 20, numbers).astype(np.int32))
    with pytest.raises(ValueError, match=r"window_numbers.lexir.npy: entry 7 \(window 1048576\) is past"):
        BM25Retriever.load(gen)
    (gen / "window_numbers.lexir.npy").unlink()
    with pytest.raises(FileNotFoundError, match="window_numbers.lexir.npy: missing"):
        BM25Retriever.load(gen)
    (gen / "window_maxima.lexir.json").write_text(json.dumps({"window_bits": "ten"}))
    with pytest.raises(ValueError, match="window_maxima.lexir.json: window_bits 'ten'"):
        BM25Retriever.load(gen)
    # as saved before the maxima were: made at the first pruned search, the same hits
    (gen / "window_maxima.lexir.json").unlink()
    older = BM25Retriever.load(gen)
    assert older.matrix.ceilings is None
    assert older.with_params({"prune": "on"}).search_many(queries, k=10) == want
    assert older.matrix.ceilings is not None

    bm25l = BM25Retriever(make_analyzer(corpus, "", "auto", True, "simplemma"), method="bm25l").index(corpus)
    bm25l.save(tmp_path / "l")
    assert not list(current(tmp_path / "l").glob("window_*"))

    # bm25s loads lexir's saved folder, the maxima beside its files
    import bm25s

    theirs = bm25s.BM25.load(str(current(tmp_path / "ix")), mmap=True, load_vocab=True)
    assert np.array_equal(theirs.scores["data"], built.matrix.data) and theirs.vocab_dict == built.vocab
    assert BM25Retriever.load(tmp_path / "l").matrix.ceilings is None


def test_saved_maxima_of_other_windows_are_made_anew(tmp_path, window_bits):
    """Maxima saved for windows of one size are not used by a kernel of another: it makes its own."""
    import lexir
    from lexir.types import Query

    corpus = lexir.load("demo").corpus
    built = BM25Retriever(make_analyzer(corpus, "", "auto", True, "simplemma")).index(corpus)
    built.save(tmp_path / "ix")
    window_bits(6)
    loaded = BM25Retriever.load(tmp_path / "ix")
    assert loaded.matrix.ceilings[0] == 10
    queries = [Query(str(i), d.title or d.text[:40]) for i, d in enumerate(corpus.documents)][:300]
    assert (loaded.with_params({"prune": "on"}).search_many(queries, k=10)
            == built.with_params({"prune": "off"}).search_many(queries, k=10))
    assert loaded.matrix.ceilings[0] == 6 and bm25_kernel.window_maxima(loaded.matrix)[3] == 6
