"""Malformed traces, fuzz style: a real corpus trace with one thing wrong, ~60 ways.

Every mutation must be refused by ``kraftspec replay`` and ``kraftspec coverage`` alike (one
reader serves both) with exit status 2 and a single line naming the file, the line and the
field, never a Python traceback (spec/traces.md, "Checks on reading")."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from kraftspec.cli import main
from kraftspec.conformance.trace import TraceError, parse, read

CORPUS = Path(__file__).resolve().parent.parent / "conformance" / "corpus"
NEEDED = ('"api":"BrokerRegistration"', '"api":"BrokerHeartbeat"', '"api":"CreateTopics"', '"api":"AlterIsr"',
          '"api":"AlterPartitionReassignments"', '"kind":"tick"', '"kind":"failover"', '"type":"PartitionRecord"')


def source_trace() -> Path:
    """The shortest corpus trace that has every part the mutations change (a realistic walk)."""
    fitting = [p for p in sorted(CORPUS.glob("*.jsonl")) if all(part in p.read_text(encoding="utf-8") for part in NEEDED)]
    return min(fitting, key=lambda p: (p.stat().st_size, p.name))


SOURCE = source_trace()
LINES = SOURCE.read_text(encoding="utf-8").splitlines()
STEPS = [json.loads(line) for line in LINES[1:]]
HEADER = json.loads(LINES[0])


def first(predicate) -> int:
    """The index in LINES of the first step line that matches."""
    return next(i for i, step in enumerate(STEPS, start=1) if predicate(step))


def request(api: str):
    return lambda step: step["event"].get("api") == api


def kind(name: str):
    return lambda step: step["event"]["kind"] == name


def after_a_tick(step) -> bool:
    """A tick later than the trace's first."""
    earliest = min(s["event"]["now_ms"] for s in STEPS if s["event"]["kind"] == "tick")
    return step["event"]["kind"] == "tick" and step["event"]["now_ms"] > earliest


def has(part: str, record_type: str | None = None):
    def predicate(step) -> bool:
        items = step.get(part) or []
        return any(record_type is None or item.get("type") == record_type for item in items)

    return predicate


def edit_step(predicate, change):
    """A mutation: ``change`` applied to a copy of the first step that matches; (text, line)."""

    def mutate() -> tuple[bytes, int]:
        index = first(predicate)
        step = copy.deepcopy(STEPS[index - 1])
        change(step)
        lines = list(LINES)
        lines[index] = json.dumps(step, ensure_ascii=False) if not isinstance(step, str) else step
        return "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n", index + 1

    return mutate


def edit_header(change):
    def mutate() -> tuple[bytes, int]:
        header = copy.deepcopy(HEADER)
        change(header)
        return ("\n".join([json.dumps(header), *LINES[1:]]) + "\n").encode(), 1

    return mutate


def raw(make):
    """A mutation of the file's bytes: ``make(lines) -> (bytes, line)``."""
    return lambda: make([line.encode() for line in LINES])


def setter(*path_and_value):
    *path, value = path_and_value

    def change(obj):
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value

    return change


def deleter(*path):
    def change(obj):
        for key in path[:-1]:
            obj = obj[key]
        del obj[path[-1]]

    return change


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def replace_text(old: str, new: str, predicate):
    """Replace text in the raw line of the first matching step (for what json.dumps cannot write)."""

    def mutate() -> tuple[bytes, int]:
        index = first(predicate)
        lines = list(LINES)
        assert old in lines[index]
        lines[index] = lines[index].replace(old, new, 1)
        return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"), index + 1

    return mutate


REGISTRATION, HEARTBEAT = request("BrokerRegistration"), request("BrokerHeartbeat")
CREATE, ALTER_ISR = request("CreateTopics"), request("AlterIsr")
REASSIGN = request("AlterPartitionReassignments")

