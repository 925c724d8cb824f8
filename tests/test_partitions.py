"""Partitions, leader election, AlterIsr: PART-1 to PART-8, ISR-1 to ISR-11."""

from uuid import UUID

import pytest

from cluster import Cluster, topic_id
from kraftspec.model import Error
from kraftspec.model.messages import (
    AlterIsrPartition,
    AlterIsrRequest,
    AlterIsrResponse,
    AlterIsrTopic,
    CreatableTopic,
    CreateTopicsRequest,
    ReplicaAssignment,
)
from kraftspec.model.partitions import elect_leader, is_eligible_leader, stays_leader
from kraftspec.model.records import FenceBrokerRecord, PartitionChangeRecord, PartitionRecord
from kraftspec.model.replay import replay


def three_brokers(*assignment) -> Cluster:
    c = Cluster()
    c.start_brokers(1, 2, 3)
    c.create_topic("t", assignment=list(assignment) or [[1, 2, 3]])
    return c


# ---- PART ---------------------------------------------------------------------------


def test_part_1_a_partition_record_creates_the_partition_as_written():
    """PART-1: replicas, ISR, lists, leader, epochs from the record; an unknown topic is LOG-13."""
    c = three_brokers()
    p = c.partition("t")
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas, p.leader, p.leader_epoch, p.partition_epoch) == (
        (1, 2, 3), (1, 2, 3), (), (), 1, 0, 0)
    orphan = PartitionRecord(0, UUID(int=424242), [1], [1], leader=1)
    assert replay(c.state.image, orphan) == c.state.image


def test_part_2_change_replay_counts_epochs():
    """PART-2, DEC-17: every change bumps the partition epoch; a Leader field bumps the leader epoch."""
    c = three_brokers()
    p = c.partition("t")
    image = replay(c.state.image, PartitionChangeRecord(0, p.topic_id, isr=(1, 2)))
    q = image.partitions[p.key]
    assert (q.isr, q.replicas, q.leader, q.leader_epoch, q.partition_epoch) == ((1, 2), (1, 2, 3), 1, 0, 1)
    image = replay(image, PartitionChangeRecord(0, p.topic_id, leader=1))  # same leader, still a bump
    q = image.partitions[p.key]
    assert (q.leader, q.leader_epoch, q.partition_epoch) == (1, 1, 2)


def test_part_3_who_may_become_leader_and_who_stays_leader():
    """PART-3, SHUT-2, DEC-14, DEC-22: a broker in controlled shutdown may not become leader;
    staying leader asks for the ISR, a registration and no fencing, and, in the kafka profile, whose
    records keep the controlled shutdown in the registration, for a registration that does not say
    it; SHUT-2 has the broker give up every leadership when it enters controlled shutdown."""
    c = Cluster(profile="kafka")
    c.start_brokers(1, 2)
    c.register(3)
    c.create_topic("solo", assignment=[[1]])
    c.heartbeat(1, want_shut_down=True)
    assert c.state.leases[1].in_controlled_shutdown and not c.leads(1)
    image, leases = c.state.image, c.state.leases
    assert [is_eligible_leader(image, leases, b) for b in (1, 2, 3, 4)] == [False, True, False, False]
    assert image.brokers[1].in_controlled_shutdown  # Kafka's record of it (DEC-22)
    assert not stays_leader(image, 1, (1,)) and stays_leader(image, 2, (2,))
    assert not stays_leader(image, 3, (3,)) and not stays_leader(image, 1, (2,)) and not stays_leader(image, 4, (4,))


def test_part_4_election_picks_the_first_eligible_in_sync_replica_and_keeps_a_leader_that_stays():
    """PART-4: preferred order among eligible ISR members, -1 if none; no rebalancing."""
    assert elect_leader([3, 1, 2], [1, 2], lambda b: True) == 1
    assert elect_leader([3, 1, 2], [1, 2], lambda b: b != 1) == 2
    assert elect_leader([3, 1, 2], [1, 2], lambda b: False) == -1
    c = three_brokers()
    c.heartbeat(1, want_fence=True)
    assert c.partition("t").leader == 2
    c.heartbeat(1)  # back, unfenced
    c.alter_isr(2, "t", [2, 3, 1])  # back in sync
    assert c.partition("t").leader == 2  # the preferred replica 1 does not take over


