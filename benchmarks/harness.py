"""Timing and peak-memory measurement shared by every benchmark in this folder.

``Clock`` times calls (wall and CPU seconds, so that a busy shared machine shows as CPU well
below wall); ``Memory`` reads the kernel's RSS high-water mark (VmHWM) and can reset it, so a
timed section's own peak is told apart from loading its input; ``load_note`` says when other
processes competed for the CPUs. Import it beside the scripts: ``from harness import Clock``.
"""

from __future__ import annotations

import gc
import os
import time


def status_kib(field_name: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset the kernel's RSS high-water mark (VmHWM) of this process; False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class Memory:
    """Peak RSS of this process, and how far the timed section raised it over its starting point.

    Both come from the kernel's high-water mark VmHWM (/proc/self/status). getrusage's
    ru_maxrss is not used: a spawned worker is forked from the benchmark's parent before it
    execs a fresh interpreter, and ru_maxrss keeps the parent's peak across that exec.
    """

    def __init__(self) -> None:
        gc.collect()
        self.before_kib = status_kib("VmHWM")  # peak of loading the input and warming up
        self.baseline_kib = status_kib("VmRSS")
        self.reset = reset_peak_rss()

    def result(self) -> dict:
        after = status_kib("VmHWM")
        peaks = [x for x in (self.before_kib, after) if x is not None]
        return {
            "peak_rss_mib": max(peaks) / 1024 if peaks else None,
            "baseline_rss_mib": None if self.baseline_kib is None else self.baseline_kib / 1024,
            "timed_peak_over_baseline_mib": None if not self.reset or after is None or self.baseline_kib is None
            else (after - self.baseline_kib) / 1024,
        }


class Clock:
    """Wall-clock (time.perf_counter) and CPU (time.process_time) seconds of timed calls, and
    the CPU seconds of child processes that ended during the call (worker pools)."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.children_cpu: list[float] = []

    def __call__(self, fn):
        before = os.times()
        cpu, wall = time.process_time(), time.perf_counter()
        value = fn()
        self.wall.append(time.perf_counter() - wall)
        self.cpu.append(time.process_time() - cpu)
        after = os.times()
        self.children_cpu.append(after.children_user + after.children_system
                                 - before.children_user - before.children_system)
        return value

    def result(self) -> dict:
        return {"wall": self.wall, "cpu": self.cpu, "children_cpu": self.children_cpu}


def once(fn) -> float:
    clock = Clock()
    clock(fn)
    return clock.wall[0]


def load_note() -> str:
    """A line on the machine's load (1-minute load average against the CPUs), or ""."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return ""
    cpus = os.cpu_count() or 1
    if load <= cpus:
        return f"load average {load:.1f} on {cpus} CPUs"
    return f"load average {load:.1f} on {cpus} CPUs: other processes competed, figures are pessimistic"


def write_json(path, data, indent: int = 1) -> None:
    """Write a benchmark's figures as JSON, creating the folder (results/ is not committed)."""
    import json
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")


def corpus_of(name: str):
    """(corpus, long questions) of a benchmark corpus: ``pl-codes`` (pl-exams's questions),
    ``de-gesetze`` (the 107k German articles) or ``de-units`` (every provision of de-gesetze), both
    with gerlayqa-dev's lay questions."""
    import lexir
    from lexir.types import Corpus, Document

    if name == "pl-codes":
        bench = lexir.load("pl-exams")
        return bench.corpus, [q.text for q in bench.queries.queries]
    articles = lexir.load("de-gesetze")
    articles = getattr(articles, "corpus", articles)
    questions = [q.text for q in lexir.load("gerlayqa-dev").queries.queries]
    if name == "de-gesetze":
        return articles, questions
    if name != "de-units":
        raise SystemExit(f"unknown corpus {name!r}")
    docs = [Document(unit.id, unit.text, unit.title) for unit in articles.units()]
    return Corpus("de-units", docs, language=articles.language), questions
