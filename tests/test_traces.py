"""Traces: the format of spec/traces.md, generation by the model, and replay against the model
and impl (conformance.trace, .generate, .replay)."""

import gc
import json
from importlib.resources import files

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftspec.conformance.adapters import ImplAdapter, ModelAdapter
from kraftspec.conformance.generate import walk
from kraftspec.conformance.replay import replay
from kraftspec.conformance.trace import TraceError, canonical, canonical_bytes, read

SCHEMA = json.loads(files("kraftspec.spec.schemas").joinpath("trace.schema.json").read_text())


def test_every_line_of_a_generated_trace_follows_the_published_schema():
    trace = walk(3, 80)
    for line in trace.lines():
        jsonschema.validate(json.loads(line), SCHEMA)


def test_the_published_schema_names_every_profile_and_a_kafka_trace_follows_it():
    from kraftspec.model import Config
    from kraftspec.spec.profiles import DEFAULT_PROFILE, profile_names

    profile = SCHEMA["$defs"]["header"]["properties"]["config"]["properties"]["profile"]
    assert tuple(profile["enum"]) == profile_names() and profile["default"] == DEFAULT_PROFILE
    assert "profile" not in SCHEMA["$defs"]["header"]["properties"]["config"]["required"]  # older traces lack it
    for line in walk(3, 40, config=Config.for_profile("kafka")).lines():
        jsonschema.validate(json.loads(line), SCHEMA)


def test_the_same_seed_gives_the_same_trace_and_name_and_the_description_does_not_rename_it():
    a, b = walk(11, 60), walk(11, 60)
    assert a.lines() == b.lines() and a.name == b.name
    assert a.with_description("a regression").name == a.name
    assert walk(12, 60).name != a.name


def test_a_trace_evolved_from_a_named_one_is_named_and_written_from_its_own_steps():
    from attrs import evolve

    from kraftspec.conformance.trace import Trace

    trace = walk(11, 60)
    assert trace.name  # fills the cache of step lines and name
    shorter = evolve(trace, steps=trace.steps[:-1])
    fresh = Trace(trace.header, trace.steps[:-1])
    assert shorter.name == fresh.name != trace.name
    assert shorter.lines() == fresh.lines() and shorter.lines()[1:] == trace.lines()[1:-1]


def test_a_trace_written_and_read_back_is_the_same(tmp_path):
    trace = walk(5, 40)
    path = trace.write(tmp_path)
    assert path.name == f"{trace.name}.jsonl"
    assert read(path) == trace


@pytest.mark.parametrize("seed", range(12))
def test_impl_and_the_model_replay_generated_walks_at_every_level(seed):
    trace = walk(seed, 120)
    for level in ("responses", "state", "records"):
        for adapter in (ModelAdapter(), ImplAdapter()):
            verdict = replay(trace, adapter, level)
            assert verdict.passed, verdict.report()


@pytest.mark.parametrize("profile", ["kip-631", "kafka"])
def test_the_committed_state_built_part_by_part_is_the_snapshots_and_reuses_what_did_not_change(profile):
    """LOG-11: a recorded trace's committed state, converted part by part with the forms of what
    did not change reused, is the minimal records of the snapshot, in its order; after a failover,
    which rebuilds every part, the forms are those of before."""
    from kraftspec.conformance.adapters import CommittedForms, committed_of
    from kraftspec.conformance.generate import FaultySimulation
    from kraftspec.model import Config, Failover

    simulation = FaultySimulation(7, 4, 3, frozenset({"failover", "commit-delay"}), Config.for_profile(profile))
    forms = CommittedForms()
    previous: list = []
    reused = failovers = most = 0
    for _note, event, result in simulation.steps(200):
        built = forms.of(result.state)
        most = max(most, len(built))
        assert built == committed_of(result.state)
        same = sum(any(form is old for old in previous) for form in built)
        if isinstance(event, Failover) and built == previous:
            assert same == len(built)  # every part rebuilt, none converted again
            failovers += 1
        reused += same
        previous = built
    assert reused > 0 and failovers > 0 and most > 6  # the walk went on to brokers, a topic and its partitions


