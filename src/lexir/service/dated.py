"""The cache of dated corpora: each key loaded once, bounded by estimated bytes, LRU.

A request for a corpus as of a date is keyed by the interval of versions in force that holds
the date (:meth:`lexir.structure.history.StatuteHistory.interval`), so every date of one
interval shares one loaded corpus with its units, graph and retrievers.

Loading takes seconds; it runs outside the cache's lock, so a request for a loaded key is
answered while another key loads. A second request for a key that is loading waits for that
load (a future), never starts its own. Loads of different keys take turns (``loads`` at once,
default one). A failed load is reported to every waiter and not kept.

The bound is on memory: each entry carries an estimate of its bytes (:func:`estimate_bytes`);
after a load the least recently used entries go until the total fits the budget. An entry
bigger than the whole budget is served to the requests waiting for it but not kept.
"""

from __future__ import annotations

import sys
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class _Entry:
    value: Any
    nbytes: int


class SizedCache:
    """Values by key, each loaded once by the first asker, kept within ``budget`` bytes (LRU)."""

    def __init__(self, budget: int, loads: int = 1) -> None:
        self.budget = int(budget)
        # Loads at once: a load is mostly Python holding the GIL, so two at once take as long as
        # two in turn and both answer at the end; in turn, the first answers after one load.
        self._slots = threading.Semaphore(max(1, int(loads)))
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._loading: dict[Hashable, Future] = {}
        self._lock = threading.Lock()  # held only to look up and to file; never during a load
        self.loads = 0
        self.hits = 0
        self.evictions = 0
        self.load_seconds = 0.0

    def get(self, key: Hashable, load: Callable[[], tuple[Any, int]]) -> Any:
        """The value of ``key``: kept, being loaded by another request (wait for it), or loaded
        now by ``load`` (which returns the value and its estimated bytes)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry.value
            future = self._loading.get(key)
            mine = future is None
            if mine:
                future = self._loading[key] = Future()
        if not mine:
            return future.result()
        try:
            with self._slots:
                start = time.perf_counter()
                value, nbytes = load()
        except BaseException as exc:
            with self._lock:
                del self._loading[key]
            future.set_exception(exc)
            raise
        with self._lock:
            del self._loading[key]
            self.loads += 1
            self.load_seconds += time.perf_counter() - start
            if nbytes <= self.budget:
                self._entries[key] = _Entry(value, int(nbytes))
                self._fit()
        future.set_result(value)
        return value

    def resize(self, key: Hashable, nbytes: int) -> None:
        """A kept entry grew (a retriever built on it later): count its new size, evict to fit."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.nbytes = int(nbytes)
                self._entries.move_to_end(key)
                self._fit()

    def _fit(self) -> None:
        total = sum(e.nbytes for e in self._entries.values())
        while total > self.budget and self._entries:
            _key, gone = self._entries.popitem(last=False)
            total -= gone.nbytes
            self.evictions += 1

    def keys(self) -> list[Hashable]:
        """Kept keys, least recently used first."""
        with self._lock:
            return list(self._entries)

    def nbytes(self, key: Hashable) -> int | None:
        with self._lock:
            entry = self._entries.get(key)
            return entry.nbytes if entry is not None else None

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"entries": len(self._entries), "bytes": sum(e.nbytes for e in self._entries.values()),
                    "budget": self.budget, "loading": len(self._loading), "loads": self.loads,
                    "hits": self.hits, "evictions": self.evictions,
                    "load_seconds": round(self.load_seconds, 3)}


# ---------------------------------------------------------------------------
# estimating bytes

_ATOMS = (str, bytes, int, float, complex, bool, type(None))
# code and its containers: shared by everything, not the data of one corpus
_NOT_DATA = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
             types.CodeType, types.GeneratorType)
_SAMPLE = 200  # a container longer than this is measured on an even sample of its items


def estimate_bytes(root: Any, skip: tuple[type, ...] = ()) -> int:
    """Bytes held by ``root`` and what it reaches: ``sys.getsizeof`` of each object once, numpy
    arrays by their buffers, modules, types and functions not at all, and nothing below an
    instance of ``skip`` (objects shared with something that stays loaded anyway). A list, tuple,
    set or dict longer than 200 items is measured on 200 items spread over it and scaled, so a
    corpus of a million units is estimated in milliseconds, not walked."""
    seen: set[int] = set()
    total = 0
    stack: list[tuple[Any, float]] = [(root, 1.0)]
    while stack:
        obj, weight = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, skip) or isinstance(obj, _NOT_DATA):
            continue
        if isinstance(obj, np.ndarray):
            base = obj
            while isinstance(base.base, np.ndarray):
                base = base.base
            if id(base) not in seen or base is obj:
                seen.add(id(base))
                total += weight * (base.nbytes + sys.getsizeof(np.empty(0)))
            continue
        total += weight * sys.getsizeof(obj)
        if isinstance(obj, _ATOMS):
            continue
        if isinstance(obj, dict):
            items: list[Any] = list(obj.items()) if len(obj) <= _SAMPLE else _spread(list(obj.items()))
            scale = weight * len(obj) / max(len(items), 1)
            for k, v in items:
                stack.append((k, scale))
                stack.append((v, scale))
            continue
        if isinstance(obj, (list, tuple, set, frozenset)):
            seq = list(obj)
            items = seq if len(seq) <= _SAMPLE else _spread(seq)
            scale = weight * len(seq) / max(len(items), 1)
            stack.extend((item, scale) for item in items)
            continue
        attrs = getattr(obj, "__dict__", None)
        if attrs is not None:
            stack.append((attrs, weight))
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                    stack.append((getattr(obj, slot), weight))
    return int(total)


def _spread(items: list[Any]) -> list[Any]:
    step = len(items) / _SAMPLE
    return [items[int(i * step)] for i in range(_SAMPLE)]
