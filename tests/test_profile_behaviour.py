"""The two behaviour profiles side by side: for every parameter of spec/profiles.toml, one scenario
run under kip-631 and under kafka, each asserting its own profile's outcome; then the defect fixes
of DEC-14, DEC-20, DEC-26 and DEC-6 (each a scenario the model before them got wrong), and the
changes both profiles share (PART-4 during a reassignment, LEASE-3, DEC-13), in both profiles.

tests/test_profiles.py checks the table itself; this file checks that the model behaves as it says.
"""

from __future__ import annotations

import pytest

from cluster import Cluster, incarnation, topic_id
from kraftspec.conformance.simulation import features_of
from kraftspec.model import Config, Error, initial_state
from kraftspec.model.formats import formats_of, record_version
from kraftspec.model.framing import FrameError, decode_record, encode_record
from kraftspec.model.log import snapshot_records
from kraftspec.model.replay import replay_all
from kraftspec.model.state import ConfigError, FeatureRange, MetadataImage
from kraftspec.model.membership import Membership, membership
from kraftspec.model.messages import (
    REQUEST_TYPES,
    AlterIsrPartition,
    AlterIsrRequest,
    AlterIsrTopic,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    CreatableTopic,
    CreateTopicsRequest,
    Feature,
    api_key,
    carries,
)
from kraftspec.model.records import NO_LEADER_CHANGE, PartitionChangeRecord
from kraftspec.conformance.jsonform import qualified, to_json
from kraftspec.conformance.lockstep import Lockstep
from kraftspec.spec.profiles import parameters, profile as profile_named

PROFILES = ("kip-631", "kafka")
KIP_631, KAFKA = PROFILES

each_profile = pytest.mark.parametrize("profile", PROFILES)


def cluster(profile: str, *brokers: int) -> Cluster:
    """A cluster of ``profile``'s defaults with ``brokers`` registered and unfenced."""
    c = Cluster(profile=profile)
    c.start_brokers(*brokers)
    return c


def fenced_ids(c: Cluster, result) -> list[int]:
    """The brokers ``result``'s records fence, in order, in the profile's record formats (DEC-22)."""
    say = formats_of(c.state.config.params)
    return [r.broker_id for b in result.batches for r in b.records
            if hasattr(r, "broker_epoch") and r == say.fence(r.broker_id, r.broker_epoch)]


def create(c: Cluster, name: str, partitions: int, replication_factor: int):
    [result] = c.request(CreateTopicsRequest([CreatableTopic(name, topic_id(name), partitions, replication_factor)])).topics
    return result


def state_of(c: Cluster, name: str, index: int = 0) -> tuple:
    p = c.partition(name, index)
    return p.replicas, p.isr, p.leader


# ---- lease_lapses (DEC-7) -------------------------------------------------------------------------


@each_profile
def test_lease_8_dec_7_a_lease_lapses_at_its_deadline_in_kip_631_and_a_millisecond_later_in_kafka(profile):
    """LEASE-8, INV-10, DEC-7: kip-631 fences at last contact + session timeout; kafka keeps the
    session valid through that instant and fences one millisecond later."""
    c = cluster(profile, 1)
    deadline = c.state.leases[1].deadline(c.state.config.session_timeout_ms)
    if profile == KIP_631:
        c.tick(deadline - 1)
        assert not c.state.image.brokers[1].fenced
    at_deadline = c.tick(deadline)  # in kafka, a tick at which a scan is due (DEC-25)
    fenced_at_deadline = [r for b in at_deadline.batches for r in b.records]
    if profile == KIP_631:
        assert fenced_at_deadline == [c.fence_record(1)]
    else:
        assert fenced_at_deadline == [] and not c.state.image.brokers[1].fenced
        c = cluster(profile, 1)
        after = c.tick(deadline + 1)  # the same scan a millisecond later
        assert [r for b in after.batches for r in b.records] == [c.fence_record(1)]
    assert c.state.image.brokers[1].fenced


@each_profile
def test_reg_4_dec_7_another_incarnation_may_register_at_the_deadline_in_kip_631_and_only_after_it_in_kafka(profile):
    """REG-4, DEC-7: the old incarnation's claim ends when its lease lapses, at the deadline or a
    millisecond after it, as the profile says."""
    c = cluster(profile, 1)
    deadline = c.state.leases[1].deadline(c.state.config.session_timeout_ms)
    c.tick(deadline)
    at_deadline = c.register(1, generation=1).error_code
    if profile == KIP_631:
        assert at_deadline == Error.NONE
    else:
        assert at_deadline == Error.DUPLICATE_BROKER_REGISTRATION and c.records() == []
        c.tick(deadline + 1)
        assert c.register(1, generation=1).error_code == Error.NONE
    assert c.state.image.brokers[1].fenced and c.epoch(1) > 0


# ---- lease_expiry (DEC-25) ---------------------------------------------------------------------------


@each_profile
def test_lease_8_dec_25_lapsed_leases_are_fenced_at_the_tick_in_kip_631_and_one_per_scan_in_kafka(profile):
    """LEASE-8, DEC-25: two leases lapse by the same tick. kip-631 fences both at that tick, by
    deadline then id, one batch each. Kafka's scan, due every session timeout / 8, fences one per
    run, the first lapsed session in its hash map's order, and runs again only 10 ms later."""
    c = cluster(profile, 1, 2)
    c.heartbeat(2)  # at time 0 too: the same deadline for both
    timeout = c.state.config.session_timeout_ms
    fenced = fenced_ids(c, c.tick(2 * timeout))
    if profile == KIP_631:
        assert fenced == [1, 2]
        return
    # kafka: sessions (1, 1) and (2, 2) share a bin of the map; broker 1 heartbeat first
    assert [(s.broker_id, s.epoch) for s in c.state.sessions.in_order()] == [(2, 2)]
    assert fenced == [1] and c.state.next_scan_ms == 2 * timeout + 10
    assert c.tick(2 * timeout + 9).batches == ()  # the next scan is not due yet
    later = fenced_ids(c, c.tick(2 * timeout + 10))
    assert later == [2] and c.state.sessions.size == 0


@each_profile
def test_lease_8_dec_25_a_fenced_broker_that_heartbeated_is_fenced_again_only_in_kafka(profile):
    """LEASE-8, LEASE-4, DEC-25: kip-631 fences only unfenced brokers. Kafka keeps a session for every
    heartbeat, a fenced broker's and one naming a stale epoch: a lapsed session of the current
    epoch fences its broker again (a FenceBrokerRecord); one of another epoch spends a scan."""
    c = Cluster(profile=profile)
    c.register(1)
    c.heartbeat(1, want_fence=True)  # fenced, and heard from
    c.request(BrokerHeartbeatRequest(1, c.epoch(1) + 100, 0, False, False))  # LEASE-4: a stale epoch
    timeout = c.state.config.session_timeout_ms
    first = c.tick(2 * timeout)
    second = c.tick(2 * timeout + 10)
    if profile == KIP_631:
        assert first.batches == () and second.batches == ()
        return
    records = [r for result in (first, second) for b in result.batches for r in b.records]
    assert records == [c.fence_record(1)] and c.state.sessions.size == 0


