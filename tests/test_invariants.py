"""Invariants INV-1 to INV-17: each predicate catches the violation it names, and random
event sequences never break any of them."""

import copy
from uuid import UUID

import pytest
from attrs import evolve
from hypothesis import given
from hypothesis import strategies as st

from cluster import Cluster
from kraftspec.model import Commit, Failover, TakeSnapshot, Tick, step
from kraftspec.model.controller import StepResult
from kraftspec.model.events import Event
from kraftspec.model.invariants import STATE_INVARIANTS, STEP_INVARIANTS, violations
from kraftspec.model.messages import (
    AlterIsrPartition,
    AlterIsrRequest,
    AlterIsrTopic,
    AlterPartitionReassignmentsRequest,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    CreatableTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    Feature,
    ListedTopic,
    ListPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
    ReplicaAssignment,
    UnregisterBrokerRequest,
)
from kraftspec.model.records import RegisterBrokerRecord
from kraftspec.model.state import Batch, Lease, Reply


def healthy() -> Cluster:
    c = Cluster()
    c.start_brokers(1, 2, 3)
    c.create_topic("t", assignment=[[1, 2, 3]])
    return c


def with_partition(c: Cluster, **changes):
    p = c.partition("t")
    image = evolve(c.state.image, partitions={**c.state.image.partitions, p.key: evolve(p, **changes)})
    return evolve(c.state, image=image)


def with_broker(c: Cluster, broker_id: int, **changes):
    image = c.state.image
    return evolve(c.state, image=evolve(image, brokers={**image.brokers, broker_id: evolve(image.brokers[broker_id], **changes)}))


def reported(check, state):
    found = check(state)
    assert found, f"{check.__name__} missed the violation"
    return found


def test_every_invariant_of_the_spec_has_a_predicate():
    assert sorted([*STATE_INVARIANTS, *STEP_INVARIANTS], key=lambda i: int(i.split("-")[1])) == [f"INV-{n}" for n in range(1, 18)]


def test_inv_1_catches_a_leader_outside_the_isr():
    """INV-1."""
    reported(STATE_INVARIANTS["INV-1"], with_partition(healthy(), isr=(2, 3)))


@pytest.mark.parametrize(
    "changes",
    [{"isr": (1, 1, 2)}, {"isr": (1, 2, 4)}, {"adding_replicas": (4,)}, {"adding_replicas": (3,), "removing_replicas": (3,)}],
    ids=["duplicate", "isr-outside", "adding-outside", "adding-meets-removing"],
)
def test_inv_2_catches_malformed_replica_lists(changes):
    """INV-2."""
    reported(STATE_INVARIANTS["INV-2"], with_partition(healthy(), **changes))


def test_inv_3_catches_a_fenced_leader():
    """INV-3."""
    reported(STATE_INVARIANTS["INV-3"], with_broker(healthy(), 1, fenced=True))


def test_inv_4_catches_epochs_going_back():
    """INV-4."""
    c = healthy()
    after = with_partition(c, partition_epoch=0, leader_epoch=0)
    before = with_partition(c, partition_epoch=5)
    assert STEP_INVARIANTS["INV-4"](before, Tick(0), StepResult(after))
    assert STEP_INVARIANTS["INV-4"](evolve(c.state, committed_offset=c.state.committed_offset + 1), Tick(0), StepResult(c.state))


def test_inv_5_catches_an_unregistered_broker_in_a_partition():
    """INV-5."""
    reported(STATE_INVARIANTS["INV-5"], with_partition(healthy(), replicas=(1, 2, 3, 9)))


def test_inv_6_catches_repeated_or_future_epochs():
    """INV-6."""
    c = healthy()
    reported(STATE_INVARIANTS["INV-6"], with_broker(c, 2, epoch=c.epoch(1)))
    reported(STATE_INVARIANTS["INV-6"], with_broker(c, 2, epoch=10**6))


def test_inv_7_catches_a_registration_record_with_a_foreign_epoch():
    """INV-7."""
    c = healthy()
    end = c.state.log_end_offset
    bad = Batch(end, (RegisterBrokerRecord(9, UUID(int=9), end + 3),))
    reported(STATE_INVARIANTS["INV-7"], evolve(c.state, batches=c.state.batches + (bad,)))


def test_inv_8_catches_a_committed_state_that_is_not_the_replay():
    """INV-8."""
    c = healthy()
    reported(STATE_INVARIANTS["INV-8"], evolve(c.state, committed_image=with_partition(c, isr=(1,)).image))


def test_inv_9_catches_a_fenced_member_of_a_larger_isr():
    """INV-9."""
    reported(STATE_INVARIANTS["INV-9"], with_broker(healthy(), 3, fenced=True))


def test_inv_10_catches_an_unfenced_broker_past_its_deadline():
    """INV-10."""
    c = healthy()
    reported(STATE_INVARIANTS["INV-10"], evolve(c.state, now_ms=10**9))
    reported(STATE_INVARIANTS["INV-10"], evolve(c.state, leases={**c.state.leases, 77: Lease(0)}))


