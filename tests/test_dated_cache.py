"""Corpora as of a date, served from the cache of intervals of versions in force (issue 19, 6).

The real ``de-gesetze-history`` in the real :class:`ServiceState`: a date maps to the interval
of versions in force that holds it, dates of one interval share one load, a load of one
interval does not hold up a request for a loaded one, and the cache is bounded by bytes.
"""

from __future__ import annotations

import threading
import time

import pytest

from lexir.service import core
from lexir.service.state import LoadedCorpus, NotFound, ServiceState, Settings

NAME = "de-gesetze-history"
QUERY = "Beschneidung des nicht einsichts- und urteilsfähigen männlichen Kindes"


@pytest.fixture(scope="module")
def history(data_dir):
    from lexir.datasets import open as open_data

    return open_data(NAME, data_dir=data_dir)


@pytest.fixture(scope="module")
def state(data_dir, history):
    state = ServiceState(Settings(data_dir=str(data_dir)))
    state.add(NAME)
    return state


class LoadCounter:
    """Counts dated loads as they begin (each load indexes its units once), with an event for the first."""

    def __init__(self, monkeypatch) -> None:
        self.started: list[str] = []
        self.event = threading.Event()
        original = LoadedCorpus.index_units

        def counting(loaded: LoadedCorpus) -> None:
            if loaded.as_of is not None:
                self.started.append(loaded.as_of)
                self.event.set()
            original(loaded)

        monkeypatch.setattr(LoadedCorpus, "index_units", counting)


def signature(corpus) -> tuple:
    return (tuple((d.id, d.title, d.text) for d in corpus),
            tuple((a.id, a.title, tuple(p.id for p in a.articles)) for a in corpus.acts.values()))


def in_force(history, day: str) -> set[str]:
    return {v.version for pid in history.ids() for v in history.versions(pid) if v.in_force(day)}


def test_every_day_of_an_interval_has_the_same_corpus(history):
    points = history.change_points()
    assert points[0] == history.first and points == sorted(set(points))
    days = sorted(set(history.dates) | {"2015-03-01", "2015-03-02", "2030-01-01"})
    for day in days:
        start, end = history.interval(day)
        assert start <= day and (end is None or day < end)
        assert signature(history.as_of(day)) == signature(history.as_of(start)), day
    # and no interval is split without need: across each change point the versions in force (or a
    # law's title or order of articles) differ
    for before, after in zip(points, points[1:], strict=False):
        old, new = history.as_of(before), history.as_of(after)
        assert (in_force(history, before), signature(old)) != (in_force(history, after), signature(new)), after
    with pytest.raises(ValueError, match="the first is"):
        history.interval("2010-01-01")


@pytest.mark.slow
def test_dates_of_one_interval_are_one_load(state, history, monkeypatch):
    days = ["2015-03-01", "2015-03-02", "2014-06-30"]
    assert not [d for d in history.dates if min(days) < d <= max(days)]  # no law version between them
    counter = LoadCounter(monkeypatch)
    views: dict[str, LoadedCorpus] = {}

    def ask(day: str) -> None:
        views[day] = state.get(NAME, day)

    threads = [threading.Thread(target=ask, args=(d,)) for d in days[:2]]  # at once, nothing loaded yet
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    ask(days[2])
    assert len(counter.started) == 1, counter.started
    first, *others = (views[d] for d in days)
    for day, view in views.items():
        assert view.as_of == day and view.name == f"{NAME}@{day}"
    for view in others:
        assert view.corpus is first.corpus and view.units is first.units and view.graph is first.graph
        assert state.retriever(view, None, {}) is state.retriever(first, None, {})
    hits = [core.search(state, NAME, [("q", QUERY)], k=10, as_of=d)[0]["hits"] for d in days]
    assert hits[0][0]["id"] == "BGB::1631d" and hits[1:] == hits[:1] * 2
    assert len(counter.started) == 1
    # the latest interval is the served corpus itself: no load
    latest = state.get(NAME, "2030-01-01")
    assert latest.corpus is state.get(NAME).corpus and latest.as_of == "2030-01-01"
    assert len(counter.started) == 1
    # a provision not yet in force is refused for the day asked, not for the interval's start
    with pytest.raises(NotFound, match="not in force on 2012-12-31; in force from 2013-01-11"):
        state.get(NAME, "2012-12-31").unit("BGB::1631d")