# ---- registration_is_contact (DEC-6) -----------------------------------------------------------------


@each_profile
def test_reg_4_dec_6_a_new_registration_claims_its_id_in_kip_631_and_only_from_its_first_heartbeat_in_kafka(profile):
    """REG-4, LEASE-7, DEC-6: in kip-631 a registration is contact, so a registered broker that has not
    yet heartbeat keeps another incarnation out; in kafka it holds no claim until it heartbeats."""
    c = Cluster(profile=profile)
    c.register(1)
    c.advance(1000)
    second = c.register(1, generation=1)
    if profile == KIP_631:
        assert second.error_code == Error.DUPLICATE_BROKER_REGISTRATION
        return
    assert second.error_code == Error.NONE
    c.heartbeat(1)  # the new incarnation's first heartbeat: now it claims the id
    c.advance(1000)
    assert c.register(1, generation=2).error_code == Error.DUPLICATE_BROKER_REGISTRATION


@each_profile
def test_reg_3_dec_6_a_retried_registration_renews_the_lease_in_kip_631_and_changes_nothing_in_kafka(profile):
    """REG-3, LEASE-7, DEC-6: an active broker that only retries its registration keeps its lease in
    kip-631; in kafka the retry renews nothing and the lease lapses as if it were silent."""
    c = cluster(profile, 1)
    timeout = c.state.config.session_timeout_ms
    c.tick(timeout - 1000)
    retry = c.register(1)
    assert (retry.error_code, retry.broker_epoch) == (Error.NONE, c.epoch(1))
    c.tick(timeout + 1 + (1000 if profile == KAFKA else 0))  # kafka: when the next scan is due (DEC-25)
    if profile == KIP_631:
        assert c.state.leases[1].last_contact_ms == timeout - 1000
        assert not c.state.image.brokers[1].fenced
    else:
        assert c.state.leases[1].last_contact_ms == 0
        assert c.state.image.brokers[1].fenced


# ---- shutdown_grant (DEC-14) ---------------------------------------------------------------------


@each_profile
def test_shut_3_dec_14_a_leader_is_let_go_in_the_heartbeat_that_asks_in_kip_631_and_on_a_later_one_in_kafka(profile):
    """SHUT-2, SHUT-3, DEC-14: both profiles move the leadership in the first heartbeat; kip-631 fences
    the broker in that same batch and answers ShouldShutDown; kafka answers false, notes the batch's
    last offset, and lets the broker go (a FenceBrokerRecord alone) once the active brokers have
    applied it."""
    c = cluster(profile, 1, 2)
    c.create_topic("pair", assignment=[[1, 2]])
    first = c.heartbeat(1, want_shut_down=True)
    pair = c.partition("pair").topic_id
    move = PartitionChangeRecord(0, pair, isr=(2,), leader=2)
    if profile == KIP_631:
        assert (first.should_shut_down, first.is_fenced) == (True, True)
        assert c.records() == [move, c.fence_record(1)]
        return
    assert (first.should_shut_down, first.is_fenced) == (False, False)
    assert c.records() == [*c.shutdown_records(1), move]  # DEC-22: Kafka's records say it first
    assert c.state.leases[1].shutdown_offset == c.state.log_end_offset - 1
    assert membership(c.state, 1) == Membership.CONTROLLED_SHUTDOWN
    assert not c.heartbeat(1, want_shut_down=True).should_shut_down  # broker 2 has not applied it
    c.heartbeat(2)
    granted = c.heartbeat(1, want_shut_down=True)
    assert (granted.should_shut_down, granted.is_fenced) == (True, True)
    assert c.records() == [c.fence_record(1)]
    assert membership(c.state, 1) == Membership.FENCED


@each_profile
def test_shut_3_dec_14_a_broker_that_leads_nothing_is_let_go_at_once_in_both_profiles(profile):
    """SHUT-3, DEC-14: with no leadership to move, both profiles fence the broker (out of its ISRs)
    and answer ShouldShutDown in the heartbeat that asks."""
    c = cluster(profile, 1, 2)
    c.create_topic("t", assignment=[[2, 1]])
    response = c.heartbeat(1, want_shut_down=True)
    t = c.partition("t").topic_id
    assert (response.should_shut_down, response.is_fenced) == (True, True)
    assert c.records() == [PartitionChangeRecord(0, t, isr=(2,)), c.fence_record(1)]


# ---- reassignment_layout (DEC-18) ------------------------------------------------------------------


@each_profile
def test_reassign_4_dec_18_replicas_list_the_leaving_replicas_first_in_kip_631_and_last_in_kafka(profile):
    """REASSIGN-4, INV-17, DEC-18: [1,2,3] -> [3,4,5] gives [1,2,3,4,5] in kip-631 (seed 001's worked
    example) and [3,4,5,1,2] in kafka; the removing and adding lists and the leader agree."""
    c = cluster(profile, 1, 2, 3, 4, 5)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.reassign("t", [3, 4, 5])
    p = c.partition("t")
    expected = (1, 2, 3, 4, 5) if profile == KIP_631 else (3, 4, 5, 1, 2)
    assert (p.replicas, p.removing_replicas, p.adding_replicas, p.leader) == (expected, (1, 2), (4, 5), 1)
    assert p.target_replicas == (3, 4, 5)


@each_profile
def test_reassign_9_dec_18_a_new_target_is_laid_out_against_the_full_current_list(profile):
    """REASSIGN-9, DEC-18: a second reassignment, to [4,5], computes its lists from the whole current
    Replicas (the first one's adding replicas included), laid out in the profile's order (kafka:
    the target, then the replicas leaving in ascending id, as Kafka's sorted sets give them)."""
    c = cluster(profile, 1, 2, 3, 4, 5)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.reassign("t", [3, 4, 5])
    c.reassign("t", [4, 5])
    p = c.partition("t")
    if profile == KIP_631:
        assert (p.replicas, p.removing_replicas, p.adding_replicas) == ((1, 2, 3, 4, 5), (1, 2, 3), ())
    else:
        assert (p.replicas, p.removing_replicas, p.adding_replicas) == ((4, 5, 1, 2, 3), (1, 2, 3), ())
    assert (p.target_replicas, p.leader) == ((4, 5), 1)


# ---- reassignment_completes (DEC-18) ---------------------------------------------------------------


