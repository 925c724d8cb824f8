"""``kraftspec bench impl --quick`` runs end to end and writes its figures (a smoke test: the
figures themselves are measured by the command, never asserted in tests)."""

import io
import json
from contextlib import redirect_stdout

from kraftspec.cli import main


def test_bench_impl_quick_runs_and_writes_every_figure(tmp_path):
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["bench", "impl", "--quick", "--json", str(tmp_path / "figures.json")]) == 0
    figures = json.loads((tmp_path / "figures.json").read_text())
    for key in ("heartbeats_small_v1", "heartbeats_big_v1", "fence_ms", "fence_cpu_ms", "controlled_shutdown_ms",
                "snapshot_load_s", "bytes_per_partition", "model_heartbeats_small", "impl_model_ratio"):
        assert key in figures, key
    text = out.getvalue()
    assert "goal" in text and "impl/model" in text


def test_bench_conformance_quick_runs_and_writes_every_figure(tmp_path):
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["bench", "conformance", "--quick", "--json", str(tmp_path / "figures.json")]) == 0
    figures = json.loads((tmp_path / "figures.json").read_text())
    for key in ("generate_events_per_s", "replay_responses_events_per_s", "replay_state_events_per_s",
                "replay_records_events_per_s", "subprocess_responses_events_per_s", "subprocess_records_events_per_s"):
        assert figures[key] > 0, key
    assert "goal" in out.getvalue()


def test_bench_kafka_quick_compares_impl_with_kafka_and_writes_every_figure(tmp_path):
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["bench", "kafka", "--quick", "--json", str(tmp_path / "figures.json")]) == 0
    figures = json.loads((tmp_path / "figures.json").read_text())
    assert figures["kafka_version"] == "4.4.0"
    # every event of the walks went through both servers (answers not compared)
    assert figures["protocol_events"]["Kafka"] == figures["protocol_events"]["impl"] > 0
    for workload in ("protocol", "heartbeats", "mix"):
        figure = figures[workload]
        assert len(figure["kafka"]["runs"]) == len(figure["impl"]["runs"]) == figures["rounds"], workload
        assert figure["ratio"] > 0 and len(figure["round_ratios"]) == figures["rounds"], workload
    assert figures["heartbeats"]["goal"] == figures["mix"]["goal"] == 0.5
    # fencing and snapshot loading: the same work on both sides (the fencing wrote the same records)
    for workload in ("fence", "snapshot_load", "snapshot_bytes"):
        figure = figures[workload]
        assert len(figure["kafka"]["runs"]) == len(figure["impl"]["runs"]) == figures["rounds"], workload
        assert figure["ratio"] > 0 and figure["ratio_is"].startswith("Kafka/impl"), workload
    assert figures["fence"]["records"] == 3001  # 1,000 leaderships and 2,000 ISR places left, then the fencing record
    text = out.getvalue()
    assert "load average" in text and "impl/Kafka" in text and "goal at least 0.5" in text


def test_bench_kafka_refuses_a_malformed_release_in_one_line(capsys):
    assert main(["bench", "kafka", "--quick", "--kafka-version", "4.x"]) == 2
    err = capsys.readouterr().err
    assert "Kafka version '4.x'" in err and "Traceback" not in err
    assert main(["bench", "impl", "--kafka-version", "4.1.0"]) == 2
    assert "--kafka-version goes with the kafka target only" in capsys.readouterr().err


def test_bench_comparison_warns_when_the_spread_makes_it_meaningless():
    from kraftspec.bench import compare

    out = io.StringIO()
    steady = compare("heartbeats", [100.0, 101.0, 99.0], [60.0, 61.0, 59.0], "/s", out, 0.5)
    assert steady["met"] and "warning" not in steady and "warning" not in out.getvalue()
    # a load that slows both sides of each round alike leaves their ratio alone: no warning
    out = io.StringIO()
    together = compare("heartbeats", [100.0, 200.0, 150.0], [40.0, 80.0, 60.0], "/s", out, 0.5)
    assert together["ratio"] == 0.4 and not together["met"] and "warning" not in together
    assert "NOT met" in out.getvalue()
    out = io.StringIO()
    noisy = compare("heartbeats", [100.0, 100.0, 100.0], [30.0, 55.0, 80.0], "/s", out, 0.5)
    assert noisy["ratio"] == 0.55 and noisy["met"]
    assert "ratios spread over 25%" in noisy["warning"] and "warning:" in out.getvalue()
    assert "rounds fall on both sides of it" in out.getvalue()


def test_bench_builds_its_controllers_and_walks_under_the_profile():
    from kraftspec.bench import impl_cluster, model_config, model_heartbeat_rate

    controller = impl_cluster(30, 3, profile="kafka")
    assert (controller.config.profile, controller.config.session_timeout_ms) == ("kafka", 9000)
    assert impl_cluster(30, 3).config.profile == "kip-631"
    assert model_config("kafka").heartbeat_interval_ms == 2000
    assert model_heartbeat_rate(30, 3, 20, "kafka") > 0
