"""``kraftspec conform`` on a real Spark standalone cluster (a master and a worker started from the
pip package by tests/spark_cluster.py) gives, trace by trace, what it gives in local mode; and
the cluster leaves no process behind."""

from __future__ import annotations

import json
import shutil
import os
import sys

import pytest

from kraftspec.cli import main

from spark_cluster import ClusterError, standalone_cluster

TRACES = 200
STEPS = 20


def _stop_active_session() -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


def _rows(folder) -> dict[int, tuple]:
    """The results Parquet of a run, by seed: (name, passed, events)."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("read results")
             .config("spark.ui.enabled", "false").getOrCreate())
    try:
        rows = spark.read.parquet(str(folder / "results")).select("seed", "name", "passed", "events").collect()
    finally:
        spark.stop()
    by_seed = {row["seed"]: (row["name"], row["passed"], row["events"]) for row in rows}
    assert len(by_seed) == len(rows), "a seed appears twice in the results"
    return by_seed


@pytest.fixture
def driver_environment(monkeypatch):
    """The driver binds to the loopback too (the host name resolves to another interface here),
    and its Python workers run this interpreter."""
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)


def test_conform_on_a_standalone_cluster_matches_local_mode_and_leaves_nothing_running(
        tmp_path, capsys, driver_environment):
    _stop_active_session()  # a session left active would be reused whatever --master says
    workload = ["--traces", str(TRACES), "--steps", str(STEPS), "--adapter", "impl", "--level", "records"]

    cluster = standalone_cluster(cores=2, memory="2g")
    with cluster as url:
        assert url.startswith("spark://127.0.0.1:")
        assert len(cluster.alive()) >= 2  # the master and the worker run
        code = main(["conform", "--master", url, *workload, "--out", str(tmp_path / "cluster")])
        shown = capsys.readouterr().out
    assert code == 0, shown
    assert f"master {url}" in shown

    # exactly what was started is gone: the two JVMs (reaped) and everything in their sessions
    assert cluster.alive() == []
    for pid in cluster.pids:
        assert not os.path.exists(f"/proc/{pid}"), f"process {pid} of the cluster is still there"
    # the work ran on the cluster: the master took the application, the worker ran its executor
    assert "Registered app kraftspec conform" in cluster.logs_kept["master"]
    assert "Asked to launch executor" in cluster.logs_kept["worker"]

    assert main(["conform", "--master", "local[2]", *workload, "--out", str(tmp_path / "local")]) == 0
    capsys.readouterr()

    on_cluster, local = _rows(tmp_path / "cluster"), _rows(tmp_path / "local")
    assert sorted(on_cluster) == list(range(TRACES))
    assert on_cluster == local
    assert all(passed and events == STEPS for _, passed, events in on_cluster.values())
    assert len({name for name, _, _ in on_cluster.values()}) == TRACES  # a different trace per seed

    summary = json.loads((tmp_path / "cluster" / "summary.json").read_text())
    assert (summary["traces"], summary["passed"], summary["failed"], summary["events"]) == (TRACES, TRACES, 0, TRACES * STEPS)
    assert summary["rules"] == json.loads((tmp_path / "local" / "summary.json").read_text())["rules"]


def test_a_daemon_that_fails_to_start_is_reported_with_its_log_and_nothing_is_left():
    cluster = standalone_cluster(memory="lots")  # the worker refuses the option and exits
    with pytest.raises(ClusterError) as failure:
        with cluster:
            pytest.fail("the cluster started with a worker memory of 'lots'")
    message = str(failure.value)
    assert "the Spark worker" in message and "exited" in message and "exit status 1" in message
    assert "Usage: Worker" in message  # the tail of the worker's own output
    assert cluster.alive() == [] and len(cluster.pids) == 2
    assert cluster.kept_folder is not None and (cluster.kept_folder / "worker.log").exists()
    shutil.rmtree(cluster.kept_folder)
