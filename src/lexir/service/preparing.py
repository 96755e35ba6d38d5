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

from lexir.io.progress import Pace


class Preparation:
    """The progress of one system's background build over one corpus (thread-safe); the time left
    is :class:`lexir.io.progress.Pace`'s, at the pace since the last tenth of the corpus."""

    def __init__(self, system: str, total: int, notify: Callable[[str], None] | None = None,
                 corpus: str = "", clock: Callable[[], float] = time.monotonic) -> None:
        self.system, self.corpus = system, corpus
        self.pace = Pace(total, clock)
        self.total = self.pace.total
        self.error: str | None = None
        self.started = self.pace.started
        self._notify = notify
        self.thread: threading.Thread | None = None  # the build's thread

    @property
    def done(self) -> int:
        return self.pace.done

    def advance(self, n: int) -> None:
        """A build's progress callback: ``n`` more documents done (said every tenth of the corpus)."""
        if self.pace.advance(n) and self._notify is not None:
            self._notify(f"{self.system} over {self.corpus}: {self.status()}")

    def fail(self, message: str) -> None:
        self.error = message

    def eta_s(self) -> float | None:
        return self.pace.eta_s()

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
