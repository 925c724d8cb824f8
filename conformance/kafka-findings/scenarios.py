"""The scenario behind each finding trace of this folder, written as model events.

Each trace is recorded from kraftspec's model (what the spec says must happen) and replayed against
Kafka releases before and after the fix of a known controller bug; README.md has the results.

    python conformance/kafka-findings/scenarios.py DIR    # writes every finding trace into DIR

tests/test_kafka_findings.py records each scenario again and checks that the stored trace is the
same, so a change of the model that changes a finding shows there first.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from kraftspec.conformance.targeted import Scenario, incarnation, scripted, topic_id
from kraftspec.conformance.trace import Trace
from kraftspec.model import Failover
from kraftspec.model.messages import BrokerHeartbeatRequest, BrokerRegistrationRequest, CreatableTopic, CreateTopicsRequest
from kraftspec.conformance.simulation import FEATURES


def _new_incarnation(s: Scenario, broker_id: int, generation: int) -> Scenario:
    """A restarted broker process registers again, with a new incarnation id (the trace ends there:
    the answer, or its absence until a commit, is the finding)."""
    request = BrokerRegistrationRequest(broker_id, s.config.cluster_id, incarnation(broker_id, generation), features=FEATURES)
    return s.send(request)


def reregister_after_controlled_shutdown() -> Scenario:
    """KAFKA-19047. Broker 1 is active and asks to shut down; it leads nothing, so the answer is
    ShouldShutDown, with its fencing (SHUT-1, SHUT-3). Its process comes back at once with a new
    incarnation. REG-4: a registration that was told ShouldShutDown has given its id up, so the new
    incarnation is accepted. Kafka keeps the old session for a session timeout and refuses it
    DUPLICATE_BROKER_REGISTRATION."""
    s = Scenario().start_brokers(1)
    s.heartbeat(1, want_shut_down=True)
    return _new_incarnation(s, 1, 1)


def reregister_fenced_after_failover() -> Scenario:
    """KAFKA-19130. Broker 1 is registered and fenced; the controller fails over; a new
    incarnation of broker 1 registers right after. LEASE-14: the new controller gives every
    registered broker, fenced or not, a fresh lease, so REG-4 refuses it
    DUPLICATE_BROKER_REGISTRATION. Kafka 4.0 does the same; from 4.1.0 fenced brokers get no
    session on activation and the registration is accepted."""
    s = Scenario().register(1)
    s.send(Failover())
    return _new_incarnation(s, 1, 1)


def fenced_after_failover() -> Scenario:
    """KAFKA-18138. Broker 1 is active, the controller fails over, and broker 1 never sends another
    heartbeat. LEASE-14 starts its lease at the failover, so LEASE-8 fences it a session timeout
    later."""
    s = Scenario().start_brokers(1)
    s.tick(1000)
    s.send(Failover())
    timeout = s.config.session_timeout_ms
    s.tick(1000 + timeout - 1)  # one millisecond before the deadline: still active
    s.tick(1000 + timeout)  # the deadline: fenced
    return s.commit()


def renounce_with_two_uncommitted_batches() -> Scenario:
    """The 3.4.0 NullPointerException on renouncing (KAFKA-14946). With broker 1's registration
    committed, broker 2 registers (a new key in the controller's broker table) and broker 1's
    heartbeat unfences it (a changed key), each in its own uncommitted batch; then the controller
    fails over and reverts both. The model answers both requests NOT_CONTROLLER (LOG-10)."""
    s = Scenario().register(1)
    s.send(BrokerRegistrationRequest(2, s.config.cluster_id, incarnation(2), features=FEATURES))
    s.send(BrokerHeartbeatRequest(1, s.epoch(1), s.state.log_end_offset, False, False))
    return s.send(Failover())


def registered_broker_tracked_after_failover() -> Scenario:
    """KAFKA-13841. Broker 1 is registered in the log but has never sent a heartbeat when the
    controller fails over; its first heartbeat to the new controller is accepted and unfences it
    (LEASE-14: every registered broker has a lease after a failover), and a topic is placed on
    it."""
    s = Scenario().register(1)
    s.send(Failover())
    s.heartbeat(1)
    return s.create_topic("t", [[1]])


def negative_broker_id_then_placement() -> Scenario:
    """Found by kraftspec (no JIRA known): a registration with broker id -1, then a CreateTopics by
    replication factor. REG-1 refuses the id INVALID_REQUEST. Kafka registers broker -1, and the
    CreateTopics then never gets an answer: the controller's event thread loops in its replica
    placer, so the controller answers nothing more. Brokers 1 and 3 register, broker 1 is
    unfenced, and a topic of one partition and replication factor 3 is asked for (which the model,
    with two brokers, refuses INVALID_REPLICATION_FACTOR)."""
    s = Scenario().register(1)
    s.send(BrokerRegistrationRequest(-1, s.config.cluster_id, incarnation(200), features=FEATURES))
    s.register(3)
    s.heartbeat(1)
    return s.send(CreateTopicsRequest([CreatableTopic("orders", topic_id("orders"), 1, 3)]))


FINDINGS: dict[str, Callable[[], Scenario]] = {
    "kafka_19047_reregister_after_controlled_shutdown": reregister_after_controlled_shutdown,
    "kafka_19130_reregister_fenced_after_failover": reregister_fenced_after_failover,
    "kafka_18138_fenced_after_failover": fenced_after_failover,
    "kafka_14946_renounce_with_two_uncommitted_batches": renounce_with_two_uncommitted_batches,
    "kafka_13841_registered_broker_tracked_after_failover": registered_broker_tracked_after_failover,
    "kraftspec_negative_broker_id_stalls_placement": negative_broker_id_then_placement,
}
"""File name (without .jsonl) -> the scenario its trace is recorded from."""


def finding_trace(name: str) -> Trace:
    scenario = FINDINGS[name]
    description = " ".join((scenario.__doc__ or "").split())
    return scripted(name, scenario(), kind="kafka-finding").with_description(description)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python conformance/kafka-findings/scenarios.py DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    if not out.is_dir():
        print(f"{out}: not a folder", file=sys.stderr)
        return 2
    for name in FINDINGS:
        finding_trace(name).write(out / f"{name}.jsonl")
        print(out / f"{name}.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
