"""The seeds' worked examples, replayed exactly as spec/ resolves them."""

import json

from cluster import FEATURES, Cluster, topic_id
from kraftspec.model import Error
from kraftspec.model import broker as b
from kraftspec.model.broker import BrokerProcess, BrokerState
from kraftspec.model.records import FenceBrokerRecord, PartitionChangeRecord, PartitionRecord, TopicRecord
from kraftspec.model.tools import dump_payload

from cluster import incarnation


def five_brokers_and_t() -> Cluster:
    c = Cluster()
    c.start_brokers(1, 2, 3, 4, 5)
    c.create_topic("t", assignment=[[1, 2, 3]])
    return c


def test_reassignment_example_1_2_3_to_3_4_5_step_by_step():
    """Seed 001's steps; REASSIGN-4, REASSIGN-6, REASSIGN-7, ISR-10."""
    c = five_brokers_and_t()
    t = topic_id("t")
    c.reassign("t", [3, 4, 5])  # step 1
    assert c.records() == [PartitionChangeRecord(0, t, replicas=(1, 2, 3, 4, 5), removing_replicas=(1, 2), adding_replicas=(4, 5))]
    assert c.partition("t").partition_epoch == 1
    [p] = c.alter_isr(1, "t", [1, 2, 3, 4]).topics[0].partitions  # step 2: not yet
    assert (p.error_code, p.isr, p.partition_epoch) == (Error.NONE, (1, 2, 3, 4), 2)
    assert c.records() == [PartitionChangeRecord(0, t, isr=(1, 2, 3, 4))]
    [p] = c.alter_isr(1, "t", [1, 2, 3, 4, 5]).topics[0].partitions  # step 3: adds both 4 and 5
    assert c.records() == [
        PartitionChangeRecord(0, t, isr=(3, 4, 5), leader=3, replicas=(3, 4, 5), removing_replicas=(), adding_replicas=())
    ]
    final = c.partition("t")
    assert (final.leader_epoch, final.partition_epoch) == (1, 3)
    assert p.error_code == Error.FENCED_LEADER_EPOCH


def test_reassignment_example_isr_1_2_3_target_1_2_4():
    """Seed 000's ISR adjustment; REASSIGN-7."""
    c = five_brokers_and_t()
    t = topic_id("t")
    c.reassign("t", [1, 2, 4])
    assert c.records() == [PartitionChangeRecord(0, t, replicas=(3, 1, 2, 4), removing_replicas=(3,), adding_replicas=(4,))]
    [p] = c.alter_isr(1, "t", [1, 2, 3, 4]).topics[0].partitions
    assert (p.error_code, p.leader_id, p.isr) == (Error.NONE, 1, (1, 2, 4))
    assert c.records() == [PartitionChangeRecord(0, t, isr=(1, 2, 4), replicas=(1, 2, 4), removing_replicas=(), adding_replicas=())]


def test_reassignment_example_immediate_completion():
    """Seed 000: a subset that meets the ISR; REASSIGN-5."""
    c = five_brokers_and_t()
    c.alter_isr(1, "t", [1, 2])
    c.reassign("t", [2, 3])
    assert c.records() == [PartitionChangeRecord(0, topic_id("t"), isr=(2,), leader=2, replicas=(2, 3))]


def drive(c: Cluster, process: BrokerProcess, **heartbeat) -> BrokerProcess:
    """One heartbeat of a simulated broker, committed, and its effect on the broker."""
    process = b.catch_up(process, c.state.committed_offset)
    response = c.request(b.heartbeat_request(process))
    return b.on_heartbeat_response(process, response)


def test_the_unfencing_sequence_of_a_starting_broker():
    """Seed 000, "Broker Leases" and "The Broker State Machine": STARTING -> RECOVERY -> RUNNING."""
    c = Cluster()
    process = b.start(BrokerProcess(1), incarnation(1))
    assert process.state == BrokerState.STARTING
    response = c.request(b.registration_request(process, c.state.config.cluster_id, FEATURES))
    process = b.on_registration_response(process, response)
    assert process.epoch == c.epoch(1)
    first = b.heartbeat_request(process)  # it has applied nothing yet
    assert first.want_fence and first.current_metadata_offset == 0
    process = b.on_heartbeat_response(process, c.request(first))
    assert process.state == BrokerState.STARTING  # not caught up: stays
    process = drive(c, process)  # fetched its own registration: caught up
    assert process.state == BrokerState.RECOVERY and c.state.image.brokers[1].fenced
    process = drive(c, process)  # still recovering logs: WantFence
    assert process.state == BrokerState.RECOVERY and c.state.image.brokers[1].fenced
    process = b.finish_log_recovery(process)
    process = drive(c, process)
    assert process.state == BrokerState.RUNNING and not c.state.image.brokers[1].fenced


def test_the_controlled_shutdown_of_a_running_broker():
    """Seed 000, "Controlled Shutdown": WantShutDown, leaders move, then ShouldShutDown."""
    c = Cluster()
    c.start_brokers(2)
    process = b.start(BrokerProcess(1), incarnation(1))
    process = b.on_registration_response(process, c.request(b.registration_request(process, c.state.config.cluster_id, FEATURES)))
    process = b.finish_log_recovery(drive(c, drive(c, process)))
    process = drive(c, process)
    assert process.state == BrokerState.RUNNING
    c.create_topic("t", assignment=[[1, 2], [1, 2]])
    assert c.partition("t", 0).leader == c.partition("t", 1).leader == 1
    process = b.sigterm(process)
    assert b.heartbeat_request(process).want_shut_down
    process = drive(c, process)
    assert process.state == BrokerState.SHUTTING_DOWN
    assert c.partition("t", 0).leader == c.partition("t", 1).leader == 2
    assert c.partition("t", 0).isr == (2,) and c.state.image.brokers[1].fenced
    assert b.stop(process).state == BrokerState.NOT_RUNNING


def test_the_kafka_dump_log_example_of_seed_000():
    """Seed 000's dump: a topic, its partition [1], then broker 1 fenced (PART-6, TOOL-4)."""
    c = Cluster()
    c.start_brokers(1)
    c.create_topic("bar", assignment=[[1]])
    created = c.records()
    c.heartbeat(1, want_fence=True)
    fenced = c.records()
    bar = topic_id("bar")
    assert created == [TopicRecord("bar", bar), PartitionRecord(0, bar, [1], [1], [], [], 1, 0, 0)]
    assert fenced == [PartitionChangeRecord(0, bar, leader=-1), FenceBrokerRecord(1, c.epoch(1))]
    lines = [json.loads(dump_payload(r).removeprefix("payload: ")) for r in created + fenced]
    assert [line["type"] for line in lines] == ["TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "FENCE_BROKER_RECORD"]
    assert lines[1]["data"]["partitionEpoch"] == 0 and lines[2]["data"] == {"partitionId": 0, "topicId": lines[0]["data"]["topicId"], "leader": -1}


def test_the_lowest_acknowledged_offset_example_of_seed_004():
    """Seed 004: a broker behind holds the lowest acknowledged offset down until it catches up."""
    c = Cluster()
    c.start_brokers(1, 2)  # broker A = 1, broker B = 2
    c.create_topic("x", assignment=[[1]])  # a write: the log moves on
    head = c.state.committed_offset
    c.heartbeat(2, offset=head - 2)  # B has fetched less
    assert c.heartbeat(1, offset=head).lowest_acknowledged_offset == head - 2
    assert c.heartbeat(2, offset=head).lowest_acknowledged_offset == head
