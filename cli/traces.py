"""The conformance commands: ``kraftspec generate``, ``replay``, ``shrink``, ``coverage``, ``mutate``."""

from __future__ import annotations

import argparse
import json
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from kraftspec.cli import add_profile_option
from kraftspec.conformance.trace import LEVELS, Trace, TraceError, profile_of, read, read_all


class Progress:
    """A progress bar on standard error, drawn only when it is a terminal (CI logs stay clean)."""

    def __init__(self, total: int, label: str, stream=None) -> None:
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty() and total > 1
        self.started = time.perf_counter()

    def advance(self, note: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        width = 30
        filled = int(width * self.done / self.total)
        elapsed = time.perf_counter() - self.started
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                          f"{elapsed:.0f}s {note[:40]:<40}")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def junit(suite: str, cases: list[tuple[str, str, float, str | None]]) -> str:
    """JUnit XML: one testcase per (classname, name, seconds, failure report or None); a report
    that starts ``SKIPPED: `` (a trace the system under test declared it does not support) is a skip."""
    root = ET.Element("testsuites")
    skipped = sum(1 for *_, failure in cases if failure and failure.startswith("SKIPPED: "))
    failures = sum(1 for *_, failure in cases if failure) - skipped
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)), failures=str(failures),
                         skipped=str(skipped), time=f"{sum(seconds for _, _, seconds, _ in cases):.3f}")
    for classname, name, seconds, failure in cases:
        case = ET.SubElement(node, "testcase", classname=classname, name=name, time=f"{seconds:.3f}")
        if failure and failure.startswith("SKIPPED: "):  # not supported by the system under test
            failure = failure.removeprefix("SKIPPED: ")
            ET.SubElement(case, "skipped", message=failure.splitlines()[0][:200]).text = failure
        elif failure:
            ET.SubElement(case, "failure", message=failure.splitlines()[0][:200]).text = failure
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _seeds(text: str) -> range:
    """``7`` or ``100:200`` (the second bound excluded)."""
    try:
        if ":" in text:
            low, high = text.split(":", 1)
            seeds = range(int(low), int(high))
        else:
            seeds = range(int(text), int(text) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds must be N or FIRST:END, got {text!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError(f"--seeds {text!r} is empty")
    return seeds


def _faults(text: str) -> list[str]:
    from kraftspec.conformance.generate import FAULTS

    faults = [f for f in text.split(",") if f]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"--faults: unknown fault {unknown[0]!r}; known: {', '.join(FAULTS)}")
    return faults


def _positive(name: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{name} must be at least 1, got {value}")
        return value

    return parse


def add_parsers(commands) -> None:
    generate = commands.add_parser(
        "generate", help="record traces from the model",
        description="Record conformance traces from the model (spec/traces.md), one file per seed, named by "
        "the hash of their content. 'walk' is a random walk of a simulated cluster with faults, each seed "
        "drawing its own cluster size and fault mix (swarm); 'targeted' searches for traces that fire every "
        "rule of the spec; 'exhaustive' enumerates every sequence of a small scope (3 brokers, 2 partitions, from a warm start) "
        "up to --depth events, one trace per leaf of the search tree, and checks every invariant on the way.",
    )
    generate.add_argument("--generator", choices=["walk", "targeted", "exhaustive"], default="walk",
                          help="how to make the traces (default walk)")
    generate.add_argument("--seeds", type=_seeds, default=range(0, 1), metavar="N|FIRST:END",
                          help="one seed or a range, the end excluded (walk; default 0)")
    generate.add_argument("--steps", type=_positive("--steps"), default=50, help="events per trace (walk; default 50)")
    generate.add_argument("--brokers", type=_positive("--brokers"), help="brokers (walk: default drawn from the seed; exhaustive: 1 to 3, default 3)")
    generate.add_argument("--partitions", type=_positive("--partitions"), help="partitions (walk: default drawn from the seed; exhaustive: 1 to 2, default 2)")
    generate.add_argument("--faults", type=_faults, help="comma-separated faults (walk; default: drawn from the seed)")
    generate.add_argument("--depth", type=_positive("--depth"), default=2,
                          help="events after the warm start (exhaustive; default 2: about 500 traces; 3 gives about 12,600)")
    generate.add_argument("--out", required=True, help="directory to write the traces to (created if missing)")
    generate.add_argument("--spec", metavar="VERSION", help="refuse to run unless this kraftspec implements spec "
                          "VERSION (so that a printed command regenerates exactly the same trace)")
    add_profile_option(generate, "the behaviour profile to record the traces under, with its default timings "
                       "(named in each trace's header)")

    replay = commands.add_parser(
        "replay", help="replay traces against an implementation",
        description="Replay traces against a system under test and stop each at its first divergence, "
        "reporting the step, the event, expected against actual, the rules involved and a command that "
        "reproduces it. Every trace is read and checked before any is replayed (each request, reply and record "
        "against its schema; sequence numbers, the clock and offsets across lines); the first problem is "
        "reported as FILE:LINE: FIELD: PROBLEM. Exit status 1 if any trace fails, 2 for bad input.",
    )
    replay.add_argument("traces", nargs="+", help="trace files, or directories of *.jsonl")
    replay.add_argument("--adapter", default="impl", help="impl (default), model, kafka or kafka:VERSION (Apache Kafka's controller, built with Maven on first use), or subprocess:COMMAND (spec/protocol.md)")
    replay.add_argument("--level", choices=LEVELS, default="records", help="what to compare (default records; spec/traces.md)")
    replay.add_argument("--junit", metavar="PATH", help="also write the results as JUnit XML")
    replay.add_argument("--quiet", action="store_true", help="print only failures and the summary")
    _add_profile_filter(replay, "replay")

    shrink = commands.add_parser(
        "shrink", help="reduce a failing trace to a minimal one",
        description="Reduce a trace on which the system under test diverges to a shortest trace that still "
        "diverges the same way (re-recorded from the model, so it stays valid). The shrunk trace is written to "
        f"the folder {SHRUNK_DIR}/ in the current directory, or to --out DIR; with --corpus DIR it is added "
        "to that regression corpus instead, whose README.md index is rewritten. Progress goes to standard error.",
    )
    shrink.add_argument("trace", help="the failing trace")
    shrink.add_argument("--adapter", default="impl", help="the system under test: impl (default), model, kafka or kafka:VERSION, or subprocess:COMMAND")
    shrink.add_argument("--level", choices=LEVELS, default="records", help="the level at which it diverges (default records)")
    where = shrink.add_mutually_exclusive_group()
    where.add_argument("--out", metavar="DIR", default=SHRUNK_DIR,
                       help=f"the folder to write the shrunk trace to, created if missing (default ./{SHRUNK_DIR})")
    where.add_argument("--corpus", metavar="DIR",
                       help="add the shrunk trace to this regression corpus and rewrite its README.md index "
                       "(for example conformance/corpus in a kraftspec checkout)")
    shrink.add_argument("--description", default="", help="a one-line description, kept in the trace's header")
    _add_profile_filter(shrink, "shrink")

    coverage = commands.add_parser(
        "coverage", help="which rules a set of traces exercises",
        description="Count, for every rule the controller can fire, how many steps and traces of the given "
        "traces fired it, and list the rules never reached. The traces are read and checked as replay checks "
        "them; a malformed one is reported as FILE:LINE: FIELD: PROBLEM, with exit status 2.",
    )
    coverage.add_argument("traces", nargs="+", help="trace files, or directories of *.jsonl")
    coverage.add_argument("--json", metavar="PATH", help="also write the report as JSON")

    mutate = commands.add_parser(
        "mutate", help="check that the corpus and the stateful tests catch deliberate bugs in impl",
        description="Apply, one at a time, deliberate single-rule breakages to impl and report which the "
        "regression corpus and the stateful tests catch, with the kill rate. Exit status 1 if any mutant survives "
        "both. Takes several minutes: each mutant runs the stateful tests in a fresh pytest process.",
    )
    mutate.add_argument("--corpus", default="conformance/corpus", help="the traces to replay against each mutant (default conformance/corpus)")
    mutate.add_argument("--no-stateful", action="store_true", help="replay the corpus only (faster)")
    mutate.add_argument("--junit", metavar="PATH", help="also write one test case per mutant as JUnit XML (a survivor is a failure)")
    mutate.add_argument("--json", metavar="PATH", help="also write the results and kill rates as JSON")
    sweep = mutate.add_argument_group(
        "the sweep", "--sweep generates every small breakage (a comparison, a constant, a condition, a deleted "
        "statement, ...) of impl and of the model's handlers and runs the corpus and a fixed, repeatable stateful run "
        "against each, on several processes. Results are kept as they come, so a stopped sweep continues where it "
        "left off when run again. Mutants judged equivalent are listed, with reasons, in "
        "conformance/mutation_equivalents.toml. Exit status 1 when the kill rate is below --fail-under.")
    sweep.add_argument("--sweep", action="store_true", help="run the systematic sweep instead of the hand-written mutants")
    sweep.add_argument("--only", action="append", metavar="FILE",
                       help="sweep only this file, relative to the repository, e.g. impl/replication.py (repeatable)")
    sweep.add_argument("--budget-minutes", type=float, metavar="N",
                       help="stop starting new mutants after N minutes; run again to continue")
    sweep.add_argument("--jobs", type=_positive("--jobs"), default=2, metavar="N", help="worker processes (default 2)")
    sweep.add_argument("--examples", type=_positive("--examples"), default=None, metavar="N",
                       help="stateful sequences per mutant (default 50)")
    sweep.add_argument("--results", metavar="PATH",
                       help="where results are kept between runs (default ~/.cache/kraftspec/mutation-sweep.jsonl)")
    sweep.add_argument("--fresh", action="store_true", help="forget earlier results and test every mutant again")
    sweep.add_argument("--fail-under", type=float, default=95.0, metavar="PERCENT",
                       help="exit status 1 when fewer than this percentage of the non-equivalent mutants are killed (default 95)")


def _add_profile_filter(parser, command: str) -> None:
    """``--profile`` on commands that read traces: each trace runs under its own header's profile;
    the option only insists on one."""
    from kraftspec.spec.profiles import profile, profile_names

    listed = " or ".join(f"{name} ({profile(name).title})" for name in profile_names())
    parser.add_argument("--profile", choices=profile_names(), default=None, metavar="NAME",
                        help=f"{command} only traces of this behaviour profile, {listed}: a trace of another "
                        "profile is refused before anything is replayed, naming its file (exit status 2); without "
                        "the option each trace runs under the profile its header names (kip-631 when it names "
                        "none); see spec/profiles.md")


def _check_profile(path, trace: Trace, wanted: str | None) -> None:
    """A TraceError when ``wanted`` is given and the trace is of another profile."""
    if wanted is not None and profile_of(trace.header.config) != wanted:
        raise TraceError(str(path), 1, "config.profile", f"the trace is of profile {profile_of(trace.header.config)}, "
                         f"not {wanted} (--profile {wanted})")


def _fail(message: str) -> int:
    sys.stderr.write(f"kraftspec: error: {message}\n")
    return 2


def _adapter(spec: str):
    from kraftspec.conformance.subprocess_adapter import adapter_from_spec

    return adapter_from_spec(spec)


def run_generate(args) -> int:
    from kraftspec.conformance.generate import walk
    from kraftspec.model import Config
    from kraftspec.spec import SPEC_VERSION

    if args.spec is not None and args.spec != SPEC_VERSION:
        return _fail(f"--spec {args.spec}: this kraftspec implements spec {SPEC_VERSION}; install the kraftspec "
                     f"release of spec {args.spec} to regenerate those traces exactly")
    out = Path(args.out)
    config = Config.for_profile(args.profile)  # the profile's default timings (DEC-12)
    if args.generator == "exhaustive":
        return run_exhaustive(args, out, config)
    if (problem := _made(out)) is not None:
        return problem
    if args.generator == "walk":
        progress = Progress(len(args.seeds), "generating")
        for seed in args.seeds:
            trace = walk(seed, args.steps, args.brokers, args.partitions, args.faults, config)
            path = trace.write(out)
            progress.advance(path.name)
            print(f"{path}  seed {seed}, {len(trace.steps)} steps, {len(trace.rules())} rules")
        progress.finish()
        return 0
    from kraftspec.conformance.targeted import targeted

    result = targeted(config=config)
    for target in result.targets:
        path = target.trace.write(out)
        print(f"{path}  {target.rule}, {len(target.trace.steps)} steps")
    for rule, why in sorted(result.unreached.items()):
        print(f"no trace for {rule}: {why}")
    print(f"{len(result.targets)} traces written to {out}")
    return 0


def _made(out: Path) -> int | None:
    """Make the output folder ``out`` once the arguments are known to be good (a refused command
    leaves nothing behind); None, or the exit status of the error that names it."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as problem:
        return _fail(f"--out {out}: cannot make the folder ({problem.strerror or problem})")
    return None


def run_exhaustive(args, out: Path, config) -> int:
    from kraftspec.conformance.exhaustive import Scope, frontier, leaf_paths, trace_of

    try:
        scope = Scope(brokers=args.brokers or 3, partitions=args.partitions or 2, config=config)
    except ValueError as problem:
        return _fail(f"--{problem}")
    if (made := _made(out)) is not None:
        return made
    print(f"enumerating {scope.params()} to depth {args.depth}, profile {config.profile}")
    exploration = frontier(scope, args.depth, progress=lambda level: print(
        f"  depth {level.depth}: {level.states:,} new states, {level.transitions:,} events, {level.seconds:.1f} s"))
    for path, broken in exploration.violations[:5]:
        print(f"invariant broken after path {list(path)}: {', '.join(broken)}", file=sys.stderr)
    leaves = leaf_paths(exploration)
    progress = Progress(len(leaves), "writing")
    for path in leaves:
        written = trace_of(scope, path).write(out)
        progress.advance(written.name)
    progress.finish()
    print(f"{exploration.states:,} states; {len(leaves):,} traces (one per leaf of the search tree) written to {out}")
    return 1 if exploration.violations else 0


def read_traces(paths: list[str]) -> list[tuple[Path, Trace]]:
    """Every trace the command line names (files, and directories of ``*.jsonl``), each read and
    checked (spec/traces.md); a TraceError names the file, line and field of the first problem.
    Both replay and coverage read through here, so they refuse the same input."""
    traces = list(read_all(paths))
    if not traces:
        raise TraceError(" ".join(paths), 0, "(file)", "no traces found (no *.jsonl file)")
    return traces


def run_replay(args) -> int:
    from kraftspec.conformance.adapters import AdapterFailure

    try:
        adapter = _adapter(args.adapter)  # one for every trace: a server process is started once
    except ValueError as problem:
        return _fail(str(problem))
    try:  # read and check every trace before replaying any (nothing half-way)
        traces = read_traces(args.traces)
        for path, trace in traces:
            _check_profile(path, trace, args.profile)
    except TraceError as problem:
        return _fail(str(problem))
    from kraftspec.conformance.replay import replay

    progress = Progress(len(traces), "replaying")
    cases, failed, unsupported, events = [], 0, 0, 0
    started = time.perf_counter()
    try:
        for path, trace in traces:
            try:
                verdict = replay(trace, adapter, args.level, path)
            except TraceError as problem:  # raised at a step: names its line
                return _fail(str(problem))
            except (ValueError, AdapterFailure) as problem:
                return _fail(f"{path}: {problem}")
            events += verdict.steps
            report = None if verdict.passed else verdict.report(args.adapter)
            if verdict.not_supported is not None:
                unsupported += 1
                print(report)
                report = f"SKIPPED: {report}"  # JUnit: a skip, not a failure
            elif report:
                failed += 1
                print(report)
            elif not args.quiet:
                print(verdict.report())
            cases.append((f"kraftspec.{adapter.name}.{args.level}", path.name, verdict.seconds, report))
            progress.advance(path.name)
    finally:
        getattr(adapter, "shutdown", adapter.close)()
        progress.finish()
    seconds = time.perf_counter() - started
    not_supported = f", {unsupported} not supported" if unsupported else ""
    print(f"{len(traces) - failed - unsupported} of {len(traces)} traces passed{not_supported} ({events} events, "
          f"{seconds:.1f} s, adapter {args.adapter}, level {args.level})")
    if args.junit:
        Path(args.junit).write_text(junit("kraftspec replay", cases), encoding="utf-8")
    return 1 if failed or unsupported else 0


SHRUNK_DIR = "kraftspec-shrunk"


class ShrinkMeter:
    """How a shrink goes, on standard error: the events of the smallest failing trace so far and the
    candidates replayed; redrawn in place on a terminal. Elsewhere (a log, a pipe) a line as it goes:
    at the first candidate, whenever the smallest failing trace has lost a quarter of the events last
    shown, and at least every ``every`` seconds; so a log shows a shrink move even when it takes a
    few seconds, in a few lines even for a long trace."""

    def __init__(self, label: str, stream=None, every: float = 10.0) -> None:
        self.label, self.every = label, every
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = self.shown = time.perf_counter()
        self.shown_events: int | None = None  # the events in the last line written (not on a terminal)
        self.state = "starting"

    def text(self, now: str = " so far") -> str:
        return f"{self.label}: {self.state.format(now=now)}, {time.perf_counter() - self.started:.0f} s"

    def __call__(self, spent: int, budget: int, events: int) -> None:
        self.state = f"{events} events{{now}}, {spent} candidates replayed (at most {budget})"
        if self.tty:
            self.stream.write(f"\r{self.text()}   ")
            self.stream.flush()
        elif (self.shown_events is None or events <= self.shown_events * 3 // 4
              or time.perf_counter() - self.shown >= self.every):
            self.shown, self.shown_events = time.perf_counter(), events
            print(self.text(), file=self.stream, flush=True)

    def done(self) -> None:
        """The outcome, on its own line."""
        self.stream.write(("\r" if self.tty else "") + self.text(now="") + "\n")
        self.stream.flush()


def run_shrink(args) -> int:
    from kraftspec.conformance.adapters import AdapterFailure
    from kraftspec.conformance.replay import replay
    from kraftspec.conformance.shrink import failing_against, shrink, write_to_corpus

    try:
        trace = read(args.trace)
        _check_profile(args.trace, trace, args.profile)
        adapter = _adapter(args.adapter)  # one for every candidate: a server process is started once
    except (TraceError, ValueError) as problem:
        return _fail(str(problem))
    try:
        verdict = replay(trace, adapter, args.level, args.trace)
        if verdict.passed:
            return _fail(f"{args.trace} passes against {args.adapter} at level {args.level}: nothing to shrink")
        divergence = verdict.divergence
        if divergence is None:  # the adapter declared it cannot replay this trace (its level or profile)
            return _fail(f"{args.trace}: {args.adapter} does not support {verdict.not_supported}: nothing to shrink")
        print(f"{args.trace}: diverges at step {divergence.step} ({divergence.part}); shrinking "
              f"{len(trace.steps)} events", file=sys.stderr, flush=True)
        meter = ShrinkMeter("shrinking")
        try:
            smaller = shrink(trace, failing_against(lambda: adapter, args.level), progress=meter)
        finally:
            meter.done()
        description = args.description or f"shrunk from {Path(args.trace).name}: {divergence.part} differ at step {divergence.step}"
        if args.corpus:
            path = write_to_corpus(smaller, description, args.corpus)
        else:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            path = smaller.with_description(description).write(Path(args.out))
        print(f"{len(trace.steps)} steps -> {len(smaller.steps)} steps: {path}")
        print(replay(smaller, adapter, args.level, path).report(args.adapter))
    except (ValueError, AdapterFailure) as problem:
        return _fail(f"{args.trace}: {problem}")
    finally:
        getattr(adapter, "shutdown", adapter.close)()
    return 0


def run_coverage(args) -> int:
    from kraftspec.conformance.coverage import coverage

    try:  # the reader and the checks of replay
        traces = [trace for _, trace in read_traces(args.traces)]
    except TraceError as problem:
        return _fail(str(problem))
    report = coverage(traces)
    print(report.table())
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2), encoding="utf-8")
    return 0


def run_mutate(args) -> int:
    from kraftspec import compiled

    if compiled.active() is not None:  # a mutant is made from a function's source and put in its module
        return _fail("the mutation checks change the plain modules' functions: run them without "
                     f"{compiled.ENABLE}=1")
    if args.sweep:
        return run_sweep(args)
    given = [option for option, value in (("--only", args.only), ("--budget-minutes", args.budget_minutes),
                                          ("--examples", args.examples), ("--results", args.results),
                                          ("--fresh", args.fresh)) if value]
    if given:
        return _fail(f"{given[0]} belongs to the sweep: add --sweep")
    from kraftspec.conformance.mutation import run

    report = run(corpus=args.corpus, stateful=not args.no_stateful)
    print(report.table())
    if args.junit:
        Path(args.junit).write_text(report.junit(), encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2), encoding="utf-8")
    return 1 if report.survivors else 0


def run_sweep(args) -> int:
    from kraftspec.conformance import mutation_sweep as ms

    if args.no_stateful:
        return _fail("--no-stateful: the sweep always runs both checks (lower --examples to make it faster)")
    paths = args.only or list(ms.TARGETS)
    for path in paths:
        problem = ms.sweepable(path)
        if problem:
            return _fail(f"--only {path}: {problem}")
    if args.budget_minutes is not None and args.budget_minutes <= 0:
        return _fail(f"--budget-minutes must be positive, got {args.budget_minutes:g}")
    if not 0 <= args.fail_under <= 100:
        return _fail(f"--fail-under must be a percentage from 0 to 100, got {args.fail_under:g}")
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        return _fail(f"--corpus {args.corpus}: not a directory")
    try:
        ms.read_equivalents()
    except ValueError as problem:
        return _fail(str(problem))
    report = ms.sweep(
        paths, corpus=corpus, examples=args.examples or ms.DEFAULT_EXAMPLES, jobs=args.jobs,
        budget_s=None if args.budget_minutes is None else 60 * args.budget_minutes,
        results_path=args.results or ms.DEFAULT_RESULTS, fresh=args.fresh,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
        command="kraftspec " + " ".join(sys.argv[1:]),
    )
    print(report.table())
    if args.junit:
        Path(args.junit).write_text(report.junit(), encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=1) + "\n", encoding="utf-8")
    rate = report.counts()["kill_rate"]
    return 1 if rate is not None and 100 * rate < args.fail_under else 0


COMMANDS = {
    "generate": run_generate,
    "replay": run_replay,
    "shrink": run_shrink,
    "coverage": run_coverage,
    "mutate": run_mutate,
}