def test_inv_11_catches_should_shut_down_to_a_leader():
    """INV-11."""
    c = healthy()
    request = BrokerHeartbeatRequest(1, c.epoch(1), 9, False, True)
    reply = Reply(0, request, BrokerHeartbeatResponse(0, should_shut_down=True))
    assert STEP_INVARIANTS["INV-11"](c.state, request, StepResult(c.state, replies=(reply,), seq=0))


def test_inv_12_catches_a_lowest_acknowledged_offset_above_a_broker():
    """INV-12."""
    c = healthy()
    request = BrokerHeartbeatRequest(1, c.epoch(1), 9, False, False)
    reply = Reply(0, request, BrokerHeartbeatResponse(0, lowest_acknowledged_offset=10**6))
    assert STEP_INVARIANTS["INV-12"](c.state, request, StepResult(c.state, replies=(reply,), seq=0))


def test_inv_13_catches_controlled_shutdown_of_a_fenced_broker():
    """INV-13."""
    c = healthy()
    state = with_broker(c, 1, fenced=True)
    state = evolve(state, leases={**state.leases, 1: evolve(state.leases[1], in_controlled_shutdown=True)})
    reported(STATE_INVARIANTS["INV-13"], state)


def test_inv_14_catches_partition_numbering_gaps():
    """INV-14."""
    reported(STATE_INVARIANTS["INV-14"], with_partition(healthy(), partition_id=4))


def test_inv_15_catches_a_commit_inside_a_batch():
    """INV-15."""
    c = healthy()
    c.create_topic("u", assignment=[[1]], commit=False)  # a two-record batch, uncommitted
    reported(STATE_INVARIANTS["INV-15"], evolve(c.state, committed_offset=c.state.committed_offset + 1))


def test_inv_16_catches_memory_that_is_not_committed_plus_tail():
    """INV-16."""
    reported(STATE_INVARIANTS["INV-16"], with_partition(healthy(), isr=(1, 2)))


def test_inv_17_catches_removing_replicas_not_leading_the_list():
    """INV-17."""
    reported(STATE_INVARIANTS["INV-17"], with_partition(healthy(), removing_replicas=(2,)))


# ---- random event sequences -----------------------------------------------------------

BROKERS = st.integers(min_value=-1, max_value=5)
FEATURES = (Feature("metadata.format", 1, 1),)
SHORT_TIMES = st.sampled_from([0, 1, 500, 999, 3000])
LONG_TIMES = st.sampled_from([17_999, 18_000, 25_000])
KINDS = ["register", "heartbeat", "unregister", "alter_isr", "create", "delete", "reassign", "list", "tick", "commit", "failover", "snapshot"]
WEIGHTS = {"heartbeat": 8, "commit": 5, "alter_isr": 5, "register": 3, "reassign": 3, "tick": 3, "create": 2, "delete": 2}


def draw_mix(data: st.DataObject) -> list[str]:
    """Swarm testing: each sequence draws its own mix of event kinds (heartbeats, commits and
    registrations always in), so that rare combinations get whole sequences to themselves."""
    chosen = data.draw(st.sets(st.sampled_from(KINDS), min_size=2))
    kinds = sorted(chosen | {"register", "heartbeat", "commit"})
    return [k for k in kinds for _ in range(WEIGHTS.get(k, 1))]


def sometimes(data: st.DataObject, one_in: int) -> bool:
    return data.draw(st.integers(1, one_in)) == 1


