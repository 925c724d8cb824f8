"""``kraftspec bench impl``: impl's figures against its goals (impl/README.md, Performance), and the
model beside it. Where impl aims higher than it first did, the goals were raised: fencing at most
5 ms (was 20), a snapshot of 1,000,000 partitions loaded in at most 3 s (was 10) at most 300 bytes
per partition (was 600).

Prints, as each is measured:
  * heartbeats handled per second on one core, at 10 brokers / 1,000 partitions and at
    1,000 brokers / 1,000,000 partitions (replication factor 3);
  * the controller time to fence one broker that leads 1,000 partitions and follows 2,000, in
    clusters of 10,000, 100,000 and 1,000,000 partitions;
  * the controller time of that broker's controlled shutdown (every leadership moved);
  * loading a snapshot of 1,000,000 partitions from disk, in a fresh process: time and memory
    (resident set growth per partition);
  * the model on the small heartbeat workload, and impl/model.

Figures are medians of repeated runs; the machine may be shared, so compare ratios.
``--quick`` runs everything at 1/100 of the sizes (a smoke test, not a measurement).

``kraftspec bench kafka``: impl against Apache Kafka's controller on the same workloads, in one
run, interleaved round by round (Kafka, then impl, repeated), as medians with their spread and
the ratio of the two: the same walks over the conformance protocol (the Kafka adapter against impl
behind the example server); then warm and in process (Bench.java in the adapter's jar against
impl's Controller API) heartbeats and a record-producing mix of ISR changes, against the goal of
at least 0.5x Kafka; fencing a broker that leads 1,000 partitions and follows 2,000 among
1,000,000 (Kafka's QuorumController holding them, a heartbeat with WantFence until its reply;
impl's goal at most 5 ms); and loading a 1,000,000-partition snapshot in a fresh process (Kafka's
snapshot reader into a MetadataImage in a JVM; impl's Controller.open; impl's goals at most 3 s and
300 bytes per partition), time and memory. Every ratio is one where higher is better for impl:
rates impl/Kafka, times and sizes Kafka's over impl's. The load average is printed, and a warning
when the rounds' ratios spread too widely for the ratio to mean anything.

``--profile NAME`` builds every controller, model configuration and walk of the workloads under
that behaviour profile, with its default timings (default kip-631).
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from kraftspec.spec.profiles import DEFAULT_PROFILE

GOALS = {
    "heartbeats_per_s": 250_000,
    "heartbeat_scale_ratio": 0.8,
    "fence_ms": 5.0,  # was 20
    "controlled_shutdown_ms": 50.0,
    "snapshot_load_s": 3.0,  # was 10
    "bytes_per_partition": 300.0,  # was 600
}


def say(out, text: str) -> None:
    out.write(text + "\n")
    out.flush()


# ---- building clusters in impl --------------------------------------------------------


def impl_config(profile: str = DEFAULT_PROFILE):
    """impl's configuration of behaviour ``profile``, with the profile's default timings."""
    from kraftspec.impl.config import ControllerConfig
    from kraftspec.spec.profiles import profile as profile_named

    interval, timeout = profile_named(profile).default_timings
    return ControllerConfig(heartbeat_interval_ms=interval, session_timeout_ms=timeout, profile=profile)


def model_config(profile: str = DEFAULT_PROFILE):
    """The model's configuration of behaviour ``profile``, with the profile's default timings."""
    from kraftspec.model import Config

    return Config.for_profile(profile)


def impl_cluster(partitions: int, brokers: int, directory: str | None = None, profile: str = DEFAULT_PROFILE):
    """An impl controller of behaviour ``profile`` holding ``partitions`` partitions over
    ``brokers`` unfenced brokers, replicas placed round-robin (partition p on p, p+1, p+2 mod
    brokers), so that every broker leads partitions/brokers partitions and follows twice as many.
    Committed."""
    from kraftspec.impl.controller import Controller
    from kraftspec.impl.messages import PartitionRecord, Struct

    config = impl_config(profile)
    controller = Controller.create(directory, config=config) if directory else Controller(config)
    per_topic = 1000
    chunk: list[Struct] = []  # the records of the next batch

    def flush():
        controller._open_batch()
        for record in chunk:
            controller._add(record)
        controller._close_batch()
        chunk.clear()

    say = controller.formats  # the profile's record formats (DEC-22)
    for b in range(brokers):
        epoch = controller.log_end_offset + len(chunk)  # DEC-4: the offset of its registration record
        chunk += say.registration(b, uuid.UUID(int=b + 1), epoch, (), (), None, fenced=False)
    flush()
    for t in range(max(1, partitions // per_topic)):
        topic_id = uuid.UUID(int=1_000_000 + t)
        chunk.append(say.topic(f"topic-{t:05d}", topic_id))
        for i in range(min(per_topic, partitions)):
            p = t * per_topic + i
            replicas = (p % brokers, (p + 1) % brokers, (p + 2) % brokers)
            chunk.append(PartitionRecord(
                partition_id=i, topic_id=topic_id, replicas=replicas, isr=replicas, leader=replicas[0],
                leader_epoch=0, partition_epoch=0,
            ))
        if len(chunk) >= 10_000:
            flush()
    if chunk:
        flush()
    controller._commit_to(controller.log_end_offset)
    for b in range(brokers):
        controller.leases.start(b, 0, fenced=False)
    return controller


def heartbeat_rate(controller, brokers: int, version: int, count: int) -> float:
    from kraftspec.impl.messages import BrokerHeartbeatRequest

    offset = controller.committed_offset
    requests = [
        BrokerHeartbeatRequest(broker_id=b, broker_epoch=controller.state.cluster.brokers[b].epoch, current_metadata_offset=offset)
        for b in range(brokers)
    ]
    handle = controller.handle_request
    start = time.perf_counter()
    for i in range(count):
        handle(requests[i % brokers], version)
    return count / (time.perf_counter() - start)


def timed_heartbeat(controller, broker_id: int, **flags) -> tuple[float, object]:
    from kraftspec.impl.messages import BrokerHeartbeatRequest

    request = BrokerHeartbeatRequest(
        broker_id=broker_id,
        broker_epoch=controller.state.cluster.brokers[broker_id].epoch,
        current_metadata_offset=controller.committed_offset,
        **flags,
    )
    start = time.perf_counter()
    outcome = controller.handle_request(request, 1)
    return time.perf_counter() - start, outcome


def cpu_timed_heartbeat(controller, broker_id: int, **flags) -> tuple[float, float]:
    """:func:`timed_heartbeat`'s wall time and this thread's CPU time (on a shared machine the
    second leaves out the time other processes held the core)."""
    cpu_start = time.thread_time()
    seconds, _ = timed_heartbeat(controller, broker_id, **flags)
    return seconds, time.thread_time() - cpu_start


# ---- the model ------------------------------------------------------------------------


def model_heartbeat_rate(partitions: int, brokers: int, count: int, profile: str = DEFAULT_PROFILE) -> float:
    from kraftspec.model import Commit, initial_state, step
    from kraftspec.model.messages import (
        BrokerHeartbeatRequest,
        BrokerRegistrationRequest,
        CreatableTopic,
        CreateTopicsRequest,
        Feature,
    )

    state = initial_state(model_config(profile))
    features = [Feature(f.name, f.min_level, f.max_level) for f in state.config.finalized_features]
    for b in range(brokers):
        state = step(state, BrokerRegistrationRequest(b, state.config.cluster_id, uuid.UUID(int=b + 1), features=features)).state
    state = step(state, Commit(state.log_end_offset)).state
    for b in range(brokers):
        state = step(state, BrokerHeartbeatRequest(b, state.image.brokers[b].epoch, state.committed_offset, False, False)).state
    state = step(state, Commit(state.log_end_offset)).state
    topic = CreatableTopic("topic", uuid.UUID(int=99), partitions, min(3, brokers))
    state = step(state, CreateTopicsRequest([topic])).state
    state = step(state, Commit(state.log_end_offset)).state
    requests = [BrokerHeartbeatRequest(b, state.image.brokers[b].epoch, state.committed_offset, False, False) for b in range(brokers)]
    start = time.perf_counter()
    for i in range(count):
        state = step(state, requests[i % brokers]).state
    return count / (time.perf_counter() - start)


# ---- snapshot loading, in a fresh process ------------------------------------------------

_LOAD = """
import json, os, sys, time
from kraftspec.impl.controller import Controller
page = os.sysconf("SC_PAGE_SIZE")
def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
before = resident()
start, cpu_start = time.perf_counter(), time.process_time()
controller = Controller.open(sys.argv[1])
seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
after = resident()
partitions = sum(len(t.partitions) for t in controller.state.replication.topics.values())
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "bytes": after - before, "partitions": partitions}))
controller.close()
"""


def snapshot_load(partitions: int, brokers: int, out) -> dict:
    with tempfile.TemporaryDirectory(prefix="kraftspec-bench-") as directory:
        start = time.perf_counter()
        controller = impl_cluster(partitions, brokers, directory)
        controller.take_snapshot()
        controller.close()
        say(out, f"  (wrote the {partitions:,}-partition snapshot in {time.perf_counter() - start:.1f} s)")
        runs = []
        for _ in range(2):
            result = subprocess.run([sys.executable, "-c", _LOAD, directory], capture_output=True, text=True, check=True)
            runs.append(json.loads(result.stdout))
        best = min(runs, key=lambda r: r["seconds"])
        assert best["partitions"] == partitions, best
        return {"seconds": best["seconds"], "cpu_seconds": best["cpu_seconds"], "bytes_per_partition": best["bytes"] / partitions}


# ---- the run -----------------------------------------------------------------------------


def verdict(value: float, goal: float, higher_is_better: bool) -> str:
    """``met`` or ``NOT met``, by how much where it is a close call (bench_stats.value_verdict)."""
    from kraftspec.bench_stats import value_verdict

    return value_verdict(value, goal, higher_is_better)


def measured_brokers(brokers: int, count: int, offset: float = 0.0) -> list[int]:
    """``count`` broker ids spread evenly over the cluster (at most ``brokers`` of them)."""
    step = brokers / count
    return sorted({int((i + offset) * step) % brokers for i in range(count)})


def median_of(runs: int, measure: Callable[..., float], *args: Any) -> float:
    """The median of ``runs`` calls of ``measure(*args)`` (the arguments are taken now, not looked
    up at each call, so a cluster deleted later is never measured by mistake)."""
    return statistics.median(measure(*args) for _ in range(runs))


def bench_impl(scale: float, out, profile: str = DEFAULT_PROFILE) -> dict:
    from kraftspec.bench_stats import machine_speed, speed_line, speed_warning

    speeds = [machine_speed()]
    say(out, speed_line(speeds[0], "at the start"))
    figures: dict = {"scale": scale, "profile": profile, "machine_speed": speeds}
    small_p, small_b = 1000, 10
    big_p, big_b = int(1_000_000 * scale), max(10, int(1000 * scale))
    count = int(300_000 * max(scale, 0.1))

    say(out, f"heartbeats per second, one core (median of 3 runs of {count:,})")
    small = impl_cluster(small_p, small_b, profile=profile)
    figures["heartbeats_small_v1"] = median_of(3, heartbeat_rate, small, small_b, 1, count)
    figures["heartbeats_small_v0"] = median_of(3, heartbeat_rate, small, small_b, 0, count)
    say(out, f"  {small_b} brokers / {small_p:,} partitions: v1 {figures['heartbeats_small_v1']:,.0f}/s, v0 {figures['heartbeats_small_v0']:,.0f}/s "
             f"(goal {GOALS['heartbeats_per_s']:,}/s: {verdict(figures['heartbeats_small_v1'], GOALS['heartbeats_per_s'], True)})")
    start = time.perf_counter()
    big = impl_cluster(big_p, big_b, profile=profile)
    say(out, f"  (built {big_b:,} brokers / {big_p:,} partitions in {time.perf_counter() - start:.1f} s)")
    figures["heartbeats_big_v1"] = median_of(3, heartbeat_rate, big, big_b, 1, count)
    ratio = figures["heartbeats_big_v1"] / figures["heartbeats_small_v1"]
    figures["heartbeat_scale_ratio"] = ratio
    say(out, f"  {big_b:,} brokers / {big_p:,} partitions: v1 {figures['heartbeats_big_v1']:,.0f}/s, "
             f"{ratio:.2f} of the small cluster (goal at least {GOALS['heartbeat_scale_ratio']}: {verdict(ratio, GOALS['heartbeat_scale_ratio'], True)})")

    say(out, "controlled shutdown of such a broker, every leadership moved (median of 3 brokers)")
    times, moved = [], []
    for broker_id in measured_brokers(big_b, 3, offset=0.5):
        leads_before = big.state.replication.leaderships.get(broker_id, 0)
        seconds, _ = timed_heartbeat(big, broker_id, want_shut_down=True)
        times.append(seconds)
        moved.append(leads_before - big.state.replication.leaderships.get(broker_id, 0))
        big.commit(big.log_end_offset)
    figures["controlled_shutdown_ms"] = statistics.median(times) * 1000
    say(out, f"  {figures['controlled_shutdown_ms']:.1f} ms for {statistics.median(moved):,.0f} leaderships moved, and the broker fenced "
             f"(goal at most {GOALS['controlled_shutdown_ms']:.0f} ms: {verdict(figures['controlled_shutdown_ms'], GOALS['controlled_shutdown_ms'], False)})")

    say(out, "fencing a broker that leads 1,000 partitions and follows 2,000 (median of 5 brokers)")
    figures["fence_ms"], figures["fence_cpu_ms"] = {}, {}
    for partitions in sorted({int(10_000 * max(scale, 0.1)), int(100_000 * scale), big_p}):
        brokers = max(3, partitions // 1000)
        times, cpu_times = [], []
        shared = big if partitions == big_p else impl_cluster(partitions, brokers, profile=profile) if brokers >= 15 else None
        for broker_id in measured_brokers(brokers, 5):
            # brokers far apart hold no partition in common, so one fencing does not change what the
            # next one holds; a cluster too small for that is built afresh for each run
            cluster = shared or impl_cluster(partitions, brokers, profile=profile)
            seconds, cpu = cpu_timed_heartbeat(cluster, broker_id, want_fence=True)
            times.append(seconds)
            cpu_times.append(cpu)
            cluster.commit(cluster.log_end_offset)
        figures["fence_ms"][partitions] = statistics.median(times) * 1000
        figures["fence_cpu_ms"][partitions] = statistics.median(cpu_times) * 1000
        say(out, f"  {partitions:>9,} partitions ({brokers:,} brokers): {figures['fence_ms'][partitions]:.1f} ms "
                 f"(goal at most {GOALS['fence_ms']:.0f} ms: {verdict(figures['fence_ms'][partitions], GOALS['fence_ms'], False)}; "
                 f"CPU {figures['fence_cpu_ms'][partitions]:.1f} ms)")

    del big

    say(out, f"loading a snapshot of {big_p:,} partitions from disk, in a fresh process")
    load = snapshot_load(big_p, big_b, out)
    figures["snapshot_load_s"], figures["bytes_per_partition"] = load["seconds"], load["bytes_per_partition"]
    figures["snapshot_load_cpu_s"] = load["cpu_seconds"]
    say(out, f"  {load['seconds']:.1f} s (goal at most {GOALS['snapshot_load_s']:.0f} s: {verdict(load['seconds'], GOALS['snapshot_load_s'], False)}; "
             f"CPU {load['cpu_seconds']:.1f} s); "
             f"{load['bytes_per_partition']:.0f} bytes per partition of resident memory "
             f"(goal at most {GOALS['bytes_per_partition']:.0f}: {verdict(load['bytes_per_partition'], GOALS['bytes_per_partition'], False)})")

    say(out, f"the model on the small workload ({small_b} brokers / {small_p:,} partitions)")
    model_count = max(2000, count // 30)
    figures["model_heartbeats_small"] = median_of(3, model_heartbeat_rate, small_p, small_b, model_count, profile)
    figures["impl_model_ratio"] = figures["heartbeats_small_v0"] / figures["model_heartbeats_small"]
    say(out, f"  model {figures['model_heartbeats_small']:,.0f} heartbeats/s; impl/model {figures['impl_model_ratio']:.0f}x")
    speeds.append(machine_speed())
    say(out, speed_line(speeds[-1], "at the end"))
    warning = speed_warning(speeds)
    figures["warnings"] = [warning] if warning else []
    if warning:
        say(out, f"warning: {warning}")
    return figures


CONFORMANCE_GOALS = {"replay_events_per_s": 100_000, "generate_events_per_s": 30_000, "subprocess_events_per_s": 20_000}
"""Conformance throughput goals, in events per second: generation by the model on one core, replay
against impl in process at every level, replay through the subprocess adapter (conformance/README.md,
"Throughput: kraftspec bench conformance")."""

CONFORMANCE_LEGS = (
    # (the figure's key, what it is, its goal's key)
    ("generate", "generation by the model, one core", "generate_events_per_s"),
    ("replay_responses", "replay in process, level responses", "replay_events_per_s"),
    ("replay_state", "replay in process, level state", "replay_events_per_s"),
    ("replay_records", "replay in process, level records", "replay_events_per_s"),
    ("subprocess_responses", "subprocess adapter, level responses", "subprocess_events_per_s"),
    ("subprocess_records", "subprocess adapter, level records", "subprocess_events_per_s"),
)


def bench_conformance(scale: float, out, profile: str = DEFAULT_PROFILE) -> dict:
    """Conformance throughput in events per second: generation by the model, replay of impl in
    process (at each level, the conversion of the trace into impl's objects included), replay
    through the subprocess adapter (impl behind the example server). The same walks for all, recorded
    under ``profile``; the six legs measured interleaved, round by round (bench_stats), each figure
    the median of the rounds."""
    from kraftspec.bench_stats import busy_warning, interleaved, load_average, load_line, loads_seen, noise_warning, show, summary
    from kraftspec.bench_stats import machine_speed, speed_line, speed_warning
    from kraftspec.bench_stats import verdict as rounds_verdict
    from kraftspec.conformance.adapters import ImplAdapter
    from kraftspec.conformance.generate import walk
    from kraftspec.conformance.replay import replay
    from kraftspec.conformance.spark import collected_every
    from kraftspec.conformance.subprocess_adapter import SubprocessAdapter

    quick = scale < 1
    rounds = 2 if quick else 5
    config = model_config(profile)
    seeds, steps = range(max(4, int(200 * scale))), 200
    line, start_load = load_line("at the start")
    say(out, line)
    speeds = [machine_speed()]
    say(out, speed_line(speeds[0], "at the start"))
    figures: dict = {"scale": scale, "profile": profile, "rounds": rounds, "load_average": {"start": start_load},
                     "machine_speed": speeds}

    def generate() -> list:
        traces = [walk(seed, steps, config=config) for seed in seeds]
        for trace in traces:
            _ = trace.name  # naming a trace is part of producing it
        return traces

    started = time.perf_counter()
    traces = generate()  # also the warm-up of generation
    names = [trace.name for trace in traces]
    events = sum(len(t.steps) for t in traces)
    # The walks the replay legs replay are the fixture, not the work: kept out of the cyclic
    # collector's way (otherwise each full collection walks all of them, which a conform run,
    # holding one walk at a time, never does).
    gc.collect()
    gc.freeze()
    say(out, f"the workload: {len(traces)} walks of {steps} events ({events:,} events) generated by the model, replayed "
             f"against impl in process and through the subprocess adapter; {rounds} rounds, each running every leg once "
             f"in an order rotated from round to round (warm-up: {time.perf_counter() - started:.1f} s, not counted)")
    figures["events"] = events

    def generation() -> float:
        """Each walk generated and named, then let go, as a conform task does it: with the cyclic
        collector paused, and run over the young objects every COLLECT_EVERY walks and once at the
        end, in the time (check_seeds); the replay legs pause it too."""
        started = time.perf_counter()
        again = [walk(seed, steps, config=config).name for seed in collected_every(seeds)]
        gc.collect(1)  # what the walks left since the last collection, in the time
        seconds = time.perf_counter() - started
        if again != names:
            raise RuntimeError("the model generated other walks from the same seeds")
        return events / seconds

    def replaying(adapter, level: str):
        """A leg replaying every walk at ``level``: through ``adapter``, or in process (None) with a
        new ImplAdapter for each walk."""
        def leg() -> float:
            started = time.perf_counter()
            verdicts = [replay(trace, adapter or ImplAdapter(), level) for trace in traces]
            seconds = time.perf_counter() - started
            failed = [v.report() for v in verdicts if not v.passed]
            if failed:
                raise RuntimeError(f"a walk failed its replay at level {level}:\n{failed[0]}")
            return events / seconds
        return leg

    adapter = SubprocessAdapter([sys.executable, "-m", "kraftspec.conformance.examples.impl_server"])
    try:
        for level in ("responses", "state", "records"):  # warm up both: caches, the server's start and imports
            replay(traces[0], ImplAdapter(), level)
            replay(traces[0], adapter, level)
        legs = {"generate": generation}
        for level in ("responses", "state", "records"):
            legs[f"replay_{level}"] = replaying(None, level)
        for level in ("responses", "records"):
            legs[f"subprocess_{level}"] = replaying(adapter, level)

        def told(round_: int, order: list[str], rates: dict[str, float]) -> None:
            load = load_average()[0]
            figures.setdefault("round_load", []).append(load)
            speeds.append(machine_speed())
            say(out, f"  round {round_ + 1} of {rounds}: " + ", ".join(f"{key.replace('_', ' ')} {rates[key]:,.0f}" for key in order)
                + f" events/s (load average {load:.2f}, machine speed {speeds[-1]:.2f})")

        runs = interleaved(legs, rounds, told)
    finally:
        adapter.shutdown()
        gc.unfreeze()

    line, end_load = load_line("at the end")
    figures["load_average"]["end"] = end_load
    seen = loads_seen(start_load, end_load, figures["round_load"])
    warnings: list[str] = []
    say(out, "events per second (median of the rounds, their range and spread) against the goals:")
    for key, what, goal_key in CONFORMANCE_LEGS:
        figure = summary(runs[key])
        goal = CONFORMANCE_GOALS[goal_key]
        figure.update(goal=goal, met=figure["median"] >= goal)
        figures[f"{key}_events_per_s"] = figure["median"]
        say(out, f"  {what:<36}: {show(figure, 'events/s')}; goal {goal:,}: {rounds_verdict(figure, goal)}")
        warning = noise_warning(what, figure, seen, form="{:,.0f}")
        if warning is not None:
            figure["warning"] = warning
            warnings.append(warning)
            say(out, f"    warning: {warning}")
        figures[key] = figure
    busy = busy_warning([start_load[0], *figures["round_load"], end_load[0]],
                        "the figures above are lower than this machine gives when it is free, even where the rounds agree")
    speeds.append(machine_speed())
    for warning in (busy, speed_warning(speeds)):
        if warning is not None:
            warnings.append(warning)
            say(out, f"warning: {warning}")
    say(out, line)
    say(out, speed_line(speeds[-1], "at the end"))
    if warnings:
        say(out, f"{len(warnings)} warning(s): those figures are not a fair measurement of this machine; measure "
                 "again when the load average stays below its number of cores")
    figures["warnings"] = warnings
    return figures


# ---- impl against Apache Kafka's controller -------------------------------------------------

KAFKA_GOAL = 0.5
"""impl's goal against Kafka's warm controller: at least half its throughput, on heartbeats and on
a record-producing mix."""

FENCE_GOAL_MS = GOALS["fence_ms"]
"""impl's goal for fencing a broker that holds 1,000 leaderships and 2,000 ISR places among 1,000,000 partitions."""

SNAPSHOT_GOAL_S = GOALS["snapshot_load_s"]
SNAPSHOT_GOAL_BYTES = GOALS["bytes_per_partition"]
"""impl's goals for loading a 1,000,000-partition snapshot: time, and resident bytes per partition."""

NOISY = 0.25
"""A relative spread (max - min over the median) beyond which a comparison is not meaningful."""

BENCH_CLASS = "dev.kraftspec.kafka.Bench"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def spread(values: list[float]) -> dict:
    """The median of ``values``, their range and their relative spread (max - min over the median)."""
    median = statistics.median(values)
    return {"median": median, "min": min(values), "max": max(values),
            "spread": (max(values) - min(values)) / median if median else float("inf"), "runs": values}


def show(figure: dict, unit: str) -> str:
    digits = 2 if figure["median"] < 100 else 0
    return (f"{figure['median']:,.{digits}f} {unit} (min {figure['min']:,.{digits}f}, max {figure['max']:,.{digits}f}, "
            f"spread {figure['spread']:.0%})")


def drive(trace, adapter) -> int:
    """Every event of ``trace`` sent through ``adapter``, its answers taken but not compared (Kafka
    departs from kraftspec's traces where their decisions differ; the events go on regardless).
    The number of events answered: a trace ends early only if the server reports a fault."""
    from kraftspec.conformance.adapters import AdapterFailure

    adapter.start(trace.header.config)
    adapter.prepare(trace, "responses", [False] * len(trace.steps))
    answered = 0
    try:
        for step in trace.steps:
            adapter.step(step.event)
            answered += 1
    except AdapterFailure:
        pass
    finally:
        adapter.close()
    return answered


def bench_command(version: str, *options: str) -> list[str]:
    """The command line of Bench.java (the Kafka adapter's jar, built for ``version``) with ``options``."""
    import shutil

    from kraftspec.conformance import kafka

    java = shutil.which("java")
    if java is None:
        raise kafka.KafkaAdapterError("bench kafka needs Java 17 or newer, and `java` was not found on PATH")
    classpath = kafka.build(version)
    return [java, "-cp", classpath, BENCH_CLASS, "--schemas", str(kafka.schemas_dir()),
            "--metadata-version", kafka.DEFAULT_METADATA_VERSION, *options]


def kafka_once(version: str, *options: str) -> dict:
    """Bench.java run once in a fresh JVM (``--mode write-snapshot`` or ``load-snapshot``): its one answer."""
    result = subprocess.run(bench_command(version, *options), capture_output=True, text=True, check=False)
    try:
        answer = json.loads(result.stdout.strip().splitlines()[-1]) if result.stdout.strip() else None
    except ValueError:
        answer = None
    if result.returncode != 0 or not isinstance(answer, dict) or "error" in answer:
        problem = answer["error"] if isinstance(answer, dict) and "error" in answer else f"exit status {result.returncode}"
        tail = result.stderr.strip().splitlines()[-5:]
        raise RuntimeError(f"Kafka's controller benchmark (Bench.java {' '.join(options)}) failed: {problem}"
                           + ("".join("\n  " + t for t in tail) if tail else ""))
    return answer


class KafkaBench:
    """Bench.java in a JVM of its own, kept running between rounds: each workload is one command
    line in and one JSON line out (see Bench.java). ``mode`` ``fence`` builds the fencing
    benchmark's cluster (topics of 1,000 partitions, placed round-robin) instead."""

    def __init__(self, version: str, brokers: int, partitions: int, mode: str = "bench") -> None:
        self._stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            bench_command(version, "--brokers", str(brokers), "--partitions", str(partitions), "--mode", mode),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        self.ready = self._answer("starting")

    def run(self, command: str) -> dict:
        """``heartbeats COUNT``, ``mix ROUNDS`` or ``fence BROKER``: what Bench.java measured."""
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._answer(command)

    def _answer(self, what: str) -> dict:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or "error" in answer:
            self._stderr.seek(0)
            tail = self._stderr.read().decode(errors="replace").strip().splitlines()[-5:]
            problem = answer["error"] if isinstance(answer, dict) else f"it answered {line.strip()[:120]!r}"
            raise RuntimeError(f"Kafka's controller benchmark (Bench.java) failed at {what}: {problem}"
                               + ("".join("\n  " + t for t in tail) if tail else ""))
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write("quit\n")
                self.process.stdin.close()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self._stderr.close()


class ImplIsrMix:
    """The record-producing mix on impl, as Bench.java runs it on Kafka: rounds of one AlterIsr
    request per partition, from its leader, that alternately shrinks the ISR to the first two
    replicas and expands it back; each request's batch is committed as it is appended (as a quorum
    of one would), which releases its reply."""

    def __init__(self, controller, partitions: int) -> None:
        self.controller = controller
        self.topic_id = uuid.UUID(int=1_000_000)  # impl_cluster's first topic
        replication = controller.state.replication
        self.partitions = [replication.partition(self.topic_id, p) for p in range(partitions)]
        self.replicas = [tuple(p.replicas) for p in self.partitions]
        self.epochs = [(p.leader_epoch, p.partition_epoch) for p in self.partitions]
        self.shrunk = False

    def run(self, rounds: int) -> dict:
        from kraftspec.impl.messages import AlterIsrRequest

        # the requests built as a client would build them, at the least cost (make: the class's
        # constructor without the class call, as Bench.java builds Kafka's with its setters)
        topic_data, partition_data = AlterIsrRequest.TopicData.make, AlterIsrRequest.TopicData.PartitionData.make
        controller = self.controller
        brokers = controller.state.cluster.brokers
        handle, commit = controller.handle_request, controller.commit
        seconds = cpu = 0.0
        records = count = 0
        for _ in range(rounds):
            # the round keeps the replies released, as Bench.java keeps its futures' responses
            # (not every Outcome, whose batches the log holds); the records appended are the log's growth
            replies: list = []
            log_end_offset = controller.log_end_offset
            cpu_start, start = time.process_time(), time.perf_counter()
            for p, replicas in enumerate(self.replicas):
                leader_epoch, partition_epoch = self.epochs[p]
                isr = replicas if self.shrunk else replicas[:2]
                request = AlterIsrRequest.make(broker_id=replicas[0], broker_epoch=brokers[replicas[0]].epoch, topics=(
                    topic_data(topic_id=self.topic_id, partitions=(partition_data(
                        partition_index=p, leader_epoch=leader_epoch, new_isr=isr, partition_epoch=partition_epoch),)),))
                replies += handle(request, 0).replies
                replies += commit(controller.log_end_offset).replies
            seconds += time.perf_counter() - start
            cpu += time.process_time() - cpu_start
            records += controller.log_end_offset - log_end_offset
            for reply in replies:
                response = reply.response
                result = response.topics[0].partitions[0] if response.topics else None
                if response.error_code or result is None or result.error_code:
                    raise RuntimeError(f"impl refused an AlterIsr request of the mix: {response!r}")
                self.epochs[result.partition_index] = (result.leader_epoch, result.partition_epoch)
                count += 1
            self.shrunk = not self.shrunk
        return {"count": count, "seconds": seconds, "cpu_seconds": cpu, "records": records}


def impl_fence(controller, broker_id: int) -> dict:
    """A heartbeat from ``broker_id`` asking to be fenced, timed until its reply is released (its
    batch appended and committed), as Bench.java times Kafka's."""
    from kraftspec.impl.messages import BrokerHeartbeatRequest

    request = BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=controller.state.cluster.brokers[broker_id].epoch,
                                     current_metadata_offset=controller.committed_offset, want_fence=True)
    cpu_start, start = time.process_time(), time.perf_counter()
    handled = controller.handle_request(request, 0)
    committed = controller.commit(controller.log_end_offset)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    replies = handled.replies + committed.replies
    if len(replies) != 1 or replies[0].response.error_code or not replies[0].response.is_fenced:
        raise RuntimeError(f"impl did not fence broker {broker_id}: {replies!r}")
    records = sum(len(batch_records) for _, batch_records in handled.batches)
    return {"count": 1, "seconds": seconds, "cpu_seconds": cpu, "records": records}


