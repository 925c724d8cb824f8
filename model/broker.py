"""The broker's own state machine (MEM-3 to MEM-5): what a well-behaved broker sends and
how the controller's responses move it. Not part of the controller: the scenario
generators drive simulated brokers with it, so that the controller sees real traffic.
"""

from __future__ import annotations

from enum import IntEnum
from uuid import UUID

from attrs import frozen

from .errors import Error
from .messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    Feature,
    Listener,
)
from .rules import cite
from .state import replace


class BrokerState(IntEnum):
    """MEM-3: the broker's states, with the values its metrics expose."""

    NOT_RUNNING = 0
    STARTING = 1
    RECOVERY = 2
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7


RUNNING_PROCESS_STATES = (
    BrokerState.STARTING,
    BrokerState.RECOVERY,
    BrokerState.RUNNING,
    BrokerState.PENDING_CONTROLLED_SHUTDOWN,
)


@frozen
class BrokerProcess:
    """One broker id as its process sees itself."""

    broker_id: int
    state: BrokerState = BrokerState.NOT_RUNNING
    incarnation_id: UUID | None = None
    epoch: int = -1  # learned from the registration response; -1 until then
    next_offset: int = 0  # one more than the highest metadata offset applied (DEC-2)
    log_recovery_done: bool = False

    @property
    def registered(self) -> bool:
        return self.epoch >= 0

    @property
    def sends_heartbeats(self) -> bool:
        return self.state in RUNNING_PROCESS_STATES and self.registered


def start(process: BrokerProcess, incarnation_id: UUID) -> BrokerProcess:
    """MEM-5: NOT_RUNNING -> STARTING, as a new incarnation that has applied nothing yet."""
    cite("MEM-5")
    return BrokerProcess(process.broker_id, BrokerState.STARTING, incarnation_id)


def registration_request(
    process: BrokerProcess, cluster_id: str, features: tuple[Feature, ...], rack: str | None = None
) -> BrokerRegistrationRequest:
    """MEM-6: what a starting broker registers with."""
    assert process.incarnation_id is not None, "a process registers after it starts"
    listener = Listener("PLAINTEXT", f"broker-{process.broker_id}.example", 9092, 0)
    return BrokerRegistrationRequest(
        broker_id=process.broker_id,
        cluster_id=cluster_id,
        incarnation_id=process.incarnation_id,
        current_metadata_offset=process.next_offset - 1,  # the registration's offset is the highest applied
        listeners=(listener,),
        features=features,
        rack=rack,
    )


def on_registration_response(process: BrokerProcess, response: BrokerRegistrationResponse) -> BrokerProcess:
    """MEM-5: a successful registration gives the broker its epoch; an error changes nothing."""
    if response.error_code != Error.NONE or process.state not in RUNNING_PROCESS_STATES:
        return process
    return replace(process, epoch=response.broker_epoch)


def heartbeat_request(process: BrokerProcess, version: int = 1, offset_unit: str = "next-offset") -> BrokerHeartbeatRequest:
    """MEM-4: the flags a broker sends in its state, and its offset in the profile's unit
    (``heartbeat_offset``, DEC-2): one more than the highest offset applied, or the highest applied."""
    cite("MEM-4")
    want_fence = process.state == BrokerState.STARTING or (
        process.state == BrokerState.RECOVERY and not process.log_recovery_done
    )
    want_shut_down = process.state == BrokerState.PENDING_CONTROLLED_SHUTDOWN
    return BrokerHeartbeatRequest(
        broker_id=process.broker_id,
        broker_epoch=process.epoch,
        current_metadata_offset=process.next_offset if offset_unit == "next-offset" else process.next_offset - 1,
        want_fence=want_fence and not want_shut_down,
        want_shut_down=want_shut_down,
        version=version,
    )


def on_heartbeat_response(process: BrokerProcess, response: BrokerHeartbeatResponse) -> BrokerProcess:
    """MEM-5: IsCaughtUp moves STARTING on, not IsFenced moves RECOVERY on, ShouldShutDown
    lets a pending shutdown proceed. An error response changes nothing."""
    cite("MEM-5")
    if response.error_code != Error.NONE:
        return process
    if process.state == BrokerState.STARTING and response.is_caught_up:
        return replace(process, state=BrokerState.RECOVERY)
    if process.state == BrokerState.RECOVERY and not response.is_fenced:
        return replace(process, state=BrokerState.RUNNING)
    if process.state == BrokerState.PENDING_CONTROLLED_SHUTDOWN and response.should_shut_down:
        return replace(process, state=BrokerState.SHUTTING_DOWN)
    return process


def catch_up(process: BrokerProcess, committed_offset: int) -> BrokerProcess:
    """The broker fetches committed metadata, up to ``committed_offset`` (never back)."""
    return replace(process, next_offset=max(process.next_offset, committed_offset))


def finish_log_recovery(process: BrokerProcess) -> BrokerProcess:
    """MEM-4: in RECOVERY, once log recovery is done the broker stops asking to stay fenced."""
    return replace(process, log_recovery_done=True)


def sigterm(process: BrokerProcess) -> BrokerProcess:
    """MEM-5: STARTING, RECOVERY or RUNNING -> PENDING_CONTROLLED_SHUTDOWN."""
    cite("MEM-5")
    if process.state in (BrokerState.STARTING, BrokerState.RECOVERY, BrokerState.RUNNING):
        return replace(process, state=BrokerState.PENDING_CONTROLLED_SHUTDOWN)
    return process


def stop(process: BrokerProcess) -> BrokerProcess:
    """MEM-5: SHUTTING_DOWN exits, and a crash from any state ends in NOT_RUNNING."""
    cite("MEM-5")
    return BrokerProcess(process.broker_id)
