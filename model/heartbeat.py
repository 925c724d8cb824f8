"""BrokerHeartbeat, leases and their expiry, controlled shutdown, LowestAcknowledgedOffset
(LEASE-3 to LEASE-13, SHUT-1 to SHUT-4, LAO-1, LAO-2)."""

from __future__ import annotations

from attrs import evolve

from .decision import Decision
from .errors import Error
from .messages import BrokerHeartbeatRequest, BrokerHeartbeatResponse, error_response
from .partitions import fence_broker, move_leaderships, unfence_broker
from .records import Record
from .replay import replay_all
from .rules import cite, reject
from .state import ControllerState, Lease, MetadataImage, replace

SUPPORTED_HEARTBEAT_VERSIONS = (0, 1)  # RPC-1


def is_caught_up(lease: Lease, epoch: int) -> bool:
    """LEASE-9: the broker has applied its own RegisterBrokerRecord, whose offset is its epoch (DEC-3)."""
    cite("LEASE-9")
    return lease.metadata_offset > epoch


def lowest_acknowledged_offset(image: MetadataImage, leases: dict[int, Lease], committed_offset: int) -> int:
    """LAO-1: the lowest offset recorded for an unfenced broker; the committed offset if none is (DEC-27)."""
    cite("LAO-1")
    offsets = [leases[b].metadata_offset for b, r in image.brokers.items() if not r.fenced]
    return min(offsets) if offsets else committed_offset


def _status(
    state: ControllerState,
    request: BrokerHeartbeatRequest,
    image: MetadataImage,
    leases: dict[int, Lease],
    should_shut_down: bool,
) -> BrokerHeartbeatResponse:
    """The successful response, describing ``image`` and ``leases`` after the heartbeat."""
    registration = image.brokers[request.broker_id]
    lao = lowest_acknowledged_offset(image, leases, state.committed_offset) if request.version >= 1 else None
    return BrokerHeartbeatResponse(
        Error.NONE,
        is_caught_up=is_caught_up(leases[request.broker_id], registration.epoch),
        is_fenced=registration.fenced,
        should_shut_down=should_shut_down,
        lowest_acknowledged_offset=lao,
    )


def handle_broker_heartbeat(state: ControllerState, request: BrokerHeartbeatRequest) -> Decision:
    cite("LEASE-2")
    if request.version not in SUPPORTED_HEARTBEAT_VERSIONS:
        reject("RPC-2")
        return Decision(response=error_response(evolve(request, version=0), Error.UNSUPPORTED_VERSION))
    registration = state.image.brokers.get(request.broker_id)
    if registration is None:
        reject("LEASE-3")  # DEC-15
        return Decision(response=error_response(request, Error.BROKER_ID_NOT_REGISTERED))
    if request.broker_epoch != registration.epoch:
        reject("LEASE-4")  # not contact: renews nothing
        return Decision(response=error_response(request, Error.STALE_BROKER_EPOCH))
    if request.current_metadata_offset < 0:
        reject("LEASE-5")  # DEC-2: a broker that applied nothing sends 0
        return Decision(response=error_response(request, Error.INVALID_REQUEST))
    lease = state.leases[request.broker_id]
    if request.current_metadata_offset < lease.metadata_offset:
        cite("LEASE-6")  # DEC-13: a late copy of an older heartbeat; answered, otherwise ignored
        cite("LAO-2")
        return Decision(response=_status(state, request, state.image, state.leases, should_shut_down=False))

    cite("LEASE-7")
    lease = replace(lease, last_contact_ms=state.now_ms, metadata_offset=request.current_metadata_offset)
    leases = {**state.leases, request.broker_id: lease}
    records, leases, should_shut_down = _transition(state, request, leases)
    # REG-4: a broker answered ShouldShutDown gives its id up; any other answer takes it back
    leases = {**leases, request.broker_id: replace(leases[request.broker_id], shutdown_granted=should_shut_down)}
    image = replay_all(state.image, records)
    return Decision(records=tuple(records), response=_status(state, request, image, leases, should_shut_down), leases=leases)


def _transition(
    state: ControllerState, request: BrokerHeartbeatRequest, leases: dict[int, Lease]
) -> tuple[list[Record], dict[int, Lease], bool]:
    """The membership change an accepted heartbeat asks for: records, leases, ShouldShutDown."""
    broker_id = request.broker_id
    image = state.image
    fenced = image.brokers[broker_id].fenced
    wants_shutdown = request.want_shut_down or leases[broker_id].in_controlled_shutdown  # SHUT-1: sticky

    if not fenced and request.want_fence:
        cite("LEASE-12")
        records, leases = fence_broker(image, leases, broker_id)
        if wants_shutdown:
            cite("SHUT-4")  # fenced now, it leads nothing
        return records, leases, wants_shutdown
    if not fenced and wants_shutdown:
        return _controlled_shutdown(image, leases, broker_id)
    if not fenced:
        cite("LEASE-13")
        return [], leases, False
    if request.want_shut_down:
        cite("SHUT-4")
        return [], leases, True
    if not request.want_fence and is_caught_up(leases[broker_id], image.brokers[broker_id].epoch):
        cite("LEASE-10")  # DEC-1: WantFence is the prose's ShouldFence
        return unfence_broker(image, leases, broker_id), leases, False
    cite("LEASE-11")
    return [], leases, False


def _controlled_shutdown(
    image: MetadataImage, leases: dict[int, Lease], broker_id: int
) -> tuple[list[Record], dict[int, Lease], bool]:
    """SHUT-1 to SHUT-3 for an unfenced broker that wants to shut down (DEC-14)."""
    cite("SHUT-1")
    leases = {**leases, broker_id: replace(leases[broker_id], in_controlled_shutdown=True)}
    moves = move_leaderships(image, leases, broker_id)  # SHUT-2; SHUT-5: it is ineligible from now on
    after_moves = replay_all(image, moves)
    if after_moves.leads_any(broker_id):
        cite("SHUT-3")  # still leads something nobody else can take: not yet
        return moves, leases, False
    cite("SHUT-3")  # leads nothing: fenced in the same batch, and told to shut down
    cite("SHUT-6")
    fencing, leases = fence_broker(after_moves, leases, broker_id)
    return [*moves, *fencing], leases, True


def next_lease_expiry(state: ControllerState) -> int | None:
    """LEASE-8: the unfenced broker whose lease has lapsed at the current time, earliest
    deadline first, then lowest id (DEC-25); None when every lease holds."""
    timeout = state.config.session_timeout_ms
    lapsed = [
        (state.leases[b].deadline(timeout), b)
        for b, registration in state.image.brokers.items()
        if not registration.fenced and state.now_ms >= state.leases[b].deadline(timeout)  # DEC-7
    ]
    return min(lapsed)[1] if lapsed else None


def expire_lease(state: ControllerState, broker_id: int) -> Decision:
    """LEASE-8: fence a broker whose lease lapsed (one batch per broker)."""
    cite("LEASE-8")
    records, leases = fence_broker(state.image, state.leases, broker_id)
    return Decision(records=tuple(records), leases=leases)
