"""``kraftspec bench impl``: impl's figures against issue 3's goals, and the model beside it.

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
"""

from __future__ import annotations

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

GOALS = {
    "heartbeats_per_s": 250_000,
    "heartbeat_scale_ratio": 0.8,
    "fence_ms": 20.0,
    "controlled_shutdown_ms": 50.0,
    "snapshot_load_s": 10.0,
    "bytes_per_partition": 600.0,
}


def say(out, text: str) -> None:
    out.write(text + "\n")
    out.flush()


# ---- building clusters in impl --------------------------------------------------------


def impl_cluster(partitions: int, brokers: int, directory: str | None = None):
    """An impl controller holding ``partitions`` partitions over ``brokers`` unfenced brokers,
    replicas placed round-robin (partition p on p, p+1, p+2 mod brokers), so that every broker
    leads partitions/brokers partitions and follows twice as many. Committed."""
    from kraftspec.impl.controller import Controller
    from kraftspec.impl.messages import PartitionRecord, RegisterBrokerRecord, TopicRecord, UnfenceBrokerRecord

    controller = Controller.open(directory) if directory else Controller()
    per_topic = 1000
    chunk = []

    def flush():
        controller._open_batch()
        for record in chunk:
            controller._add(record)
        controller._close_batch()
        chunk.clear()

    base = controller.log_end_offset
    for b in range(brokers):
        epoch = base + 2 * b
        chunk += [
            RegisterBrokerRecord(broker_id=b, incarnation_id=uuid.UUID(int=b + 1), broker_epoch=epoch),
            UnfenceBrokerRecord(broker_id=b, broker_epoch=epoch),
        ]
    flush()
    for t in range(max(1, partitions // per_topic)):
        topic_id = uuid.UUID(int=1_000_000 + t)
        chunk.append(TopicRecord(topic_name=f"topic-{t:05d}", topic_id=topic_id))
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


# ---- the model ------------------------------------------------------------------------


def model_heartbeat_rate(partitions: int, brokers: int, count: int) -> float:
    from kraftspec.model import Commit, initial_state, step
    from kraftspec.model.messages import (
        BrokerHeartbeatRequest,
        BrokerRegistrationRequest,
        CreatableTopic,
        CreateTopicsRequest,
        Feature,
    )

    state = initial_state()
    features = [Feature("metadata.format", 1, 1)]
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
start = time.perf_counter()
controller = Controller.open(sys.argv[1])
seconds = time.perf_counter() - start
after = resident()
partitions = sum(len(t.partitions) for t in controller.state.replication.topics.values())
print(json.dumps({"seconds": seconds, "bytes": after - before, "partitions": partitions}))
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
        return {"seconds": best["seconds"], "bytes_per_partition": best["bytes"] / partitions}


# ---- the run -----------------------------------------------------------------------------


def verdict(value: float, goal: float, higher_is_better: bool) -> str:
    met = value >= goal if higher_is_better else value <= goal
    return "met" if met else "NOT met"


def measured_brokers(brokers: int, count: int, offset: float = 0.0) -> list[int]:
    """``count`` broker ids spread evenly over the cluster (at most ``brokers`` of them)."""
    step = brokers / count
    return sorted({int((i + offset) * step) % brokers for i in range(count)})


def median_of(runs: int, measure: Callable[..., float], *args: Any) -> float:
    """The median of ``runs`` calls of ``measure(*args)`` (the arguments are taken now, not looked
    up at each call, so a cluster deleted later is never measured by mistake)."""
    return statistics.median(measure(*args) for _ in range(runs))


def bench_impl(scale: float, out) -> dict:
    figures: dict = {"scale": scale}
    small_p, small_b = 1000, 10
    big_p, big_b = int(1_000_000 * scale), max(10, int(1000 * scale))
    count = int(300_000 * max(scale, 0.1))

    say(out, f"heartbeats per second, one core (median of 3 runs of {count:,})")
    small = impl_cluster(small_p, small_b)
    figures["heartbeats_small_v1"] = median_of(3, heartbeat_rate, small, small_b, 1, count)
    figures["heartbeats_small_v0"] = median_of(3, heartbeat_rate, small, small_b, 0, count)
    say(out, f"  {small_b} brokers / {small_p:,} partitions: v1 {figures['heartbeats_small_v1']:,.0f}/s, v0 {figures['heartbeats_small_v0']:,.0f}/s "
             f"(goal {GOALS['heartbeats_per_s']:,}/s: {verdict(figures['heartbeats_small_v1'], GOALS['heartbeats_per_s'], True)})")
    start = time.perf_counter()
    big = impl_cluster(big_p, big_b)
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
    figures["fence_ms"] = {}
    for partitions in sorted({int(10_000 * max(scale, 0.1)), int(100_000 * scale), big_p}):
        brokers = max(3, partitions // 1000)
        times = []
        shared = big if partitions == big_p else impl_cluster(partitions, brokers) if brokers >= 15 else None
        for broker_id in measured_brokers(brokers, 5):
            # brokers far apart hold no partition in common, so one fencing does not change what the
            # next one holds; a cluster too small for that is built afresh for each run
            cluster = shared or impl_cluster(partitions, brokers)
            seconds, _ = timed_heartbeat(cluster, broker_id, want_fence=True)
            times.append(seconds)
            cluster.commit(cluster.log_end_offset)
        figures["fence_ms"][partitions] = statistics.median(times) * 1000
        say(out, f"  {partitions:>9,} partitions ({brokers:,} brokers): {figures['fence_ms'][partitions]:.1f} ms "
                 f"(goal at most {GOALS['fence_ms']:.0f} ms: {verdict(figures['fence_ms'][partitions], GOALS['fence_ms'], False)})")

    del big

    say(out, f"loading a snapshot of {big_p:,} partitions from disk, in a fresh process")
    load = snapshot_load(big_p, big_b, out)
    figures["snapshot_load_s"], figures["bytes_per_partition"] = load["seconds"], load["bytes_per_partition"]
    say(out, f"  {load['seconds']:.1f} s (goal at most {GOALS['snapshot_load_s']:.0f} s: {verdict(load['seconds'], GOALS['snapshot_load_s'], False)}); "
             f"{load['bytes_per_partition']:.0f} bytes per partition of resident memory "
             f"(goal at most {GOALS['bytes_per_partition']:.0f}: {verdict(load['bytes_per_partition'], GOALS['bytes_per_partition'], False)})")

    say(out, f"the model on the small workload ({small_b} brokers / {small_p:,} partitions)")
    model_count = max(2000, count // 30)
    figures["model_heartbeats_small"] = median_of(3, model_heartbeat_rate, small_p, small_b, model_count)
    figures["impl_model_ratio"] = figures["heartbeats_small_v0"] / figures["model_heartbeats_small"]
    say(out, f"  model {figures['model_heartbeats_small']:,.0f} heartbeats/s; impl/model {figures['impl_model_ratio']:.0f}x")
    return figures


CONFORMANCE_GOALS = {"replay_events_per_s": 100_000, "generate_events_per_s": 30_000, "subprocess_events_per_s": 20_000}


def bench_conformance(scale: float, out) -> dict:
    """Issue 4's throughput figures: generation by the model, replay of impl in process (at each
    level, the conversion of the trace into impl's objects included), replay through the
    subprocess adapter. The same walks for all three."""
    from kraftspec.conformance.adapters import ImplAdapter
    from kraftspec.conformance.generate import walk
    from kraftspec.conformance.replay import replay

    figures: dict = {"scale": scale}
    seeds, steps = range(max(4, int(200 * scale))), 200
    say(out, f"generating {len(seeds)} walks of {steps} events with the model (median of 3 runs)")

    def generate():
        start = time.perf_counter()
        traces = [walk(seed, steps) for seed in seeds]
        for trace in traces:
            _ = trace.name  # naming a trace is part of producing it
        return traces, time.perf_counter() - start

    runs = [generate() for _ in range(3)]
    traces = runs[0][0]
    events = sum(len(t.steps) for t in traces)
    rate = events / statistics.median(seconds for _, seconds in runs)
    figures["generate_events_per_s"] = rate
    say(out, f"  {rate:,.0f} events/s (goal {CONFORMANCE_GOALS['generate_events_per_s']:,}: "
             f"{verdict(rate, CONFORMANCE_GOALS['generate_events_per_s'], True)})")

    say(out, f"replaying them against impl in process ({events:,} events; median of 3 runs)")

    def once(level: str) -> float:
        start = time.perf_counter()
        verdicts = [replay(trace, ImplAdapter(), level) for trace in traces]
        assert all(v.passed for v in verdicts)
        return time.perf_counter() - start

    for level in ("responses", "state", "records"):
        rate = events / statistics.median(once(level) for _ in range(3))
        figures[f"replay_{level}_events_per_s"] = rate
        say(out, f"  level {level:<9}: {rate:,.0f} events/s (goal {CONFORMANCE_GOALS['replay_events_per_s']:,}: "
                 f"{verdict(rate, CONFORMANCE_GOALS['replay_events_per_s'], True)})")

    say(out, "replaying them through the subprocess adapter (impl behind the example server)")
    from kraftspec.conformance.subprocess_adapter import SubprocessAdapter

    command = [sys.executable, "-m", "kraftspec.conformance.examples.impl_server"]
    adapter = SubprocessAdapter(command)
    try:
        for level in ("responses", "records"):
            start = time.perf_counter()
            verdicts = [replay(trace, adapter, level) for trace in traces]
            seconds = time.perf_counter() - start
            assert all(v.passed for v in verdicts), [v.report() for v in verdicts if not v.passed][:1]
            rate = events / seconds
            figures[f"subprocess_{level}_events_per_s"] = rate
            say(out, f"  level {level:<9}: {rate:,.0f} events/s (goal {CONFORMANCE_GOALS['subprocess_events_per_s']:,}: "
                     f"{verdict(rate, CONFORMANCE_GOALS['subprocess_events_per_s'], True)})")
    finally:
        adapter.shutdown()
    return figures


def add_parser(commands) -> None:
    bench = commands.add_parser(
        "bench",
        help="measure performance against the goals: impl, conformance, spark",
        description=__doc__.split("Prints")[0].strip() + " See README.md for the goals.",
    )
    bench.add_argument("target", choices=["impl", "conformance", "spark"],
                       help="what to measure: impl (issue 3), conformance (issue 4) or spark (the conform job: one "
                       "process, a 2-process pool, Spark local[1] and local[2] on the same workload)")
    bench.add_argument("--quick", action="store_true", help="1/100 of the sizes: a smoke test, not a measurement")
    bench.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")


def run(args, out=None) -> int:
    out = out or sys.stdout
    scale = 0.01 if args.quick else 1.0
    say(out, f"kraftspec bench {args.target}{' --quick' if args.quick else ''} (pid {os.getpid()}, {os.cpu_count()} cores)")
    if args.target == "spark":
        from kraftspec.bench_spark import bench_spark

        figures = bench_spark(scale, out, say)
    else:
        figures = bench_impl(scale, out) if args.target == "impl" else bench_conformance(scale, out)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2, default=str)
        say(out, f"figures written to {args.json}")
    return 0
