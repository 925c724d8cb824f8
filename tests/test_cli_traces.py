"""The conformance commands: generate, replay (with JUnit XML), coverage, shrink; bad input is
refused with file, line and field, and nothing is replayed from a broken file."""

import io
import json
import xml.etree.ElementTree as ET
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from kraftspec.cli import main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def test_generate_then_replay_with_junit(tmp_path):
    code, out, _ = run("generate", "--seeds", "0:3", "--steps", "60", "--out", str(tmp_path / "t"))
    assert code == 0 and len(list((tmp_path / "t").glob("*.jsonl"))) == 3
    code, out, _ = run("replay", str(tmp_path / "t"), "--adapter", "impl", "--level", "records", "--junit", str(tmp_path / "j.xml"))
    assert code == 0 and "3 of 3 traces passed" in out
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "0"


def test_generate_exhaustive_writes_a_trace_per_leaf_that_impl_replays(tmp_path):
    code, out, _ = run("generate", "--generator", "exhaustive", "--brokers", "2", "--partitions", "1", "--depth", "2",
                       "--out", str(tmp_path))
    written = list(tmp_path.glob("*.jsonl"))
    assert code == 0 and f"{len(written)} traces" in out and len(written) > 20
    code, out, _ = run("replay", str(tmp_path), "--quiet")
    assert code == 0 and f"{len(written)} of {len(written)} traces passed" in out


def test_generate_targeted_writes_a_trace_per_rule_and_names_the_rules_it_cannot_reach(tmp_path):
    code, out, _ = run("generate", "--generator", "targeted", "--out", str(tmp_path))
    written = list(tmp_path.glob("*.jsonl"))
    assert code == 0 and f"{len(written)} traces written" in out and len(written) > 20
    assert "ISR-4, " in out and "no trace for LOG-16: " in out  # each trace's rule, and why a rule has none
    code, out, _ = run("replay", str(tmp_path), "--quiet")
    assert code == 0 and f"{len(written)} of {len(written)} traces passed" in out


def test_a_divergence_fails_the_run_and_the_junit_report(tmp_path):
    run("generate", "--seeds", "4", "--steps", "60", "--out", str(tmp_path))
    [path] = tmp_path.glob("*.jsonl")
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines[1:], start=1):
        step = json.loads(line)
        if step["replies"]:
            step["replies"][0]["body"]["ErrorCode"] = 7
            lines[i] = json.dumps(step)
            break
    path.write_text("\n".join(lines) + "\n")
    code, out, _ = run("replay", str(path), "--junit", str(tmp_path / "j.xml"))
    assert code == 1 and "FAIL" in out and "repro:   kraftspec replay" in out
    assert ET.parse(tmp_path / "j.xml").getroot().find("testsuite").get("failures") == "1"


