"""The traces of spec/kafka.md, part B (conformance/kafka-ledger/README.md): each kafka-profile trace
is replayed against Kafka 4.4.0 at level records, and the rows that concern a change between releases against the
releases on either side of it, and must give the outcome the README records. Every trace the
ledger names must exist, and every trace of the folder must be named by a row. The adapter is built
through conformance/kafka.py (Java 17 and Maven; about a minute per release the first time, then
cached)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from kraftspec.conformance.kafka_matrix import outcome
from kraftspec.conformance.replay import replay
from kraftspec.conformance.subprocess_adapter import adapter_from_spec
from kraftspec.conformance.targeted import rerecorded
from kraftspec.conformance.trace import profile_of, read

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "conformance" / "kafka-ledger"
KAFKA_MD = ROOT / "spec" / "kafka.md"
NEWEST = "4.4.0"

LEVEL = "records"
"""The ledger's traces are kafka-profile traces, whose records are Kafka's: compared byte for byte."""

EVERYWHERE = {
    # registration and sessions
    "b1_negative_broker_id_registered.jsonl": "failed at step 0 (replies)",
    "b2_kafka_19047_reregister_after_shutdown.jsonl": "failed at step 6 (replies)",
    "b3_kafka_19130_fenced_claim_after_failover.jsonl": "passed",
    # partitions
    "b11_partition_named_twice.jsonl": "failed at step 10 (replies)",
    "b12_replaced_reassignment_adding_and_removing.jsonl": "failed at step 12 (records)",
    "b13_list_reassignments_reads_uncommitted_partitions.jsonl": "failed at step 13 (replies)",
    "b14_create_topic_with_zero_id.jsonl": "failed at step 4 (replies)",
    # the adapter
    "b21_no_finalized_features.jsonl": "failed at step 0 (replies)",
    "b22_feature_range_below_zero.jsonl": "failed at step 0 (replies)",
    # found by the random walks at level records
    "b25_partitions_in_kafkas_order.jsonl": "failed at step 18 (records)",
    "b26_reassignment_completed_without_the_whole_target.jsonl": "passed",
    "b27_controlled_shutdown_waits_for_a_forgotten_offset.jsonl": "failed at step 14 (replies)",
    "b29_reassignments_listed_in_kafkas_order.jsonl": "failed at step 14 (replies)",
    "b30_topic_listed_twice_after_reverted_deletion.jsonl": "failed at step 14 (replies)",
    "b31_sessions_after_unregistration_in_kafkas_order.jsonl": "failed at step 17 (records)",
}
"""The outcome of each trace against Kafka 4.4.0 at level records."""

ACROSS_RELEASES = {
    # B3, KAFKA-19130: 4.0.x gives a fenced broker a session when a controller takes over; 4.1.0 on does not.
    "4.0.2": {"b3_kafka_19130_fenced_claim_after_failover.jsonl": "failed at step 3 (replies)"},
    # B12 and B26: how a reassignment completes changed in 4.3.0.
    "4.2.0": {"b12_replaced_reassignment_adding_and_removing.jsonl": "passed",
              "b26_reassignment_completed_without_the_whole_target.jsonl": "failed at step 22 (records)"},
    "4.3.0": {"b12_replaced_reassignment_adding_and_removing.jsonl": "failed at step 12 (records)",
              "b26_reassignment_completed_without_the_whole_target.jsonl": "passed"},
}
"""The rows that concern a change between releases: their traces against the releases on either side."""


def _scenarios():
    spec = importlib.util.spec_from_file_location("kafka_ledger_scenarios", LEDGER / "scenarios.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _part_b() -> str:
    text = KAFKA_MD.read_text(encoding="utf-8")
    start = text.index("## Part B")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_every_ledger_trace_has_a_recorded_outcome_and_is_a_kafka_profile_trace():
    assert sorted(p.name for p in LEDGER.glob("*.jsonl")) == sorted(EVERYWHERE)
    for path in sorted(LEDGER.glob("*.jsonl")):
        assert profile_of(read(path).header.config) == "kafka", path.name


def test_every_part_b_row_names_traces_that_exist_and_every_trace_is_named_by_a_row():
    rows = [line for line in _part_b().splitlines() if re.match(r"\| B\d+ \|", line)]
    assert len(rows) >= 20
    named = set()
    for row in rows:
        for name in re.findall(r"kafka-ledger/([\w.-]+\.jsonl)", row):
            assert (LEDGER / name).is_file(), f"{row.split('|')[1].strip()}: {name} does not exist"
            assert name.startswith(row.split("|")[1].strip().lower() + "_"), (row.split("|")[1], name)
            named.add(name)
        for name in re.findall(r"`([0-9a-f]{16}\.jsonl)`", row):
            assert (ROOT / "conformance" / "corpus" / name).is_file(), f"{row.split('|')[1].strip()}: {name}"
    assert named == set(EVERYWHERE)
    readme = (LEDGER / "README.md").read_text(encoding="utf-8")
    assert all(name in readme for name in EVERYWHERE)


def test_the_ledger_traces_are_what_the_model_records_now():
    scenarios = _scenarios()
    assert sorted(f"{name}.jsonl" for name in scenarios.LEDGER) == sorted(EVERYWHERE)
    for name in scenarios.LEDGER:
        stored = read(LEDGER / f"{name}.jsonl")
        assert scenarios.ledger_trace(name).lines() == stored.lines(), name
        assert rerecorded(stored).lines() == stored.lines(), name


def _outcomes(version: str, names, level: str = LEVEL) -> dict[str, str]:
    adapter = adapter_from_spec(f"kafka:{version}")
    try:
        return {name: outcome(replay(read(LEDGER / name), adapter, level)).text() for name in names}
    finally:
        adapter.shutdown()


def test_each_ledger_trace_gives_its_recorded_outcome_on_the_newest_release():
    assert _outcomes(NEWEST, sorted(EVERYWHERE)) == EVERYWHERE


def test_the_cause_finder_names_each_failing_ledger_trace_by_its_own_row():
    """``kraftspec kafka-causes`` explains a divergence by the first row whose signature holds: each
    failing trace of this folder must be explained by the row it belongs to, so that the counts it
    gives for thousands of random walks mean what they say."""
    from kraftspec.conformance.kafka_causes import classify

    failing = [name for name, seen in EVERYWHERE.items() if seen != "passed"]
    results = classify([LEDGER / name for name in failing], f"kafka:{NEWEST}", LEVEL)
    assert {name: results[name].get("cause") for name in failing} == {
        name: name.split("_")[0].upper() for name in failing}


@pytest.mark.parametrize("version", sorted(ACROSS_RELEASES))
def test_the_rows_of_a_release_change_give_their_outcome_on_either_side(version):
    expected = ACROSS_RELEASES[version]
    assert _outcomes(version, sorted(expected)) == expected