MUTATIONS = {
    # the file as a whole
    "empty-file": (lambda: (b"", 1), "(file)"),
    "header-only": (raw(lambda lines: (lines[0] + b"\n", 1)), "steps"),
    "truncated-line": (raw(lambda lines: (b"\n".join(lines[:10] + [lines[10][:57]]) + b"\n", 11)), "(line)"),
    "truncated-file": (raw(lambda lines: (b"\n".join(lines[:-1]) + b"\n", 1)),
                       f"steps: the header announces {len(STEPS)} steps, the file has {len(STEPS) - 1}"),
    "non-utf8-bytes": (raw(lambda lines: (b"\n".join(lines[:4] + [lines[4][:30] + b"\xff\xfe" + lines[4][30:]] + lines[5:]), 5)), "(line)"),
    "not-an-object": (raw(lambda lines: (b"\n".join(lines[:2] + [b"[1, 2]"] + lines[3:]), 3)), "(line)"),
    "deep-nesting": (raw(lambda lines: (b"\n".join(lines[:2] + [nested(100_000).encode()] + lines[3:]), 3)), "(line)"),
    "deep-nesting-in-generator": (edit_header(setter("generator", "params", json.loads(nested(900)))), "generator"),
    "huge-integer": (replace_text('"offset":', '"offset":' + "9" * 5000 + ",\"x\":", kind("commit")), "(line)"),
    "nan": (replace_text('"now_ms":', '"now_ms":NaN,"x":', kind("tick")), "(line)"),
    # the header
    "session-not-longer-than-heartbeat": (edit_header(setter("config", "session_timeout_ms", 3000)), "config"),
    "heartbeat-interval-zero": (edit_header(setter("config", "heartbeat_interval_ms", 0)), "config.heartbeat_interval_ms"),
    "timing-a-string": (edit_header(setter("config", "session_timeout_ms", "18000")), "config.session_timeout_ms"),
    "empty-cluster-id": (edit_header(setter("config", "cluster_id", "")), "config.cluster_id"),
    "feature-min-above-max": (edit_header(setter("config", "finalized_features", [["metadata.format", 2, 1]])), "config: finalized feature metadata.format"),
    "feature-level-a-boolean": (edit_header(setter("config", "finalized_features", [["metadata.format", True, 1]])), "config.finalized_features[0]"),
    "config-unknown-field": (edit_header(setter("config", "controller_quorum", 3)), "config.controller_quorum"),
    "profile-unknown": (edit_header(setter("config", "profile", "kip-632")),
                        'config.profile: unknown profile "kip-632"; the profiles are kip-631, kafka'),
    "profile-a-number": (edit_header(setter("config", "profile", 7)), "config.profile: expected a string, got 7"),
    "format-version-a-string": (edit_header(setter("format_version", "1")), "format_version"),
    "steps-negative": (edit_header(setter("steps", -1)), "steps"),
    "seed-a-string": (edit_header(setter("seed", "7")), "seed"),
    # request bodies, checked against their schema
    "broker-id-a-string": (edit_step(REGISTRATION, setter("event", "body", "BrokerId", "1")), 'event.body.BrokerId: expected int32, got "1"'),
    "broker-id-null": (edit_step(REGISTRATION, setter("event", "body", "BrokerId", None)), "event.body.BrokerId"),
    "broker-id-an-object": (edit_step(REGISTRATION, setter("event", "body", "BrokerId", {"id": 1})), "event.body.BrokerId"),
    "broker-id-a-boolean": (edit_step(HEARTBEAT, setter("event", "body", "BrokerId", True)), "event.body.BrokerId: expected int32, got true"),
    "broker-id-a-float": (edit_step(HEARTBEAT, setter("event", "body", "BrokerId", 1.0)), "event.body.BrokerId"),
    "int32-out-of-range": (edit_step(HEARTBEAT, setter("event", "body", "BrokerId", 2**31)), "event.body.BrokerId"),
    "int64-out-of-range": (edit_step(HEARTBEAT, setter("event", "body", "CurrentMetadataOffset", 2**63)), "event.body.CurrentMetadataOffset"),
    "int16-out-of-range": (edit_step(REGISTRATION, setter("event", "body", "Features", 0, "MinSupportedVersion", 40000)),
                           "event.body.Features[0].MinSupportedVersion"),
    "uint16-negative": (edit_step(REGISTRATION, setter("event", "body", "Listeners", 0, "Port", -1)), "event.body.Listeners[0].Port"),
    "bad-uuid": (edit_step(REGISTRATION, setter("event", "body", "IncarnationId", "not-a-uuid")), "event.body.IncarnationId"),
    "uuid-a-number": (edit_step(CREATE, setter("event", "body", "Topics", 0, "TopicId", 7)), "event.body.Topics[0].TopicId"),
    "non-nullable-string-null": (edit_step(REGISTRATION, setter("event", "body", "ClusterId", None)), "event.body.ClusterId"),
    "nullable-string-a-number": (edit_step(REGISTRATION, setter("event", "body", "Rack", 5)), "event.body.Rack"),
    "array-an-object": (edit_step(CREATE, setter("event", "body", "Topics", {"Name": "x"})), "event.body.Topics"),
    "nested-element-a-string": (edit_step(ALTER_ISR, setter("event", "body", "Topics", 0, "Partitions", 0, "NewIsr", 0, "2")),
                                'event.body.Topics[0].Partitions[0].NewIsr[0]: expected int32, got "2"'),
    "nested-struct-null": (edit_step(REASSIGN, setter("event", "body", "Topics", 0, "Partitions", 0, None)), "event.body.Topics[0].Partitions[0]"),
    "missing-body-field": (edit_step(HEARTBEAT, deleter("event", "body", "BrokerEpoch")), "event.body.BrokerEpoch: missing"),
    "unknown-body-field": (edit_step(HEARTBEAT, setter("event", "body", "Colour", "blue")), "event.body.Colour"),
    "lone-surrogate": (replace_text('"Name":"orders"', '"Name":"\\ud800"', CREATE), "event.body.Topics[0].Name"),
    "body-a-list": (edit_step(HEARTBEAT, setter("event", "body", [])), "event.body"),
    "unknown-api": (edit_step(HEARTBEAT, setter("event", "api", "Teleport")), "event.api"),
    "version-negative": (edit_step(HEARTBEAT, setter("event", "version", -1)), "event.version"),
    "version-a-boolean": (edit_step(HEARTBEAT, setter("event", "version", False)), "event.version"),
    "event-unknown-field": (edit_step(kind("failover"), setter("event", "urgent", True)), "event.urgent"),
    # time, offsets and sequence numbers that no run can produce
    "tick-a-string": (edit_step(kind("tick"), setter("event", "now_ms", "6000")), "event.now_ms"),
    "clock-backwards": (edit_step(after_a_tick, setter("event", "now_ms", 5)), "event.now_ms"),
    "tick-negative": (edit_step(kind("tick"), setter("event", "now_ms", -1)), "event.now_ms"),
    "commit-negative": (edit_step(kind("commit"), setter("event", "offset", -1)), "event.offset"),
    "commit-beyond-log-end": (edit_step(kind("commit"), setter("event", "offset", 10_000)), "event.offset"),
    "seq-out-of-order": (edit_step(lambda s: (s["seq"] or 0) > 3, lambda s: s.update(seq=s["seq"] + 1)), "seq"),
    "seq-on-a-tick": (edit_step(kind("tick"), setter("seq", 4)), "seq"),
    "request-without-seq": (edit_step(HEARTBEAT, setter("seq", None)), "seq"),
    "step-number-wrong": (edit_step(kind("tick"), lambda s: s.update(n=s["n"] + 1)), "n"),
    "step-a-number": (raw(lambda lines: (b"\n".join(lines[:3] + [b"5"] + lines[4:]), 4)), "(line)"),
    "step-without-type": (edit_step(kind("tick"), lambda s: s.clear() or s.update(x=1)), "type"),
    # replies
    "reply-error-code-a-string": (edit_step(has("replies"), setter("replies", 0, "body", "ErrorCode", "0")), "replies[0].body.ErrorCode"),
    "reply-to-no-request": (edit_step(has("replies"), setter("replies", 0, "seq", 9999)), "replies[0].seq"),
    "reply-of-another-api": (edit_step(has("replies"), setter("replies", 0, "api", "DeleteTopics")), "replies[0].api"),
    "reply-version-unknown": (edit_step(has("replies"), setter("replies", 0, "version", 7)), "replies[0].version"),
    # records and the committed state
    "unknown-record-type": (edit_step(has("records"), setter("records", 0, "type", "TeleportRecord")), "records[0].type"),
    "record-field-a-string": (edit_step(has("records", "PartitionRecord"),
                                        lambda s: s["records"][1]["data"]["Replicas"].__setitem__(1, "2")),
                              'records[1].data.Replicas[1]: expected int32, got "2"'),
    "record-offset-skips": (edit_step(has("records"), setter("records", 0, "offset", 500)), "records[0].offset"),
    "record-version-unknown": (edit_step(has("records"), setter("records", 0, "version", 3)), "records[0].version"),
    "record-frame-not-hex": (edit_step(has("records"), setter("records", 0, "frame", "zz")), "records[0].frame"),
    "record-frame-not-a-record": (edit_step(has("records"), setter("records", 0, "frame", "00ff")),
                                  "records[0].frame: the bytes are not a record"),
    "record-frame-contradicts-data": (edit_step(has("records", "PartitionRecord"),
                                                lambda s: s["records"][1]["data"].__setitem__("Leader", 7)),
                                      "records[1].frame: the bytes are a PartitionRecord at version 0 with"),
    "record-unknown-field": (edit_step(has("records"), setter("records", 0, "when", 1)), "records[0].when"),
    "committed-unknown-type": (edit_step(has("committed"), setter("committed", 0, "type", "Nothing")), "committed[0].type"),
    "committed-missing-field": (edit_step(has("committed"), deleter("committed", 0, "data", "Name")), "committed[0].data.Name"),
    "rule-not-an-id": (edit_step(has("rules"), setter("rules", 0, "fired")), "rules[0]"),
    "rejected-by-a-rule-that-did-not-fire": (edit_step(kind("tick"), setter("rejected_by", ["REG-4"])), "rejected_by[0]"),
}


