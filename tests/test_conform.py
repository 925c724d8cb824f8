"""``kraftspec conform`` on local Spark: determinism by seed however the work is cut, results and
reports, a task that fails once, divergences shrunk with a command that reproduces them, bad input.
One local session (``local[2,2]``: two cores, a task tried twice) for the whole module."""

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kraftspec.cli import main
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


def test_the_same_seeds_give_the_same_results_however_the_work_is_cut(spark, tmp_path):
    workload = Workload(60, first_seed=100, steps=25)
    run_job(spark, workload, tmp_path / "three", tasks=3).unpersist()
    run_job(spark, workload, tmp_path / "seven", tasks=7).unpersist()
    three, seven = rows(spark, tmp_path / "three" / "results"), rows(spark, tmp_path / "seven" / "results")
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
    assert summary["events"] == 120 * 30 and summary["per_level"]["records"] == {"passed": 120, "failed": 0}
    assert summary["rules"]["LOG-14"]["traces"] == 120  # the bootstrap batch, in every trace
    assert summary["rules"]["REG-6"]["firings"] >= summary["rules"]["REG-6"]["traces"] > 0
    assert len(rows(spark, out / "results")) == 120
    traces = rows(spark, out / "traces")
    assert len(traces) == 120 and traces[0]["trace"].startswith('{"config"')
    report = (out / "report.html").read_text()
    assert "<svg" in report and "LOG-14" in report and "every trace passed" in report


def test_divergences_are_reported_shrunk_and_reproducible_from_their_seed(spark, tmp_path, capsys):
    out = tmp_path / "run"
    adapter = f"{SERVER} --alter-reply-at 12"  # changes a reply of every trace, from its 12th event on
    assert main(["conform", "--master", MASTER, "--traces", "6", "--steps", "20", "--out", str(out),
                 "--adapter", adapter, "--shrink", "1"]) == 1
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed"] == summary["traces"] == 6 and summary["per_level"]["responses"]["failed"] == 6
    failure = summary["failures"][0]
    assert failure["part"] == "replies" and "again:   kraftspec generate --spec" in failure["report"]
    [shrunk] = summary["divergences"]
    assert shrunk["events"] < 20 and (out / "divergences").exists()
    assert "FAIL" in printed and "shrunk" in printed
    assert len(rows(spark, out / "traces")) == 6  # the failing traces are kept

    # the printed command regenerates the very trace, and replaying it fails the same way
    generate, replay = (shlex.split(part) for part in failure["report"].split("again:   ", 1)[1].split(" && "))
    folder = Path(generate[generate.index("--out") + 1])
    shutil.rmtree(folder, ignore_errors=True)
    assert main(generate[1:]) == 0
    assert [p.stem for p in folder.glob("*.jsonl")] == [failure["name"]]
    assert replay[replay.index("--adapter") + 1] == adapter
    assert main(replay[1:]) == 1
    assert f"departs from the trace at step {failure['step']}" in capsys.readouterr().out


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