def test_part_5_a_change_names_only_what_changes_and_nothing_writes_nothing():
    """PART-5: minimal records; an unchanged ISR writes no record and answers the current state."""
    c = three_brokers()
    response = c.alter_isr(1, "t", [1, 2, 3])
    assert c.records() == []
    [result] = response.topics[0].partitions
    assert (result.error_code, result.isr, result.partition_epoch) == (Error.NONE, (1, 2, 3), 0)


def test_part_5_a_batch_takes_partitions_in_topic_name_then_index_order():
    """PART-5."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.create_topic("b", assignment=[[1, 2]])
    c.create_topic("a", assignment=[[1, 2], [2, 1]])
    c.heartbeat(1, want_fence=True)
    order = [(r.topic_id, r.partition_id) for r in c.records() if isinstance(r, PartitionChangeRecord)]
    assert order == [(topic_id("a"), 0), (topic_id("a"), 1), (topic_id("b"), 0)]


def test_part_6_fencing_matches_seed_000s_dump_example():
    """PART-6, DEC-8: replicas [1], ISR [1]: only {leader: -1}, then the FenceBrokerRecord."""
    c = Cluster()
    c.start_brokers(1)
    c.create_topic("bar", assignment=[[1]])
    c.heartbeat(1, want_fence=True)
    bar = c.partition("bar")
    assert c.records() == [PartitionChangeRecord(0, bar.topic_id, leader=-1), FenceBrokerRecord(1, c.epoch(1))]
    assert (bar.isr, bar.leader) == ((1,), -1)


def test_part_6_fencing_shrinks_isrs_moves_leadership_and_leaves_out_of_sync_replicas_alone():
    """PART-6."""
    c = Cluster()
    c.start_brokers(1, 2, 3)
    c.create_topic("t", assignment=[[1, 2, 3], [2, 3, 1]])
    c.alter_isr(2, "t", [2, 3], index=1)  # 1 falls out of sync in t-1
    c.heartbeat(1, want_fence=True)
    t = topic_id("t")
    assert c.records() == [PartitionChangeRecord(0, t, isr=(2, 3), leader=2), FenceBrokerRecord(1, c.epoch(1))]
    assert c.partition("t", 1).replicas == (2, 3, 1)


def test_part_7_unfencing_elects_where_the_broker_is_the_sole_in_sync_replica_and_adds_it_to_no_isr():
    """PART-7, DEC-19."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.create_topic("solo", assignment=[[1, 2]])
    c.alter_isr(1, "solo", [1])
    c.create_topic("shared", assignment=[[1, 2]])
    c.heartbeat(1, want_fence=True)
    assert (c.partition("solo").leader, c.partition("shared").isr) == (-1, (2,))
    c.heartbeat(1)
    assert (c.partition("solo").leader, c.partition("solo").isr) == (1, (1,))
    assert c.partition("shared").isr == (2,)  # not re-added: only the leader may do that


