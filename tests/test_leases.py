"""Leases: LEASE-1 to LEASE-15, LAO-1, LAO-2, and the membership transitions MEM-1, MEM-2."""

import pytest
from uuid import UUID

from cluster import Cluster
from kraftspec.model import Config, ConfigError, Error
from kraftspec.model.membership import Membership, membership, visible_brokers
from kraftspec.model.messages import BrokerHeartbeatRequest
from kraftspec.model.records import FenceBrokerRecord, PartitionChangeRecord, UnfenceBrokerRecord


def test_lease_1_default_timings_and_their_check():
    """LEASE-1, DEC-12: 3000 and 18000 by default; the session must outlast the interval (CONF-2)."""
    config = Config()
    assert (config.heartbeat_interval_ms, config.session_timeout_ms) == (3000, 18000)
    with pytest.raises(ConfigError, match="broker.session.timeout.ms"):
        Config(heartbeat_interval_ms=5000, session_timeout_ms=5000)


def test_lease_2_heartbeat_response_fields_and_error_defaults():
    """LEASE-2: a success describes the broker; an error carries the schema defaults."""
    c = Cluster()
    c.register(1)
    ok = c.heartbeat(1)
    assert (ok.error_code, ok.is_caught_up, ok.is_fenced, ok.should_shut_down) == (Error.NONE, True, False, False)
    refused = c.heartbeat(1, epoch=12345)
    assert (refused.is_caught_up, refused.is_fenced, refused.should_shut_down, refused.lowest_acknowledged_offset) == (
        False,
        True,
        False,
        -1,
    )


def test_lease_3_heartbeat_from_an_unregistered_id_gets_stale_broker_epoch():
    """LEASE-3, DEC-15: STALE_BROKER_EPOCH (Kafka's code: no registration has that epoch); nothing changes."""
    c = Cluster()
    c.start_brokers(1)
    c.unregister(1)
    before = c.state
    for broker_id in (4, -4, 1):  # never registered, never registrable, unregistered
        response = c.request(BrokerHeartbeatRequest(broker_id, 1, 1, False, False))
        assert (response.error_code, response.lowest_acknowledged_offset) == (Error.STALE_BROKER_EPOCH, -1)
        assert c.records() == []
    assert (c.state.image, c.state.leases) == (before.image, before.leases)


def test_lease_4_heartbeat_with_another_epoch_is_refused_and_is_not_contact():
    """LEASE-4: STALE_BROKER_EPOCH; the lease is not renewed."""
    c = Cluster()
    c.register(1)
    c.tick(5000)
    assert c.heartbeat(1, epoch=c.epoch(1) + 1).error_code == Error.STALE_BROKER_EPOCH
    assert c.state.leases[1].last_contact_ms == 0


def test_lease_5_negative_metadata_offset_is_refused():
    """LEASE-5, DEC-2."""
    c = Cluster()
    c.register(1)
    assert c.heartbeat(1, offset=-1).error_code == Error.INVALID_REQUEST
    assert c.heartbeat(1, offset=0, want_fence=True).error_code == Error.NONE


def test_lease_6_a_lower_offset_than_before_is_processed_like_any_other():
    """LEASE-6, DEC-13: the heartbeat is contact, its offset is recorded as sent, and its flags act:
    here its WantFence fences the broker."""
    c = Cluster()
    c.start_brokers(1)
    c.tick(1000)
    assert c.heartbeat(1, offset=c.state.committed_offset).error_code == Error.NONE
    c.tick(2000)
    lower = c.heartbeat(1, offset=0, want_fence=True)
    assert "LEASE-6" in c.results[-2].rules
    assert (lower.error_code, lower.is_fenced, lower.should_shut_down, lower.is_caught_up) == (Error.NONE, True, False, False)
    assert (c.state.leases[1].last_contact_ms, c.state.leases[1].metadata_offset) == (2000, 0)
    assert c.records() == [FenceBrokerRecord(1, c.epoch(1))]


def test_lease_7_contact_renews_the_lease_for_fenced_and_unfenced_brokers():
    """LEASE-7: last contact and the recorded offset; nothing logged."""
    c = Cluster()
    c.start_brokers(1)
    c.register(2)
    c.tick(4000)
    c.heartbeat(1, offset=c.state.committed_offset)
    c.heartbeat(2, want_fence=True, offset=1)
    assert (c.state.leases[1].last_contact_ms, c.state.leases[2].last_contact_ms) == (4000, 4000)
    assert c.state.leases[2].metadata_offset == 1
    assert c.records() == []


def test_lease_8_a_lapsed_lease_fences_at_the_deadline_exactly():
    """LEASE-8, DEC-7: at last_contact + timeout the broker is fenced, not a millisecond later."""
    c = Cluster()
    c.start_brokers(1)
    contact = c.state.leases[1].last_contact_ms
    assert c.tick(contact + 17_999).batches == ()
    result = c.tick(contact + 18_000)
    assert [type(r) for b in result.batches for r in b.records] == [FenceBrokerRecord]
    assert c.state.image.brokers[1].fenced


