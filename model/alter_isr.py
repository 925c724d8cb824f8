"""AlterIsr (ISR-1 to ISR-11): a partition leader asks to change its ISR."""

from __future__ import annotations

from collections import Counter

from .decision import Decision
from .errors import Error
from .messages import (
    AlterIsrPartition,
    AlterIsrPartitionResult,
    AlterIsrRequest,
    AlterIsrResponse,
    AlterIsrTopicResult,
)
from .partitions import partition_change
from .records import PartitionChangeRecord
from .replay import replay
from .rules import cite, reject
from .state import ControllerState


def handle_alter_isr(state: ControllerState, request: AlterIsrRequest) -> Decision:
    if not request.topics:
        cite("ISR-12")  # DEC-15: NONE before any check, as Kafka answers; at once in kafka (DEC-21)
        return Decision(response=AlterIsrResponse(Error.NONE), refused_by="ISR-12")
    registration = state.image.brokers.get(request.broker_id)
    if registration is None or registration.epoch != request.broker_epoch:
        reject("ISR-2")  # the whole request is refused
        return Decision(response=AlterIsrResponse(Error.STALE_BROKER_EPOCH), refused_by="ISR-2")

    cite("ISR-1")
    named = Counter((t.topic_id, p.partition_index) for t in request.topics for p in t.partitions)
    records: list[PartitionChangeRecord] = []
    topics: list[AlterIsrTopicResult] = []
    for topic in request.topics:
        results = []
        for entry in topic.partitions:
            record, result = _alter_partition(state, request.broker_id, topic.topic_id, entry, named)
            if record is not None:
                records.append(record)
            results.append(result)
        topics.append(AlterIsrTopicResult(topic.topic_id, tuple(results)))
    return Decision(records=tuple(records), response=AlterIsrResponse(Error.NONE, tuple(topics)))


def _alter_partition(state, requester, topic_id, entry: AlterIsrPartition, named: Counter):
    """One partition's record (or None) and result, decided on the state before the request."""
    image = state.image

    def refuse(rule: str, error: Error):
        reject(rule)
        # DEC-15: a refused partition's other fields stay 0, as Kafka leaves them
        return None, AlterIsrPartitionResult(entry.partition_index, error, 0, 0, (), 0)

    partition = image.partitions.get((topic_id, entry.partition_index))
    if partition is None:  # DEC-15: Kafka's codes for an unknown topic id and an unknown partition
        return refuse("ISR-3", Error.UNKNOWN_TOPIC_OR_PARTITION if topic_id in image.topics else Error.UNKNOWN_TOPIC_ID)
    if named[(topic_id, entry.partition_index)] > 1:
        return refuse("ISR-11", Error.INVALID_REQUEST)
    if entry.leader_epoch > partition.leader_epoch or entry.partition_epoch > partition.partition_epoch:
        return refuse("ISR-4", Error.NOT_CONTROLLER)  # DEC-15: epochs ahead of the controller's
    if entry.leader_epoch < partition.leader_epoch:
        return refuse("ISR-4", Error.FENCED_LEADER_EPOCH)
    if requester != partition.leader:
        return refuse("ISR-5", Error[state.config.params.not_leader_error])  # DEC-15
    if entry.partition_epoch != partition.partition_epoch:  # DEC-16: topics by id, with the partition epoch
        return refuse("ISR-6", Error.INVALID_UPDATE_VERSION)
    new_isr = entry.new_isr
    if (
        not new_isr
        or len(set(new_isr)) != len(new_isr)
        or any(b not in partition.replicas for b in new_isr)
        or partition.leader not in new_isr
    ):
        return refuse("ISR-7", Error.INVALID_REQUEST)
    # DEC-22: a registration that says it is in controlled shutdown (Kafka's records) is ineligible too
    if any(b not in image.brokers or image.brokers[b].fenced or image.brokers[b].in_controlled_shutdown for b in new_isr):
        return refuse("ISR-8", Error.INELIGIBLE_REPLICA)

    cite("ISR-9")
    record = partition_change(image, state.leases, partition, state.config.params, isr=tuple(new_isr))
    after = replay(image, record).partitions[partition.key] if record is not None else partition
    if after.leader != requester:
        reject("ISR-10")  # a completed reassignment removed the requester (REASSIGN-7)
        cite("REASSIGN-7")
        params = state.config.params  # DEC-15: seed 000's FENCED_LEADER_EPOCH, or Kafka's NEW_LEADER_ELECTED
        result = AlterIsrPartitionResult(entry.partition_index, Error[params.leader_moved_error], 0, 0, (), 0)
        return record, result
    if after.isr != tuple(new_isr):
        cite("REASSIGN-7")  # the completion pruned the ISR; the response carries the one applied
    result = AlterIsrPartitionResult(
        entry.partition_index,
        Error.NONE,
        leader_id=after.leader,
        leader_epoch=after.leader_epoch,
        isr=after.isr,
        partition_epoch=after.partition_epoch,
    )
    return record, result