def impl_heartbeats(controller, brokers: int, count: int) -> dict:
    cpu_start = time.process_time()
    rate = heartbeat_rate(controller, brokers, 0, count)
    return {"count": count, "seconds": count / rate, "cpu_seconds": time.process_time() - cpu_start, "records": 0}


def compare(name: str, kafka_runs: list[float], impl_runs: list[float], unit: str, out, goal: float | None,
            lower_is_better: bool = False) -> dict:
    """Print and return two interleaved series and their ratio impl/Kafka: the median of the rounds'
    ratios, each round's two figures measured one after the other, so that a load that slows both
    leaves the ratio alone. A warning when the rounds' ratios spread too widely for it to mean much.

    Every ratio is one where higher is better for impl: for rates, impl's over Kafka's; for a
    figure where lower is better (``lower_is_better``: a time, a size), Kafka's over impl's, that
    is impl's speed (or compactness) as a multiple of Kafka's."""
    kafka, impl = spread(kafka_runs), spread(impl_runs)
    pairs = zip(impl_runs, kafka_runs, strict=True)
    ratios = spread([k / i if lower_is_better else i / k for i, k in pairs])
    ratio = ratios["median"]
    figure = {"kafka": kafka, "impl": impl, "ratio": ratio, "round_ratios": ratios["runs"], "ratio_spread": ratios["spread"],
              "ratio_is": "Kafka/impl (lower is better for both, so higher is better for impl)" if lower_is_better else "impl/Kafka"}
    say(out, f"  {name}:")
    say(out, f"    Kafka {show(kafka, unit)}")
    say(out, f"    impl  {show(impl, unit)}")
    what = "impl/Kafka as Kafka's figure over impl's (lower is better, so higher is better here)" if lower_is_better else "impl/Kafka"
    text = f"    {what} {ratio:.2f} (rounds {ratios['min']:.2f} to {ratios['max']:.2f}, spread {ratios['spread']:.0%})"
    if goal is not None:
        verdict_text = verdict(ratio, goal, True)
        if ratios["min"] < goal <= ratios["max"]:
            verdict_text += ", but the rounds fall on both sides of it"
        text += f"; goal at least {goal}: {verdict_text}"
        figure["goal"] = goal
        figure["met"] = ratio >= goal
    say(out, text)
    if ratios["spread"] > NOISY:
        figure["warning"] = (f"the rounds' ratios spread over {NOISY:.0%}, too widely for this comparison to mean much "
                             f"(load average {load_average()}); run it again, on a quieter machine if the load average "
                             f"came near the number of cores")
        say(out, f"    warning: {figure['warning']}")
    return figure


