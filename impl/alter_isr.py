"""AlterIsr (ISR-1 to ISR-11). model/alter_isr.py's counterpart."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from .errors import Error, Refused
from .messages import AlterIsrResponse
from .partitions import partition_change

if TYPE_CHECKING:
    from .controller import Controller


def handle_alter_isr(controller: Controller, request, version: int):
    """ISR-1 to ISR-12."""
    if not request.topics:  # ISR-12, DEC-15: NONE before any check; at once in kafka (DEC-21)
        return Refused("ISR-12", AlterIsrResponse(error_code=Error.NONE))
    registration = controller.state.cluster.brokers.get(request.broker_id)
    if registration is None or registration.epoch != request.broker_epoch:
        return Refused("ISR-2", AlterIsrResponse(error_code=Error.STALE_BROKER_EPOCH))
    counts: dict[tuple, int] = {}
    for topic in request.topics:
        for entry in topic.partitions:
            key = (topic.topic_id, entry.partition_index)
            counts[key] = counts.get(key, 0) + 1
    topic_result, partition_result = AlterIsrResponse.TopicData, AlterIsrResponse.TopicData.PartitionData
    topics = []
    for topic in request.topics:
        results = []
        for entry in topic.partitions:
            error = _alter_partition(controller, request.broker_id, topic.topic_id, entry, counts)
            if error is not None:
                unknown = controller.config.params.refused_partition_fields  # DEC-15: -1, or 0 in kafka
                results.append(partition_result(partition_index=entry.partition_index, error_code=error,
                                                leader_id=unknown, leader_epoch=unknown, partition_epoch=unknown))
                continue
            partition = controller.state.replication.partition(topic.topic_id, entry.partition_index)
            assert partition is not None, "_alter_partition found it"
            if partition.leader != request.broker_id:  # ISR-10: a completed reassignment removed it
                params = controller.config.params  # DEC-15: FENCED_LEADER_EPOCH, or NEW_LEADER_ELECTED in kafka
                unknown = params.refused_partition_fields
                results.append(partition_result(partition_index=entry.partition_index, error_code=Error[params.leader_moved_error],
                                                leader_id=unknown, leader_epoch=unknown, partition_epoch=unknown))
                continue
            results.append(partition_result(
                partition_index=entry.partition_index, error_code=Error.NONE, leader_id=partition.leader,
                leader_epoch=partition.leader_epoch, isr=partition.isr, partition_epoch=partition.partition_epoch,
            ))
        topics.append(topic_result(topic_id=topic.topic_id, partitions=tuple(results)))
    return AlterIsrResponse(error_code=Error.NONE, topics=tuple(topics))


def _alter_partition(controller: Controller, requester: int, topic_id: UUID, entry, counts) -> int | None:
    """The checks of one partition (ISR-3 to ISR-8) and, if they pass, its change (ISR-9); the error or None."""
    replication = controller.state.replication
    partition = replication.partition(topic_id, entry.partition_index)
    if partition is None:  # ISR-3, DEC-15
        return Error.UNKNOWN_TOPIC_OR_PARTITION if topic_id in replication.topics else Error.UNKNOWN_TOPIC_ID
    if counts[(topic_id, entry.partition_index)] > 1:
        return Error.INVALID_REQUEST
    if entry.leader_epoch > partition.leader_epoch or entry.partition_epoch > partition.partition_epoch:
        return Error.NOT_CONTROLLER  # ISR-4, DEC-15: epochs ahead of the controller's
    if entry.leader_epoch < partition.leader_epoch:
        return Error.FENCED_LEADER_EPOCH
    if requester != partition.leader:  # ISR-5, DEC-15: by profile
        return Error[controller.config.params.not_leader_error]
    if entry.partition_epoch < partition.partition_epoch:
        return Error.INVALID_UPDATE_VERSION
    new_isr = entry.new_isr
    replicas = partition.replicas
    if (
        not new_isr
        or len(set(new_isr)) != len(new_isr)
        or any(b not in replicas for b in new_isr)
        or partition.leader not in new_isr
    ):
        return Error.INVALID_REQUEST
    is_eligible = controller.state.cluster.is_eligible  # DEC-22: a registration in controlled shutdown too
    if not all(is_eligible(b) for b in new_isr):
        return Error.INELIGIBLE_REPLICA
    partition_change(controller, partition, isr=tuple(new_isr))
    return None
