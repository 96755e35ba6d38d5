"""A front's call to a BM25 shard (``lexir.ray_serve.await_shard``): resent when its replica dies
or does not answer in time, hedged (sent a second time) when it is slow to answer. Calls here are
stand-ins for Serve's responses with real threads and clocks; the same code against a real Ray
Serve deployment with a stopped replica is in tests/test_ray_serve.py."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from lexir.ray_serve import Front, RecentTimes, await_shard


class Died(Exception):
    """A replica that died under a call (Ray's RayActorError)."""


class Call:
    """One call to a replica: answers ``value`` after ``after`` seconds, raises ``error`` then,
    or never answers (``after`` None: a stopped replica)."""

    def __init__(self, value=None, after: float | None = 0.0, error: BaseException | None = None):
        self.done, self.value, self.error, self.cancelled = threading.Event(), value, error, False
        self.sent = time.monotonic()
        if after is not None:
            threading.Timer(after, self.done.set).start()

    def result(self, timeout_s: float):
        if not self.done.wait(timeout_s):
            raise TimeoutError("not yet")
        if self.error is not None:
            raise self.error
        return self.value

    def cancel(self) -> None:
        self.cancelled = True


class Replicas:
    """``send()`` for await_shard: each call made from the next of ``plans`` (kwargs of Call)."""

    def __init__(self, *plans: dict):
        self.plans, self.calls = list(plans), []

    def send(self) -> Call:
        call = Call(**self.plans[len(self.calls)])
        self.calls.append(call)
        return call


def shard(replicas: Replicas, **options):
    events = {"hedges": [], "retries": 0}
    options = {"timeout_s": 5.0, "retries": 2, "hedge_after_s": 0.1, "retryable": (Died,),
               "on_hedge": events["hedges"].append,
               "on_retry": lambda: events.__setitem__("retries", events["retries"] + 1), **options}
    t0 = time.monotonic()
    answer = await_shard(replicas.send, **options)
    return answer, time.monotonic() - t0, events


def test_a_stalled_call_is_hedged_and_the_second_answer_taken():
    replicas = Replicas({"value": "stalled", "after": None}, {"value": "other replica", "after": 0.02})
    answer, took, events = shard(replicas, hedge_after_s=0.1, timeout_s=5.0)
    assert answer.value == "other replica"
    assert 0.1 <= took < 1.0  # the hedge's wait, not the 5 s timeout
    assert events == {"hedges": ["hedge"], "retries": 0}
    assert replicas.calls[0].cancelled and not replicas.calls[1].cancelled
    assert answer.took_s is None  # a hedge's answer says nothing of how long calls take


def test_a_call_answered_in_time_is_sent_once_and_timed():
    replicas = Replicas({"value": "fast", "after": 0.01})
    answer, took, events = shard(replicas, hedge_after_s=0.5)
    assert answer.value == "fast" and len(replicas.calls) == 1
    assert events == {"hedges": [], "retries": 0}
    assert 0.01 <= answer.took_s <= took < 0.5


def test_the_first_call_answering_after_the_hedge_was_sent_still_wins():
    replicas = Replicas({"value": "first", "after": 0.15}, {"value": "hedge", "after": 2.0})
    answer, took, events = shard(replicas, hedge_after_s=0.1)
    assert answer.value == "first" and events["hedges"] == ["first"]
    assert replicas.calls[1].cancelled and took < 1.0
    assert answer.took_s == pytest.approx(0.15, abs=0.1)  # the first call's own time, kept


def test_without_hedging_a_stalled_call_waits_out_the_timeout_then_is_resent():
    replicas = Replicas({"value": "stalled", "after": None}, {"value": "resent", "after": 0.0})
    answer, took, events = shard(replicas, hedge_after_s=None, timeout_s=0.3)
    assert answer.value == "resent" and events == {"hedges": [], "retries": 1}
    assert took >= 0.3 and len(replicas.calls) == 2 and replicas.calls[0].cancelled


def test_a_call_whose_replica_dies_is_resent_at_once_not_hedged():
    replicas = Replicas({"error": Died("gone"), "after": 0.01}, {"value": "resent", "after": 0.0})
    answer, took, events = shard(replicas, hedge_after_s=1.0)
    assert answer.value == "resent" and events == {"hedges": [], "retries": 1}
    assert took < 0.5  # not the hedge's second


def test_when_the_first_call_dies_after_the_hedge_the_hedge_answers():
    replicas = Replicas({"error": Died("gone"), "after": 0.15}, {"value": "hedge", "after": 0.3},
                        {"value": "second hedge", "after": 0.5})
    answer, _, events = shard(replicas, hedge_after_s=0.1)
    assert answer.value == "hedge" and events == {"hedges": ["hedge"], "retries": 0}
    assert replicas.calls[2].cancelled  # the second hedge (sent at 0.2 s) is given up


def test_a_hedge_sent_to_the_stalled_replica_itself_is_followed_by_a_second():
    """A replica that stalls after accepting the first call owes no answer yet, so Serve may send
    the hedge to it as well; the second hedge, a hedge's wait later, goes to another (the stalled
    one then owes the first hedge and is passed over). One hedge alone waits out the stall."""
    stalled = {"value": "stalled", "after": 1.5}
    replicas = Replicas(stalled, stalled, {"value": "other replica", "after": 0.02})
    answer, took, events = shard(replicas, hedge_after_s=0.2, timeout_s=5.0)
    assert answer.value == "other replica" and 0.4 <= took < 1.0
    assert events == {"hedges": ["hedge"], "retries": 0} and len(replicas.calls) == 3
    assert replicas.calls[0].cancelled and replicas.calls[1].cancelled
    one = Replicas(stalled, stalled, {"value": "other replica", "after": 0.02})
    answer, took, _ = shard(one, hedge_after_s=0.2, timeout_s=5.0, hedges=1)
    assert answer.value == "stalled" and took >= 1.5 and len(one.calls) == 2


def test_both_calls_lost_are_sent_again_then_fail_with_what_failed_says():
    stalled = {"after": None}
    replicas = Replicas(*[stalled] * 6)
    with pytest.raises(RuntimeError, match="shard 1 gave up after 2 attempt"):
        shard(replicas, hedge_after_s=0.05, timeout_s=0.2, retries=1,
              failed=lambda attempts, exc: RuntimeError(f"shard 1 gave up after {attempts + 1} attempt(s): {exc}"))
    # each attempt: the call and its two hedges, all given up
    assert len(replicas.calls) == 6 and all(c.cancelled for c in replicas.calls)


def test_an_error_that_is_not_a_lost_replica_is_raised_at_once():
    replicas = Replicas({"error": ValueError("a bug in the shard"), "after": 0.0})
    with pytest.raises(ValueError, match="a bug"):
        shard(replicas)
    assert len(replicas.calls) == 1


def test_the_first_call_may_be_sent_before():
    first = Call(value="sent before", after=0.0)
    replicas = Replicas()
    answer = await_shard(replicas.send, first=first, timeout_s=1.0, retries=0, hedge_after_s=0.5, retryable=(Died,))
    assert answer.value == "sent before" and replicas.calls == []


def test_the_hedge_waits_for_the_slowest_recent_calls():
    """hedge_s, or the 95th percentile of the recent calls where that is longer; 0: never."""
    times = RecentTimes(size=100)
    front = SimpleNamespace(hedge_s=1.0, latencies=times)
    assert Front.hedge_delay(front) == 1.0  # nothing timed yet
    for i in range(100):
        times.add(0.01 * i)  # 0.00 .. 0.99 s
    assert Front.hedge_delay(front) == 1.0
    for i in range(100):
        times.add(0.03 * i)  # the last 100 only: 0.00 .. 2.97 s
    assert Front.hedge_delay(front) == pytest.approx(2.85)
    front.hedge_s = 0.0
    assert Front.hedge_delay(front) is None
