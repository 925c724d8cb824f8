"""Which records say what, in each profile's record formats (DEC-22).

The handlers decide *that* a broker registers, is fenced, is unfenced or begins a controlled
shutdown; the profile's record formats (profiles.toml, ``record_formats``) decide *which records*
say so. Seed 000 has a RegisterBrokerRecord that replays as fenced and a record type per change;
Kafka at metadata.version 3.7-IV1 puts the state in the registration and changes it with
BrokerRegistrationChangeRecord. This module is the one place that knows both.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

from attrs import frozen

from kraftspec.spec.profiles import Profile

from . import kafka_records as kafka
from .records import (
    RECORD_TYPES,
    STRUCT_TYPES,
    BrokerEndpoint,
    BrokerFeature,
    FeatureLevelRecord,
    FenceBrokerRecord,
    Record,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from .rules import cite


@frozen
class Registration:
    """What a registration record carries, whatever the formats (REG-6)."""

    broker_id: int
    incarnation_id: UUID
    epoch: int
    end_points: tuple[BrokerEndpoint, ...] | None
    features: tuple[Any, ...] | None  # the formats' BrokerFeature structs
    rack: str | None
    fenced: bool = True
    in_controlled_shutdown: bool = False


class SeedFormats:
    """Seed 000's records (spec/schemas/records/)."""

    name = "seed-000"
    types: dict[int, type] = RECORD_TYPES
    structs: dict[str, type] = STRUCT_TYPES

    def feature(self, name: str, low: int, high: int) -> Any:
        return BrokerFeature(name, low, high)

    def finalized(self, features: Iterable[tuple[str, int, int]]) -> tuple[Record, ...]:
        """LOG-14, LOG-17: one FeatureLevelRecord per finalized feature, by name."""
        return tuple(FeatureLevelRecord(name, low, high) for name, low, high in sorted(features))

    def registration(self, r: Registration) -> tuple[Record, ...]:
        """REG-6, REG-8: a RegisterBrokerRecord replays as fenced (DEC-22), so an unfenced
        registration is written as the record and an UnfenceBrokerRecord after it."""
        record = RegisterBrokerRecord(r.broker_id, r.incarnation_id, r.epoch, r.end_points, r.features, r.rack)
        return (record,) if r.fenced else (record, UnfenceBrokerRecord(r.broker_id, r.epoch))

    def fence(self, broker_id: int, epoch: int) -> Record:
        return FenceBrokerRecord(broker_id, epoch)

    def unfence(self, broker_id: int, epoch: int) -> Record:
        return UnfenceBrokerRecord(broker_id, epoch)

    def shutdown_begins(self, broker_id: int, epoch: int, already: bool) -> tuple[Record, ...]:
        """SHUT-1: seed 000 has no record for it; the active controller keeps it in memory (DEC-14)."""
        return ()

    def topic(self, name: str, topic_id: UUID) -> Record:
        return TopicRecord(name, topic_id)


class KafkaFormats:
    """Kafka's records at metadata.version 3.7-IV1 (spec/schemas/kafka-records/, then seed 000's)."""

    name = kafka.FORMATS
    types: dict[int, type] = {
        **RECORD_TYPES,
        **{cls.API_KEY: cls for cls in kafka.KAFKA_TYPES},
    }
    structs: dict[str, type] = {**STRUCT_TYPES, **{cls.__name__: cls for cls in kafka.KAFKA_STRUCTS}}

    def feature(self, name: str, low: int, high: int) -> Any:
        return kafka.BrokerFeature(name, low, high)

    def finalized(self, features: Iterable[tuple[str, int, int]]) -> tuple[Record, ...]:
        """LOG-14, LOG-17: one level per feature (the configuration gives min = max, CONF-2)."""
        return tuple(kafka.FeatureLevelRecord(name, high) for name, _low, high in sorted(features))

    def registration(self, r: Registration) -> tuple[Record, ...]:
        """REG-6, REG-8: one RegisterBrokerRecord, which says whether the broker is fenced and in
        controlled shutdown."""
        return (
            kafka.RegisterBrokerRecord(
                r.broker_id,
                incarnation_id=r.incarnation_id,
                broker_epoch=r.epoch,
                end_points=r.end_points or (),
                features=r.features or (),
                rack=r.rack,
                fenced=r.fenced,
                in_controlled_shutdown=r.in_controlled_shutdown,
            ),
        )

    def fence(self, broker_id: int, epoch: int) -> Record:
        return kafka.BrokerRegistrationChangeRecord(broker_id, epoch, fenced=kafka.FENCE)

    def unfence(self, broker_id: int, epoch: int) -> Record:
        return kafka.BrokerRegistrationChangeRecord(broker_id, epoch, fenced=kafka.UNFENCE)

    def shutdown_begins(self, broker_id: int, epoch: int, already: bool) -> tuple[Record, ...]:
        """SHUT-1: the registration records the controlled shutdown, unless it already does."""
        if already:
            return ()
        cite("SHUT-1")
        return (kafka.BrokerRegistrationChangeRecord(broker_id, epoch, in_controlled_shutdown=kafka.IN_CONTROLLED_SHUTDOWN),)

    def topic(self, name: str, topic_id: UUID) -> Record:
        return kafka.TopicRecord(name, topic_id)


RecordFormats = SeedFormats | KafkaFormats

FORMATS: dict[str, RecordFormats] = {f.name: f for f in (SeedFormats(), KafkaFormats())}
"""The record formats by the name profiles.toml gives them."""


def formats_of(params: Profile) -> RecordFormats:
    """DEC-22: the record formats of a profile."""
    return FORMATS[params.record_formats]


def record_version(record: Record) -> int:
    """The version a record is written at: what its formats write for it (0 for seed 000's)."""
    return getattr(record, "record_version", 0)
