"""``kraftspec conform``: the main job. Generate conformance traces from the model over a range of
seeds and replay each against a system under test, on Spark (local by default, or a cluster).

Exit status: 0 every trace passes; 1 some trace fails (or the adapter fails on every trace);
2 bad input or a Spark that cannot run (no Java, an unreachable master, an output folder that
exists).
"""

from __future__ import annotations

import functools
import html
import json
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kraftspec.cli import add_profile_option, bounded

if TYPE_CHECKING:  # kraftspec.traces is imported when a divergence is shrunk, not at the command's start
    from kraftspec.traces import ShrinkMeter

DEFAULT_TRACES = 20_000
DEFAULT_MASTER = "local[*,4]"  # all cores; a failed task is tried up to 4 times
KEPT_FAILURES = 20  # failing traces reported in the summary and written to OUT/divergences


def add_parser(commands) -> None:
    conform = commands.add_parser(
        "conform",
        help="generate and replay conformance traces at scale on Spark (the main job)",
        description="Generate random walks from the model over a range of seeds (each seed gives the same trace "
        "wherever it runs) and replay each against a system under test on Spark: embedded local mode by "
        "default, or a standalone cluster with --master spark://host:port. Writes per-trace results and "
        "failing traces as Parquet, a summary as JSON, an HTML report of rule coverage and divergences, and "
        "each divergence shrunk to a small trace with the one command that reproduces it on a laptop. "
        "--exhaustive enumerates a small scope instead, its frontier spread over the executors. Exit status: "
        "0 every trace passes, 1 some fail, 2 bad input or Spark cannot run.",
    )
    conform.add_argument("--traces", type=bounded("--traces", 1, 10**10), default=DEFAULT_TRACES,
                         help=f"how many traces, one per seed (default {DEFAULT_TRACES:,}: a few minutes on 2 cores)")
    conform.add_argument("--first-seed", type=bounded("--first-seed", 0, 2**62), default=0,
                         help="the first seed (default 0); the seeds are FIRST .. FIRST+TRACES-1")
    conform.add_argument("--steps", type=bounded("--steps", 1, 100_000), default=50, help="events per trace (default 50)")
    conform.add_argument("--brokers", type=bounded("--brokers", 1, 50), default=None,
                         help="brokers per trace (default: drawn from each seed, 2 to 5; exhaustive: 1 to 3, default 3)")
    conform.add_argument("--partitions", type=bounded("--partitions", 1, 50), default=None,
                         help="partitions per trace (default: drawn from each seed, 1 to 4; exhaustive: 1 to 2, default 2)")
    conform.add_argument("--adapter", default="impl",
                         help="the system under test: impl (default), model, kafka or kafka:VERSION (Apache Kafka's controller; "
                         "compare it with --level responses), or subprocess:COMMAND (spec/protocol.md); "
                         "with --exhaustive, none enumerates and checks the invariants without replaying")
    conform.add_argument("--level", choices=["responses", "state", "records"], default="records",
                         help="what to compare (default records: responses, committed state and exact records)")
    conform.add_argument("--master", default=DEFAULT_MASTER,
                         help=f"Spark master: local[N], local[N,F] (F tries per task) or spark://host:port "
                         f"(default {DEFAULT_MASTER})")
    conform.add_argument("--tasks", type=bounded("--tasks", 1, 10**6), default=None,
                         help="Spark tasks to cut the seeds into (default: about 200 traces a task, at most 64 per core)")
    conform.add_argument("--out", default=None,
                         help="folder for the results; must not exist (default kraftspec-conform-DATE-TIME)")
    conform.add_argument("--keep-traces", choices=["failing", "all", "none"], default="failing",
                         help="which traces to write to OUT/traces as Parquet (default failing; no folder when "
                         "none is kept)")
    conform.add_argument("--shrink", type=bounded("--shrink", 0, 1000), default=5,
                         help=f"how many divergences to shrink (default 5); the first {KEPT_FAILURES} failing traces, and the "
                         "shrunk ones, are written to OUT/divergences as trace files")
    conform.add_argument("--json", metavar="FILE", help="also write the summary to FILE")
    conform.add_argument("--site-url", metavar="URL", default=None,
                         help="the address of the specification's site (built by kraftspec site), for example "
                         "https://example.org/kraftspec or ../site; the report then links each rule to its anchor "
                         "there (default: to its heading in the installed spec/*.md file)")
    conform.add_argument("--exhaustive", action="store_true",
                         help="enumerate every event sequence of a small scope instead of random walks")
    conform.add_argument("--depth", type=bounded("--depth", 1, 8), default=3,
                         help="events after the warm start, with --exhaustive (default 3)")
    add_profile_option(conform, "the behaviour profile to generate the traces under, with its default timings "
                       "(a subprocess server that does not list it reports every trace not supported)")
    from kraftspec.conform_metrics import add_option as add_metrics_option

    add_metrics_option(conform)