def test_a_divergence_is_reported_with_step_event_diff_rules_and_a_command(tmp_path):
    trace = walk(2, 60)
    lines = trace.lines()
    # make the trace expect something else of the first step that has a reply
    for i, line in enumerate(lines[1:], start=1):
        step = json.loads(line)
        if step["replies"]:
            step["replies"][0]["body"]["ErrorCode"] = 99
            lines[i] = json.dumps(step)
            break
    path = tmp_path / "edited.jsonl"
    path.write_text("\n".join(lines) + "\n")
    verdict = replay(read(path), ImplAdapter(), "responses", path)
    assert not verdict.passed
    report = verdict.report()
    assert f"at step {step['n']} " in report and '"ErrorCode": 99' in report and "kraftspec replay" in report
    assert str(path) in verdict.repro()


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda lines: ["{not json"] + lines[1:], ":1: (line): not JSON"),
        (lambda lines: [lines[0].replace('"format_version":1', '"format_version":7')] + lines[1:], ":1: format_version"),
        (lambda lines: lines[:1] + [lines[1].replace('"kind":"request"', '"kind":"teleport"')] + lines[2:], ":2: event.kind: unknown event kind 'teleport'"),
        (lambda lines: lines[:1] + [lines[1].replace('"seq":', '"sequence":')] + lines[2:], ""),
        (lambda lines: lines[:-1], "announces"),
        (lambda lines: lines[:1] + [json.dumps({k: v for k, v in json.loads(lines[1]).items() if k != "replies"})] + lines[2:], ":2: replies: missing"),
    ],
    ids=["broken-json", "wrong-format-version", "unknown-event-kind", "renamed-field", "truncated", "missing-field"],
)
def test_malformed_traces_are_refused_naming_file_line_and_field(tmp_path, edit, where):
    lines = walk(4, 10).lines()
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(edit(lines)) + "\n")
    with pytest.raises(TraceError) as caught:
        read(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and where in message


def test_an_adapter_that_changes_step_is_replayed_through_it():
    """The in-process fast path applies only to impl's own step(); a wrapper that alters replies is seen."""

    class Lying(ImplAdapter):
        def step(self, event):
            outputs = super().step(event)
            for reply in outputs["replies"]:
                reply["body"]["ErrorCode"] = 42
            return outputs

    trace = walk(6, 60)
    assert not replay(trace, Lying(), "responses").passed


# The values a trace line holds: objects, arrays, strings (any character a UTF-8 file can hold,
# control characters and non-ASCII ones included), integers of any size, booleans and null.
TRACE_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**80), max_value=2**80)
    | st.text(st.characters(exclude_categories=("Cs",))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@given(TRACE_VALUES)
def test_canonical_json_is_the_standard_librarys_sorted_compact_form_byte_for_byte(value):
    """Lines are written (and names hashed) through a fast encoder; the bytes are those of the
    standard library's json with sorted keys, no spaces and non-ASCII kept, which spec/traces.md
    describes and which every stored trace was first written with."""
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical(value) == expected
    assert canonical_bytes(value) == expected.encode("utf-8")


def test_a_walks_lines_and_name_do_not_depend_on_the_encoder():
    """The stored lines of a walk, and the name hashed from them, are what the standard library
    would write."""
    import hashlib

    trace = walk(11, 120)
    header = trace.header.to_json(len(trace.steps))
    del header["description"]
    header["config"].pop("profile", None)
    slow = [json.dumps(s.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False) for s in trace.steps]
    assert trace.step_lines() == slow
    digest = hashlib.sha256(json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
    for line in slow:
        digest.update(b"\n" + line.encode())
    assert trace.name == digest.hexdigest()[:16]


def test_a_replay_in_process_pauses_the_cyclic_collector_and_gives_it_back_as_it_found_it():
    trace = walk(5, 200)  # enough allocation to set off collections, were the collector on
    replaying, during = [], []

    class Watched(ImplAdapter):
        def replay_native(self, *arguments):
            replaying.append(True)
            try:
                return super().replay_native(*arguments)
            finally:
                replaying.pop()

    def watch(phase, info):
        if phase == "start" and replaying:
            during.append(info["generation"])

    gc.callbacks.append(watch)
    try:
        for was_enabled in (True, False):
            (gc.enable if was_enabled else gc.disable)()
            for level in ("responses", "state", "records"):
                assert replay(trace, Watched(), level).passed
            assert during == []  # no collection while the steps were replayed
            assert gc.isenabled() == was_enabled
    finally:
        gc.callbacks.remove(watch)
        gc.enable()