def test_part_8_unregistering_leaves_isrs_and_leaderships_but_stays_in_replicas():
    """PART-8, DEC-20, DEC-8: the broker leaves every ISR but as its sole member, and every
    leadership; it stays in Replicas, so that the same id registering again recovers (PART-7)."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.create_topic("gone", assignment=[[1]])
    c.create_topic("stale", assignment=[[1, 2]])
    c.create_topic("shared", assignment=[[1, 2]])
    c.alter_isr(1, "stale", [1])  # 2 out of sync
    c.unregister(1)
    gone, stale, shared = c.partition("gone"), c.partition("stale"), c.partition("shared")
    assert (gone.replicas, gone.isr, gone.leader) == ((1,), (1,), -1)
    assert (stale.replicas, stale.isr, stale.leader) == ((1, 2), (1,), -1)
    assert (shared.replicas, shared.isr, shared.leader) == ((1, 2), (2,), 2)
    c.register(1, generation=1)
    c.heartbeat(1)  # unfenced: it leads where it is the sole in-sync replica again
    assert [(c.partition(n).leader, c.partition(n).isr) for n in ("gone", "stale", "shared")] == [
        (1, (1,)), (1, (1,)), (2, (2,))]


# ---- ISR ----------------------------------------------------------------------------


def alter(c: Cluster, broker_id: int, entries, broker_epoch=None, tid=None):
    request = AlterIsrRequest(
        broker_id,
        c.epoch(broker_id) if broker_epoch is None else broker_epoch,
        [AlterIsrTopic(tid or topic_id("t"), entries)],
    )
    return c.request(request)


def one(response):
    [topic] = response.topics
    [partition] = topic.partitions
    return partition


def test_isr_1_the_exchange_and_the_defaults_of_a_refused_partition():
    """ISR-1."""
    c = three_brokers()
    response = alter(c, 1, [AlterIsrPartition(0, 99, [1, 2], 0)])
    assert response.error_code == Error.NONE and response.topics[0].topic_id == topic_id("t")
    p = one(response)
    assert (p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.isr, p.partition_epoch) == (
        0, Error.NOT_CONTROLLER, 0, 0, (), 0)  # DEC-15: as Kafka leaves them


@pytest.mark.parametrize("who, epoch", [(9, 1), (1, 12345)], ids=["unregistered", "stale-epoch"])
def test_isr_2_a_stale_or_unknown_requester_refuses_the_whole_request(who, epoch):
    """ISR-2, DEC-15."""
    c = three_brokers()
    request = AlterIsrRequest(who, epoch, [AlterIsrTopic(topic_id("t"), [AlterIsrPartition(0, 0, [1, 2], 0)])])
    response = c.request(request)
    assert (response.error_code, response.topics) == (Error.STALE_BROKER_EPOCH, ())
    assert c.records() == []


def test_isr_3_unknown_topic_id_or_partition():
    """ISR-3, DEC-15: an unknown partition of a known topic, and an unknown topic id."""
    c = three_brokers()
    assert one(alter(c, 1, [AlterIsrPartition(5, 0, [1], 0)])).error_code == Error.UNKNOWN_TOPIC_OR_PARTITION
    assert one(alter(c, 1, [AlterIsrPartition(0, 0, [1], 0)], tid=UUID(int=77))).error_code == Error.UNKNOWN_TOPIC_ID


@pytest.mark.parametrize("delta, error", [(-1, Error.FENCED_LEADER_EPOCH), (1, Error.NOT_CONTROLLER)], ids=["lower", "higher"])
def test_isr_4_an_old_leader_epoch_is_fenced_and_a_newer_one_is_not_controller(delta, error):
    """ISR-4, DEC-15: a lower leader epoch is FENCED_LEADER_EPOCH; a higher one means the requester
    knows more than this controller, NOT_CONTROLLER."""
    c = three_brokers()
    c.heartbeat(1, want_fence=True)
    c.heartbeat(1)
    epoch = c.partition("t").leader_epoch
    response = c.alter_isr(2, "t", [2, 3], leader_epoch=epoch + delta)
    assert one(response).error_code == error


def test_isr_4_a_partition_epoch_ahead_of_the_controllers_is_not_controller():
    """ISR-4, DEC-15."""
    c = three_brokers()
    p = c.partition("t")
    response = c.alter_isr(1, "t", [1, 2], partition_epoch=p.partition_epoch + 1)
    assert one(response).error_code == Error.NOT_CONTROLLER


def test_isr_5_only_the_leader_may_change_the_isr():
    """ISR-5, DEC-15: NOT_LEADER_OR_FOLLOWER."""
    c = three_brokers()
    assert one(c.alter_isr(2, "t", [1, 2])).error_code == Error.NOT_LEADER_OR_FOLLOWER


def test_isr_6_a_stale_partition_epoch_is_refused():
    """ISR-6, DEC-16: same leader epoch, older partition epoch."""
    c = three_brokers()
    c.alter_isr(1, "t", [1, 2])
    assert one(c.alter_isr(1, "t", [1, 2, 3], partition_epoch=0)).error_code == Error.INVALID_UPDATE_VERSION


@pytest.mark.parametrize("isr", [[], [1, 1, 2], [1, 4], [2, 3]], ids=["empty", "duplicate", "not-a-replica", "no-leader"])
def test_isr_7_malformed_isrs_are_invalid_requests(isr):
    """ISR-7: seed 003's INVALID_REQUEST."""
    c = three_brokers()
    c.start_brokers(4)
    assert one(c.alter_isr(1, "t", isr)).error_code == Error.INVALID_REQUEST
    assert c.records() == []


def test_isr_8_fenced_or_unregistered_members_are_ineligible():
    """ISR-8, DEC-15."""
    c = three_brokers()
    c.alter_isr(1, "t", [1, 2])
    c.heartbeat(3, want_fence=True)
    assert one(c.alter_isr(1, "t", [1, 2, 3])).error_code == Error.INELIGIBLE_REPLICA