@each_profile
def test_reassign_6_dec_18_adding_replicas_in_sync_complete_in_kip_631_and_the_whole_target_in_kafka(profile):
    """REASSIGN-6, DEC-18: [1,2,3] -> [3,4] with ISR [1,2,4]: the added replica is in sync and the ISR
    meets the target, which completes it in kip-631; kafka waits for 3, the rest of the target."""
    c = cluster(profile, 1, 2, 3, 4)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.reassign("t", [3, 4])
    c.alter_isr(1, "t", [1, 2, 4])
    p = c.partition("t")
    if profile == KIP_631:
        assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((3, 4), (4,), 4, False)
        return
    assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((3, 4, 1, 2), (1, 2, 4), 1, True)
    c.alter_isr(1, "t", [1, 2, 4, 3])
    p = c.partition("t")
    assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((3, 4), (4, 3), 3, False)


@each_profile
def test_reassign_6_dec_18_in_kafka_a_reassignment_adding_as_many_as_it_removes_waits_only_for_the_adding_ones(profile):
    """REASSIGN-6, DEC-18 (Kafka 4.3 and later): [1,2,4] with ISR [1,2] -> [1,4,3], removing 2 and
    adding 3: once 3 is in sync the reassignment completes although 4, a target replica, is not, since
    no fewer replicas are added than removed. kip-631 completes too (the adding replica is in sync and
    the ISR meets the target); Kafka 4.0 to 4.2, which waited for the whole target, did not
    (spec/kafka.md, B26)."""
    c = cluster(profile, 1, 2, 3, 4)
    c.create_topic("t", assignment=[[1, 2, 4]])
    c.alter_isr(1, "t", [1, 2])
    c.reassign("t", [1, 4, 3])
    assert c.partition("t").is_reassigning
    c.alter_isr(1, "t", [1, 2, 3])
    p = c.partition("t")
    assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((1, 4, 3), (1, 3), 1, False)


@each_profile
def test_reassign_5_dec_18_a_shrink_completes_at_once_in_kip_631_when_the_isr_keeps_a_target_member(profile):
    """REASSIGN-5, DEC-18: [1,2,3] -> [2,3] with ISR [1,2] completes in the very record in kip-631 (the
    ISR keeps 2 of the target); kafka waits until 3 is in sync too."""
    c = cluster(profile, 1, 2, 3)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.alter_isr(1, "t", [1, 2])
    c.reassign("t", [2, 3])
    p = c.partition("t")
    if profile == KIP_631:
        assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((2, 3), (2,), 2, False)
        return
    assert (p.replicas, p.removing_replicas, p.isr, p.leader) == ((2, 3, 1), (1,), (1, 2), 1)
    c.alter_isr(1, "t", [1, 2, 3])
    p = c.partition("t")
    assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((2, 3), (2, 3), 2, False)


# ---- leader_epoch_on_replica_removal (DEC-17) ------------------------------------------------------


@each_profile
def test_part_5_dec_17_removing_a_replica_under_a_staying_leader_raises_the_leader_epoch_only_in_kafka(profile):
    """PART-5, REASSIGN-5, DEC-17: [1,2,3] -> [1,2], completed at once, leader 1 staying: kip-631 writes
    no Leader (the leader epoch counts leader changes); kafka writes Leader = 1, raising the epoch."""
    c = cluster(profile, 1, 2, 3)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.reassign("t", [1, 2])
    t = c.partition("t").topic_id
    leader = NO_LEADER_CHANGE if profile == KIP_631 else 1
    assert c.records() == [PartitionChangeRecord(0, t, isr=(1, 2), leader=leader, replicas=(1, 2))]
    p = c.partition("t")
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (1, 0 if profile == KIP_631 else 1, 1)


@each_profile
def test_part_5_dec_17_an_isr_change_that_removes_no_replica_raises_no_leader_epoch_in_either(profile):
    """PART-5, ISR-9, DEC-17: the kafka profile's extra bump is for replicas leaving Replicas only."""
    c = cluster(profile, 1, 2, 3)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.alter_isr(1, "t", [1, 2])
    assert c.records() == [PartitionChangeRecord(0, c.partition("t").topic_id, isr=(1, 2))]
    assert c.partition("t").leader_epoch == 0


# ---- unregister_unknown_error (DEC-35) -------------------------------------------------------------


@each_profile
def test_unreg_1_dec_35_an_unknown_id_gets_none_in_kip_631_and_broker_id_not_registered_in_kafka(profile):
    """UNREG-1, DEC-35: seed 001 lists NONE for an id already unregistered; Kafka answers
    BROKER_ID_NOT_REGISTERED. Nothing is written either way."""
    c = cluster(profile, 1)
    c.unregister(1)
    expected = Error.NONE if profile == KIP_631 else Error.BROKER_ID_NOT_REGISTERED
    for broker_id in (1, 5):  # unregistered already, never registered
        assert c.unregister(broker_id).error_code == expected
        assert c.records() == []


# ---- heartbeat_offset (DEC-2) ----------------------------------------------------------------------


@each_profile
def test_lease_9_dec_2_caught_up_past_the_registration_in_kip_631_and_at_it_in_kafka(profile):
    """LEASE-9, LEASE-10, DEC-2: CurrentMetadataOffset = the registration's offset (its epoch) is caught
    up in kafka (the highest offset applied) but not in kip-631 (one more than the highest applied)."""
    c = Cluster(profile=profile)
    c.register(1)
    epoch = c.epoch(1)
    at_epoch = c.heartbeat(1, offset=epoch)
    assert at_epoch.is_caught_up == (profile == KAFKA)
    assert at_epoch.is_fenced == (profile == KIP_631)
    past = c.heartbeat(1, offset=epoch + 1)
    assert past.is_caught_up and not past.is_fenced


@each_profile
def test_lease_5_dec_2_a_negative_offset_is_refused_in_kip_631_and_accepted_in_kafka(profile):
    """LEASE-5, DEC-2: kip-631 refuses a negative CurrentMetadataOffset (INVALID_REQUEST, not contact);
    kafka takes any value, and -1 is contact that is not caught up."""
    c = Cluster(profile=profile)
    c.register(1)
    c.advance(1000)
    response = c.heartbeat(1, offset=-1)
    if profile == KIP_631:
        assert response.error_code == Error.INVALID_REQUEST
        assert c.state.leases[1].last_contact_ms == 0
    else:
        assert (response.error_code, response.is_caught_up, response.is_fenced) == (Error.NONE, False, True)
        assert (c.state.leases[1].last_contact_ms, c.state.leases[1].metadata_offset) == (1000, -1)


@each_profile
def test_lao_1_dec_2_the_lowest_acknowledged_offset_is_the_lowest_recorded_offset_in_its_profiles_unit(profile):
    """LAO-1, DEC-2: the value is the lowest offset recorded for an unfenced broker, in the unit the
    brokers send: the log end in kip-631 (what Cluster sends by default). The kafka profile's
    response has no such field (DEC-9)."""
    c = cluster(profile, 1, 2)
    c.heartbeat(1)
    response = c.heartbeat(2)
    end = c.state.committed_offset
    assert response.lowest_acknowledged_offset == (end if profile == KIP_631 else None)


# ---- default_timings (DEC-12) ----------------------------------------------------------------------


