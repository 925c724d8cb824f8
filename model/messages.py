"""Requests and responses (RPC-1), one frozen class per message of spec/schemas/rpcs/ (and of
kafka-rpcs/, whose forms of three of them carry a subset of the fields plus ErrorMessage; a
profile's ``rpc_formats`` says which form its traces and codecs use, DEC-9).

Field names are the schema's in snake case (``WantShutDown`` is ``want_shut_down``).
Nested arrays are tuples. ``ThrottleTimeMs`` is always 0 (RPC-5) and is left out.
Two kraftspec additions that are not wire fields: ``version`` on BrokerHeartbeat (the
request's version decides the response's, LAO-1) and the ``TopicId`` CreateTopics
carries (DEC-24) is a schema field.
"""

from __future__ import annotations

import functools
from typing import Union, get_args
from uuid import UUID

from attrs import field, frozen

from kraftspec.spec.schemas import rpc_schema

from .errors import Error
from .records import as_tuple, as_tuple_or_none

SEED_FORMATS = "seed-000"

ZERO_UUID = UUID(int=0)


# ---- BrokerRegistration (57; Kafka 62) ----------------------------------------------------


@frozen
class Listener:
    name: str
    host: str
    port: int
    security_protocol: int = 0


@frozen
class Feature:
    name: str
    min_supported_version: int
    max_supported_version: int


@frozen
class BrokerRegistrationRequest:
    """MEM-6."""

    broker_id: int
    cluster_id: str
    incarnation_id: UUID
    current_metadata_offset: int = -1
    listeners: tuple[Listener, ...] = field(default=(), converter=as_tuple)
    features: tuple[Feature, ...] = field(default=(), converter=as_tuple)
    rack: str | None = None


@frozen
class BrokerRegistrationResponse:
    error_code: Error
    broker_epoch: int = -1


# ---- BrokerHeartbeat (58; Kafka 63) -----------------------------------------------------


@frozen
class BrokerHeartbeatRequest:
    """LEASE-2. ``current_metadata_offset`` is one more than the highest offset applied (DEC-2)."""

    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool
    version: int = 1


@frozen
class BrokerHeartbeatResponse:
    """LEASE-2; the defaults are the schema's, which error responses carry."""

    error_code: Error
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False
    lowest_acknowledged_offset: int | None = -1  # None where the response has no such field (LAO-1, DEC-9)


# ---- UnregisterBroker (59; Kafka 64) ------------------------------------------------------


@frozen
class UnregisterBrokerRequest:
    """MEM-7."""

    broker_id: int


@frozen
class UnregisterBrokerResponse:
    error_code: Error
    error_message: str | None = ""  # DEC-9: Kafka's field (kafka-rpcs), which its controller leaves empty


# ---- AlterIsr (56) ------------------------------------------------------------------


@frozen
class AlterIsrPartition:
    partition_index: int
    leader_epoch: int
    new_isr: tuple[int, ...] = field(converter=as_tuple)
    partition_epoch: int = 0


@frozen
class AlterIsrTopic:
    topic_id: UUID
    partitions: tuple[AlterIsrPartition, ...] = field(converter=as_tuple)


@frozen
class AlterIsrRequest:
    """ISR-1."""

    broker_id: int
    broker_epoch: int
    topics: tuple[AlterIsrTopic, ...] = field(converter=as_tuple)


@frozen
class AlterIsrPartitionResult:
    partition_index: int
    error_code: Error
    leader_id: int = 0  # DEC-15: 0 in a refused partition, as Kafka leaves it
    leader_epoch: int = 0
    isr: tuple[int, ...] = field(default=(), converter=as_tuple)
    partition_epoch: int = 0


@frozen
class AlterIsrTopicResult:
    topic_id: UUID
    partitions: tuple[AlterIsrPartitionResult, ...] = field(converter=as_tuple)


@frozen
class AlterIsrResponse:
    error_code: Error
    topics: tuple[AlterIsrTopicResult, ...] = field(default=(), converter=as_tuple)


