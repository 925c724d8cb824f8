"""Known Kafka controller bugs against kraftspec's traces (conformance/kafka-findings/README.md):
each finding trace is replayed against the last Kafka release before a fix and the first after it,
and must give the outcome the README records. The adapter is built through conformance/kafka.py
(Java 17 and Maven; about a minute per release the first time, then cached)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kraftspec.conformance.kafka_matrix import outcome
from kraftspec.conformance.replay import replay
from kraftspec.conformance.subprocess_adapter import adapter_from_spec
from kraftspec.conformance.targeted import rerecorded
from kraftspec.conformance.trace import read

FINDINGS = Path(__file__).resolve().parent.parent / "conformance" / "kafka-findings"
BEFORE, AFTER = "4.0.2", "4.1.0"
"""The last release without KAFKA-19130's fix and the first with it: the only change between
consecutive 4.x releases that these traces see."""

EXPECTED = {
    # KAFKA-19047: no Apache release carries a fix; Kafka refuses the new incarnation on both.
    "kafka_19047_reregister_after_controlled_shutdown.jsonl": {BEFORE: "failed at step 6 (replies)",
                                                               AFTER: "failed at step 6 (replies)"},
    "kafka_19047_shrunk.jsonl": {BEFORE: "failed at step 2 (replies)", AFTER: "failed at step 2 (replies)"},
    # KAFKA-19130: fixed in 4.1.0, where fenced brokers get no session on activation; the model
    # gives them no claim either (LEASE-14, DEC-6), so the release before the fix parts from it.
    "kafka_19130_reregister_fenced_after_failover.jsonl": {BEFORE: "failed at step 3 (replies)", AFTER: "passed"},
    # KAFKA-18138: fixed before 4.0.0 was released; every release fences the silent broker.
    "kafka_18138_fenced_after_failover.jsonl": {BEFORE: "passed", AFTER: "passed"},
    # KAFKA-14946 (3.4.0) and KAFKA-13841 (before 3.3.0): the adapter does not build there; the
    # traces guard the behaviour on 4.x.
    "kafka_14946_renounce_with_two_uncommitted_batches.jsonl": {BEFORE: "passed", AFTER: "passed"},
    "kafka_13841_registered_broker_tracked_after_failover.jsonl": {BEFORE: "passed", AFTER: "passed"},
    # Found by kraftspec: Kafka registers broker -1 (REG-1 refuses it), which the replies show first;
    # the stall that follows is checked below.
    "kraftspec_negative_broker_id_stalls_placement.jsonl": {BEFORE: "failed at step 2 (replies)",
                                                             AFTER: "failed at step 2 (replies)"},
}


def _scenarios():
    spec = importlib.util.spec_from_file_location("kafka_findings_scenarios", FINDINGS / "scenarios.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_finding_trace_has_a_recorded_outcome():
    assert sorted(p.name for p in FINDINGS.glob("*.jsonl")) == sorted(EXPECTED)


def test_the_scenario_traces_are_what_the_model_records_now():
    scenarios = _scenarios()
    for name in scenarios.FINDINGS:
        stored = read(FINDINGS / f"{name}.jsonl")
        assert scenarios.finding_trace(name).lines() == stored.lines(), name


def test_every_finding_trace_is_what_the_model_records_from_its_events():
    for path in sorted(FINDINGS.glob("*.jsonl")):
        trace = read(path)
        assert rerecorded(trace).lines() == trace.lines(), path.name


@pytest.mark.parametrize("version", [BEFORE, AFTER])
def test_each_finding_gives_its_recorded_outcome_on_kafka(version):
    adapter = adapter_from_spec(f"kafka:{version}")
    try:
        observed = {path.name: outcome(replay(read(path), adapter, "responses")).text()
                    for path in sorted(FINDINGS.glob("*.jsonl"))}
    finally:
        adapter.shutdown()
    assert observed == {name: by_version[version] for name, by_version in EXPECTED.items()}


def test_a_registered_negative_broker_id_stalls_kafkas_controller_on_the_next_placement():
    """The finding of kraftspec_negative_broker_id_stalls_placement.jsonl, event by event without
    comparing: Kafka answers every event up to the CreateTopics, and never answers that one (its
    event thread loops in the replica placer); the adapter's time limit ends it, and says so."""
    from kraftspec.conformance import kafka
    from kraftspec.conformance.subprocess_adapter import AdapterFailure, SubprocessAdapter

    trace = read(FINDINGS / "kraftspec_negative_broker_id_stalls_placement.jsonl")
    *before, last = trace.steps
    # the model refused broker -1, so two brokers cannot hold three replicas: INVALID_REPLICATION_FACTOR
    assert last.event["api"] == "CreateTopics" and last.replies[0]["body"]["Topics"][0]["ErrorCode"] == 38
    server = SubprocessAdapter(kafka.command(f"kafka:{AFTER}"), timeout=5.0, start_timeout=60.0)
    try:
        server.start(trace.header.config)
        for step in before:
            server.step(step.event)
        with pytest.raises(AdapterFailure, match="no answer within 5 s"):
            server.step(last.event)
    finally:
        server.shutdown()

