"""How far a long job is and about how long it has left: one estimate for every place that says so
(``lexir serve``'s background builds, the command line's progress lines).

A job's steps do not all go at one pace: ``recommended``'s build counts its BM25 half in a second
and its dense half in minutes, so the pace since the start would promise the slow half at the
fast half's speed. :class:`Pace` estimates the time left at the pace since the last tenth of the
job was crossed at least :data:`MIN_SPAN_S` ago (else the tenth before it, else the start), and
gives none where even the start is more recent: a pace seen for a second (the BM25 half) says
nothing of what follows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: The shortest stretch of work a pace is read from (seconds).
MIN_SPAN_S = 5.0


class Pace:
    """``done`` of ``total`` steps, counted from any thread, and the time left at the recent pace."""

    def __init__(self, total: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = max(int(total), 1)
        self.done = 0
        self._clock = clock
        self.started = clock()
        self._lock = threading.Lock()
        self._tenth = 0  # tenths of the job crossed
        # (time, done) when the last tenth was crossed, and the one before
        self._mark = self._before = (self.started, 0)

    def advance(self, n: int) -> bool:
        """``n`` more steps done; True when that crossed a new tenth of the job (not the last)."""
        with self._lock:
            self.done = min(self.total, self.done + int(n))
            tenth = self.done * 10 // self.total
            crossed = self._tenth < tenth < 10
            if tenth > self._tenth:
                self._tenth = tenth
                self._before, self._mark = self._mark, (self._clock(), self.done)
            return crossed

    def elapsed_s(self) -> float:
        return self._clock() - self.started

    def eta_s(self) -> float | None:
        """Seconds left at the pace since the last tenth crossed at least :data:`MIN_SPAN_S` ago (or
        the tenth before, or the start); None while no such stretch of work is seen."""
        with self._lock:
            done, marks = self.done, (self._mark, self._before, (self.started, 0))
        now = self._clock()
        for since, base in marks:
            if now - since >= MIN_SPAN_S and done > base:
                return round((now - since) / (done - base) * (self.total - done), 1)
        return None