# ---- CreateTopics (19) and DeleteTopics (20) -----------------------------------------


@frozen
class ReplicaAssignment:
    partition_index: int
    broker_ids: tuple[int, ...] = field(converter=as_tuple)


@frozen
class CreatableTopic:
    name: str
    topic_id: UUID
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: tuple[ReplicaAssignment, ...] = field(default=(), converter=as_tuple)


@frozen
class CreateTopicsRequest:
    """TOPIC-1."""

    topics: tuple[CreatableTopic, ...] = field(converter=as_tuple)


@frozen
class CreatableTopicResult:
    name: str
    topic_id: UUID
    error_code: Error


@frozen
class CreateTopicsResponse:
    topics: tuple[CreatableTopicResult, ...] = field(converter=as_tuple)


@frozen
class DeleteTopicsRequest:
    """TOPIC-7."""

    topic_names: tuple[str, ...] = field(converter=as_tuple)


@frozen
class DeletableTopicResult:
    name: str
    topic_id: UUID
    error_code: Error


@frozen
class DeleteTopicsResponse:
    responses: tuple[DeletableTopicResult, ...] = field(converter=as_tuple)


# ---- AlterPartitionReassignments (45) and ListPartitionReassignments (46) ------------


@frozen
class ReassignablePartition:
    partition_index: int
    replicas: tuple[int, ...] | None = field(default=None, converter=as_tuple_or_none)


@frozen
class ReassignableTopic:
    name: str
    partitions: tuple[ReassignablePartition, ...] = field(converter=as_tuple)


@frozen
class AlterPartitionReassignmentsRequest:
    """REASSIGN-1. A partition whose ``replicas`` is None is cancelled (REASSIGN-8)."""

    topics: tuple[ReassignableTopic, ...] = field(converter=as_tuple)


@frozen
class ReassignablePartitionResult:
    partition_index: int
    error_code: Error


@frozen
class ReassignableTopicResult:
    name: str
    partitions: tuple[ReassignablePartitionResult, ...] = field(converter=as_tuple)


@frozen
class AlterPartitionReassignmentsResponse:
    error_code: Error
    responses: tuple[ReassignableTopicResult, ...] = field(default=(), converter=as_tuple)


@frozen
class ListedTopic:
    name: str
    partition_indexes: tuple[int, ...] = field(converter=as_tuple)


@frozen
class ListPartitionReassignmentsRequest:
    """REASSIGN-10. ``topics`` None lists every reassigning partition."""

    topics: tuple[ListedTopic, ...] | None = field(default=None, converter=as_tuple_or_none)


@frozen
class OngoingPartitionReassignment:
    partition_index: int
    replicas: tuple[int, ...] = field(converter=as_tuple)
    adding_replicas: tuple[int, ...] = field(converter=as_tuple)
    removing_replicas: tuple[int, ...] = field(converter=as_tuple)


@frozen
class OngoingTopicReassignment:
    name: str
    partitions: tuple[OngoingPartitionReassignment, ...] = field(converter=as_tuple)


@frozen
class ListPartitionReassignmentsResponse:
    error_code: Error
    topics: tuple[OngoingTopicReassignment, ...] = field(default=(), converter=as_tuple)


Request = Union[
    BrokerRegistrationRequest,
    BrokerHeartbeatRequest,
    UnregisterBrokerRequest,
    AlterIsrRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
]

Response = Union[
    BrokerRegistrationResponse,
    BrokerHeartbeatResponse,
    UnregisterBrokerResponse,
    AlterIsrResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponse,
]

REQUEST_TYPES: tuple[type, ...] = get_args(Request)
RESPONSE_TYPES: tuple[type, ...] = get_args(Response)


def api_key(request: type, formats: str = SEED_FORMATS) -> int:
    """RPC-1, DEC-9: the api key of a request class in the message formats ``formats`` (profiles.toml,
    ``rpc_formats``): seed 000's 57, 58, 59 or Kafka's 62, 63, 64 for the broker lifecycle's three.
    Structural, like the rest of RPC-1: the handlers never need it; codecs and adapters do."""
    return int(rpc_schema(request.__name__, formats)["apiKey"])


