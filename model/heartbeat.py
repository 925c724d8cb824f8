"""BrokerHeartbeat, leases and their expiry, controlled shutdown, LowestAcknowledgedOffset
(LEASE-3 to LEASE-13, SHUT-1 to SHUT-4, LAO-1, LAO-2)."""

from __future__ import annotations

from attrs import evolve

from kraftspec.spec.profiles import Profile

from .decision import Decision
from .errors import Error
from .messages import BrokerHeartbeatRequest, BrokerHeartbeatResponse, carries, error_response
from .partitions import enter_controlled_shutdown, fence_broker, unfence_broker
from .records import Record
from .replay import replay_all
from .rules import cite, reject
from .sessions import SessionTable
from .state import Config, ControllerState, Lease, MetadataImage, lapsed, replace

SUPPORTED_HEARTBEAT_VERSIONS = (0, 1)  # RPC-1


def has_applied(lease: Lease, offset: int, config: Config) -> bool:
    """DEC-2: the broker's recorded CurrentMetadataOffset says it has applied the record at
    ``offset``. In the kip-631 profile the field is one more than the highest offset applied; in
    the kafka profile it is the highest offset applied (the profile's ``heartbeat_offset``)."""
    if config.params.heartbeat_offset == "next-offset":
        return lease.metadata_offset > offset
    return lease.metadata_offset >= offset


def is_caught_up(lease: Lease, registration_offset: int, config: Config) -> bool:
    """LEASE-9: the broker has applied its own RegisterBrokerRecord, at ``registration_offset`` (DEC-3)."""
    cite("LEASE-9")
    return has_applied(lease, registration_offset, config)


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
    lao = None  # DEC-9: only seed 004's version 1 response has the field; Kafka's has none
    if reports_lowest_acknowledged_offset(state.config.params, request.version):
        lao = lowest_acknowledged_offset(image, leases, state.committed_offset)
    return BrokerHeartbeatResponse(
        Error.NONE,
        is_caught_up=is_caught_up(leases[request.broker_id], state.registration_offset(request.broker_id), state.config),
        is_fenced=registration.fenced,
        should_shut_down=should_shut_down,
        lowest_acknowledged_offset=lao,
    )


def handle_broker_heartbeat(state: ControllerState, request: BrokerHeartbeatRequest) -> Decision:
    cite("LEASE-2")
    if request.version not in SUPPORTED_HEARTBEAT_VERSIONS:
        reject("RPC-2")
        response = error_response(evolve(request, version=0), Error.UNSUPPORTED_VERSION, state.config.params.rpc_formats)
        return Decision(response=response, refused_by="RPC-2")
    sessions = record_session(state, request)
    registration = state.image.brokers.get(request.broker_id)
    if registration is None:
        return _refuse("LEASE-3", state, request, Error.STALE_BROKER_EPOCH, sessions)  # DEC-15: Kafka's code (the seeds name none)
    if request.broker_epoch != registration.epoch:
        return _refuse("LEASE-4", state, request, Error.STALE_BROKER_EPOCH, sessions)  # not contact: renews no lease
    if request.current_metadata_offset < 0 and state.config.params.heartbeat_offset == "next-offset":
        # DEC-2: a broker that applied nothing sends 0 (the kafka profile takes any value)
        return _refuse("LEASE-5", state, request, Error.INVALID_REQUEST, sessions)
    lease = state.leases[request.broker_id]
    if request.current_metadata_offset < lease.metadata_offset:
        cite("LEASE-6")  # DEC-13: recorded as sent, like any other

    cite("LEASE-7")
    lease = replace(lease, last_contact_ms=state.now_ms, metadata_offset=request.current_metadata_offset)
    leases = {**state.leases, request.broker_id: lease}
    records, leases, should_shut_down = _transition(state, request, leases)
    # REG-4, DEC-6: a broker answered ShouldShutDown gives its id up; any other answer is contact that claims it
    leases = {**leases, request.broker_id: replace(leases[request.broker_id], released=should_shut_down)}
    image = replay_all(state.image, records)
    response = _status(state, request, image, leases, should_shut_down)
    return Decision(records=tuple(records), response=response, leases=leases, sessions=sessions)


