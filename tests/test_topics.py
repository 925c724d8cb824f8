"""Topic creation and deletion: TOPIC-1 to TOPIC-11."""

from uuid import UUID

import pytest

from cluster import Cluster, topic_id
from kraftspec.conformance.lockstep import Lockstep
from kraftspec.model import Error
from kraftspec.model.messages import CreatableTopic, CreateTopicsRequest, DeleteTopicsRequest, ReplicaAssignment
from kraftspec.model.records import PartitionRecord, RemoveTopicRecord, TopicRecord


class LockstepCluster(Cluster):
    """A Cluster whose every event also goes to impl, which must agree with the model on it."""

    def __init__(self) -> None:
        super().__init__()
        self.lockstep = Lockstep(self.state.config)

    def send(self, event):
        assert self.lockstep.send(event) == [], event
        return super().send(event)


@pytest.fixture(params=[Cluster, LockstepCluster], ids=["model", "impl"])
def cluster(request):
    """The model alone, or the model with impl in lockstep."""
    return request.param


def create(c: Cluster, *topics: CreatableTopic):
    return c.request(CreateTopicsRequest(topics)).topics


def by_count(name, partitions, rf, tid=None):
    return CreatableTopic(name, tid or topic_id(name), partitions, rf)


def test_topic_1_the_exchange_echoes_the_name_and_the_assigned_id():
    """TOPIC-1, DEC-24: the controller uses the id it is given."""
    c = Cluster()
    c.start_brokers(1)
    [ok] = create(c, by_count("a", 1, 1, UUID(int=7)))
    assert (ok.name, ok.topic_id, ok.error_code) == ("a", UUID(int=7), Error.NONE)
    [refused] = create(c, by_count("a", 1, 1, UUID(int=8)))
    assert (refused.topic_id, refused.error_code) == (UUID(int=0), Error.TOPIC_ALREADY_EXISTS)


@pytest.mark.parametrize("name", ["", ".", "..", "has space", "x" * 250, "ünïcode"])
def test_topic_2_illegal_names(name):
    """TOPIC-2."""
    c = Cluster()
    c.start_brokers(1)
    [r] = create(c, by_count(name, 1, 1, UUID(int=5)))
    assert r.error_code == Error.INVALID_TOPIC_EXCEPTION


def test_topic_2_duplicates_existing_names_ids_and_modes():
    """TOPIC-2, DEC-24."""
    c = Cluster()
    c.start_brokers(1)
    first, second = create(c, by_count("a", 1, 1), by_count("a", 1, 1, UUID(int=99)))
    assert (first.error_code, second.error_code) == (Error.NONE, Error.INVALID_REQUEST)
    [taken] = create(c, by_count("b", 1, 1, topic_id("a")))
    assert taken.error_code == Error.INVALID_REQUEST
    [zero] = create(c, by_count("c", 1, 1, UUID(int=0)))
    assert zero.error_code == Error.INVALID_REQUEST
    [both] = create(c, CreatableTopic("d", topic_id("d"), 1, 1, [ReplicaAssignment(0, [1])]))
    [neither] = create(c, CreatableTopic("e", topic_id("e")))
    assert both.error_code == neither.error_code == Error.INVALID_REQUEST


