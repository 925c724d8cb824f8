"""The scenario behind each trace of this folder: one shrunk kafka-profile trace per row of part B of
spec/kafka.md that a trace can show (README.md lists them with their rows and outcomes).

Each trace is recorded from kraftspec's model under the kafka profile and replayed against Apache
Kafka's controller, where it parts from Kafka at the step the README gives.

    python conformance/kafka-ledger/scenarios.py DIR    # writes every ledger trace into DIR

tests/test_kafka_ledger.py records each scenario again and checks that the stored trace is the same,
so a change of the model that touches a row shows there first.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

from kraftspec.conformance.scenario import Scenario, incarnation, scripted, topic_id
from kraftspec.conformance.simulation import features_of
from kraftspec.conformance.trace import Trace
from kraftspec.model import Config, Failover
from kraftspec.model.messages import (
    AlterIsrRequest,
    AlterIsrTopic,
    AlterPartitionReassignmentsRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    CreatableTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    Feature,
    ListPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
    UnregisterBrokerRequest,
)


def _kafka(**settings) -> Scenario:
    return Scenario(Config.for_profile("kafka", **settings))


def _register(s: Scenario, broker_id: int, generation: int = 0, features=None, offset: int = -1,
              incarnation_id: UUID | None = None) -> Scenario:
    """A registration, not committed; ``features`` by default the cluster's finalized ones."""
    incarnation_id = incarnation_id or incarnation(broker_id, generation)
    features = features_of(s.config) if features is None else features
    return s.send(BrokerRegistrationRequest(broker_id, s.config.cluster_id, incarnation_id, offset, features=features))


def _fenced_heartbeat(s: Scenario, broker_id: int) -> Scenario:
    """A caught-up heartbeat that asks to stay fenced (WantFence), committed."""
    offset = s.state.committed_offset - 1  # the kafka profile's unit: the highest offset applied (DEC-2)
    s.send(BrokerHeartbeatRequest(broker_id, s.epoch(broker_id), offset, True, False))
    return s.commit()


def _reassign(s: Scenario, name: str, replicas, index: int = 0) -> Scenario:
    request = AlterPartitionReassignmentsRequest([ReassignableTopic(name, [ReassignablePartition(index, replicas)])])
    return s.send(request).commit()


def negative_broker_id_registered() -> Scenario:
    """B1 (REG-1): a registration with broker id -1. REG-1 refuses it INVALID_REQUEST; Kafka checks
    no range and registers it (the next placement then loops: conformance/kafka-findings)."""
    return _register(_kafka(), -1, incarnation_id=UUID(int=0xFF01))


def kafka_19047_reregister_after_shutdown() -> Scenario:
    """B2 (DEC-6, KAFKA-19047): broker 1, active and leading nothing, asks to shut down and is let go
    with ShouldShutDown; a new incarnation registers at once. kraftspec accepts it; Kafka keeps the
    old session and refuses it DUPLICATE_BROKER_REGISTRATION."""
    s = _kafka().start_brokers(1)
    s.heartbeat(1, want_shut_down=True)
    return _register(s, 1, 1)


def kafka_19130_fenced_claim_after_failover() -> Scenario:
    """B3 (LEASE-14, DEC-6, KAFKA-19130): broker 1 registers and stays fenced; the controller fails
    over; a new incarnation of broker 1 registers. A fenced broker holds no claim after a failover,
    as in Kafka 4.1.0 and later; 4.0.x gives it a session at activation and refuses the new one."""
    s = _kafka().register(1)
    s.send(Failover())
    return _register(s, 1, 1)










def partition_named_twice() -> Scenario:
    """B11 (ISR-11): broker 1's AlterIsr names t-0 twice (ISR [1], then ISR [1, 2]). kraftspec
    refuses both entries INVALID_REQUEST and writes nothing; Kafka applies the first and answers the
    second from the partition as it stood before the request, so it writes a record and answers later.
    A second AlterIsr lets both logs commit."""
    s = _kafka().start_brokers(1, 2)
    s.create_topic("t", [[1, 2]])
    twice = [s.isr_entry("t", [1]), s.isr_entry("t", [1, 2])]
    s.send(AlterIsrRequest(1, s.epoch(1), [AlterIsrTopic(topic_id("t"), twice)]))
    return s.alter_isr(1, "t", s.isr_entry("t", [1]))


