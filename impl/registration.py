"""BrokerRegistration and UnregisterBroker (REG-1 to REG-7, MEM-6, MEM-7, UNREG-1, UNREG-2).
model/registration.py's counterpart."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import Error, Refused
from .messages import ZERO_UUID, BrokerRegistrationResponse, UnregisterBrokerResponse
from .partitions import leave_isrs, unregister_broker

if TYPE_CHECKING:
    from .controller import Controller


def handle_broker_registration(controller: Controller, request, version: int):
    """REG-1 to REG-6."""
    if version != 0:
        return BrokerRegistrationResponse(error_code=Error.UNSUPPORTED_VERSION)
    names = [listener.name for listener in request.listeners]
    feature_names = [feature.name for feature in request.features]
    if (
        request.broker_id < 0
        or request.incarnation_id == ZERO_UUID
        or request.current_metadata_offset < -1
        or len(set(names)) != len(names)
        or len(set(feature_names)) != len(feature_names)
        or any(f.min_supported_version < 0 or f.min_supported_version > f.max_supported_version for f in request.features)
    ):
        return Refused("REG-1", BrokerRegistrationResponse(error_code=Error.INVALID_REQUEST))
    if request.cluster_id != controller.config.cluster_id:
        return Refused("REG-2", BrokerRegistrationResponse(error_code=Error.INVALID_CLUSTER_ID))
    broker_id = request.broker_id
    params = controller.config.params
    existing = controller.state.cluster.brokers.get(broker_id)
    retry = existing if existing is not None and existing.incarnation_id == request.incarnation_id else None
    if retry is not None and params.retry_registration == "unchanged":  # REG-3, DEC-5: same result, nothing written
        return _retried(controller, broker_id, retry.epoch)
    if existing is not None and retry is None and controller.leases.claimed(broker_id, controller.now_ms):
        return Refused("REG-4", BrokerRegistrationResponse(error_code=Error.DUPLICATE_BROKER_REGISTRATION))
    refusal = _unsupported_features(controller.state.cluster.features, request.features)
    if refusal is not None:
        return Refused("REG-5", BrokerRegistrationResponse(error_code=refusal))
    if retry is not None:  # REG-3, DEC-5, kafka profile: amend the registration, keeping its epoch,
        # its fencing and its controlled shutdown
        epoch = retry.epoch
        for record in _records(controller, request, epoch, retry.fenced, retry.in_controlled_shutdown):
            controller._add(record)
        return _retried(controller, broker_id, epoch)
    epoch = controller.log_end_offset  # REG-6, DEC-4: where the request's batch, still empty, begins: the next free offset
    if existing is not None and not existing.fenced:
        # DEC-25, kafka profile: a lapsed lease may wait for the scan; the incarnation replaced leaves
        # its ISRs and leaderships first, as when fenced (the record the broker must apply to be caught
        # up, LEASE-9, comes after them)
        leave_isrs(controller, broker_id)
    for record in _records(controller, request, epoch):  # REG-8: a new registration is fenced
        controller._add(record)
    lease = controller.leases.start(broker_id, controller.now_ms, fenced=True)
    lease.released = not params.registration_is_contact  # DEC-6: in kafka, claimed from the first heartbeat
    return BrokerRegistrationResponse(error_code=Error.NONE, broker_epoch=epoch)


def _records(controller: Controller, request, epoch: int, fenced: bool = True, in_controlled_shutdown: bool = False):
    """REG-6: the records of a registration with ``epoch``, carrying the request's fields, in the
    profile's record formats (DEC-22)."""
    say = controller.formats
    return say.registration(
        request.broker_id,
        request.incarnation_id,
        epoch,
        tuple(say.endpoint(l.name, l.host, l.port, l.security_protocol) for l in request.listeners),
        tuple(say.feature(f.name, f.min_supported_version, f.max_supported_version) for f in request.features),
        request.rack,
        fenced,
        in_controlled_shutdown,
    )


def _retried(controller: Controller, broker_id: int, epoch: int):
    """REG-3: NONE with the registration's epoch; in the kip-631 profile the retry is contact (DEC-6)."""
    if controller.config.params.registration_is_contact:
        controller.leases.touch(broker_id, controller.now_ms).released = False
    return BrokerRegistrationResponse(error_code=Error.NONE, broker_epoch=epoch)


def handle_unregister_broker(controller: Controller, request, version: int):
    """UNREG-1, UNREG-2, PART-8."""
    broker_id = request.broker_id
    registration = controller.state.cluster.brokers.get(broker_id)
    if registration is None:  # UNREG-1, DEC-35: by profile
        error = Error[controller.config.params.unregister_unknown_error]
        response = UnregisterBrokerResponse(error_code=error)
        return response if error == Error.NONE else Refused("UNREG-1", response)
    unregister_broker(controller, broker_id)
    controller.leases.remove(broker_id)
    return UnregisterBrokerResponse(error_code=Error.NONE)


def _unsupported_features(finalized, features) -> int | None:
    """REG-5, DEC-15, in Kafka's order: a listed range that misses a finalized range, then an unlisted
    metadata.version (INVALID_REGISTRATION), then any other unlisted finalized feature."""
    offered = {f.name: f for f in features}
    for name, (low, high) in finalized.items():
        feature = offered.get(name)
        if feature is not None and not (feature.min_supported_version <= low and high <= feature.max_supported_version):
            return Error.UNSUPPORTED_VERSION
    if "metadata.version" in finalized and "metadata.version" not in offered:
        return Error.INVALID_REGISTRATION
    if any(name not in offered for name in finalized):
        return Error.UNSUPPORTED_VERSION
    return None