def test_topic_2_a_deleted_topics_id_may_be_given_again_and_its_partitions_start_afresh():
    """TOPIC-2, DEC-31, INV-4: deletion and re-creation under the same id, committed at once, make a
    new partition at epoch 0, which INV-4 (checked by the Cluster at every step) does not compare
    with the removed one."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.create_topic("t", [[1, 2]])
    c.heartbeat(1, want_fence=True)  # fencing broker 1 moves the leadership: epochs go up
    before = c.partition("t", committed=True)
    assert (before.leader_epoch, before.partition_epoch) > (0, 0)
    c.delete_topics("t", commit=False)
    c.create_topic("t", [[1, 2]], commit=False)
    c.commit()  # one commit applies the RemoveTopicRecord and the re-creation
    after = c.partition("t", committed=True)
    assert after.topic_id == before.topic_id == topic_id("t")
    assert (after.leader_epoch, after.partition_epoch) == (0, 0)


def test_inv_4_still_compares_a_partition_whose_topic_was_not_removed():
    """INV-4, DEC-31: the exemption is only for a topic whose removal the step committed."""
    from attrs import evolve

    from kraftspec.model import Commit
    from kraftspec.model.controller import StepResult
    from kraftspec.model.invariants import STEP_INVARIANTS

    c = Cluster()
    c.start_brokers(1, 2)
    c.create_topic("t", [[1, 2]])
    c.heartbeat(1, want_fence=True)
    key = c.partition("t").key
    committed = c.state.committed_image
    fresh = evolve(committed.partitions[key], leader_epoch=0, partition_epoch=0)
    rolled_back = evolve(c.state, committed_image=evolve(committed, partitions={**committed.partitions, key: fresh}))
    [violation] = STEP_INVARIANTS["INV-4"](c.state, Commit(c.state.log_end_offset), StepResult(rolled_back))
    assert violation.startswith("INV-4 committed")


@pytest.mark.parametrize(
    "assignment",
    [[(1, [1])], [(0, [1]), (0, [1])], [(0, [])], [(0, [1, 1])], [(0, [9])]],
    ids=["gap", "repeated-index", "empty-list", "duplicate-broker", "unregistered"],
)
def test_topic_3_invalid_explicit_assignments(assignment):
    """TOPIC-3."""
    c = Cluster()
    c.start_brokers(1)
    [r] = create(c, CreatableTopic("t", topic_id("t"), assignments=[ReplicaAssignment(i, b) for i, b in assignment]))
    assert r.error_code == Error.INVALID_REPLICA_ASSIGNMENT


def test_topic_9_partitions_of_an_explicit_assignment_have_equal_replica_counts(cluster):
    """TOPIC-9, DEC-33: Kafka refuses [[1, 2], [1]]; so does kraftspec, and writes nothing."""
    c = cluster()
    c.start_brokers(1, 2)
    before = len(c.state.batches)
    [uneven] = create(c, CreatableTopic("t", topic_id("t"), assignments=[ReplicaAssignment(0, [1, 2]), ReplicaAssignment(1, [1])]))
    assert (uneven.error_code, uneven.topic_id) == (Error.INVALID_REPLICA_ASSIGNMENT, UUID(int=0))
    assert len(c.state.batches) == before and c.state.image.topic_named("t") is None
    assert "TOPIC-9" in c.results[-2].rules  # the request's step, before its commit
    [even] = create(c, CreatableTopic("t", topic_id("t"), assignments=[ReplicaAssignment(0, [1, 2]), ReplicaAssignment(1, [2, 1])]))
    assert even.error_code == Error.NONE


def test_topic_3_an_explicit_assignment_keeps_its_order_and_may_name_fenced_brokers():
    """TOPIC-3."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.register(3)
    c.create_topic("t", assignment=[[3, 2, 1]])
    p = c.partition("t")
    assert (p.replicas, p.isr, p.leader) == ((3, 2, 1), (2, 1), 2)