@each_profile
def test_lease_1_dec_12_default_timings_are_3000_and_18000_in_kip_631_and_2000_and_9000_in_kafka(profile):
    """LEASE-1, CONF-1, DEC-12: a profile's default configuration, and a silent broker fenced when
    that profile's session timeout has passed (LEASE-8, DEC-7)."""
    config = Config.for_profile(profile)
    expected = (3000, 18000) if profile == KIP_631 else (2000, 9000)
    assert (config.heartbeat_interval_ms, config.session_timeout_ms) == expected
    c = cluster(profile, 1)
    c.tick(9_001)
    assert c.state.image.brokers[1].fenced == (profile == KAFKA)
    c.tick(18_000)
    assert c.state.image.brokers[1].fenced


@each_profile
def test_lease_1_dec_12_a_broker_heartbeating_every_default_interval_keeps_its_lease(profile):
    """LEASE-1, LEASE-7, CONF-2, DEC-12: heartbeats at the profile's default interval keep a broker
    unfenced for many session timeouts."""
    c = cluster(profile, 1)
    interval = c.state.config.heartbeat_interval_ms
    for _ in range(3 * c.state.config.session_timeout_ms // interval):
        c.advance(interval)
        assert not c.heartbeat(1).is_fenced
    assert not c.state.image.brokers[1].fenced


# ---- defect fix: controlled shutdown always completes (DEC-14) ----------------------------------


@each_profile
def test_shut_3_dec_14_the_sole_isr_member_and_leader_of_an_rf_1_partition_completes_controlled_shutdown(profile):
    """SHUT-2, SHUT-3, DEC-14, DEC-8: broker 1 is the only replica and leader of 'solo'. The leadership
    nobody else can take is given up (Leader -1), broker 1 stays its sole ISR member, and the broker
    is let go: in kip-631 in the heartbeat that asks; in kafka on a later heartbeat, once the other
    active brokers have applied the shutdown's batch (it waits while one lags).

    The old model moved only leaderships another replica could take and said ShouldShutDown only to
    a broker that led nothing, so broker 1 was never let go: no ShouldShutDown after 5 heartbeats."""
    c = cluster(profile, 1, 2, 3)
    c.create_topic("solo", assignment=[[1]])
    solo = c.partition("solo").topic_id
    first = c.heartbeat(1, want_shut_down=True)
    assert (c.partition("solo").leader, c.partition("solo").isr, c.partition("solo").replicas) == (-1, (1,), (1,))
    if profile == KIP_631:
        assert (first.should_shut_down, first.is_fenced) == (True, True)
        assert c.records() == [PartitionChangeRecord(0, solo, leader=-1), c.fence_record(1)]
        assert membership(c.state, 1) == Membership.FENCED
        return
    assert (first.should_shut_down, first.is_fenced) == (False, False)
    assert c.records() == [*c.shutdown_records(1), PartitionChangeRecord(0, solo, leader=-1)]
    shutdown_offset = c.state.log_end_offset - 1  # the offset of that batch's last record
    waiting = c.heartbeat(1, want_shut_down=True)  # brokers 2 and 3 have not applied it
    assert not waiting.should_shut_down and c.records() == []
    c.heartbeat(3)  # broker 3 has applied it (kafka's unit: the highest offset applied)
    assert c.state.leases[3].metadata_offset >= shutdown_offset
    c.heartbeat(2, offset=shutdown_offset - 1)  # broker 2 lags by one record
    lagging = c.heartbeat(1, want_shut_down=True)
    assert not lagging.should_shut_down and c.records() == []
    assert membership(c.state, 1) == Membership.CONTROLLED_SHUTDOWN
    c.heartbeat(2, offset=shutdown_offset)  # now broker 2 has applied it too
    granted = c.heartbeat(1, want_shut_down=True)
    assert (granted.should_shut_down, granted.is_fenced) == (True, True)
    assert c.records() == [c.fence_record(1)]
    assert (c.partition("solo").leader, c.partition("solo").isr) == (-1, (1,))


# ---- defect fix: an unregistered sole ISR member stays in Replicas (DEC-20) ----------------------


@each_profile
def test_part_8_dec_20_the_unregistered_sole_isr_member_stays_in_replicas_and_leads_again_when_back(profile):
    """PART-8, PART-7, UNREG-2, DEC-20: unregistering the only in-sync replica leaves the partition
    leaderless with Replicas [1] and ISR [1]; broker 1 registering again (a new incarnation) and
    being unfenced makes it leader again.

    The old model removed the broker from Replicas and ISR: the partition was left with no replica
    at all and could never be led again."""
    c = cluster(profile, 1, 2)
    c.create_topic("solo", assignment=[[1]])
    c.unregister(1)
    assert state_of(c, "solo") == ((1,), (1,), -1)
    assert 1 not in c.state.image.brokers
    assert c.register(1, generation=1).error_code == Error.NONE
    assert state_of(c, "solo") == ((1,), (1,), -1)  # registering writes no partition change (REG-9)
    assert not c.heartbeat(1).is_fenced
    assert state_of(c, "solo") == ((1,), (1,), 1)


# ---- defect fix: placement prefers unfenced brokers (DEC-26) -------------------------------------


@each_profile
def test_topic_4_dec_26_replication_factors_one_and_two_with_a_fenced_broker_place_on_unfenced_ones(profile):
    """TOPIC-4, TOPIC-5, DEC-26: brokers 1 and 3 unfenced, 2 fenced. RF 1 and RF 2 succeed with every
    replica on 1 and 3, round-robin by id.

    The old model placed round-robin over all registered brokers: RF 1 put partition 1 on fenced
    broker 2 alone, an empty ISR, and the topic got INVALID_REPLICATION_FACTOR; RF 2 put broker 2
    in two of three partitions."""
    c = cluster(profile, 1, 3)
    c.register(2)  # fenced
    one = create(c, "one", 3, 1)
    assert one.error_code == Error.NONE
    assert [state_of(c, "one", i) for i in range(3)] == [((1,), (1,), 1), ((3,), (3,), 3), ((1,), (1,), 1)]
    two = create(c, "two", 3, 2)
    assert two.error_code == Error.NONE
    assert [state_of(c, "two", i) for i in range(3)] == [
        ((1, 3), (1, 3), 1), ((3, 1), (3, 1), 3), ((1, 3), (1, 3), 1)]


@each_profile
def test_topic_4_dec_26_with_rf_3_and_one_fenced_broker_it_fills_the_last_place_out_of_the_isr(profile):
    """TOPIC-4, TOPIC-5, DEC-26: RF 3 over unfenced 1 and 3 and fenced 2: the fenced broker fills the
    place the unfenced cannot, last, and is not in the ISR. RF 4 is too many (INVALID_REPLICATION_FACTOR).

    The old model put broker 2 in every position of the round-robin, first for partition 1."""
    c = cluster(profile, 1, 3)
    c.register(2)
    assert create(c, "three", 3, 3).error_code == Error.NONE
    assert [state_of(c, "three", i) for i in range(3)] == [
        ((1, 3, 2), (1, 3), 1), ((3, 1, 2), (3, 1), 3), ((1, 3, 2), (1, 3), 1)]
    assert create(c, "four", 1, 4).error_code == Error.INVALID_REPLICATION_FACTOR


# ---- defect fix: a cleanly shut down broker may come back after a failover (DEC-6) ---------------


@each_profile
def test_reg_4_dec_6_a_broker_that_shut_down_cleanly_registers_again_right_after_a_failover(profile):
    """REG-4, LEASE-14, DEC-6: the new controller has heard nothing from the fenced broker, so its id
    is free at once: the restarted broker's new incarnation registers without waiting.

    The old model gave every broker a fresh lease at the failover that kept a fenced broker's claim:
    in kip-631 the new incarnation got DUPLICATE_BROKER_REGISTRATION for a whole session timeout."""
    c = cluster(profile, 1, 2)
    c.create_topic("t", assignment=[[2, 1]])
    shut = c.heartbeat(1, want_shut_down=True)  # it leads nothing: let go at once in both profiles
    assert (shut.should_shut_down, shut.is_fenced) == (True, True)
    c.failover()
    c.advance(100)
    response = c.register(1, generation=1)
    assert response.error_code == Error.NONE
    assert c.state.image.brokers[1].epoch == response.broker_epoch


@each_profile
def test_reg_4_dec_6_a_fenced_broker_that_heartbeats_after_a_failover_claims_its_id_again(profile):
    """REG-4, LEASE-7, LEASE-14, DEC-6, DEC-7: a heartbeat of the fenced old incarnation after the
    failover is contact: a new incarnation is refused until that lease lapses."""
    c = cluster(profile, 1)
    c.heartbeat(1, want_fence=True)
    c.failover()
    c.advance(100)
    assert c.heartbeat(1, want_fence=True).is_fenced
    contact = c.state.now_ms
    deadline = contact + c.state.config.session_timeout_ms
    c.tick(deadline - 1)
    assert c.register(1, generation=1).error_code == Error.DUPLICATE_BROKER_REGISTRATION
    c.tick(deadline if profile == KIP_631 else deadline + 1)  # DEC-7
    assert c.register(1, generation=1).error_code == Error.NONE


# ---- shared by both profiles ---------------------------------------------------------------------


@each_profile
def test_part_4_an_election_during_a_reassignment_prefers_a_target_replica_over_a_leaving_one(profile):
    """PART-4, DEC-18: [1,2,3] -> [3,4,5], 4 and 5 not yet in sync; fencing leader 1 elects 3, of the
    target, not 2, which is being removed, whatever the profile's layout of Replicas."""
    c = cluster(profile, 1, 2, 3, 4, 5)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.reassign("t", [3, 4, 5])
    c.heartbeat(1, want_fence=True)
    p = c.partition("t")
    assert (p.isr, p.leader, p.is_reassigning) == ((2, 3), 3, True)


@each_profile
def test_lease_3_dec_15_a_heartbeat_from_an_unregistered_id_gets_stale_broker_epoch(profile):
    """LEASE-3, DEC-15: STALE_BROKER_EPOCH, Kafka's answer, in both profiles; nothing changes."""
    c = cluster(profile, 1)
    before = c.state.leases
    response = c.request(BrokerHeartbeatRequest(7, 1, 1, False, False))
    lao = -1 if profile == KIP_631 else None  # LAO-2; DEC-9: Kafka's response has no such field
    assert (response.error_code, response.lowest_acknowledged_offset) == (Error.STALE_BROKER_EPOCH, lao)
    assert c.records() == [] and c.state.leases == before


@each_profile
def test_lease_6_dec_13_a_heartbeat_with_a_lower_offset_is_processed_in_both_profiles(profile):
    """LEASE-6, LEASE-7, DEC-13: the lower offset is recorded as sent, the heartbeat is contact, and
    its flags act (WantFence fences)."""
    c = cluster(profile, 1)
    c.create_topic("t", assignment=[[1]])
    c.heartbeat(1)
    c.advance(500)
    lower = c.heartbeat(1, offset=1, want_fence=True)
    assert (lower.error_code, lower.is_fenced) == (Error.NONE, True)
    assert (c.state.leases[1].last_contact_ms, c.state.leases[1].metadata_offset) == (500, 1)
    assert c.records() == [PartitionChangeRecord(0, c.partition("t").topic_id, leader=-1), c.fence_record(1)]


# ---- every parameter has its tests here -----------------------------------------------------------


# ---- answered_at_once (DEC-21) -------------------------------------------------------------------


@each_profile
def test_log_7_dec_21_a_refused_request_waits_for_the_log_in_kip_631_and_is_answered_at_once_in_kafka(profile):
    """LOG-7, DEC-21: while a registration of broker 3 is uncommitted, a registration with another
    cluster id (REG-2) and a heartbeat of an unknown broker (LEASE-3) are refused. kip-631 holds both
    answers until the log as it stood commits; kafka answers both in the step that handles them.
    A refusal of part of a request (an AlterIsr partition) waits in both profiles."""
    c = cluster(profile, 1, 2)
    c.register(3, commit=False)
    wrong_cluster = c.register(4, commit=False, cluster_id="another-cluster")
    unknown = c.request(BrokerHeartbeatRequest(9, 1, 0, False, False), commit=False)
    if profile == KIP_631:
        assert (wrong_cluster, unknown) == (None, None)
        c.commit()
        seqs = sorted(c.replies)[-2:]
        assert [c.replies[s].error_code for s in seqs] == [Error.INVALID_CLUSTER_ID, Error.STALE_BROKER_EPOCH]
    else:
        assert wrong_cluster.error_code == Error.INVALID_CLUSTER_ID
        assert unknown.error_code == Error.STALE_BROKER_EPOCH
    c.create_topic("t", assignment=[[1, 2]], commit=False)
    assert c.alter_isr(2, "t", [2], commit=False) is None  # not the leader (ISR-5): waits in both


def test_log_7_dec_21_only_the_listed_refusals_are_answered_at_once():
    """LOG-7, DEC-21: the kafka profile's list names refusals of a whole request only, and the
    kip-631 profile's is empty."""
    assert Config.for_profile("kip-631").params.answered_at_once == ()
    assert set(Config.for_profile("kafka").params.answered_at_once) == {
        "REG-1", "REG-2", "REG-4", "REG-5", "LEASE-3", "LEASE-4", "RPC-2", "UNREG-1", "ISR-2", "ISR-12", "TOPIC-10", "TOPIC-11"}



# ---- retry_registration (DEC-5) ------------------------------------------------------------------


@each_profile
def test_reg_3_dec_5_a_retry_changes_nothing_in_kip_631_and_amends_the_registration_in_kafka(profile):
    """REG-3, DEC-5: a retry with the registered incarnation id gets the same epoch in both profiles;
    kip-631 writes nothing, kafka writes one RegisterBrokerRecord with that epoch and the retry's
    fields, still unfenced (its record formats carry Fenced, DEC-22)."""
    c = cluster(profile, 1)
    epoch = c.epoch(1)
    features = features_of(c.state.config)
    result = c.send(BrokerRegistrationRequest(1, c.state.config.cluster_id, incarnation(1), features=features, rack="r1"))
    c.commit()
    assert c.replies[result.seq].broker_epoch == epoch
    if profile == KIP_631:
        assert c.records(result) == [] and c.state.image.brokers[1].rack is None
    else:
        [amend] = c.records(result)
        assert (type(amend).__name__, amend.fenced, amend.broker_epoch) == ("RegisterBrokerRecord", False, epoch)
        assert (c.state.image.brokers[1].rack, c.state.image.brokers[1].epoch) == ("r1", epoch)
    assert not c.state.image.brokers[1].fenced


@each_profile
def test_reg_5_dec_5_a_retry_with_unsupported_features_is_refused_only_in_kafka(profile):
    """REG-5, DEC-5: kip-631 answers a retry before looking at its features; kafka checks them again."""
    c = cluster(profile, 1)
    [(name, _, high)] = c.state.config.params.default_features  # DEC-23: the profile's finalized feature
    retry = c.register(1, features=(Feature(name, high + 1, high + 1),))
    assert retry.error_code == (Error.NONE if profile == KIP_631 else Error.UNSUPPORTED_VERSION)


# ---- where the seeds are silent, both profiles follow Kafka (DEC-14, DEC-15) ----------------------


@each_profile
def test_shut_4_dec_14_a_fenced_broker_asking_to_shut_down_gets_its_fence_record_again_in_both_profiles(profile):
    """SHUT-4, DEC-14: a fenced broker that asks to shut down is answered ShouldShutDown with the
    fencing batch written again, as Kafka writes it, once that batch commits (the seeds say nothing
    of a fenced broker asking)."""
    c = cluster(profile, 1, 2)
    c.heartbeat(1, want_fence=True)
    result = c.send(BrokerHeartbeatRequest(1, c.epoch(1), c.caught_up_offset(), False, True))
    assert result.seq not in c.replies  # the fence record is not yet committed
    c.commit()
    assert c.replies[result.seq].should_shut_down
    assert c.records(result) == [c.fence_record(1)]


@each_profile
def test_isr_5_dec_15_a_refused_partition_says_zero_in_its_other_fields_in_both_profiles(profile):
    """ISR-5, DEC-15: a partition refused because the requester is not its leader gets
    NOT_LEADER_OR_FOLLOWER in kip-631 (seed 003) and INVALID_REQUEST in kafka; its leader and epochs
    are 0 in both, as Kafka leaves them (the seeds give no value)."""
    c = cluster(profile, 1, 2)
    c.create_topic("t", assignment=[[1, 2]])
    refused = c.alter_isr(2, "t", [2]).topics[0].partitions[0]
    assert refused.error_code == (Error.NOT_LEADER_OR_FOLLOWER if profile == KIP_631 else Error.INVALID_REQUEST)
    assert (refused.leader_id, refused.leader_epoch, refused.partition_epoch) == (0, 0, 0)


# ---- answered_at_once: DeleteTopics (DEC-21) -----------------------------------------------------


@each_profile
def test_topic_10_dec_21_a_delete_of_names_none_of_which_resolves_is_answered_at_once_only_in_kafka(profile):
    """TOPIC-10, LOG-7, DEC-21: with a write pending, a DeleteTopics of an unknown name waits in
    kip-631 and is answered at once in kafka; one that resolves a name waits in both."""
    c = cluster(profile, 1)
    c.create_topic("t", assignment=[[1]])
    c.register(2, commit=False)
    unknown = c.delete_topics("nope", commit=False)
    assert (unknown is None) == (profile == KIP_631)
    assert c.delete_topics("t", commit=False) is None


# ---- record_formats (DEC-22), frame_type (DEC-10), default_features (DEC-23) --------------------


@each_profile
def test_reg_8_dec_22_kafka_records_carry_fencing_in_the_registration_and_seed_records_in_their_own_types(profile):
    """REG-6, REG-8, LEASE-15, DEC-22: kip-631 registers with seed 000's RegisterBrokerRecord (no
    Fenced field: it replays fenced) and unfences with an UnfenceBrokerRecord; kafka writes Kafka's
    RegisterBrokerRecord version 2 with Fenced true, and unfences and fences with a
    BrokerRegistrationChangeRecord version 0 whose Fenced is -1 or 1."""
    c = Cluster(profile=profile)
    c.register(1)
    [register] = c.records()
    c.heartbeat(1)
    [unfence] = c.records()
    c.heartbeat(1, want_fence=True)
    [fence] = c.records()
    formats = [(type(r).__name__, record_version(r)) for r in (register, unfence, fence)]
    if profile == KIP_631:
        assert formats == [("RegisterBrokerRecord", 0), ("UnfenceBrokerRecord", 0), ("FenceBrokerRecord", 0)]
        assert not hasattr(register, "fenced")
    else:
        assert formats == [("RegisterBrokerRecord", 2), ("BrokerRegistrationChangeRecord", 0),
                           ("BrokerRegistrationChangeRecord", 0)]
        assert (register.fenced, register.in_controlled_shutdown) == (True, False)
        assert (unfence.fenced, fence.fenced) == (-1, 1)
    assert c.state.image.brokers[1].fenced


@each_profile
def test_log_11_dec_22_the_committed_state_gives_an_unfenced_broker_two_records_in_kip_631_and_one_in_kafka(profile):
    """LOG-11, DEC-22: an unfenced broker's minimal records: seed 000's RegisterBrokerRecord and an
    UnfenceBrokerRecord after it (the record replays fenced), or Kafka's one RegisterBrokerRecord
    with Fenced false; either replays to the same registration."""
    c = cluster(profile, 1)
    records = snapshot_records(c.state.committed_image, c.state.config.params.record_formats)
    brokers = [type(r).__name__ for r in records if "Broker" in type(r).__name__]
    assert brokers == (["RegisterBrokerRecord", "UnfenceBrokerRecord"] if profile == KIP_631 else ["RegisterBrokerRecord"])
    assert replay_all(MetadataImage(), records).brokers == c.state.committed_image.brokers


@each_profile
def test_shut_2_dec_22_kafka_records_the_start_of_a_controlled_shutdown_once_in_the_registration(profile):
    """SHUT-1, SHUT-2, DEC-22: kafka begins the batch that starts a controlled shutdown with a
    BrokerRegistrationChangeRecord version 1 (InControlledShutdown 1), as Kafka does; the
    registration then says so, and a shutdown asked again after a failover (which loses the active
    controller's memory of it) writes no second one. kip-631's records have no place for it."""
    c = cluster(profile, 1, 2)
    c.create_topic("pair", assignment=[[1, 2]])
    c.heartbeat(1, want_shut_down=True)
    first = c.records()
    if profile == KIP_631:
        assert [type(r).__name__ for r in first][-1] == "FenceBrokerRecord"
        assert not c.state.image.brokers[1].in_controlled_shutdown
        return
    begins = first[0]
    assert (type(begins).__name__, record_version(begins), begins.in_controlled_shutdown, begins.fenced) == (
        "BrokerRegistrationChangeRecord", 1, 1, 0)
    c.commit()
    assert c.state.committed_image.brokers[1].in_controlled_shutdown
    c.failover()
    c.heartbeat(1, want_shut_down=True)
    assert not [r for r in c.records() if type(r).__name__ == "BrokerRegistrationChangeRecord" and r.in_controlled_shutdown]


@each_profile
def test_log_2_dec_10_a_frame_begins_with_the_profiles_frame_type_and_another_is_refused(profile):
    """LOG-2, DEC-10: frames begin with 0 in kip-631 and with 1 in kafka; a decoder of one profile
    refuses the other's frames, naming the byte."""
    c = cluster(profile, 1)
    params = c.state.config.params
    other = next(p for p in PROFILES if p != profile)
    for record in snapshot_records(c.state.committed_image, params.record_formats):
        frame = encode_record(record, frame_type=params.frame_type)
        assert frame[0] == (0 if profile == KIP_631 else 1)
        assert decode_record(frame, params) == (record, record_version(record))
        with pytest.raises(FrameError, match="frame type"):
            decode_record(frame, Config.for_profile(other).params)


@each_profile
def test_log_14_dec_23_a_cluster_finalizes_metadata_format_in_kip_631_and_metadata_version_16_in_kafka(profile):
    """LOG-14, CONF-1, REG-5, DEC-23: the default finalized features and the bootstrap record;
    kafka's formats hold one level per feature, so a range is refused in its configuration."""
    config = Config.for_profile(profile)
    [feature] = config.finalized_features
    [bootstrap] = initial_state(config).batches[0].records
    if profile == KIP_631:
        assert (feature.name, feature.min_level, feature.max_level) == ("metadata.format", 1, 1)
        assert (bootstrap.min_feature_level, bootstrap.max_feature_level) == (1, 1)
        Config.for_profile(profile, finalized_features=(FeatureRange("metadata.format", 1, 2),))
    else:
        assert (feature.name, feature.min_level, feature.max_level) == ("metadata.version", 16, 16)
        assert (bootstrap.name, bootstrap.feature_level) == ("metadata.version", 16)
        with pytest.raises(ConfigError, match="one level per feature"):
            Config.for_profile(profile, finalized_features=(FeatureRange("metadata.version", 15, 16),))
    # REG-5: a broker that supports exactly the finalized level registers
    c = Cluster(profile=profile)
    assert c.register(1).error_code == Error.NONE


# ---- rpc_formats (DEC-9) ----------------------------------------------------------------------------


def test_rpc_1_dec_9_api_keys_are_seed_000s_in_kip_631_and_kafkas_in_kafka():
    """RPC-1, DEC-9: the kafka profile's messages (rpc_formats kafka-4.0) are Kafka's: api keys 62,
    63, 64 for the broker lifecycle's three and the others unchanged; no CurrentMetadataOffset in a
    registration, no LowestAcknowledgedOffset in any heartbeat response, and ErrorMessage in
    UnregisterBrokerResponse."""
    formats = profile_named("kafka").rpc_formats
    keys = {cls.__name__: api_key(cls, formats) for cls in REQUEST_TYPES}
    assert (keys["BrokerRegistrationRequest"], keys["BrokerHeartbeatRequest"], keys["UnregisterBrokerRequest"]) == (62, 63, 64)
    assert {n: k for n, k in keys.items() if k not in (62, 63, 64)} == {
        cls.__name__: api_key(cls) for cls in REQUEST_TYPES if api_key(cls) not in (57, 58, 59)
    }
    assert not carries("BrokerRegistrationRequest", "CurrentMetadataOffset", 0, formats)
    assert carries("BrokerRegistrationRequest", "CurrentMetadataOffset", 0)
    assert [carries("BrokerHeartbeatResponse", "LowestAcknowledgedOffset", v, formats) for v in (0, 1)] == [False, False]
    assert [carries("BrokerHeartbeatResponse", "LowestAcknowledgedOffset", v) for v in (0, 1)] == [False, True]
    assert carries("UnregisterBrokerResponse", "ErrorMessage", 0, formats)
    assert not carries("UnregisterBrokerResponse", "ErrorMessage", 0)


def test_lao_1_dec_9_a_heartbeat_response_has_lowest_acknowledged_offset_in_kip_631_version_1_and_never_in_kafka():
    """LAO-1, DEC-9: a version 1 heartbeat is answered without LowestAcknowledgedOffset in the
    kafka profile, accepted or refused, by the model and by impl alike, and its neutral form has no
    such field; the kip-631 profile answers it."""
    for name, expected in (("kip-631", True), ("kafka", False)):
        c = Cluster(Config.for_profile(name))
        events = []
        send = c.send
        c.send = lambda event, send=send, events=events: events.append(event) or send(event)  # type: ignore[method-assign]
        c.start_brokers(1, 2)
        accepted = c.request(BrokerHeartbeatRequest(1, c.epoch(1), 50, False, False, version=1))
        refused = c.request(BrokerHeartbeatRequest(1, c.epoch(1) + 7, 50, False, False, version=1))
        assert accepted.error_code == Error.NONE and refused.error_code == Error.STALE_BROKER_EPOCH
        assert (accepted.lowest_acknowledged_offset is not None, refused.lowest_acknowledged_offset is not None) == (expected, expected)
        form = qualified("BrokerHeartbeatResponse", profile_named(name).rpc_formats)
        assert ("LowestAcknowledgedOffset" in to_json(accepted, 1, form)) is expected
        lockstep = Lockstep(Config.for_profile(name))  # impl answers every event as the model does, in that form
        assert [d for event in events for d in lockstep.send(event)] == []



# ---- leader_moved_error (DEC-15) ---------------------------------------------------------------------


@each_profile
def test_isr_10_dec_15_a_change_that_moves_the_leadership_answers_fenced_leader_epoch_in_kip_631_and_new_leader_elected_in_kafka(profile):
    """ISR-10, DEC-15: the completing change is written in both profiles; seed 000's
    FENCED_LEADER_EPOCH in kip-631, Kafka's NEW_LEADER_ELECTED in kafka; the other fields 0 in both."""
    c = cluster(profile, 1, 2, 3, 4)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.reassign("t", [2, 3, 4])
    topic = c.state.image.topic_named("t").topic_id
    p = c.partition("t")
    request = AlterIsrRequest(1, c.epoch(1), [AlterIsrTopic(topic, [AlterIsrPartition(0, p.leader_epoch, p.replicas, p.partition_epoch)])])
    [result] = c.request(request).topics[0].partitions
    expected = Error.FENCED_LEADER_EPOCH if profile == KIP_631 else Error.NEW_LEADER_ELECTED
    assert (result.error_code, result.leader_id, result.leader_epoch, result.isr, result.partition_epoch) == (
        expected, 0, 0, (), 0)
    after = c.partition("t")
    assert (after.replicas, after.isr, after.leader) == ((2, 3, 4), (2, 3, 4), 2)



PARAMETER_TESTS = {
    "leader_moved_error": (
        test_isr_10_dec_15_a_change_that_moves_the_leadership_answers_fenced_leader_epoch_in_kip_631_and_new_leader_elected_in_kafka,
    ),
    "rpc_formats": (
        test_rpc_1_dec_9_api_keys_are_seed_000s_in_kip_631_and_kafkas_in_kafka,
        test_lao_1_dec_9_a_heartbeat_response_has_lowest_acknowledged_offset_in_kip_631_version_1_and_never_in_kafka,
    ),
    "lease_lapses": (
        test_lease_8_dec_7_a_lease_lapses_at_its_deadline_in_kip_631_and_a_millisecond_later_in_kafka,
        test_reg_4_dec_7_another_incarnation_may_register_at_the_deadline_in_kip_631_and_only_after_it_in_kafka,
    ),
    "lease_expiry": (
        test_lease_8_dec_25_lapsed_leases_are_fenced_at_the_tick_in_kip_631_and_one_per_scan_in_kafka,
        test_lease_8_dec_25_a_fenced_broker_that_heartbeated_is_fenced_again_only_in_kafka,
    ),
    "registration_is_contact": (
        test_reg_4_dec_6_a_new_registration_claims_its_id_in_kip_631_and_only_from_its_first_heartbeat_in_kafka,
        test_reg_3_dec_6_a_retried_registration_renews_the_lease_in_kip_631_and_changes_nothing_in_kafka,
    ),
    "shutdown_grant": (
        test_shut_3_dec_14_a_leader_is_let_go_in_the_heartbeat_that_asks_in_kip_631_and_on_a_later_one_in_kafka,
        test_shut_3_dec_14_a_broker_that_leads_nothing_is_let_go_at_once_in_both_profiles,
    ),
    "answered_at_once": (
        test_log_7_dec_21_a_refused_request_waits_for_the_log_in_kip_631_and_is_answered_at_once_in_kafka,
        test_log_7_dec_21_only_the_listed_refusals_are_answered_at_once,
    ),
    "retry_registration": (
        test_reg_3_dec_5_a_retry_changes_nothing_in_kip_631_and_amends_the_registration_in_kafka,
        test_reg_5_dec_5_a_retry_with_unsupported_features_is_refused_only_in_kafka,
    ),
    "not_leader_error": (test_isr_5_dec_15_a_refused_partition_says_zero_in_its_other_fields_in_both_profiles,),
    "reassignment_layout": (
        test_reassign_4_dec_18_replicas_list_the_leaving_replicas_first_in_kip_631_and_last_in_kafka,
        test_reassign_9_dec_18_a_new_target_is_laid_out_against_the_full_current_list,
    ),
    "reassignment_completes": (
        test_reassign_6_dec_18_adding_replicas_in_sync_complete_in_kip_631_and_the_whole_target_in_kafka,
        test_reassign_6_dec_18_in_kafka_a_reassignment_adding_as_many_as_it_removes_waits_only_for_the_adding_ones,
        test_reassign_5_dec_18_a_shrink_completes_at_once_in_kip_631_when_the_isr_keeps_a_target_member,
    ),
    "leader_epoch_on_replica_removal": (
        test_part_5_dec_17_removing_a_replica_under_a_staying_leader_raises_the_leader_epoch_only_in_kafka,
        test_part_5_dec_17_an_isr_change_that_removes_no_replica_raises_no_leader_epoch_in_either,
    ),
    "unregister_unknown_error": (test_unreg_1_dec_35_an_unknown_id_gets_none_in_kip_631_and_broker_id_not_registered_in_kafka,),
    "heartbeat_offset": (
        test_lease_9_dec_2_caught_up_past_the_registration_in_kip_631_and_at_it_in_kafka,
        test_lease_5_dec_2_a_negative_offset_is_refused_in_kip_631_and_accepted_in_kafka,
        test_lao_1_dec_2_the_lowest_acknowledged_offset_is_the_lowest_recorded_offset_in_its_profiles_unit,
    ),
    "default_timings": (
        test_lease_1_dec_12_default_timings_are_3000_and_18000_in_kip_631_and_2000_and_9000_in_kafka,
        test_lease_1_dec_12_a_broker_heartbeating_every_default_interval_keeps_its_lease,
    ),
    "record_formats": (
        test_reg_8_dec_22_kafka_records_carry_fencing_in_the_registration_and_seed_records_in_their_own_types,
        test_log_11_dec_22_the_committed_state_gives_an_unfenced_broker_two_records_in_kip_631_and_one_in_kafka,
        test_shut_2_dec_22_kafka_records_the_start_of_a_controlled_shutdown_once_in_the_registration,
    ),
    "frame_type": (test_log_2_dec_10_a_frame_begins_with_the_profiles_frame_type_and_another_is_refused,),
    "default_features": (test_log_14_dec_23_a_cluster_finalizes_metadata_format_in_kip_631_and_metadata_version_16_in_kafka,),
}


def test_every_parameter_of_profiles_toml_has_a_test_naming_its_decision():
    """Each parameter of spec/profiles.toml has tests above, named after its decision and one of its
    rules; a parameter added to the table fails here until it has them."""
    by_name = {p.name: p for p in parameters()}
    assert set(PARAMETER_TESTS) == set(by_name)
    for name, tests in PARAMETER_TESTS.items():
        decision = by_name[name].decision.lower().replace("-", "_")
        rules = {r.lower().replace("-", "_") for r in by_name[name].rules}
        for test in tests:
            assert f"_{decision}_" in test.__name__, (name, test.__name__)
            assert any(test.__name__.startswith(f"test_{rule}_") for rule in rules), (name, test.__name__)


def test_shut_3_dec_14_kafka_lets_the_broker_go_on_the_next_heartbeat_once_the_active_brokers_caught_up():
    """SHUT-3, DEC-14 (kafka profile): the broker shutting down is not an active broker, so its own
    offset, recorded before the shutdown's batch existed, does not hold it back; once the active
    brokers have applied the batch, the very next heartbeat lets it go."""
    c = cluster("kafka", 1, 2, 3)
    c.create_topic("solo", assignment=[[1]])
    assert not c.heartbeat(1, want_shut_down=True).should_shut_down
    c.heartbeat(2)
    c.heartbeat(3)
    granted = c.heartbeat(1, want_shut_down=True)
    assert (granted.should_shut_down, granted.is_fenced) == (True, True)
