"""The lease timing settings the theorems of :mod:`kraftspec.proofs.timing` are about, and their
defaults: plain values, no z3, so that ``kraftspec check-config`` can describe them cheaply."""

from __future__ import annotations

from attrs import frozen

from kraftspec.model.state import DEFAULT_HEARTBEAT_INTERVAL_MS  # h, LEASE-1
from kraftspec.model.state import DEFAULT_SESSION_TIMEOUT_MS  # s, LEASE-1

DEFAULT_MAX_MESSAGE_DELAY_MS = 1500  # d: half a heartbeat interval (see proofs/README.md)
DEFAULT_CLOCK_DRIFT_PPM = 1000  # r = 0.001 (see proofs/README.md)
DEFAULT_SELF_FENCE_TIMEOUT_MS = 25000  # b (see proofs/README.md)


@frozen
class Timing:
    """One configuration's timing settings, in ms (the drift in parts per million).

    ``max_stale_leader_ms`` (M) is how long a deposed leader may go on acting after the controller
    moved its leaderships; ``None`` means the session timeout.
    """

    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    max_message_delay_ms: int = DEFAULT_MAX_MESSAGE_DELAY_MS
    clock_drift_ppm: int = DEFAULT_CLOCK_DRIFT_PPM
    self_fence_timeout_ms: int = DEFAULT_SELF_FENCE_TIMEOUT_MS
    max_stale_leader_ms: int | None = None

    @property
    def stale_leader_ms(self) -> int:
        return self.session_timeout_ms if self.max_stale_leader_ms is None else self.max_stale_leader_ms


