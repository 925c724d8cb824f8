"""AlterPartitionReassignments and ListPartitionReassignments (REASSIGN-1 to REASSIGN-10).
model/reassignment.py's counterpart; completion (REASSIGN-6) is the builder's (builder.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import Error
from .messages import AlterPartitionReassignmentsResponse, ListPartitionReassignmentsResponse
from .partitions import partition_change
from .replication import Partition

if TYPE_CHECKING:
    from .controller import Controller


def handle_alter_partition_reassignments(controller: Controller, request, version: int):
    """REASSIGN-1 to REASSIGN-9."""
    counts: dict[tuple, int] = {}
    for topic in request.topics:
        for entry in topic.partitions:
            key = (topic.name, entry.partition_index)
            counts[key] = counts.get(key, 0) + 1
    topic_result = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
    partition_result = topic_result.ReassignablePartitionResponse
    replication, brokers = controller.state.replication, controller.state.cluster.brokers
    responses = []
    for topic in request.topics:
        known = replication.topics_by_name.get(topic.name)
        results = []
        for entry in topic.partitions:
            partition = replication.partition(known.topic_id, entry.partition_index) if known else None
            if partition is None:
                error = Error.UNKNOWN_TOPIC_OR_PARTITION
            elif counts[(topic.name, entry.partition_index)] > 1:
                error = Error.INVALID_REQUEST
            elif entry.replicas is None:
                error = cancel_reassignment(controller, partition)
            else:
                target = tuple(entry.replicas)
                if not target or len(set(target)) != len(target) or any(b not in brokers for b in target):
                    error = Error.INVALID_REPLICA_ASSIGNMENT
                else:
                    error = Error.NONE
                    start_reassignment(controller, partition, target)
            results.append(partition_result(partition_index=entry.partition_index, error_code=error))
        responses.append(topic_result(name=topic.name, partitions=tuple(results)))
    return AlterPartitionReassignmentsResponse(error_code=Error.NONE, responses=tuple(responses))


def start_reassignment(controller: Controller, partition: Partition, target: tuple[int, ...]) -> None:
    """REASSIGN-4, REASSIGN-5, REASSIGN-9: the target in its order and the replicas leaving, in the
    profile's layout."""
    current = partition.replicas
    removing = tuple(b for b in current if b not in target)
    adding = tuple(b for b in target if b not in current)
    if not removing and not adding:
        partition_change(controller, partition, replicas=target, removing=(), adding=())
    elif controller.config.params.reassignment_layout == "target-then-removing":  # DEC-18: by profile,
        removing, adding = tuple(sorted(removing)), tuple(sorted(adding))  # Kafka's lists in ascending id
        partition_change(controller, partition, replicas=target + removing, removing=removing, adding=adding)
    else:
        partition_change(controller, partition, replicas=removing + target, removing=removing, adding=adding)


def cancel_reassignment(controller: Controller, partition: Partition) -> Error:
    """REASSIGN-8."""
    if not partition.reassigning:
        return Error.NO_REASSIGNMENT_IN_PROGRESS
    adding = partition.adding_replicas
    isr = tuple(b for b in partition.isr if b not in adding)
    if not isr:
        return Error.INVALID_REPLICA_ASSIGNMENT
    replicas = tuple(b for b in partition.replicas if b not in adding)
    partition_change(controller, partition, isr=isr, replicas=replicas, removing=(), adding=())
    return Error.NONE


def handle_list_partition_reassignments(controller: Controller, request):
    """REASSIGN-10: from the committed state; every topic by name, or the topics named, entry by
    entry as asked (DEC-38)."""
    topic_type = ListPartitionReassignmentsResponse.OngoingTopicReassignment
    partition_type = topic_type.OngoingPartitionReassignment

    def ongoing(partition_id: int, fields: tuple):
        replicas, _, removing, adding, *_ = fields
        return partition_type(partition_index=partition_id, replicas=replicas, adding_replicas=adding,
                              removing_replicas=removing)

    reassigning = controller.state.replication.committed_partitions(only_reassigning=True)  # by name, then index
    topics: list[tuple[str, list]] = []
    if request.topics is None:
        for name, _, partition_id, fields in reassigning:
            if not topics or topics[-1][0] != name:
                topics.append((name, []))
            topics[-1][1].append(ongoing(partition_id, fields))
    else:
        found = {(name, partition_id): fields for name, _, partition_id, fields in reassigning}
        for topic in request.topics:
            listed = [ongoing(i, found[topic.name, i]) for i in topic.partition_indexes if (topic.name, i) in found]
            if listed:
                topics.append((topic.name, listed))
    return ListPartitionReassignmentsResponse(
        error_code=Error.NONE,
        topics=tuple(topic_type(name=name, partitions=tuple(ps)) for name, ps in topics),
    )