def test_lease_8_several_lapses_at_once_are_fenced_one_batch_each_in_deadline_order():
    """LEASE-8, DEC-25: one batch per broker, by deadline then id, each on the state the last left."""
    c = Cluster()
    c.start_brokers(3, 1, 2)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.tick(100)
    c.heartbeat(3)  # broker 3's deadline is now the latest
    result = c.tick(60_000)
    fenced = [r.broker_id for b in result.batches for r in b.records if isinstance(r, FenceBrokerRecord)]
    assert fenced == [1, 2, 3]
    assert len(result.batches) == 3
    # broker 1 led; the first batch elects 2, the second must not elect the now-fenced 2 again
    t = c.partition("t").topic_id
    assert result.batches[0].records[0] == PartitionChangeRecord(0, t, isr=(2, 3), leader=2)
    assert result.batches[1].records[0] == PartitionChangeRecord(0, t, isr=(3,), leader=3)
    assert result.batches[2].records[0] == PartitionChangeRecord(0, t, leader=-1)


def test_lease_9_caught_up_means_applied_its_own_registration():
    """LEASE-9, DEC-3: CurrentMetadataOffset must pass the broker's epoch (one more than highest, DEC-2)."""
    c = Cluster()
    c.register(1)
    epoch = c.epoch(1)
    assert not c.heartbeat(1, offset=epoch, want_fence=True).is_caught_up
    assert c.heartbeat(1, offset=epoch + 1, want_fence=True).is_caught_up


def test_lease_9_the_record_to_apply_is_where_it_was_written_and_a_failover_keeps_the_committed_one():
    """LEASE-9, DEC-3, DEC-4, REG-9 (kafka profile): a new incarnation replacing an unfenced one gets
    the offset where its batch begins as its epoch, and must apply its RegisterBrokerRecord, after
    the partition changes, to be caught up; a retry's amend moves that offset to the amend's record
    (DEC-5), and a failover that drops the uncommitted amend moves it back."""
    from kraftspec.conformance.scenario import Scenario
    from kraftspec.conformance.simulation import features_of
    from kraftspec.model import Failover
    from kraftspec.model.messages import BrokerRegistrationRequest

    s = Scenario(Config.for_profile("kafka")).start_brokers(2, 3)
    s.create_topic("t", [[2, 3], [3, 2]])
    s.tick(s.config.session_timeout_ms + 1)  # broker 3's session lapses; the scan has not fenced it
    begins = s.state.log_end_offset
    request = BrokerRegistrationRequest(3, s.config.cluster_id, UUID(int=33), -1, features=features_of(s.config))
    s.send(request).commit()
    record = s.state.log_end_offset - 1  # the batch's last record, after the partition changes
    assert s.epoch(3) == begins < record == s.state.registration_offset(3)
    s.heartbeat(3, offset=record - 1)  # the kafka profile's unit: the highest offset applied (DEC-2)
    assert s.state.image.brokers[3].fenced  # not caught up: its own record is not applied
    s.heartbeat(3, offset=record)
    assert not s.state.image.brokers[3].fenced
    amend_at = s.state.log_end_offset
    s.send(request)  # a retry: amended by a record of its own, not committed
    assert s.state.registration_offset(3) == amend_at and s.epoch(3) == begins
    s.send(Failover())
    assert s.state.registration_offset(3) == record


def test_lease_10_unfenced_when_not_wantfence_not_shutdown_and_caught_up():
    """LEASE-10, DEC-1: one UnfenceBrokerRecord, IsFenced false, released at commit."""
    c = Cluster()
    c.register(1)
    result = c.send(BrokerHeartbeatRequest(1, c.epoch(1), c.epoch(1) + 1, False, False))
    assert result.replies == ()
    assert [r for b in result.batches for r in b.records] == [UnfenceBrokerRecord(1, c.epoch(1))]
    [reply] = c.commit().replies
    assert not reply.response.is_fenced


@pytest.mark.parametrize("want_fence, caught_up", [(True, True), (False, False), (True, False)])
def test_lease_11_otherwise_a_fenced_broker_stays_fenced(want_fence, caught_up):
    """LEASE-11."""
    c = Cluster()
    c.register(1)
    offset = c.epoch(1) + 1 if caught_up else c.epoch(1)
    response = c.heartbeat(1, offset=offset, want_fence=want_fence)
    assert response.is_fenced and c.records() == []


