"""Which records say what, in each profile's record formats (DEC-22). model/formats.py's counterpart.

The handlers decide *that* a broker registers, is fenced, is unfenced or begins a controlled
shutdown, and what the finalized features and the topics are; the profile's record formats
(profiles.toml, ``record_formats``) decide *which records* say so. Seed 000's records
(``SeedFormats``) have a RegisterBrokerRecord that replays as fenced and a record type per change;
Kafka's at metadata.version 3.7-IV1 (``KafkaFormats``) keep fencing and controlled shutdown in the
registration, change them with BrokerRegistrationChangeRecord, finalize one level per feature and
call a topic's name ``Name``. This module is the one place in impl that knows both; a controller
holds its profile's (``formats_of(params)``) as ``controller.formats``. How the records replay is
state.py's, cluster.py's and replication.py's; how they are framed, codec.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar
from uuid import UUID

from kraftspec.spec.profiles import Profile

from .messages import (
    KAFKA_FORMATS,
    RECORD_CLASSES_OF,
    SEED_FORMATS,
    BrokerRegistrationChangeRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    KafkaFeatureLevelRecord,
    KafkaRegisterBrokerRecord,
    KafkaTopicRecord,
    RegisterBrokerRecord,
    Struct,
    TopicRecord,
    UnfenceBrokerRecord,
)

FENCE = 1
"""``Fenced`` of a BrokerRegistrationChangeRecord that fences the broker."""

UNFENCE = -1
"""``Fenced`` of a BrokerRegistrationChangeRecord that unfences the broker."""

NO_CHANGE = 0
"""``Fenced`` or ``InControlledShutdown`` of a BrokerRegistrationChangeRecord that leaves it as it is."""

IN_CONTROLLED_SHUTDOWN = 1
"""``InControlledShutdown`` of a BrokerRegistrationChangeRecord for a broker entering controlled shutdown."""


class SeedFormats:
    """Seed 000's records (spec/schemas/records/): the kip-631 profile's."""

    name: ClassVar[str] = SEED_FORMATS
    classes: ClassVar[dict[int, type[Struct]]] = RECORD_CLASSES_OF[SEED_FORMATS]
    finalizes_a_range: ClassVar[bool] = True  # a FeatureLevelRecord holds a [min, max] range
    fencing: ClassVar[dict[type, Callable[[Any], bool | None]]] = {
        FenceBrokerRecord: lambda record: True,
        UnfenceBrokerRecord: lambda record: False,
    }
    """The record types that fence or unfence a registration -> whether a record fences (True),
    unfences (False) or neither (None): the active controller's leases follow them (LEASE-15)."""

    def endpoint(self, name: str, host: str, port: int, security_protocol: int) -> Struct:
        return RegisterBrokerRecord.BrokerEndpoint(name=name, host=host, port=port, security_protocol=security_protocol)

    def feature(self, name: str, low: int, high: int) -> Struct:
        """A feature a broker supports, as its registration records it."""
        return RegisterBrokerRecord.BrokerFeature(name=name, min_version=low, max_version=high)

    def finalized(self, features: Iterable[tuple[str, int, int]]) -> list[Struct]:
        """LOG-14, LOG-17: one FeatureLevelRecord per finalized (name, min, max), by name."""
        return [FeatureLevelRecord.make(name=name, min_feature_level=low, max_feature_level=high) for name, low, high in sorted(features)]

    def registration(
        self, broker_id: int, incarnation_id: UUID, epoch: int, end_points, features, rack,
        fenced: bool = True, in_controlled_shutdown: bool = False,
    ) -> tuple[Struct, ...]:
        """REG-6, REG-8: a RegisterBrokerRecord replays as fenced, so an unfenced registration is
        the record and an UnfenceBrokerRecord after it. Seed 000 records no controlled shutdown."""
        record = RegisterBrokerRecord.make(
            broker_id=broker_id, incarnation_id=incarnation_id, broker_epoch=epoch,
            end_points=end_points, features=features, rack=rack,
        )
        return (record,) if fenced else (record, UnfenceBrokerRecord.make(broker_id=broker_id, broker_epoch=epoch))

    def fence(self, broker_id: int, epoch: int) -> Struct:
        return FenceBrokerRecord.make(broker_id=broker_id, broker_epoch=epoch)

    def unfence(self, broker_id: int, epoch: int) -> Struct:
        return UnfenceBrokerRecord.make(broker_id=broker_id, broker_epoch=epoch)

    def shutdown_begins(self, broker_id: int, epoch: int, already: bool) -> tuple[Struct, ...]:
        """SHUT-1: seed 000 has no record for it; the active controller keeps it in its leases (DEC-14)."""
        return ()

    def topic(self, name: str, topic_id: UUID) -> Struct:
        return TopicRecord.make(topic_name=name, topic_id=topic_id)


