"""impl's components on their own: leases, the journal, the partition index, the builder, and
the controller's failover in the middle of pending writes."""

from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from kraftspec.impl.builder import build_change, elect, leave_changes, reassignment_complete
from kraftspec.impl.config import ControllerConfig
from kraftspec.impl.controller import Controller
from kraftspec.impl.errors import Error
from kraftspec.impl.journal import Journal
from kraftspec.impl.leases import LeaseManager
from kraftspec.impl.messages import (
    MESSAGE_CLASSES,
    RECORD_CLASSES_OF,
    BrokerHeartbeatRequest,
    BrokerRegistrationChangeRecord,
    BrokerRegistrationRequest,
    CreateTopicsRequest,
    FeatureLevelRecord,
    FenceBrokerRecord,
    KafkaFeatureLevelRecord,
    KafkaRegisterBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    Struct,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UnregisterBrokerRequest,
)
from kraftspec.impl.replication import Partition, ReplicationControl, Topic
from kraftspec.impl.state import MetadataState

T = UUID(int=7)
FEATURES = (BrokerRegistrationRequest.Feature(name="metadata.format", min_supported_version=1, max_supported_version=1),)


# ---- leases -------------------------------------------------------------------------------


def test_leases_lapse_by_deadline_then_id_and_later_contact_moves_them():
    """LEASE-8, DEC-7, DEC-25 in the deadline queue."""
    leases = LeaseManager(session_timeout_ms=100)
    for b in (3, 1, 2):
        leases.start(b, 0, fenced=False)
    leases.touch(2, 50)
    assert leases.expired(99) == []
    assert leases.expired(100) == [1, 3]  # same deadline: by id; 2's deadline moved to 150
    assert leases.expired(149) == []
    assert leases.expired(150) == [2]


def test_contact_at_the_same_millisecond_queues_no_second_deadline():
    """LEASE-7: contact at the time of the last leaves the queue as it is (the lease's deadline is in
    it already), and the lease still lapses at that deadline, not before, not after."""
    leases = LeaseManager(session_timeout_ms=100)
    leases.start(1, 0, fenced=False)
    for _ in range(1000):
        leases.touch(1, 0, 5)
    assert len(leases.deadlines) == 1
    leases.touch(1, 40)
    leases.touch(1, 40)
    assert len(leases.deadlines) == 2
    assert leases.expired(139) == [] and leases.expired(140) == [1]


def test_fenced_brokers_do_not_lapse_but_keep_their_claim():
    """LEASE-8 (unfenced only), REG-4 (contact while fenced still claims the id)."""
    leases = LeaseManager(session_timeout_ms=100)
    leases.start(1, 0, fenced=True)
    assert leases.expired(1000) == []
    leases.touch(1, 500)
    assert leases.claimed(1, 599) and not leases.claimed(1, 600)


def test_lowest_acknowledged_offset_over_unfenced_brokers():
    """LAO-1."""
    leases = LeaseManager(session_timeout_ms=100)
    for b in (1, 2, 3):
        leases.start(b, 0, fenced=False)
    leases.touch(1, 1, 10)
    leases.touch(2, 1, 7)
    leases.touch(3, 1, 12)
    assert leases.lowest_acknowledged_offset(99) == 7
    leases.set_fenced(2, True)
    assert leases.lowest_acknowledged_offset(99) == 10
    leases.touch(1, 2, 20)
    assert leases.lowest_acknowledged_offset(99) == 12
    for b in (1, 3):
        leases.set_fenced(b, True)
    assert leases.lowest_acknowledged_offset(99) == 99
    leases.set_fenced(2, False)
    assert leases.lowest_acknowledged_offset(99) == 7


# ---- journal ------------------------------------------------------------------------------


def test_journal_keeps_before_images_per_batch_until_commit():
    journal = Journal()
    journal.open_batch()
    journal.remember("a", lambda: 1)
    journal.remember("a", lambda: 2)  # the first image of a batch wins
    journal.close_batch(5)
    journal.open_batch()
    journal.remember("a", lambda: 3)
    journal.remember("b", lambda: None)
    journal.close_batch(9)
    assert journal.committed_image("a") == 1 and journal.committed_image("b") is None
    assert list(journal.undo_order()) == [("b", None), ("a", 3), ("a", 1)]
    journal.commit(5)
    assert journal.committed_image("a") == 3
    journal.commit(9)
    assert journal.committed_image("a", missing="live") == "live"


