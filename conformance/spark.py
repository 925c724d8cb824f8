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
rule coverage. :func:`shrink_failures` then shrinks a few failing traces on the driver and writes
them out, each with the one command that reproduces it on a laptop.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from attrs import field, frozen

from ..spec import SPEC_VERSION
from .trace import LEVELS

PART_LEVEL = {"seq": "responses", "replies": "responses", "adapter": "responses", "committed": "state",
              "records": "records"}
"""The lowest comparison level at which a divergence of each part shows."""


@frozen
class Workload:
    """What ``kraftspec conform`` checks: seeds ``first_seed .. first_seed + traces - 1``, each a
    random walk of ``steps`` events (cluster size and faults drawn from the seed unless given),
    replayed against ``adapter`` at ``level``."""

    traces: int
    first_seed: int = 0
    steps: int = 50
    adapter: str = "impl"
    level: str = "records"
    brokers: int | None = None
    partitions: int | None = None
    keep_traces: str = "failing"  # "failing", "all" or "none": which traces go to the traces table
    # tests: (task index, marker file): that task's first attempt creates the file and fails
    fail_first_attempt: tuple[int, str] | None = field(default=None, eq=False)

    @property
    def seeds(self) -> range:
        return range(self.first_seed, self.first_seed + self.traces)

    def repro(self, seed: int) -> str:
        """One command that regenerates the seed's trace and replays it, on a laptop, no Spark."""
        folder = f"/tmp/kraftspec-seed-{seed}"
        sizes = "".join(f" --{name} {value}" for name, value in (("brokers", self.brokers), ("partitions", self.partitions))
                        if value is not None)
        return (f"kraftspec generate --spec {SPEC_VERSION} --seeds {seed} --steps {self.steps}{sizes} --out {folder} && "
                f"kraftspec replay {folder} --adapter {shlex.quote(self.adapter)} --level {self.level}")


RESULT_FIELDS = (
    ("seed", "long"), ("name", "string"), ("events", "int"), ("brokers", "int"), ("partitions", "int"),
    ("faults", "array<string>"), ("level", "string"), ("passed", "boolean"), ("passed_responses", "boolean"),
    ("passed_state", "boolean"), ("passed_records", "boolean"), ("divergence_step", "int"),
    ("divergence_part", "string"), ("report", "string"), ("rules", "map<string,int>"), ("seconds", "double"),
    ("trace", "string"),
)
"""One row per trace. ``passed_<level>`` is null above the level asked for; ``report`` and the
divergence columns are null for a trace that passes; ``trace`` (the JSON Lines) is kept as
``Workload.keep_traces`` says; ``rules`` counts how often each rule fired in the trace."""


def check_seed(seed: int, workload: Workload, adapter) -> dict[str, Any]:
    """Generate the seed's walk and replay it against ``adapter``: the trace's row."""
    from .generate import walk
    from .replay import replay

    started = time.perf_counter()
    trace = walk(seed, workload.steps, workload.brokers, workload.partitions)
    verdict = replay(trace, adapter, workload.level)
    asked = LEVELS.index(workload.level)
    passed = {level: (True if verdict.passed else None) if i <= asked else None for i, level in enumerate(LEVELS)}
    if not verdict.passed:
        lowest = LEVELS.index(PART_LEVEL.get(verdict.divergence.part, "responses"))
        for i, level in enumerate(LEVELS[: asked + 1]):
            if i >= lowest:
                passed[level] = False
            else:  # a lower level may pass although the asked one failed: replay at it to know
                passed[level] = replay(trace, adapter, level).passed
    params = trace.header.generator["params"]
    fired = Counter(_start_rules(trace.header.config)) + Counter(rule for step in trace.steps for rule in step.rules)
    keep = workload.keep_traces == "all" or (workload.keep_traces == "failing" and not verdict.passed)
    return {
        "seed": seed, "name": trace.name, "events": len(trace.steps), "brokers": params["brokers"],
        "partitions": params["partitions"], "faults": list(params["faults"]), "level": workload.level,
        "passed": verdict.passed, "passed_responses": passed["responses"], "passed_state": passed["state"],
        "passed_records": passed["records"],
        "divergence_step": None if verdict.passed else verdict.divergence.step,
        "divergence_part": None if verdict.passed else verdict.divergence.part,
        "report": None if verdict.passed else verdict.report(workload.adapter) + f"\n  again:   {workload.repro(seed)}",
        "rules": dict(fired), "seconds": time.perf_counter() - started,
        "trace": "\n".join(trace.lines()) + "\n" if keep else None,
    }


_STARTS: dict[str, tuple[str, ...]] = {}