def run(args) -> int:
    from kraftspec.conformance.spark import SparkSetupError, Workload, session

    out = Path(args.out) if args.out else Path(f"kraftspec-conform-{time.strftime('%Y%m%d-%H%M%S')}")
    if out.exists():
        return _bad(f"--out {out}: the folder exists; give another, or remove it (results are never overwritten)")
    workload = Workload(args.traces, args.first_seed, args.steps, args.adapter, args.level, args.brokers,
                        args.partitions, args.keep_traces, profile=args.profile)
    if not args.exhaustive:
        refused = _preflight(workload)
        if refused is not None:
            return refused
    try:
        spark, owned = session(args.master)
    except SparkSetupError as error:
        return _bad(str(error))
    from py4j.protocol import Py4JError

    try:
        if args.exhaustive:
            return _exhaustive(spark, args, out)
        return _conform(spark, workload, args, out)
    except Py4JError as error:  # the job failed in Spark, or Spark's JVM ended under it
        owned = owned and _jvm_answers(spark)
        return _bad(spark_failure(error, out))
    finally:
        if owned:
            spark.stop()


def spark_failure(error: Exception, out: Path) -> str:
    """What to tell the user when Spark fails under the job: its own reason when its JVM can still
    give one (the first line of the Java exception), otherwise that the JVM ended, whose reason
    Spark has printed above (an OutOfMemoryError, say)."""
    reason = None
    java = getattr(error, "java_exception", None)
    if java is not None:
        try:
            reason = str(java.toString()).splitlines()[0]
        except Exception:  # noqa: BLE001 - the JVM is gone: nothing more to ask it
            reason = None
    if reason is None:
        reason = ("Spark's JVM ended during the job; its reason is in Spark's messages above "
                  "(for java.lang.OutOfMemoryError, give it more memory: PYSPARK_SUBMIT_ARGS=\"--driver-memory 4g pyspark-shell\")")
    return f"Spark failed during the job: {reason}. Anything written to {out} is incomplete; run again with another --out"


def _jvm_answers(spark) -> bool:
    """Whether Spark's JVM still answers (after a failure, stopping a dead one only raises again)."""
    try:
        spark.sparkContext.getConf()
        return True
    except Exception:  # noqa: BLE001 - any failure to answer means it is gone
        return False


def _bad(message: str) -> int:
    print(f"kraftspec conform: {message}", file=sys.stderr)
    return 2


def _preflight(workload) -> int | None:
    """Check the first seed on the driver before starting Spark: an adapter that cannot start, or
    fails to answer, is reported at once instead of once per trace."""
    from kraftspec.conformance.adapters import AdapterFailure
    from kraftspec.conformance.spark import check_seed
    from kraftspec.conformance.subprocess_adapter import adapter_from_spec

    try:
        adapter = adapter_from_spec(workload.adapter)
    except (AdapterFailure, ValueError, OSError) as error:
        return _bad(f"--adapter {workload.adapter!r}: {error}")
    try:
        row = check_seed(workload.first_seed, workload, adapter)
    finally:
        getattr(adapter, "shutdown", adapter.close)()
    if row["divergence_part"] == "adapter":
        print(f"kraftspec conform: the adapter {workload.adapter!r} fails on the first trace (seed "
              f"{workload.first_seed}) without answering, so no trace would pass; nothing was run on Spark.\n"
              f"{row['report']}", file=sys.stderr)
        return 1
    return None