# ---- registrations and features ---------------------------------------------------------------

def kafka_registration(broker_id: int, epoch: int):
    return KafkaRegisterBrokerRecord(broker_id=broker_id, incarnation_id=UUID(int=broker_id), broker_epoch=epoch,
                                     fenced=True, in_controlled_shutdown=False)


def test_replay_says_whether_each_registration_record_applied():
    """LOG-13: a record that does not apply (a stale epoch, an unknown broker) changes nothing, and
    replay says False; in both record formats (DEC-22)."""
    state = MetadataState()
    seed_register = RegisterBrokerRecord(broker_id=1, incarnation_id=UUID(int=1), broker_epoch=4)
    assert state.replay(seed_register) is True and state.replay(kafka_registration(2, 5)) is True
    change = BrokerRegistrationChangeRecord
    assert state.replay(change(broker_id=2, broker_epoch=5, fenced=-1, in_controlled_shutdown=0)) is True
    assert state.cluster.is_active(2)
    for stale in (change(broker_id=2, broker_epoch=4, fenced=1, in_controlled_shutdown=1),
                  change(broker_id=9, broker_epoch=5, fenced=1, in_controlled_shutdown=0)):
        assert state.replay(stale) is False and state.cluster.replay_registration_change(stale) is False
    assert state.cluster.is_active(2) and not state.cluster.brokers[2].in_controlled_shutdown
    assert state.replay(change(broker_id=2, broker_epoch=5, fenced=1, in_controlled_shutdown=1)) is True
    assert not state.cluster.is_active(2) and state.cluster.brokers[2].in_controlled_shutdown
    assert state.replay(FenceBrokerRecord(broker_id=1, broker_epoch=3)) is False
    assert state.replay(UnfenceBrokerRecord(broker_id=1, broker_epoch=4)) is True
    assert state.replay(FeatureLevelRecord(name="metadata.format", min_feature_level=1, max_feature_level=1)) is True
    assert state.replay(KafkaFeatureLevelRecord(name="metadata.version", feature_level=16)) is True
    assert state.replay(UnregisterBrokerRecord(broker_id=1, broker_epoch=3)) is False
    assert state.replay(UnregisterBrokerRecord(broker_id=1, broker_epoch=4)) is True


def test_a_broker_is_active_only_while_registered_and_unfenced():
    """PART-3: a registration starts fenced (REG-8); unfenced it is active, fenced again or gone it is not."""
    state = MetadataState()
    assert not state.cluster.is_active(3)
    state.replay(kafka_registration(3, 7))
    assert not state.cluster.is_active(3)
    state.replay(UnfenceBrokerRecord(broker_id=3, broker_epoch=7))
    assert state.cluster.is_active(3)
    state.replay(FenceBrokerRecord(broker_id=3, broker_epoch=7))
    assert not state.cluster.is_active(3)


def test_a_failover_puts_uncommitted_feature_levels_back():
    """LOG-10, LOG-17: feature levels written by uncommitted batches are undone, in both record
    formats, back to the committed level or to none."""
    state = MetadataState()
    seed_level, kafka_level = FeatureLevelRecord, KafkaFeatureLevelRecord
    state.journal.open_batch()
    state.replay(seed_level(name="metadata.format", min_feature_level=1, max_feature_level=1))
    state.replay(kafka_level(name="metadata.version", feature_level=15))
    state.journal.close_batch(2)
    state.journal.commit(2)
    state.journal.open_batch()
    state.replay(seed_level(name="metadata.format", min_feature_level=1, max_feature_level=2))
    state.replay(kafka_level(name="metadata.version", feature_level=16))
    state.replay(kafka_level(name="group.version", feature_level=1))
    state.journal.close_batch(5)
    assert state.cluster.features == {"metadata.format": (1, 2), "metadata.version": (16, 16), "group.version": (1, 1)}
    state.undo_uncommitted()
    assert state.cluster.features == {"metadata.format": (1, 1), "metadata.version": (15, 15)}


# ---- the partition index ----------------------------------------------------------------------


def index_is_right(replication: ReplicationControl) -> bool:
    replica_of, leaderships, reassigning = {}, {}, set()
    for topic in replication.topics.values():
        for p in topic.partitions:
            for b in p.replicas:
                replica_of.setdefault(b, set()).add(p)
            if p.leader != -1:
                leaderships[p.leader] = leaderships.get(p.leader, 0) + 1
            if p.reassigning:
                reassigning.add(p)
    return (replica_of, leaderships, reassigning) == (replication.replica_of, replication.leaderships, replication.reassigning)


