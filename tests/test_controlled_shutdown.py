"""Controlled shutdown through heartbeats: SHUT-1 to SHUT-6."""

from cluster import Cluster
from kraftspec.model.membership import Membership, membership
from kraftspec.model.messages import BrokerHeartbeatRequest
from kraftspec.model.records import FenceBrokerRecord, PartitionChangeRecord


def stuck_leader() -> Cluster:
    """Broker 1 leads 'solo' (replicas [1]) and 'pair' ([1,2], leader 1); broker 2 is active."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.create_topic("solo", assignment=[[1]])
    c.create_topic("pair", assignment=[[1, 2]])
    return c


def test_shut_1_asking_to_shut_down_is_sticky():
    """SHUT-1, DEC-14: once asked, every heartbeat counts as asking, until the broker is fenced."""
    c = stuck_leader()
    c.heartbeat(1, want_shut_down=True)
    assert membership(c.state, 1) == Membership.CONTROLLED_SHUTDOWN
    response = c.heartbeat(1, want_shut_down=False)  # the flag cannot be withdrawn
    assert membership(c.state, 1) == Membership.CONTROLLED_SHUTDOWN and not response.should_shut_down
    c.heartbeat(1, want_fence=True)
    assert membership(c.state, 1) == Membership.FENCED


def test_shut_2_leaderships_move_to_the_first_eligible_in_sync_replica():
    """SHUT-2: a Leader change per led partition; the ISR is untouched; unmovable ones stay."""
    c = stuck_leader()
    response = c.heartbeat(1, want_shut_down=True)
    pair = c.partition("pair")
    assert c.records() == [PartitionChangeRecord(0, pair.topic_id, leader=2)]
    assert (pair.leader, pair.isr) == (2, (1, 2))
    assert c.partition("solo").leader == 1
    assert (response.should_shut_down, response.is_fenced) == (False, False)


def test_shut_2_a_later_heartbeat_retries_once_another_replica_can_lead():
    """SHUT-2: the move is retried at every heartbeat."""
    c = Cluster()
    c.start_brokers(1)
    c.register(2)  # fenced: the new partition's ISR is [1]
    c.create_topic("t", assignment=[[1, 2]])
    c.heartbeat(2)  # unfenced, but not in sync
    assert not c.heartbeat(1, want_shut_down=True).should_shut_down
    assert c.partition("t").leader == 1
    c.alter_isr(1, "t", [1, 2])  # the leader, still leading, lets 2 in
    assert c.heartbeat(1, want_shut_down=True).should_shut_down
    assert c.partition("t").leader == 2


def test_shut_3_should_shut_down_comes_with_fencing_in_one_batch():
    """SHUT-3, DEC-14: moves, then the fencing changes and the FenceBrokerRecord, in one batch."""
    c = Cluster()
    c.start_brokers(1, 2, 3)
    c.create_topic("t", assignment=[[1, 2, 3], [2, 1, 3]])
    result = c.send(BrokerHeartbeatRequest(1, c.epoch(1), c.state.committed_offset, False, True))
    t = c.partition("t").topic_id
    [batch] = result.batches
    assert list(batch.records) == [
        PartitionChangeRecord(0, t, leader=2),
        PartitionChangeRecord(0, t, isr=(2, 3)),
        PartitionChangeRecord(1, t, isr=(2, 3)),
        FenceBrokerRecord(1, c.epoch(1)),
    ]
    assert result.replies == ()  # released with the batch's commit
    [reply] = c.commit().replies
    assert (reply.response.should_shut_down, reply.response.is_fenced) == (True, True)


def test_shut_4_a_fenced_broker_may_shut_down_at_once():
    """SHUT-4: ShouldShutDown, nothing written."""
    c = Cluster()
    c.register(1)
    response = c.heartbeat(1, want_shut_down=True)
    assert (response.should_shut_down, response.is_fenced) == (True, True) and c.records() == []


def test_shut_4_wantfence_with_wantshutdown_fences_and_grants_in_one_response():
    """SHUT-4 with LEASE-12: fenced now, so it may shut down now, leaderships or not."""
    c = stuck_leader()
    response = c.heartbeat(1, want_fence=True, want_shut_down=True)
    assert (response.should_shut_down, response.is_fenced) == (True, True)
    assert not c.leads(1)


def test_shut_5_a_broker_in_controlled_shutdown_gains_no_leadership_but_keeps_its_isr_places():
    """SHUT-5, PART-3."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.create_topic("solo2", assignment=[[2]])
    c.create_topic("t", assignment=[[1, 2]])
    c.heartbeat(2, want_shut_down=True)  # 2 cannot give up solo2: it stays in controlled shutdown
    assert c.partition("t").isr == (1, 2)  # still in sync: it still replicates
    c.heartbeat(1, want_fence=True)  # 1 leaves; 2 is in sync but not eligible
    assert (c.partition("t").isr, c.partition("t").leader) == ((2,), -1)


def test_shut_6_should_shut_down_only_while_leading_nothing():
    """SHUT-6: never granted while a leadership remains (INV-11 checks every reply)."""
    c = stuck_leader()
    for _ in range(3):
        assert not c.heartbeat(1, want_shut_down=True).should_shut_down
        assert c.leads(1)
