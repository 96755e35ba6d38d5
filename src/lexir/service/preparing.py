"""A served system built in the background while the service already answers with another.

``lexir serve`` serves ``recommended`` first and ``bm25`` beside it. Over a corpus whose dense
encoding is not cached yet, ``recommended`` takes minutes to build (the demo: about a minute on
two free cores; all French codes: hours). Rather than keep the server shut until then, or make a
first request pay for it, the service starts with the systems that are ready, builds the slow
one in a thread and says so: on the console (every tenth of the corpus), in ``/v1/corpora``
(``preparing``: done, total, an estimate of the time left) and on the page. Until it is ready,
a request that names no system is answered by the first ready one, and every answer names the
system that made it; a request that names the system being built gets ``503`` with
``Retry-After`` and what is ready now. When the build ends, the next request gets it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class Preparation:
    """The progress of one system's background build over one corpus (thread-safe)."""

    def __init__(self, system: str, total: int, notify: Callable[[str], None] | None = None,
                 corpus: str = "") -> None:
        self.system, self.total, self.corpus = system, max(int(total), 1), corpus
        self.done = 0
        self.error: str | None = None
        self.started = time.monotonic()
        self._notify = notify
        self._lock = threading.Lock()
        self._told = 0  # tenths of the corpus already reported
        # (time, done) when the last tenth was crossed: the time left is estimated at the rate since,
        # because a composite's parts go at their own speeds (its BM25 half in a second, its dense
        # half in minutes), and the rate since the start would promise the slow half at the fast pace
        self._mark = (self.started, 0)
        self.thread: threading.Thread | None = None  # the build's thread

    def advance(self, n: int) -> None:
        """A build's progress callback: ``n`` more documents done."""
        with self._lock:
            self.done = min(self.total, self.done + int(n))
            tenth = self.done * 10 // self.total
            due, self._told = tenth > self._told and tenth < 10, max(self._told, tenth)
            if due:
                self._mark = (time.monotonic(), self.done)
        if due and self._notify is not None:
            self._notify(f"{self.system} over {self.corpus}: {self.status()}")

    def fail(self, message: str) -> None:
        self.error = message

    def eta_s(self) -> float | None:
        """Seconds left at the rate since the last tenth was crossed (or since the start, when
        nothing is done since; None before anything is done)."""
        since, base = self._mark
        if self.done <= base:
            since, base = self.started, 0
        if self.done <= base:
            return None
        elapsed = time.monotonic() - since
        return round(elapsed / (self.done - base) * (self.total - self.done), 1)

    def status(self) -> str:
        if self.error:
            return f"could not be built: {self.error}"
        eta = self.eta_s()
        left = f", about {_duration(eta)} left" if eta is not None else ""
        return f"being built, {self.done} of {self.total} provisions ({100 * self.done // self.total}%){left}"

    def describe(self) -> dict[str, Any]:
        return {"system": self.system, "done": self.done, "total": self.total, "eta_s": self.eta_s(),
                "error": self.error}


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