def record_session(state: ControllerState, request: BrokerHeartbeatRequest) -> SessionTable | None:
    """DEC-25, kafka profile: Kafka records every heartbeat in its session table before it looks
    at the request, under the broker id and epoch the request names, registered or not, current
    or not (LEASE-7: only the current registration's lease is renewed). None in the kip-631
    profile, which keeps no such table."""
    if state.config.params.lease_expiry != "hash-map-scan":
        return None
    return state.sessions.touched(request.broker_id, request.broker_epoch, state.now_ms)


def _refuse(
    rule: str, state: ControllerState, request: BrokerHeartbeatRequest, error: Error, sessions: SessionTable | None
) -> Decision:
    """A refused heartbeat: nothing changes but Kafka's session table (DEC-25, kafka profile); the
    response has the schema's defaults (LEASE-2), so a version 1 response of seed 004's says
    LowestAcknowledgedOffset = -1 (LAO-2)."""
    reject(rule)
    formats = state.config.params.rpc_formats
    if reports_lowest_acknowledged_offset(state.config.params, request.version):
        cite("LAO-2")
    return Decision(response=error_response(request, error, formats), refused_by=rule, sessions=sessions)


def reports_lowest_acknowledged_offset(params: Profile, version: int) -> bool:
    """LAO-1, DEC-9: whether a heartbeat response at ``version`` carries LowestAcknowledgedOffset
    in the profile's message formats: seed 004's version 1 does, version 0 and Kafka's do not."""
    return carries("BrokerHeartbeatResponse", "LowestAcknowledgedOffset", version, params.rpc_formats)


def _transition(
    state: ControllerState, request: BrokerHeartbeatRequest, leases: dict[int, Lease]
) -> tuple[list[Record], dict[int, Lease], bool]:
    """The membership change an accepted heartbeat asks for: records, leases, ShouldShutDown."""
    broker_id = request.broker_id
    image, params = state.image, state.config.params
    fenced = image.brokers[broker_id].fenced
    in_shutdown = leases[broker_id].in_controlled_shutdown  # SHUT-1: sticky

    if not fenced and in_shutdown:
        return _shutdown_progress(state, leases, broker_id)  # SHUT-1: until let go, WantFence aside
    if not fenced and request.want_fence:
        cite("LEASE-12")
        records, leases = fence_broker(image, leases, broker_id, params)
        if request.want_shut_down:
            cite("SHUT-4")  # fenced now, it leads nothing
        return records, leases, request.want_shut_down
    if not fenced and request.want_shut_down:
        return _controlled_shutdown(state, leases, broker_id)
    if not fenced:
        cite("LEASE-13")
        return [], leases, False
    if request.want_shut_down:
        cite("SHUT-4")  # DEC-14: the fencing batch again, as Kafka writes it
        return _grant(image, leases, broker_id, params)
    if not request.want_fence and is_caught_up(leases[broker_id], state.registration_offset(broker_id), state.config):
        cite("LEASE-10")  # DEC-1: WantFence is the prose's ShouldFence
        return unfence_broker(image, leases, broker_id, params), leases, False
    cite("LEASE-11")
    return [], leases, False


def _controlled_shutdown(
    state: ControllerState, leases: dict[int, Lease], broker_id: int
) -> tuple[list[Record], dict[int, Lease], bool]:
    """SHUT-1 to SHUT-3 for an unfenced broker that asks to shut down (DEC-14)."""
    cite("SHUT-1")
    image, params = state.image, state.config.params
    if params.shutdown_grant == "after-active-brokers-catch-up" and not image.leads_any(broker_id):
        cite("SHUT-3")  # kafka profile: a broker that leads nothing is let go at once
        return _grant(image, leases, broker_id, params)
    leases = {**leases, broker_id: replace(leases[broker_id], in_controlled_shutdown=True)}
    records = enter_controlled_shutdown(image, leases, broker_id, params)  # SHUT-2; SHUT-5: ineligible from now on
    if params.shutdown_grant == "when-leading-nothing":
        cite("SHUT-3")  # every leadership moved or given up: it leads nothing, so it is let go now
        fencing, leases, granted = _grant(replay_all(image, records), leases, broker_id, params)
        return [*records, *fencing], leases, granted
    cite("SHUT-3")  # kafka profile: let go once every active broker has applied these records
    shutdown_offset = state.log_end_offset + len(records) - 1
    leases = {**leases, broker_id: replace(leases[broker_id], shutdown_offset=shutdown_offset)}
    return records, leases, False


