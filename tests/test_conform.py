"""``kraftspec conform`` on local Spark: determinism by seed however the work is cut, results and
reports, a task that fails once, divergences shrunk with a command that reproduces them, bad input.
One local session (``local[2,2]``: two cores, a task tried twice) for the whole module."""

import gc
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_shrink import BrokenImpl

from kraftspec.cli import main
from kraftspec.conformance import spark as spark_module
from kraftspec.conformance.spark import Workload, check_seeds, run_job, session, slices

MASTER = "local[2,2]"
SERVER = f"subprocess:{sys.executable} -m kraftspec.conformance.examples.impl_server"


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    spark, _ = session(MASTER, "kraftspec tests")
    yield spark
    spark.stop()


def rows(spark, folder) -> list[dict]:
    found = [r.asDict(recursive=True) for r in spark.read.parquet(str(folder)).collect()]
    return sorted(found, key=lambda r: r["seed"])


def essentials(found: list[dict]) -> list[tuple]:
    return [(r["seed"], r["name"], r["events"], r["passed"], r["passed_records"], sorted(r["rules"])) for r in found]


def test_slices_cut_the_seeds_into_contiguous_ranges():
    assert slices(range(10, 20), 3) == [range(10, 14), range(14, 17), range(17, 20)]
    assert slices(range(0, 2), 8) == [range(0, 1), range(1, 2)]


def test_a_task_runs_the_cyclic_collector_itself_and_gives_it_back_as_it_found_it(monkeypatch):
    monkeypatch.setattr(spark_module, "COLLECT_EVERY", 2)
    runs = []
    monkeypatch.setattr(spark_module.gc, "collect", lambda generation=2: runs.append(generation) or 0)
    workload = Workload(5, steps=3)
    for was_enabled in (True, False):
        runs.clear()
        (gc.enable if was_enabled else gc.disable)()
        try:
            seen = [gc.isenabled() for _ in check_seeds(workload.seeds, workload)]
            assert seen == [False] * 5  # paused while the task checks its seeds
            assert runs == [1, 1]  # after the 2nd and the 4th trace, the young generations
            assert gc.isenabled() == was_enabled
        finally:
            gc.enable()


def test_the_rows_are_cached_on_local_disk_not_in_the_jvms_heap(spark):
    # a million rows held in the heap ran a driver of Spark's default 1 GB out of memory
    from pyspark import StorageLevel

    frame = spark_module.checked_rows(spark, Workload(4, steps=3), tasks=2)
    try:
        assert frame.storageLevel == StorageLevel.DISK_ONLY and frame.count() == 4
    finally:
        frame.unpersist()


def test_a_spark_failure_is_told_in_one_line_with_its_reason_or_where_to_find_it(tmp_path):
    from kraftspec.conform import spark_failure

    class Java:
        def toString(self):
            return "org.apache.spark.SparkException: Job aborted due to stage failure\n\tat org.apache.spark..."

    class Failed(Exception):
        java_exception = Java()

    class Gone:
        def toString(self):
            raise ConnectionError("the gateway is closed")

    class Died(Exception):
        java_exception = Gone()

    told = spark_failure(Failed(), tmp_path)
    assert told.startswith("Spark failed during the job: org.apache.spark.SparkException: Job aborted due to stage failure.")
    assert "\n" not in told and str(tmp_path) in told
    for error in (Died(), ConnectionResetError()):  # the JVM ended: Spark printed why, above
        told = spark_failure(error, tmp_path)
        assert "Spark's JVM ended during the job" in told and "--driver-memory" in told and "\n" not in told


