"""The events the model handles besides requests: the clock and the Raft quorum (LOG-15,
LOG-6, LOG-10, LOG-11)."""

from __future__ import annotations

from typing import Union

from attrs import frozen

from .messages import Request


@frozen
class Tick:
    """Time passes: the clock reads ``now_ms`` (LOG-15)."""

    now_ms: int


@frozen
class Commit:
    """The quorum has committed the log up to, not including, ``offset`` (LOG-6)."""

    offset: int


@frozen
class Failover:
    """Another controller becomes active (LOG-10)."""


@frozen
class TakeSnapshot:
    """The controller snapshots its committed state (LOG-11)."""


Event = Union[Request, Tick, Commit, Failover, TakeSnapshot]