@functools.cache  # asked at every heartbeat; the schemas do not change
def carries(message: str, field: str, version: int, formats: str = SEED_FORMATS) -> bool:
    """RPC-1, DEC-9: whether ``message`` at ``version`` has ``field`` in the message formats
    ``formats``. LowestAcknowledgedOffset, for one, is in seed 004's heartbeat response version 1
    and in no version of Kafka's (LAO-1)."""
    return any(spec["name"] == field and _in_versions(spec["versions"], version) for spec in rpc_schema(message, formats)["fields"])


def _in_versions(spec: str, version: int) -> bool:
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    low, _, high = spec.partition("-")
    return int(low) <= version <= int(high or low)


def error_response(request: Request, error: Error, formats: str = SEED_FORMATS) -> Response:
    """The response a request gets when it is refused as a whole with ``error``, in the message
    formats ``formats`` (DEC-9).

    Every field but the error code keeps its schema default (LEASE-2, MEM-6); requests
    whose response has per-topic results get an empty list of them.
    """
    if isinstance(request, BrokerRegistrationRequest):
        return BrokerRegistrationResponse(error)
    if isinstance(request, BrokerHeartbeatRequest):
        lao = -1 if carries("BrokerHeartbeatResponse", "LowestAcknowledgedOffset", request.version, formats) else None
        return BrokerHeartbeatResponse(error, lowest_acknowledged_offset=lao)
    if isinstance(request, UnregisterBrokerRequest):
        return UnregisterBrokerResponse(error)
    if isinstance(request, AlterIsrRequest):
        return AlterIsrResponse(error)
    if isinstance(request, CreateTopicsRequest):
        return CreateTopicsResponse(tuple(CreatableTopicResult(t.name, ZERO_UUID, error) for t in request.topics))
    if isinstance(request, DeleteTopicsRequest):
        return DeleteTopicsResponse(tuple(DeletableTopicResult(n, ZERO_UUID, error) for n in request.topic_names))
    if isinstance(request, AlterPartitionReassignmentsRequest):
        return AlterPartitionReassignmentsResponse(error)
    if isinstance(request, ListPartitionReassignmentsRequest):
        return ListPartitionReassignmentsResponse(error)
    raise TypeError(f"not a request: {request!r}")

SCHEMA_STRUCTS: dict[str, type] = {
    "BrokerRegistrationRequest.Listener": Listener,
    "BrokerRegistrationRequest.Feature": Feature,
    "AlterIsrRequest.TopicData": AlterIsrTopic,
    "AlterIsrRequest.TopicData.PartitionData": AlterIsrPartition,
    "AlterIsrResponse.TopicData": AlterIsrTopicResult,
    "AlterIsrResponse.TopicData.PartitionData": AlterIsrPartitionResult,
    "CreateTopicsRequest.CreatableTopic": CreatableTopic,
    "CreateTopicsRequest.CreatableTopic.CreatableReplicaAssignment": ReplicaAssignment,
    "CreateTopicsResponse.CreatableTopicResult": CreatableTopicResult,
    "DeleteTopicsResponse.DeletableTopicResult": DeletableTopicResult,
    "AlterPartitionReassignmentsRequest.ReassignableTopic": ReassignableTopic,
    "AlterPartitionReassignmentsRequest.ReassignableTopic.ReassignablePartition": ReassignablePartition,
    "AlterPartitionReassignmentsResponse.ReassignableTopicResponse": ReassignableTopicResult,
    "AlterPartitionReassignmentsResponse.ReassignableTopicResponse.ReassignablePartitionResponse": ReassignablePartitionResult,
    "ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics": ListedTopic,
    "ListPartitionReassignmentsResponse.OngoingTopicReassignment": OngoingTopicReassignment,
    "ListPartitionReassignmentsResponse.OngoingTopicReassignment.OngoingPartitionReassignment": OngoingPartitionReassignment,
}
"""The model's class for each nested struct of a message, by its path of schema names."""
