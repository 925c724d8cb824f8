"""Controlled shutdown through heartbeats: SHUT-1 to SHUT-6.

The profiles differ on when the broker is let go (``shutdown_grant``, DEC-14): tests that name a
profile show one side; tests/test_profile_behaviour.py sets the two side by side.
"""

import pytest

from cluster import Cluster
from kraftspec.model import Error
from kraftspec.model.membership import Membership, membership
from kraftspec.model.messages import BrokerHeartbeatRequest
from kraftspec.model.records import FenceBrokerRecord, PartitionChangeRecord

PROFILES = ("kip-631", "kafka")


def stuck_leader(profile: str = "kip-631") -> Cluster:
    """Broker 1 leads 'solo' (replicas [1]) and 'pair' ([1,2], leader 1); broker 2 is active."""
    c = Cluster(profile=profile)
    c.start_brokers(1, 2)
    c.create_topic("solo", assignment=[[1]])
    c.create_topic("pair", assignment=[[1, 2]])
    return c


def test_shut_1_in_kip_631_controlled_shutdown_ends_within_the_heartbeat_that_began_it():
    """SHUT-1, SHUT-3, DEC-14: kip-631 lets the broker go in the heartbeat that asks, so no heartbeat
    leaves it in controlled shutdown."""
    c = stuck_leader()
    response = c.heartbeat(1, want_shut_down=True)
    assert (response.should_shut_down, response.is_fenced) == (True, True)
    assert membership(c.state, 1) == Membership.FENCED
    assert not c.state.leases[1].in_controlled_shutdown


def test_shut_1_in_kafka_asking_to_shut_down_is_sticky_until_the_broker_is_let_go():
    """SHUT-1, SHUT-3, DEC-14 (kafka profile): once in controlled shutdown, every heartbeat is handled
    by SHUT-3 whatever its flags: WantShutDown cannot be withdrawn and WantFence is not looked at."""
    c = stuck_leader("kafka")
    first = c.heartbeat(1, want_shut_down=True)
    assert membership(c.state, 1) == Membership.CONTROLLED_SHUTDOWN
    assert (first.should_shut_down, first.is_fenced) == (False, False)
    withdrawn = c.heartbeat(1, want_shut_down=False)  # broker 2 has not applied the shutdown's records
    assert membership(c.state, 1) == Membership.CONTROLLED_SHUTDOWN and not withdrawn.should_shut_down
    assert "SHUT-3" in c.results[-2].rules and "LEASE-13" not in c.results[-2].rules
    fence = c.heartbeat(1, want_fence=True)
    assert membership(c.state, 1) == Membership.CONTROLLED_SHUTDOWN and not fence.is_fenced
    assert c.records() == [] and "LEASE-12" not in c.results[-2].rules
    c.heartbeat(2)  # broker 2 catches up with the shutdown's records
    granted = c.heartbeat(1)  # no flags at all: still SHUT-3, which now lets it go
    assert (granted.should_shut_down, granted.is_fenced) == (True, True)
    assert membership(c.state, 1) == Membership.FENCED


@pytest.mark.parametrize("profile", PROFILES)
def test_shut_2_the_broker_leaves_every_isr_and_leadership_giving_up_those_nobody_else_can_take(profile):
    """SHUT-2, DEC-14 (both profiles): for each partition whose ISR holds the broker, in partition
    order, the ISR without it (unless it is the sole member) and, where it leads, the first eligible
    in-sync replica in preferred order, or Leader -1. kip-631 fences it in the same batch (SHUT-3)."""
    c = Cluster(profile=profile)
    c.start_brokers(1, 2, 3)
    c.create_topic("pair", assignment=[[1, 3, 2]])
    c.create_topic("solo", assignment=[[1]])
    c.create_topic("tail", assignment=[[2, 1]])  # led by 2: 1 only leaves the ISR
    response = c.heartbeat(1, want_shut_down=True)
    pair, solo, tail = c.partition("pair").topic_id, c.partition("solo").topic_id, c.partition("tail").topic_id
    changes = [
        PartitionChangeRecord(0, pair, isr=(3, 2), leader=3),
        PartitionChangeRecord(0, solo, leader=-1),
        PartitionChangeRecord(0, tail, isr=(2,)),
    ]
    if profile == "kip-631":
        assert c.records() == [*changes, FenceBrokerRecord(1, c.epoch(1))]
        assert (response.should_shut_down, response.is_fenced) == (True, True)
    else:  # DEC-22: Kafka's records begin the batch with the registration's change
        assert c.records() == [*c.shutdown_records(1), *changes]
        assert (response.should_shut_down, response.is_fenced) == (False, False)
    assert (c.partition("solo").leader, c.partition("solo").isr) == (-1, (1,))  # the sole member stays
    assert not c.leads(1)


