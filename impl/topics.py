"""CreateTopics and DeleteTopics (TOPIC-1 to TOPIC-11, REASSIGN-12). model/topics.py's counterpart."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import Error, Refused
from .messages import ZERO_UUID, CreateTopicsResponse, DeleteTopicsResponse, PartitionRecord, RemoveTopicRecord
from .partitions import is_eligible_leader

if TYPE_CHECKING:
    from .controller import Controller

MAX_TOPIC_NAME = 249
MAX_RECORDS_PER_REQUEST = 10_000  # TOPIC-11: the records one CreateTopics may append (Kafka's bound per operation)
MAX_PARTITIONS_PER_REQUEST = 10_000  # TOPIC-11: the partitions one CreateTopics may ask for, counted first
_LEGAL_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def handle_create_topics(controller: Controller, request, version: int):
    """TOPIC-1 to TOPIC-6, TOPIC-9 and TOPIC-11: every topic is planned first, and its records are
    added only once the whole request is known to fit in one operation."""
    result = CreateTopicsResponse.CreatableTopicResult

    def refused() -> Refused:  # TOPIC-11: the request refused as a whole, nothing written
        return Refused("TOPIC-11", CreateTopicsResponse(topics=tuple(
            result(name=t.name, topic_id=ZERO_UUID, error_code=Error.POLICY_VIOLATION) for t in request.topics)))

    asked = sum(len(t.assignments) if t.assignments else (1 if t.num_partitions == -1 else max(t.num_partitions, 0))
                for t in request.topics)
    if asked > MAX_PARTITIONS_PER_REQUEST:  # TOPIC-11: the partitions asked for, before any check
        return refused()
    seen: set[str] = set()
    taken: set = set()  # the ids of the topics planned before, as the image would have them
    plans, room = [], MAX_RECORDS_PER_REQUEST
    for topic in request.topics:
        first = topic.name not in seen
        seen.add(topic.name)
        error, records = create_topic(controller, topic, first, taken, room)
        if error == Error.POLICY_VIOLATION:  # TOPIC-11
            return refused()
        if records:
            taken.add(topic.topic_id)
            room -= len(records)
        plans.append((topic, error, records))
    results = []
    for topic, error, records in plans:
        for record in records:
            controller._add(record)
        results.append(result(name=topic.name, topic_id=topic.topic_id if records else ZERO_UUID, error_code=error))
    return CreateTopicsResponse(topics=tuple(results))


def create_topic(controller: Controller, topic, first: bool, taken: set, room: int) -> tuple[int, list]:
    """One topic's error and records, when the request may still append ``room`` records."""
    name = topic.name
    if not (0 < len(name) <= MAX_TOPIC_NAME and name not in (".", "..") and set(name) <= _LEGAL_NAME_CHARS):
        return Error.INVALID_TOPIC_EXCEPTION, []
    if not first:
        return Error.INVALID_REQUEST, []
    replication, brokers = controller.state.replication, controller.state.cluster.brokers
    if name in replication.topics_by_name:
        return Error.TOPIC_ALREADY_EXISTS, []
    if topic.topic_id == ZERO_UUID or topic.topic_id in replication.topics or topic.topic_id in taken:
        return Error.INVALID_REQUEST, []
    by_count = topic.num_partitions != -1 or topic.replication_factor != -1
    if bool(topic.assignments) == by_count:
        return Error.INVALID_REQUEST, []
    if topic.assignments:  # TOPIC-3
        by_index = {a.partition_index: tuple(a.broker_ids) for a in topic.assignments}
        if len(by_index) != len(topic.assignments) or sorted(by_index) != list(range(len(by_index))):
            return Error.INVALID_REPLICA_ASSIGNMENT, []
        for replicas in by_index.values():
            if not replicas or len(set(replicas)) != len(replicas) or any(b not in brokers for b in replicas):
                return Error.INVALID_REPLICA_ASSIGNMENT, []
        if len({len(replicas) for replicas in by_index.values()}) != 1:  # TOPIC-9
            return Error.INVALID_REPLICA_ASSIGNMENT, []
        count, no_isr = len(by_index), Error.INVALID_REPLICA_ASSIGNMENT
    else:  # TOPIC-4
        if topic.num_partitions < 1:
            return Error.INVALID_PARTITIONS, []
        unfenced, fenced = placement_candidates(controller)
        if not 1 <= topic.replication_factor <= len(unfenced) + len(fenced) or not unfenced:
            return Error.INVALID_REPLICATION_FACTOR, []
        count, no_isr = topic.num_partitions, Error.INVALID_REPLICATION_FACTOR
    if 1 + count > room:  # TOPIC-11: counted before anything is placed
        return Error.POLICY_VIOLATION, []
    if topic.assignments:
        assignment = [by_index[i] for i in range(count)]
    else:  # DEC-26: round-robin over the unfenced brokers, the fenced ones only where they are too few
        factor = topic.replication_factor
        k, m = len(unfenced), len(fenced)
        from_unfenced = min(factor, k)
        assignment = [
            tuple(unfenced[(p + j) % k] for j in range(from_unfenced)) + tuple(fenced[(p + j) % m] for j in range(factor - from_unfenced))
            for p in range(count)
        ]
    isrs = [tuple(b for b in replicas if is_eligible_leader(controller, b)) for replicas in assignment]  # TOPIC-5
    if not all(isrs):
        return no_isr, []
    records = [controller.formats.topic(name, topic.topic_id)]  # DEC-22: the profile's TopicRecord
    for partition_id, (replicas, isr) in enumerate(zip(assignment, isrs, strict=True)):
        records.append(PartitionRecord.make(
            partition_id=partition_id, topic_id=topic.topic_id, replicas=replicas, isr=isr,
            removing_replicas=(), adding_replicas=(), leader=isr[0], leader_epoch=0, partition_epoch=0,
        ))
    return Error.NONE, records


