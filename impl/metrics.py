"""The active controller's metrics (spec/operations.md, METRIC-1 to METRIC-6).

:class:`ControllerMetrics` is told by the controller when it appends a batch, commits, truncates
at a failover and takes a snapshot, each at the controller's own time (``now_ms``, from ticks:
never the wall clock). Every notice costs O(1), amortized: a batch enters the queue of appended
batches once and leaves it once, and a commit enters the rate's window once and leaves it once.
The counts of brokers and partitions are read from the controller's state when asked
(:meth:`ControllerMetrics.values`), not kept on the hot path.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .controller import Controller

RATE_WINDOW_MS = 60_000  # METRIC-3: a one-minute rate of the controller's clock


class ControllerMetrics:
    """Commit latency and rate (METRIC-2, METRIC-3) as they happen, and the snapshot's offset (METRIC-4)."""

    __slots__ = ("appended", "recent", "recent_records", "observations", "latency_sum_ms", "latest_latency_ms",
                 "committed_records", "snapshot_offset")

    def __init__(self, snapshot_offset: int | None = None) -> None:
        self.appended: deque[tuple[int, int, int]] = deque()  # (base offset, end offset, time appended), uncommitted
        self.recent: deque[tuple[int, int]] = deque()  # (time committed, records) within the rate's window
        self.recent_records = 0
        self.observations = 0
        self.latency_sum_ms = 0
        self.latest_latency_ms: int | None = None
        self.committed_records = 0
        self.snapshot_offset = snapshot_offset  # the latest snapshot's end offset, None without one

    def appended_batch(self, base_offset: int, end_offset: int, now_ms: int) -> None:
        self.appended.append((base_offset, end_offset, now_ms))

    def committed(self, offset: int, now_ms: int) -> None:
        """The committed offset is now ``offset``: every batch it covers committed at ``now_ms``."""
        appended = self.appended
        if not appended or appended[0][1] > offset:
            return
        records = 0
        while appended and appended[0][1] <= offset:
            base, end, at = appended.popleft()
            records += end - base
            latency = now_ms - at
            self.observations += 1
            self.latency_sum_ms += latency
            self.latest_latency_ms = latency
        self.committed_records += records
        recent = self.recent
        if recent and recent[-1][0] == now_ms:  # commits of the same millisecond count together
            recent[-1] = (now_ms, recent[-1][1] + records)
        else:
            recent.append((now_ms, records))
        self.recent_records += records
        if recent[0][0] <= now_ms - RATE_WINDOW_MS:
            self._expire(now_ms)

    def truncated(self, end_offset: int) -> None:
        """A failover undid every batch past ``end_offset`` (LOG-10)."""
        appended = self.appended
        while appended and appended[-1][1] > end_offset:
            appended.pop()

    def snapshot_taken(self, end_offset: int) -> None:
        self.snapshot_offset = end_offset

    def _expire(self, now_ms: int) -> None:
        recent, oldest = self.recent, now_ms - RATE_WINDOW_MS
        while recent and recent[0][0] <= oldest:
            self.recent_records -= recent.popleft()[1]

    def commit_rate_per_sec(self, now_ms: int) -> float:
        self._expire(now_ms)
        return self.recent_records * 1000 / RATE_WINDOW_MS

    def values(self, controller: Controller) -> dict[str, int | float | None]:
        """Every metric of ``controller`` now, under the names model/metrics.py's Metrics gives them."""
        brokers = controller.state.cluster.brokers
        fenced = sum(1 for registration in brokers.values() if registration.fenced)
        replication = controller.state.replication
        partitions = sum(len(topic.partitions) for topic in replication.topics.values())
        led = sum(replication.leaderships.values())
        committed = controller.committed_offset
        return {
            "metadata_lag": controller.log_end_offset - committed,
            "metadata_commit_latency_ms_count": self.observations,
            "metadata_commit_latency_ms_sum": self.latency_sum_ms,
            "metadata_commit_latency_ms_latest": self.latest_latency_ms,
            "metadata_commit_rate_per_sec": self.commit_rate_per_sec(controller.now_ms),
            "metadata_committed_records": self.committed_records,
            "metadata_snapshot_offset_lag": committed - (self.snapshot_offset or 0),
            "registered_brokers": len(brokers),
            "fenced_brokers": fenced,
            "active_brokers": len(brokers) - fenced,
            "leaderless_partitions": partitions - led,
        }


__all__ = ["ControllerMetrics", "RATE_WINDOW_MS"]
