"""AlterIsr (ISR-1 to ISR-12). model/alter_isr.py's counterpart."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from .errors import Error, Refused
from .messages import AlterIsrResponse
from .partitions import partition_change

if TYPE_CHECKING:
    from .controller import Controller

_TOPIC_RESULT = AlterIsrResponse.TopicData
_PARTITION_RESULT = AlterIsrResponse.TopicData.PartitionData


def handle_alter_isr(controller: Controller, request, version: int):
    """ISR-1 to ISR-12."""
    if not request.topics:  # ISR-12, DEC-15: NONE before any check; at once in kafka (DEC-21)
        return Refused("ISR-12", AlterIsrResponse(error_code=Error.NONE))
    registration = controller.state.cluster.brokers.get(request.broker_id)
    if registration is None or registration.epoch != request.broker_epoch:
        return Refused("ISR-2", AlterIsrResponse(error_code=Error.STALE_BROKER_EPOCH))
    # ISR-11: how often the request names each partition, keyed by its topic id's 128-bit int (a
    # UUID's own hash runs in Python)
    counts: dict[tuple[int, int], int] = {}
    for topic in request.topics:
        for entry in topic.partitions:
            key = (topic.topic_id.int, entry.partition_index)
            counts[key] = counts.get(key, 0) + 1
    replication = controller.state.replication
    topics = []
    for topic in request.topics:  # ISR-1: a result per partition, in the request's order
        results = []
        for entry in topic.partitions:
            error = _alter_partition(controller, request.broker_id, topic.topic_id, entry, counts)
            if error is not None:
                # DEC-15: the other fields stay 0, as Kafka leaves them
                results.append(_PARTITION_RESULT.make(partition_index=entry.partition_index, error_code=error,
                                                      leader_id=0, leader_epoch=0, partition_epoch=0))
                continue
            partition = replication.partition(topic.topic_id, entry.partition_index)
            assert partition is not None, "_alter_partition found it"
            if partition.leader != request.broker_id:  # ISR-10: a completed reassignment removed it
                params = controller.config.params  # DEC-15: FENCED_LEADER_EPOCH, or NEW_LEADER_ELECTED in kafka
                results.append(_PARTITION_RESULT.make(partition_index=entry.partition_index, error_code=Error[params.leader_moved_error],
                                                      leader_id=0, leader_epoch=0, partition_epoch=0))
                continue
            results.append(_PARTITION_RESULT.make(
                partition_index=entry.partition_index, error_code=Error.NONE, leader_id=partition.leader,
                leader_epoch=partition.leader_epoch, isr=partition.isr, partition_epoch=partition.partition_epoch,
            ))
        topics.append(_TOPIC_RESULT.make(topic_id=topic.topic_id, partitions=tuple(results)))
    return AlterIsrResponse.make(error_code=Error.NONE, topics=tuple(topics))


def _alter_partition(controller: Controller, requester: int, topic_id: UUID, entry, counts) -> int | None:
    """The checks of one partition (ISR-3 to ISR-8, ISR-11) and, if they pass, its change (ISR-9);
    the error or None."""
    replication = controller.state.replication
    partition = replication.partition(topic_id, entry.partition_index)
    if partition is None:  # ISR-3, DEC-15
        return Error.UNKNOWN_TOPIC_OR_PARTITION if topic_id in replication.topics else Error.UNKNOWN_TOPIC_ID
    if counts[(topic_id.int, entry.partition_index)] > 1:  # ISR-11
        return Error.INVALID_REQUEST
    if entry.leader_epoch > partition.leader_epoch or entry.partition_epoch > partition.partition_epoch:
        return Error.NOT_CONTROLLER  # ISR-4, DEC-15: epochs ahead of the controller's
    if entry.leader_epoch < partition.leader_epoch:
        return Error.FENCED_LEADER_EPOCH
    if requester != partition.leader:  # ISR-5, DEC-15: by profile
        return Error[controller.config.params.not_leader_error]
    if entry.partition_epoch < partition.partition_epoch:  # ISR-6
        return Error.INVALID_UPDATE_VERSION
    new_isr = entry.new_isr
    replicas = partition.replicas
    if not new_isr or len(set(new_isr)) != len(new_isr) or partition.leader not in new_isr:  # ISR-7
        return Error.INVALID_REQUEST
    for broker_id in new_isr:
        if broker_id not in replicas:  # ISR-7
            return Error.INVALID_REQUEST
    cluster = controller.state.cluster
    for broker_id in new_isr:
        if not cluster.is_eligible(broker_id):  # ISR-8, DEC-22: a registration in controlled shutdown too
            return Error.INELIGIBLE_REPLICA
    partition_change(controller, partition, isr=tuple(new_isr))  # ISR-9
    return None