def draw_event(data: st.DataObject, state, mix: list[str] = KINDS) -> Event:
    """A random event of a kind in ``mix``: a well-behaved one most of the time, a wrong or
    hostile one sometimes."""
    image = state.image
    partitions = image.partitions_in_order()
    registered = sorted(image.brokers)
    kind = data.draw(st.sampled_from(mix))
    if kind == "register":
        broker = data.draw(BROKERS)
        generation = data.draw(st.integers(0, 2))
        cluster = "other" if sometimes(data, 10) else state.config.cluster_id
        features = () if sometimes(data, 10) else FEATURES
        return BrokerRegistrationRequest(broker, cluster, UUID(int=(max(broker, 0) << 8) + generation + 1), features=features)
    if kind == "heartbeat":
        if registered and not sometimes(data, 5):  # a well-behaved broker
            broker = data.draw(st.sampled_from(registered))
            lease = state.leases[broker]
            offset = max(lease.metadata_offset, state.committed_offset) + data.draw(st.integers(0, 1))
            return BrokerHeartbeatRequest(
                broker, image.brokers[broker].epoch, offset, sometimes(data, 6), sometimes(data, 12), data.draw(st.sampled_from([0, 1]))
            )
        broker = data.draw(BROKERS)
        epoch = data.draw(st.integers(-1, 20))
        offset = data.draw(st.integers(-1, state.log_end_offset + 1))
        return BrokerHeartbeatRequest(broker, epoch, offset, data.draw(st.booleans()), data.draw(st.booleans()), data.draw(st.sampled_from([0, 1, 2])))
    if kind == "unregister":
        return UnregisterBrokerRequest(data.draw(BROKERS))
    if kind == "alter_isr" and partitions:
        p = data.draw(st.sampled_from(partitions))
        if p.leader not in image.brokers:
            requester = data.draw(BROKERS)
            return AlterIsrRequest(requester, 0, [AlterIsrTopic(p.topic_id, [AlterIsrPartition(p.partition_id, 0, [requester], 0)])])
        live = [r for r in p.replicas if r in image.brokers and not image.brokers[r].fenced] or [p.leader]
        isr = [p.leader] + data.draw(st.lists(st.sampled_from(live), unique=True, max_size=4))
        entry = AlterIsrPartition(p.partition_id, p.leader_epoch, list(dict.fromkeys(isr)), p.partition_epoch)
        requester, broker_epoch, entries = p.leader, image.brokers[p.leader].epoch, [entry]
        if sometimes(data, 3):  # one thing wrong with it
            flaw = data.draw(st.sampled_from(["broker-epoch", "partition", "leader-epoch", "partition-epoch", "not-leader", "isr", "twice"]))
            if flaw == "broker-epoch":
                broker_epoch += data.draw(st.sampled_from([-1, 1]))
            elif flaw == "partition":
                entries = [evolve(entry, partition_index=entry.partition_index + 5)]
            elif flaw == "leader-epoch":
                entries = [evolve(entry, leader_epoch=entry.leader_epoch + data.draw(st.sampled_from([-1, 1])))]
            elif flaw == "partition-epoch":
                entries = [evolve(entry, partition_epoch=entry.partition_epoch - 1)]
            elif flaw == "not-leader" and registered:
                requester = data.draw(st.sampled_from(registered))
                broker_epoch = image.brokers[requester].epoch
            elif flaw == "isr":
                entries = [evolve(entry, new_isr=data.draw(st.lists(st.sampled_from([*p.replicas, 5, -1]), max_size=5)))]
            else:
                entries = [entry, entry]
        return AlterIsrRequest(requester, broker_epoch, [AlterIsrTopic(p.topic_id, entries)])
    if kind == "create":
        name = data.draw(st.sampled_from(["a", "b", "c", "d", ""]))
        fresh = UUID(int=1000 + state.next_seq)
        if registered and not sometimes(data, 5):
            return CreateTopicsRequest([CreatableTopic(name, fresh, data.draw(st.integers(1, 3)), data.draw(st.integers(1, len(registered))))])
        if sometimes(data, 2):
            return CreateTopicsRequest([CreatableTopic(name, fresh, data.draw(st.integers(-1, 3)), data.draw(st.integers(-1, 4)))])
        lists = data.draw(st.lists(st.lists(st.integers(-1, 5), max_size=4), min_size=1, max_size=3))
        return CreateTopicsRequest([CreatableTopic(name, fresh, assignments=[ReplicaAssignment(i, r) for i, r in enumerate(lists)])])
    if kind == "delete":
        names = sorted(t.name for t in image.topics.values()) + ["zz"]
        return DeleteTopicsRequest(data.draw(st.lists(st.sampled_from(names), max_size=2)))
    if kind == "reassign" and partitions:
        p = data.draw(st.sampled_from(partitions))
        name = image.topics[p.topic_id].name
        if sometimes(data, 5):
            target = None
        elif registered and not sometimes(data, 5):
            live = [b for b in registered if not image.brokers[b].fenced] or registered
            target = data.draw(st.lists(st.sampled_from(live), min_size=1, max_size=4, unique=True))
        else:
            target = data.draw(st.lists(st.integers(-1, 5), max_size=4))
        return AlterPartitionReassignmentsRequest([ReassignableTopic(name, [ReassignablePartition(p.partition_id, target)])])
    if kind == "list":
        return ListPartitionReassignmentsRequest(data.draw(st.sampled_from([None, [ListedTopic("a", [0, 1])]])))
    if kind == "tick":
        return Tick(state.now_ms + data.draw(LONG_TIMES if sometimes(data, 8) else SHORT_TIMES))
    if kind == "failover":
        return Failover()
    if kind == "snapshot":
        return TakeSnapshot()
    if sometimes(data, 4):
        return Commit(data.draw(st.integers(state.committed_offset, state.log_end_offset + 1)))
    return Commit(state.log_end_offset)


def warm_cluster() -> Cluster:
    """Four active brokers and two topics: a state random walks rarely build on their own."""
    c = Cluster(check_invariants=False)
    c.start_brokers(0, 1, 2, 3)
    c.create_topic("a", partitions=2, replication_factor=3)
    c.create_topic("b", partitions=1, replication_factor=2)
    return c


@given(st.data())
def test_random_event_sequences_never_break_an_invariant(data):
    """INV-1 to INV-17 after every step of 50 random events; the model never raises and never
    changes the state it is given."""
    c = warm_cluster() if data.draw(st.booleans()) else Cluster(check_invariants=False)
    mix = draw_mix(data)
    for _ in range(50):
        event = draw_event(data, c.state, mix)
        before = c.state
        frozen_copy = copy.deepcopy(before)
        result = step(before, event)
        assert before == frozen_copy, f"{event!r} changed the state it was given"
        broken = violations(before, event, result)
        assert not broken, f"{event!r}: {broken}"
        c.state = result.state
