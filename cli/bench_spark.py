"""``kraftspec bench spark``: the conform job's workload (generate a walk, replay it against impl
at level records), measured four ways in one run on the same seeds: one plain process, a pool of
two processes, Spark local[1] and Spark local[2]. Start-up (processes, Spark session, the Python
workers' first imports) is warmed up first and reported apart; the figures are the work itself."""

from __future__ import annotations

import time
from multiprocessing import get_context

from kraftspec.spec.profiles import DEFAULT_PROFILE

GOAL_SPEEDUP = 1.7  # local[2] against one process
GOAL_OF_POOL = 0.9  # local[2] against a 2-process pool
GOAL_TRACES, GOAL_MINUTES = 1_000_000, 20


def _count(seeds: range, workload) -> int:
    """A pool worker's share: the rows of its seeds, counted (what a Spark task computes)."""
    from kraftspec.conformance.spark import check_seeds

    return sum(1 for _ in check_seeds(seeds, workload))


def bench_spark(scale: float, out, say, profile: str = DEFAULT_PROFILE) -> dict:
    from kraftspec.conformance.spark import Workload, _task, session, slices

    traces = max(80, int(8000 * scale))  # smaller runs leave Spark's fixed costs unspread (2,000: 1.64x, 83%)
    workload = Workload(traces, first_seed=1_000_000, steps=50, keep_traces="none", profile=profile)
    cut = slices(workload.seeds, 16)
    say(out, f"the workload: {traces:,} traces of {workload.steps} events (walk + replay against impl, level records), "
        f"in {len(cut)} slices")
    figures: dict = {"traces": traces, "steps": workload.steps, "profile": profile}

    def record(name: str, seconds: float) -> None:
        figures[name] = {"seconds": round(seconds, 2), "traces_per_second": round(traces / seconds, 1),
                         "events_per_second": round(traces * workload.steps / seconds)}
        say(out, f"  {name:16} {seconds:7.2f} s  {traces / seconds:8.1f} traces/s  "
            f"{traces * workload.steps / seconds:9,.0f} events/s")

    _count(range(0, 2), workload)  # imports and first-use costs, out of the measurement
    started = time.perf_counter()
    _count(workload.seeds, workload)
    record("single process", time.perf_counter() - started)

    with get_context("fork").Pool(2) as pool:
        pool.starmap(_count, [(range(0, 1), workload)] * 2)  # warm both workers
        started = time.perf_counter()
        pool.starmap(_count, [(seeds, workload) for seeds in cut])
        record("2-process pool", time.perf_counter() - started)

    for master in ("local[1]", "local[2]"):
        started = time.perf_counter()
        spark, _ = session(master, "kraftspec bench")
        sc = spark.sparkContext
        sc.parallelize([range(0, 1)] * sc.defaultParallelism, sc.defaultParallelism).mapPartitionsWithIndex(
            _task(workload)).count()  # start the Python workers
        figures[f"{master} start-up"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        sc.parallelize(cut, len(cut)).mapPartitionsWithIndex(_task(workload)).count()
        record(f"Spark {master}", time.perf_counter() - started)
        spark.stop()
        say(out, f"  (session start and warm-up of {master}: {figures[f'{master} start-up']} s, not counted)")

    single = figures["single process"]["seconds"]
    pool = figures["2-process pool"]["seconds"]
    local2 = figures["Spark local[2]"]["seconds"]
    speedup, of_pool = single / local2, pool / local2
    per_trace = local2 / traces
    projected = GOAL_TRACES * per_trace / 60
    figures.update(speedup=round(speedup, 2), of_pool=round(of_pool, 3), projected_minutes=round(projected, 1))
    say(out, f"local[2] against one process: {speedup:.2f}x (goal {GOAL_SPEEDUP}x: "
        f"{'met' if speedup >= GOAL_SPEEDUP else 'NOT met'})")
    say(out, f"local[2] against the 2-process pool: {of_pool:.0%} (goal {GOAL_OF_POOL:.0%}: "
        f"{'met' if of_pool >= GOAL_OF_POOL else 'NOT met'})")
    say(out, f"{GOAL_TRACES:,} traces of {workload.steps} events at this rate on local[2]: {projected:.1f} minutes "
        f"(goal {GOAL_MINUTES}: {'met' if projected <= GOAL_MINUTES else 'NOT met'}; projected from {traces:,} traces)")
    return figures
