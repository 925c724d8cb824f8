"""Partition reassignment: REASSIGN-1 to REASSIGN-12. The seeds' worked examples are in
test_seed_examples.py."""

import pytest

from cluster import Cluster, topic_id
from kraftspec.model import Error
from kraftspec.model.messages import (
    AlterPartitionReassignmentsRequest,
    ListedTopic,
    ReassignablePartition,
    ReassignableTopic,
)
from kraftspec.model.records import PartitionChangeRecord, RemoveTopicRecord


def five_brokers(assignment=((1, 2, 3),)) -> Cluster:
    c = Cluster()
    c.start_brokers(1, 2, 3, 4, 5)
    c.create_topic("t", assignment=[list(a) for a in assignment])
    return c


def result(response, topic=0, partition=0):
    return response.responses[topic].partitions[partition].error_code


def test_reassign_1_partitions_are_independent_and_share_one_batch():
    """REASSIGN-1."""
    c = five_brokers(((1, 2, 3), (1, 2, 3)))
    request = AlterPartitionReassignmentsRequest(
        [ReassignableTopic("t", [ReassignablePartition(0, [3, 4, 5]), ReassignablePartition(1, [])])]
    )
    send = c.send(request)
    assert len(send.batches) == 1 and len(send.batches[0].records) == 1
    c.commit()
    response = c.replies[send.seq]
    assert response.error_code == Error.NONE
    assert [p.error_code for p in response.responses[0].partitions] == [Error.NONE, Error.INVALID_REPLICA_ASSIGNMENT]


def test_reassign_2_unknown_or_repeated_partitions():
    """REASSIGN-2, DEC-15."""
    c = five_brokers()
    assert result(c.reassign("t", [1, 2], index=7)) == Error.UNKNOWN_TOPIC_OR_PARTITION
    assert result(c.reassign("nope", [1, 2])) == Error.UNKNOWN_TOPIC_OR_PARTITION
    twice = AlterPartitionReassignmentsRequest(
        [ReassignableTopic("t", [ReassignablePartition(0, [1, 2]), ReassignablePartition(0, [2, 3])])]
    )
    assert [p.error_code for p in c.request(twice).responses[0].partitions] == [Error.INVALID_REQUEST] * 2


@pytest.mark.parametrize("target", [[], [1, 1, 2], [1, 9], [1, -1]], ids=["empty", "duplicate", "unregistered", "negative"])
def test_reassign_3_invalid_targets(target):
    """REASSIGN-3."""
    c = five_brokers()
    assert result(c.reassign("t", target)) == Error.INVALID_REPLICA_ASSIGNMENT
    assert c.records() == []


def test_reassign_3_fenced_brokers_are_valid_targets():
    """REASSIGN-3: registration, not liveness."""
    c = five_brokers()
    c.heartbeat(5, want_fence=True)
    assert result(c.reassign("t", [1, 2, 5])) == Error.NONE


def test_reassign_4_removing_first_then_the_target_in_its_order():
    """REASSIGN-4, DEC-18: [1,2,3] -> [5,3,4] gives replicas [1,2,5,3,4], removing [1,2], adding [5,4]."""
    c = five_brokers()
    c.reassign("t", [5, 3, 4])
    p = c.partition("t")
    assert (p.replicas, p.removing_replicas, p.adding_replicas, p.leader, p.leader_epoch) == (
        (1, 2, 5, 3, 4), (1, 2), (5, 4), 1, 0)
    assert p.target_replicas == (5, 3, 4)


def test_reassign_4_a_reordering_takes_effect_at_once():
    """REASSIGN-4: same replicas, new order; the leader stays."""
    c = five_brokers()
    c.reassign("t", [3, 1, 2])
    assert c.records() == [PartitionChangeRecord(0, topic_id("t"), replicas=(3, 1, 2))]
    assert c.partition("t").leader == 1


def test_reassign_4_the_same_replicas_write_nothing():
    """REASSIGN-4, PART-5."""
    c = five_brokers()
    assert result(c.reassign("t", [1, 2, 3])) == Error.NONE and c.records() == []


def test_reassign_5_a_subset_that_meets_the_isr_completes_immediately():
    """REASSIGN-5: one record with the new replicas, the pruned ISR, and a new leader if needed."""
    c = five_brokers()
    c.alter_isr(1, "t", [1, 2])
    c.reassign("t", [2, 3])
    assert c.records() == [PartitionChangeRecord(0, topic_id("t"), isr=(2,), leader=2, replicas=(2, 3))]


