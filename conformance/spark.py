"""Conformance at scale: generate traces over a range of seeds and replay each against a system
under test, on Spark (``kraftspec conform``).

The unit of work is a seed: :func:`check_seed` generates the seed's random walk from the model and
replays it against an adapter, giving one plain row (:data:`RESULT_FIELDS`). The same seed gives
the same row however the seeds are cut into Spark partitions, in whatever process, on whatever
executor, and a task that fails and is retried recomputes exactly its own seeds: outputs are
idempotent.

:func:`run_job` spreads contiguous ranges of seeds over the executors (``mapPartitions``, so each
Python worker makes one adapter per task and the trace never leaves it), writes the rows as
Parquet, and aggregates them with Spark into a :class:`Summary`: pass or fail per level, events,
rule coverage. :func:`write_divergences` then writes the first failing traces out as files, each
with the one command that replays it on a laptop, and shrinks a few of them on the driver.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import shlex
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Generator, Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any, TypeVar

from attrs import field, frozen

from ..spec import SPEC_VERSION
from ..spec.profiles import DEFAULT_PROFILE
from .trace import LEVELS

PART_LEVEL = {"seq": "responses", "replies": "responses", "adapter": "responses", "committed": "state",
              "records": "records"}
"""The lowest comparison level at which a divergence of each part shows."""


@frozen
class Workload:
    """What ``kraftspec conform`` checks: seeds ``first_seed .. first_seed + traces - 1``, each a
    random walk of ``steps`` events (cluster size and faults drawn from the seed unless given) under
    behaviour ``profile``, with its default timings, replayed against ``adapter`` at ``level``."""

    traces: int
    first_seed: int = 0
    steps: int = 50
    adapter: str = "impl"
    level: str = "records"
    brokers: int | None = None
    partitions: int | None = None
    keep_traces: str = "failing"  # "failing", "all" or "none": which traces go to the traces table
    profile: str = DEFAULT_PROFILE  # spec/profiles.toml: the behaviour the walks are recorded under
    # tests: (task index, marker file): that task's first attempt creates the file and fails
    fail_first_attempt: tuple[int, str] | None = field(default=None, eq=False)

    @property
    def seeds(self) -> range:
        return range(self.first_seed, self.first_seed + self.traces)

    def walk(self, seed: int):
        """The seed's trace: its random walk, recorded under the workload's profile."""
        from kraftspec.model import Config

        from .generate import walk

        return walk(seed, self.steps, self.brokers, self.partitions, config=Config.for_profile(self.profile))

    def repro(self, seed: int) -> str:
        """One command that regenerates the seed's trace and replays it, on a laptop, no Spark."""
        folder = f"/tmp/kraftspec-seed-{seed}"
        options = (("brokers", self.brokers), ("partitions", self.partitions),
                   ("profile", None if self.profile == DEFAULT_PROFILE else self.profile))
        sizes = "".join(f" --{name} {value}" for name, value in options if value is not None)
        return (f"kraftspec generate --spec {SPEC_VERSION} --seeds {seed} --steps {self.steps}{sizes} --out {folder} && "
                f"kraftspec replay {folder} --adapter {shlex.quote(self.adapter)} --level {self.level}")


RESULT_FIELDS = (
    ("seed", "long"), ("name", "string"), ("events", "int"), ("brokers", "int"), ("partitions", "int"),
    ("faults", "array<string>"), ("level", "string"), ("passed", "boolean"), ("passed_responses", "boolean"),
    ("passed_state", "boolean"), ("passed_records", "boolean"), ("divergence_step", "int"),
    ("divergence_part", "string"), ("report", "string"), ("rules", "map<string,int>"), ("seconds", "double"),
    ("controller_metrics", "map<string,double>"), ("trace", "string"),
)
"""One row per trace. ``passed_<level>`` is null above the level asked for and above the first level
that failed (not reached: see :func:`level_verdicts`); ``report`` and the
divergence columns are null for a trace that passes; ``trace`` (the JSON Lines) is kept as
``Workload.keep_traces`` says; ``rules`` counts how often each rule fired in the trace;
``controller_metrics`` are the metrics of spec/operations.md (METRIC-1 to METRIC-6) of the controller
at the end of the trace, from an adapter that reports them (impl), null otherwise."""