def test_a_spark_failure_during_the_job_ends_conform_in_one_line_with_status_2(spark, tmp_path, monkeypatch, capsys):
    from py4j.protocol import Py4JNetworkError

    def dies(*arguments, **keywords):
        raise Py4JNetworkError("Answer from Java side is empty")

    monkeypatch.setattr(spark_module, "run_job", dies)
    assert main(["conform", "--traces", "4", "--steps", "3", "--master", MASTER, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "kraftspec conform: Spark failed during the job: Spark's JVM ended during the job" in err
    assert "Traceback" not in err
    assert spark.sparkContext.getConf().get("spark.master") == MASTER  # a session conform did not start is left up


def test_the_same_seeds_give_the_same_results_however_the_work_is_cut(spark, tmp_path):
    workload = Workload(60, first_seed=100, steps=25)
    run_job(spark, workload, tmp_path / "three", tasks=3).unpersist()
    run_job(spark, workload, tmp_path / "seven", tasks=7).unpersist()
    three, seven = rows(spark, tmp_path / "three" / "results"), rows(spark, tmp_path / "seven" / "results")
    assert not (tmp_path / "three" / "traces").exists()  # nothing failed: no trace is kept, no empty Parquet
    in_process = [dict(r, rules=r["rules"]) for r in check_seeds(workload.seeds, workload)]
    assert [r["seed"] for r in three] == list(range(100, 160))
    assert essentials(three) == essentials(seven) == essentials(in_process)
    assert all(r["passed"] for r in three)


def test_a_task_that_fails_once_is_retried_and_gives_identical_results(spark, tmp_path):
    workload = Workload(40, steps=20)
    run_job(spark, workload, tmp_path / "plain", tasks=4).unpersist()
    marker = tmp_path / "task-1-failed"
    flaky = Workload(40, steps=20, fail_first_attempt=(1, str(marker)))
    run_job(spark, flaky, tmp_path / "retried", tasks=4).unpersist()
    assert marker.exists()  # the first attempt of task 1 did fail
    plain, retried = rows(spark, tmp_path / "plain" / "results"), rows(spark, tmp_path / "retried" / "results")
    assert len(retried) == 40 and essentials(retried) == essentials(plain)  # no row lost, none written twice


def test_conform_writes_results_traces_summary_and_report(spark, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["conform", "--master", MASTER, "--traces", "120", "--steps", "30", "--out", str(out),
                 "--keep-traces", "all", "--json", str(tmp_path / "summary.json")]) == 0
    printed = capsys.readouterr().out
    assert "120 traces of 30 events" in printed and "passed 120" in printed and "report.html" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary == json.loads((tmp_path / "summary.json").read_text())
    assert summary["traces"] == summary["passed"] == 120 and summary["failed"] == 0
    assert summary["events"] == 120 * 30 and summary["per_level"]["records"] == {"passed": 120, "failed": 0, "not_reached": 0}
    assert summary["rules"]["LOG-14"]["traces"] == 120  # the bootstrap batch, in every trace
    assert summary["rules"]["REG-6"]["firings"] >= summary["rules"]["REG-6"]["traces"] > 0
    assert len(rows(spark, out / "results")) == 120
    # one Parquet file per output for a run this size, and nothing beside it (no .crc, no _SUCCESS)
    assert [p.suffix for p in (out / "results").iterdir()] == [".parquet"]
    assert [p.suffix for p in (out / "traces").iterdir()] == [".parquet"]
    traces = rows(spark, out / "traces")
    assert len(traces) == 120 and traces[0]["trace"].startswith('{"config"')
    report = (out / "report.html").read_text()
    assert 'class="bar"' in report and 'id="LOG-14"' in report and "every trace passed" in report


def test_divergences_are_reported_shrunk_and_reproducible_from_their_seed(spark, tmp_path, capsys):
    out = tmp_path / "run"
    adapter = f"{SERVER} --alter-reply-at 12"  # changes a reply of every trace, from its 12th event on
    assert main(["conform", "--master", MASTER, "--traces", "6", "--steps", "20", "--out", str(out),
                 "--adapter", adapter, "--shrink", "1"]) == 1
    captured = capsys.readouterr()
    printed = captured.out
    summary = json.loads((out / "summary.json").read_text())
    failed, passed = summary["failed"], summary["passed"]
    assert failed >= 3 and failed + passed == 6
    # a trace that fails at responses is not compared at state and records: not reached, not failed
    assert summary["per_level"] == {"responses": {"passed": passed, "failed": failed, "not_reached": 0},
                                    "state": {"passed": passed, "failed": 0, "not_reached": failed},
                                    "records": {"passed": passed, "failed": 0, "not_reached": failed}}
    failure = summary["failures"][0]
    assert failure["part"] == "replies" and "again:   kraftspec generate --spec" in failure["report"]
    [shrunk] = summary["divergences"]
    assert shrunk["events"] < 20 and Path(shrunk["path"]).exists() and Path(shrunk["original"]).exists()
    assert "FAIL" in printed and "shrunk" in printed
    assert "shrinking 1 of 1" in captured.err and "candidates replayed" in captured.err  # shrink shows progress
    assert "so far" in captured.err  # as it goes, not only its outcome
    assert len(rows(spark, out / "traces")) == failed  # the failing traces are kept

    # each failing trace is a file in OUT/divergences, and its report's repro command replays that very file
    [repro] = [line.split("repro:   ", 1)[1] for line in failure["report"].splitlines() if "repro:" in line]
    command = shlex.split(repro)
    assert Path(command[2]) == out / "divergences" / f"seed-{failure['seed']}.jsonl" and Path(command[2]).exists()
    assert f"repro:   {repro}" in printed
    assert main(command[1:]) == 1
    assert f"departs from the trace at step {failure['step']}" in capsys.readouterr().out

    # the folder's README describes that folder, not the regression corpus
    readme = (out / "divergences" / "README.md").read_text()
    assert "Divergences of a kraftspec conform run" in readme and "seed-SEED-shrunk.jsonl" in readme
    assert f"[seed-{failure['seed']}.jsonl]" in readme and "regression corpus" not in readme
    assert "runtime rules reached" not in readme and "conformance/corpus" not in readme

    # the printed command regenerates the very trace, and replaying it fails the same way
    generate, replay = (shlex.split(part) for part in failure["report"].split("again:   ", 1)[1].split(" && "))
    folder = Path(generate[generate.index("--out") + 1])
    shutil.rmtree(folder, ignore_errors=True)
    assert main(generate[1:]) == 0
    assert [p.stem for p in folder.glob("*.jsonl")] == [failure["name"]]
    assert replay[replay.index("--adapter") + 1] == adapter
    assert main(replay[1:]) == 1
    assert f"departs from the trace at step {failure['step']}" in capsys.readouterr().out


def test_a_workload_of_the_kafka_profile_records_kafka_traces_and_its_command_regenerates_them(tmp_path):
    workload = Workload(3, first_seed=40, steps=20, adapter="model", keep_traces="all", profile="kafka")
    found = list(check_seeds(workload.seeds, workload))
    assert all(r["passed"] for r in found)  # the model replays what it recorded under the profile
    for row in found:
        config = json.loads(row["trace"].split("\n", 1)[0])["config"]
        assert (config["profile"], config["heartbeat_interval_ms"], config["session_timeout_ms"]) == ("kafka", 2000, 9000)
    generate = shlex.split(workload.repro(41).split(" && ")[0])
    assert generate[generate.index("--profile") + 1] == "kafka"
    folder = tmp_path / "again"
    generate[generate.index("--out") + 1] = str(folder)
    assert main(generate[1:]) == 0
    assert [p.stem for p in folder.glob("*.jsonl")] == [found[1]["name"]]
    assert "--profile" not in Workload(3).repro(41)  # the default profile's command is as it always was


def test_conform_runs_the_profile_it_is_given_and_says_so(spark, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["conform", "--master", MASTER, "--traces", "4", "--steps", "20", "--out", str(out),
                 "--adapter", "model", "--profile", "kafka"]) == 0
    assert "profile kafka" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["workload"]["profile"] == "kafka" and summary["passed"] == 4
    assert "profile kafka" in (out / "report.html").read_text()


def test_an_adapter_that_fails_on_every_trace_stops_before_spark(tmp_path, capsys):
    assert main(["conform", "--traces", "5", "--adapter", f"{SERVER} --crash-at 0", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "fails on the first trace" in err and "nothing was run on Spark" in err


@pytest.mark.parametrize("argv, message", [
    (["--master", "spark://127.0.0.1:1"], "cannot be reached"),
    (["--master", "yarn"], "expected local"),
    (["--adapter", "nonsense"], "--adapter 'nonsense'"),
])
def test_bad_input_is_refused_with_a_message(tmp_path, capsys, argv, message):
    assert main(["conform", "--traces", "3", "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_existing_output_folder_is_never_overwritten(tmp_path, capsys):
    (tmp_path / "o").mkdir()
    assert main(["conform", "--traces", "3", "--out", str(tmp_path / "o")]) == 2
    assert "the folder exists" in capsys.readouterr().err


def test_a_missing_java_is_reported_not_a_stack_trace(tmp_path):
    env = {"PATH": "/nonexistent", "JAVA_HOME": "/nonexistent", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "kraftspec", "conform", "--traces", "2", "--master", "local[1]",
                           "--out", str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and "Java was not found" in done.stderr and "Traceback" not in done.stderr


# ---- what a person reads: the divergence report, the per-level table, the progress, report.html ----


class AltersRepliesReleasedByCommits(BrokenImpl):
    """Changes the first reply a commit releases (a reply decided by an earlier request, held until
    its records commit)."""

    def step(self, event):
        outputs = super().step(event)
        if event["kind"] == "commit" and outputs["replies"]:
            first = outputs["replies"][0]
            outputs = {**outputs, "replies": [{**first, "body": {**first["body"], "ThrottleTimeMs": 1}},
                                              *outputs["replies"][1:]]}
        return outputs


def test_a_reply_released_by_a_commit_is_named_with_the_rules_of_its_request():
    from kraftspec.conformance.generate import walk
    from kraftspec.conformance.replay import replay

    trace = walk(0, 30)
    verdict = replay(trace, AltersRepliesReleasedByCommits(), "records")
    d = verdict.divergence
    assert d.part == "replies" and d.event["kind"] == "commit"
    reply = d.expected[0]
    [request] = [s for s in trace.steps if s.seq == reply["seq"]]
    assert request.n < d.step
    report = verdict.report()
    assert f"reply:   {reply['api']} seq {reply['seq']} to the request of step {request.n}, released at step {d.step}" in report
    assert f"rules:   step {request.n} (the request): {' '.join(request.rules)}" in report
    assert f"step {d.step} (released it): {' '.join(d.rules)}" in report
    assert "repro:" not in report and ".jsonl>" not in report  # replayed from memory: no file to name
    assert "repro:   kraftspec replay some/where.jsonl --adapter" in verdict.report(path="some/where.jsonl")


def test_the_levels_after_the_first_that_fails_are_not_reached():
    from kraftspec.conformance.generate import walk
    from kraftspec.conformance.replay import replay
    from kraftspec.conformance.spark import level_verdicts

    trace = walk(0, 30)
    verdict = replay(trace, AltersRepliesReleasedByCommits(), "records")
    tried = []
    assert level_verdicts(verdict, "records", tried.append) == {"responses": False, "state": None, "records": None}
    assert tried == []  # a divergence in the replies shows at responses: nothing lower to try
    passing = replay(trace, AltersRepliesReleasedByCommits(), "responses").__class__  # a Verdict without divergence
    clean = passing(trace, None, "x", "state", 30, 30, 0.0)
    assert level_verdicts(clean, "state", tried.append) == {"responses": True, "state": True, "records": None}


def test_conform_progress_shows_events_per_second_and_the_time_left(capsys):
    from types import SimpleNamespace

    from kraftspec.conform import _TaskProgress

    spark = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: None))
    progress = _TaskProgress(spark, "replaying", events=4000)
    progress.started -= 10  # as if started ten seconds ago
    progress._draw(1, 4)
    line = capsys.readouterr().err
    assert "1/4 tasks" in line and "100 events/s" in line and "about 30 s left" in line


def test_the_jvm_start_up_lines_are_dropped_and_everything_else_goes_through():
    import os
    import threading

    from kraftspec.conformance.spark import _copy_without_noise

    lines = (b"WARNING: Using incubator modules: jdk.incubator.vector\n"
             b"Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties\n"
             b'Setting default log level to "WARN".\n'
             b"To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).\n"
             b"26/11/25 00:42:59 WARN NativeCodeLoader: Unable to load native-hadoop library for your platform\n"
             b"26/11/25 00:43:00 ERROR Executor: Exception in task 0.0\n"
             b"java.lang.OutOfMemoryError: Java heap space\n")
    source, sink = os.pipe()
    result, into = os.pipe()
    copier = threading.Thread(target=_copy_without_noise, args=(source, into))
    copier.start()
    os.write(sink, lines)
    os.close(sink)
    copier.join()
    os.close(into)
    with open(result, "rb") as copied:
        assert copied.read() == (b"26/11/25 00:43:00 ERROR Executor: Exception in task 0.0\n"
                                 b"java.lang.OutOfMemoryError: Java heap space\n")


def test_the_traceback_of_a_worker_spark_ended_for_idleness_is_dropped_and_any_other_goes_through():
    from kraftspec.conformance.spark import without_noise

    daemon = b'  File "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/daemon.py", line %d, in %s\n'
    reaped = [b"Traceback (most recent call last):\n", daemon % (264, b"manager"), daemon % (95, b"worker"),
              b"BrokenPipeError: [Errno 32] Broken pipe\n"]
    # the same error raised in kraftspec's own code, in a worker: a real failure
    task = [b"Traceback (most recent call last):\n", daemon % (264, b"manager"),
            b'  File "/work/conformance/spark.py", line 120, in check_seeds\n', b"    out.write(row)\n",
            b"BrokenPipeError: [Errno 32] Broken pipe\n"]
    # another error of the daemon
    other = [b"Traceback (most recent call last):\n", daemon % (264, b"manager"), b"ValueError: bad header\n"]
    before, after = b"26/11/28 04:40:00 ERROR Executor: Exception in task 0.0\n", b"a line after\n"
    lines = [before, *reaped, *task, *reaped, *other, after, b"Using Spark's default log4j profile: x\n", *task[:3]]
    assert list(without_noise(lines)) == [before, *task, *other, after, *task[:3]]
    # two workers ended at once (local[2]'s): their tracebacks come a line of one between lines of
    # the other, as seen in a run of kraftspec bench spark
    both = [reaped[0], reaped[0], *reaped[1:], *reaped[1:]]
    assert list(without_noise([before, *both, after])) == [before, after]
    # ... and a real failure written at the same time as a reaped worker's goes through, with it
    mixed = [task[0], reaped[0], *reaped[1:], *task[1:]]
    assert list(without_noise([before, *mixed, after])) == [before, *mixed, after]


def test_a_run_prints_no_jvm_start_up_noise(tmp_path):
    done = subprocess.run([sys.executable, "-m", "kraftspec", "conform", "--traces", "4", "--steps", "5",
                           "--master", "local[1]", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for noise in ("incubator modules", "log4j profile", "Setting default log level", "setLogLevel", "NativeCodeLoader"):
        assert noise not in done.stderr and noise not in done.stdout
    assert "replaying" in done.stderr and "passed 4" in done.stdout


def test_the_report_links_each_rule_and_explains_the_rules_never_reached(tmp_path):
    import re
    from html.parser import HTMLParser

    from kraftspec.conform import report_html
    from kraftspec.spec import rules

    data = {"spec_version": "1.0", "traces": 2, "passed": 2, "failed": 0, "events": 20, "seconds": 1.0,
            "events_per_second": 20,
            "workload": {"traces": 2, "first_seed": 0, "steps": 10, "adapter": "impl", "level": "records"},
            "per_level": {"responses": {"passed": 2, "failed": 0, "not_reached": 0}},
            "rules": {"LEASE-8": {"traces": 2, "firings": 3}}, "never_reached": ["REG-5", "LOG-13"],
            "failures": [{"seed": 0, "step": 3, "part": "replies", "report": "FAIL x\n" + "y" * 400}], "divergences": []}
    out = tmp_path / "run"
    out.mkdir()
    page = report_html(data, out)
    HTMLParser().feed(page)  # well-formed enough to parse
    lease = rules()["LEASE-8"]
    link = re.search(r'<tr id="LEASE-8"><td><a href="([^"#]+)#([^"]+)" title="([^"]+)">LEASE-8</a>', page)
    assert link, page
    assert (out / link.group(1)).resolve().name == lease.file and (out / link.group(1)).exists()
    assert link.group(2) == "lease-8--a-lapsed-lease-fences-the-broker"
    assert link.group(3) == f"LEASE-8 {lease.title}"
    # the rules never reached show as red bars, and are listed with the reason
    assert re.search(r'<tr id="REG-5">.*?<span class="bar none">not reached</span>', page)
    assert re.search(r"REG-5</a> [^<]*: not reached by this run", page)
    assert re.search(r"LOG-13</a> [^<]*: not reachable by any event", page)
    assert "white-space:pre-wrap" in page  # long reports wrap instead of overflowing the page


def test_with_a_site_url_the_report_links_each_rule_to_its_anchor_on_the_site(tmp_path):
    import re

    from kraftspec.conform import report_html

    data = {"spec_version": "1.0", "traces": 1, "passed": 1, "failed": 0, "events": 5, "seconds": 1.0,
            "events_per_second": 5,
            "workload": {"traces": 1, "first_seed": 0, "steps": 5, "adapter": "impl", "level": "records"},
            "per_level": {"responses": {"passed": 1, "failed": 0, "not_reached": 0}},
            "rules": {"LEASE-8": {"traces": 1, "firings": 1}, "DEC-7": {"traces": 1, "firings": 1}},
            "never_reached": ["REG-5"], "failures": [], "divergences": []}
    page = report_html(data, tmp_path, site_url="https://example.org/spec/")
    assert re.search(r'<tr id="LEASE-8"><td><a href="https://example\.org/spec/leases\.html#lease-8" title="LEASE-8 ', page)
    assert 'href="https://example.org/spec/decisions.html#dec-7"' in page
    assert 'href="https://example.org/spec/membership.html#reg-5"' in page  # the rules never reached too
    relative = report_html(data, tmp_path, site_url="../site")
    assert 'href="../site/leases.html#lease-8"' in relative


def test_a_server_that_fails_to_start_a_trace_fails_that_trace_not_the_task(tmp_path):
    """A server that does not start a trace (it hung on the one before and was killed, or it refuses)
    gives that trace a failed row at its first step, part adapter, and the next trace goes on."""
    import sys

    from kraftspec.conformance.generate import walk
    from kraftspec.conformance.spark import replayed
    from kraftspec.conformance.subprocess_adapter import SubprocessAdapter

    script = tmp_path / "refuses.py"
    script.write_text("import json, sys\n"
                      "for line in sys.stdin:\n"
                      "    print(json.dumps({'type': 'error', 'message': 'cannot start today'}), flush=True)\n")
    with SubprocessAdapter([sys.executable, str(script)]) as server:
        verdicts = [replayed(walk(seed, 10), server, "responses") for seed in (1, 2)]
    assert [(v.passed, v.divergence.part, v.divergence.step) for v in verdicts] == [(False, "adapter", 0)] * 2
    assert "cannot start today" in verdicts[0].report()
