"""``kraftspec bench spark``: the conform job's workload (generate a walk, replay it against impl
at level records), measured four ways on the same seeds: one plain process, a pool of two
processes, Spark local[1] and Spark local[2]. The Spark legs run the part of the conform job that
grows with its traces (checked_rows: each trace's row made, handed to the JVM and cached), so that
the minutes projected for a million traces are those of ``kraftspec conform`` but for the writing
of its outputs at the end, which takes seconds; the process and the pool count the same rows
without Spark.

The four legs are measured interleaved (bench_stats): each round runs every leg once on the same
seeds, in an order rotated from round to round, and the figures are the medians of the rounds. The
pool and the two Spark sessions are started once and warmed up before the first round; their
start-up is reported apart. Only one SparkContext may live in a process, so each Spark session runs
in a process of its own (spawned, so that it shares nothing with this one) which stays up between
rounds and runs a job when told to; before each job it runs a small one of one trace a task, which
starts the Python workers again (Spark ends one that has been idle for a minute) and is timed: it is
what a job costs whatever its size, which the projection of a million traces counts once rather
than once per few thousand traces, adding what starting that job's further tasks costs. The ratios are medians of the rounds'
ratios, and a ratio that two workers cannot give (local[2] more than twice as fast as one process)
is flagged as noise.

With ``--whole-job``, the million traces are then checked for real: ``kraftspec conform`` itself
runs them, in a process of its own, and the 20-minute goal is judged by the seconds it reports
rather than by the projection (which, from a few thousand traces, came out 4 to 10% above the whole
job run beside it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import traceback
from multiprocessing import get_context
from pathlib import Path

from attrs import evolve

from kraftspec.bench_stats import (
    NOISY,
    busy_warning,
    cores,
    impossible_warning,
    interleaved,
    load_average,
    load_line,
    loads_seen,
    machine_speed,
    met,
    noise_warning,
    ratios,
    say,
    show,
    speed_line,
    speed_warning,
    summary,
    value_verdict,
    verdict,
)
from kraftspec.spec.profiles import DEFAULT_PROFILE

GOAL_SPEEDUP = 1.7  # local[2] against one process
GOAL_OF_POOL = 0.9  # local[2] against a 2-process pool
GOAL_TRACES, GOAL_MINUTES = 1_000_000, 20
GOAL_STEPS = 50

LEGS = ("one process", "2-process pool", "Spark local[1]", "Spark local[2]")
WORKERS = 2  # the pool's processes, local[2]'s cores
OF_POOL_BOUND = 1.1
"""local[2] runs the pool's work with the same two workers plus Spark's scheduling: beyond 110% of
the pool is not speed but a change of load between the two legs."""

READY_TIMEOUT = 300  # seconds a Spark session may take to start and warm up


def _count(seeds: range, workload) -> int:
    """A pool worker's share: the rows of its seeds, counted (what a Spark task computes)."""
    from kraftspec.conformance.spark import check_seeds

    return sum(1 for _ in check_seeds(seeds, workload))


def _spark_leg(master: str, workload, tasks: int, connection) -> None:
    """The body of a Spark leg's process: start a session on ``master``, warm its Python workers
    and its JVM with a job the size of ``workload`` on other seeds, say ``ready`` with the seconds
    that took, then, each time it is told ``run``, time a job of one trace a task (what a job of
    ``tasks`` tasks costs whatever its size) and check ``workload``'s rows in ``tasks`` tasks as
    conform does, answering the seconds of the job, its rows and the seconds of the small one,
    until told ``stop``."""
    spark = None
    try:
        from kraftspec.conformance.spark import checked_rows, session

        started = time.perf_counter()
        spark, _ = session(master, f"kraftspec bench {master}")
        tiny = evolve(workload, traces=tasks)  # one trace a task

        def job(run_workload) -> int:
            frame = checked_rows(spark, run_workload, tasks)
            rows = frame.count()  # from the cache
            frame.unpersist()
            return rows

        # the Python workers start and import everything, and the JVM compiles its path for the
        # rows, as it has early in a long run: a job the size of the workload, on other seeds (after
        # a job of a tenth of it, the first rounds were still up to a third slower than the last)
        job(evolve(workload, first_seed=0))
        connection.send(("ready", time.perf_counter() - started))
        while True:
            command = connection.recv()
            if command == "stop":
                break
            # Spark ends a Python worker idle for a minute, as they are between rounds: the small
            # job starts them again, so that the job is measured with its workers up, as in a long
            # conform run; and its time is the cost that a job pays once whatever its size
            started = time.perf_counter()
            job(tiny)
            fixed = time.perf_counter() - started
            started = time.perf_counter()
            rows = job(workload)
            connection.send(("done", time.perf_counter() - started, rows, fixed))
    except BaseException:  # told to the benchmark, which stops
        connection.send(("error", traceback.format_exc()))
    finally:
        if spark is not None:
            spark.stop()
        try:
            connection.send(("stopped",))
        except OSError:  # the benchmark has gone
            pass
        connection.close()


