"""BrokerHeartbeat, lease expiry, controlled shutdown, LowestAcknowledgedOffset (LEASE-3 to
LEASE-13, SHUT-1 to SHUT-4, LAO-1, LAO-2). model/heartbeat.py's counterpart.

A heartbeat that changes no membership is a few dictionary lookups: the lease is touched and the
status answered. The leases themselves are soft state, kept apart (leases.py).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kraftspec.spec.schemas import rpc_schema

from .codegen import in_versions
from .errors import Error
from .messages import BrokerHeartbeatResponse
from .errors import Refused
from .partitions import enter_controlled_shutdown, fence_broker, unfence_broker

if TYPE_CHECKING:
    from .controller import Controller

HEARTBEAT_VERSIONS = (0, 1)


def handle_broker_heartbeat(controller: Controller, request, version: int):
    """LEASE-3 to LEASE-13, SHUT-1 to SHUT-4, LAO-1, LAO-2."""
    if version not in HEARTBEAT_VERSIONS:
        return Refused("RPC-2", BrokerHeartbeatResponse(error_code=Error.UNSUPPORTED_VERSION))
    broker_id = request.broker_id
    leases = controller.leases
    sessions = leases.sessions
    if sessions is not None:  # DEC-25, kafka profile: every heartbeat, before any check, under the epoch it names
        sessions.touch(broker_id, request.broker_epoch, controller.now_ms)
    registration = controller.state.cluster.brokers.get(broker_id)
    if registration is None:  # LEASE-3, DEC-15
        return Refused("LEASE-3", BrokerHeartbeatResponse(error_code=Error.STALE_BROKER_EPOCH))
    if request.broker_epoch != registration.epoch:
        return Refused("LEASE-4", BrokerHeartbeatResponse(error_code=Error.STALE_BROKER_EPOCH))
    offset = request.current_metadata_offset
    next_offset_unit = controller.next_offset_unit  # DEC-2
    if offset < 0 and next_offset_unit:
        return Refused("LEASE-5", BrokerHeartbeatResponse(error_code=Error.INVALID_REQUEST))
    lease = leases.touch(broker_id, controller.now_ms, offset)  # LEASE-6, LEASE-7: recorded as sent
    should_shut_down = False
    if not registration.fenced:
        if lease.in_controlled_shutdown:
            should_shut_down = shutdown_progress(controller, broker_id)
        elif request.want_fence:
            fence_broker(controller, broker_id)  # LEASE-12
            should_shut_down = request.want_shut_down
        elif request.want_shut_down:
            should_shut_down = controlled_shutdown(controller, broker_id)
    elif request.want_shut_down:  # SHUT-4
        should_shut_down = True
        fence_broker(controller, broker_id)  # DEC-14: the fencing batch again, as Kafka writes it
    elif not request.want_fence and has_applied(controller, offset, controller.state.cluster.record_offset(registration)):
        unfence_broker(controller, broker_id)  # LEASE-10, LEASE-9
    lease.released = should_shut_down  # REG-4, DEC-6: a broker let go gives its id up; other contact claims it
    return _status(controller, registration, lease, version, should_shut_down)


def has_applied(controller: Controller, recorded: int, offset: int) -> bool:
    """DEC-2: a recorded CurrentMetadataOffset says the record at ``offset`` is applied (one more
    than the highest applied in the kip-631 profile, the highest applied in the kafka profile)."""
    return recorded > offset if controller.next_offset_unit else recorded >= offset


def _status(controller: Controller, registration, lease, version: int, should_shut_down: bool):
    is_caught_up = has_applied(controller, lease.metadata_offset, controller.state.cluster.record_offset(registration))  # LEASE-9
    if version not in controller.lao_versions:  # LAO-1, DEC-9: a response without LowestAcknowledgedOffset
        return status_response(is_caught_up, registration.fenced, should_shut_down)
    return BrokerHeartbeatResponse.make(
        error_code=Error.NONE,
        is_caught_up=is_caught_up,
        is_fenced=registration.fenced,
        should_shut_down=should_shut_down,
        lowest_acknowledged_offset=controller.leases.lowest_acknowledged_offset(controller.committed_offset),
    )


@functools.lru_cache(maxsize=None, typed=True)
def status_response(is_caught_up: bool, is_fenced: bool, should_shut_down: bool):
    """An accepted heartbeat's response without LowestAcknowledgedOffset (-1). A response is never
    changed once built, and there are only a few such: each is one object, built once."""
    return BrokerHeartbeatResponse(
        error_code=Error.NONE,
        is_caught_up=is_caught_up,
        is_fenced=is_fenced,
        should_shut_down=should_shut_down,
        lowest_acknowledged_offset=-1,
    )


def lowest_acknowledged_offset_versions(formats: str) -> tuple[int, ...]:
    """LAO-1, DEC-9: the heartbeat versions whose response, in the message formats ``formats``, has
    LowestAcknowledgedOffset (seed 004's version 1; version 0 and Kafka's have not)."""
    fields = rpc_schema("BrokerHeartbeatResponse", formats)["fields"]
    return tuple(version for version in HEARTBEAT_VERSIONS
                 if any(f["name"] == "LowestAcknowledgedOffset" and in_versions(f["versions"], version) for f in fields))


def controlled_shutdown(controller: Controller, broker_id: int) -> bool:
    """SHUT-1 to SHUT-3 for an unfenced broker that asks to shut down; returns ShouldShutDown (DEC-14)."""
    params = controller.config.params
    if params.shutdown_grant == "after-active-brokers-catch-up" and not controller.state.replication.leads_any(broker_id):
        fence_broker(controller, broker_id)  # kafka profile: leading nothing, it is let go at once
        return True
    enter_controlled_shutdown(controller, broker_id)
    if params.shutdown_grant == "when-leading-nothing":
        fence_broker(controller, broker_id)  # every leadership moved or given up: let go now
        return True
    # kafka profile: let go once every active broker has applied the records of this batch
    controller.leases.leases[broker_id].shutdown_offset = controller.log_end_offset + controller.batch_size() - 1
    return False


def shutdown_progress(controller: Controller, broker_id: int) -> bool:
    """SHUT-3 on a later heartbeat of a broker in controlled shutdown (kafka profile): let go when it
    leads nothing and every active broker (unfenced, not shutting down) has applied the shutdown's
    batch."""
    leases = controller.leases.leases
    target = leases[broker_id].shutdown_offset
    for b in controller.leases.unfenced:
        lease = leases[b]
        if not lease.in_controlled_shutdown and not has_applied(controller, lease.metadata_offset, target):
            return False
    if controller.state.replication.leads_any(broker_id):
        return False
    fence_broker(controller, broker_id)
    return True


def scan_sessions(controller: Controller) -> bool:
    """LEASE-8, DEC-25, kafka profile: one run of Kafka's scan: the first lapsed session goes; its
    broker is fenced if the session is of its current registration, fenced already or not. Returns
    whether a session went."""
    found = controller.leases.pop_lapsed_session(controller.now_ms)
    if found is None:
        return False
    broker_id, epoch = found
    registration = controller.state.cluster.brokers.get(broker_id)
    if registration is not None and registration.epoch == epoch:
        fence_broker(controller, broker_id)
    return True


def lapsed_brokers(controller: Controller, now_ms: int) -> Iterator[int]:
    """LEASE-8: the brokers whose lease has lapsed at ``now_ms``, by deadline then id, each
    checked as it comes (after the fencing of the one before it) to be still active."""
    for broker_id in controller.leases.expired(now_ms):
        if controller.state.cluster.is_active(broker_id):
            yield broker_id