def _change_fences(record) -> bool | None:
    return True if record.fenced == FENCE else False if record.fenced == UNFENCE else None


class KafkaFormats:
    """Kafka's records at metadata.version 3.7-IV1 (spec/schemas/kafka-records/, then seed 000's):
    the kafka profile's."""

    name: ClassVar[str] = KAFKA_FORMATS
    classes: ClassVar[dict[int, type[Struct]]] = RECORD_CLASSES_OF[KAFKA_FORMATS]
    finalizes_a_range: ClassVar[bool] = False  # a FeatureLevelRecord holds one level
    fencing: ClassVar[dict[type, Callable[[Any], bool | None]]] = {BrokerRegistrationChangeRecord: _change_fences}

    def endpoint(self, name: str, host: str, port: int, security_protocol: int) -> Struct:
        return KafkaRegisterBrokerRecord.BrokerEndpoint(name=name, host=host, port=port, security_protocol=security_protocol)

    def feature(self, name: str, low: int, high: int) -> Struct:
        return KafkaRegisterBrokerRecord.BrokerFeature(name=name, min_supported_version=low, max_supported_version=high)

    def finalized(self, features: Iterable[tuple[str, int, int]]) -> list[Struct]:
        """LOG-14, LOG-17: one level per feature, by name (the configuration gives min = max)."""
        return [KafkaFeatureLevelRecord.make(name=name, feature_level=high) for name, _, high in sorted(features)]

    def registration(
        self, broker_id: int, incarnation_id: UUID, epoch: int, end_points, features, rack,
        fenced: bool = True, in_controlled_shutdown: bool = False,
    ) -> tuple[Struct, ...]:
        """REG-6, REG-8: one RegisterBrokerRecord, which says whether the registration is fenced
        and in controlled shutdown."""
        return (KafkaRegisterBrokerRecord.make(
            broker_id=broker_id, incarnation_id=incarnation_id, broker_epoch=epoch,
            end_points=end_points or (), features=features or (), rack=rack,
            fenced=fenced, in_controlled_shutdown=in_controlled_shutdown,
        ),)

    def fence(self, broker_id: int, epoch: int) -> Struct:
        return BrokerRegistrationChangeRecord.make(broker_id=broker_id, broker_epoch=epoch, fenced=FENCE)

    def unfence(self, broker_id: int, epoch: int) -> Struct:
        return BrokerRegistrationChangeRecord.make(broker_id=broker_id, broker_epoch=epoch, fenced=UNFENCE)

    def shutdown_begins(self, broker_id: int, epoch: int, already: bool) -> tuple[Struct, ...]:
        """SHUT-1: the registration records the controlled shutdown, unless it already does."""
        if already:
            return ()
        return (BrokerRegistrationChangeRecord.make(broker_id=broker_id, broker_epoch=epoch, in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN),)

    def topic(self, name: str, topic_id: UUID) -> Struct:
        return KafkaTopicRecord.make(name=name, topic_id=topic_id)


RecordFormats = SeedFormats | KafkaFormats

FORMATS: dict[str, RecordFormats] = {f.name: f for f in (SeedFormats(), KafkaFormats())}
"""The record formats by the name profiles.toml gives them."""


def formats_of(params: Profile) -> RecordFormats:
    """DEC-22: the record formats of a profile."""
    return FORMATS[params.record_formats]