def test_shut_2_a_leadership_no_in_sync_replica_can_take_is_given_up_at_once():
    """SHUT-2, DEC-14: no retry at later heartbeats: the partition is left leaderless with the broker
    as its sole ISR member, and the broker leading it again when it is back (PART-7)."""
    c = Cluster()
    c.start_brokers(1)
    c.register(2)  # fenced: the new partition's ISR is [1]
    c.create_topic("t", assignment=[[1, 2]])
    c.heartbeat(2)  # unfenced, but not in sync
    response = c.heartbeat(1, want_shut_down=True)
    assert (response.should_shut_down, response.is_fenced) == (True, True)
    t = c.partition("t")
    assert (t.leader, t.isr, t.replicas) == (-1, (1,), (1, 2))
    assert c.heartbeat(1).is_fenced is False  # the same process carries on after all (LEASE-10)
    assert (c.partition("t").leader, c.partition("t").isr) == (1, (1,))


def test_shut_3_should_shut_down_comes_with_fencing_in_one_batch():
    """SHUT-3, DEC-14 (kip-631): SHUT-2's changes, then the FenceBrokerRecord, in one batch; the
    fencing has nothing left to change, since SHUT-2 already took the broker out of every ISR."""
    c = Cluster()
    c.start_brokers(1, 2, 3)
    c.create_topic("t", assignment=[[1, 2, 3], [2, 1, 3]])
    result = c.send(BrokerHeartbeatRequest(1, c.epoch(1), c.state.committed_offset, False, True))
    t = c.partition("t").topic_id
    [batch] = result.batches
    assert list(batch.records) == [
        PartitionChangeRecord(0, t, isr=(2, 3), leader=2),
        PartitionChangeRecord(1, t, isr=(2, 3)),
        FenceBrokerRecord(1, c.epoch(1)),
    ]
    assert result.replies == ()  # released with the batch's commit
    [reply] = c.commit().replies
    assert (reply.response.should_shut_down, reply.response.is_fenced) == (True, True)


def test_shut_4_a_fenced_broker_may_shut_down_at_once():
    """SHUT-4, DEC-14: ShouldShutDown, with its fence record written again, as Kafka writes it."""
    c = Cluster()
    c.register(1)
    response = c.heartbeat(1, want_shut_down=True)
    assert (response.should_shut_down, response.is_fenced) == (True, True)
    assert c.records() == [FenceBrokerRecord(1, c.epoch(1))]


def test_shut_4_wantfence_with_wantshutdown_fences_and_grants_in_one_response():
    """SHUT-4 with LEASE-12: fenced now, so it may shut down now, leaderships or not."""
    c = stuck_leader()
    response = c.heartbeat(1, want_fence=True, want_shut_down=True)
    assert (response.should_shut_down, response.is_fenced) == (True, True)
    assert not c.leads(1)


def test_shut_5_a_broker_in_controlled_shutdown_gains_no_leadership_and_no_new_replica():
    """SHUT-5, PART-3, TOPIC-4, DEC-14 (kafka profile, where the state outlasts a heartbeat): it stays
    the sole ISR member of the partition it gave up, and nothing elects it or places a replica on it."""
    c = Cluster(profile="kafka")
    c.start_brokers(1, 2, 3)
    c.create_topic("solo2", assignment=[[2]])
    c.create_topic("t", assignment=[[1, 2]])
    c.heartbeat(2, want_shut_down=True)  # it led solo2: in controlled shutdown until the others catch up
    assert membership(c.state, 2) == Membership.CONTROLLED_SHUTDOWN
    assert (c.partition("solo2").isr, c.partition("solo2").leader) == ((2,), -1)
    assert c.partition("t").isr == (1,)  # SHUT-2: it left the ISR it shared
    c.reassign("solo2", [2, 3])  # a partition change: the election may not pick 2
    assert (c.partition("solo2").leader, c.partition("solo2").adding_replicas) == (-1, (3,))
    c.create_topic("new", assignment=[[2, 3]])
    assert (c.partition("new").isr, c.partition("new").leader) == ((3,), 3)
    c.create_topic("counted", partitions=2, replication_factor=2)
    assert [c.partition("counted", i).replicas for i in range(2)] == [(1, 3), (3, 1)]
    [wide] = c.create_topic("wide", partitions=1, replication_factor=3).topics  # 2 is no candidate
    assert wide.error_code == Error.INVALID_REPLICATION_FACTOR


@pytest.mark.parametrize("profile", PROFILES)
def test_shut_6_should_shut_down_goes_only_to_a_broker_that_leads_nothing(profile):
    """SHUT-6, DEC-14: every ShouldShutDown of a whole shutdown goes to a broker that leads nothing in
    the state its batch leaves (INV-11 checks every reply as well)."""
    c = stuck_leader(profile)
    answers = []
    for _ in range(4):
        response = c.heartbeat(1, want_shut_down=True)
        answers.append(response.should_shut_down)
        assert not response.should_shut_down or not c.leads(1)
        c.heartbeat(2)
    assert answers[-1] and not c.leads(1)
    assert (c.partition("solo").leader, c.partition("pair").leader) == (-1, 2)