def compare_protocol(version: str, scale: float, rounds: int, out, profile: str, seen: list[float]) -> dict:
    """Walks of ``profile`` driven through Kafka's controller (the Kafka adapter) and through impl
    behind the example server, round after round: events per second, as ``protocol`` (and the
    events each answered, as ``protocol_events``). Appends the load average after each round to
    ``seen``."""
    from kraftspec.bench_stats import load_average as loads_now
    from kraftspec.conformance.generate import walk
    from kraftspec.conformance.subprocess_adapter import SubprocessAdapter, kafka_adapter

    quick = scale < 1
    figures: dict = {}
    seeds, steps = range(max(2, int(40 * scale))), 200
    traces = [walk(seed, steps, config=model_config(profile)) for seed in seeds]
    say(out, f"over the protocol: {len(traces)} walks of {steps} events, every event sent, answers not compared "
             f"(Kafka {version} through --adapter kafka; impl behind the example server)")
    servers = {"Kafka": kafka_adapter(f"kafka:{version}"),
               "impl": SubprocessAdapter([sys.executable, "-m", "kraftspec.conformance.examples.impl_server"])}
    runs: dict[str, list[float]] = {"Kafka": [], "impl": []}
    try:
        warm_up = 1 if quick else 6  # the first rounds warm both up (the JVM's JIT above all) and are not counted
        for round_ in range(warm_up + rounds):
            for name, adapter in servers.items():
                start = time.perf_counter()
                events = sum(drive(trace, adapter) for trace in traces)
                if round_ >= warm_up:
                    runs[name].append(events / (time.perf_counter() - start))
                figures.setdefault("protocol_events", {})[name] = events
            if round_ >= warm_up:
                seen.append(loads_now()[0])
    finally:
        for adapter in servers.values():
            adapter.shutdown()
    figures["protocol"] = compare("events per second", runs["Kafka"], runs["impl"], "events/s", out, None)
    return figures


