"""Replay: the only way the metadata image changes (LOG-5, LOG-12).

One function per record type. Replay never elects and never reads the offset a record
was written at, so snapshot records replay like log records (LOG-12). A record that does
not apply leaves the image unchanged (LOG-13): the controller never writes one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from uuid import UUID


from . import kafka_records as kafka
from .records import (
    NO_LEADER_CHANGE,
    FeatureLevelRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    Record,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from .rules import cite
from .state import BrokerRegistration, FeatureRange, MetadataImage, Partition, Topic, replace


def replay(image: MetadataImage, record: Record) -> MetadataImage:
    """The image after ``record``."""
    handler = _REPLAY.get(type(record))
    if handler is None:
        cite("LOG-16")  # records outside the broker lifecycle change nothing here
        return image
    return handler(image, record)


def replay_all(image: MetadataImage, records: Iterable[Record]) -> MetadataImage:
    for record in records:
        image = replay(image, record)
    return image


def _unchanged(image: MetadataImage) -> MetadataImage:
    cite("LOG-13")  # DEC-29: a record that does not apply changes nothing
    return image


def replay_register_broker(image: MetadataImage, record: RegisterBrokerRecord) -> MetadataImage:
    cite("REG-8")  # replaces any registration of the id; new registrations start fenced
    return _registered(image, record, fenced=True)


def replay_kafka_register_broker(image: MetadataImage, record: kafka.RegisterBrokerRecord) -> MetadataImage:
    cite("REG-8")  # DEC-22, kafka profile: the record says whether the registration is fenced
    return _registered(image, record, record.fenced, record.in_controlled_shutdown)


def _registered(image: MetadataImage, record: Any, fenced: bool, in_controlled_shutdown: bool = False) -> MetadataImage:
    """The image with ``record``'s registration in place of any of its id (either formats' record)."""
    registration = BrokerRegistration(
        broker_id=record.broker_id,
        incarnation_id=record.incarnation_id,
        epoch=record.broker_epoch,
        end_points=record.end_points,
        features=record.features,
        rack=record.rack,
        fenced=fenced,
        in_controlled_shutdown=in_controlled_shutdown,
    )
    return replace(image, brokers={**image.brokers, record.broker_id: registration})


def replay_registration_change(image: MetadataImage, record: kafka.BrokerRegistrationChangeRecord) -> MetadataImage:
    """DEC-22, kafka profile: a change to a registration's fencing or controlled shutdown."""
    current = image.brokers.get(record.broker_id)
    if current is None or current.epoch != record.broker_epoch:
        return _unchanged(image)
    fenced = {kafka.FENCE: True, kafka.UNFENCE: False}.get(record.fenced, current.fenced)
    if fenced != current.fenced:
        cite("LEASE-15")  # only the flag; partitions change through their own records (DEC-8)
    shutting_down = current.in_controlled_shutdown or record.in_controlled_shutdown == kafka.IN_CONTROLLED_SHUTDOWN
    changed = replace(current, fenced=fenced, in_controlled_shutdown=shutting_down)
    return replace(image, brokers={**image.brokers, record.broker_id: changed})


def replay_unregister_broker(image: MetadataImage, record: UnregisterBrokerRecord) -> MetadataImage:
    current = image.brokers.get(record.broker_id)
    if current is None or current.epoch != record.broker_epoch:
        return _unchanged(image)
    cite("UNREG-3")
    brokers = {b: r for b, r in image.brokers.items() if b != record.broker_id}
    return replace(image, brokers=brokers)


def _set_fenced(image: MetadataImage, broker_id: int, epoch: int, fenced: bool) -> MetadataImage:
    current = image.brokers.get(broker_id)
    if current is None or current.epoch != epoch:
        return _unchanged(image)
    cite("LEASE-15")  # only the flag; partitions change through their own records (DEC-8)
    return replace(image, brokers={**image.brokers, broker_id: replace(current, fenced=fenced)})


def replay_fence_broker(image: MetadataImage, record: FenceBrokerRecord) -> MetadataImage:
    return _set_fenced(image, record.broker_id, record.broker_epoch, True)


def replay_unfence_broker(image: MetadataImage, record: UnfenceBrokerRecord) -> MetadataImage:
    return _set_fenced(image, record.broker_id, record.broker_epoch, False)