def check_seed(seed: int, workload: Workload, adapter) -> dict[str, Any]:
    """Generate the seed's walk and replay it against ``adapter``: the trace's row."""
    started = time.perf_counter()
    trace = workload.walk(seed)
    _controller_metrics(adapter)  # none left from the trace before
    verdict = replayed(trace, adapter, workload.level)
    metrics = _controller_metrics(adapter)
    passed = level_verdicts(verdict, workload.level, lambda level: replayed(trace, adapter, level).passed)
    params = trace.header.generator["params"]
    fired = Counter(chain(_start_rules(workload.profile, trace.header.config),
                          chain.from_iterable(step.rules for step in trace.steps)))
    keep = workload.keep_traces == "all" or (workload.keep_traces == "failing" and not verdict.passed)
    return {
        "seed": seed, "name": trace.name, "events": len(trace.steps), "brokers": params["brokers"],
        "partitions": params["partitions"], "faults": list(params["faults"]), "level": workload.level,
        "passed": verdict.passed, "passed_responses": passed["responses"], "passed_state": passed["state"],
        "passed_records": passed["records"],
        "divergence_step": verdict.divergence.step if verdict.divergence else None,
        "divergence_part": verdict.divergence.part if verdict.divergence else
        ("not supported" if verdict.not_supported else None),
        "report": None if verdict.passed else verdict.report(workload.adapter) + f"\n  again:   {workload.repro(seed)}",
        "rules": dict(fired), "seconds": time.perf_counter() - started, "controller_metrics": metrics,
        "trace": "\n".join(trace.lines()) + "\n" if keep else None,
    }


def _controller_metrics(adapter) -> dict[str, float] | None:
    """The metrics the adapter's controller had when its last replay ended, if it reports them; taken."""
    values = getattr(adapter, "last_metrics", None)
    if values is None:
        return None
    adapter.last_metrics = None
    return {name: float(value) for name, value in values.items() if value is not None}


def replayed(trace, adapter, level: str):
    """The trace replayed against ``adapter``; a server that fails to start for it (killed after a
    hang on the trace before, say) fails this trace at its first step instead of ending the task."""
    from .adapters import AdapterFailure
    from .replay import Divergence, Verdict, replay

    try:
        return replay(trace, adapter, level)
    except AdapterFailure as failure:
        first = trace.steps[0]
        divergence = Divergence(first.n, first.event, "adapter", "a server that starts", str(failure), first.rules,
                                first.rejected_by)
        return Verdict(trace, None, adapter.name, level, 0, len(trace.steps), 0.0, divergence)


def level_verdicts(verdict, asked: str, passes) -> dict[str, bool | None]:
    """Each level's verdict for a trace replayed at level ``asked``: True passed, False failed, None
    not reached (above ``asked``, or above the first level that failed: a comparison stops at its
    first divergence, so the levels above it were never tried). The lowest levels are tried again
    with ``passes(level)`` when the divergence shows at a higher one: a trace may fail at responses
    later than it fails at records."""
    verdicts: dict[str, bool | None] = dict.fromkeys(LEVELS)
    top = LEVELS.index(asked)
    if verdict.passed:
        return {level: True if i <= top else None for i, level in enumerate(LEVELS)}
    if verdict.divergence is None:  # not supported by the adapter: no level was compared
        return verdicts
    shows_at = LEVELS.index(PART_LEVEL.get(verdict.divergence.part, "responses"))
    for level in LEVELS[:shows_at]:
        verdicts[level] = passes(level)
        if not verdicts[level]:
            return verdicts
    verdicts[LEVELS[shows_at]] = False
    return verdicts


_STARTS: dict[str, tuple[str, ...]] = {}


def _start_rules(profile: str, config: dict[str, Any]) -> tuple[str, ...]:
    """The rules a controller fires when it starts from ``config`` (the bootstrap batch), the
    configuration of every walk of a workload of ``profile`` (Workload.walk: the profile's)."""
    rules = _STARTS.get(profile)
    if rules is None:
        from .coverage import start_rules

        rules = _STARTS[profile] = start_rules(config)
    return rules


COLLECT_EVERY = 1000
"""Traces checked between two runs of the cyclic garbage collector, which check_seeds runs itself."""

T = TypeVar("T")


