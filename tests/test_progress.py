"""The one estimate of the time a long job has left (lexir.io.progress.Pace), which the service's
background builds and the command line's progress lines both give."""

from __future__ import annotations

import threading

from lexir.io.progress import Pace
from lexir.service.preparing import Preparation


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_fast_half_then_a_slow_one_is_estimated_at_the_slow_pace():
    """recommended's build: its BM25 half counted in a second, its dense half slowly. The pace since
    the start would promise the rest in seconds; the recent pace says minutes."""
    clock = Clock()
    pace = Pace(1_000, clock)
    assert pace.eta_s() is None  # nothing done: no pace yet
    clock.now = 1.0
    assert pace.advance(500)  # five tenths at once
    assert pace.eta_s() is None  # a pace seen for a second says nothing of what follows
    clock.now = 31.0
    assert not pace.advance(50)  # 550: no new tenth
    assert pace.eta_s() == 270.0  # 50 in 30 s, 450 left (since the start it would be 24.5 s)
    clock.now = 61.0
    assert pace.advance(50)  # 600 crosses the sixth tenth: the pace since the fifth
    assert pace.eta_s() == 240.0  # 100 in 60 s, 400 left
    clock.now = 91.0
    pace.advance(50)
    assert pace.eta_s() == 210.0  # 50 in 30 s since the sixth tenth, 350 left
    assert pace.elapsed_s() == 91.0
    clock.now = 100.0
    assert not pace.advance(10_000)  # the last tenth is not reported as a step; done is capped
    assert pace.done == 1_000 and pace.eta_s() == 0.0


def test_counted_from_many_threads_nothing_is_lost():
    pace = Pace(80_000)
    crossed = []

    def work() -> None:
        for _ in range(10_000):
            if pace.advance(1):
                crossed.append(pace.done * 10 // pace.total)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert pace.done == 80_000 and sorted(crossed) == list(range(1, 10))


def test_the_service_says_each_tenth_with_the_same_estimate():
    told = []
    clock = Clock()
    prep = Preparation("recommended", 200, told.append, "demo", clock)
    clock.now = 2.0
    prep.advance(100)  # half, in 2 s: said once, with no estimate (too short a stretch to read a pace from)
    clock.now = 62.0
    prep.advance(20)  # 60%: said, at the pace since the half (20 in 60 s, 80 left)
    assert told == ["recommended over demo: being built, 100 of 200 provisions (50%)",
                    "recommended over demo: being built, 120 of 200 provisions (60%), about 4 min left"]
    assert prep.describe() == {"system": "recommended", "done": 120, "total": 200, "eta_s": 240.0, "error": None}