def replay_topic(image: MetadataImage, record: TopicRecord) -> MetadataImage:
    return _topic_added(image, record.topic_name, record.topic_id)


def replay_kafka_topic(image: MetadataImage, record: kafka.TopicRecord) -> MetadataImage:
    return _topic_added(image, record.name, record.topic_id)  # DEC-22: Kafka's TopicRecord calls it Name


def _topic_added(image: MetadataImage, name: str, topic_id: UUID) -> MetadataImage:
    if topic_id in image.topics or image.topic_named(name) is not None:
        return _unchanged(image)
    cite("TOPIC-6")
    return replace(image, topics={**image.topics, topic_id: Topic(name, topic_id)})


def replay_partition(image: MetadataImage, record: PartitionRecord) -> MetadataImage:
    if record.topic_id not in image.topics:
        return _unchanged(image)
    cite("PART-1")
    partition = Partition(
        topic_id=record.topic_id,
        partition_id=record.partition_id,
        replicas=record.replicas,
        isr=record.isr,
        removing_replicas=record.removing_replicas,
        adding_replicas=record.adding_replicas,
        leader=record.leader,
        leader_epoch=record.leader_epoch,
        partition_epoch=record.partition_epoch,
    )
    return replace(image, partitions={**image.partitions, partition.key: partition})


def replay_partition_change(image: MetadataImage, record: PartitionChangeRecord) -> MetadataImage:
    current = image.partitions.get((record.topic_id, record.partition_id))
    if current is None:
        return _unchanged(image)
    cite("PART-2")
    changed = replace(
        current,
        isr=current.isr if record.isr is None else record.isr,
        replicas=current.replicas if record.replicas is None else record.replicas,
        removing_replicas=current.removing_replicas if record.removing_replicas is None else record.removing_replicas,
        adding_replicas=current.adding_replicas if record.adding_replicas is None else record.adding_replicas,
        leader=current.leader if record.leader == NO_LEADER_CHANGE else record.leader,
        leader_epoch=current.leader_epoch + (0 if record.leader == NO_LEADER_CHANGE else 1),  # DEC-17
        partition_epoch=current.partition_epoch + 1,
    )
    return replace(image, partitions={**image.partitions, changed.key: changed})


def replay_remove_topic(image: MetadataImage, record: RemoveTopicRecord) -> MetadataImage:
    if record.topic_id not in image.topics:
        return _unchanged(image)
    cite("TOPIC-8")  # the partitions go with the topic, and so do their reassignments (REASSIGN-12)
    topics = {tid: t for tid, t in image.topics.items() if tid != record.topic_id}
    partitions = {key: p for key, p in image.partitions.items() if p.topic_id != record.topic_id}
    return replace(image, topics=topics, partitions=partitions)


def replay_feature_level(image: MetadataImage, record: FeatureLevelRecord) -> MetadataImage:
    cite("LOG-17")
    feature = FeatureRange(record.name, record.min_feature_level, record.max_feature_level)
    return replace(image, features={**image.features, record.name: feature})


def replay_kafka_feature_level(image: MetadataImage, record: kafka.FeatureLevelRecord) -> MetadataImage:
    cite("LOG-17")  # DEC-22, kafka profile: one finalized level
    feature = FeatureRange(record.name, record.feature_level, record.feature_level)
    return replace(image, features={**image.features, record.name: feature})


_REPLAY: dict[type, Callable[[MetadataImage, Any], MetadataImage]] = {
    kafka.RegisterBrokerRecord: replay_kafka_register_broker,
    kafka.BrokerRegistrationChangeRecord: replay_registration_change,
    kafka.TopicRecord: replay_kafka_topic,
    kafka.FeatureLevelRecord: replay_kafka_feature_level,
    RegisterBrokerRecord: replay_register_broker,
    UnregisterBrokerRecord: replay_unregister_broker,
    FenceBrokerRecord: replay_fence_broker,
    UnfenceBrokerRecord: replay_unfence_broker,
    TopicRecord: replay_topic,
    PartitionRecord: replay_partition,
    PartitionChangeRecord: replay_partition_change,
    RemoveTopicRecord: replay_remove_topic,
    FeatureLevelRecord: replay_feature_level,
}