def check_seeds(seeds: Iterable[int], workload: Workload) -> Iterator[dict[str, Any]]:
    """Rows for ``seeds``, with one adapter for all of them (a subprocess adapter starts its server
    once). The cyclic garbage collector runs every COLLECT_EVERY traces, over the objects made since,
    rather than whenever enough objects were made: a trace leaves a few objects in cycles behind,
    and the collections that allocation set off, walking the young objects and now and then every
    object of the process for them, took about a twentieth of the time."""
    from .subprocess_adapter import adapter_from_spec

    adapter = adapter_from_spec(workload.adapter)
    each = collected_every(seeds)
    try:
        for seed in each:
            yield check_seed(seed, workload, adapter)
    finally:
        each.close()
        getattr(adapter, "shutdown", adapter.close)()


def collected_every(items: Iterable[T]) -> Generator[T, None, None]:
    """``items``, one at a time, with the cyclic collector paused and run over the young objects after
    every COLLECT_EVERY of them (the whole heap, Spark's in a driver, is walked by no collection while
    they are worked on); the collector is given back as it was found when they run out or this is
    closed. How a conform task checks its seeds, and how ``kraftspec bench`` generates as it does."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        for count, item in enumerate(items, 1):
            yield item
            if count % COLLECT_EVERY == 0:
                gc.collect(1)
    finally:
        if collecting:
            gc.enable()


def slices(seeds: range, count: int) -> list[range]:
    """``seeds`` cut into at most ``count`` contiguous ranges of nearly equal size."""
    count = max(1, min(count, len(seeds)))
    size, extra = divmod(len(seeds), count)
    out, start = [], seeds.start
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        out.append(range(start, end))
        start = end
    return out


def _task(workload: Workload):
    """The function each Spark task runs on its range of seeds."""

    def run(index: int, ranges: Iterator[range]) -> Iterator[dict[str, Any]]:
        if workload.fail_first_attempt is not None and workload.fail_first_attempt[0] == index:
            from pyspark import TaskContext

            context = TaskContext.get()
            assert context is not None  # run is the function of a Spark task: it runs inside one
            if context.attemptNumber() == 0:
                Path(workload.fail_first_attempt[1]).touch()
                raise RuntimeError(f"kraftspec: task {index} fails on its first attempt, as the test asked")
        for seeds in ranges:
            yield from check_seeds(seeds, workload)

    return run


# ---- the Spark job -----------------------------------------------------------------------------


def result_schema() -> str:
    """The results' schema, as the DDL string Spark reads."""
    return ", ".join(f"{name} {kind}" for name, kind in RESULT_FIELDS)


TASK_START_SECONDS = 0.04
"""What Spark spends starting a task on local mode, its Python worker up (measured on 2026-11-25,
over a Unix socket): what each task beyond the first wave adds to a job."""