def placement_candidates(controller: Controller) -> tuple[list[int], list[int]]:
    """TOPIC-4: the brokers a new replica may go to, by id: unfenced ones (not in controlled
    shutdown), then fenced ones (DEC-26)."""
    brokers, leases = controller.state.cluster.brokers, controller.leases.leases
    # the active controller's word on controlled shutdown, not the registration's (DEC-22), as Kafka's placer
    unfenced = sorted(b for b, r in brokers.items() if not r.fenced and not (b in leases and leases[b].in_controlled_shutdown))
    fenced = sorted(b for b, registration in brokers.items() if registration.fenced)
    return unfenced, fenced


def handle_delete_topics(controller: Controller, request, version: int):
    """TOPIC-7, TOPIC-10, REASSIGN-12."""
    result = DeleteTopicsResponse.DeletableTopicResult
    replication = controller.state.replication
    seen: set[str] = set()
    results = []
    for name in request.topic_names:
        committed_id = replication.committed_topic_id(name)  # TOPIC-10: names resolve against committed state
        topic = None if committed_id is None else replication.topics.get(committed_id)
        if name in seen:
            results.append(result(name=name, topic_id=ZERO_UUID, error_code=Error.INVALID_REQUEST))
        elif committed_id is None:
            results.append(result(name=name, topic_id=ZERO_UUID, error_code=Error.UNKNOWN_TOPIC_OR_PARTITION))
        elif topic is None or topic.name != name:  # an uncommitted deletion already removed it
            results.append(result(name=name, topic_id=committed_id, error_code=Error.UNKNOWN_TOPIC_ID))
        else:
            results.append(result(name=name, topic_id=topic.topic_id, error_code=Error.NONE))
            controller._add(RemoveTopicRecord(topic_id=topic.topic_id))
        seen.add(name)
    response = DeleteTopicsResponse(responses=tuple(results))
    if not any(r.error_code in (Error.NONE, Error.UNKNOWN_TOPIC_ID) for r in results):
        return Refused("TOPIC-10", response)  # no name resolved (DEC-21)
    return response
