"""Topics and partitions, with a broker -> partitions index (hard state, changed only by replay).

The index maps each broker to the partitions that name it in ``replicas`` (which holds the ISR
and the adding and removing replicas), so that fencing, unfencing, unregistering or shutting
down a broker costs what that broker holds, not what the cluster holds. A per-broker count of
leaderships answers "does it lead anything" (SHUT-3) at once.
"""

from __future__ import annotations

from operator import attrgetter
from uuid import UUID

from .journal import Journal

NO_LEADER = -1
NO_LEADER_CHANGE = -2


class Topic:
    __slots__ = ("name", "topic_id", "partitions")

    def __init__(self, name: str, topic_id: UUID) -> None:
        self.name = name
        self.topic_id = topic_id
        self.partitions: list[Partition] = []


class Partition:
    """PART-1. ``fields()`` is the partition's value, the form the journal keeps."""

    __slots__ = (
        "topic", "partition_id", "replicas", "isr", "removing_replicas", "adding_replicas",
        "leader", "leader_epoch", "partition_epoch",
    )

    def __init__(self, topic: Topic, partition_id: int, replicas, isr, removing, adding, leader, leader_epoch, partition_epoch):
        self.topic = topic
        self.partition_id = partition_id
        self.replicas = replicas
        self.isr = isr
        self.removing_replicas = removing
        self.adding_replicas = adding
        self.leader = leader
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch

    def fields(self) -> tuple:
        return (
            self.replicas, self.isr, self.removing_replicas, self.adding_replicas,
            self.leader, self.leader_epoch, self.partition_epoch,
        )

    @property
    def reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)


_BROKER_LISTS: dict[tuple, tuple] = {}
_BROKER_LISTS_MAX = 1 << 16
_already_shared = _BROKER_LISTS.get
"""shared()'s lookup as a bound method (one C call, where compiled code would look ``get`` up on
the dict each time); replay of a partition change tries it before calling shared()."""


def shared(brokers: tuple) -> tuple:
    """One tuple object for every equal list of brokers: a large cluster has far fewer distinct
    replica lists and ISRs than partitions, and a tuple of three costs 64 bytes each time."""
    found = _already_shared(brokers)
    if found is not None:
        return found
    if len(_BROKER_LISTS) >= _BROKER_LISTS_MAX:
        _BROKER_LISTS.clear()
    _BROKER_LISTS[brokers] = brokers
    return brokers


_BY_ID = attrgetter("partition_id")

_SMALL_INTS = {n: n for n in range(4096)}
_small = _SMALL_INTS.get
"""One int object per value below 4096, for the partition ids and leaders a partition keeps: CPython
makes a new int for each value above 256 that it decodes, 32 bytes a partition each time."""