def _start_rules(config: dict[str, Any]) -> tuple[str, ...]:
    """The rules a controller fires when it starts from this configuration (the bootstrap batch)."""
    import json

    from .coverage import start_rules

    key = json.dumps(config, sort_keys=True)
    if key not in _STARTS:
        _STARTS[key] = start_rules(config)
    return _STARTS[key]


def check_seeds(seeds: Iterable[int], workload: Workload) -> Iterator[dict[str, Any]]:
    """Rows for ``seeds``, with one adapter for all of them (a subprocess adapter starts its server once)."""
    from .subprocess_adapter import adapter_from_spec

    adapter = adapter_from_spec(workload.adapter)
    try:
        for seed in seeds:
            yield check_seed(seed, workload, adapter)
    finally:
        getattr(adapter, "shutdown", adapter.close)()


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

            if TaskContext.get().attemptNumber() == 0:
                Path(workload.fail_first_attempt[1]).touch()
                raise RuntimeError(f"kraftspec: task {index} fails on its first attempt, as the test asked")
        for seeds in ranges:
            yield from check_seeds(seeds, workload)

    return run


# ---- the Spark job -----------------------------------------------------------------------------


def result_schema() -> str:
    """The results' schema, as the DDL string Spark reads."""
    return ", ".join(f"{name} {kind}" for name, kind in RESULT_FIELDS)


def run_job(spark, workload: Workload, out: Path, tasks: int | None = None):
    """Check every seed of ``workload`` on Spark and write ``out/results`` and ``out/traces`` as
    Parquet; returns the results as a cached DataFrame (the trace column left out)."""
    from pyspark import StorageLevel

    sc = spark.sparkContext
    # about 200 traces a task (a progress bar that moves, retries that cost little), at most 64 per core
    tasks = tasks or max(sc.defaultParallelism, min(len(workload.seeds) // 200, sc.defaultParallelism * 64))
    ranges = slices(workload.seeds, tasks)
    rows = sc.parallelize(ranges, len(ranges)).mapPartitionsWithIndex(_task(workload))
    frame = spark.createDataFrame(rows, schema=result_schema()).persist(StorageLevel.MEMORY_AND_DISK)
    sc.setJobDescription(f"kraftspec conform: {workload.traces} traces")
    results = frame.drop("trace")
    results.write.parquet(str(out / "results"))
    if workload.keep_traces != "none":
        frame.where("trace IS NOT NULL").select("seed", "name", "trace").write.parquet(str(out / "traces"))
    return results


@frozen
class Summary:
    workload: Workload
    traces: int
    events: int
    passed: int
    per_level: dict[str, dict[str, int]]  # level -> {"passed": n, "failed": n}
    rules: dict[str, dict[str, int]]  # rule -> {"traces": n, "firings": n}
    never_reached: tuple[str, ...]
    failures: tuple[dict[str, Any], ...]  # the first failures: seed, name, step, part, report
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
                         "level": w.level, "brokers": w.brokers, "partitions": w.partitions},
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
        sums += [F.sum(column.cast("int")).alias(f"{level}_passed"), F.sum((~column).cast("int")).alias(f"{level}_failed")]
    totals = results.agg(*sums).first()  # one pass for the totals and every level
    per_level = {level: {"passed": totals[f"{level}_passed"] or 0, "failed": totals[f"{level}_failed"] or 0}
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


def shrink_failures(summary: Summary, out: Path, limit: int = 5) -> Summary:
    """Shrink the first ``limit`` failing traces on the driver and write each to ``out/divergences``."""
    from attrs import evolve

    from .generate import walk
    from .shrink import failing_against, shrink, write_to_corpus
    from .subprocess_adapter import adapter_from_spec

    w = summary.workload
    written = []
    for failure in summary.failures[:limit]:
        trace = walk(failure["seed"], w.steps, w.brokers, w.partitions)
        smaller = shrink(trace, failing_against(lambda: adapter_from_spec(w.adapter), w.level))
        description = (f"seed {failure['seed']} of kraftspec conform (spec {SPEC_VERSION}), shrunk from "
                       f"{len(trace.steps)} to {len(smaller.steps)} events: diverges at {failure['part']}")
        path = write_to_corpus(smaller, description, out / "divergences")
        written.append({"seed": failure["seed"], "name": failure["name"], "path": str(path), "events": len(smaller.steps),
                        "repro": w.repro(failure["seed"]), "replay": f"kraftspec replay {shlex.quote(str(path))} "
                        f"--adapter {shlex.quote(w.adapter)} --level {w.level}"})
    return evolve(summary, divergences=tuple(written))


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


_LOG4J = log4j_properties("error")


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
    spark = (SparkSession.builder.master(master).appName(app_name)
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.ui.enabled", "false")
             .config("spark.python.worker.reuse", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True
