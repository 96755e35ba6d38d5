"""Who paid for what: every LLM call is one :class:`CallRecord`; :class:`Accounting` sums them
per query, per system and per role, and prints the totals.

``calls`` counts logical calls, answered from the cache or not; ``requests`` counts what
actually went over the network (retries included), so a rerun shows ``calls`` unchanged and
``requests`` zero. Tokens and seconds of a cached answer are those it cost when it was made,
so a cost table does not change when it is recomputed from the cache.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass
class CallRecord:
    system: str
    qid: str
    role: str
    cached: bool
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    requests: int = 0  # HTTP requests made for this call (0 when cached; >1 after retries)
    status: str = ""  # parse status of the answer (lexir.llm.parsing.Status), "" when not parsed
    step: int = 0  # the round of a multi-round system (ReAct), else 0


@dataclass
class Usage:
    calls: int = 0
    cached: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    statuses: Counter = field(default_factory=Counter)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def new_calls(self) -> int:
        return self.calls - self.cached

    def add(self, r: CallRecord) -> None:
        self.calls += 1
        self.cached += int(r.cached)
        self.requests += r.requests
        self.prompt_tokens += r.prompt_tokens
        self.completion_tokens += r.completion_tokens
        self.seconds += r.seconds
        if r.status:
            self.statuses[r.status] += 1

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.calls + other.calls, self.cached + other.cached, self.requests + other.requests,
                     self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens,
                     self.seconds + other.seconds, self.statuses + other.statuses)

    def to_dict(self) -> dict:
        return {"calls": self.calls, "cached": self.cached, "requests": self.requests,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "seconds": round(self.seconds, 3), "statuses": dict(self.statuses)}

    def __str__(self) -> str:
        bad = {k: v for k, v in self.statuses.items() if k != "ok"}
        text = (f"{self.calls} calls ({self.cached} cached, {self.requests} requests), "
                f"{self.prompt_tokens} prompt + {self.completion_tokens} completion tokens, {self.seconds:.1f} s")
        if bad:
            text += ", malformed: " + ", ".join(f"{k}={v}" for k, v in sorted(bad.items()))
        return text


class Accounting:
    """A thread-safe list of call records with sums by any key. ``a + b`` merges two."""

    def __init__(self, records: Iterable[CallRecord] = ()) -> None:
        self.records: list[CallRecord] = list(records)
        self.events: Counter = Counter()  # handling events: "retry", "fallback", ... (per system:event)
        self._lock = threading.Lock()

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self.records.append(record)

    def note(self, system: str, event: str, n: int = 1) -> None:
        with self._lock:
            self.events[f"{system}:{event}"] += n

    def __add__(self, other: Accounting) -> Accounting:
        merged = Accounting([*self.records, *other.records])
        merged.events = self.events + other.events
        return merged

    def __len__(self) -> int:
        return len(self.records)

    def total(self, system: str | None = None) -> Usage:
        usage = Usage()
        for r in self.records:
            if system is None or r.system == system:
                usage.add(r)
        return usage

    def _by(self, key, system: str | None = None) -> dict[str, Usage]:
        out: dict[str, Usage] = {}
        for r in self.records:
            if system is None or r.system == system:
                out.setdefault(key(r), Usage()).add(r)
        return out

    def by_query(self, system: str | None = None) -> dict[str, Usage]:
        return self._by(lambda r: r.qid, system)

    def by_system(self) -> dict[str, Usage]:
        return self._by(lambda r: r.system)

    def by_role(self, system: str | None = None) -> dict[str, Usage]:
        return self._by(lambda r: r.role, system)

    def per_query_mean(self, system: str | None = None, n_queries: int | None = None) -> dict[str, float]:
        """Mean calls, tokens and seconds per query (over ``n_queries`` when given, else the queries seen)."""
        per = self.by_query(system)
        n = n_queries or len(per) or 1
        total = self.total(system)
        return {"calls": total.calls / n, "prompt_tokens": total.prompt_tokens / n,
                "completion_tokens": total.completion_tokens / n, "seconds": total.seconds / n}

    def summary(self) -> str:
        lines = [f"{name}: {usage}" for name, usage in sorted(self.by_system().items())]
        if self.events:
            lines.append("events: " + ", ".join(f"{k}={v}" for k, v in sorted(self.events.items())))
        return "\n".join(lines) or "no LLM calls"

    def __str__(self) -> str:
        return self.summary()

    def print(self, console=None) -> None:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="LLM usage")
        for col in ("system", "calls", "cached", "requests", "prompt tok", "completion tok", "seconds", "malformed"):
            table.add_column(col, justify="left" if col == "system" else "right")
        for name, u in sorted(self.by_system().items()):
            bad = sum(v for k, v in u.statuses.items() if k != "ok")
            table.add_row(name, str(u.calls), str(u.cached), str(u.requests), str(u.prompt_tokens),
                          str(u.completion_tokens), f"{u.seconds:.1f}", str(bad))
        (console or Console()).print(table)