def _shutdown_progress(
    state: ControllerState, leases: dict[int, Lease], broker_id: int
) -> tuple[list[Record], dict[int, Lease], bool]:
    """SHUT-3 on a later heartbeat of a broker in controlled shutdown (kafka profile, DEC-14): it is
    let go when it leads nothing and every active broker (unfenced, not in controlled shutdown) has
    applied the records that began the shutdown, by the offsets recorded before this heartbeat."""
    cite("SHUT-3")
    image, params = state.image, state.config.params
    shutdown_offset = leases[broker_id].shutdown_offset
    caught_up = all(
        has_applied(state.leases[b], shutdown_offset, state.config)
        for b, r in image.brokers.items()
        if not r.fenced and not state.leases[b].in_controlled_shutdown
    )
    if image.leads_any(broker_id) or not caught_up:
        return [], leases, False
    return _grant(image, leases, broker_id, params)


def _grant(
    image: MetadataImage, leases: dict[int, Lease], broker_id: int, params: Profile
) -> tuple[list[Record], dict[int, Lease], bool]:
    """SHUT-6: ShouldShutDown, with the broker fenced in the same batch (PART-6)."""
    cite("SHUT-6")
    fencing, leases = fence_broker(image, leases, broker_id, params)
    return fencing, leases, True


def next_lease_expiry(state: ControllerState) -> int | None:
    """LEASE-8: the unfenced broker whose lease has lapsed at the current time, earliest
    deadline first, then lowest id (DEC-25, kip-631 profile); None when every lease holds."""
    timeout = state.config.session_timeout_ms
    lapsed = [
        (state.leases[b].deadline(timeout), b)
        for b, registration in state.image.brokers.items()
        if not registration.fenced and state.leases[b].lapsed(state.now_ms, state.config)  # DEC-7
    ]
    return min(lapsed)[1] if lapsed else None


def expire_lease(state: ControllerState, broker_id: int) -> Decision:
    """LEASE-8: fence a broker whose lease lapsed (one batch per broker)."""
    cite("LEASE-8")
    records, leases = fence_broker(state.image, state.leases, broker_id, state.config.params)
    return Decision(records=tuple(records), leases=leases)


def scan_delay_ms(config: Config, found: bool) -> int:
    """DEC-25, kafka profile: the time from a scan (or from the controller becoming active) to the
    next: 10 ms after a scan that removed a session, else the session timeout / 8 (at least 1 ms).
    Kafka counts it in nanoseconds from the scan; ticks come in whole milliseconds, so the first
    tick that reaches it is the one at or after the period rounded up."""
    return 10 if found else max(1, -(-config.session_timeout_ms // 8))


def scan_sessions(state: ControllerState) -> tuple[Decision, bool]:
    """LEASE-8, DEC-25, kafka profile: one run of Kafka's scan. The first lapsed session in the
    table's order (DEC-7) is removed. If it is of the broker's current registration, the broker is
    fenced (one batch, PART-6), fenced already or not; a session of an earlier epoch, or of an id
    that is not registered, goes with nothing written. Returns the decision, whose ``sessions`` is
    always set, and whether a session was removed."""
    for session in state.sessions.in_order():
        if not lapsed(session.last_contact_ms, state.now_ms, state.config):
            continue
        sessions = state.sessions.without(session)
        registration = state.image.brokers.get(session.broker_id)
        if registration is None or registration.epoch != session.epoch:
            return Decision(sessions=sessions), True  # the scan is spent on it
        cite("LEASE-8")
        records, leases = fence_broker(state.image, state.leases, session.broker_id, state.config.params)
        return Decision(records=tuple(records), leases=leases, sessions=sessions), True
    return Decision(sessions=state.sessions), False
