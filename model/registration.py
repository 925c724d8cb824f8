"""BrokerRegistration and UnregisterBroker (REG-1 to REG-6, UNREG-1, UNREG-2)."""

from __future__ import annotations


from .decision import Decision
from .errors import Error
from .messages import (
    ZERO_UUID,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from .formats import Registration, formats_of
from .partitions import fence_broker, unregister_broker
from .records import BrokerEndpoint, Record
from .rules import cite, reject
from .state import ControllerState, Lease, replace


def is_malformed(request: BrokerRegistrationRequest) -> bool:
    """REG-1: the structural checks of a registration."""
    listener_names = [listener.name for listener in request.listeners]
    feature_names = [feature.name for feature in request.features]
    return (
        request.broker_id < 0
        or request.incarnation_id == ZERO_UUID
        or request.current_metadata_offset < -1
        or len(set(listener_names)) != len(listener_names)
        or len(set(feature_names)) != len(feature_names)
        or any(f.min_supported_version < 0 or f.min_supported_version > f.max_supported_version for f in request.features)
    )


METADATA_VERSION = "metadata.version"
"""Kafka's feature for the format of the metadata (DEC-23), which it always finalizes."""


def unsupported_features(state: ControllerState, request: BrokerRegistrationRequest) -> Error | None:
    """REG-5: the refusal of a broker whose ranges do not cover every finalized range (DEC-23), or
    None. DEC-15, as Kafka checks: a listed range that misses a finalized range first
    (UNSUPPORTED_VERSION), then a finalized metadata.version the broker does not list
    (INVALID_REGISTRATION), then any other finalized feature it does not list (UNSUPPORTED_VERSION)."""
    supported = {f.name: f for f in request.features}
    finalized = state.image.features
    for feature in finalized.values():
        offered = supported.get(feature.name)
        if offered is not None and not (offered.min_supported_version <= feature.min_level and feature.max_level <= offered.max_supported_version):
            return Error.UNSUPPORTED_VERSION
    if METADATA_VERSION in finalized and METADATA_VERSION not in supported:
        return Error.INVALID_REGISTRATION
    if any(name not in supported for name in finalized):
        return Error.UNSUPPORTED_VERSION
    return None


def handle_broker_registration(state: ControllerState, request: BrokerRegistrationRequest) -> Decision:
    cite("MEM-6")
    # CONF-3, DEC-11: broker ids are not checked against controller ids
    if is_malformed(request):
        reject("REG-1")
        return Decision(response=BrokerRegistrationResponse(Error.INVALID_REQUEST), refused_by="REG-1")
    if request.cluster_id != state.config.cluster_id:
        reject("REG-2")
        return Decision(response=BrokerRegistrationResponse(Error.INVALID_CLUSTER_ID), refused_by="REG-2")

    existing = state.image.brokers.get(request.broker_id)
    params = state.config.params
    contact = params.registration_is_contact  # DEC-6: a registration is contact in kip-631
    retry = existing if existing is not None and existing.incarnation_id == request.incarnation_id else None
    if retry is not None and params.retry_registration == "unchanged":
        cite("REG-3")  # DEC-5: a retry gets the same result and changes nothing but the lease
        return _retried(state, request, retry.epoch, records=())
    if existing is not None and retry is None:
        lease = state.leases[request.broker_id]
        # DEC-6: the old incarnation claims the id, fenced or not, while its lease has not lapsed (DEC-7),
        # unless this controller has not heard from it (LEASE-14)
        if not lease.lapsed(state.now_ms, state.config) and not lease.released:
            reject("REG-4")
            return Decision(response=BrokerRegistrationResponse(Error.DUPLICATE_BROKER_REGISTRATION), refused_by="REG-4")
    refusal = unsupported_features(state, request)
    if refusal is not None:
        reject("REG-5")
        return Decision(response=BrokerRegistrationResponse(refusal), refused_by="REG-5")
    if retry is not None:
        cite("REG-3")  # DEC-5, kafka profile: the retry amends the registration, keeping its epoch,
        # its fencing and its controlled shutdown
        amend = registration_records(state, request, retry.epoch, retry.fenced, retry.in_controlled_shutdown)
        return _retried(state, request, retry.epoch, records=amend)

    cite("REG-6")
    cite("REG-7")
    cleanup: list[Record] = []
    if existing is not None and not existing.fenced:
        # DEC-25, kafka profile: a lapsed lease may wait for the scan, so the incarnation replaced can
        # still be unfenced; Kafka takes it out of ISRs and leaderships first, as fencing would (PART-6)
        fencing, _ = fence_broker(state.image, state.leases, request.broker_id, params)
        cleanup = fencing[:-1]  # the partition changes of the fencing, without its FenceBrokerRecord
    # DEC-4: the offset where the registration's batch begins, the next free offset; REG-7: above every
    # earlier one. The RegisterBrokerRecord, which the broker must apply to be caught up (LEASE-9), comes
    # after the cleanup
    epoch = state.log_end_offset
    cite("REG-9")  # registering writes no partition change (in kafka, but for the cleanup above)
    return Decision(
        records=(*cleanup, *registration_records(state, request, epoch)),
        response=BrokerRegistrationResponse(Error.NONE, epoch),
        # LEASE-7: a fresh lease; DEC-6: in the kafka profile it claims the id from the first heartbeat
        leases={**state.leases, request.broker_id: Lease(state.now_ms, released=not contact)},
    )


def registration_records(
    state: ControllerState,
    request: BrokerRegistrationRequest,
    epoch: int,
    fenced: bool = True,
    in_controlled_shutdown: bool = False,
) -> tuple[Record, ...]:
    """REG-6: the records of a registration with ``epoch``, carrying the request's fields, in the
    profile's record formats (DEC-22); a new registration is fenced (REG-8)."""
    say = formats_of(state.config.params)
    registration = Registration(
        broker_id=request.broker_id,
        incarnation_id=request.incarnation_id,
        epoch=epoch,
        end_points=tuple(BrokerEndpoint(l.name, l.host, l.port, l.security_protocol) for l in request.listeners),
        features=tuple(say.feature(f.name, f.min_supported_version, f.max_supported_version) for f in request.features),
        rack=request.rack,
        fenced=fenced,
        in_controlled_shutdown=in_controlled_shutdown,
    )
    return say.registration(registration)


def _retried(state: ControllerState, request: BrokerRegistrationRequest, epoch: int, records: tuple[Record, ...]) -> Decision:
    """REG-3: the answer to a retry, NONE with the registration's epoch; in the kip-631 profile the
    retry is contact (LEASE-7, DEC-6)."""
    response = BrokerRegistrationResponse(Error.NONE, epoch)
    if not state.config.params.registration_is_contact:
        return Decision(records=records, response=response)
    cite("LEASE-7")
    lease = replace(state.leases[request.broker_id], last_contact_ms=state.now_ms, released=False)
    return Decision(records=records, response=response, leases={**state.leases, request.broker_id: lease})


def handle_unregister_broker(state: ControllerState, request: UnregisterBrokerRequest) -> Decision:
    cite("MEM-7")
    if request.broker_id not in state.image.brokers:
        # DEC-35: NONE as seed 001 lists, in the kip-631 profile; BROKER_ID_NOT_REGISTERED in kafka's
        error = Error[state.config.params.unregister_unknown_error]
        if error is Error.NONE:
            cite("UNREG-1")
            return Decision(response=UnregisterBrokerResponse(error))
        reject("UNREG-1")
        return Decision(response=UnregisterBrokerResponse(error), refused_by="UNREG-1")
    cite("UNREG-2")  # no liveness check: an active broker can be unregistered
    records = unregister_broker(state.image, state.leases, request.broker_id, state.config.params)
    leases = {b: lease for b, lease in state.leases.items() if b != request.broker_id}  # UNREG-3
    return Decision(records=tuple(records), response=UnregisterBrokerResponse(Error.NONE), leases=leases)
