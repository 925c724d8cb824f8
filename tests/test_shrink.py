"""The shrinker (conformance/shrink.py): a long failing trace becomes a short one that fails the
same way, stays valid (it replays cleanly against the model) and is the same every time."""

import pytest

from kraftspec.conformance.adapters import ImplAdapter, ModelAdapter
from kraftspec.conformance.generate import walk
from kraftspec.conformance.replay import replay
from kraftspec.conformance.shrink import Shrinker, failing_against, fires, shrink, write_to_corpus
from kraftspec.conformance.trace import read


class BrokenImpl:
    """impl behind a wrapper that breaks one thing on purpose (a wrapper, not a subclass, so that
    every step goes through ``step``)."""

    name = "broken-impl"
    levels = ("responses", "state", "records")

    def __init__(self):
        self.impl = ImplAdapter()

    def start(self, config):
        self.impl.start(config)

    def step(self, event):
        return self.impl.step(event)

    def committed(self):
        return self.impl.committed()

    def close(self):
        self.impl.close()


class ForgetsPartitionsWhenALeaseLapses(BrokenImpl):
    """When a tick fences a broker, the partition changes are left out."""

    def step(self, event):
        outputs = super().step(event)
        if event["kind"] == "tick" and any(r["type"] == "FenceBrokerRecord" for r in outputs["records"]):
            outputs = {**outputs, "records": [r for r in outputs["records"] if r["type"] != "PartitionChangeRecord"]}
        return outputs


class CrashesOnDeleteTopics(BrokenImpl):
    """Raises on every DeleteTopics."""

    def step(self, event):
        if event.get("api") == "DeleteTopics":
            raise RuntimeError("boom")
        return super().step(event)


def first_failing_walk(failing, steps=300):
    for seed in range(40):
        trace = walk(seed, steps)
        if failing(trace) is not None:
            return trace
    raise AssertionError("no walk fails")  # pragma: no cover


def assert_valid(trace):
    """Recorded from the model: it replays cleanly against the model, and impl, at every level."""
    for level in ("responses", "state", "records"):
        for adapter in (ModelAdapter(), ImplAdapter()):
            verdict = replay(trace, adapter, level)
            assert verdict.passed, verdict.report()


def test_a_long_trace_shrinks_to_a_short_one_that_fails_the_same_way():
    failing = failing_against(ForgetsPartitionsWhenALeaseLapses)
    long = first_failing_walk(failing)
    how = failing(long)
    assert how[0] == "records" and how[1] == "tick" and "LEASE-8" in how[3]

    short = shrink(long, failing)
    assert len(short.steps) <= 8 < len(long.steps) // 10
    assert failing(short) == how
    verdict = replay(short, ForgetsPartitionsWhenALeaseLapses(), "records")
    assert verdict.divergence.step == len(short.steps) - 1  # nothing after the failure is kept
    assert_valid(short)
    # the tick that fences is moved back to the first moment the lease lapses (LEASE-8, DEC-7)
    assert short.steps[-1].event == {"kind": "tick", "now_ms": short.header.config["session_timeout_ms"]}
    assert short.header.generator["name"] == "shrink" and short.header.generator["params"]["original_name"] == long.name

    assert shrink(long, failing).lines() == short.lines()  # deterministic


def test_a_crash_of_the_system_under_test_is_a_failure_and_shrinks_too():
    failing = failing_against(CrashesOnDeleteTopics, "responses")
    long = first_failing_walk(failing, 200)
    how = failing(long)
    assert how[:3] == ("crash", "request", "DeleteTopics")
    short = shrink(long, failing)
    assert failing(short) == how
    assert len(short.steps) < len(long.steps) // 10
    assert short.steps[-1].event["api"] == "DeleteTopics" and short.steps[-1].event["body"]["TopicNames"]
    assert_valid(short)


def test_the_signature_decides_what_failing_the_same_way_means():
    """With a looser signature (only the part that differs), the shrinker may change the step's
    rules; with the default it may not."""
    strict = failing_against(ForgetsPartitionsWhenALeaseLapses)
    loose = failing_against(ForgetsPartitionsWhenALeaseLapses, signature=lambda d: d.part)
    long = first_failing_walk(strict)
    assert loose(shrink(long, loose)) == "records"
    assert strict(shrink(long, strict)) == strict(long)


def test_shrinking_for_a_rule_finds_a_short_trace_that_fires_it():
    long = walk(2, 200)
    assert fires("LEASE-8")(long) is True and fires("LOG-16")(long) is None
    short = shrink(long, fires("LEASE-8"))
    assert len(short.steps) <= 3 and "LEASE-8" in short.steps[-1].rules
    assert_valid(short)