def replaced_reassignment_adding_and_removing() -> Scenario:
    """B12 (REASSIGN-9): t-0 on broker 1 is reassigned to [2]; before broker 2 catches up the
    reassignment is replaced by [1]. kraftspec (and Kafka up to 4.2) completes it at once; from
    4.3.0 Kafka keeps the first reassignment's AddingReplicas [2] beside RemovingReplicas [2], does
    not complete, and lists it."""
    s = _kafka().start_brokers(1, 2)
    s.create_topic("t", [[1]])
    _reassign(s, "t", [2])
    _reassign(s, "t", [1])
    return s.send(ListPartitionReassignmentsRequest(None))


def list_reassignments_reads_uncommitted_partitions() -> Scenario:
    """B13 (LOG-8, REASSIGN-10): t-0 is being reassigned (committed); t's deletion is not yet
    committed. kraftspec lists the reassignment from the committed state; Kafka takes the topics at
    the committed offset but their partitions from the uncommitted state, and lists nothing."""
    s = _kafka().start_brokers(1, 2)
    s.create_topic("t", [[1]])
    _reassign(s, "t", [1, 2])
    s.send(DeleteTopicsRequest(["t"]))
    return s.send(ListPartitionReassignmentsRequest(None))


def create_topic_with_zero_id() -> Scenario:
    """B14 (DEC-24, TOPIC-2): a CreateTopics whose TopicId is zero. kraftspec refuses it
    INVALID_REQUEST; Kafka ignores the id, makes its own and creates the topic."""
    s = _kafka().start_brokers(1)
    return s.send(CreateTopicsRequest([CreatableTopic("t", UUID(int=0), 1, 1)])).commit()



def no_finalized_features() -> Scenario:
    """B21 (DEC-23, LOG-14): a cluster with no finalized features, where a registration that lists
    none is accepted. The adapter always gives Kafka a metadata.version, so Kafka refuses it
    INVALID_REGISTRATION."""
    return _register(_kafka(finalized_features=()), 1, features=())


def feature_range_below_zero() -> Scenario:
    """B22 (REG-1): a registration whose metadata.version range starts at -1. REG-1 refuses it; Kafka
    checks only that the range holds the finalized level, and registers it."""
    return _register(_kafka(), 1, features=(Feature("metadata.version", -1, 16),))


def partitions_in_kafkas_order() -> Scenario:
    """B25 (PART-6, SHUT-2): broker 2 is in the ISR of t-0 to t-3; the leader takes it out of t-3
    and adds it back, then t-1. When broker 2 shuts down, leading nothing, kraftspec takes it out of
    the ISRs in partition order (0, 1, 2, 3), Kafka in the order it joined them (0, 2, 3, 1): Kafka
    walks the broker's entry in its index of ISR members (topics in the order of its random ids)."""
    s = _kafka().start_brokers(1, 2)
    s.create_topic("t", [[1, 2], [1, 2], [1, 2], [1, 2]])
    s.alter_isr(1, "t", s.isr_entry("t", [1], index=3))
    s.alter_isr(1, "t", s.isr_entry("t", [1, 2], index=3))
    s.alter_isr(1, "t", s.isr_entry("t", [1], index=1))
    s.alter_isr(1, "t", s.isr_entry("t", [1, 2], index=1))
    return s.heartbeat(2, want_shut_down=True)


def controlled_shutdown_waits_for_a_forgotten_offset() -> Scenario:
    """B27 (SHUT-3, DEC-14): broker 3 begins a controlled shutdown; broker 2 is then unfenced by a
    heartbeat that says it has applied the shutdown's batch. kraftspec lets broker 3 go on its next
    heartbeat; Kafka does not: replaying broker 2's unfencing record, its heartbeat manager forgets
    the offset that heartbeat gave (it keeps it only when the record changes the fencing it already
    knows), so the lowest offset of the active brokers is -1 until broker 2 heartbeats again."""
    s = _kafka().register(1).register(2).register(3)
    s.heartbeat(3)
    s.create_topic("t", [[3]])
    s.heartbeat(3, want_shut_down=True)
    s.heartbeat(2, offset=s.state.log_end_offset)
    return s.heartbeat(3, offset=s.state.log_end_offset, want_shut_down=True)


