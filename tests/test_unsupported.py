"""A server's declaration of what it does not support (spec/protocol.md, "Declaring what a server
does not support"): fields left out of the comparison, requests and levels reported as not
supported rather than failed, and counted apart from passed."""

from __future__ import annotations

import shlex
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kraftspec.cli import main
from kraftspec.conformance.replay import replay, record_difference
from kraftspec.conformance.subprocess_adapter import AdapterFailure, SubprocessAdapter
from kraftspec.conformance.trace import read

CORPUS = Path(__file__).resolve().parents[1] / "conformance" / "corpus"
SERVER = [sys.executable, "-m", "kraftspec.conformance.examples.impl_server"]
LAO = "BrokerHeartbeatResponse.LowestAcknowledgedOffset"


def traces_with(predicate) -> list[Path]:
    found = [path for path in sorted(CORPUS.glob("*.jsonl")) if any(predicate(step) for step in read(path).steps)]
    assert found, "the corpus has no trace for this test"
    return found


def heartbeat_v1_reply(step) -> bool:
    return any(r["api"] == "BrokerHeartbeat" and r["version"] == 1 for r in step.replies)


def alter_isr(step) -> bool:
    return step.event.get("api") == "AlterIsr"


def test_a_field_left_out_and_not_declared_is_a_divergence():
    path = traces_with(heartbeat_v1_reply)[0]
    with SubprocessAdapter([*SERVER, "--without-field", LAO]) as server:
        verdict = replay(read(path), server, "responses", path)
    assert not verdict.passed and verdict.divergence.part == "replies"
    assert "LowestAcknowledgedOffset" in verdict.report()


def test_a_declared_field_is_left_out_of_the_comparison_and_named_in_the_report():
    paths = traces_with(heartbeat_v1_reply)[:3]
    with SubprocessAdapter([*SERVER, "--without-field", LAO, "--declare"]) as server:
        verdicts = [replay(read(path), server, "records", path) for path in paths]
    assert all(v.passed for v in verdicts), [v.report() for v in verdicts if not v.passed]
    assert all(v.ignored == (LAO,) for v in verdicts)
    assert "not compared, as the adapter does not support them: " + LAO in verdicts[0].report()


def test_a_declared_field_still_leaves_other_differences_visible():
    path = traces_with(heartbeat_v1_reply)[0]
    with SubprocessAdapter([*SERVER, "--without-field", LAO, "--declare", "--alter-reply-at", "0"]) as server:
        verdict = replay(read(path), server, "responses", path)
    assert not verdict.passed and verdict.divergence.part == "replies"


def test_an_unsupported_request_ends_the_trace_as_not_supported_not_failed():
    path = traces_with(alter_isr)[0]
    first = next(step.n for step in read(path).steps if alter_isr(step))
    with SubprocessAdapter([*SERVER, "--unsupported-request", "AlterIsr"]) as server:
        verdict = replay(read(path), server, "records", path)
    assert not verdict.passed and verdict.divergence is None
    assert verdict.not_supported == f"request AlterIsr (step {first})"
    assert verdict.report().startswith("NOT SUPPORTED ")


def test_a_level_not_listed_is_not_supported_and_nothing_is_compared():
    path = sorted(CORPUS.glob("*.jsonl"))[0]
    with SubprocessAdapter([*SERVER, "--levels", "responses"]) as server:
        verdict = replay(read(path), server, "state", path)
    assert verdict.not_supported.startswith("level state") and verdict.steps == 0


def test_a_malformed_declaration_is_a_fault_of_the_server(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    a = {'type': 'started', 'protocol': 1, 'name': 'x', 'levels': ['responses'], 'unsupported': {'fields': 'all'}}\n"
        "    print(json.dumps(a if m['type'] == 'start' else {'type': 'stopped'}), flush=True)\n")
    with SubprocessAdapter([sys.executable, str(script)]) as server, pytest.raises(AdapterFailure, match="unsupported must be"):
        server.start(read(sorted(CORPUS.glob("*.jsonl"))[0]).header.config)


def test_replay_counts_not_supported_apart_and_junit_calls_them_skipped(tmp_path, capsys):
    paths = traces_with(alter_isr)
    command = shlex.join([*SERVER, "--unsupported-request", "AlterIsr"])
    junit = tmp_path / "r.xml"
    status = main(["replay", str(CORPUS), "--adapter", f"subprocess:{command}", "--level", "responses", "--quiet",
                   "--junit", str(junit)])
    out = capsys.readouterr().out
    total = len(list(CORPUS.glob("*.jsonl")))
    assert status == 1  # not supported is not passed
    assert f"{total - len(paths)} of {total} traces passed, {len(paths)} not supported" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("skipped") == str(len(paths)) and suite.get("failures") == "0"


def test_record_difference_names_the_record_and_the_fields():
    expected = [{"offset": 1, "type": "RegisterBrokerRecord", "version": 0, "data": {"BrokerId": 1, "Rack": None}}]
    actual = [{"offset": 1, "type": "RegisterBrokerRecord", "version": 2, "data": {"BrokerId": 1, "Fenced": True}}]
    assert record_difference(expected, actual) == (
        "RegisterBrokerRecord v0, appended RegisterBrokerRecord v2 at offset 1, fields Fenced, Rack")
    assert record_difference(expected, []) == "RegisterBrokerRecord at offset 1 expected, not appended"


class SpoiledImpl:
    """impl, with the first record it appends changed, and the first reply it releases after that."""

    def __init__(self):
        from kraftspec.conformance.adapters import ImplAdapter

        self.inner = ImplAdapter()
        self.name, self.levels = "spoiled impl", self.inner.levels

    def start(self, config):
        self.inner.start(config)
        self.record_done = self.reply_done = False

    def step(self, event):
        result = self.inner.step(event)
        if result["records"] and not self.record_done:
            result["records"][0] = {**result["records"][0], "version": 9}
            self.record_done = True
        elif result["replies"] and self.record_done and not self.reply_done:
            result["replies"][0] = {**result["replies"][0], "body": {**result["replies"][0]["body"], "ThrottleTimeMs": 7}}
            self.reply_done = True
        return result

    def committed(self):
        return self.inner.committed()

    def close(self):
        self.inner.close()


def test_a_reply_divergence_is_reported_beside_the_first_record_difference():
    path = traces_with(lambda step: bool(step.records))[0]
    verdict = replay(read(path), SpoiledImpl(), "responses", path)
    assert verdict.divergence.part == "replies"
    first = verdict.first_records
    assert first is not None and first.step < verdict.divergence.step
    assert f"records: first differ at step {first.step}" in verdict.report()
    at_records = replay(read(path), SpoiledImpl(), "records", path)
    assert at_records.divergence.part == "records" and at_records.first_records is None


def test_a_shrink_keeps_the_first_record_difference_and_honours_declared_fields():
    from kraftspec.conformance.shrink import failing_against, shrink

    path = traces_with(lambda step: bool(step.records))[0]
    failing = failing_against(SpoiledImpl, "responses")
    original = failing(read(path))
    assert original is not None and original[1][0] == "records first differ at"
    smaller = shrink(read(path), failing)
    assert failing(smaller) == original and len(smaller.steps) <= len(read(path).steps)
    heartbeats = traces_with(heartbeat_v1_reply)[0]
    declared = failing_against(lambda: SubprocessAdapter([*SERVER, "--without-field", LAO, "--declare"]), "records")
    assert declared(read(heartbeats)) is None  # the declared field is not a divergence to shrink