def test_topic_4_round_robin_over_unfenced_brokers_first():
    """TOPIC-4, DEC-26: the seed's rolling-upgrade example: RF 3 with one of three brokers down. The
    unfenced brokers round-robin by id; the fenced one fills only the place they cannot."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.register(3)  # down for its upgrade: registered, fenced
    [r] = create(c, by_count("t", 3, 3))
    assert r.error_code == Error.NONE
    assert [c.partition("t", i).replicas for i in range(3)] == [(1, 2, 3), (2, 1, 3), (1, 2, 3)]
    assert [c.partition("t", i).isr for i in range(3)] == [(1, 2), (2, 1), (1, 2)]
    [two] = create(c, by_count("u", 3, 2))
    assert two.error_code == Error.NONE
    assert [c.partition("u", i).replicas for i in range(3)] == [(1, 2), (2, 1), (1, 2)]


def test_topic_4_counts_and_factors_out_of_range():
    """TOPIC-4."""
    c = Cluster()
    c.start_brokers(1, 2)
    [zero] = create(c, by_count("a", 0, 1))
    [too_many] = create(c, by_count("b", 1, 3))
    [none] = create(c, by_count("c", 1, 0))
    assert zero.error_code == Error.INVALID_PARTITIONS
    assert too_many.error_code == none.error_code == Error.INVALID_REPLICATION_FACTOR


def test_topic_5_a_partition_with_no_eligible_replica_fails_its_topic():
    """TOPIC-5, TOPIC-4, DEC-26: an explicit assignment may leave a partition with no eligible
    replica; placement by replication factor never does, and asks for an unfenced broker."""
    c = Cluster()
    c.start_brokers(1)
    c.register(2)
    [explicit] = create(c, CreatableTopic("a", topic_id("a"), assignments=[ReplicaAssignment(0, [1]), ReplicaAssignment(1, [2])]))
    assert explicit.error_code == Error.INVALID_REPLICA_ASSIGNMENT
    assert c.records() == []
    [counted] = create(c, by_count("b", 2, 1))  # both partitions on unfenced broker 1
    assert counted.error_code == Error.NONE
    assert [(c.partition("b", i).replicas, c.partition("b", i).isr) for i in range(2)] == [((1,), (1,))] * 2
    c.heartbeat(1, want_fence=True)  # no unfenced broker left
    [none] = create(c, by_count("c", 1, 1))
    assert none.error_code == Error.INVALID_REPLICATION_FACTOR and c.records() == []


def test_topic_6_a_topic_is_a_topic_record_then_its_partition_records():
    """TOPIC-6: one batch, request order; epochs start at 0."""
    c = Cluster()
    c.start_brokers(1, 2)
    create(c, by_count("z", 2, 2), by_count("a", 1, 1))
    z, a = topic_id("z"), topic_id("a")
    assert c.records() == [
        TopicRecord("z", z),
        PartitionRecord(0, z, [1, 2], [1, 2], leader=1, leader_epoch=0, partition_epoch=0),
        PartitionRecord(1, z, [2, 1], [2, 1], leader=2, leader_epoch=0, partition_epoch=0),
        TopicRecord("a", a),
        PartitionRecord(0, a, [1], [1], leader=1, leader_epoch=0, partition_epoch=0),
    ]


def test_topic_7_deletion_is_one_remove_topic_record_per_topic():
    """TOPIC-7."""
    c = Cluster()
    c.start_brokers(1)
    c.create_topic("a", assignment=[[1], [1]])
    c.create_topic("b", assignment=[[1]])
    response = c.delete_topics("a", "nope", "a", "b")
    assert [(r.name, r.error_code) for r in response.responses] == [
        ("a", Error.NONE),
        ("nope", Error.UNKNOWN_TOPIC_OR_PARTITION),
        ("a", Error.INVALID_REQUEST),
        ("b", Error.NONE),
    ]
    assert response.responses[0].topic_id == topic_id("a")
    assert c.records() == [RemoveTopicRecord(topic_id("a")), RemoveTopicRecord(topic_id("b"))]


def test_topic_8_replaying_remove_topic_removes_its_partitions_and_frees_the_name():
    """TOPIC-8."""
    c = Cluster()
    c.start_brokers(1)
    c.create_topic("a", assignment=[[1], [1]])
    c.delete_topics("a")
    assert c.state.image.topics == {} and c.state.image.partitions == {}
    assert c.create_topic("a", assignment=[[1]]).topics[0].error_code == Error.NONE


def test_topic_10_delete_resolves_names_against_the_committed_state(cluster):
    """TOPIC-10, DEC-34: a topic whose creation is not yet committed is unknown to DeleteTopics, as in
    Kafka, and stays; once committed, the same request deletes it."""
    c = cluster()
    c.start_brokers(1)
    c.create_topic("t", assignment=[[1]], commit=False)
    seq = c.send(DeleteTopicsRequest(["t"])).seq
    c.commit()
    [refused] = c.replies[seq].responses
    assert (refused.name, refused.topic_id, refused.error_code) == ("t", UUID(int=0), Error.UNKNOWN_TOPIC_OR_PARTITION)
    assert not any(isinstance(r, RemoveTopicRecord) for r in c.records())
    assert c.state.committed_image.topic_named("t").topic_id == topic_id("t")
    [deleted] = c.delete_topics("t").responses
    assert (deleted.topic_id, deleted.error_code) == (topic_id("t"), Error.NONE)
    assert c.state.committed_image.topic_named("t") is None


def test_topic_10_a_topic_whose_deletion_is_pending_gets_unknown_topic_id(cluster):
    """TOPIC-10, DEC-34: the committed name resolves to an id an uncommitted RemoveTopicRecord already
    removed: UNKNOWN_TOPIC_ID, with the id the name resolved to (as Kafka answers), and no second
    record, even when the name was created again meanwhile under a new id, which the request leaves
    alone."""
    c = cluster()
    c.start_brokers(1)
    c.create_topic("t", assignment=[[1]])
    resolved = c.partition("t").topic_id
    c.delete_topics("t", commit=False)
    c.request(CreateTopicsRequest([CreatableTopic("t", UUID(int=99), assignments=[ReplicaAssignment(0, [1])])]), commit=False)
    offset = c.state.log_end_offset
    seq = c.send(DeleteTopicsRequest(["t"])).seq
    assert c.state.log_end_offset == offset  # nothing written
    c.commit()
    [again] = c.replies[seq].responses
    assert (again.topic_id, again.error_code) == (resolved, Error.UNKNOWN_TOPIC_ID)
    assert c.state.committed_image.topic_named("t").topic_id == UUID(int=99)


def test_topic_10_create_checks_names_against_the_in_memory_state(cluster):
    """TOPIC-10, DEC-34: CreateTopics sees an uncommitted creation (TOPIC_ALREADY_EXISTS) and an
    uncommitted deletion (the name is free), as Kafka's createTopics does."""
    c = cluster()
    c.start_brokers(1)
    c.create_topic("a", assignment=[[1]], commit=False)
    [taken] = create(c, CreatableTopic("a", UUID(int=5), assignments=[ReplicaAssignment(0, [1])]))
    assert taken.error_code == Error.TOPIC_ALREADY_EXISTS
    c.delete_topics("a", commit=False)
    [free] = create(c, CreatableTopic("a", UUID(int=6), assignments=[ReplicaAssignment(0, [1])]))
    assert free.error_code == Error.NONE
    assert c.state.committed_image.topic_named("a").topic_id == UUID(int=6)


