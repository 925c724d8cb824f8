"""Invariants INV-1 to INV-17: each predicate catches the violation it names, and random
event sequences never break any of them."""

import copy
from uuid import UUID

import pytest
from attrs import evolve
from hypothesis import given
from hypothesis import strategies as st

from cluster import Cluster
from events import draw_event, draw_mix, warm_cluster
from kraftspec.model import Failover, Tick, step
from kraftspec.model.controller import StepResult
from kraftspec.model.invariants import STATE_INVARIANTS, STEP_INVARIANTS, violations
from kraftspec.model.messages import BrokerHeartbeatRequest, BrokerHeartbeatResponse
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


def test_inv_5_catches_an_unregistered_broker_in_a_shared_isr_but_not_in_replicas_or_alone():
    """INV-5, DEC-20: an unregistered broker may stay in Replicas, and in an ISR as its sole member."""
    reported(STATE_INVARIANTS["INV-5"], with_partition(healthy(), replicas=(1, 2, 3, 9), isr=(1, 9)))
    assert STATE_INVARIANTS["INV-5"](with_partition(healthy(), replicas=(1, 2, 3, 9))) == []
    assert STATE_INVARIANTS["INV-5"](with_partition(healthy(), replicas=(9, 2), isr=(9,), leader=-1)) == []


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


def test_inv_7_an_epoch_is_where_the_registration_records_begin_and_nowhere_else():
    """INV-7, REG-6, REG-9: a RegisterBrokerRecord's epoch is its own offset, or that of the partition
    changes just before it in its batch (a new incarnation replacing an unfenced one); not another
    record's, not before its batch, not after itself (an amend, DEC-5, may name any earlier offset)."""
    from kraftspec.model.invariants import registration_epoch_problem
    from kraftspec.model.records import PartitionChangeRecord, TopicRecord

    def batch(base, *records):
        return list(enumerate(records, base))

    t = UUID(int=1)
    change = PartitionChangeRecord(0, t, isr=(2,))

    def register(epoch):
        return RegisterBrokerRecord(3, UUID(int=3), epoch)

    assert registration_epoch_problem(batch(10, register(10)), 0, amends=False) is None
    assert registration_epoch_problem(batch(10, change, change, register(10)), 2, amends=False) is None
    assert registration_epoch_problem(batch(8, TopicRecord("x", t), change, register(9)), 2, amends=False) is None
    assert registration_epoch_problem(batch(8, TopicRecord("x", t), change, register(8)), 2, amends=False)
    assert registration_epoch_problem(batch(10, change, register(9)), 1, amends=False)
    assert registration_epoch_problem(batch(10, register(11)), 0, amends=False)
    assert registration_epoch_problem(batch(10, register(4)), 0, amends=False)
    assert registration_epoch_problem(batch(10, register(4)), 0, amends=True) is None


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

def has_error(value) -> bool:
    """Does a response (or a part of one) carry an error code other than NONE?"""
    if isinstance(value, tuple):
        return any(has_error(v) for v in value)
    if not hasattr(value, "__attrs_attrs__"):
        return False
    return any(
        (a.name == "error_code" and getattr(value, a.name) != 0) or has_error(getattr(value, a.name))
        for a in value.__attrs_attrs__
    )


def refused_without_a_rule(event, result: StepResult) -> bool:
    """RPC-4: a reply decided in this step that carries an error comes with the rule that refused
    it; replies a failover refuses come with RPC-3; a commit only releases replies decided before."""
    if isinstance(event, Failover):
        return bool(result.replies) and "RPC-3" not in result.rejected_by
    if result.seq is None:
        return False
    decided = [p.response for p in result.state.pending if p.seq == result.seq]
    decided += [r.response for r in result.replies if r.seq == result.seq]
    return any(has_error(response) for response in decided) and not result.rejected_by


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
        assert not refused_without_a_rule(event, result), f"{event!r}: an error reply but no rule rejected it"
        c.state = result.state
