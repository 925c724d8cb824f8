"""Partition reassignment, KIP-455 alter and list (REASSIGN-1 to REASSIGN-10)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

from .decision import Decision
from .errors import Error
from .messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
    ReassignablePartitionResult,
    ReassignableTopicResult,
)
from .partitions import Leases, partition_change, reassignment_complete
from .records import PartitionChangeRecord
from kraftspec.spec.profiles import Profile

from .rules import cite, reject
from .state import ControllerState, MetadataImage, Partition


def handle_alter_partition_reassignments(state: ControllerState, request: AlterPartitionReassignmentsRequest) -> Decision:
    cite("REASSIGN-1")
    image, params = state.image, state.config.params
    named = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    records: list[PartitionChangeRecord] = []
    responses = []
    for topic in request.topics:
        known = image.topic_named(topic.name)
        results = []
        for entry in topic.partitions:
            partition = image.partitions.get((known.topic_id, entry.partition_index)) if known else None
            if partition is None:
                reject("REASSIGN-2")
                error, record = Error.UNKNOWN_TOPIC_OR_PARTITION, None
            elif named[(topic.name, entry.partition_index)] > 1:
                reject("REASSIGN-2")
                error, record = Error.INVALID_REQUEST, None
            elif entry.replicas is None:
                error, record = cancel_reassignment(image, state.leases, partition, params)
            elif not is_valid_target(entry.replicas, image.brokers):
                reject("REASSIGN-3")
                error, record = Error.INVALID_REPLICA_ASSIGNMENT, None
            else:
                error, record = Error.NONE, start_reassignment(image, state.leases, partition, tuple(entry.replicas), params)
            if record is not None:
                records.append(record)
            results.append(ReassignablePartitionResult(entry.partition_index, error))
        responses.append(ReassignableTopicResult(topic.name, tuple(results)))
    return Decision(records=tuple(records), response=AlterPartitionReassignmentsResponse(Error.NONE, tuple(responses)))


def is_valid_target(target: tuple[int, ...], registered: Collection[int]) -> bool:
    """REASSIGN-3: non-empty, no duplicates, registered brokers only (fenced ones allowed).

    post: __return__ == (len(target) > 0 and len(set(target)) == len(target) and set(target) <= set(registered))
    """
    return bool(target) and len(set(target)) == len(target) and all(b in registered for b in target)


def reassignment_lists(
    current: tuple[int, ...], target: tuple[int, ...], layout: str
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """REASSIGN-4: the replicas, removing and adding lists that take ``current`` to ``target``.
    ``layout`` is the profile's ``reassignment_layout`` (DEC-18): the replicas leaving first, in
    their current order, then the target in its order; or, as Kafka does, the target first, then
    the replicas leaving, the removing and adding lists each in ascending broker id.

    pre: len(set(current)) == len(current) and len(set(target)) == len(target)
    post: __return__[0] == (target + __return__[1] if layout == "target-then-removing" else __return__[1] + target)
    post: set(__return__[1]) == set(current) - set(target) and set(__return__[2]) == set(target) - set(current)
    """
    removing = tuple(r for r in current if r not in target)
    adding = tuple(t for t in target if t not in current)
    if layout == "target-then-removing":
        removing, adding = tuple(sorted(removing)), tuple(sorted(adding))
    replicas = target + removing if layout == "target-then-removing" else removing + target
    return replicas, removing, adding


def lists_after_cancel(
    replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """REASSIGN-8: the replicas and the ISR that a cancelled reassignment reverts to: without the
    adding replicas.

    post: (set(__return__[0]), set(__return__[1])) == (set(replicas) - set(adding), set(isr) - set(adding))
    """
    return tuple(r for r in replicas if r not in adding), tuple(r for r in isr if r not in adding)


def start_reassignment(
    image: MetadataImage, leases: Leases, partition: Partition, target: tuple[int, ...], params: Profile
) -> PartitionChangeRecord | None:
    """REASSIGN-4: the lists of the profile's layout (DEC-18)."""
    if partition.is_reassigning:
        cite("REASSIGN-9")  # computed against the full current list, adding and removing included
    replicas, removing, adding = reassignment_lists(partition.replicas, target, params.reassignment_layout)
    cite("REASSIGN-4")
    if not removing and not adding:  # a reordering takes effect at once
        return partition_change(image, leases, partition, params, replicas=target, removing_replicas=(), adding_replicas=())
    if not adding and reassignment_complete(replicas, partition.isr, adding, removing, params.reassignment_completes):
        cite("REASSIGN-5")  # a subset that the ISR completes at once completes in this very record
    return partition_change(
        image, leases, partition, params, replicas=replicas, removing_replicas=removing, adding_replicas=adding
    )


def cancel_reassignment(
    image: MetadataImage, leases: Leases, partition: Partition, params: Profile
) -> tuple[Error, PartitionChangeRecord | None]:
    """REASSIGN-8: revert to the replicas without the adding ones."""
    cite("REASSIGN-8")
    if not partition.is_reassigning:
        reject("REASSIGN-8")
        return Error.NO_REASSIGNMENT_IN_PROGRESS, None
    replicas, isr = lists_after_cancel(partition.replicas, partition.isr, partition.adding_replicas)
    if not isr:  # only adding replicas are in sync: reverting would lose committed data
        reject("REASSIGN-8")
        return Error.INVALID_REPLICA_ASSIGNMENT, None
    record = partition_change(
        image, leases, partition, params, isr=isr, replicas=replicas, removing_replicas=(), adding_replicas=()
    )
    return Error.NONE, record


def handle_list_partition_reassignments(
    state: ControllerState, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    """REASSIGN-10: reassigning partitions among those asked for, from committed state (LOG-8); a
    request that names topics is answered entry by entry, as asked (DEC-38)."""
    cite("REASSIGN-10")
    cite("LOG-8")
    image = state.committed_image
    asked: list[tuple[str, tuple[int, ...] | None]]  # (topic name, the indexes asked for; None: all)
    if request.topics is None:
        asked = [(name, None) for name in sorted(t.name for t in image.topics.values())]
    else:  # DEC-38: in the request's order, as often as named
        asked = [(t.name, t.partition_indexes) for t in request.topics]
    topics = []
    for name, indexes in asked:
        topic = image.topic_named(name)
        if topic is None:
            continue
        if indexes is None:
            listed = image.partitions_of(topic.topic_id)  # by index
        else:
            keys = [(topic.topic_id, i) for i in indexes]
            listed = [image.partitions[key] for key in keys if key in image.partitions]
        partitions = tuple(
            OngoingPartitionReassignment(p.partition_id, p.replicas, p.adding_replicas, p.removing_replicas)
            for p in listed
            if p.is_reassigning
        )
        if partitions:
            topics.append(OngoingTopicReassignment(name, partitions))
    return ListPartitionReassignmentsResponse(Error.NONE, tuple(topics))