lists = st.lists(st.integers(0, 6), max_size=5, unique=True).map(tuple)


@given(st.lists(st.tuples(lists, lists, st.sampled_from([-2, -1, 0, 1, 2, 3]), lists, lists), max_size=20))
def test_the_index_follows_every_change_and_undo_restores_it(changes):
    """The broker -> partitions index, leadership counts and reassigning set stay exact, through
    changes and through undoing them (LOG-10)."""
    journal = Journal()
    replication = ReplicationControl(journal)
    replication.replay_topic(TopicRecord(topic_name="t", topic_id=T))
    replication.replay_partition(PartitionRecord(partition_id=0, topic_id=T, replicas=(1, 2, 3), isr=(1, 2), leader=1))
    before = replication.topics[T].partitions[0].fields()
    journal.open_batch()
    for isr, replicas, leader, removing, adding in changes:
        replication.replay_partition_change(PartitionChangeRecord(
            partition_id=0, topic_id=T, isr=isr or None, leader=leader, replicas=replicas or None,
            removing_replicas=removing or None, adding_replicas=adding or None,
        ))
        assert index_is_right(replication)
    journal.close_batch(100)
    for key, image in journal.undo_order():
        replication.restore(key, image)
    assert replication.topics[T].partitions[0].fields() == before and index_is_right(replication)


topic_steps = st.lists(st.tuples(st.sampled_from(["add", "remove", "ask", "commit", "fail over"]), st.sampled_from("cabd"),
                                 st.integers(0, 3)), max_size=25)


@given(topic_steps)
def test_partitions_of_a_broker_are_in_partition_order_as_topics_come_and_go(steps):
    """PART-5: partitions_of gives a broker's partitions by topic name, then partition id, whatever
    topics were created, removed, or put back or taken away again by a failover's undo (LOG-10)
    since it was last asked; its order of the topics, kept between calls, must follow each."""
    journal = Journal()
    replication = ReplicationControl(journal)
    offset = 0
    for action, name, number in steps:
        topic_id = UUID(int=ord(name))
        offset += 1
        journal.open_batch()  # each step a batch of its own, as each request's records are
        if action == "add" and replication.replay_topic(TopicRecord(topic_name=name, topic_id=topic_id)):
            for partition_id in range(number + 1):  # on brokers 1 and 2, each leading in turn
                replication.replay_partition(PartitionRecord(partition_id=partition_id, topic_id=topic_id, replicas=(1, 2),
                                                             isr=(1, 2), leader=1 + partition_id % 2))
        elif action == "remove":
            replication.replay_remove_topic(RemoveTopicRecord(topic_id=topic_id))
        journal.close_batch(offset)
        if action == "commit":
            journal.commit(offset)
        elif action == "fail over":  # every uncommitted batch undone
            for key, image in journal.undo_order():
                replication.restore(key, image)
            journal.clear()
        held = replication.partitions_of(1 + number % 2)
        expected = sorted((p for t in replication.topics.values() for p in t.partitions), key=lambda p: (p.topic.name, p.partition_id))
        assert [(p.topic.name, p.partition_id) for p in held] == [(p.topic.name, p.partition_id) for p in expected]
        assert all(p is q for p, q in zip(held, expected, strict=True))
        # and the places kept name no topic that is gone (which would keep its partitions alive)
        assert replication.topic_places is None or set(replication.topic_places) <= set(replication.topics.values())


# ---- the builder ------------------------------------------------------------------------------


def test_builder_elects_in_preferred_order_and_completes_reassignments():
    """PART-4, REASSIGN-6."""
    assert elect((3, 1, 2), (1, 2), lambda b: b != 1) == 2
    assert reassignment_complete((1, 2, 3, 4, 5), (1, 2, 3, 4, 5), (4, 5), (1, 2))
    assert not reassignment_complete((1, 2, 3, 4, 5), (1, 2, 3, 4), (4, 5), (1, 2))
    journal = Journal()
    replication = ReplicationControl(journal)
    replication.replay_topic(TopicRecord(topic_name="t", topic_id=T))
    replication.replay_partition(PartitionRecord(
        partition_id=0, topic_id=T, replicas=(1, 2, 3, 4, 5), isr=(1, 2, 3, 4), removing_replicas=(1, 2),
        adding_replicas=(4, 5), leader=1))
    p = replication.topics[T].partitions[0]
    record = build_change(p, lambda b: True, lambda b: True, isr=(1, 2, 3, 4, 5))
    assert (record.isr, record.leader, record.replicas, record.removing_replicas, record.adding_replicas) == (
        (3, 4, 5), 3, (3, 4, 5), (), ())
    assert build_change(p, lambda b: True, lambda b: True) is None  # nothing changes: no record