def test_reassign_5_a_subset_that_misses_the_isr_waits():
    """REASSIGN-5 and REASSIGN-6: completes when the ISR meets the target."""
    c = five_brokers()
    c.alter_isr(1, "t", [1])
    c.reassign("t", [2, 3])
    p = c.partition("t")
    assert (p.replicas, p.removing_replicas, p.adding_replicas) == ((1, 2, 3), (1,), ())
    c.alter_isr(1, "t", [1, 3])
    p = c.partition("t")
    assert (p.replicas, p.isr, p.leader, p.removing_replicas) == ((2, 3), (3,), 3, ())


def test_reassign_6_completes_only_when_every_adding_replica_is_in_sync():
    """REASSIGN-6, DEC-18: not with one of two added replicas."""
    c = five_brokers()
    c.reassign("t", [1, 4, 5])
    c.alter_isr(1, "t", [1, 2, 3, 4])
    assert c.partition("t").is_reassigning
    c.alter_isr(1, "t", [1, 2, 3, 4, 5])
    p = c.partition("t")
    assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((1, 4, 5), (1, 4, 5), 1, False)


def test_reassign_6_unregistering_an_adding_replica_leaves_the_reassignment_waiting_for_it():
    """REASSIGN-6, PART-8, DEC-20: the unregistered broker stays in Replicas and AddingReplicas, so the
    reassignment completes once the same id is back and in sync."""
    c = five_brokers()
    c.reassign("t", [1, 2, 3, 4, 5])
    c.alter_isr(1, "t", [1, 2, 3, 4])
    c.unregister(5)
    p = c.partition("t")
    assert (p.replicas, p.adding_replicas, p.isr, p.is_reassigning) == ((1, 2, 3, 4, 5), (4, 5), (1, 2, 3, 4), True)
    assert c.alter_isr(1, "t", [1, 2, 3, 4, 5]).topics[0].partitions[0].error_code == Error.INELIGIBLE_REPLICA
    c.register(5, generation=1)
    c.heartbeat(5)
    c.alter_isr(1, "t", [1, 2, 3, 4, 5])
    p = c.partition("t")
    assert (p.replicas, p.isr, p.is_reassigning) == ((1, 2, 3, 4, 5), (1, 2, 3, 4, 5), False)


def test_reassign_7_the_completing_isr_is_pruned_and_answered():
    """REASSIGN-7: the response carries the ISR applied, not the one asked for."""
    c = five_brokers()
    c.reassign("t", [1, 2, 4])
    [p] = c.alter_isr(1, "t", [1, 2, 3, 4]).topics[0].partitions
    assert (p.error_code, p.isr) == (Error.NONE, (1, 2, 4))


def test_reassign_8_cancelling_reverts_to_the_replicas_without_the_adding_ones():
    """REASSIGN-8, DEC-18."""
    c = five_brokers()
    assert result(c.reassign("t", None)) == Error.NO_REASSIGNMENT_IN_PROGRESS
    c.reassign("t", [3, 4, 5])
    c.alter_isr(1, "t", [1, 2, 3, 4])
    assert result(c.reassign("t", None)) == Error.NONE
    p = c.partition("t")
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas, p.leader) == ((1, 2, 3), (1, 2, 3), (), (), 1)


def test_reassign_8_a_cancel_that_would_leave_no_in_sync_replica_is_refused():
    """REASSIGN-8: only an adding replica is in sync, so reverting is refused and nothing is written."""
    c = five_brokers(((1,),))
    c.reassign("t", [4, 5])  # replicas [1,4,5], removing [1], adding [4,5]
    c.alter_isr(1, "t", [1, 4])  # 5 is missing: not complete
    c.heartbeat(1, want_fence=True)  # 1 leaves the ISR; 4 leads
    p = c.partition("t")
    assert (p.isr, p.leader, p.adding_replicas) == ((4,), 4, (4, 5))
    assert result(c.reassign("t", None)) == Error.INVALID_REPLICA_ASSIGNMENT
    assert c.records() == []
    assert c.partition("t").is_reassigning