@pytest.mark.slow
def test_a_load_does_not_hold_up_a_loaded_date(state, history, monkeypatch, tmp_path):
    loaded_day, new_day = "2019-06-01", "2012-11-01"
    assert in_force(history, loaded_day) != in_force(history, new_day)
    core.search(state, NAME, [("q", QUERY)], k=10, as_of=loaded_day)  # loaded before
    # A cache of its own, so the new interval's graph and index are built now: seconds of real work.
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    counter = LoadCounter(monkeypatch)
    done: dict[str, float] = {}

    def load_new() -> None:
        core.search(state, NAME, [("q", QUERY)], k=10, as_of=new_day)
        done["new"] = time.perf_counter()

    loader = threading.Thread(target=load_new)
    loader.start()
    assert counter.event.wait(120), "the new date's load did not start"
    asked = time.perf_counter()
    hits = core.search(state, NAME, [("q", QUERY)], k=10, as_of=loaded_day)[0]["hits"]
    answered = time.perf_counter() - asked
    loader.join(300)
    assert hits and "new" in done
    remaining = done["new"] - asked  # how long the load still ran after the loaded date was asked
    assert remaining > 1.0, f"the load took only {remaining:.2f} s more: nothing to be held up by"
    assert answered < 0.25 * remaining, f"a loaded date waited {answered:.2f} s for a {remaining:.2f} s load"


@pytest.mark.slow
def test_the_cache_is_bounded_by_bytes_least_recently_used_first(state, history, monkeypatch):
    x, y, z = "2012-08-02", "2012-08-04", "2012-09-12"  # three intervals no other test loads
    assert len({history.interval(d) for d in (x, y, z)}) == 3
    key = {d: (NAME, history.interval(d)[0]) for d in (x, y, z)}
    cache = state.dated
    budget = cache.budget
    try:
        state.get(NAME, x)
        size = cache.nbytes(key[x])
        assert size is not None and size > 1 << 20  # a corpus of 100,000 units is megabytes
        cache.budget = int(2.5 * size)  # room for two such intervals, not three
        state.get(NAME, y)
        assert cache.keys() == [key[x], key[y]]  # the other tests' intervals went to make room
        state.get(NAME, x)  # x is now the most recently used
        counter = LoadCounter(monkeypatch)
        state.get(NAME, z)
        assert cache.keys() == [key[x], key[z]]  # y, least recently used, went; x stayed
        assert cache.stats()["bytes"] <= cache.budget
        state.get(NAME, x)
        assert counter.started == [key[z][1]]  # x was answered from the cache
        state.get(NAME, y)
        assert counter.started == [key[z][1], key[y][1]]  # y is loaded again
        assert cache.keys() == [key[x], key[y]]
    finally:
        cache.budget = budget


def test_one_load_per_key_and_failures_are_not_kept():
    from lexir.service.dated import SizedCache

    cache = SizedCache(budget=100)
    assert cache.get("other", lambda: ("v", 10)) == "v"
    calls: list[str] = []
    gate = threading.Event()

    def slow_failure():
        calls.append("load")
        gate.wait(10)
        raise OSError("disk gone")

    def never():
        raise AssertionError("a kept key is loaded again")

    errors: list[BaseException] = []

    def ask() -> None:
        try:
            cache.get("k", slow_failure)
        except OSError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    deadline = time.time() + 10
    while cache.stats()["loading"] == 0 and time.time() < deadline:
        time.sleep(0.01)
    begun = time.perf_counter()
    assert cache.get("other", never) == "v"  # while "k" loads
    assert time.perf_counter() - begun < 5 and not gate.is_set()
    gate.set()
    for t in threads:
        t.join(10)
    assert calls == ["load"] and len(errors) == 3  # one load, its failure told to all three askers
    assert cache.get("k", lambda: ("kept", 200)) == "kept" and cache.keys() == ["other"]  # too big to keep
    assert cache.get("k", lambda: ("again", 50)) == "again" and cache.keys() == ["other", "k"]


def test_the_budget_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("LEXIR_DATED_CACHE_MB", "256")
    assert ServiceState(Settings.from_env()).dated.budget == 256 << 20
    monkeypatch.setenv("LEXIR_DATED_CACHE_MB", "a lot")
    with pytest.raises(ValueError, match="LEXIR_DATED_CACHE_MB must be a whole number of MiB; got 'a lot'"):
        Settings.from_env()