def test_isr_9_an_accepted_change_is_written_and_answered_with_the_result():
    """ISR-9, DEC-17: shrink and expand move the partition epoch, never the leader epoch."""
    c = three_brokers()
    shrink = one(c.alter_isr(1, "t", [1, 3]))
    assert c.records() == [PartitionChangeRecord(0, topic_id("t"), isr=(1, 3))]
    assert (shrink.error_code, shrink.leader_id, shrink.leader_epoch, shrink.isr, shrink.partition_epoch) == (
        Error.NONE, 1, 0, (1, 3), 1)
    grow = one(c.alter_isr(1, "t", [3, 2, 1]))
    assert (grow.isr, grow.leader_epoch, grow.partition_epoch) == ((3, 2, 1), 0, 2)


def test_isr_5_a_broker_in_controlled_shutdown_leads_nothing_so_it_cannot_change_an_isr():
    """ISR-5, SHUT-2, DEC-14 (kafka profile, where the state outlasts a heartbeat): entering
    controlled shutdown it gave up its leadership, so its AlterIsr is refused."""
    c = Cluster(profile="kafka")
    c.start_brokers(1)
    c.register(2)
    c.create_topic("t", assignment=[[1, 2]])
    c.heartbeat(2)
    c.heartbeat(1, want_shut_down=True)  # nobody else in sync: leadership given up
    assert c.state.leases[1].in_controlled_shutdown
    assert (c.partition("t").leader, c.partition("t").isr) == (-1, (1,))
    assert one(c.alter_isr(1, "t", [1, 2])).error_code == Error.INVALID_REQUEST  # the kafka profile's code (DEC-15)
    assert (c.partition("t").leader, c.partition("t").isr) == (-1, (1,))


def test_isr_10_a_change_that_removes_the_requester_answers_fenced_leader_epoch():
    """ISR-10: the record is written all the same (seed 000)."""
    c = three_brokers()
    c.start_brokers(4)
    c.reassign("t", [2, 3, 4])
    response = one(c.alter_isr(1, "t", [1, 2, 3, 4]))
    assert response.error_code == Error.FENCED_LEADER_EPOCH and response.isr == ()
    p = c.partition("t")
    assert (p.replicas, p.isr, p.leader) == ((2, 3, 4), (2, 3, 4), 2)


@pytest.mark.parametrize("profile", ["kip-631", "kafka"])
def test_isr_12_an_alter_isr_with_no_topics_is_answered_none_before_any_check(profile):
    """ISR-12, DEC-15, DEC-21: NONE with no topics, nothing written, even for an unregistered
    requester; kip-631 holds the answer until the log as it stood commits, kafka answers at once."""
    c = Cluster(profile=profile)
    c.start_brokers(1)
    c.create_topic("t", assignment=[[1]], commit=False)  # an uncommitted batch the answer may wait for
    for broker_id, epoch in ((1, c.epoch(1)), (9, 4)):
        result = c.send(AlterIsrRequest(broker_id, epoch, []))
        assert c.records(result) == []
        answered = c.replies.get(result.seq)
        assert (answered is None) == (profile == "kip-631")
    c.commit()
    assert [c.replies[seq] for seq in sorted(c.replies)][-2:] == [AlterIsrResponse(Error.NONE)] * 2


def test_isr_11_a_partition_named_twice_is_refused():
    """ISR-11."""
    c = three_brokers()
    response = alter(c, 1, [AlterIsrPartition(0, 0, [1, 2], 0), AlterIsrPartition(0, 0, [1, 3], 0)])
    assert [p.error_code for p in response.topics[0].partitions] == [Error.INVALID_REQUEST] * 2
    assert c.records() == []


def test_isr_1_topics_are_named_by_id_so_a_recreated_name_is_safe():
    """ISR-1, DEC-16: a late AlterIsr for a deleted topic does not touch its namesake."""
    c = three_brokers()
    old = topic_id("t")
    c.delete_topics("t")
    new = UUID(int=31337)
    c.request(CreateTopicsRequest([CreatableTopic("t", new, assignments=[ReplicaAssignment(0, [1, 2, 3])])]))
    response = alter(c, 1, [AlterIsrPartition(0, 0, [1, 2], 0)], tid=old)
    assert one(response).error_code == Error.UNKNOWN_TOPIC_ID
    assert c.state.image.partitions[(new, 0)].isr == (1, 2, 3)
