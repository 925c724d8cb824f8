"""Apache Kafka's real controller as a system under test: the Kafka adapter is built with Maven
from Kafka's jars (conformance/kafka-adapter/), the regression corpus is replayed against it, and
every trace's outcome must be the one conformance/kafka-expected.json records, cause and all. A
new divergence, or one that disappears, fails here: record it (``python -m
kraftspec.conformance.kafka_expect --write``) and write its cause."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from kraftspec.conformance import kafka, kafka_expect
from kraftspec.conformance.generate import walk
from kraftspec.conformance.subprocess_adapter import adapter_from_spec

EXPECTED = kafka_expect.load()


@pytest.fixture(scope="module")
def observed() -> dict[str, str]:
    return kafka_expect.observe(EXPECTED["kafka"], EXPECTED["level"])


def test_the_corpus_against_kafka_gives_the_recorded_outcomes(observed):
    problems = kafka_expect.compare(EXPECTED, observed)
    assert not problems, "\n".join(problems)


def test_every_recorded_divergence_names_a_decision_or_rule():
    for name, entry in EXPECTED["traces"].items():
        if entry["outcome"] != "passed":
            assert any(tag in entry["cause"] for tag in ("DEC-", "LEASE-", "REG-", "ISR-", "LOG-")), name


def test_the_comparison_reports_a_new_divergence_and_one_that_disappears():
    recorded = {"kafka": "4.4.0", "level": "responses", "traces": {
        "a.jsonl": {"outcome": "passed"},
        "b.jsonl": {"outcome": "failed at step 3 (replies)", "cause": "DEC-21: ..."},
        "c.jsonl": {"outcome": "failed at step 1 (replies)", "cause": kafka_expect.UNEXPLAINED}}}
    problems = kafka_expect.compare(recorded, {"a.jsonl": "failed at step 2 (replies)", "b.jsonl": "passed",
                                               "c.jsonl": "failed at step 1 (replies)", "d.jsonl": "passed"})
    assert [p.split(":")[0] for p in problems] == ["a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"]


def test_kafka_reports_its_own_records_with_their_frames_and_the_trace_topic_ids():
    trace = walk(3, 60)
    adapter = adapter_from_spec(f"kafka:{EXPECTED['kafka']}")
    try:
        adapter.start(trace.header.config)
        assert adapter.levels == ("responses", "state", "records")
        assert adapter.unsupported == {"fields": ["BrokerHeartbeatResponse.LowestAcknowledgedOffset"]}
        seen = []
        for step in trace.steps:
            result = adapter.step(step.event)
            seen += result["records"]
        types = {r["type"] for r in seen}
        assert "RegisterBrokerRecord" in types
        assert all(r["frame"].startswith("01") for r in seen)  # Kafka's frame version 1, from its own serde
        created = {s.event["body"]["Topics"][0]["TopicId"] for s in trace.steps
                   if s.event.get("api") == "CreateTopics" and any(r["type"] == "TopicRecord" for r in s.records)}
        kafka_ids = {r["data"]["TopicId"] for r in seen if r["type"] == "TopicRecord"}
        assert kafka_ids <= created  # Kafka's invented ids are mapped to the trace's
    finally:
        adapter.shutdown()


def test_a_release_that_does_not_resolve_is_one_clear_line():
    result = subprocess.run([sys.executable, "-m", "kraftspec", "replay", str(kafka_expect.CORPUS),
                             "--adapter", "kafka:0.0.1"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 2
    assert "Kafka 0.0.1 does not resolve from Maven Central" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_maven_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing cached: a build is needed
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "mvn" else "/usr/bin/" + name)
    with pytest.raises(kafka.KafkaAdapterError, match="needs Maven"):
        kafka.command("kafka:4.4.0")


def test_adapter_specs_are_read_or_refused():
    assert kafka.parse_spec("kafka") == (kafka.DEFAULT_VERSION, kafka.DEFAULT_METADATA_VERSION)
    assert kafka.parse_spec("kafka:4.1.0:3.9-IV0") == ("4.1.0", "3.9-IV0")
    for bad in ("kafka:4.1", "kafka:4.1.0:latest", "kafka:a:b:c"):
        with pytest.raises(kafka.KafkaAdapterError):
            kafka.parse_spec(bad)


def test_the_expectation_file_is_sorted_json_with_a_cause_for_each_failure():
    text = kafka_expect.EXPECTED.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_a_jvm_that_dies_mid_trace_is_a_verdict_that_says_so():
    import os
    import signal

    trace = walk(5, 40)
    adapter = adapter_from_spec(f"kafka:{EXPECTED['kafka']}")
    try:
        adapter.start(trace.header.config)
        adapter.step(trace.steps[0].event)
        os.kill(adapter.pid, signal.SIGKILL)
        with pytest.raises(Exception) as failure:
            for step in trace.steps[1:]:
                adapter.step(step.event)
        assert type(failure.value).__name__ == "AdapterFailure"
        assert "SIGKILL" in str(failure.value) or "signal 9" in str(failure.value)
    finally:
        adapter.shutdown()


def test_a_request_kafka_cannot_read_is_an_error_naming_it_and_the_server_goes_on():
    trace = walk(5, 10)
    adapter = adapter_from_spec(f"kafka:{EXPECTED['kafka']}")
    try:
        adapter.start(trace.header.config)
        strange = {"kind": "request", "api": "CreateTopics", "version": 0, "body": {"Topics": [{"Name": "t"}]}}
        with pytest.raises(Exception, match="this CreateTopics request cannot be expressed as Kafka.s"):
            adapter.step(strange)
        adapter.start(trace.header.config)  # the same JVM takes the next trace
        assert adapter.step(trace.steps[0].event)["seq"] == trace.steps[0].seq
    finally:
        adapter.shutdown()