def test_lease_12_an_active_broker_asking_to_be_fenced_is_fenced():
    """LEASE-12: partition changes and a FenceBrokerRecord; IsFenced true."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.create_topic("t", assignment=[[1, 2]])
    response = c.heartbeat(1, want_fence=True)
    t = c.partition("t").topic_id
    assert response.is_fenced and not response.should_shut_down
    assert c.records() == [PartitionChangeRecord(0, t, isr=(2,), leader=2), FenceBrokerRecord(1, c.epoch(1))]


def test_lease_13_an_active_broker_asking_for_nothing_stays_active():
    """LEASE-13."""
    c = Cluster()
    c.start_brokers(1)
    response = c.heartbeat(1)
    assert not response.is_fenced and c.records() == []


def test_lease_14_failover_gives_every_broker_a_fresh_session():
    """LEASE-14, DEC-28, DEC-6: last contact = failover time; offsets and controlled shutdowns
    forgotten; a fenced broker holds no claim on its id until it is heard from (kafka profile, where
    a controlled shutdown outlasts its first heartbeat)."""
    c = Cluster(profile="kafka")
    c.start_brokers(1, 2)
    c.register(3)  # fenced
    c.create_topic("t", assignment=[[1, 2]])
    c.heartbeat(1, want_shut_down=True)
    assert c.state.leases[1].in_controlled_shutdown
    c.tick(5_000)
    c.failover()
    leases = {b: (l.last_contact_ms, l.metadata_offset, l.in_controlled_shutdown, l.released) for b, l in c.state.leases.items()}
    assert leases == {1: (5_000, -1, False, False), 2: (5_000, -1, False, False), 3: (5_000, -1, False, True)}
    # DEC-25: sessions for the unfenced brokers, in the order of Kafka's registration table; the first
    # scan a session timeout / 8 (1125 ms) after the failover, the next 1125 ms after it
    assert [(s.broker_id, s.last_contact_ms) for s in c.state.sessions.in_order()] == [(2, 5_000), (1, 5_000)]
    c.tick(5_000 + 9_000)  # the kafka profile's session timeout; it lapses only after it (DEC-7)
    assert not c.state.image.brokers[2].fenced
    c.tick(5_000 + 9_001)  # lapsed, but no scan is due before 15_125
    assert not c.state.image.brokers[2].fenced
    c.tick(15_125)  # one broker per scan, the first in the map's order
    assert c.state.image.brokers[2].fenced and not c.state.image.brokers[1].fenced
    c.tick(15_135)
    assert c.state.image.brokers[1].fenced


def test_lease_15_fence_and_unfence_records_only_set_the_flag():
    """LEASE-15, DEC-8: replaying them changes no partition."""
    from kraftspec.model.replay import replay

    c = Cluster()
    c.start_brokers(1, 2)
    c.create_topic("t", assignment=[[1, 2]])
    image = c.state.image
    fenced = replay(image, FenceBrokerRecord(1, c.epoch(1)))
    assert fenced.brokers[1].fenced and fenced.partitions == image.partitions
    assert not replay(fenced, UnfenceBrokerRecord(1, c.epoch(1))).brokers[1].fenced
    assert replay(image, FenceBrokerRecord(1, c.epoch(1) + 1)) == image  # wrong epoch: LOG-13


def test_lao_1_lowest_acknowledged_offset_over_unfenced_brokers():
    """LAO-1, DEC-27: the lowest recorded offset of the unfenced brokers, the requester included."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.heartbeat(1, offset=c.state.committed_offset)
    c.register(3)
    response = c.heartbeat(2, offset=c.state.committed_offset + 0)
    lowest = min(c.state.leases[b].metadata_offset for b in (1, 2))
    assert response.lowest_acknowledged_offset == lowest
    c.heartbeat(3, offset=0, want_fence=True)  # fenced brokers do not count
    assert c.heartbeat(2).lowest_acknowledged_offset == min(c.state.leases[b].metadata_offset for b in (1, 2))
    assert c.heartbeat(1, version=0).lowest_acknowledged_offset is None  # version 0 has no such field


def test_lao_1_with_no_unfenced_broker_it_is_the_committed_offset():
    """LAO-1, DEC-27."""
    c = Cluster()
    c.register(1)
    response = c.heartbeat(1, want_fence=True)
    assert response.lowest_acknowledged_offset == c.state.committed_offset


