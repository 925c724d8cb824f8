"""CreateTopics and DeleteTopics (TOPIC-1 to TOPIC-11)."""

from __future__ import annotations

import re
from uuid import UUID

from .decision import Decision
from .errors import Error
from .messages import (
    ZERO_UUID,
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from kraftspec.spec.profiles import Profile, profile

from .formats import formats_of
from .partitions import Leases, is_eligible_leader, shutting_down
from .records import PartitionRecord, Record, RemoveTopicRecord
from .replay import replay_all
from .rules import cite, reject
from .state import ControllerState, MetadataImage

DEFAULT_PARAMS = profile()

MAX_TOPIC_NAME_LENGTH = 249
MAX_RECORDS_PER_REQUEST = 10_000  # TOPIC-11, DEC-37: Kafka's bound on the records of one operation
MAX_PARTITIONS_PER_REQUEST = 10_000  # TOPIC-11, DEC-37: Kafka's bound on the partitions one request asks for
_LEGAL_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


def is_legal_topic_name(name: str) -> bool:
    """TOPIC-2: 1 to 249 characters of ASCII letters, digits, '.', '_' and '-', not '.' or '..'."""
    return (
        0 < len(name) <= MAX_TOPIC_NAME_LENGTH and name not in (".", "..") and _LEGAL_TOPIC_NAME.match(name) is not None
    )


def partitions_asked(request: CreateTopicsRequest) -> int:
    """TOPIC-11: the partitions a request asks for, counted before any check: an assignment's
    length, a positive count, and one for a count of -1 (Kafka's default partition count)."""
    return sum(
        len(t.assignments) if t.assignments else (1 if t.num_partitions == -1 else max(t.num_partitions, 0))
        for t in request.topics
    )


def _policy_violation(request: CreateTopicsRequest) -> Decision:
    """TOPIC-11: the request refused as a whole, nothing written."""
    reject("TOPIC-11")
    results = tuple(CreatableTopicResult(t.name, ZERO_UUID, Error.POLICY_VIOLATION) for t in request.topics)
    return Decision(response=CreateTopicsResponse(results), refused_by="TOPIC-11")


def handle_create_topics(state: ControllerState, request: CreateTopicsRequest) -> Decision:
    cite("TOPIC-1")
    cite("TOPIC-11")  # DEC-37: first the partitions asked for, then, topic by topic, the records
    if partitions_asked(request) > MAX_PARTITIONS_PER_REQUEST:
        return _policy_violation(request)
    image = state.image  # each topic is decided on what the earlier ones left
    seen: set[str] = set()
    records: list[Record] = []
    results = []
    for topic in request.topics:
        first = topic.name not in seen
        seen.add(topic.name)
        error, created = create_topic(
            image, state.leases, topic, first, MAX_RECORDS_PER_REQUEST - len(records), state.config.params
        )
        if error is Error.POLICY_VIOLATION:  # TOPIC-11: the request is refused as a whole, nothing written
            return _policy_violation(request)
        if created:
            image = replay_all(image, created)
            records.extend(created)
        results.append(CreatableTopicResult(topic.name, topic.topic_id if created else ZERO_UUID, error))
    return Decision(records=tuple(records), response=CreateTopicsResponse(tuple(results)))


def create_topic(
    image: MetadataImage,
    leases: Leases,
    topic: CreatableTopic,
    first: bool,
    room: int = MAX_RECORDS_PER_REQUEST,
    params: Profile = DEFAULT_PARAMS,
) -> tuple[Error, list[Record]]:
    """The error and records of one topic of a CreateTopics request that may still append ``room``
    records (TOPIC-11), in the record formats of ``params`` (DEC-22)."""
    if not is_legal_topic_name(topic.name):
        reject("TOPIC-2")
        return Error.INVALID_TOPIC_EXCEPTION, []
    if not first:
        reject("TOPIC-2")
        return Error.INVALID_REQUEST, []
    if image.topic_named(topic.name) is not None:
        reject("TOPIC-2")
        return Error.TOPIC_ALREADY_EXISTS, []
    if topic.topic_id == ZERO_UUID or topic.topic_id in image.topics:
        reject("TOPIC-2")  # DEC-24: the id is an input and must be fresh
        return Error.INVALID_REQUEST, []
    by_count = topic.num_partitions != -1 or topic.replication_factor != -1
    if bool(topic.assignments) == by_count:
        reject("TOPIC-2")  # an assignment, or a count and a factor: exactly one of the two
        return Error.INVALID_REQUEST, []

    if topic.assignments:
        error, assignment = explicit_assignment(image, topic)
        count, empty_isr_error = len(assignment), Error.INVALID_REPLICA_ASSIGNMENT
    else:
        error, assignment = placement_error(image, leases, topic), []
        count, empty_isr_error = topic.num_partitions, Error.INVALID_REPLICATION_FACTOR
    if error is not Error.NONE:
        return error, []
    cite("TOPIC-11")  # DEC-37: counted before a partition is placed, so no request can ask for too many
    if 1 + count > room:
        reject("TOPIC-11")
        return Error.POLICY_VIOLATION, []
    if not topic.assignments:
        error, assignment = place_by_replication_factor(image, leases, topic)

    cite("TOPIC-5")
    partitions = []
    for index, replicas in enumerate(assignment):
        isr = tuple(r for r in replicas if is_eligible_leader(image, leases, r))
        if not isr:
            reject("TOPIC-5")
            return empty_isr_error, []
        partitions.append(
            PartitionRecord(index, topic.topic_id, replicas, isr, (), (), leader=isr[0], leader_epoch=0, partition_epoch=0)
        )
    cite("TOPIC-6")
    return Error.NONE, [formats_of(params).topic(topic.name, topic.topic_id), *partitions]


def explicit_assignment(image: MetadataImage, topic: CreatableTopic) -> tuple[Error, list[tuple[int, ...]]]:
    """TOPIC-3: indexes 0..n-1 each once; each list non-empty, no duplicates, registered brokers."""
    cite("TOPIC-3")
    by_index = {a.partition_index: tuple(a.broker_ids) for a in topic.assignments}
    if len(by_index) != len(topic.assignments) or sorted(by_index) != list(range(len(by_index))):
        reject("TOPIC-3")
        return Error.INVALID_REPLICA_ASSIGNMENT, []
    for replicas in by_index.values():
        if not replicas or len(set(replicas)) != len(replicas) or any(b not in image.brokers for b in replicas):
            reject("TOPIC-3")
            return Error.INVALID_REPLICA_ASSIGNMENT, []
    cite("TOPIC-9")  # DEC-33: every partition has as many replicas as the others
    if len({len(replicas) for replicas in by_index.values()}) != 1:
        reject("TOPIC-9")
        return Error.INVALID_REPLICA_ASSIGNMENT, []
    return Error.NONE, [by_index[i] for i in range(len(by_index))]


def placement_candidates(image: MetadataImage, leases: Leases) -> tuple[list[int], list[int]]:
    """TOPIC-4: the brokers a new replica may go to, by id: the unfenced ones, then the fenced ones
    (DEC-26). A broker the active controller knows to be in controlled shutdown is neither; its
    registration's word (Kafka's records, DEC-22) does not count here, as in Kafka, whose placer
    asks the heartbeat manager."""
    unfenced = sorted(b for b, r in image.brokers.items() if not r.fenced and not shutting_down(leases, b))
    fenced = sorted(b for b, r in image.brokers.items() if r.fenced)
    return unfenced, fenced


def placement_error(image: MetadataImage, leases: Leases, topic: CreatableTopic) -> Error:
    """TOPIC-4's checks: at least one partition, and a replication factor the brokers allow."""
    cite("TOPIC-4")
    if topic.num_partitions < 1:
        reject("TOPIC-4")
        return Error.INVALID_PARTITIONS
    unfenced, fenced = placement_candidates(image, leases)
    if not 1 <= topic.replication_factor <= len(unfenced) + len(fenced) or not unfenced:
        reject("TOPIC-4")
        return Error.INVALID_REPLICATION_FACTOR
    return Error.NONE


def place_by_replication_factor(
    image: MetadataImage, leases: Leases, topic: CreatableTopic
) -> tuple[Error, list[tuple[int, ...]]]:
    """TOPIC-4: round-robin over the unfenced brokers by id, and over the fenced ones only for the
    places the unfenced cannot fill (DEC-26): partition p starts at the p-th broker of each list."""
    error = placement_error(image, leases, topic)
    if error is not Error.NONE:
        return error, []
    unfenced, fenced = placement_candidates(image, leases)
    from_unfenced = min(topic.replication_factor, len(unfenced))
    from_fenced = topic.replication_factor - from_unfenced
    return Error.NONE, [
        tuple(unfenced[(p + j) % len(unfenced)] for j in range(from_unfenced))
        + tuple(fenced[(p + j) % len(fenced)] for j in range(from_fenced))
        for p in range(topic.num_partitions)
    ]


def topic_to_delete(state: ControllerState, name: str) -> tuple[Error, UUID]:
    """TOPIC-10 (DEC-34): the name resolves against the committed state; the topic it names there
    must still be in the in-memory state under that name."""
    cite("TOPIC-10")
    committed = state.committed_image.topic_named(name)
    if committed is None:
        reject("TOPIC-10")  # unknown, or created by a record not yet committed
        return Error.UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID
    current = state.image.topics.get(committed.topic_id)
    if current is None or current.name != name:
        reject("TOPIC-10")  # an uncommitted RemoveTopicRecord already removed it; answered with the
        return Error.UNKNOWN_TOPIC_ID, committed.topic_id  # id the name resolved to, as Kafka does
    return Error.NONE, committed.topic_id


def handle_delete_topics(state: ControllerState, request: DeleteTopicsRequest) -> Decision:
    cite("TOPIC-7")
    seen: set[str] = set()
    records: list[Record] = []
    results = []
    for name in request.topic_names:
        if name in seen:
            reject("TOPIC-7")
            error, topic_id = Error.INVALID_REQUEST, ZERO_UUID
        else:
            error, topic_id = topic_to_delete(state, name)
        if error is Error.NONE:
            if any(p.is_reassigning for p in state.image.partitions_of(topic_id)):
                cite("REASSIGN-12")  # allowed; replaying the one record ends its reassignments
            records.append(RemoveTopicRecord(topic_id))
        seen.add(name)
        results.append(DeletableTopicResult(name, topic_id, error))
    response = DeleteTopicsResponse(tuple(results))
    if not any(r.error_code in (Error.NONE, Error.UNKNOWN_TOPIC_ID) for r in results):
        return Decision(response=response, refused_by="TOPIC-10")  # no name resolved: DEC-21
    return Decision(records=tuple(records), response=response)
