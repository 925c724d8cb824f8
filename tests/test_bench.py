"""``kraftspec bench impl --quick`` runs end to end and writes its figures (a smoke test: the
figures themselves are measured by the command, never asserted in tests)."""

import gc
import io
import json
from contextlib import redirect_stdout

import pytest

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
    # the machine's speed at the start and at the end, as read, and a warning if it moved
    speeds = figures["machine_speed"]
    assert len(speeds) == 2 and all(speed > 0 for speed in speeds)
    assert f"machine speed {speeds[0]:.2f} thousand reference loops/s at the start" in text
    assert f"machine speed {speeds[1]:.2f} thousand reference loops/s at the end" in text
    for warning in figures["warnings"]:
        assert f"warning: {warning}" in text


def test_bench_conformance_quick_runs_and_writes_every_figure(tmp_path, monkeypatch):
    # the generation leg generates as a conform task does: the cyclic collector paused, and run by
    # the leg over the young objects every COLLECT_EVERY walks and at its end
    from kraftspec.conformance import generate, spark

    monkeypatch.setattr(spark, "COLLECT_EVERY", 3)
    collector_on: list[bool] = []
    collections: list[int] = []
    walk, collect = generate.walk, gc.collect
    monkeypatch.setattr(generate, "walk", lambda *a, **k: collector_on.append(gc.isenabled()) or walk(*a, **k))
    monkeypatch.setattr(gc, "collect", lambda generation=2: collections.append(generation) or collect(generation))
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["bench", "conformance", "--quick", "--json", str(tmp_path / "figures.json")]) == 0
    assert gc.isenabled()
    walks = len(collector_on) // 3  # the walks generated once for the replay legs, then by each of 2 rounds
    assert len(collector_on) == 3 * walks and collector_on == [True] * walks + [False] * 2 * walks
    assert collections.count(1) == 2 * (walks // 3 + 1)
    figures = json.loads((tmp_path / "figures.json").read_text())
    for key in ("generate_events_per_s", "replay_responses_events_per_s", "replay_state_events_per_s",
                "replay_records_events_per_s", "subprocess_responses_events_per_s", "subprocess_records_events_per_s"):
        assert figures[key] > 0, key
    # every leg measured once a round, interleaved; its figure the median of its rounds
    rounds = figures["rounds"]
    assert rounds == 2 and len(figures["round_load"]) == rounds
    for leg in ("generate", "replay_responses", "replay_state", "replay_records", "subprocess_responses", "subprocess_records"):
        assert len(figures[leg]["runs"]) == rounds and figures[leg]["median"] == figures[f"{leg}_events_per_s"], leg
    assert figures["generate"]["goal"] == 30_000 and figures["replay_state"]["goal"] == 100_000
    assert figures["subprocess_records"]["goal"] == 20_000
    text = out.getvalue()
    assert "round 1 of 2" in text and "round 2 of 2" in text and "goal 30,000" in text
    assert "load average" in text and "at the start" in text and "at the end" in text
    # the machine's speed, read at the start, after each round and at the end, printed as read
    speeds = figures["machine_speed"]
    assert len(speeds) == rounds + 2 and all(speed > 0 for speed in speeds)
    assert f"machine speed {speeds[0]:.2f} thousand reference loops/s at the start" in text
    assert f"machine speed {speeds[1]:.2f})" in text and f"machine speed {speeds[-1]:.2f} thousand" in text
    # it says how it runs the model, and where its goals are written, which a test below checks
    assert "modules: plain Python" in text and figures["compiled"] is False
    assert 'goals, and the figures measured before: conformance/README.md, section "Throughput: kraftspec bench conformance"' in text
    for warning in figures["warnings"]:
        assert f"warning: {warning}" in text


def test_bench_kafka_quick_compares_impl_with_kafka_and_writes_every_figure(tmp_path, monkeypatch):
    import kraftspec.bench_stats

    # the load this run sees, as if other work ran beside it from the second reading on
    readings = iter([0.5] + [kraftspec.bench_stats.cores() + 2.0] * 100)
    monkeypatch.setattr(kraftspec.bench_stats, "load_average", lambda: (next(readings), 0.0, 0.0))
    # and the machine's own speed, as if its host slowed it while Kafka's snapshot was loaded
    speeds = iter([10.0, 10.2, 9.9, 10.1, 6.0])
    monkeypatch.setattr(kraftspec.bench_stats, "machine_speed", lambda: next(speeds))
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
    # the loads seen: the start, each counted round of the protocol and of the warm workloads, after
    # fencing and after snapshot loading; above the cores, a warning says the ratios are off
    assert len(figures["loads_seen"]) == 1 + 2 * figures["rounds"] + 2
    busy = f"the load average reached {kraftspec.bench_stats.cores() + 2.0:.2f}"
    assert len(figures["warnings"]) == 2 and figures["warnings"][0].startswith(busy)
    assert f"warning: {busy}" in text
    # the speed read at the start, after the protocol, the warm workloads, fencing and snapshot loading
    assert figures["machine_speed"] == [10.0, 10.2, 9.9, 10.1, 6.0]
    assert "machine speed 10.00 thousand reference loops/s at the start" in text
    assert "machine speed 6.00 thousand reference loops/s at the end" in text
    moved = "the machine's own speed, a fixed piece of plain Python timed between the rounds, moved from 6.00 to 10.20"
    assert figures["warnings"][1].startswith(moved) and f"warning: {moved}" in text


def test_bench_kafka_refuses_a_malformed_release_in_one_line(capsys):
    assert main(["bench", "kafka", "--quick", "--kafka-version", "4.x"]) == 2
    err = capsys.readouterr().err
    assert "Kafka version '4.x'" in err and "Traceback" not in err
    assert main(["bench", "impl", "--kafka-version", "4.1.0"]) == 2
    assert "--kafka-version goes with the kafka target only" in capsys.readouterr().err
    assert main(["bench", "spark", "--kafka-version", "4.1.0"]) == 2
    assert "--kafka-version goes with the kafka target only" in capsys.readouterr().err
    assert main(["bench", "conformance", "--whole-job"]) == 2
    assert "--whole-job goes with the spark target only" in capsys.readouterr().err


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


def test_interleaved_rounds_rotate_the_legs_and_keep_each_legs_figures_in_round_order():
    from kraftspec.bench_stats import interleaved

    ran, orders = [], []
    counter = iter(range(100))

    def leg(name):
        def run():
            ran.append(name)
            return float(next(counter))
        return run

    figures = interleaved({"A": leg("A"), "B": leg("B")}, 4, lambda r, order, this: orders.append(order))
    assert ran == ["A", "B", "B", "A", "A", "B", "B", "A"]  # ABBA ABBA: neither always first
    assert orders == [["A", "B"], ["B", "A"], ["A", "B"], ["B", "A"]]
    assert figures == {"A": [0.0, 3.0, 4.0, 7.0], "B": [1.0, 2.0, 5.0, 6.0]}
    three = []
    interleaved({n: (lambda n=n: three.append(n) or 0.0) for n in "ABC"}, 3)
    assert three == list("ABCBCACAB")  # each leg once in each position


def test_the_stats_warn_of_a_wide_spread_and_of_ratios_two_workers_cannot_give():
    from kraftspec.bench_stats import impossible_warning, noise_warning, summary, verdict

    steady = summary([1.80, 1.85, 1.90])
    assert steady["median"] == 1.85 and noise_warning("local[2] against one process", steady, "1.0") is None
    wide = summary([1.2, 1.9, 2.18])
    warning = noise_warning("local[2] against one process", wide, "3.10 at the start, 1.20 at the end")
    assert "range from 1.20 to 2.18" in warning and "spread 52%" in warning and "3.10 at the start" in warning
    # 2.18x with two workers is not speed: flagged, naming the round
    flagged = impossible_warning("local[2] against one process", [1.2, 1.9, 2.18], 2, "two workers on 2 cores")
    assert "round 3: 2.18" in flagged and "round 2" not in flagged and "cannot be true" in flagged
    assert impossible_warning("x", [1.2, 1.9, 2.0], 2, "two workers") is None
    from kraftspec.bench_stats import busy_warning, cores

    assert busy_warning([0.0, float(cores())], "so what") is None  # no more work than cores
    from kraftspec.bench_stats import speed_warning

    assert speed_warning([9.0, 9.4, 8.9, 9.6]) is None  # a machine whose speed held
    moved = speed_warning([9.0, 9.4, 6.1, 9.6])  # a host that slowed this machine during one round
    assert "moved from 6.10 to 9.60 thousand loops/s" in moved and "spread 38%" in moved
    busy = busy_warning([0.5, cores() + 3.5, 1.0], "the ratios are off")
    assert f"reached {cores() + 3.5:.2f} on {cores()} cores" in busy and busy.endswith("the ratios are off")
    assert verdict(steady, 1.7) == "met"
    # a median shown as 1.70x against a goal of 1.70x, and not met: the verdict says by how much
    assert verdict(summary([1.69957, 1.69957]), 1.7) == "NOT met (short by 0.03%: 1.6996 against 1.7)"
    assert verdict(summary([19.9, 19.9]), 20, higher_is_better=False) == "met (ahead by 0.50%: 19.9 against 20)"
    assert verdict(summary([1.7, 1.7]), 1.7) == "met" and verdict(summary([1.8, 1.8]), 1.7) == "met"
    # a large figure is written out, never in exponent form
    assert verdict(summary([99_465, 99_465]), 100_000) == "NOT met (short by 0.53%: 99,465 against 100,000)"
    assert verdict(summary([1_234_567.8, 1_234_567.8]), 1_240_000) == "NOT met (short by 0.44%: 1,234,568 against 1,240,000)"
    from kraftspec.bench import verdict as single_verdict

    assert single_verdict(5.02, 5.0, False) == "NOT met (short by 0.40%: 5.02 against 5)"
    assert single_verdict(0.4, 0.5, True) == "NOT met"
    assert verdict(summary([1.5, 1.8, 1.9]), 1.7) == "met, but the rounds fall on both sides of it"
    assert verdict(summary([30.0, 33.0, 35.0]), 20, higher_is_better=False) == "NOT met"


def test_bench_spark_quick_measures_the_four_ways_interleaved_and_stops_its_sessions(tmp_path, monkeypatch):
    import multiprocessing

    from kraftspec import bench_spark

    # the whole job is kraftspec conform itself, run for real in the test below; here, what bench
    # makes of the seconds it reports
    jobs = []

    def whole_job(traces, profile):
        jobs.append((traces, profile))
        return {"traces": traces, "events": traces * 50, "seconds": 15.0, "minutes": 0.25,
                "events_per_second": traces * 50 // 15, "command": "kraftspec conform ..."}

    monkeypatch.setattr(bench_spark, "whole_job", whole_job)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["bench", "spark", "--quick", "--whole-job", "--json", str(tmp_path / "figures.json")]) == 0
    assert jobs == [(10_000, "kip-631")]  # --quick: 1/100 of the million
    assert multiprocessing.active_children() == []  # the pool and both Spark sessions' processes have ended
    figures = json.loads((tmp_path / "figures.json").read_text())
    rounds = figures["rounds"]
    assert rounds == 2 and len(figures["round_load"]) == rounds
    for leg in ("one process", "2-process pool", "Spark local[1]", "Spark local[2]"):
        assert len(figures[leg]["runs"]) == rounds and figures[leg]["median"] > 0, leg
        assert figures[leg]["min"] <= figures[leg]["median"] <= figures[leg]["max"], leg
    for name in ("2-process pool", "Spark local[1]", "Spark local[2]"):
        assert figures["start-up"][name] > 0, name
    # the ratios are the medians of the rounds' ratios
    single, local2 = figures["one process"]["runs"], figures["Spark local[2]"]["runs"]
    assert figures["speedup"]["runs"] == [s / l for s, l in zip(single, local2, strict=True)]
    assert figures["speedup"]["goal"] == 1.7 and figures["of_pool"]["goal"] == 0.9
    assert figures["projected_minutes"]["goal"] == 20
    # the projection counts a small job's time (one trace a task) once, the start of the million-trace
    # job's 126 further tasks (40 ms each, on 2 workers), and the rest of each round's time per trace
    # (a round whose small job took as long as the workload, as on a busy machine, counts the whole
    # workload per trace, and says so)
    fixed = figures["fixed_seconds"]["Spark local[2]"]
    assert len(fixed) == rounds and all(f > 0 for f in fixed)
    once = [f if f < s else 0.0 for f, s in zip(fixed, local2, strict=True)]
    assert figures["projected_minutes"]["runs"] == pytest.approx(
        [(f + 1_000_000 * (s - f) / figures["traces"] + 126 * 0.04 / 2) / 60 for s, f in zip(local2, once, strict=True)])
    for round_, (f, s) in enumerate(zip(fixed, local2, strict=True), start=1):
        said = [w for w in figures["warnings"] if w.startswith(f"in round {round_}, the job of one trace a task")]
        assert len(said) == (f >= s), (round_, f, s)
    assert len(figures["load_average"]["start"]) == len(figures["load_average"]["end"]) == 3
    assert len(figures["machine_speed"]) == rounds + 3 and all(speed > 0 for speed in figures["machine_speed"])
    text = out.getvalue()
    assert f"machine speed {figures['machine_speed'][0]:.2f} thousand reference loops/s at the start" in text
    assert "round 1 of 2" in text and "round 2 of 2" in text and "load average" in text
    assert "at the start" in text and "at the end" in text
    assert "local[2] against one process" in text and "goal 1.70x" in text
    for warning in figures["warnings"]:  # whatever the load was, every warning is printed as it is recorded
        assert f"warning: {warning}" in text
    # 10,000 traces in a quarter of a minute: 25 minutes for the million, the goal not met
    job = figures["whole_job"]
    assert (job["traces"], job["goal_minutes"], job["met"]) == (10_000, 20, False)
    assert ("10,000 traces of 50 events, the whole job: 0.2 minutes (15.0 s, 33,333 events/s, 25.0 minutes at "
            "1,000,000); goal 20 minutes for 1,000,000: NOT met") in text
    assert job["load_after"] >= 0  # the load and the machine's speed are read after the job too


def test_the_projection_counts_a_job_s_fixed_time_once_or_warns_when_a_round_cannot_tell_it_apart():
    from kraftspec.bench_spark import projection

    # 4,000 traces in 10 s, of which 1 s is what any job costs: 999,996 further traces at 9 s a 4,000
    minutes, warnings = projection([10.0], [1.0], 4000, 2.5)
    assert minutes == pytest.approx([(1.0 + 1_000_000 * 9.0 / 4000 + 2.5) / 60]) and warnings == []
    # the small job as slow as the workload, in round 2 only: that round counts all 10 s per trace
    minutes, warnings = projection([10.0, 10.0], [1.0, 10.0], 4000, 2.5)
    assert minutes[1] == pytest.approx((1_000_000 * 10.0 / 4000 + 2.5) / 60) and minutes[1] > minutes[0]
    assert warnings == ["in round 2, the job of one trace a task took 10.00 s and the workload 10.00 s on local[2]: "
                        "that round's projection counts the whole workload's time per trace, an overestimate"]


def test_the_whole_job_is_kraftspec_conform_run_as_a_user_runs_it(tmp_path):
    from kraftspec.bench_spark import whole_job

    job = whole_job(60)
    assert (job["traces"], job["events"]) == (60, 3000) and job["seconds"] > 0
    assert job["minutes"] == job["seconds"] / 60 and job["events_per_second"] == round(3000 / job["seconds"])
    assert job["command"].startswith("kraftspec conform --traces 60 --steps 50 --profile kip-631")
    # a job that cannot run says how it ended, in one message
    with pytest.raises(RuntimeError, match="exit status 2") as failure:
        whole_job(60, profile="no-such-profile")
    assert "Traceback" not in str(failure.value)


def test_bench_help_speaks_to_users_and_its_goals_are_written_where_it_says(capsys):
    """No issue numbers and no reStructuredText in what argparse prints; each target's goals are
    stated in the README section its help names."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = capsys.readouterr().out
    assert "issue" not in text.lower() and "``" not in text and ":func:" not in text
    for source in (root / "cli").glob("bench*.py"):  # nor in anything bench prints, nor its docstrings
        assert not re.search(r"[Ii]ssue \d", source.read_text()), source
    flat = " ".join(text.split())
    named = re.findall(r'([a-z]+/README\.md), section "([^"]+)"', flat)
    assert [section for _, section in named] == [
        "Performance", "Throughput: kraftspec bench conformance", "Spark: kraftspec bench spark",
        "Against Apache Kafka's controller: kraftspec bench kafka"]
    from kraftspec.bench import GOALS

    goals = {"Performance": [f"{GOALS['heartbeats_per_s']:,}", f"{GOALS['fence_ms']:.0f} ms", f"{GOALS['controlled_shutdown_ms']:.0f} ms",
                             f"{GOALS['snapshot_load_s']:.0f} s", f"{GOALS['bytes_per_partition']:.0f} bytes"],
             "Throughput: kraftspec bench conformance": ["30,000", "100,000", "20,000"],
             "Spark: kraftspec bench spark": ["1.7", "90%", "20 minutes"],
             "Against Apache Kafka's controller: kraftspec bench kafka": ["0.5"]}
    for file, section in named:
        readme = (root / file).read_text()
        headings = [(m.start(), len(m.group(1)), m.group(2).replace("`", "").strip())
                    for m in re.finditer(r"^(#+) (.*)$", readme, re.M)]
        [(start, level)] = [(start, level) for start, level, title in headings if title == section]
        end = min([s for s, lv, _ in headings if s > start and lv <= level], default=len(readme))
        body = readme[start:end]
        for goal in goals[section]:
            assert goal in body, (file, section, goal)
        for goal in goals[section]:  # and the help tells the same goals
            assert goal.split()[0] in flat, goal


def test_bench_spark_without_java_says_so_in_one_line_and_starts_nothing(tmp_path, monkeypatch, capsys):
    import multiprocessing

    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # no bin/java there
    assert main(["bench", "spark", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "Java was not found" in err and "Traceback" not in err
    assert multiprocessing.active_children() == []


def test_the_machine_speed_is_a_fixed_piece_of_work_timed_for_about_the_time_asked():
    """The reference work does the same thing every time, whatever kraftspec's code is, and the
    probe times it for about the time asked, so that its rate can be compared across runs."""
    import time

    from kraftspec.bench_stats import _reference_loop, machine_speed

    assert len({_reference_loop() for _ in range(3)}) == 1
    started = time.perf_counter()
    speed = machine_speed(0.05)
    took = time.perf_counter() - started
    assert speed > 0 and took >= 0.05
