"""Leases: the active controller's soft state about each registered broker (LEASE-7, LEASE-8,
SHUT-1, LAO-1). Never logged; rebuilt with a fresh session for everyone at a failover (LEASE-14).

Deadlines are ``last_contact + session timeout`` and contact times never go back, so
deadlines arrive in order: a FIFO queue holds them, finding the next expiry costs O(1), and an
entry made stale by later contact is dropped when it reaches the head. Contact at the time of the
last adds nothing to it (the lease's deadline is queued already). The lowest acknowledged
offset (LAO-1) is a min-heap of (offset, broker, version) entries over unfenced brokers, made
stale the same way.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque

from .sessions import SessionTable


class Lease:
    __slots__ = ("last_contact_ms", "metadata_offset", "in_controlled_shutdown", "released", "shutdown_offset", "version")

    def __init__(self, now_ms: int) -> None:
        self.last_contact_ms = now_ms
        self.metadata_offset = -1
        self.in_controlled_shutdown = False
        self.released = False  # REG-4, DEC-6: the incarnation holds no claim on its id
        self.shutdown_offset = -1  # SHUT-3, DEC-14 (kafka profile): the last offset of the shutdown's batch
        self.version = 0  # changed whenever this broker's LAO entry goes stale; unique across leases


class LeaseManager:
    __slots__ = (
        "session_timeout_ms", "lapse_margin", "leases", "deadlines", "acknowledged", "unfenced", "_versions",
        "sessions", "next_scan_ms",
    )

    def __init__(
        self, session_timeout_ms: int, lapses_after_deadline: bool = False, scanned: bool = False, now_ms: int = 0
    ) -> None:
        self.session_timeout_ms = session_timeout_ms
        # DEC-7: a lease lapses at its deadline (kip-631), or a millisecond after it (kafka)
        self.lapse_margin = 1 if lapses_after_deadline else 0
        # DEC-25, kafka profile: Kafka's sessions per (broker id, epoch) and its periodic scan, the
        # first a scan period after this controller became active; None and unused in kip-631
        self.sessions = SessionTable() if scanned else None
        self.next_scan_ms = now_ms + self.scan_delay_ms(found=False)
        self.leases: dict[int, Lease] = {}
        self.deadlines: deque[tuple[int, int]] = deque()  # (deadline, broker), in deadline order
        self.acknowledged: list[tuple[int, int, int]] = []  # heap of (offset, broker, version)
        self.unfenced: set[int] = set()
        # one counter for every lease, so that an entry left by an earlier lease of the same broker
        # (before it was unregistered and registered again) can never pass for a current one
        self._versions = itertools.count(1)

    def start(self, broker_id: int, now_ms: int, fenced: bool) -> Lease:
        """A fresh lease: a new registration (LEASE-7) or a new active controller (LEASE-14)."""
        lease = Lease(now_ms)
        lease.version = next(self._versions)
        self.leases[broker_id] = lease
        self.deadlines.append((now_ms + self.session_timeout_ms, broker_id))
        self.set_fenced(broker_id, fenced)
        return lease

    def remove(self, broker_id: int) -> None:
        self.leases.pop(broker_id, None)
        self.unfenced.discard(broker_id)

    def touch(self, broker_id: int, now_ms: int, metadata_offset: int | None = None) -> Lease:
        """LEASE-7: contact at ``now_ms``, with the offset a heartbeat reports (if any)."""
        lease = self.leases[broker_id]
        if now_ms != lease.last_contact_ms:  # else its deadline is queued already
            lease.last_contact_ms = now_ms
            self.deadlines.append((now_ms + self.session_timeout_ms, broker_id))
        if metadata_offset is not None and metadata_offset != lease.metadata_offset:
            lease.metadata_offset = metadata_offset
            lease.version = next(self._versions)
            if broker_id in self.unfenced:
                heapq.heappush(self.acknowledged, (metadata_offset, broker_id, lease.version))
        return lease

    def set_fenced(self, broker_id: int, fenced: bool) -> None:
        """Follow the registration's fenced flag (called as fence records replay on the active controller)."""
        lease = self.leases.get(broker_id)
        if lease is None:
            return
        if fenced:
            self.unfenced.discard(broker_id)
            lease.version = next(self._versions)
            lease.in_controlled_shutdown = False  # SHUT-1: fencing ends a controlled shutdown
        elif broker_id not in self.unfenced:
            self.unfenced.add(broker_id)
            lease.version = next(self._versions)
            heapq.heappush(self.acknowledged, (lease.metadata_offset, broker_id, lease.version))

    def expired(self, now_ms: int) -> list[int]:
        """LEASE-8: unfenced brokers whose lease has lapsed at ``now_ms`` (DEC-7: at or after the
        deadline, by profile), by deadline then id (DEC-25)."""
        lapsed = []
        deadlines, leases, timeout = self.deadlines, self.leases, self.session_timeout_ms
        while deadlines and deadlines[0][0] + self.lapse_margin <= now_ms:
            deadline, broker_id = deadlines.popleft()
            lease = leases.get(broker_id)
            if lease is None or lease.last_contact_ms + timeout != deadline:
                continue  # a later contact moved the deadline, or the broker is gone
            if broker_id in self.unfenced:
                lapsed.append((deadline, broker_id))
        return [b for _, b in sorted(lapsed)]

    def scan_delay_ms(self, found: bool) -> int:
        """DEC-25, kafka profile: 10 ms after a scan that removed a session, else the session timeout
        / 8 rounded up to whole milliseconds (at least 1)."""
        return 10 if found else max(1, -(-self.session_timeout_ms // 8))

    def pop_lapsed_session(self, now_ms: int) -> tuple[int, int] | None:
        """DEC-25, kafka profile: remove the first lapsed session (DEC-7) in Kafka's map order."""
        assert self.sessions is not None
        return self.sessions.pop_first_lapsed(now_ms - self.session_timeout_ms + 1 - self.lapse_margin)

    def claimed(self, broker_id: int, now_ms: int) -> bool:
        """REG-4: the registration still holds its id: its lease has not lapsed (DEC-7) and it has not
        been released (DEC-6)."""
        lease = self.leases[broker_id]
        return now_ms < lease.last_contact_ms + self.session_timeout_ms + self.lapse_margin and not lease.released

    def lowest_acknowledged_offset(self, committed_offset: int) -> int:
        """LAO-1: the lowest recorded offset among unfenced brokers; the committed offset if none is."""
        heap, leases = self.acknowledged, self.leases
        while heap:
            offset, broker_id, version = heap[0]
            lease = leases.get(broker_id)
            if lease is not None and lease.version == version and broker_id in self.unfenced:
                return offset
            heapq.heappop(heap)
        return committed_offset
