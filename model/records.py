"""The metadata records (LOG-1), one frozen class per record type of seed 000; ``Record`` also
covers the four that the kafka profile writes in Kafka's formats instead (kafka_records.py, DEC-22).

Field names are the schema's (spec/schemas/records/) in snake case: ``BrokerEpoch`` is
``broker_epoch``. ``tests/test_model_schemas.py`` checks that the two never drift apart.
Each class carries its record type as ``API_KEY``.
"""

from __future__ import annotations

from typing import ClassVar, Union
from uuid import UUID

from attrs import field, frozen

NO_LEADER = -1
"""`Leader` of a partition that has no leader (PART-1)."""

NO_LEADER_CHANGE = -2
"""`Leader` of a PartitionChangeRecord that does not change the leader (PART-2)."""


def as_tuple(values) -> tuple:
    """Converter for list fields: lists from callers become tuples, so records stay hashable."""
    return tuple(values)


def as_tuple_or_none(values) -> tuple | None:
    """Converter for nullable list fields."""
    return None if values is None else tuple(values)


# ---- broker registration records -------------------------------------------------


@frozen
class BrokerEndpoint:
    name: str
    host: str
    port: int
    security_protocol: int


@frozen
class BrokerFeature:
    name: str
    min_version: int
    max_version: int


@frozen
class RegisterBrokerRecord:
    """A registration; replaying it gives a fenced registration (REG-8)."""

    API_KEY: ClassVar[int] = 0
    broker_id: int
    incarnation_id: UUID
    broker_epoch: int
    end_points: tuple[BrokerEndpoint, ...] | None = field(default=(), converter=as_tuple_or_none)
    features: tuple[BrokerFeature, ...] | None = field(default=(), converter=as_tuple_or_none)
    rack: str | None = None


@frozen
class UnregisterBrokerRecord:
    API_KEY: ClassVar[int] = 1
    broker_id: int
    broker_epoch: int


@frozen
class FenceBrokerRecord:
    API_KEY: ClassVar[int] = 7
    broker_id: int
    broker_epoch: int


@frozen
class UnfenceBrokerRecord:
    API_KEY: ClassVar[int] = 8
    broker_id: int
    broker_epoch: int


# ---- topic and partition records ---------------------------------------------------


@frozen
class TopicRecord:
    API_KEY: ClassVar[int] = 2
    topic_name: str
    topic_id: UUID


@frozen
class PartitionRecord:
    API_KEY: ClassVar[int] = 3
    partition_id: int
    topic_id: UUID
    replicas: tuple[int, ...] = field(converter=as_tuple)
    isr: tuple[int, ...] = field(converter=as_tuple)
    removing_replicas: tuple[int, ...] = field(default=(), converter=as_tuple)
    adding_replicas: tuple[int, ...] = field(default=(), converter=as_tuple)
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0


@frozen
class PartitionChangeRecord:
    """A change to one partition; ``None`` and ``NO_LEADER_CHANGE`` mean "unchanged" (PART-2)."""

    API_KEY: ClassVar[int] = 5
    partition_id: int
    topic_id: UUID
    isr: tuple[int, ...] | None = field(default=None, converter=as_tuple_or_none)
    leader: int = NO_LEADER_CHANGE
    replicas: tuple[int, ...] | None = field(default=None, converter=as_tuple_or_none)
    removing_replicas: tuple[int, ...] | None = field(default=None, converter=as_tuple_or_none)
    adding_replicas: tuple[int, ...] | None = field(default=None, converter=as_tuple_or_none)


@frozen
class RemoveTopicRecord:
    API_KEY: ClassVar[int] = 9
    topic_id: UUID


@frozen
class FeatureLevelRecord:
    API_KEY: ClassVar[int] = 12
    name: str
    min_feature_level: int
    max_feature_level: int


# ---- records outside the broker lifecycle (LOG-16): format only ------------------


@frozen
class ConfigRecord:
    API_KEY: ClassVar[int] = 4
    resource_type: int
    resource_name: str
    name: str
    value: str


@frozen
class AccessControlRecord:
    API_KEY: ClassVar[int] = 6
    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@frozen
class DelegationTokenRecord:
    API_KEY: ClassVar[int] = 10
    owner: str
    renewers: tuple[str, ...] = field(converter=as_tuple)
    issue_timestamp: int = 0
    max_timestamp: int = 0
    expiration_timestamp: int = 0
    token_id: str = ""


@frozen
class CredentialInfo:
    mechanism: int
    salt: bytes
    salted_password: bytes
    iterations: int


@frozen
class UserScramCredentialRecord:
    API_KEY: ClassVar[int] = 11
    user_name: str
    credential_infos: tuple[CredentialInfo, ...] = field(converter=as_tuple)


@frozen
class TopicWithFailures:
    topic_id: UUID
    partitions: tuple[int, ...] = field(converter=as_tuple)


@frozen
class FailedReplicasRecord:
    API_KEY: ClassVar[int] = 13
    broker_id: int
    topics: tuple[TopicWithFailures, ...] = field(converter=as_tuple)


@frozen
class EntityData:
    entity_type: str
    entity_name: str | None


@frozen
class QuotaRecord:
    API_KEY: ClassVar[int] = 14
    entity: tuple[EntityData, ...] = field(converter=as_tuple)
    key: str = ""
    value: float = 0.0
    remove: bool = False


from . import kafka_records  # noqa: E402  (Kafka's records reuse BrokerEndpoint and as_tuple above)

Record = Union[
    kafka_records.RegisterBrokerRecord,
    kafka_records.BrokerRegistrationChangeRecord,
    kafka_records.FeatureLevelRecord,
    kafka_records.TopicRecord,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
    TopicRecord,
    PartitionRecord,
    ConfigRecord,
    PartitionChangeRecord,
    AccessControlRecord,
    FenceBrokerRecord,
    UnfenceBrokerRecord,
    RemoveTopicRecord,
    DelegationTokenRecord,
    UserScramCredentialRecord,
    FeatureLevelRecord,
    FailedReplicasRecord,
    QuotaRecord,
]

RECORD_TYPES: dict[int, type] = {
    cls.API_KEY: cls
    for cls in (
        RegisterBrokerRecord,
        UnregisterBrokerRecord,
        TopicRecord,
        PartitionRecord,
        ConfigRecord,
        PartitionChangeRecord,
        AccessControlRecord,
        FenceBrokerRecord,
        UnfenceBrokerRecord,
        RemoveTopicRecord,
        DelegationTokenRecord,
        UserScramCredentialRecord,
        FeatureLevelRecord,
        FailedReplicasRecord,
        QuotaRecord,
    )
}
"""Record type (LOG-1) -> record class."""

STRUCT_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (BrokerEndpoint, BrokerFeature, CredentialInfo, TopicWithFailures, EntityData)
}
"""Schema struct name -> class, for the nested arrays of records."""