def bench_kafka(scale: float, out, version: str, profile: str = DEFAULT_PROFILE) -> dict:
    """impl against Apache Kafka's QuorumController: over the protocol, then warm and in process,
    the two interleaved round by round. The walks and impl's controller are of ``profile``."""
    from kraftspec.bench_stats import busy_warning, machine_speed, speed_line, speed_warning
    from kraftspec.bench_stats import load_average as loads_now

    quick = scale < 1
    rounds = 2 if quick else 5
    seen = [loads_now()[0]]  # the 1-minute load average at the start, after each round and part, at the end
    figures: dict = {"scale": scale, "kafka_version": version, "rounds": rounds, "profile": profile,
                     "load_average": {"start": load_average()}}
    say(out, f"load average {load_average()} (1, 5, 15 minutes) on {os.cpu_count()} cores; "
             f"figures are medians of {rounds} interleaved rounds, Kafka then impl")
    speeds = [machine_speed()]  # at the start, after each part, at the end
    figures["machine_speed"] = speeds
    say(out, speed_line(speeds[0], "at the start"))

    # ---- over the protocol ---- (its walks are let go before impl is measured in this process:
    # the collector would otherwise walk them, at a cost that falls on impl alone)
    figures.update(compare_protocol(version, scale, rounds, out, profile, seen))
    gc.collect()  # whatever of them sat in reference cycles
    speeds.append(machine_speed())

    # ---- warm, in process ----
    brokers, partitions = 10, 1000
    count = max(10_000, int(1_000_000 * scale))  # Kafka needs about half a second for a round of them
    mix_rounds = max(2, int(200 * scale))
    say(out, f"warm, in process: {brokers} brokers / {partitions:,} partitions, replication factor 3; "
             f"rounds of {count:,} heartbeats and of {mix_rounds * partitions:,} ISR changes (AlterIsr shrink and expand, "
             "one record each, committed as appended)")
    kafka = KafkaBench(version, brokers, partitions)
    try:
        say(out, f"  (Kafka {kafka.ready['kafka']}, metadata.version {kafka.ready['metadata_version']}: warming up its JIT)")
        for _ in range(1 if quick else 5):
            kafka.run(f"heartbeats {count}")
            kafka.run(f"mix {mix_rounds}")
        controller = impl_cluster(partitions, brokers, profile=profile)
        mix = ImplIsrMix(controller, partitions)
        impl_heartbeats(controller, brokers, count)  # impl's warm-up: its caches, one round
        mix.run(max(2, mix_rounds // 10))
        results: dict[str, dict[str, list[dict]]] = {"heartbeats": {"Kafka": [], "impl": []}, "mix": {"Kafka": [], "impl": []}}
        for _ in range(rounds):
            results["heartbeats"]["Kafka"].append(kafka.run(f"heartbeats {count}"))
            results["heartbeats"]["impl"].append(impl_heartbeats(controller, brokers, count))
            results["mix"]["Kafka"].append(kafka.run(f"mix {mix_rounds}"))
            results["mix"]["impl"].append(mix.run(mix_rounds))
            seen.append(loads_now()[0])
    finally:
        kafka.close()
    for workload, unit in (("heartbeats", "heartbeats/s"), ("mix", "ISR changes/s")):
        series = results[workload]
        for name, runs_ in series.items():
            if workload == "mix" and any(r["records"] < r["count"] for r in runs_):
                raise RuntimeError(f"{name}'s mix appended fewer records than requests: {runs_}")
        per_s = {name: [r["count"] / r["seconds"] for r in runs_] for name, runs_ in series.items()}
        per_cpu = {name: [r["count"] / r["cpu_seconds"] for r in runs_ if r["cpu_seconds"] > 0] for name, runs_ in series.items()}
        figures[workload] = compare(f"{workload}, per second of wall time", per_s["Kafka"], per_s["impl"], unit, out, KAFKA_GOAL)
        if all(len(v) == rounds for v in per_cpu.values()):
            figures[f"{workload}_per_cpu_second"] = compare(
                f"{workload}, per CPU second (all of a process's threads: Kafka's controller thread and the one sending)",
                per_cpu["Kafka"], per_cpu["impl"], unit.replace("/s", "/CPU s"), out, None)
    speeds.append(machine_speed())
    figures.update(compare_fencing(version, scale, rounds, out, profile))
    seen.append(loads_now()[0])
    speeds.append(machine_speed())
    figures.update(compare_snapshot_loading(version, scale, rounds, out, profile))
    seen.append(loads_now()[0])
    speeds.append(machine_speed())
    figures["load_average"]["end"] = load_average()
    figures["loads_seen"] = seen
    say(out, f"load average {load_average()} at the end")
    say(out, speed_line(speeds[-1], "at the end"))
    busy = busy_warning(seen, "Kafka's JVM and impl's process do not lose the same share of the cores to it, so the "
                              "ratios above are not what this machine gives when it is free, even where the rounds agree")
    figures["warnings"] = [busy] if busy else []
    if busy:
        say(out, f"warning: {busy}; measure again when the load average stays below {os.cpu_count()}")
    moved = speed_warning(speeds)
    if moved:
        figures["warnings"].append(moved)
        say(out, f"warning: {moved}")
    return figures


def compare_fencing(version: str, scale: float, rounds: int, out, profile: str = DEFAULT_PROFILE) -> dict:
    """Fencing a broker that leads 1,000 partitions and follows 2,000 in a cluster of 1,000,000
    partitions over 1,000 brokers (1/100 of that with ``--quick``), in Kafka's controller and in
    impl: the same placement, the same request (a heartbeat with WantFence), timed until its reply
    is released. Each round fences another broker, far from the others (no partition in common, so
    every fencing does the same work), Kafka's then impl's; Kafka's JIT is warmed up on brokers of
    its own first."""
    partitions, brokers = int(1_000_000 * scale), max(10, int(1000 * scale))
    quick = scale < 1
    warm_up = 1 if quick else 10
    chosen = measured_brokers(brokers, warm_up + rounds)
    say(out, f"fencing a broker that leads {partitions // brokers:,} partitions and follows {2 * partitions // brokers:,}, "
             f"in {partitions:,} partitions over {brokers:,} brokers (a heartbeat with WantFence, until its reply is released; "
             f"each round another broker)")
    figures: dict = {}
    start = time.perf_counter()
    controller = None
    kafka = KafkaBench(version, brokers, partitions, mode="fence")
    try:
        say(out, f"  (Kafka's cluster built in {time.perf_counter() - start:.0f} s; warming up its JIT)")
        start = time.perf_counter()
        controller = impl_cluster(partitions, brokers, profile=profile)
        say(out, f"  (impl's cluster built in {time.perf_counter() - start:.0f} s)")
        runs: dict[str, list[dict]] = {"Kafka": [], "impl": []}
        for i, broker_id in enumerate(chosen):
            kafka_run, impl_run = kafka.run(f"fence {broker_id}"), impl_fence(controller, broker_id)
            if kafka_run["records"] != impl_run["records"]:
                raise RuntimeError(f"fencing broker {broker_id} wrote {kafka_run['records']} records in Kafka, "
                                   f"{impl_run['records']} in impl: not the same work")
            if i >= warm_up:
                runs["Kafka"].append(kafka_run)
                runs["impl"].append(impl_run)
    finally:
        kafka.close()
    del controller
    ms = {name: [r["seconds"] * 1000 for r in series] for name, series in runs.items()}
    figures["fence"] = compare("fencing, ms of wall time", ms["Kafka"], ms["impl"], "ms", out, None, lower_is_better=True)
    figures["fence"]["records"] = runs["impl"][0]["records"]
    impl_ms = figures["fence"]["impl"]["median"]
    say(out, f"    impl's median {impl_ms:.2f} ms (goal at most {FENCE_GOAL_MS:.0f} ms: {verdict(impl_ms, FENCE_GOAL_MS, False)})")
    figures["fence"]["goal_ms"], figures["fence"]["met"] = FENCE_GOAL_MS, impl_ms <= FENCE_GOAL_MS
    return figures


def compare_snapshot_loading(version: str, scale: float, rounds: int, out, profile: str = DEFAULT_PROFILE) -> dict:
    """Loading a snapshot of 1,000,000 partitions (1/100 of that with ``--quick``) over 1,000
    brokers in a fresh process: Kafka's written by Kafka's snapshot writer and loaded by its snapshot
    reader into a MetadataImage, in a fresh JVM; impl's written by ``take_snapshot`` and loaded by
    ``Controller.open``, in a fresh Python process. The same cluster in both. Time, and memory per
    partition: Kafka's heap in use after a collection, impl's resident set, each before and after."""
    partitions, brokers = int(1_000_000 * scale), max(10, int(1000 * scale))
    say(out, f"loading a snapshot of {partitions:,} partitions over {brokers:,} brokers, in a fresh process each time "
             "(Kafka: its snapshot reader into a MetadataImage, in a JVM; impl: Controller.open)")
    with tempfile.TemporaryDirectory(prefix="kraftspec-bench-") as directory:
        start = time.perf_counter()
        kafka_dir = os.path.join(directory, "kafka")
        kafka_once(version, "--mode", "write-snapshot", "--snapshot", kafka_dir, "--brokers", str(brokers), "--partitions", str(partitions))
        impl_dir = os.path.join(directory, "impl")
        controller = impl_cluster(partitions, brokers, impl_dir, profile=profile)
        controller.take_snapshot()
        controller.close()
        del controller
        say(out, f"  (both snapshots written in {time.perf_counter() - start:.0f} s)")

        def kafka_load() -> dict:
            return kafka_once(version, "--mode", "load-snapshot", "--snapshot", kafka_dir)

        def impl_load() -> dict:
            result = subprocess.run([sys.executable, "-c", _LOAD, impl_dir], capture_output=True, text=True, check=True)
            return json.loads(result.stdout)

        kafka_load(), impl_load()  # each file read once first, so that both are in the page cache
        runs: dict[str, list[dict]] = {"Kafka": [], "impl": []}
        for _ in range(rounds):
            runs["Kafka"].append(kafka_load())
            runs["impl"].append(impl_load())
    for name, series in runs.items():
        if any(r["partitions"] != partitions for r in series):
            raise RuntimeError(f"{name} loaded another number of partitions than {partitions}: {series}")
    seconds = {name: [r["seconds"] for r in series] for name, series in runs.items()}
    per_partition = {name: [r["bytes"] / partitions for r in series] for name, series in runs.items()}
    figures: dict = {}
    figures["snapshot_load"] = compare("snapshot loading, seconds", seconds["Kafka"], seconds["impl"], "s", out, None,
                                       lower_is_better=True)
    impl_s = figures["snapshot_load"]["impl"]["median"]
    say(out, f"    impl's median {impl_s:.2f} s (goal at most {SNAPSHOT_GOAL_S:.0f} s: {verdict(impl_s, SNAPSHOT_GOAL_S, False)})")
    figures["snapshot_load"]["goal_s"], figures["snapshot_load"]["met"] = SNAPSHOT_GOAL_S, impl_s <= SNAPSHOT_GOAL_S
    figures["snapshot_bytes"] = compare("memory per partition after loading, bytes (Kafka: heap in use after a collection; "
                                        "impl: resident set)", per_partition["Kafka"], per_partition["impl"], "bytes", out, None,
                                        lower_is_better=True)
    impl_b = figures["snapshot_bytes"]["impl"]["median"]
    say(out, f"    impl's median {impl_b:.0f} bytes (goal at most {SNAPSHOT_GOAL_BYTES:.0f} bytes: "
             f"{verdict(impl_b, SNAPSHOT_GOAL_BYTES, False)})")
    figures["snapshot_bytes"]["goal_bytes"], figures["snapshot_bytes"]["met"] = SNAPSHOT_GOAL_BYTES, impl_b <= SNAPSHOT_GOAL_BYTES
    return figures


GOALS_WRITTEN = {
    "impl": ("impl/README.md", "Performance"),
    "conformance": ("conformance/README.md", "Throughput: kraftspec bench conformance"),
    "spark": ("conformance/README.md", "Spark: kraftspec bench spark"),
    "kafka": ("impl/README.md", "Against Apache Kafka's controller: kraftspec bench kafka"),
}
"""Where each target's goals and measured figures are written: (file, section)."""


def _written(target: str) -> str:
    file, section = GOALS_WRITTEN[target]
    return f'{file}, section "{section}"'


def _help_text() -> tuple[str, str]:
    """bench's description and its epilog (what each target measures, its goals and where they are
    written), wrapped for a terminal; the goals are the ones the targets check."""
    import textwrap

    from kraftspec.bench_spark import GOAL_MINUTES, GOAL_OF_POOL, GOAL_SPEEDUP, GOAL_STEPS, GOAL_TRACES

    description = textwrap.fill(
        "Measure kraftspec's performance and print each figure beside its goal. The parts of a comparison are "
        "measured interleaved, round after round on the same workload, so that a change in the machine's load "
        "falls on all of them alike. Each figure is the median of the rounds, shown with its range (the lowest "
        "and highest round) and its spread; the load average is printed at the start and at the end, and a "
        "warning says when the rounds spread too widely for a figure to mean anything, when a ratio is "
        "beyond what the machine's cores can give, or when other work kept the load above the number of cores. "
        "On a machine shared with other work, compare the ratios and read the warnings.", 78) + "\n\n" + textwrap.fill(
        "Every target also prints the machine's speed at the start, between its parts or rounds and at "
        "the end: thousands of loops a second of a fixed piece of plain Python that does not change from one "
        "kraftspec version to the next. It shows what the load average cannot, such as other virtual machines "
        "slowing this one (a warning says when it moved during the run), and it makes figures from different "
        "machines or days comparable: the documents that quote figures quote the speed they were measured at.", 78)
    c = CONFORMANCE_GOALS
    targets = [
        ("impl", "impl's controller: heartbeats per second on one core at 10 brokers / 1,000 partitions (goal "
                 f"{GOALS['heartbeats_per_s']:,}/s) and at 1,000 brokers / 1,000,000 partitions (at least "
                 f"{GOALS['heartbeat_scale_ratio']:.0%} of that), fencing a broker (goal at most "
                 f"{GOALS['fence_ms']:.0f} ms) and its controlled shutdown (at most {GOALS['controlled_shutdown_ms']:.0f} ms), "
                 f"loading a 1,000,000-partition snapshot (at most {GOALS['snapshot_load_s']:.0f} s, "
                 f"{GOALS['bytes_per_partition']:.0f} bytes a partition). Goals and figures: {_written('impl')}."),
        ("conformance", f"events per second: generation by the model on one core (goal {c['generate_events_per_s']:,}), "
                        f"replay against impl in process at every level (goal {c['replay_events_per_s']:,}), replay "
                        f"through the subprocess adapter (goal {c['subprocess_events_per_s']:,}). Goals and figures: "
                        f"{_written('conformance')}."),
        ("spark", "the conform job's work (walks replayed against impl) four ways: one process, a pool of 2 "
                  f"processes, Spark local[1] and local[2]. Goals: local[2] at least {GOAL_SPEEDUP} times as fast as "
                  f"one process and {GOAL_OF_POOL:.0%} of the pool; {GOAL_TRACES:,} traces of {GOAL_STEPS} events "
                  f"in at most {GOAL_MINUTES} minutes on local[2]. Goals and figures: "
                  f"{_written('spark')}."),
        ("kafka", "impl against Apache Kafka's controller on the same workloads, in one run: walks over the "
                  "protocol; warm in process, heartbeats and ISR changes as a ratio impl/Kafka (goal at least "
                  f"{KAFKA_GOAL}); fencing a broker and loading a 1,000,000-partition snapshot as Kafka's time over "
                  "impl's (higher is better for impl throughout), with impl's own goals beside them. Needs Java 17 "
                  f"and Maven. Goals and figures: {_written('kafka')}."),
    ]
    lines = ["targets:"]
    for name, text in targets:
        lines += textwrap.wrap(text, 78, initial_indent=f"  {name:<13}", subsequent_indent=" " * 15)
    lines += ["", textwrap.fill("--quick runs every target at about 1/100 of its sizes: a check that it runs, "
                                "not a measurement.", 78)]
    return description, "\n".join(lines)


def add_parser(commands) -> None:
    import argparse

    description, epilog = _help_text()
    bench = commands.add_parser(
        "bench",
        help="measure performance against the goals: impl, conformance, spark, kafka",
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bench.add_argument("target", choices=["impl", "conformance", "spark", "kafka"],
                       help="what to measure (see targets below)")
    bench.add_argument("--quick", action="store_true", help="1/100 of the sizes: a smoke test, not a measurement")
    bench.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    bench.add_argument("--whole-job", action="store_true",
                       help="with spark: after the rounds, run the conform job's 1,000,000 traces for real (some 20 "
                            "minutes on a machine that meets the goal) and judge the 20-minute goal by it rather "
                            "than by the projection; with --quick, 10,000 traces")
    bench.add_argument("--kafka-version", metavar="VERSION", default=None,
                       help="with kafka: the Apache Kafka release to measure (default: the Kafka adapter's, 4.4.0)")
    from kraftspec.cli import add_profile_option

    add_profile_option(bench, "the behaviour profile of the workloads' controllers, model configurations and walks, "
                       "with its default timings")


def run(args, out=None) -> int:
    out = out or sys.stdout
    for option, given, target in (("--kafka-version", args.kafka_version, "kafka"), ("--whole-job", args.whole_job, "spark")):
        if given and args.target != target:
            print(f"kraftspec: error: {option} goes with the {target} target only", file=sys.stderr)
            return 2
    scale = 0.01 if args.quick else 1.0
    profile = args.profile
    shown = "" if profile == DEFAULT_PROFILE else f" --profile {profile}"
    say(out, f"kraftspec bench {args.target}{' --quick' if args.quick else ''}{shown} (pid {os.getpid()}, {os.cpu_count()} cores)")
    from kraftspec import compiled

    say(out, compiled.describe())
    say(out, f"goals, and the figures measured before: {_written(args.target)}")
    if args.target == "spark":
        from kraftspec.bench_spark import bench_spark
        from kraftspec.conformance.spark import SparkSetupError

        try:
            figures = bench_spark(scale, out, profile, whole=args.whole_job)
        except SparkSetupError as problem:  # no Java, or too old a one
            print(f"kraftspec: error: {problem}", file=sys.stderr)
            return 2
        except RuntimeError as failure:  # a leg failed, or a Spark session's process ended
            print(f"kraftspec: error: {failure}", file=sys.stderr)
            return 1
    elif args.target == "kafka":
        from kraftspec.conformance.kafka import DEFAULT_VERSION, parse_spec

        try:
            version, _ = parse_spec(f"kafka:{args.kafka_version or DEFAULT_VERSION}")
            figures = bench_kafka(scale, out, version, profile)
        except ValueError as problem:  # no Java or Maven, a release that does not resolve, a malformed version
            print(f"kraftspec: error: {problem}", file=sys.stderr)
            return 2
        except RuntimeError as failure:  # a controller refused the workload or its benchmark failed
            print(f"kraftspec: error: {failure}", file=sys.stderr)
            return 1
    else:
        figures = bench_impl(scale, out, profile) if args.target == "impl" else bench_conformance(scale, out, profile)
    figures["compiled"] = compiled.active() is not None
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2, default=str)
        say(out, f"figures written to {args.json}")
    return 0