class SparkLeg:
    """A Spark session in a process of its own, kept up between rounds."""

    def __init__(self, master: str, workload, tasks: int) -> None:
        context = get_context("spawn")
        self.master = master
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_spark_leg, args=(master, workload, tasks, child), daemon=True,
                                       name=f"kraftspec bench {master}")
        self.process.start()
        child.close()
        self.startup: float | None = None

    def _answer(self, what: str, timeout: float | None = None) -> tuple:
        """The process's next answer; an error if it failed, died or said nothing for ``timeout`` seconds."""
        if not self.connection.poll(timeout):
            raise RuntimeError(f"Spark {self.master} did not answer {what} within {timeout:.0f} s")
        try:
            answer = self.connection.recv()
        except EOFError:
            raise RuntimeError(f"Spark {self.master}'s process ended during {what} "
                               f"(exit status {self.process.exitcode})") from None
        if answer[0] == "error":
            raise RuntimeError(f"Spark {self.master} failed during {what}:\n{answer[1]}")
        return answer

    def ready(self) -> float:
        """Wait until the session is up and its workers warm; the seconds that took."""
        _, self.startup = self._answer("start-up", READY_TIMEOUT)
        return self.startup

    def run(self) -> tuple[float, int, float]:
        """One job: its seconds, the rows it checked, and the seconds of the small job before it
        (one trace a task)."""
        self.connection.send("run")
        _, seconds, rows, fixed = self._answer("a job")
        return seconds, rows, fixed

    def close(self) -> None:
        """Stop the session and wait for its process to end (killed if it does not within a minute)."""
        if self.process.is_alive():
            try:
                self.connection.send("stop")
                while self.connection.poll(60):
                    if self.connection.recv()[0] == "stopped":
                        break
            except (OSError, EOFError):
                pass
        self.process.join(60)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()


def whole_job(traces: int, profile: str = DEFAULT_PROFILE) -> dict:
    """``kraftspec conform`` on ``traces`` traces of GOAL_STEPS events (seeds from 0), run as a user
    runs it (its own process and Spark session, its default master: every core), its results written
    into a temporary folder removed afterwards; its progress and its errors go to standard error as they come. The
    seconds are conform's own count: the job, from its first task to its results written, without
    Spark's start or the report. An error if the job fails or any trace does not pass."""
    with tempfile.TemporaryDirectory(prefix="kraftspec-bench-whole-job-") as folder:
        summary_file, printed = Path(folder, "summary.json"), Path(folder, "conform.out")
        command = [sys.executable, "-m", "kraftspec", "conform", "--traces", str(traces), "--steps", str(GOAL_STEPS),
                   "--profile", profile, "--keep-traces", "none", "--out", str(Path(folder, "out")),
                   "--json", str(summary_file)]
        with printed.open("w", encoding="utf-8") as stdout:
            done = subprocess.run(command, stdout=stdout, stderr=None, check=False)
        if not summary_file.exists():  # it ended before its summary: no Spark, a bad option, ...
            last = printed.read_text(encoding="utf-8").splitlines()[-15:]
            raise RuntimeError(f"the whole job ({' '.join(command[2:])}) ended with exit status {done.returncode} "
                               f"(its errors above){':' if last else ''}" + "".join(f"\n{line}" for line in last))
        result = json.loads(summary_file.read_text(encoding="utf-8"))
    if done.returncode != 0 or result["traces"] != traces or result["failed"]:
        raise RuntimeError(f"the whole job checked {result['traces']:,} traces of {traces:,}, {result['failed']:,} of "
                           f"them failing (exit status {done.returncode}): the implementation, not the speed, needs "
                           "looking at first")
    return {"traces": traces, "events": result["events"], "seconds": result["seconds"],
            "minutes": result["seconds"] / 60, "events_per_second": round(result["events"] / result["seconds"]),
            "command": "kraftspec " + " ".join(command[3:])}


