"""``lexir serve --workers N``: N worker processes forked from one loaded service.

The supervisor (the ``lexir serve`` process) loads the corpora, their graphs and indexes once,
binds the listening socket, then forks the workers: each runs its own uvicorn server on that
shared socket (the kernel hands each new connection to one of them). What the supervisor
loaded is shared copy-on-write, and the BM25 indexes, memory-mapped from the index cache, are
the same page-cache pages in every worker, so a second worker costs far less than a second
``lexir serve`` (benchmarks/bench_workers.py measures it).

A worker that dies (killed, out of memory) is forked again from the supervisor's loaded state,
in well under a second; the other workers answer meanwhile. A worker that dies within a second
of its start five times running stops the service (something is wrong with every worker).
SIGTERM or SIGINT to the supervisor stops the workers gracefully (uvicorn lets requests in
flight finish, for at most :data:`GRACE_S` seconds) and then the supervisor.

Nothing here may run threads before forking: a fork copies only the forking thread.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

QUICK_DEATH_S = 1.0  # a worker dead this soon after its start counts as failing to start
QUICK_DEATHS = 5  # ... this many times running: give up
GRACE_S = 30  # after SIGTERM, seconds the workers have to finish the requests in flight


def _die_with(parent: int) -> None:
    """This worker gets SIGTERM when the supervisor dies, even by SIGKILL (Linux's
    PR_SET_PDEATHSIG): no orphaned worker keeps serving the socket."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the supervisor's SIGTERM still stops the workers
        pass
    if os.getppid() != parent:  # it died before that took effect
        os.kill(os.getpid(), signal.SIGTERM)


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (a supervisor's workers), read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return sorted(found)


def bind(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """The listening socket the workers share (IPv6 for an address with a colon)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def warm(state) -> None:
    """A long and a short search per served corpus and system before forking: what a first search
    makes (the BM25 kernels numba compiles or loads, the pruned kernel's bounds of a large corpus,
    the analyzers' tables, the hit formatting's caches) is then made once in the supervisor and
    shared, instead of once in every worker."""
    from lexir.service import core

    for name, loaded in state.corpora.items():
        doc = next(iter(loaded.corpus.documents), None)
        if doc is None:
            continue
        words = (doc.title + " " + doc.text).split()
        for query in (" ".join(words[:12]) or "warm", " ".join(words[:2]) or "warm"):
            for system in (*state.settings.systems, *state.settings.variants):
                try:
                    core.search(state, name, [("warm", query)], 10, system)
                except Exception:  # noqa: BLE001 - a warm-up only saves time; the request will say what is wrong
                    pass


def warm_hits(loaded, retriever) -> None:
    """The hits of a first provision formatted, with the words of its own text for a query, without
    a search: the snippets' compiled loops loaded and the first-use tables made, where a search
    cannot be made yet (a Ray Serve front replica, whose shards may still be starting)."""
    from lexir.structure.hits import format_hits, hit_analyzer

    doc = next(iter(loaded.corpus.documents), None)
    if doc is not None:
        query = " ".join((doc.title + " " + doc.text).split()[:12]) or "warm"
        format_hits(loaded, [(doc.id, 1.0)], query, hit_analyzer(retriever, loaded.language))


class Supervisor:
    """Forks ``workers`` processes that each call ``run_worker(sock)``; forks again any that dies."""

    def __init__(self, workers: int, sock: socket.socket, run_worker: Callable[[socket.socket], None],
                 notify: Callable[[str], None] = lambda m: None,
                 on_death: Callable[[int], None] = lambda pid: None,
                 on_restart: Callable[[], None] = lambda: None) -> None:
        self.workers = workers
        self.sock = sock
        self.run_worker = run_worker
        self.notify = notify
        self.on_death = on_death
        self.on_restart = on_restart
        self.children: dict[int, float] = {}  # pid -> start time
        self.stopping = False
        self.quick_deaths = 0

    def _fork(self) -> int:
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                # its own process group: a terminal's Ctrl-C reaches the supervisor alone, which
                # sends each worker one SIGTERM (a second signal would make uvicorn cut requests short)
                os.setpgid(0, 0)
                signal.signal(signal.SIGALRM, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _die_with(parent)
                self.run_worker(self.sock)
            except BaseException:  # noqa: BLE001 - a worker reports and exits, never returns to the loop
                import traceback

                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        self.children[pid] = time.monotonic()
        return pid

    def _stop(self, signum, _frame) -> None:
        if self.stopping:
            return
        self.stopping = True
        self._signal_all(signal.SIGTERM)
        signal.signal(signal.SIGALRM, lambda *_: self._signal_all(signal.SIGKILL))
        signal.alarm(GRACE_S)  # workers still busy then are killed

    def _signal_all(self, signum: int) -> None:
        for pid in list(self.children):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def run(self) -> int:
        """Fork the workers and keep them: until a signal stops the service, or workers keep dying
        at their start. The exit status for ``lexir serve``."""
        if threading.active_count() > 1:
            self.notify(f"warning: {threading.active_count() - 1} threads run before forking; "
                        "the workers will not have them")
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        for _ in range(self.workers):
            self._fork()
        status = 0
        while self.children:
            try:
                pid, wait_status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            started = self.children.pop(pid, None)
            if started is None:
                continue
            self.on_death(pid)
            if self.stopping:
                continue
            code = os.waitstatus_to_exitcode(wait_status)
            how = f"signal {-code}" if code < 0 else f"status {code}"
            quick = time.monotonic() - started < QUICK_DEATH_S
            self.quick_deaths = self.quick_deaths + 1 if quick else 0
            if self.quick_deaths >= QUICK_DEATHS:
                self.notify(f"worker {pid} exited ({how}); workers keep dying at their start: stopping")
                self._stop(None, None)
                status = 1
                continue
            if quick:
                time.sleep(QUICK_DEATH_S)  # no busy loop of forks
            new = self._fork()
            self.on_restart()
            self.notify(f"worker {pid} exited ({how}); started worker {new}")
        signal.alarm(0)
        return status