@pytest.fixture(scope="module")
def corpus_trace_is_valid():
    read(SOURCE)  # the mutations start from a trace the reader accepts


@pytest.mark.parametrize("command", ["replay", "coverage"])
@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_mutated_trace_is_refused_with_its_file_line_and_field(tmp_path, capsys, corpus_trace_is_valid, command, name):
    make, field = MUTATIONS[name]
    text, line = make()
    path = tmp_path / "t.jsonl"
    path.write_bytes(text)
    argv = [command, str(path)] + (["--adapter", "impl"] if command == "replay" else [])
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert code == 2, (out, err)
    assert err.count("\n") == 1, err
    assert err.startswith(f"kraftspec: error: {path}:{line}: "), err
    assert field in err, err


def test_there_are_about_fifty_mutations():
    assert len(MUTATIONS) >= 50


def test_a_line_separator_inside_a_string_does_not_split_the_line(tmp_path):
    """Canonical lines keep non-ASCII text as is, U+2028 included: lines end at newlines only."""
    from kraftspec.conformance.generate import walk

    trace = walk(3, 10).with_description("one\u2028two\u0085three")
    path = trace.write(tmp_path)
    assert read(path) == trace


def test_an_error_during_replay_names_the_line(tmp_path):
    """A value the reader accepts but the system under test cannot handle stops the replay with
    the trace's file and line."""
    from kraftspec.conformance.adapters import ImplAdapter
    from kraftspec.conformance.replay import replay

    class Broken(ImplAdapter):
        def step(self, event):
            if event["kind"] == "tick":
                raise ValueError("the clock broke")
            return super().step(event)

    trace = read(SOURCE)
    index = first(kind("tick"))
    with pytest.raises(TraceError) as caught:
        replay(trace, Broken(), "records", SOURCE)
    assert str(caught.value).startswith(f"{SOURCE}:{index + 1}: ") and "the clock broke" in str(caught.value)