def reassignment_completed_without_the_whole_target() -> Scenario:
    """B26 (REASSIGN-6, DEC-18): t-0 has replicas [1, 2, 4], ISR [1, 2], and is reassigned to
    [1, 4, 3] (removing 2, adding 3); broker 1's AlterIsr adds 3. Kafka 4.3 and later, and the kafka
    profile, complete the reassignment, since the one adding replica is in sync and no fewer are
    added than removed; 4.0 to 4.2 wait until the whole target, 4 included, is in sync."""
    s = _kafka().start_brokers(1, 2, 3, 4)
    s.create_topic("t", [[1, 2, 4]])
    s.alter_isr(1, "t", s.isr_entry("t", [1, 2]))
    _reassign(s, "t", [1, 4, 3])
    return s.alter_isr(1, "t", s.isr_entry("t", [1, 2, 3]))


def reassignments_listed_in_kafkas_order() -> Scenario:
    """B29 (REASSIGN-10): t-1, then t-0, begin reassigning; the operator lists every reassignment.
    kraftspec lists t's partitions by index (0, 1); Kafka in the order they began reassigning (1, 0),
    the order in which its index of reassigning topics keeps them."""
    s = _kafka().start_brokers(1, 2)
    s.create_topic("t", [[1], [1]])
    _reassign(s, "t", [1, 2], index=1)
    _reassign(s, "t", [1, 2], index=0)
    return s.send(ListPartitionReassignmentsRequest(None))


def topic_listed_twice_after_reverted_deletion() -> Scenario:
    """B30 (REASSIGN-10, LOG-10): t-0's reassignment is committed; t's deletion is not when the
    controller fails over, which undoes it. kraftspec lists t once; Kafka lists it twice, the same
    partition in both entries."""
    s = _kafka().start_brokers(1, 2)
    s.create_topic("t", [[1]])
    _reassign(s, "t", [1, 2])
    s.send(DeleteTopicsRequest(["t"]))
    s.send(Failover())
    return s.send(ListPartitionReassignmentsRequest(None))


def sessions_after_unregistration_in_kafkas_order() -> Scenario:
    """B31 (LEASE-14, DEC-25): brokers 1 to 5 register, 2 and 5 are unfenced, 1 is unregistered; the
    controller fails over and the sessions of 2 and 5 lapse together. The kafka profile gives the
    sessions in the order of a table of registrations sized for the four there are, and its scan
    fences 2 first; Kafka's table still has the room five needed (it never shrinks), its order puts
    5 first, and its scan fences 5."""
    s = _kafka()
    for broker_id in (1, 2, 3, 4, 5):
        s.register(broker_id)
    s.heartbeat(2)
    s.heartbeat(5)
    s.send(UnregisterBrokerRequest(1)).commit()
    s.send(Failover())
    return s.tick(s.config.session_timeout_ms + 1)


LEDGER: dict[str, Callable[[], Scenario]] = {
    "b1_negative_broker_id_registered": negative_broker_id_registered,
    "b2_kafka_19047_reregister_after_shutdown": kafka_19047_reregister_after_shutdown,
    "b3_kafka_19130_fenced_claim_after_failover": kafka_19130_fenced_claim_after_failover,
    "b11_partition_named_twice": partition_named_twice,
    "b12_replaced_reassignment_adding_and_removing": replaced_reassignment_adding_and_removing,
    "b13_list_reassignments_reads_uncommitted_partitions": list_reassignments_reads_uncommitted_partitions,
    "b14_create_topic_with_zero_id": create_topic_with_zero_id,
    "b21_no_finalized_features": no_finalized_features,
    "b22_feature_range_below_zero": feature_range_below_zero,
    "b25_partitions_in_kafkas_order": partitions_in_kafkas_order,
    "b26_reassignment_completed_without_the_whole_target": reassignment_completed_without_the_whole_target,
    "b27_controlled_shutdown_waits_for_a_forgotten_offset": controlled_shutdown_waits_for_a_forgotten_offset,
    "b29_reassignments_listed_in_kafkas_order": reassignments_listed_in_kafkas_order,
    "b30_topic_listed_twice_after_reverted_deletion": topic_listed_twice_after_reverted_deletion,
    "b31_sessions_after_unregistration_in_kafkas_order": sessions_after_unregistration_in_kafkas_order,
}


def ledger_trace(name: str) -> Trace:
    scenario = LEDGER[name]()
    doc = LEDGER[name].__doc__
    if doc is None:
        raise ValueError(f"ledger scenario {name} has no docstring, which is its trace's description")
    return scripted(name, scenario, kind="kafka-ledger").with_description(" ".join(doc.split()))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: python conformance/kafka-ledger/scenarios.py DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name in LEDGER:
        ledger_trace(name).write(out / f"{name}.jsonl")
        print(out / f"{name}.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
