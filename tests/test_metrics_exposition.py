"""The metrics in Prometheus' text format: ``kraftspec metrics DIR``, a registry served over HTTP on
a loopback port, and ``kraftspec conform``'s run metrics (served while it runs, written to
metrics.prom), each parsed back with prometheus_client's parser."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kraftspec.cli import main
from kraftspec.conform_metrics import ConformMetrics
from kraftspec.conformance.lockstep import Lockstep, impl_config
from kraftspec.conformance.simulation import Simulation
from kraftspec.conformance.spark import Workload, run_job, session, summarize
from kraftspec.impl.controller import Controller
from kraftspec.metrics import controller_families, exposition, registry_of, serve, stop
from kraftspec.model import Config
from kraftspec.model.metrics import CommitClock, metrics_of
from kraftspec.spec.profiles import profile_names


def samples(text: str) -> dict[str, float]:
    """Every sample of an exposition, by name."""
    return {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        return response.read().decode("utf-8")


@pytest.mark.parametrize("seed", range(2))
def test_metric_1_metric_4_metric_5_metric_6_kraftspec_metrics_of_a_directory(tmp_path, capsys, seed):
    """METRIC-1, METRIC-4, METRIC-5, METRIC-6: a directory at rest gives the lags the controller that
    wrote it reported as it stopped, and the counts of its committed image (what the directory
    replays to)."""
    config = Config.for_profile(profile_names()[seed % len(profile_names())])
    pair = Lockstep(config)
    pair.impl = Controller.create(tmp_path, impl_config(config))
    simulation = Simulation(seed, broker_count=4, partition_count=3)
    simulation.state = pair.model
    for happening in simulation.run(150):
        assert not pair.send(happening.event)
        simulation.state = pair.model
    running = pair.impl.metrics.values(pair.impl)
    pair.impl.close()
    committed = metrics_of(pair.model.evolve(image=pair.model.committed_image), CommitClock())
    assert main(["metrics", str(tmp_path)]) == 0
    found = samples(capsys.readouterr().out)
    assert found["kraftspec_metadata_lag"] == running["metadata_lag"]
    assert found["kraftspec_metadata_snapshot_offset_lag"] == running["metadata_snapshot_offset_lag"]
    assert found["kraftspec_metadata_committed_offset"] == pair.model.committed_offset
    assert found["kraftspec_metadata_log_end_offset"] == pair.model.log_end_offset
    assert (found["kraftspec_registered_brokers"], found["kraftspec_fenced_brokers"], found["kraftspec_active_brokers"]) == (
        committed.registered_brokers, committed.fenced_brokers, committed.active_brokers)
    assert found["kraftspec_leaderless_partitions"] == committed.leaderless_partitions
    assert found["kraftspec_registered_brokers"] > 0
    needs_a_controller = ("kraftspec_metadata_commit_latency", "kraftspec_metadata_commit_rate", "kraftspec_metadata_committed_records")
    assert not any(name.startswith(needs_a_controller) for name in found)


def test_metric_2_metric_3_a_running_controllers_families(tmp_path):
    """METRIC-2, METRIC-3: the latency as a summary, the rate and the committed records."""
    pair = Lockstep(Config())
    simulation = Simulation(3, broker_count=3, partition_count=2)
    simulation.state = pair.model
    for happening in simulation.run(120):
        assert not pair.send(happening.event)
        simulation.state = pair.model
    values = pair.impl.metrics.values(pair.impl)
    found = samples(exposition(registry_of(lambda: controller_families(values))))
    assert found["kraftspec_metadata_commit_latency_ms_count"] == values["metadata_commit_latency_ms_count"] > 0
    assert found["kraftspec_metadata_commit_latency_ms_sum"] == values["metadata_commit_latency_ms_sum"]
    assert found["kraftspec_metadata_committed_records_total"] == values["metadata_committed_records"] > 0
    assert found["kraftspec_metadata_commit_rate_per_sec"] == pytest.approx(values["metadata_commit_rate_per_sec"])


def test_kraftspec_metrics_of_an_unreadable_directory_is_a_message(tmp_path, capsys):
    assert main(["metrics", str(tmp_path / "absent")]) == 2
    assert capsys.readouterr().err == f"kraftspec metrics: {tmp_path / 'absent'}: no such file or directory\n"


def test_a_registry_is_served_on_a_loopback_port_until_stopped():
    values = {"registered_brokers": 3, "fenced_brokers": 1, "active_brokers": 2}
    server, thread = serve(registry_of(lambda: controller_families(values)), 0)
    port = server.server_port
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert samples(fetch(port))["kraftspec_fenced_brokers"] == 1
        values["fenced_brokers"] = 2  # read at every scrape
        assert samples(fetch(port))["kraftspec_fenced_brokers"] == 2
    finally:
        stop(server, thread)
    with pytest.raises(urllib.error.URLError):
        fetch(port)


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    spark, _ = session("local[2,2]", "kraftspec tests")
    yield spark
    spark.stop()


def test_conform_metrics_are_served_while_the_run_goes_then_final(spark, tmp_path):
    """The progress from the tasks' accumulators once the tasks have ended; then the exact figures,
    and metrics.prom; then the server is gone."""
    workload = Workload(30, steps=20)
    metrics = ConformMetrics(spark, workload.traces)
    port = free_port()
    metrics.serve(port)
    try:
        live = samples(fetch(port))
        assert (live["kraftspec_conform_traces"], live["kraftspec_conform_traces_done"], live["kraftspec_conform_finished"]) == (30, 0, 0)
        results = run_job(spark, workload, tmp_path / "run", tasks=3, tap=metrics.tap)
        live = samples(fetch(port))  # every task has ended: the accumulators hold the whole run
        assert (live["kraftspec_conform_traces_done"], live["kraftspec_conform_traces_failed"], live["kraftspec_conform_events"]) == (30, 0, 600)
        assert live["kraftspec_conform_controller_traces"] == 30 and live["kraftspec_conform_finished"] == 0
        summary = summarize(results, workload, 2.0)
        written = metrics.finish(summary, results, tmp_path / "run")
        final = samples(fetch(port))
        assert final["kraftspec_conform_finished"] == 1 and final["kraftspec_conform_events_per_second"] == 300
        assert samples(written.read_text()) == final
        rows = [r.asDict() for r in results.collect()]
        for name in ("registered_brokers", "metadata_commit_latency_ms_count", "metadata_commit_latency_ms_sum", "metadata_lag"):
            assert final[f"kraftspec_conform_controller_{name}"] == sum(r["controller_metrics"][name] for r in rows)
        assert final["kraftspec_conform_controller_registered_brokers"] > 0
        results.unpersist()
    finally:
        metrics.close()
    with pytest.raises(urllib.error.URLError):
        fetch(port)


def test_conform_writes_metrics_prom_and_says_where_it_serves(spark, tmp_path, capsys):
    out = tmp_path / "run"
    port = free_port()
    assert main(["conform", "--master", "local[2,2]", "--traces", "12", "--steps", "15", "--out", str(out),
                 "--metrics-port", str(port)]) == 0
    captured = capsys.readouterr()
    assert f"metrics at http://127.0.0.1:{port}/metrics" in captured.err and f"{out}/metrics.prom" in captured.out
    found = samples((out / "metrics.prom").read_text())
    assert (found["kraftspec_conform_traces_done"], found["kraftspec_conform_events"], found["kraftspec_conform_finished"]) == (12, 180, 1)
    with pytest.raises(urllib.error.URLError):
        fetch(port)  # stopped with the run


def test_conform_metrics_help_is_for_users(capsys):
    with pytest.raises(SystemExit):
        main(["conform", "--help"])
    text = capsys.readouterr().out
    assert "--metrics-port PORT" in text and "127.0.0.1" in text