def test_an_error_in_impls_own_fast_replay_names_the_line_too(monkeypatch):
    """impl's in-process fast path does not know lines: a ValueError there replays the trace the
    generic way, which names the step."""
    from kraftspec.conformance.adapters import ImplAdapter
    from kraftspec.conformance.replay import replay
    from kraftspec.impl.controller import Controller

    def broken_tick(self, now_ms):
        raise ValueError("the clock broke")

    monkeypatch.setattr(Controller, "tick", broken_tick)
    index = first(kind("tick"))
    with pytest.raises(TraceError) as caught:
        replay(read(SOURCE), ImplAdapter(), "records", SOURCE)
    assert str(caught.value).startswith(f"{SOURCE}:{index + 1}: event: step {index - 1} (tick): the clock broke")


def test_every_corpus_trace_and_generated_walks_pass_the_checks():
    """The checks refuse no trace the model records (walks with every fault included)."""
    from kraftspec.conformance.generate import FAULTS, walk

    for path in sorted(CORPUS.glob("*.jsonl")):
        read(path)
    for seed in range(40):
        trace = walk(seed, 120, faults=FAULTS if seed % 2 else None)
        assert parse(trace.lines(), f"walk-{seed}") == trace


# ---- the schema checker, on every schema -------------------------------------------------------

from kraftspec.conformance.jsonform import FormError, check_form, in_versions  # noqa: E402
from kraftspec.spec.schemas import INT_RANGES, default_value, record_schemas, rpc_schemas  # noqa: E402

WRONG = {"bool": 0, "string": 7, "uuid": "AAAA", "bytes": "a", "float64": "1.5"}


def valid_form(fields, version):
    """A value of every field of ``version``: defaults, and one element in each array of structs."""
    out = {}
    for f in fields:
        if not in_versions(f["versions"], version):
            continue
        kind = f["type"]
        if kind.startswith("[]"):
            out[f["name"]] = [valid_form(f["fields"], version)] if "fields" in f else []
        elif kind == "uuid":
            out[f["name"]] = "AAAAAAAAAAAAAAAAAAAAAA"
        elif kind == "bytes":
            out[f["name"]] = "AAEC"
        else:
            value = default_value(f)
            out[f["name"]] = "" if value is None and kind == "string" else value
    return out