brokers = st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True).map(tuple)


@st.composite
def partitions_holding(draw, broker_id: int):
    """Partitions whose replicas include ``broker_id``, with any ISR (``broker_id`` in it or not),
    leader and reassignment."""
    topic = Topic("t", T)
    for index in range(draw(st.integers(1, 8))):
        replicas = draw(brokers.filter(lambda r: broker_id in r))
        isr = tuple(b for b in replicas if draw(st.booleans()))
        removing = draw(st.sampled_from([(), tuple(replicas[:1])]))
        adding = draw(st.sampled_from([(), tuple(replicas[-1:])])) if not removing or len(replicas) > 1 else ()
        leader = draw(st.sampled_from([-1, *isr]))
        topic.partitions.append(Partition(topic, index, replicas, isr, removing, adding, leader, 0, 0))
    return topic.partitions


@given(partitions_holding(2), st.frozensets(st.integers(0, 5)), st.frozensets(st.integers(0, 5)),
       st.sampled_from(["adding-in-sync", "target-in-sync", "adding-in-sync-whole-target-when-shrinking"]), st.booleans())
def test_a_broker_leaving_its_isrs_changes_each_partition_as_the_one_builder_does(partitions, staying, eligible, completes, bump):
    """PART-6, PART-8, SHUT-2: leave_changes decides the partitions that are not being reassigned
    itself; its records are those build_change gives partition by partition, the ISR without the
    broker (a sole place kept, DEC-8)."""
    leaving = 2

    def stays(b):
        return b != leaving and b in staying

    def may_lead(b):
        return b != leaving and b in eligible

    expected = []
    for p in (p for p in partitions if leaving in p.isr):
        isr = p.isr if p.isr == (leaving,) else tuple(b for b in p.isr if b != leaving)
        record = build_change(p, stays, may_lead, isr=isr, completes=completes, bump_on_removal=bump)
        if record is not None:
            expected.append(record)
    assert leave_changes(partitions, leaving, stays, may_lead, completes=completes, bump_on_removal=bump) == expected


# ---- the controller ---------------------------------------------------------------------------


def registration(broker_id: int):
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=ControllerConfig().cluster_id, incarnation_id=UUID(int=100 + broker_id),
        current_metadata_offset=-1, features=FEATURES,
    )


def test_failover_in_the_middle_of_pending_writes():
    """LOG-10, RPC-3: every waiting write is answered NOT_CONTROLLER in arrival order; the state is
    the committed one; the dropped offsets are given out again."""
    controller = Controller()
    for b in (1, 2):
        controller.handle_request(registration(b))
    controller.commit(controller.log_end_offset)
    for b in (1, 2):
        epoch = controller.state.cluster.brokers[b].epoch
        controller.handle_request(BrokerHeartbeatRequest(broker_id=b, broker_epoch=epoch, current_metadata_offset=controller.committed_offset), 1)
    controller.commit(controller.log_end_offset)
    committed = list(controller.committed_records())
    end = controller.log_end_offset
    topic = CreateTopicsRequest.CreatableTopic(name="t", topic_id=T, num_partitions=2, replication_factor=2)
    waiting = [
        controller.handle_request(CreateTopicsRequest(topics=(topic,))).seq,
        controller.handle_request(registration(3)).seq,
        controller.handle_request(UnregisterBrokerRequest(broker_id=1)).seq,
    ]
    assert controller.log_end_offset > end and len(controller.pending) == 3
    outcome = controller.failover()
    assert [r.seq for r in outcome.replies] == waiting
    assert outcome.replies[0].response.topics[0].error_code == Error.NOT_CONTROLLER
    assert [r.response.error_code for r in outcome.replies[1:]] == [Error.NOT_CONTROLLER] * 2
    assert list(controller.committed_records()) == committed and controller.log_end_offset == end
    assert set(controller.state.cluster.brokers) == {1, 2} and controller.state.replication.topics == {}
    again = controller.handle_request(registration(3))
    assert again.batches[0][0] == end  # offsets of the dropped tail are given out again