def test_lao_1_a_broker_not_heard_from_since_failover_counts_as_minus_one():
    """LAO-1."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.failover()
    assert c.heartbeat(1).lowest_acknowledged_offset == -1


def test_lao_2_refused_heartbeats_carry_minus_one_and_a_lower_offset_counts_as_sent():
    """LAO-2: -1 in a version 1 error; LAO-1, DEC-13: a lower offset is recorded, and counted, as sent."""
    c = Cluster()
    c.start_brokers(1)
    assert c.heartbeat(1, epoch=999).lowest_acknowledged_offset == -1
    c.heartbeat(1, offset=c.state.committed_offset)
    lower = c.heartbeat(1, offset=0)
    assert lower.lowest_acknowledged_offset == c.state.leases[1].metadata_offset == 0


def test_mem_1_membership_states_and_visibility():
    """MEM-1, DEC-14: unregistered, fenced, active, in controlled shutdown; only unfenced brokers are
    visible. The kafka profile shows the controlled shutdown state past a heartbeat: broker 1 waits
    there for broker 2 to apply the records that moved its leadership."""
    c = Cluster(profile="kafka")
    c.start_brokers(1, 2)
    c.register(3)
    c.create_topic("solo", assignment=[[1]])
    c.heartbeat(1, want_shut_down=True)
    assert [membership(c.state, b) for b in (1, 2, 3, 4)] == [
        Membership.CONTROLLED_SHUTDOWN,
        Membership.ACTIVE,
        Membership.FENCED,
        Membership.UNREGISTERED,
    ]
    assert visible_brokers(c.state.image) == [1, 2]


def test_mem_2_every_membership_transition():
    """MEM-2, DEC-14, DEC-7: the transition table, walked edge by edge (kafka profile, the one where
    a broker stays in controlled shutdown past the heartbeat that asks; its leases lapse a
    millisecond after their deadline)."""
    c = Cluster(Config.for_profile("kafka", session_timeout_ms=1000, heartbeat_interval_ms=100))
    seen = [membership(c.state, 1)]
    c.register(1)  # REG-6
    seen.append(membership(c.state, 1))
    c.heartbeat(1)  # LEASE-10
    seen.append(membership(c.state, 1))
    c.tick(1001)  # LEASE-8
    seen.append(membership(c.state, 1))
    c.heartbeat(1)
    c.heartbeat(1, want_fence=True)  # LEASE-12
    seen.append(membership(c.state, 1))
    c.start_brokers(2)
    c.heartbeat(1)
    c.create_topic("solo", assignment=[[1]])
    c.heartbeat(1, want_shut_down=True)  # SHUT-1: it led solo, so it waits for broker 2 to catch up
    seen.append(membership(c.state, 1))
    c.heartbeat(2)  # broker 2 applies the shutdown's records
    for _ in range(2):  # SHUT-3: let go at a heartbeat once every active broker has applied them
        if c.heartbeat(1, want_shut_down=True).should_shut_down:
            break
    seen.append(membership(c.state, 1))
    assert c.heartbeat(2, want_shut_down=True).should_shut_down  # SHUT-3: broker 2 leads nothing,
    assert membership(c.state, 2) == Membership.FENCED  # so it goes from active straight to fenced
    c.unregister(1)  # UNREG-2
    seen.append(membership(c.state, 1))
    assert [m.value for m in seen] == [
        "unregistered",
        "registered+fenced",
        "registered+active",
        "registered+fenced",
        "registered+fenced",
        "in controlled shutdown",
        "registered+fenced",
        "unregistered",
    ]


def test_lease_8_dec_25_the_session_table_iterates_as_javas_concurrent_hash_map():
    """LEASE-8, DEC-25: model's and impl's session tables keep the order in which a JDK 17
    ConcurrentHashMap<BrokerIdAndEpoch, Long> (Kafka 4.4's record key) iterated these keys: twelve
    keys (the twelfth doubles the table), and nine in one chain (the table is presized to 128 slots)."""
    from kraftspec.impl.sessions import SessionTable as ImplSessions
    from kraftspec.model.sessions import SessionTable

    def model_order(keys):
        table = SessionTable()
        for b, e in keys:
            table = table.touched(b, e, 0)
        return [(s.broker_id, s.epoch) for s in table.in_order()]

    def impl_order(keys):
        table = ImplSessions()
        for b, e in keys:
            table.touch(b, e, 0)
        return [(entry[1], entry[2]) for chain in table.slots for entry in chain]

    keys = [(1, 1), (2, 2), (3, 3), (1, 17), (4, 4), (2, 34), (5, 5), (1, 33), (3, 51), (2, 18), (6, 6), (4, 36)]
    eleven = [(4, 4), (3, 51), (5, 5), (1, 1), (1, 17), (2, 2), (1, 33), (6, 6), (2, 18), (2, 34), (3, 3)]
    twelve = [(4, 4), (3, 51), (5, 5), (1, 1), (4, 36), (1, 17), (2, 2), (1, 33), (6, 6), (2, 18), (2, 34), (3, 3)]
    chain = [(i, i + 16 * (8 - i)) for i in range(9)]
    presized = [(0, 128), (8, 8), (1, 113), (2, 98), (3, 83), (4, 68), (5, 53), (6, 38), (7, 23)]
    for order in (model_order, impl_order):
        assert order(keys[:11]) == eleven and order(keys) == twelve and order(chain) == presized
