"""The metadata state (hard state): registrations, features, topics, partitions, and the
journal of what uncommitted batches changed. ``replay`` is the only way it changes; it takes the
records of every record formats (DEC-22), as the model's replay does."""

from __future__ import annotations

from .cluster import ClusterControl
from .journal import Journal
from .messages import (
    BrokerRegistrationChangeRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    KafkaFeatureLevelRecord,
    KafkaRegisterBrokerRecord,
    KafkaTopicRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from .replication import ReplicationControl


class MetadataState:
    __slots__ = ("journal", "cluster", "replication", "_replay")

    def __init__(self) -> None:
        self.journal = Journal()
        self.cluster = ClusterControl(self.journal)
        self.replication = ReplicationControl(self.journal)
        cluster, replication = self.cluster, self.replication
        self._replay = {
            RegisterBrokerRecord: cluster.replay_register,
            UnregisterBrokerRecord: cluster.replay_unregister,
            FenceBrokerRecord: lambda r: cluster.replay_fenced(r.broker_id, r.broker_epoch, True),
            UnfenceBrokerRecord: lambda r: cluster.replay_fenced(r.broker_id, r.broker_epoch, False),
            FeatureLevelRecord: cluster.replay_feature_level,
            TopicRecord: replication.replay_topic,
            PartitionRecord: replication.replay_partition,
            PartitionChangeRecord: replication.replay_partition_change,
            RemoveTopicRecord: replication.replay_remove_topic,
            # DEC-22: the types Kafka's records (the kafka profile's) define otherwise
            KafkaRegisterBrokerRecord: cluster.replay_kafka_register,
            BrokerRegistrationChangeRecord: cluster.replay_registration_change,
            KafkaFeatureLevelRecord: cluster.replay_kafka_feature_level,
            KafkaTopicRecord: replication.replay_kafka_topic,
        }

    def replay(self, record) -> bool:
        """Apply one record; False when it does not apply (LOG-13) or is outside the lifecycle (LOG-16)."""
        handler = self._replay.get(type(record))
        return bool(handler(record)) if handler is not None else False

    def replay_all(self, records) -> None:
        """:meth:`replay` each of ``records`` in turn (partition changes straight to their replay)."""
        table, replication = self._replay, self.replication
        for record in records:
            kind = type(record)
            if kind is PartitionChangeRecord:
                replication.replay_partition_change(record)
            elif kind is PartitionRecord:
                replication.replay_partition(record)
            else:
                handler = table.get(type(record))
                if handler is not None:
                    handler(record)

    def undo_uncommitted(self) -> None:
        """LOG-10: restore every before-image, newest first; the state is then the committed one."""
        for key, before in self.journal.undo_order():
            if key[0] in ("broker", "feature", "record_offset"):
                self.cluster.restore(key, before)
            else:
                self.replication.restore(key, before)
        self.journal.clear()