def test_a_broken_trace_is_refused_before_anything_is_replayed(tmp_path):
    run("generate", "--seeds", "1", "--steps", "20", "--out", str(tmp_path))
    (tmp_path / "zz-broken.jsonl").write_text('{"type":"header","format":"kraftspec-trace","format_version":1}\n')
    code, out, err = run("replay", str(tmp_path))
    assert code == 2 and "zz-broken.jsonl:1: config: missing" in err and "PASS" not in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["replay", "conformance/corpus", "--adapter", "telepathy"], "unknown adapter 'telepathy'"),
        (["replay", "no/such/file.jsonl"], "no/such/file.jsonl:0: (file): no such file"),
        (["generate", "--seeds", "x:y", "--out", "o"], "--seeds must be N or FIRST:END"),
        (["generate", "--faults", "meteor", "--out", "o"], "unknown fault 'meteor'"),
        (["generate", "--generator", "exhaustive", "--brokers", "5", "--out", "o"], "--brokers must be an integer from 1 to 3, got 5"),
    ],
)
def test_bad_input_is_answered_with_a_message_not_a_traceback(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the commands' relative paths, from a folder of the test's own
    code, _, err = run(*argv)
    assert code == 2 and message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # a refused command makes no output folder


def test_an_output_folder_that_cannot_be_made_is_named_in_one_line(tmp_path):
    (tmp_path / "taken").write_text("a file, not a folder\n")
    for generator in ("walk", "exhaustive"):
        code, _, err = run("generate", "--generator", generator, "--seeds", "1", "--depth", "1", "--out", str(tmp_path / "taken"))
        assert code == 2 and err == f"kraftspec: error: --out {tmp_path / 'taken'}: cannot make the folder (File exists)\n", generator


def test_coverage_of_the_corpus(tmp_path):
    corpus = Path(__file__).resolve().parent.parent / "conformance" / "corpus"
    code, out, _ = run("coverage", str(corpus), "--json", str(tmp_path / "c.json"))
    assert code == 0 and "LEASE-8" in out
    report = json.loads((tmp_path / "c.json").read_text())
    assert report


def test_shrink_writes_a_shorter_trace_that_still_fails(tmp_path):
    run("generate", "--seeds", "5", "--steps", "80", "--out", str(tmp_path))
    [path] = tmp_path.glob("*.jsonl")
    lines = path.read_text().splitlines()
    for i in range(len(lines) - 1, 0, -1):  # change the last reply the trace expects
        step = json.loads(lines[i])
        if step["replies"]:
            step["replies"][-1]["body"]["ErrorCode"] = 7
            lines[i] = json.dumps(step)
            break
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run("shrink", str(path), "--corpus", str(tmp_path / "corpus"))
    assert code == 0, err
    assert "steps ->" in out


def test_shrink_refuses_a_trace_the_adapter_does_not_support(tmp_path, monkeypatch):
    """A replay the adapter declares it cannot do (here: a level it does not report) fails without
    diverging: there is nothing to shrink, which is said, rather than a crash on the missing divergence."""
    from kraftspec.conformance import adapters

    run("generate", "--seeds", "3", "--steps", "20", "--out", str(tmp_path))
    [path] = tmp_path.glob("*.jsonl")
    monkeypatch.setattr(adapters.ImplAdapter, "levels", ("responses",))
    code, out, err = run("shrink", str(path), "--adapter", "impl", "--level", "records")
    assert (code, out) == (2, "")
    assert err == f"kraftspec: error: {path}: impl does not support level records (it reports responses): nothing to shrink\n"


# ---- behaviour profiles ------------------------------------------------------------------------


def header_of(path: Path) -> dict:
    return json.loads(path.read_text().split("\n", 1)[0])


def test_a_generated_trace_names_its_profile_and_kafka_traces_have_kafkas_timings(tmp_path):
    code, _, err = run("generate", "--seeds", "0:2", "--steps", "30", "--out", str(tmp_path / "default"))
    assert code == 0, err
    for path in (tmp_path / "default").glob("*.jsonl"):
        config = header_of(path)["config"]
        assert (config["profile"], config["heartbeat_interval_ms"], config["session_timeout_ms"]) == ("kip-631", 3000, 18000)
    code, _, err = run("generate", "--seeds", "0:2", "--steps", "30", "--profile", "kafka", "--out", str(tmp_path / "kafka"))
    assert code == 0, err
    written = list((tmp_path / "kafka").glob("*.jsonl"))
    assert len(written) == 2
    for path in written:
        config = header_of(path)["config"]
        assert (config["profile"], config["heartbeat_interval_ms"], config["session_timeout_ms"]) == ("kafka", 2000, 9000)
    # the same seeds under the two profiles are two different traces
    assert {p.name for p in written}.isdisjoint(p.name for p in (tmp_path / "default").glob("*.jsonl"))


def test_the_exhaustive_generator_follows_the_profile(tmp_path):
    code, out, err = run("generate", "--generator", "exhaustive", "--brokers", "1", "--partitions", "1", "--depth", "1",
                         "--profile", "kafka", "--out", str(tmp_path))
    assert code == 0, err
    written = list(tmp_path.glob("*.jsonl"))
    assert written and "profile kafka" in out
    assert {header_of(p)["config"]["profile"] for p in written} == {"kafka"}


def test_the_targeted_generator_follows_the_profile():
    from kraftspec.conformance.targeted import targeted
    from kraftspec.model import Config

    result = targeted(["LEASE-8"], seeds=range(3), lengths=(40,), config=Config.for_profile("kafka"))
    [target] = result.targets
    config = target.trace.header.config
    assert (config["profile"], config["session_timeout_ms"]) == ("kafka", 9000)


def test_an_unknown_profile_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run("generate", "--profile", "kip-632", "--out", "o")
    assert code == 2 and "invalid choice: 'kip-632'" in err and "kip-631" in err and "kafka" in err


@pytest.mark.parametrize("command", ["replay", "shrink"])
def test_profile_on_replay_and_shrink_refuses_a_trace_of_another_profile_naming_the_file(tmp_path, command):
    run("generate", "--seeds", "3", "--steps", "20", "--out", str(tmp_path / "t"))
    [path] = (tmp_path / "t").glob("*.jsonl")
    code, out, err = run(command, str(path), "--profile", "kafka")
    assert code == 2 and "PASS" not in out and "Traceback" not in err
    assert err == f"kraftspec: error: {path}:1: config.profile: the trace is of profile kip-631, not kafka (--profile kafka)\n"


def test_replay_runs_each_trace_under_its_own_profile(tmp_path, monkeypatch):
    """impl is given each trace's profile (it may not act on every parameter yet: only what the
    replayer hands it is checked here); the model replays the kafka traces it recorded."""
    from kraftspec.conformance import adapters

    run("generate", "--seeds", "0:2", "--steps", "40", "--profile", "kafka", "--out", str(tmp_path / "t"))
    run("generate", "--seeds", "2", "--steps", "40", "--out", str(tmp_path / "t"))
    code, out, err = run("replay", str(tmp_path / "t"), "--adapter", "model", "--profile", "kafka")
    assert code == 2 and "not kafka (--profile kafka)" in err  # one trace of the three is kip-631
    code, out, err = run("replay", str(tmp_path / "t"), "--adapter", "model")
    assert code == 0 and "3 of 3 traces passed" in out, out + err

    given = []

    class Recorded(adapters.Controller):
        def __init__(self, config=None, *rest, **options):
            given.append(config)
            super().__init__(config, *rest, **options)

    monkeypatch.setattr(adapters, "Controller", Recorded)
    code, out, err = run("replay", str(tmp_path / "t"), "--adapter", "impl", "--level", "responses")
    assert code in (0, 1) and "Traceback" not in err and "traces passed" in out
    assert len(given) >= 3  # a trace that diverges is started again, to report the difference
    assert {(c.profile, c.heartbeat_interval_ms, c.session_timeout_ms) for c in given} == {
        ("kafka", 2000, 9000), ("kip-631", 3000, 18000)}