def bench_spark(scale: float, out, profile: str = DEFAULT_PROFILE, whole: bool = False) -> dict:
    from kraftspec.conformance.spark import TASK_START_SECONDS, Workload, java_major, slices, task_count

    java_major()  # no Java, or too old a one: SparkSetupError, before anything starts
    quick = scale < 1
    rounds = 2 if quick else 4  # 4: every leg runs once in each position
    traces = max(80, int(4000 * scale))
    workload = Workload(traces, first_seed=1_000_000, steps=GOAL_STEPS, keep_traces="none", profile=profile)
    # cut as the projected job cuts its seeds: a million traces run as tasks of some 7,800 traces
    # (run_job), each costing Spark about 40 ms to start; slices of a few hundred traces would count
    # that cost dozens of times as often as the job does, slices of two thousand about as often
    per_task = GOAL_TRACES // task_count(GOAL_TRACES, WORKERS)
    cut = slices(workload.seeds, max(WORKERS, -(-traces // per_task)))
    line, start_load = load_line("at the start")
    say(out, line)
    speeds = [machine_speed()]
    say(out, speed_line(speeds[0], "at the start"))
    say(out, f"the workload: {traces:,} traces of {workload.steps} events (walk + replay against impl, level records), "
        f"in {len(cut)} slices; the Spark legs make each trace's row into the cached DataFrame conform writes its "
        f"results from; measured {rounds} times each way, interleaved: each round runs all four ways on the "
        "same seeds, in an order rotated from round to round")
    figures: dict = {"traces": traces, "steps": workload.steps, "profile": profile, "rounds": rounds, "cores": cores(),
                     "load_average": {"start": start_load}, "machine_speed": speeds}

    pool = get_context("fork").Pool(2)  # forked before any session starts: no JVM in this process to copy
    sessions: dict[str, SparkLeg] = {}
    try:
        started = time.perf_counter()
        pool.starmap(_count, [(range(0, 1), workload)] * 2)  # warm both workers
        figures["start-up"] = {"2-process pool": round(time.perf_counter() - started, 2)}
        for master in ("local[1]", "local[2]"):
            sessions[master] = SparkLeg(master, workload, len(cut))
        for master, leg in sessions.items():  # the two start side by side
            figures["start-up"][f"Spark {master}"] = round(leg.ready(), 2)
        _count(range(0, 2), workload)  # this process's imports and first-use costs
        say(out, "  (start-up, not counted: " + ", ".join(f"{name} {seconds} s" for name, seconds in figures["start-up"].items())
            + "; the two Spark sessions started side by side)")

        def one_process() -> float:
            started = time.perf_counter()
            rows = _count(workload.seeds, workload)
            return _checked("one process", time.perf_counter() - started, rows, traces)

        def two_processes() -> float:
            started = time.perf_counter()
            rows = sum(pool.starmap(_count, [(seeds, workload) for seeds in cut]))
            return _checked("2-process pool", time.perf_counter() - started, rows, traces)

        def spark(master: str):
            def leg() -> float:
                seconds, rows, fixed = sessions[master].run()
                figures.setdefault("fixed_seconds", {}).setdefault(f"Spark {master}", []).append(round(fixed, 3))
                return _checked(f"Spark {master}", seconds, rows, traces)
            return leg

        def told(round_: int, order: list[str], seconds: dict[str, float]) -> None:
            load = load_average()[0]
            figures.setdefault("round_load", []).append(load)
            speeds.append(machine_speed())
            say(out, f"  round {round_ + 1} of {rounds}: " + ", ".join(f"{name} {seconds[name]:.1f} s" for name in order)
                + f" (load average {load:.2f}, machine speed {speeds[-1]:.2f})")

        # local[2] between the two legs it is compared with: rotated, it runs next to each of them in
        # three rounds of four, so that a round's two figures of a ratio are measured close together
        runs = interleaved({"one process": one_process, "Spark local[2]": spark("local[2]"),
                            "2-process pool": two_processes, "Spark local[1]": spark("local[1]")}, rounds, told)
    finally:
        for leg in sessions.values():
            leg.close()
        pool.close()
        pool.join()

    say(out, "seconds for the workload (median of the rounds), and the rate at the median:")
    for name in LEGS:
        figure = summary(runs[name])
        figure.update(traces_per_second=round(traces / figure["median"], 1),
                      events_per_second=round(traces * workload.steps / figure["median"]))
        figures[name] = figure
        say(out, f"  {name:16} {show(figure, 's', 2)}  {figure['traces_per_second']:,.1f} traces/s  "
            f"{figure['events_per_second']:,} events/s")

    line, end_load = load_line("after the rounds" if whole else "at the end")
    figures["load_average"]["end"] = end_load
    seen = loads_seen(start_load, end_load, figures["round_load"])
    warnings: list[str] = []

    def ratio(key: str, text: str, per_round: list[float], goal: float | None, bound: float | None, why: str,
              form: str = "{:.2f}x", higher_is_better: bool = True) -> dict:
        figure = summary(per_round)
        shown = form.format(figure["median"])
        low, high = form.format(figure["min"]), form.format(figure["max"])
        goal_text = ""
        if goal is not None:
            figure["goal"], figure["met"] = goal, met(figure["median"], goal, higher_is_better)
            goal_text = f"; goal {form.format(goal)}: {verdict(figure, goal, higher_is_better)}"
        say(out, f"{text}: {shown} (rounds {low} to {high}, spread {figure['spread']:.0%}){goal_text}")
        for warning in (noise_warning(text, figure, seen, form=form),
                        impossible_warning(text, per_round, bound, why, form) if bound is not None else None):
            if warning is not None:
                figure.setdefault("warnings", []).append(warning)
                warnings.append(warning)
                say(out, f"  warning: {warning}")
        figures[key] = figure
        return figure

    single, pool_runs, local2 = runs["one process"], runs["2-process pool"], runs["Spark local[2]"]
    two = min(2, cores())
    ratio("pool_speedup", "the 2-process pool against one process", ratios(single, pool_runs), None, two,
          f"two workers on {cores()} cores")
    ratio("speedup", "local[2] against one process", ratios(single, local2), GOAL_SPEEDUP, two,
          f"two workers on {cores()} cores")
    ratio("of_pool", "local[2] against the 2-process pool", ratios(pool_runs, local2), GOAL_OF_POOL, OF_POOL_BOUND,
          "Spark runs the pool's work on the same two workers, with its scheduling on top", form="{:.0%}")
    # a job's cost is what it pays once (the small job of one trace a task: scheduling, its tasks'
    # start, the counts) and what it pays per trace; the million-trace job pays the first once, and
    # starts more tasks than this one, one wave after another on the workers
    fixed = figures["fixed_seconds"]["Spark local[2]"]
    more_tasks = task_count(GOAL_TRACES, WORKERS) - len(cut)
    starts = more_tasks * TASK_START_SECONDS / WORKERS
    projected, said = projection(local2, fixed, traces, starts)
    for warning in said:
        warnings.append(warning)
        say(out, f"  warning: {warning}")
    say(out, f"a job of one trace a task on local[2] took {summary(fixed)['median']:.2f} s (median): what a job costs "
        f"whatever its size, counted once in the projection below, which adds the start of the million-trace job's "
        f"{more_tasks} further tasks ({TASK_START_SECONDS * 1000:.0f} ms each, {starts:.1f} s on {WORKERS} workers) "
        f"and counts the rest per trace")
    ratio("projected_minutes", f"{GOAL_TRACES:,} traces of {workload.steps} events on local[2], projected from "
          f"{traces:,} (minutes)", projected, GOAL_MINUTES, None, "", form="{:.1f}", higher_is_better=False)
    if whole:
        job_traces = int(GOAL_TRACES * scale)
        say(out, f"the whole job: kraftspec conform checks {job_traces:,} traces of {GOAL_STEPS} events on every core "
            "(its progress below, on standard error)")
        job = figures["whole_job"] = whole_job(job_traces, profile)
        job["load_after"] = load_average()[0]
        speeds.append(machine_speed())
        minutes = job["minutes"] * GOAL_TRACES / job_traces  # the same at full size
        job.update(goal_minutes=GOAL_MINUTES, met=met(minutes, GOAL_MINUTES, False))
        scaled = "" if job_traces == GOAL_TRACES else f", {minutes:.1f} minutes at {GOAL_TRACES:,}"
        say(out, f"{job_traces:,} traces of {GOAL_STEPS} events, the whole job: {job['minutes']:.1f} minutes "
            f"({job['seconds']:,.1f} s, {job['events_per_second']:,} events/s{scaled}); goal {GOAL_MINUTES} minutes for "
            f"{GOAL_TRACES:,}: {value_verdict(minutes, GOAL_MINUTES, False)} "
            f"(load average {job['load_after']:.2f}, "
            f"machine speed {speeds[-1]:.2f} after it)")
    # the load after the whole job is mostly the job's own (two Python workers and Spark's JVM),
    # not other work: it is shown with the job, and left out of the warning below
    busy = busy_warning([start_load[0], *figures["round_load"], end_load[0]],
                        "one worker and two do not lose the same share of the cores to it, so the ratios above "
                        "are not what this machine gives when it is free, even where the rounds agree")
    speeds.append(machine_speed())
    for found in (busy, speed_warning(speeds)):  # each warning, or None
        if found is not None:
            warnings.append(found)
            say(out, f"warning: {found}")
    say(out, line)
    say(out, speed_line(speeds[-1], "at the end"))
    if warnings:
        say(out, f"{len(warnings)} warning(s): the figures above are not a fair measurement of this machine "
            f"(a busy machine, a machine whose speed moved, a rounds' spread over {NOISY:.0%} or an impossible ratio); "
            f"measure again when the load average stays below {cores()}")
    figures["warnings"] = warnings
    return figures


def projection(seconds: list[float], fixed: list[float], traces: int, starts: float) -> tuple[list[float], list[str]]:
    """The minutes that GOAL_TRACES traces take on local[2], one figure a round, from the
    round's ``seconds`` for ``traces`` traces and ``fixed`` seconds for the job of one trace a task:
    the fixed time once, the rest per trace, and ``starts`` seconds for the further tasks. On a busy
    machine the small job can take as long as the workload, and that round then says nothing of
    what a trace costs: its whole time is counted per trace, which projects too many minutes rather
    than too few, and a warning says so."""
    minutes, warnings = [], []
    for round_, (spent, once) in enumerate(zip(seconds, fixed, strict=True), start=1):
        if once >= spent:
            warnings.append(f"in round {round_}, the job of one trace a task took {once:.2f} s and the workload "
                            f"{spent:.2f} s on local[2]: that round's projection counts the whole workload's time "
                            f"per trace, an overestimate")
            once = 0.0
        minutes.append((once + GOAL_TRACES * (spent - once) / traces + starts) / 60)
    return minutes, warnings


def _checked(name: str, seconds: float, rows: int, traces: int) -> float:
    if rows != traces:
        raise RuntimeError(f"{name} checked {rows} traces of {traces}")
    return seconds
