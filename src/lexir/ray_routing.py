"""Serve's power-of-two-choices routing, passing over a replica that has stopped answering.

Ray Serve sends each request to the less busy of two replicas, by a count of requests in flight
that each caller keeps per replica. A live replica corrects that count with every request it
accepts (it reports its real load: every caller's requests); a replica that hangs, alive but
answering nothing (a deadlock, a stuck call, a stopped or swapped-out process), never does, so
its count holds only what this caller sent it since. It soon looks *less* busy than the live
replicas and draws new requests, and a request resent after a timeout may be sent straight back
to it: each one waits out the caller's timeout for nothing.

:class:`PassOverHung` routes as Serve does (two replicas drawn at random, locality first, the
one with fewer requests in flight), except that a replica that owes this caller an answer and
has given none for :data:`HUNG_AFTER_S` seconds is *passed over*: it is ranked after every other
replica, so it is chosen only when none of them can take the request, and it is asked for its
queue length in the background (at most once a second). The first answer from it, to that probe
or to a request, and it is routed to again. Every ``lexir serve --backend ray`` deployment uses
it (``request_router_config``), so a front passes over a hung shard replica as the ingress
passes over a hung front.

Imports ``ray.serve``: loaded only where Ray Serve is installed (``pip install 'lexir[ray]'``).
"""

from __future__ import annotations

import asyncio
import random
import time

from ray.serve.request_router import (
    FIFOMixin,
    LocalityMixin,
    PendingRequest,
    ReplicaID,
    RequestRouter,
    RunningReplica,
)

# Seconds a replica may owe an answer and give none before it is passed over: Serve's own
# limit for a replica's answer to a queue-length probe (RAY_SERVE_MAX_QUEUE_LENGTH_RESPONSE_
# DEADLINE_S, 1 s); a live replica accepts a request within milliseconds.
HUNG_AFTER_S = 1.0
# Seconds between two probes of a replica that is passed over, and how long one may wait.
PROBE_EVERY_S = 1.0


class PassOverHung(FIFOMixin, LocalityMixin, RequestRouter):
    """Power of two choices over the replicas that answer; those that have stopped answering
    after every other (see the module)."""

    def initialize_state(self, hung_after_s: float = HUNG_AFTER_S, probe_every_s: float = PROBE_EVERY_S,
                         **kwargs) -> None:
        """Serve calls it once the router is made, with ``request_router_kwargs``."""
        self.hung_after_s, self.probe_every_s = float(hung_after_s), float(probe_every_s)
        self._owed: dict[ReplicaID, int] = {}  # requests sent, not yet accepted or refused
        self._heard: dict[ReplicaID, float] = {}  # when it last answered (or first owed one)
        self._probed: dict[ReplicaID, float] = {}
        self._probes: set[asyncio.Task] = set()

    def hung(self, replica_id: ReplicaID, now: float | None = None) -> bool:
        """Whether ``replica_id`` owes an answer and has given none for ``hung_after_s``."""
        if not self._owed.get(replica_id):
            return False
        now = time.monotonic() if now is None else now
        return now - self._heard.get(replica_id, now) > self.hung_after_s

    def on_send_request(self, replica_id: ReplicaID) -> None:
        super().on_send_request(replica_id)
        if not self._owed.get(replica_id):
            self._heard[replica_id] = time.monotonic()
        self._owed[replica_id] = self._owed.get(replica_id, 0) + 1

    def on_new_queue_len_info(self, replica_id: ReplicaID, num_ongoing_requests: int) -> None:
        super().on_new_queue_len_info(replica_id, num_ongoing_requests)
        self._answered(replica_id, settled=1)

    def _answered(self, replica_id: ReplicaID, settled: int | None) -> None:
        """``replica_id`` answered: ``settled`` of the requests it owed are settled (None: all)."""
        owed = self._owed.get(replica_id, 0)
        self._owed[replica_id] = 0 if settled is None else max(0, owed - settled)
        self._heard[replica_id] = time.monotonic()

    def update_replicas(self, replicas: list[RunningReplica]) -> None:
        super().update_replicas(replicas)
        live = {r.replica_id for r in replicas}
        for table in (self._owed, self._heard, self._probed):
            for gone in [r for r in table if r not in live]:
                del table[gone]

    async def choose_replicas(self, candidate_replicas: list[RunningReplica],
                              pending_request: PendingRequest | None = None) -> list[list[RunningReplica]]:
        """Two replicas drawn at random among those that answer (Serve then takes the one with
        fewer requests in flight), the ones passed over as a last rank, probed meanwhile."""
        now, replicas = time.monotonic(), self.curr_replicas
        passed = [r for i, r in replicas.items() if self.hung(i, now)]
        skip = {r.replica_id for r in passed}
        # Serve's locality first (this node, then this zone, then all); a nearby replica that is
        # passed over does not keep the request from a live one further off.
        for ids in (self.apply_locality_routing(pending_request=pending_request), replicas):
            answering = [replicas[i] for i in ids if i in replicas and i not in skip]
            if answering:
                break
        for replica in passed:
            self._probe(replica, now)
        ranks = [random.sample(answering, min(2, len(answering))), random.sample(passed, min(2, len(passed)))]
        return [rank for rank in ranks if rank]

    def _probe(self, replica: RunningReplica, now: float) -> None:
        """Ask a passed-over replica its queue length in the background (once every
        ``probe_every_s`` at most): an answer ends its passing over."""
        if now - self._probed.get(replica.replica_id, -self.probe_every_s) < self.probe_every_s:
            return
        self._probed[replica.replica_id] = now

        async def ask() -> None:
            try:
                await asyncio.wait_for(replica.get_queue_len(deadline_s=self.probe_every_s), self.probe_every_s)
            except Exception:  # noqa: BLE001 - no answer (or a dead replica: Serve drops it): still passed over
                return
            self._answered(replica.replica_id, settled=None)

        task = asyncio.get_running_loop().create_task(ask())
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)