def every_schema():
    for schema in [*record_schemas().values(), *rpc_schemas().values()]:
        low, _, high = schema["validVersions"].partition("-")
        for version in range(int(low), int(high or low) + 1):
            yield schema["name"], version, schema["fields"]


def leaves(fields, version, prefix=""):
    """(path, field) of every scalar field, through the first element of arrays of structs."""
    for f in fields:
        if not in_versions(f["versions"], version):
            continue
        if f["type"].startswith("[]") and "fields" in f:
            yield from leaves(f["fields"], version, f"{prefix}{f['name']}[0].")
        else:
            yield f"{prefix}{f['name']}", f


def set_at(data, path, value):
    *parents, last = path.replace("[0]", ".0").split(".")
    for part in parents:
        data = data[int(part)] if part.isdigit() else data[part]
    data[last] = value


def test_the_checker_accepts_the_form_of_every_schema_and_names_every_wrong_field():
    """Data-driven from the schema JSON: for every record and message at every version, each field
    given a value of the wrong type (a boolean for an integer, among others) or one past its range
    is refused naming that field, and null is refused unless the field is nullable."""
    checked = 0
    for name, version, fields in every_schema():
        check_form(valid_form(fields, version), name, version)
        for path, field in leaves(fields, version):
            kind = field["type"]
            wrong = [True, "1", 1.0] if kind in INT_RANGES else [{}] if kind.startswith("[]") else [WRONG[kind]]
            if kind in INT_RANGES:
                wrong.append(INT_RANGES[kind][1] + 1)
            nullable = "nullableVersions" in field and in_versions(field["nullableVersions"], version)
            for value in wrong + ([] if nullable else [None]):
                data = valid_form(fields, version)
                set_at(data, path, value)
                with pytest.raises(FormError) as caught:
                    check_form(data, name, version)
                assert caught.value.path == path, (name, path, value, str(caught.value))
                checked += 1
            if kind in INT_RANGES:
                for edge in INT_RANGES[kind]:
                    data = valid_form(fields, version)
                    set_at(data, path, edge)
                    check_form(data, name, version)
    assert checked > 500


def test_an_unknown_and_a_missing_field_are_named_at_any_depth():
    data = valid_form(rpc_schemas()["AlterIsrRequest"]["fields"], 0)
    data["Topics"][0]["Partitions"][0]["Colour"] = "blue"
    with pytest.raises(FormError, match=r"^Topics\[0\]\.Partitions\[0\]\.Colour: unknown field"):
        check_form(data, "AlterIsrRequest")
    del data["Topics"][0]["Partitions"][0]["Colour"], data["Topics"][0]["Partitions"][0]["NewIsr"]
    with pytest.raises(FormError, match=r"^Topics\[0\]\.Partitions\[0\]\.NewIsr: missing"):
        check_form(data, "AlterIsrRequest")


# ---- the profile in the header -------------------------------------------------------------------


def header_lines(config_change, lines=LINES) -> list[str]:
    header = json.loads(lines[0])
    config_change(header["config"])
    return [json.dumps(header), *lines[1:]]


def test_a_header_without_a_profile_reads_as_kip_631_and_keeps_its_name():
    """Traces written before profiles (their headers name none) still read, as kip-631 traces, and
    their names do not change when they are written again with the profile named."""
    from kraftspec.conformance.adapters import ModelAdapter, model_config
    from kraftspec.conformance.generate import walk
    from kraftspec.conformance.replay import replay

    recorded = walk(9, 60)
    assert json.loads(recorded.lines()[0])["config"]["profile"] == "kip-631"  # written, it names its profile
    without = parse(header_lines(lambda config: config.pop("profile"), recorded.lines()), "old.jsonl")
    assert without.header.config["profile"] == "kip-631" and model_config(without.header.config).profile == "kip-631"
    assert without == recorded and without.name == recorded.name and without.lines() == recorded.lines()
    assert replay(without, ModelAdapter(), "records").passed
    corpus = parse(header_lines(lambda config: config.pop("profile", None)), "corpus.jsonl")  # a corpus trace, the same way
    assert corpus.header.config["profile"] == "kip-631" and corpus.name == SOURCE.stem


def test_a_trace_of_another_profile_has_another_name():
    """The same header under another profile names another trace (the steps are left out: a
    profile's records are its own, DEC-22)."""
    header = json.loads(LINES[0])
    header["steps"] = 0
    empty = [json.dumps(header)]
    kip = parse(header_lines(lambda config: config.update(profile="kip-631"), empty), "kip.jsonl")
    kafka = parse(header_lines(lambda config: config.update(profile="kafka"), empty), "kafka.jsonl")
    assert kafka.header.config["profile"] == "kafka" and kafka.name != kip.name
