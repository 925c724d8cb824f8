"""BrokerHeartbeat, lease expiry, controlled shutdown, LowestAcknowledgedOffset (LEASE-3 to
LEASE-13, SHUT-1 to SHUT-4, LAO-1, LAO-2). model/heartbeat.py's counterpart.

A heartbeat that changes no membership is a few dictionary lookups: the lease is touched and the
status answered. The leases themselves are soft state, kept apart (leases.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .errors import Error
from .messages import BrokerHeartbeatResponse
from .partitions import fence_broker, move_leaderships, unfence_broker

if TYPE_CHECKING:
    from .controller import Controller

HEARTBEAT_VERSIONS = (0, 1)


def handle_broker_heartbeat(controller: Controller, request, version: int):
    """LEASE-3 to LEASE-13, SHUT-1 to SHUT-4, LAO-1, LAO-2."""
    if version not in HEARTBEAT_VERSIONS:
        return BrokerHeartbeatResponse(error_code=Error.UNSUPPORTED_VERSION)
    broker_id = request.broker_id
    registration = controller.state.cluster.brokers.get(broker_id)
    if registration is None:
        return BrokerHeartbeatResponse(error_code=Error.BROKER_ID_NOT_REGISTERED)
    if request.broker_epoch != registration.epoch:
        return BrokerHeartbeatResponse(error_code=Error.STALE_BROKER_EPOCH)
    offset = request.current_metadata_offset
    if offset < 0:
        return BrokerHeartbeatResponse(error_code=Error.INVALID_REQUEST)
    leases = controller.leases
    lease = leases.leases[broker_id]
    if offset < lease.metadata_offset:  # LEASE-6: a late copy, answered and otherwise ignored
        return _status(controller, registration, lease, version, False)
    leases.touch(broker_id, controller.now_ms, offset)
    should_shut_down = False
    if not registration.fenced:
        if request.want_fence:
            wants_shutdown = request.want_shut_down or lease.in_controlled_shutdown
            fence_broker(controller, broker_id)
            should_shut_down = wants_shutdown
        elif request.want_shut_down or lease.in_controlled_shutdown:
            should_shut_down = controlled_shutdown(controller, broker_id)
    elif request.want_shut_down:
        should_shut_down = True
    elif not request.want_fence and offset > registration.epoch:
        unfence_broker(controller, broker_id)
    lease.shutdown_granted = should_shut_down  # REG-4: a broker let go gives its id up
    return _status(controller, registration, lease, version, should_shut_down)


def _status(controller: Controller, registration, lease, version: int, should_shut_down: bool):
    return BrokerHeartbeatResponse(
        error_code=Error.NONE,
        is_caught_up=lease.metadata_offset > registration.epoch,
        is_fenced=registration.fenced,
        should_shut_down=should_shut_down,
        lowest_acknowledged_offset=controller.leases.lowest_acknowledged_offset(controller.committed_offset) if version >= 1 else -1,
    )


def controlled_shutdown(controller: Controller, broker_id: int) -> bool:
    """SHUT-1 to SHUT-3; returns ShouldShutDown."""
    controller.leases.leases[broker_id].in_controlled_shutdown = True
    move_leaderships(controller, broker_id)
    if controller.state.replication.leads_any(broker_id):
        return False
    fence_broker(controller, broker_id)
    return True


def lapsed_brokers(controller: Controller, now_ms: int) -> Iterator[int]:
    """LEASE-8: the brokers whose lease has lapsed at ``now_ms``, by deadline then id, each
    checked as it comes (after the fencing of the one before it) to be still active."""
    for broker_id in controller.leases.expired(now_ms):
        if controller.state.cluster.is_active(broker_id):
            yield broker_id