class ReplicationControl:
    __slots__ = (
        "topics", "topics_by_name", "topics_by_int", "replica_of", "leaderships", "reassigning", "journal", "topic_places",
    )

    def __init__(self, journal: Journal) -> None:
        self.topics: dict[UUID, Topic] = {}
        self.topics_by_name: dict[str, Topic] = {}
        # the same topics keyed by the id's 128-bit integer: UUID's own __hash__ and __eq__ run in
        # Python and cost a microsecond a lookup, which replay pays once per record
        self.topics_by_int: dict[int, Topic] = {}
        self.replica_of: dict[int, set[Partition]] = {}
        self.leaderships: dict[int, int] = {}
        self.reassigning: set[Partition] = set()  # partitions with adding or removing replicas
        self.journal = journal
        # each topic's place among the topics by name: a cache of a function of the topics, filled
        # when partition order is first asked for after a topic came or went (None until then, so
        # that loading a snapshot of many topics does not sort their names once per topic), and
        # dropped by the replay that adds or removes one (a removed topic is not kept alive)
        self.topic_places: dict[Topic, int] | None = None

    # ---- queries ------------------------------------------------------------------------

    def partition(self, topic_id: UUID, partition_id: int) -> Partition | None:
        topic = self.topics_by_int.get(topic_id.int)
        if topic is None or not 0 <= partition_id < len(topic.partitions):
            return None
        return topic.partitions[partition_id]

    def leads_any(self, broker_id: int) -> bool:
        return self.leaderships.get(broker_id, 0) > 0

    def partitions_of(self, broker_id: int) -> list[Partition]:
        """The partitions that name the broker, in partition order (PART-5): sorted by partition
        id, then (a stable sort) by their topic's place among the topics by name. Both keys are
        small ints, which sort faster than the names do, and a topic's place is found by the topic
        object, which hashes by identity, so that the sort reads none of the names."""
        places = self.topic_places
        if places is None:  # a topic came or went since partition order was last asked for
            names = self.topics_by_name
            places = self.topic_places = {names[name]: place for place, name in enumerate(sorted(names))}
        held = sorted(self.replica_of.get(broker_id, ()), key=_BY_ID)
        held.sort(key=lambda p: places[p.topic])
        return held

    # ---- index upkeep ----------------------------------------------------------------------

    def _index(self, partition: Partition) -> None:
        for broker_id in partition.replicas:
            self.replica_of.setdefault(broker_id, set()).add(partition)
        if partition.leader != NO_LEADER:
            self.leaderships[partition.leader] = self.leaderships.get(partition.leader, 0) + 1
        if partition.reassigning:
            self.reassigning.add(partition)

    def _unindex(self, partition: Partition) -> None:
        for broker_id in partition.replicas:
            held = self.replica_of[broker_id]
            held.discard(partition)
            if not held:
                del self.replica_of[broker_id]
        if partition.leader != NO_LEADER:
            self._count_leadership(partition.leader, -1)
        self.reassigning.discard(partition)

    def _count_leadership(self, broker_id: int, delta: int) -> None:
        count = self.leaderships.get(broker_id, 0) + delta
        if count:
            self.leaderships[broker_id] = count
        else:
            self.leaderships.pop(broker_id, None)

    def _assign(self, partition: Partition, replicas, isr, removing, adding, leader, leader_epoch, partition_epoch) -> None:
        """Set every field of a partition, keeping the index right."""
        if replicas is not partition.replicas and replicas != partition.replicas:
            old = set(partition.replicas)
            new = set(replicas)
            for broker_id in old - new:
                held = self.replica_of[broker_id]
                held.discard(partition)
                if not held:
                    del self.replica_of[broker_id]
            for broker_id in new - old:
                self.replica_of.setdefault(broker_id, set()).add(partition)
            partition.replicas = replicas
        if leader != partition.leader:
            if partition.leader != NO_LEADER:
                self._count_leadership(partition.leader, -1)
            if leader != NO_LEADER:
                self._count_leadership(leader, +1)
            partition.leader = leader
        partition.isr = isr
        partition.removing_replicas = removing
        partition.adding_replicas = adding
        if removing or adding:
            self.reassigning.add(partition)
        else:
            self.reassigning.discard(partition)
        partition.leader_epoch = leader_epoch
        partition.partition_epoch = partition_epoch

    # ---- replay (LOG-13: a record that does not apply changes nothing) ----------------------

    def replay_topic(self, record) -> bool:
        """TOPIC-6: seed 000's TopicRecord."""
        return self.add_topic(record.topic_name, record.topic_id)

    def replay_kafka_topic(self, record) -> bool:
        """TOPIC-6, DEC-22: Kafka's TopicRecord, whose name is ``Name``."""
        return self.add_topic(record.name, record.topic_id)

    def add_topic(self, name: str, topic_id) -> bool:
        """TOPIC-6: a new topic, unless its id or its name is taken (LOG-13)."""
        if topic_id in self.topics or name in self.topics_by_name:
            return False
        self.journal.remember(("topic", topic_id), lambda: None)
        topic = Topic(name, topic_id)
        self.topics[topic.topic_id] = topic
        self.topics_by_name[topic.name] = topic
        self.topics_by_int[topic.topic_id.int] = topic
        self.topic_places = None
        return True

    def replay_partition(self, record) -> bool:
        """PART-1: a new partition, appended to its topic (partition ids are dense)."""
        topic = self.topics_by_int.get(record.topic_id.int)
        partition_id = record.partition_id
        if topic is None or partition_id > len(topic.partitions):
            return False
        key = ("partition", record.topic_id.int, partition_id)
        if partition_id < len(topic.partitions):  # a snapshot or a repeat replaces it
            existing = topic.partitions[partition_id]
            self.journal.remember(key, existing.fields)
            self._assign(existing, record.replicas, record.isr, record.removing_replicas, record.adding_replicas,
                         record.leader, record.leader_epoch, record.partition_epoch)
            return True
        images = self.journal.current
        if images is not None:  # Journal.remember, inline: created by this batch
            images.setdefault(key, None)
        replicas, removing, adding, leader = shared(record.replicas), record.removing_replicas, record.adding_replicas, record.leader
        partition = Partition(topic, _small(partition_id, partition_id), replicas, shared(record.isr),
                              shared(removing) if removing else (), shared(adding) if adding else (),
                              _small(leader, leader), record.leader_epoch, record.partition_epoch)
        topic.partitions.append(partition)
        # _index, inline: replay pays it once per partition of a snapshot
        replica_of = self.replica_of
        for broker_id in replicas:
            held = replica_of.get(broker_id)
            if held is None:
                replica_of[broker_id] = {partition}
            else:
                held.add(partition)
        if leader != NO_LEADER:
            leaderships = self.leaderships
            leaderships[leader] = leaderships.get(leader, 0) + 1
        if removing or adding:
            self.reassigning.add(partition)
        return True

    def replay_partition_change(self, record) -> bool:
        """PART-2: null fields and Leader -2 are unchanged; every change bumps the partition
        epoch; a Leader field bumps the leader epoch (DEC-17)."""
        topic_number, partition_id = record.topic_id.int, record.partition_id
        topic = self.topics_by_int.get(topic_number)
        if topic is None or not 0 <= partition_id < len(topic.partitions):
            return False
        partition = topic.partitions[partition_id]
        images = self.journal.current
        if images is not None:  # Journal.remember, inline (replay pays it once per record): the
            # before-image unless this batch has one; a tuple made for nothing costs less than a
            # second hash of the key
            images.setdefault(("partition", topic_number, partition_id), partition.fields())
        if record.replicas is None and record.removing_replicas is None and record.adding_replicas is None:
            # only the ISR and the leader: the replica index and the reassigning set stand
            isr = record.isr
            if isr is not None:
                partition.isr = _already_shared(isr) or shared(isr)
            leader = record.leader
            if leader != NO_LEADER_CHANGE:
                old = partition.leader
                if leader != old:
                    counts = self.leaderships
                    if old != NO_LEADER:
                        count = counts.get(old, 0) - 1
                        if count:
                            counts[old] = count
                        else:
                            counts.pop(old, None)
                    if leader != NO_LEADER:
                        counts[leader] = counts.get(leader, 0) + 1
                    partition.leader = leader
                partition.leader_epoch += 1
            partition.partition_epoch += 1
            return True
        leader = partition.leader if record.leader == NO_LEADER_CHANGE else record.leader
        self._assign(
            partition,
            partition.replicas if record.replicas is None else shared(record.replicas),
            partition.isr if record.isr is None else shared(record.isr),
            partition.removing_replicas if record.removing_replicas is None else shared(record.removing_replicas),
            partition.adding_replicas if record.adding_replicas is None else shared(record.adding_replicas),
            leader,
            partition.leader_epoch + (record.leader != NO_LEADER_CHANGE),
            partition.partition_epoch + 1,
        )
        return True

    def replay_remove_topic(self, record) -> bool:
        """TOPIC-8: the topic goes, with its partitions and their reassignments."""
        topic = self.topics.get(record.topic_id)
        if topic is None:
            return False
        self.journal.remember(("topic", topic.topic_id), lambda: (topic.name, [p.fields() for p in topic.partitions]))
        for partition in topic.partitions:
            self._unindex(partition)
        del self.topics[topic.topic_id]
        del self.topics_by_name[topic.name]
        del self.topics_by_int[topic.topic_id.int]
        self.topic_places = None
        return True

    # ---- undo (failover) ----------------------------------------------------------------------

    def restore(self, key, before) -> None:
        """Put an entity back to its before-image (LOG-10)."""
        if key[0] == "topic":
            _, topic_id = key
            self.topic_places = None
            current = self.topics.get(topic_id)
            if current is not None:
                for partition in current.partitions:
                    self._unindex(partition)
                del self.topics[topic_id]
                del self.topics_by_name[current.name]
                del self.topics_by_int[topic_id.int]
            if before is not None:
                name, partitions = before
                topic = Topic(name, topic_id)
                self.topics[topic_id] = topic
                self.topics_by_name[name] = topic
                self.topics_by_int[topic_id.int] = topic
                for partition_id, fields in enumerate(partitions):
                    partition = Partition(topic, partition_id, *fields)
                    topic.partitions.append(partition)
                    self._index(partition)
        else:
            _, topic_number, partition_id = key
            topic = self.topics_by_int[topic_number]
            if before is None:  # created by the batch: it is the last one of its topic
                partition = topic.partitions.pop()
                self._unindex(partition)
            else:
                self._assign(topic.partitions[partition_id], *before)

    # ---- the committed view, for reads (LOG-8) -----------------------------------------------

    def committed_partitions(self, only_reassigning: bool = False) -> list[tuple[str, UUID, int, tuple]]:
        """(topic name, topic id, partition id, fields) of committed partitions, in partition order.

        The committed value of a partition is its before-image, or its topic's, in the oldest
        uncommitted batch that touched either; its live value if none did. With
        ``only_reassigning``, only the partitions reassigning in the committed state, found
        through the index and the journal rather than a scan.
        """
        touched = self.journal.touched()
        if not only_reassigning:
            return self._all_committed_partitions({key[1] for key in touched if key[0] == "topic"})
        candidates: set[tuple[UUID, int]] = set()
        candidates |= {(p.topic.topic_id, p.partition_id) for p in self.reassigning}
        candidates |= {(UUID(int=key[1]), key[2]) for key in touched if key[0] == "partition"}
        for topic_id in {key[1] for key in touched if key[0] == "topic"}:
            candidates |= {(topic_id, i) for i in range(self._committed_topic(topic_id)[1])}
        result = []
        for topic_id, partition_id in candidates:
            name, count = self._committed_topic(topic_id)
            if partition_id >= count:
                continue
            fields = self._committed_partition(topic_id, partition_id)
            if fields is None or not (fields[2] or fields[3]):
                continue
            result.append((name, topic_id, partition_id, fields))
        result.sort(key=lambda item: (item[0], item[2]))
        return result

    def _all_committed_partitions(self, touched_topics: set[UUID]) -> list[tuple[str, UUID, int, tuple]]:
        """Every committed partition, as committed_partitions gives them: topic by topic in the order
        of their names (no two committed topics share one: TOPIC-2 refuses a name that exists), each
        topic's name and partition count looked up once, and its partitions in order. Not a set of
        every (topic id, partition) and a sort of them all, which was most of a snapshot's writing."""
        topics = []
        for topic_id in set(self.topics) | touched_topics:
            name, count = self._committed_topic(topic_id)
            if count:
                topics.append((name, topic_id, count))
        topics.sort()
        result = []
        for name, topic_id, count in topics:
            for partition_id in range(count):
                fields = self._committed_partition(topic_id, partition_id)
                if fields is not None:
                    result.append((name, topic_id, partition_id, fields))
        return result

    def committed_topic_id(self, name: str) -> UUID | None:
        """The id of the committed topic named ``name``, or None (TOPIC-10)."""
        live = self.topics_by_name.get(name)
        if live is not None and self._committed_topic(live.topic_id)[0] == name:
            return live.topic_id
        for key in self.journal.touched():  # a committed topic that an uncommitted batch removed
            if key[0] == "topic" and self._committed_topic(key[1])[0] == name:
                return key[1]
        return None

    def _committed_topic(self, topic_id: UUID) -> tuple[str, int]:
        """The committed topic's name and partition count; an empty name and 0 if it is not committed."""
        for _, images in self.journal.batches:
            if ("topic", topic_id) in images:
                image = images[("topic", topic_id)]
                return ("", 0) if image is None else (image[0], len(image[1]))
        topic = self.topics.get(topic_id)
        return ("", 0) if topic is None else (topic.name, len(topic.partitions))

    def _committed_partition(self, topic_id: UUID, partition_id: int) -> tuple | None:
        for _, images in self.journal.batches:
            key = ("partition", topic_id.int, partition_id)
            if key in images:
                return images[key]
            if ("topic", topic_id) in images:
                image = images[("topic", topic_id)]
                return None if image is None else image[1][partition_id]
        return self.topics[topic_id].partitions[partition_id].fields()