def test_the_budget_bounds_the_recordings_and_the_result_still_fails():
    failing = failing_against(ForgetsPartitionsWhenALeaseLapses)
    long = first_failing_walk(failing)
    shrinker = Shrinker(long, failing, budget=12)
    partial = shrinker.run()
    assert shrinker.spent <= 12
    assert failing(partial) == failing(long) and len(partial.steps) <= len(long.steps)
    assert_valid(partial)


def test_a_trace_that_does_not_fail_cannot_be_shrunk():
    trace = walk(1, 30)
    with pytest.raises(ValueError, match="does not fail"):
        shrink(trace, failing_against(ImplAdapter))


def test_writing_to_a_corpus_names_the_file_by_content_and_indexes_it(tmp_path):
    trace = shrink(walk(2, 200), fires("LEASE-8"))
    path = write_to_corpus(trace, "a lease lapses", tmp_path)
    assert path.name == f"{trace.name}.jsonl"
    assert read(path).header.description == "a lease lapses" and read(path).name == trace.name
    index = (tmp_path / "README.md").read_text()
    assert trace.name in index and "a lease lapses" in index and "LEASE-8" in index
    with pytest.raises(ValueError, match="one-line"):
        write_to_corpus(trace, "two\nlines", tmp_path)


def test_progress_is_told_after_each_recording_and_ends_at_the_result():
    failing = failing_against(ForgetsPartitionsWhenALeaseLapses)
    long = first_failing_walk(failing)
    told = []
    short = shrink(long, failing, progress=lambda spent, budget, events: told.append((spent, budget, events)))
    assert told and told[-1][2] == len(short.steps) and all(budget == 2000 for _, budget, _ in told)
    assert [spent for spent, _, _ in told] == sorted(spent for spent, _, _ in told)  # never backwards
    assert told[0][2] <= len(long.steps)


def test_the_shrink_command_writes_into_the_working_directory_and_shows_progress(tmp_path, monkeypatch, capsys):
    """Without --out or --corpus the shrunk trace goes to ./kraftspec-shrunk, never into kraftspec's
    own folders; progress goes to standard error; --help says where the trace goes."""
    import sys

    from kraftspec.cli import main

    adapter = f"subprocess:{sys.executable} -m kraftspec.conformance.examples.impl_server --alter-reply-at 12"
    failing = walk(0, 30).write(tmp_path / "failing.jsonl")
    monkeypatch.chdir(tmp_path)
    assert main(["shrink", str(failing), "--adapter", adapter, "--level", "responses"]) == 0
    captured = capsys.readouterr()
    [written] = (tmp_path / "kraftspec-shrunk").glob("*.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["failing.jsonl", "kraftspec-shrunk"]  # nothing else
    assert f"-> {len(read(written).steps)} steps: kraftspec-shrunk/{written.name}" in captured.out
    assert "shrinking: " in captured.err and "candidates replayed" in captured.err
    # progress as it goes, not only the outcome: lines while it shrinks, the trace smaller at each, then the result
    going = [line for line in captured.err.splitlines() if line.startswith("shrinking: ") and "so far" in line]
    sizes = [int(line.split()[1]) for line in going]
    assert len(going) >= 2 and sizes == sorted(sizes, reverse=True) and sizes[0] == 30
    assert captured.err.splitlines()[-1].startswith(f"shrinking: {len(read(written).steps)} events, ")
    with pytest.raises(SystemExit):
        main(["shrink", "--help"])
    assert "kraftspec-shrunk" in capsys.readouterr().out


def test_the_shrink_meter_writes_a_line_as_the_trace_shrinks_in_a_log_without_flooding_it():
    """Off a terminal the meter writes at the first candidate and whenever the smallest failing trace
    has lost a quarter of the events last written (or after ``every`` seconds), then the outcome."""
    import io

    from kraftspec.traces import ShrinkMeter

    log = io.StringIO()
    meter = ShrinkMeter("shrinking", stream=log, every=3600)
    for spent, events in enumerate([1000, 990, 800, 750, 700, 600, 599, 100, 99, 98, 97, 10], start=1):
        meter(spent, 2000, events)
    meter.done()
    lines = log.getvalue().splitlines()
    assert [int(line.split()[1]) for line in lines[:-1]] == [1000, 750, 100, 10]
    assert all("so far" in line for line in lines[:-1])
    assert lines[-1].startswith("shrinking: 10 events, 12 candidates replayed (at most 2000), ")