def test_reassign_9_a_new_target_replaces_the_reassignment_in_progress():
    """REASSIGN-9, DEC-18: computed against the full current list; old adding replicas left
    out become removing replicas."""
    c = five_brokers()
    c.start_brokers(6)
    c.reassign("t", [3, 4, 5])  # replicas [1,2,3,4,5], removing [1,2], adding [4,5]
    c.reassign("t", [3, 6])  # against [1,2,3,4,5]: removing [1,2,4,5], adding [6]
    p = c.partition("t")
    assert (p.replicas, p.removing_replicas, p.adding_replicas) == ((1, 2, 4, 5, 3, 6), (1, 2, 4, 5), (6,))
    c.alter_isr(1, "t", [1, 2, 3, 6])
    p = c.partition("t")
    assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((3, 6), (3, 6), 3, False)


def test_reassign_9_a_new_target_within_the_current_list_can_complete_at_once():
    """REASSIGN-9 with REASSIGN-5: [1,2,4] is a subset of [1,2,3,4,5] and meets the ISR."""
    c = five_brokers()
    c.reassign("t", [3, 4, 5])
    c.reassign("t", [1, 2, 4])
    p = c.partition("t")
    assert (p.replicas, p.isr, p.is_reassigning) == ((1, 2, 4), (1, 2), False)


def test_reassign_10_listing_answers_from_committed_state():
    """REASSIGN-10, DEC-21: uncommitted reassignments are not listed yet."""
    c = five_brokers(((1, 2, 3), (1, 2, 3)))
    c.reassign("t", [3, 4, 5], index=1)
    c.reassign("t", [1, 2, 4], index=0, commit=False)
    listed = c.list_reassignments()
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in listed.topics] == [("t", [1])]
    [p] = listed.topics[0].partitions
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ((1, 2, 3, 4, 5), (4, 5), (1, 2))
    c.commit()
    assert [p.partition_index for p in c.list_reassignments().topics[0].partitions] == [0, 1]
    assert [p.partition_index for p in c.list_reassignments([ListedTopic("t", [0])]).topics[0].partitions] == [0]
    assert c.list_reassignments([ListedTopic("nope", [0])]).topics == ()


def test_reassign_10_named_topics_are_answered_entry_by_entry_as_asked():
    """REASSIGN-10, DEC-38: as Kafka 4.0.0 and 4.4.0 answer through the Kafka adapter: the entries in
    the request's order, each entry's partitions in the order asked, a topic or a partition named
    twice listed twice, an entry with nothing reassigning left out. Every topic: by name and index."""
    c = five_brokers(((1, 2, 3), (1, 2, 3), (1, 2, 3)))
    c.create_topic("b", assignment=[[1, 2, 3]])
    c.create_topic("a", assignment=[[1, 2, 3]])
    for name, index in (("t", 2), ("t", 0), ("b", 0), ("a", 0)):
        c.reassign(name, [3, 4, 5], index=index)

    def listed(topics=None):
        return [(t.name, [p.partition_index for p in t.partitions]) for t in c.list_reassignments(topics).topics]

    assert listed() == [("a", [0]), ("b", [0]), ("t", [0, 2])]
    asked = [ListedTopic("t", [2, 1, 0, 2]), ListedTopic("b", [0]), ListedTopic("nope", [0]),
             ListedTopic("a", [1]), ListedTopic("t", [0])]
    assert listed(asked) == [("t", [2, 0, 2]), ("b", [0]), ("t", [0])]


def test_reassign_11_a_reassignment_survives_failover_and_snapshots():
    """REASSIGN-11: hard state."""
    c = five_brokers()
    c.reassign("t", [3, 4, 5])
    c.snapshot()
    c.failover()
    p = c.partition("t")
    assert (p.removing_replicas, p.adding_replicas) == ((1, 2), (4, 5))
    c.heartbeat(1)
    c.alter_isr(1, "t", [1, 2, 3, 4, 5])
    assert c.partition("t").replicas == (3, 4, 5)


def test_reassign_11_an_uncommitted_reassignment_is_lost_with_not_controller():
    """REASSIGN-11, LOG-10."""
    c = five_brokers()
    send = c.send(AlterPartitionReassignmentsRequest([ReassignableTopic("t", [ReassignablePartition(0, [3, 4, 5])])]))
    [reply] = c.failover().replies
    assert reply.seq == send.seq and reply.response.error_code == Error.NOT_CONTROLLER
    assert not c.partition("t").is_reassigning


def test_reassign_12_deleting_a_reassigning_topic_is_one_record():
    """REASSIGN-12."""
    c = five_brokers()
    c.reassign("t", [3, 4, 5])
    response = c.delete_topics("t")
    assert response.responses[0].error_code == Error.NONE
    assert c.records() == [RemoveTopicRecord(topic_id("t"))]
    assert c.list_reassignments().topics == ()