def test_topic_11_one_request_appends_at_most_ten_thousand_records(cluster):
    """TOPIC-11, DEC-37: as Kafka 4.4.0 does through the Kafka adapter: 9,999 partitions (10,000
    records) are created; two topics of 6,000 partitions in one request, or one of 2**31 - 1, are
    refused as a whole with POLICY_VIOLATION and nothing is written, at no more cost than one
    partition (no partition is placed before the count)."""
    c = cluster()
    c.start_brokers(1)
    before = len(c.state.batches)
    results = create(c, by_count("a", 6000, 1), by_count("b", 6000, 1))
    assert [(r.name, r.topic_id, r.error_code) for r in results] == [
        ("a", UUID(int=0), Error.POLICY_VIOLATION), ("b", UUID(int=0), Error.POLICY_VIOLATION)]
    assert len(c.state.batches) == before and c.state.image.topic_named("a") is None
    assert "TOPIC-11" in c.results[-2].rejected_by
    [huge] = create(c, by_count("huge", 2**31 - 1, 1))
    assert huge.error_code == Error.POLICY_VIOLATION and len(c.state.batches) == before
    [fits] = create(c, by_count("fits", 9999, 1))
    assert fits.error_code == Error.NONE
    assert c.partition("fits", 9998).replicas == (1,) and (topic_id("fits"), 9999) not in c.state.image.partitions


def test_topic_11_an_invalid_topic_keeps_its_own_error_and_counts_nothing(cluster):
    """TOPIC-11, DEC-37: a topic refused by its own checks appends nothing and is not counted in the
    records; but the partitions a request asks for are counted first, before any check, so a huge
    count refuses the whole request whatever else is wrong with it (Kafka 4.0 to 4.4 do the same)."""
    c = cluster()
    c.start_brokers(1)
    bad, fine = create(c, by_count("bad", 5, 2), by_count("fine", 9995, 1))  # 10,000 partitions asked
    assert (bad.error_code, fine.error_code) == (Error.INVALID_REPLICATION_FACTOR, Error.NONE)
    huge, small = create(c, by_count("huge", 2**31 - 1, 2), by_count("small", 1, 1))
    assert (huge.error_code, small.error_code) == (Error.POLICY_VIOLATION, Error.POLICY_VIOLATION)