class _TaskProgress:
    """The progress of the replay stage (the job's first, one task per range of seeds): tasks done,
    events a second and the estimated time left, on standard error; redrawn in place on a terminal,
    elsewhere a line at each tenth, so that CI logs show the run is alive."""

    def __init__(self, spark, label: str, events: int):
        self.tracker = spark.sparkContext.statusTracker()
        self.label = label
        self.events = events  # the events of the whole run
        self.tty = sys.stderr.isatty()
        self.stop = threading.Event()
        self.started = time.perf_counter()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.last_tenth = -1
        self.stage: int | None = None  # the replay stage, once seen

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        if self.tty and self.last_tenth >= 0:
            sys.stderr.write("\n")

    def _loop(self) -> None:
        from py4j.protocol import Py4JError

        try:
            self._follow()
        except Py4JError:  # Spark's JVM ended under the job, which tells the user so
            return

    def _follow(self) -> None:
        while not self.stop.wait(0.5):
            if self.stage is None:
                active = sorted(self.tracker.getActiveStageIds())
                self.stage = active[0] if active else None
            info = self.tracker.getStageInfo(self.stage) if self.stage is not None else None
            if info is not None and info.numTasks:
                self._draw(info.numCompletedTasks, info.numTasks)
                if info.numCompletedTasks == info.numTasks:
                    return

    def _draw(self, done: int, total: int) -> None:
        elapsed = time.perf_counter() - self.started
        rate = self.events * done / total / elapsed if done and elapsed else 0
        left = f", about {_duration(elapsed * (total - done) / done)} left" if 0 < done < total else ""
        speed = f", {rate:,.0f} events/s" if rate else ""
        if self.tty:
            filled = int(30 * done / total)
            self.last_tenth = 0
            sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} tasks, "
                             f"{elapsed:.0f} s{speed}{left}   ")
            sys.stderr.flush()
        elif done * 10 // total > self.last_tenth:
            self.last_tenth = done * 10 // total
            print(f"{self.label}: {done}/{total} tasks, {elapsed:.0f} s{speed}{left}", file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


class _ShrinkProgress:
    """How the shrinking of divergences goes, on standard error (see ShrinkMeter)."""

    def __init__(self):
        from kraftspec.traces import ShrinkMeter

        self.meter_class = ShrinkMeter
        self.meter: ShrinkMeter | None = None  # the meter of the divergence being shrunk, from the first call
        self.index: int | None = None  # its index among the divergences

    def __call__(self, index, count, failure, spent, budget, events) -> None:
        meter = self.meter
        if meter is None or index != self.index:
            if meter is not None:
                meter.done()
            self.index = index
            meter = self.meter = self.meter_class(f"shrinking {index + 1} of {count} (seed {failure['seed']})")
        meter(spent, budget, events)

    def close(self) -> None:
        if self.meter is not None:
            self.meter.done()


def _conform(spark, workload, args, out: Path) -> int:
    from kraftspec.conformance.spark import run_job, summarize, write_divergences

    print(f"kraftspec conform: {workload.traces:,} traces of {workload.steps} events (seeds {workload.seeds.start}.."
          f"{workload.seeds.stop - 1}), profile {workload.profile}, adapter {workload.adapter}, level {workload.level}, "
          f"master {spark.sparkContext.master}", flush=True)
    from kraftspec import compiled

    print(f"kraftspec conform: {compiled.describe()}", flush=True)
    started = time.perf_counter()
    metrics = _metrics(spark, workload, args)
    try:
        with _TaskProgress(spark, "replaying", workload.traces * workload.steps):
            results = run_job(spark, workload, out, args.tasks, tap=metrics.tap)
            summary = summarize(results, workload, time.perf_counter() - started, KEPT_FAILURES)
        metrics.finish(summary, results, out)  # OUT/metrics.prom
    finally:
        metrics.close()
    results.unpersist()
    if summary.failed:
        shown = _ShrinkProgress()
        try:
            summary = write_divergences(summary, out, args.shrink, shown)
        finally:
            shown.close()
    data = summary.to_json()
    (out / "summary.json").write_text(json.dumps(data, indent=2) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    (out / "report.html").write_text(report_html(data, out, getattr(args, "site_url", None)))
    print(table(data, out))
    everything_adapter = summary.failures and summary.passed == 0 and all(
        f["part"] == "adapter" for f in summary.failures)
    if everything_adapter:
        print("kraftspec conform: the adapter failed on every trace without answering; see the first report "
              "above", file=sys.stderr)
    return 0 if summary.failed == 0 else 1


def _metrics(spark, workload, args):
    """The run's metrics (cli/conform_metrics.py), served on --metrics-port if given."""
    from kraftspec.conform_metrics import ConformMetrics

    metrics = ConformMetrics(spark, workload.traces)
    metrics.serve(getattr(args, "metrics_port", 0))
    return metrics


def table(data: dict, out: Path) -> str:
    """The summary as a few readable lines."""
    lines = [f"  traces   {data['traces']:>12,}  passed {data['passed']:,}  failed {data['failed']:,}",
             f"  {'level':9}{'passed':>12}  {'failed':>10}  {'not reached':>11}"]
    for level, counts in data["per_level"].items():
        lines.append(f"  {level:9}{counts['passed']:>12,}  {counts['failed']:>10,}  {counts.get('not_reached', 0):>11,}")
    rate = f" ({data['events_per_second']:,} events/s)" if data["events_per_second"] else ""
    lines.append(f"  events   {data['events']:>12,}  in {data['seconds']:.1f} s{rate}")
    missed, unreachable = _never(data)
    total = len(data["rules"]) + len(data["never_reached"])
    lines.append(f"  rules    {len(data['rules']):>12}  reached of {total}" +
                 (f"; not reached by this run: {', '.join(missed)}" if missed else "") +
                 (f"; not reachable by any event: {', '.join(unreachable)}" if unreachable else ""))
    for failure in data["failures"][:3]:
        lines.append("  " + failure["report"].replace("\n", "\n  "))
    for divergence in data["divergences"]:
        lines.append(f"  shrunk   seed {divergence['seed']} to {divergence['events']} events: {divergence['path']}\n"
                     f"           {divergence['replay']}")
    written = [f"{out}/{name}" for name in ("results", "traces") if (out / name).exists()]
    prom = f", {out}/metrics.prom" if (out / "metrics.prom").exists() else ""
    lines.append(f"  written  {', '.join(written)} (Parquet), {out}/summary.json{prom}")
    if (out / "divergences").exists():
        lines.append(f"           {out}/divergences: the failing traces as files (README.md lists them)")
    lines.append(f"  report   {out}/report.html")
    return "\n".join(lines)


def _never(data: dict) -> tuple[list[str], list[str]]:
    """The rules no trace reached: those this run missed, and those no event can reach."""
    from kraftspec.conformance.coverage import NOT_REACHABLE_BY_EVENTS

    never = data["never_reached"]
    return [r for r in never if r not in NOT_REACHABLE_BY_EVENTS], [r for r in never if r in NOT_REACHABLE_BY_EVENTS]


@functools.cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _rule_link(rule_id: str, out: Path, site_url: str | None = None) -> str:
    """A link to the rule's anchor on the specification's site at ``site_url``, or else to its
    heading in the installed spec file, relative to the report's folder; the rule's title is its
    tooltip."""
    import os
    import re
    from importlib.resources import files

    from kraftspec.spec import rules

    rule = rules().get(rule_id)
    if rule is None:
        return html.escape(rule_id)
    if site_url:
        from kraftspec.site import rule_url

        return (f'<a href="{html.escape(rule_url(rule.id, rule.file, site_url))}" '
                f'title="{html.escape(rule.id + " " + rule.title)}">{html.escape(rule.id)}</a>')
    spec_file = Path(str(files("kraftspec.spec") / rule.file))
    try:
        href = os.path.relpath(spec_file, out.resolve())
    except ValueError:  # another drive
        href = spec_file.as_uri()
    heading = re.search(rf"^### ({re.escape(rule.id)}\s.*?)\s*$", _text(spec_file), re.M)
    text = heading.group(1) if heading else rule.id
    anchor = re.sub(r"[^a-z0-9 _-]", "", text.lower()).replace(" ", "-")  # as GitHub and most viewers name headings
    return (f'<a href="{html.escape(href)}#{anchor}" title="{html.escape(rule.id + " " + rule.title)}">'
            f"{html.escape(rule.id)}</a>")


def report_html(data: dict, out: Path = Path("."), site_url: str | None = None) -> str:
    """A small self-contained HTML page: the figures per level, the divergences, and rule coverage
    (a bar per rule, each rule linked to its definition, on the site at ``site_url`` if given, and
    the rules no trace reached with why)."""
    from kraftspec.conformance.coverage import NOT_REACHABLE_BY_EVENTS
    from kraftspec.spec import title

    esc = html.escape
    rules = data["rules"]
    most = max((r["traces"] for r in rules.values()), default=1)
    rows = []
    for rule in list(rules) + list(data["never_reached"]):
        count = rules.get(rule, {}).get("traces", 0)
        if count:
            bar = f'<span class="bar" style="width:{max(0.5, 100 * count / most):.1f}%"></span>'
        else:
            bar = '<span class="bar none">not reached</span>'
        rows.append(f'<tr id="{esc(rule)}"><td>{_rule_link(rule, out, site_url)}</td><td class="title">{esc(title(rule))}</td>'
                    f'<td class="num">{count:,}</td><td class="barcell">{bar}</td></tr>')
    missed, unreachable = _never(data)
    never = "".join(
        f"<li>{_rule_link(r, out, site_url)} {esc(title(r))}: "
        f"{esc('not reachable by any event: ' + NOT_REACHABLE_BY_EVENTS[r]) if r in NOT_REACHABLE_BY_EVENTS else 'not reached by this run (more traces, more steps or other seeds may reach it)'}</li>"
        for r in missed + unreachable)
    levels = "".join(f"<tr><td>{esc(level)}</td><td class=num>{c['passed']:,}</td><td class=num>{c['failed']:,}</td>"
                     f"<td class=num>{c.get('not_reached', 0):,}</td></tr>" for level, c in data["per_level"].items())
    failures = "".join(
        f"<tr><td>{f['seed']}</td><td>{f['step']}</td><td>{esc(f['part'] or '')}</td><td><details><summary>"
        f"{esc((f['report'] or '').partition(chr(10))[0])}</summary><pre>{esc(f['report'] or '')}</pre></details></td></tr>"
        for f in data["failures"]) or '<tr><td colspan="4">none: every trace passed</td></tr>'
    shrunk = "".join(f"<li>seed {d['seed']}: {d['events']} events, <code>{esc(d['replay'])}</code></li>"
                     for d in data["divergences"])
    w = data["workload"]
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>kraftspec conform</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:72em}} td,th{{padding:2px 8px;text-align:left;vertical-align:top}}
.num{{text-align:right}} pre,code{{font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}} pre{{margin:0;max-width:60em}}
.rules td{{padding:1px 6px;font-size:13px}} .rules .title{{color:#555}} .barcell{{width:30em}}
.bar{{display:inline-block;height:11px;background:#3b7dd8}} .bar.none{{width:100%;height:auto;background:#f6d5d5;color:#a01818;font-size:11px;padding:0 4px;box-sizing:border-box}}
summary{{cursor:pointer;font-size:13px}} a{{color:#1a4f9c;text-decoration:none}} a:hover{{text-decoration:underline}}</style></head><body>
<h1>kraftspec conform</h1>
<p>{data['traces']:,} traces of {w['steps']} events (seeds {w['first_seed']}..{w['first_seed'] + w['traces'] - 1}),
profile {esc(w.get('profile', 'kip-631'))}, adapter <code>{esc(w['adapter'])}</code>, level {esc(w['level'])}, spec {esc(data['spec_version'])}:
<b>{data['passed']:,} passed, {data['failed']:,} failed</b>; {data['events']:,} events in {data['seconds']} s.</p>
<table><tr><th>level</th><th>passed</th><th>failed</th><th>not reached</th></tr>{levels}</table>
<p>A trace is compared level by level; the levels after the first one it fails at are not reached.</p>
<h2>Divergences</h2>
<p>The first failing traces (click one for its report: the reply or part that differs, the rules that decided it, the
command that replays it).</p>
<table><tr><th>seed</th><th>step</th><th>part</th><th>report</th></tr>{failures}</table>
{f"<h3>Shrunk</h3><ul>{shrunk}</ul>" if shrunk else ""}
<h2>Rule coverage</h2>
<p>{len(rules)} of {len(rules) + len(data['never_reached'])} rules reached: the traces in which each rule fired, and
in red the rules no trace reached. Each rule links to its definition in the specification{" (its page on the specification's site)" if site_url else ""}.</p>
{f"<h3>Rules not reached</h3><ul>{never}</ul>" if never else ""}
<table class="rules"><tr><th>rule</th><th></th><th>traces</th><th></th></tr>{"".join(rows)}</table>
</body></html>
"""


def _exhaustive(spark, args, out: Path) -> int:
    from kraftspec.conformance.exhaustive import Scope
    from kraftspec.conformance.spark_exhaustive import explore
    from kraftspec.model import Config

    scope = Scope(brokers=args.brokers or 3, partitions=args.partitions or 2, config=Config.for_profile(args.profile))
    print(f"kraftspec conform --exhaustive: {scope.brokers} brokers, {scope.partitions} partitions, depth {args.depth}, "
          f"profile {args.profile}, adapter {args.adapter}, level {args.level}, master {spark.sparkContext.master}",
          flush=True)

    def show(level) -> None:
        print(f"  depth {level.depth}: {level.states:,} new states, {level.transitions:,} events, {level.seconds:.1f} s",
              file=sys.stderr, flush=True)

    adapter = None if args.adapter == "none" else args.adapter  # none: enumerate and check invariants only
    report = explore(spark, scope, args.depth, adapter, args.level, progress=show)
    out.mkdir(parents=True)
    data = report.to_json()
    (out / "summary.json").write_text(json.dumps(data, indent=2) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps({k: v for k, v in data.items() if not isinstance(v, (list, dict))}, indent=1))
    return 0 if not data.get("violations") and not data.get("failures") else 1
