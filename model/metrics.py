"""The active controller's metrics (METRIC-1 to METRIC-6), as pure functions of the model's state.

Four of them are functions of one :class:`ControllerState`. Commit latency and commit rate
(METRIC-2, METRIC-3) also need to know when each batch was appended and when it committed, which
the state does not keep: :class:`CommitClock` is a fold over the controller's steps,
``clock = observe(clock, before, step(before, event))``, started empty when the controller
becomes active. Time is the controller's clock (``now_ms``, LOG-15), never the wall clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attrs import asdict, frozen

from .records import NO_LEADER
from .rules import cite
from .state import ControllerState, MetadataImage

if TYPE_CHECKING:  # the controller imports nothing from here; only the type is named
    from .controller import StepResult

RATE_WINDOW_MS = 60_000
"""METRIC-3: the commit rate counts the commits of the last minute of the controller's clock."""


@frozen
class CommitClock:
    """When the uncommitted batches were appended, and what committed when (METRIC-2, METRIC-3)."""

    appended: tuple[tuple[int, int, int], ...] = ()  # (base offset, end offset, time appended) of uncommitted batches
    recent: tuple[tuple[int, int], ...] = ()  # (time committed, records) of the commits of the rate's window
    observations: int = 0  # batches committed
    latency_sum_ms: int = 0
    latest_latency_ms: int | None = None  # the batch with the highest offset of the latest commit
    committed_records: int = 0  # records committed since the controller became active


@frozen
class Metrics:
    """The values of METRIC-1 to METRIC-6 at one moment."""

    metadata_lag: int
    metadata_commit_latency_ms_count: int
    metadata_commit_latency_ms_sum: int
    metadata_commit_latency_ms_latest: int | None
    metadata_commit_rate_per_sec: float
    metadata_committed_records: int
    metadata_snapshot_offset_lag: int
    registered_brokers: int
    fenced_brokers: int
    active_brokers: int
    leaderless_partitions: int

    def as_dict(self) -> dict[str, int | float | None]:
        return asdict(self)


def metadata_lag(state: ControllerState) -> int:
    """METRIC-1: the records replayed (LOG-5) but not committed (LOG-6)."""
    cite("METRIC-1")
    return state.log_end_offset - state.committed_offset


def observe(clock: CommitClock, before: ControllerState, result: StepResult) -> CommitClock:
    """METRIC-2: the clock after the step from ``before`` that gave ``result``. The step's batches
    were appended at its time; the batches its commit covers committed at its time; a failover's
    truncation (LOG-10) drops the batches it undid."""
    cite("METRIC-2")
    after = result.state
    now = after.now_ms
    appended_now = sum(len(b.records) for b in result.batches)
    log_end_before_appends = after.log_end_offset - appended_now
    waiting = [entry for entry in clock.appended if entry[1] <= log_end_before_appends]  # undone by a failover: gone
    waiting += [(b.base_offset, b.end_offset, now) for b in result.batches]
    committed = [entry for entry in waiting if entry[1] <= after.committed_offset]
    still = tuple(entry for entry in waiting if entry[1] > after.committed_offset)
    recent = tuple(entry for entry in clock.recent if entry[0] > now - RATE_WINDOW_MS)
    if not committed:
        return CommitClock(still, recent, clock.observations, clock.latency_sum_ms, clock.latest_latency_ms,
                           clock.committed_records)
    records = sum(end - base for base, end, _ in committed)
    latencies = [now - at for _, _, at in committed]
    return CommitClock(still, recent + ((now, records),), clock.observations + len(committed),
                       clock.latency_sum_ms + sum(latencies), latencies[-1], clock.committed_records + records)


def commit_rate_per_sec(clock: CommitClock, now_ms: int) -> float:
    """METRIC-3: the records committed in the last RATE_WINDOW_MS of the controller's clock, per second."""
    cite("METRIC-3")
    records = sum(n for at, n in clock.recent if now_ms - RATE_WINDOW_MS < at <= now_ms)
    return records * 1000 / RATE_WINDOW_MS


def snapshot_offset_lag(state: ControllerState) -> int:
    """METRIC-4: the committed offset past the latest snapshot's end, or the committed offset."""
    cite("METRIC-4")
    return state.committed_offset - (state.snapshot.end_offset if state.snapshot is not None else 0)


def broker_counts(image: MetadataImage) -> tuple[int, int, int]:
    """METRIC-5: registered, fenced and active brokers."""
    cite("METRIC-5")
    fenced = sum(1 for b in image.brokers.values() if b.fenced)
    return len(image.brokers), fenced, len(image.brokers) - fenced


def leaderless_partitions(image: MetadataImage) -> int:
    """METRIC-6: the partitions whose leader is -1."""
    cite("METRIC-6")
    return sum(1 for p in image.partitions.values() if p.leader == NO_LEADER)


def metrics_of(state: ControllerState, clock: CommitClock) -> Metrics:
    """Every metric of the active controller in ``state``, with its commit history ``clock``."""
    registered, fenced, active = broker_counts(state.image)
    return Metrics(
        metadata_lag=metadata_lag(state),
        metadata_commit_latency_ms_count=clock.observations,
        metadata_commit_latency_ms_sum=clock.latency_sum_ms,
        metadata_commit_latency_ms_latest=clock.latest_latency_ms,
        metadata_commit_rate_per_sec=commit_rate_per_sec(clock, state.now_ms),
        metadata_committed_records=clock.committed_records,
        metadata_snapshot_offset_lag=snapshot_offset_lag(state),
        registered_brokers=registered,
        fenced_brokers=fenced,
        active_brokers=active,
        leaderless_partitions=leaderless_partitions(state.image),
    )