def task_count(traces: int, parallelism: int) -> int:
    """The tasks run_job cuts ``traces`` into on ``parallelism`` cores: about 200 traces a task (a
    progress bar that moves, retries that cost little), at most 64 a core (Spark spends some 40 ms
    starting each task), at least one a core."""
    return max(parallelism, min(traces // 200, parallelism * 64))


def checked_rows(spark, workload: Workload, tasks: int | None = None, tap=None):
    """Check every seed of ``workload`` on Spark, in ``tasks`` tasks (by default task_count's): the
    rows as a DataFrame, computed here and cached. ``tap(row)``, if given, sees each row in its
    task and returns it."""
    from pyspark import StorageLevel

    sc = spark.sparkContext
    tasks = tasks or task_count(len(workload.seeds), sc.defaultParallelism)
    ranges = slices(workload.seeds, tasks)
    rows = sc.parallelize(ranges, len(ranges)).mapPartitionsWithIndex(_task(workload))
    if tap is not None:
        rows = rows.map(tap)
    # rows that check_seed made to RESULT_FIELDS: not checked against the schema again, row by row
    # (some 20 µs a row, in the Python workers). Cached on local disk, not in the JVM's heap: a
    # million rows held in memory (some 1 kB each) ran a driver of Spark's default 1 GB out of heap
    # at four fifths of the run, and the disk costs no more time (measured on 6,000 traces)
    frame = spark.createDataFrame(rows, schema=result_schema(), verifySchema=False).persist(StorageLevel.DISK_ONLY)
    sc.setJobDescription(f"kraftspec conform: {workload.traces} traces")
    frame.count()  # every task runs here, in parallel
    return frame


def run_job(spark, workload: Workload, out: Path, tasks: int | None = None, tap=None):
    """Check every seed of ``workload`` on Spark (checked_rows) and write ``out/results`` and, when
    some trace is kept, ``out/traces`` as Parquet, in a few large files, from the cached rows;
    returns the results as a cached DataFrame (the trace column left out)."""
    frame = checked_rows(spark, workload, tasks, tap)
    results = frame.drop("trace")
    results.coalesce(_files(workload.traces, RESULTS_PER_FILE)).write.parquet(str(out / "results"))
    kept = frame.where("trace IS NOT NULL").select("seed", "name", "trace")
    count = kept.count() if workload.keep_traces != "none" else 0
    if count:  # no folder when no trace is kept (nothing failed)
        kept.coalesce(_files(count, TRACES_PER_FILE)).write.parquet(str(out / "traces"))
    tidy_output(out)
    return results


RESULTS_PER_FILE = 500_000
TRACES_PER_FILE = 20_000
"""Rows per Parquet file: a few large files rather than one per task (a result row is about 200
bytes, a trace of 50 events about 30 kB before compression)."""


def _files(rows: int, per_file: int) -> int:
    return max(1, -(-rows // per_file))


@frozen
class Summary:
    workload: Workload
    traces: int
    events: int
    passed: int
    per_level: dict[str, dict[str, int]]  # level -> {"passed": n, "failed": n, "not_reached": n}
    rules: dict[str, dict[str, int]]  # rule -> {"traces": n, "firings": n}
    never_reached: tuple[str, ...]
    failures: tuple[dict[str, Any], ...]  # the first failures: seed, name, step, part, report (and path, once written)
    seconds: float
    divergences: tuple[dict[str, Any], ...] = ()  # shrunk: seed, path, steps, repro

    @property
    def failed(self) -> int:
        return self.traces - self.passed

    def to_json(self) -> dict[str, Any]:
        w = self.workload
        return {
            "spec_version": SPEC_VERSION,
            "workload": {"traces": w.traces, "first_seed": w.first_seed, "steps": w.steps, "adapter": w.adapter,
                         "level": w.level, "brokers": w.brokers, "partitions": w.partitions, "profile": w.profile},
            "traces": self.traces, "events": self.events, "passed": self.passed, "failed": self.failed,
            "per_level": self.per_level, "rules": self.rules, "never_reached": list(self.never_reached),
            "failures": list(self.failures), "divergences": list(self.divergences),
            "seconds": round(self.seconds, 2),
            "events_per_second": round(self.events / self.seconds) if self.seconds else None,
        }


def summarize(results, workload: Workload, seconds: float, keep_failures: int = 20) -> Summary:
    """Aggregate the results with Spark: totals, pass or fail per level, rule coverage."""
    from pyspark.sql import functions as F

    from .coverage import runtime_rules

    levels = LEVELS[: LEVELS.index(workload.level) + 1]
    sums = [F.count("*").alias("traces"), F.sum("events").alias("events"), F.sum(F.col("passed").cast("int")).alias("passed")]
    for level in levels:
        column = F.col(f"passed_{level}")
        sums += [F.sum(column.cast("int")).alias(f"{level}_passed"), F.sum((~column).cast("int")).alias(f"{level}_failed"),
                 F.sum(column.isNull().cast("int")).alias(f"{level}_not_reached")]
    totals = results.agg(*sums).first()  # one pass for the totals and every level
    per_level = {level: {kind: totals[f"{level}_{kind}"] or 0 for kind in ("passed", "failed", "not_reached")}
                 for level in levels}
    fired = (results.select(F.explode("rules").alias("rule", "firings"))
             .groupBy("rule").agg(F.count("*").alias("traces"), F.sum("firings").alias("firings")).collect())
    rules = {r["rule"]: {"traces": r["traces"], "firings": r["firings"]} for r in sorted(fired, key=lambda r: _rule_key(r["rule"]))}
    failures = tuple(
        {"seed": r["seed"], "name": r["name"], "step": r["divergence_step"], "part": r["divergence_part"],
         "report": r["report"]}
        for r in results.where("NOT passed").orderBy("seed").limit(keep_failures).collect()
    )
    never = tuple(r for r in runtime_rules() if r not in rules)
    return Summary(workload, totals["traces"] or 0, totals["events"] or 0, totals["passed"] or 0, per_level, rules,
                   never, failures, seconds)


def _rule_key(rule: str) -> tuple[str, int]:
    area, _, number = rule.partition("-")
    return area, int(number) if number.isdigit() else 0


def write_divergences(summary: Summary, out: Path, limit: int = 5, progress=None) -> Summary:
    """Write each failing trace of the summary (its first failures) to ``out/divergences`` as JSON
    Lines, ``seed-SEED.jsonl``, and give its report the command that replays that file; shrink the
    first ``limit`` of them on the driver to ``seed-SEED-shrunk.jsonl``; write the folder's
    README.md. ``progress(index, count, failure, spent, budget, events)`` is told how each shrink
    goes. Returns the summary with its failures' reports completed and its divergences."""
    from attrs import evolve

    from .shrink import failing_against, shrink
    from .subprocess_adapter import adapter_from_spec

    w = summary.workload
    if not summary.failures:
        return summary
    folder = out / "divergences"
    folder.mkdir(parents=True, exist_ok=True)
    failures, written = [], []
    adapter = adapter_from_spec(w.adapter) if limit else None  # one for every shrink: a server starts once
    try:
        for index, failure in enumerate(summary.failures):
            seed = failure["seed"]
            trace = w.walk(seed)
            original = trace.with_description(f"seed {seed} of kraftspec conform, as generated: diverges at step "
                                              f"{failure['step']} ({failure['part']})").write(folder / f"seed-{seed}.jsonl")
            failures.append({**failure, "path": str(original),
                             "report": _with_repro(failure["report"], _replay_command(original, w))})
            if index >= limit:
                continue
            assert adapter is not None  # made when limit is above 0, as it is here
            told = None if progress is None else (
                lambda spent, budget, events, i=index, f=failure: progress(i, min(limit, len(summary.failures)), f,
                                                                            spent, budget, events))
            smaller = shrink(trace, failing_against(lambda: adapter, w.level), progress=told)
            description = (f"seed {seed} of kraftspec conform (spec {SPEC_VERSION}), shrunk from {len(trace.steps)} "
                           f"to {len(smaller.steps)} events: diverges at {failure['part']}")
            path = smaller.with_description(description).write(folder / f"seed-{seed}-shrunk.jsonl")
            written.append({"seed": seed, "name": failure["name"], "path": str(path), "original": str(original),
                            "events": len(smaller.steps), "repro": w.repro(seed), "replay": _replay_command(path, w)})
    finally:
        if adapter is not None:
            getattr(adapter, "shutdown", adapter.close)()
    (folder / "README.md").write_text(_divergences_readme(summary, failures, written), encoding="utf-8")
    return evolve(summary, failures=tuple(failures), divergences=tuple(written))


def _replay_command(path: Path, w: Workload) -> str:
    return f"kraftspec replay {shlex.quote(str(path))} --adapter {shlex.quote(w.adapter)} --level {w.level}"


def _with_repro(report: str, command: str) -> str:
    """The report with a ``repro:`` line (the command that replays the trace's file) before its ``again:`` line."""
    lines = report.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith("  again:")), len(lines))
    return "\n".join([*lines[:at], f"  repro:   {command}", *lines[at:]])


def _divergences_readme(summary: Summary, failures: list[dict], written: list[dict]) -> str:
    """What the divergences folder holds, for whoever opens it."""
    w = summary.workload
    lines = [
        "# Divergences of a kraftspec conform run",
        "",
        f"The run replayed {summary.traces:,} random walks of {w.steps} events (seeds {w.seeds.start} to "
        f"{w.seeds.stop - 1}) against `{w.adapter}` at level {w.level}, spec {SPEC_VERSION}; "
        f"{summary.failed:,} of them diverged. This folder holds the first {len(failures)} that diverged, "
        "as trace files (JSON Lines, spec/traces.md):",
        "",
        "- `seed-SEED.jsonl`: the trace as the run generated it;",
        "- `seed-SEED-shrunk.jsonl`: a shortest trace found that diverges the same way (same part, event kind, "
        "api and rules), re-recorded from the model; only the first few divergences are shrunk.",
        "",
        "Replay one of them against the same system under test, from this folder, with",
        "",
        f"    kraftspec replay FILE --adapter {shlex.quote(w.adapter)} --level {w.level}",
        "",
        "It prints the step where the system departs from the trace, the event, the reply or part that differs "
        "and the rules that decided it. The other failing traces are in `../traces` (Parquet), and every "
        "trace's result in `../results`.",
        "",
        "| seed | diverges at step | part | trace | shrunk |",
        "|---|---|---|---|---|",
    ]
    shrunk = {d["seed"]: d for d in written}
    for failure in failures:
        d = shrunk.get(failure["seed"])
        name = Path(failure["path"]).name
        smaller = f"[{Path(d['path']).name}]({Path(d['path']).name}), {d['events']} events" if d else "-"
        lines.append(f"| {failure['seed']} | {failure['step']} | {failure['part']} | [{name}]({name}) | {smaller} |")
    return "\n".join(lines) + "\n"


# ---- the session ---------------------------------------------------------------------------------


class SparkSetupError(RuntimeError):
    """Spark cannot run here: no Java, an unreachable master. The message says what to do."""


def java_major() -> int:
    """The major version of the Java that Spark would start, or SparkSetupError."""
    import re
    import shutil
    import subprocess

    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise SparkSetupError("Java was not found. Spark needs Java 17 or newer: install it (for example "
                              "apt-get install openjdk-17-jre-headless) or set JAVA_HOME.")
    shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if not match:
        raise SparkSetupError(f"could not tell the version of {java}: {shown.strip()[:200]!r}")
    major = int(match.group(1)) if match.group(1) != "1" else int(match.group(2))
    if major < 17:
        raise SparkSetupError(f"{java} is Java {major}; Spark needs Java 17 or newer.")
    return major


def check_master(master: str, timeout: float = 5.0) -> None:
    """Refuse, at once and clearly, a master URL Spark would retry against for minutes."""
    import socket

    if master.startswith("local"):
        return
    if not master.startswith("spark://"):
        raise SparkSetupError(f"--master {master!r}: expected local, local[N], local[N,F] or spark://host:port")
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise SparkSetupError(f"--master {master!r}: expected spark://host:port")
        try:
            socket.create_connection((host, int(port)), timeout=timeout).close()
            return
        except OSError as error:
            problem = error
    raise SparkSetupError(f"the Spark master {master} cannot be reached ({problem}); is it running, and is the "
                          "address right? (the master's log shows the URL it listens on)")


def log4j_properties(level: str) -> str:
    """A log4j2 configuration: everything at ``level`` and above, to standard error."""
    return (f"rootLogger.level = {level}\n"
            "rootLogger.appenderRef.stderr.ref = console\n"
            "appender.console.type = Console\n"
            "appender.console.name = console\n"
            "appender.console.target = SYSTEM_ERR\n"
            "appender.console.layout.type = PatternLayout\n"
            "appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n\n")


_LOG4J = log4j_properties("error") + (
    # Spark prints "Setting default log level" when the shell's logger (which PySpark counts as one)
    # has no level of its own that equals the root's: give it one
    "logger.repl.name = org.apache.spark.repl.Main\nlogger.repl.level = error\n")

JVM_NOISE = re.compile(
    r"WARNING: Using incubator modules: |Using Spark's default log4j profile|Setting default log level to "
    r"|To adjust logging level use sc\.setLogLevel|NativeCodeLoader: Unable to load native-hadoop library")
"""Lines the JVM and Spark print on every start that say nothing about the run: dropped from the
driver JVM's standard error (everything else, errors first, goes through)."""

HADOOP_OUTPUT = {
    "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",  # no .crc file beside each output
    "spark.hadoop.fs.file.impl.disable.cache": "true",
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",  # no _SUCCESS file
}


def session(master: str, app_name: str = "kraftspec conform"):
    """A SparkSession on ``master``, with the Python workers on this interpreter and Spark's
    console noise turned down; an active session on the same master is reused."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and active.sparkContext.master == master:
        return active, False
    java_major()
    check_master(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf_dir = Path(os.environ.get("TMPDIR", "/tmp")) / "kraftspec-spark-conf"
    conf_dir.mkdir(exist_ok=True)
    (conf_dir / "log4j2.properties").write_text(_LOG4J)
    os.environ.setdefault("SPARK_CONF_DIR", str(conf_dir))
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.ui.enabled", "false")
               .config("spark.python.worker.reuse", "true"))
    if hasattr(socket, "AF_UNIX"):
        # the JVM and its Python workers talk over a Unix socket: over loopback TCP each task's
        # input reached its worker about 40 ms late, a seventh of a task of 250 traces (Spark
        # before 4.1, which has no such option, ignores it)
        builder = builder.config("spark.python.unix.domain.socket.enabled", "true")
    for key, value in HADOOP_OUTPUT.items():
        builder = builder.config(key, value)
    with _quiet_jvm_start():
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True


@contextlib.contextmanager
def _quiet_jvm_start():
    """While the driver JVM is launched, standard error (file descriptor 2, which the JVM inherits
    for its whole life) is a pipe that a thread copies to the real standard error, leaving out the
    lines of :data:`JVM_NOISE`. A JVM already running (a session stopped and started again) is
    left as it is."""
    from pyspark import SparkContext

    if SparkContext._gateway is not None:  # the JVM runs already: nothing new will start
        yield
        return
    sys.stderr.flush()
    real = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    threading.Thread(target=_copy_without_noise, args=(read_end, real), daemon=True,
                     name="kraftspec JVM stderr").start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)  # this process writes to the real standard error again; the JVM keeps the pipe


def _copy_without_noise(read_end: int, real: int) -> None:
    with open(read_end, "rb") as pipe, open(real, "wb", buffering=0, closefd=False) as out:
        for line in without_noise(pipe):
            out.write(line)


REAPED_WORKER = re.compile(rb"(BrokenPipeError|ConnectionResetError): ")
"""How a traceback of PySpark's worker daemon ends when the JVM closed a worker's connection: Spark
ends a Python worker that has been idle for a minute (between the jobs of a benchmark, say), and the
daemon prints the worker's failed write. The work is not affected: a task's own failure reaches the
driver as an error of its job, never through this traceback."""


def without_noise(lines: Iterable[bytes]) -> Iterator[bytes]:
    """``lines`` (of the driver JVM's standard error) without those of :data:`JVM_NOISE` and
    without the tracebacks of idle workers ended by Spark (:data:`REAPED_WORKER`, every frame in
    PySpark's daemon.py); every other line, tracebacks included, as it came. Workers ended together
    (both of local[2]'s) write their tracebacks into the one stream at once, a line of one between
    lines of the other: a traceback that begins before the last one ended is held with it, and the
    lot is dropped only if every traceback in it is such a worker's."""
    held: list[bytes] = []  # tracebacks, until the last line of each says whose it is
    unfinished = 0  # tracebacks in ``held`` whose last line has not come
    for line in lines:
        if line.startswith(b"Traceback (most recent call last):"):
            held.append(line)
            unfinished += 1
        elif held:
            held.append(line)
            if line[:1] in (b" ", b"\t"):  # a frame or its source line: a traceback goes on
                continue
            unfinished -= 1
            if unfinished:
                continue
            frames = [f for f in held if f[:1] in (b" ", b"\t") and f.lstrip().startswith(b"File ")]
            ends = [f for f in held if f[:1] not in (b" ", b"\t") and not f.startswith(b"Traceback")]
            reaped = (frames and all(b"pyspark" in f and b"daemon.py" in f for f in frames)
                      and all(REAPED_WORKER.match(end) for end in ends))
            if not reaped:
                yield from held
            held = []
        elif not JVM_NOISE.search(line.decode("utf-8", "replace")):
            yield line
    yield from held  # a traceback cut short: as it came


def tidy_output(folder: Path) -> None:
    """Remove what Hadoop's committer leaves beside the Parquet files when the settings of
    :data:`HADOOP_OUTPUT` were not in force (a session started elsewhere): checksum files and
    the _SUCCESS marker."""
    for leftover in [*folder.rglob(".*.crc"), *folder.rglob("_SUCCESS")]:
        leftover.unlink()
