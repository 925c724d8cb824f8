"""BrokerRegistration and UnregisterBroker (REG-1 to REG-7, MEM-6, MEM-7, UNREG-1, UNREG-2).
model/registration.py's counterpart."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import Error, Refused
from .messages import (
    ZERO_UUID,
    BrokerRegistrationResponse,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerResponse,
)
from .partitions import unregister_broker

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
    offered = {f.name: f for f in request.features}
    for name, (low, high) in controller.state.cluster.features.items():
        feature = offered.get(name)
        if feature is None or not (feature.min_supported_version <= low and high <= feature.max_supported_version):
            return Refused("REG-5", BrokerRegistrationResponse(error_code=Error.UNSUPPORTED_VERSION))
    if retry is not None:  # REG-3, DEC-5, kafka profile: amend the registration, keeping its epoch
        fenced, epoch = retry.fenced, retry.epoch
        controller._add(_record(request, epoch))
        if not fenced:  # a RegisterBrokerRecord replays as fenced (REG-8)
            controller._add(UnfenceBrokerRecord(broker_id=broker_id, broker_epoch=epoch))
        return _retried(controller, broker_id, epoch)
    epoch = controller.log_end_offset  # REG-6: the offset this record is written at
    controller._add(_record(request, epoch))
    lease = controller.leases.start(broker_id, controller.now_ms, fenced=True)
    lease.released = not params.registration_is_contact  # DEC-6: in kafka, claimed from the first heartbeat
    return BrokerRegistrationResponse(error_code=Error.NONE, broker_epoch=epoch)


def _record(request, epoch: int):
    """REG-6: the RegisterBrokerRecord of a registration with ``epoch``."""
    endpoint, feature_type = RegisterBrokerRecord.BrokerEndpoint, RegisterBrokerRecord.BrokerFeature
    return RegisterBrokerRecord(
        broker_id=request.broker_id,
        incarnation_id=request.incarnation_id,
        broker_epoch=epoch,
        end_points=tuple(endpoint(name=l.name, host=l.host, port=l.port, security_protocol=l.security_protocol) for l in request.listeners),
        features=tuple(feature_type(name=f.name, min_version=f.min_supported_version, max_version=f.max_supported_version) for f in request.features),
        rack=request.rack,
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