def test_an_earlier_lease_of_a_broker_leaves_nothing_that_passes_for_the_new_one():
    """LAO-1: unregistered and registered again, the broker's old heap entries are stale for good
    (found by the thorough lockstep run: versions restarted with each lease and collided)."""
    leases = LeaseManager(session_timeout_ms=100)
    leases.start(1, 0, fenced=False)
    leases.touch(1, 1, 9)
    leases.start(3, 0, fenced=False)
    leases.touch(3, 1, 4)
    leases.touch(3, 1, 5)  # the old lease's entries reach a version the new lease will reach too
    leases.remove(3)
    leases.start(3, 2, fenced=True)
    leases.touch(3, 2, 12)
    leases.set_fenced(3, False)
    assert leases.lowest_acknowledged_offset(99) == 9


def test_a_request_that_writes_nothing_opens_no_batch_and_leaves_the_journal_and_the_log_alone():
    """LOG-4, LOG-7: a heartbeat that changes no membership appends nothing and is answered at once;
    the batch and its journal entry are opened by a request's first record only."""
    controller = Controller()
    controller.handle_request(registration(1))
    controller.commit(controller.log_end_offset)
    epoch = controller.state.cluster.brokers[1].epoch
    heartbeat = BrokerHeartbeatRequest(broker_id=1, broker_epoch=epoch, current_metadata_offset=controller.committed_offset)
    controller.handle_request(heartbeat)  # unfences it: one record
    controller.commit(controller.log_end_offset)
    end, appended = controller.log_end_offset, len(controller.metrics.appended)
    outcome = controller.handle_request(heartbeat)
    assert outcome.batches == () and [r.response.is_fenced for r in outcome.replies] == [False]
    assert controller.log_end_offset == end and controller._batch is None
    assert controller.state.journal.current is None and not controller.state.journal.batches
    assert len(controller.metrics.appended) == appended


def test_equal_heartbeat_answers_are_one_object_and_a_flag_of_another_type_is_another_answer():
    """A response is never changed once built: the heartbeat's answers without
    LowestAcknowledgedOffset are kept, one per distinct value, and an int where a bool was is not
    taken for it."""
    from kraftspec.impl.heartbeat import status_response

    assert status_response(True, False, False) is status_response(True, False, False)
    assert status_response(True, False, False).is_caught_up is True
    assert status_response(1, 0, 0).is_caught_up == 1 and status_response(1, 0, 0).is_caught_up is not True
    controller = Controller()
    controller.handle_request(registration(1))
    controller.commit(controller.log_end_offset)
    epoch = controller.state.cluster.brokers[1].epoch
    responses = []
    for version in (0, 0, 1):
        request = BrokerHeartbeatRequest(broker_id=1, broker_epoch=epoch, current_metadata_offset=controller.committed_offset)
        replies = controller.handle_request(request, version).replies + controller.commit(controller.log_end_offset).replies
        responses += [reply.response for reply in replies]
    assert responses[1] is status_response(True, False, False)  # unfenced by the first, caught up
    assert responses[2].lowest_acknowledged_offset >= 0  # version 1 says it (LAO-1): built each time


@given(st.sampled_from(sorted({cls for classes in RECORD_CLASSES_OF.values() for cls in classes.values()}
                              | set(MESSAGE_CLASSES.values()), key=lambda c: (c.__name__, c.FIELDS))))
def test_make_builds_what_the_class_builds(cls):
    """messages.make_class: ``cls.make(**fields)`` is an object of ``cls`` equal to ``cls(**fields)``,
    field for field, defaults included, for every record and message class and their nested structs."""
    def check(cls):
        assert type(cls.make()) is cls and cls.make() == cls()
        assert all(getattr(cls.make(), f) == getattr(cls(), f) for f in cls.FIELDS)
        values = {f: (f, n) for n, f in enumerate(cls.FIELDS)}
        made, built = cls.make(**values), cls(**values)
        assert made == built and [getattr(made, f) for f in cls.FIELDS] == [getattr(built, f) for f in cls.FIELDS]
        for name in dir(cls):
            nested = getattr(cls, name)
            if isinstance(nested, type) and issubclass(nested, Struct) and nested is not cls and name[0].isupper():
                check(nested)

    check(cls)
