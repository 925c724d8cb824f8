"""Rule coverage of a set of traces: which rules of spec/ their steps make the model fire.

The *runtime rules* are those the model's controller can name while it handles an event: the ids
in ``cite("...")`` and ``reject("...")`` calls in ``model/*.py``, leaving out the modules that are
not the controller (``broker.py``, the broker's own state machine; ``framing.py``, record
encoding; ``tools.py``, the operator tools' formats; ``log_check.py``, the check of a log on disk; ``membership.py``; ``invariants.py``; ``metrics.py``, the
metrics computed from the controller's state). The
source is read, not imported, and a local helper that passes its argument on to ``reject`` (the
``refuse("ISR-3", ...)`` of alter_isr.py) counts as a citing call too.

A trace reaches a rule when one of its steps fires it (the step's ``rules``), or when the model
fires it while starting the controller from the trace's configuration (LOG-14: the finalized
features are the log's first batch); the latter count for the trace, not for any step.

Every other id of the specification is checked only by tests: decisions (DEC), invariants (INV,
checked after every step by model/invariants.py), the operator tools (TOOL), configuration
(CONF), the broker's side (MEM-1 to MEM-5), record framing (LOG-1 to LOG-3), and structural
rules that the message classes, schemas and configuration enforce by construction.

Two runtime rules can never be reached by an event, only by calling the model's replay directly:
they are listed in :data:`NOT_REACHABLE_BY_EVENTS` with the reason, and a report shows them
apart from the rules a corpus has merely missed.

Run ``python -m kraftspec.conformance.coverage <trace files or directories>`` for the table.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from attrs import frozen

import kraftspec.model
from kraftspec.model import initial_state
from kraftspec.model.rules import collecting
from kraftspec.spec import rules, title

from .adapters import model_config
from .trace import Trace, TraceError, read_all

NOT_CONTROLLER_MODULES = ("broker.py", "framing.py", "tools.py", "log_check.py", "membership.py", "invariants.py", "metrics.py")
CITING = ("cite", "reject")

NOT_REACHABLE_BY_EVENTS = {
    "LOG-13": "replay of a record that does not apply: the controller never writes such a record "
              "(the rule makes replay total); only a direct call of model.replay reaches it",
    "LOG-16": "replay of a record outside the broker lifecycle: the controller never writes one; "
              "only a direct call of model.replay reaches it",
}
"""Runtime rules that no sequence of events can make the model fire, and why."""

TEST_ONLY_KINDS = {
    "broker.py": "the broker's own state machine (model/broker.py)",
    "framing.py": "record framing (model/framing.py)",
    "tools.py": "the operator tools (model/tools.py)",
    "log_check.py": "the check of a metadata log on disk (model/log_check.py)",
    "membership.py": "membership (model/membership.py)",
    "invariants.py": "an invariant, checked after every step (model/invariants.py)",
    "metrics.py": "a metric, computed from the controller's state (model/metrics.py)",
}
TEST_ONLY_PREFIXES = {
    "DEC": "a decision, cited beside the rules it shapes",
    "INV": "an invariant, checked after every step (model/invariants.py)",
    "TOOL": "the operator tools (model/tools.py)",
    "CONF": "configuration",
    "METRIC": "a metric, computed from the controller's state (model/metrics.py)",
}
STRUCTURAL = "structural: the message classes, schemas or configuration enforce it"


def rule_key(rule_id: str) -> tuple[str, int]:
    """Order ids by area, then number: LEASE-2 before LEASE-10."""
    area, _, number = rule_id.rpartition("-")
    return area, int(number) if number.isdigit() else 0


def model_dir() -> Path:
    return Path(kraftspec.model.__file__).parent


def cited_in(source: str) -> set[str]:
    """The rule ids a module's source names in citing calls: ``cite("X")``, ``reject("X")``, and
    calls of any local function that passes one of its parameters on to a citing call."""
    return {rule_id for rule_id, _ in citation_sites(source)}


def citation_sites(source: str) -> list[tuple[str, int]]:
    """The citing calls of a module's source (see :func:`cited_in`) as (rule id, line), in the
    order of the source."""
    tree = ast.parse(source)
    citing: dict[str, int] = {name: 0 for name in CITING}  # function name -> position of the rule id
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    grew = True
    while grew:
        grew = False
        for function in functions:
            if function.name in citing:
                continue
            parameters = [a.arg for a in function.args.args]
            for call in _calls(function):
                position = _cited_at(citing, call)
                if position is not None and len(call.args) > position:
                    argument = call.args[position]
                    if isinstance(argument, ast.Name) and argument.id in parameters:
                        citing[function.name] = parameters.index(argument.id)
                        grew = True
                        break
    found = []
    for call in _calls(tree):
        position = _cited_at(citing, call)
        if position is not None and len(call.args) > position:
            argument = call.args[position]
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                found.append((argument.value, call.lineno))
    return sorted(found, key=lambda site: site[1])


def _calls(node) -> Iterable[ast.Call]:
    return (n for n in ast.walk(node) if isinstance(n, ast.Call))


def _cited_at(citing: dict[str, int], call: ast.Call) -> int | None:
    """The position of the rule id among the arguments of ``call``, if it calls a function of ``citing``."""
    name = _called(call)
    return None if name is None else citing.get(name)


def _called(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def runtime_rules() -> tuple[str, ...]:
    """The rule ids the model's controller can fire while handling events (see the module's
    docstring), ordered by area and number."""
    found: set[str] = set()
    for path in sorted(model_dir().glob("*.py")):
        if path.name not in NOT_CONTROLLER_MODULES:
            found |= cited_in(path.read_text(encoding="utf-8"))
    return tuple(sorted(found, key=rule_key))


def checked_by_tests_only() -> dict[str, str]:
    """Every other id of the specification, with what checks it."""
    runtime = set(runtime_rules())
    elsewhere: dict[str, str] = {}
    for name in NOT_CONTROLLER_MODULES:
        path = model_dir() / name
        if path.exists():
            for rule_id in cited_in(path.read_text(encoding="utf-8")):
                elsewhere.setdefault(rule_id, TEST_ONLY_KINDS[name])
    checked = {}
    for rule_id in sorted(set(rules()) - runtime, key=rule_key):
        area = rule_id.rpartition("-")[0]
        checked[rule_id] = elsewhere.get(rule_id) or TEST_ONLY_PREFIXES.get(area, STRUCTURAL)
    return checked


def start_rules(config: dict[str, Any]) -> tuple[str, ...]:
    """The rules the model fires when a controller starts from a trace's configuration."""
    with collecting() as log:
        initial_state(model_config(config))
    return tuple(log.fired)


# ---- the report --------------------------------------------------------------------------------


@frozen
class CoverageReport:
    """How often each rule fired over a set of traces.

    ``steps[r]``: the steps that fired ``r``; ``traces[r]``: the traces that reached ``r`` (a step
    fired it, or starting the controller did). ``target``: the runtime rules; ``fired_elsewhere``:
    ids the traces fired that are not runtime rules (there should be none).
    """

    target: tuple[str, ...]
    steps: dict[str, int]
    traces: dict[str, int]
    trace_count: int
    step_count: int
    at_start: tuple[str, ...] = ()

    @property
    def never_reached(self) -> tuple[str, ...]:
        """Runtime rules no trace reached, those of NOT_REACHABLE_BY_EVENTS included."""
        return tuple(r for r in self.target if not self.traces.get(r))

    @property
    def missed(self) -> tuple[str, ...]:
        """Runtime rules no trace reached although some sequence of events would."""
        return tuple(r for r in self.never_reached if r not in NOT_REACHABLE_BY_EVENTS)

    @property
    def fired_elsewhere(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.traces) - set(self.target), key=rule_key))

    def to_json(self) -> dict[str, Any]:
        return {
            "traces": self.trace_count,
            "steps": self.step_count,
            "rules": [
                {"rule": r, "title": title(r), "steps": self.steps.get(r, 0), "traces": self.traces.get(r, 0),
                 "at_start": r in self.at_start}
                for r in self.target
            ],
            "never_reached": list(self.never_reached),
            "not_reachable_by_events": {r: NOT_REACHABLE_BY_EVENTS[r] for r in self.never_reached if r in NOT_REACHABLE_BY_EVENTS},
            "missed": list(self.missed),
            "fired_elsewhere": list(self.fired_elsewhere),
            "test_only": checked_by_tests_only(),
        }

    def table(self, test_only: bool = True) -> str:
        """A readable table: rule, title, steps, traces; then the rules never reached, and the
        spec ids checked only by tests."""
        width = max(len(r) for r in self.target) if self.target else 4
        lines = [f"{'rule':<{width}}  {'steps':>6}  {'traces':>6}  title", f"{'-' * width}  {'-' * 6}  {'-' * 6}  -----"]
        for r in self.target:
            steps = self.steps.get(r, 0)
            note = " (at start)" if r in self.at_start and not steps else ""
            lines.append(f"{r:<{width}}  {steps:>6}  {self.traces.get(r, 0):>6}  {title(r)}{note}")
        reached = len(self.target) - len(self.never_reached)
        lines.append("")
        lines.append(f"{self.trace_count} traces, {self.step_count} steps: {reached} of {len(self.target)} runtime rules reached")
        for r in self.never_reached:
            why = NOT_REACHABLE_BY_EVENTS.get(r, "missed: no trace fires it")
            lines.append(f"  never reached: {r} {title(r)}: {why}")
        for r in self.fired_elsewhere:
            lines.append(f"  fired, but not a runtime rule: {r} {title(r)}")
        if test_only:
            checked = checked_by_tests_only()
            lines.append("")
            lines.append(f"{len(checked)} spec ids are checked only by tests:")
            by_kind: dict[str, list[str]] = {}
            for r, kind in checked.items():
                by_kind.setdefault(kind, []).append(r)
            for kind, ids in by_kind.items():
                lines.append(f"  {kind}: {' '.join(ids)}")
        return "\n".join(lines)


def coverage(traces: Iterable[Trace], target: Iterable[str] | None = None) -> CoverageReport:
    """Count, for every rule, the steps and traces of ``traces`` that fired it."""
    target = tuple(runtime_rules() if target is None else target)
    steps: dict[str, int] = {}
    reached: dict[str, int] = {}
    at_start: set[str] = set()
    trace_count = step_count = 0
    starts: dict[str, tuple[str, ...]] = {}
    for trace in traces:
        trace_count += 1
        step_count += len(trace.steps)
        key = json.dumps(trace.header.config, sort_keys=True)
        if key not in starts:
            starts[key] = start_rules(trace.header.config)
        in_trace = set(starts[key])
        at_start |= in_trace
        for s in trace.steps:
            for r in s.rules:
                steps[r] = steps.get(r, 0) + 1
            in_trace.update(s.rules)
        for r in in_trace:
            reached[r] = reached.get(r, 0) + 1
    return CoverageReport(target, steps, reached, trace_count, step_count, tuple(sorted(at_start, key=rule_key)))


# ---- the corpus index --------------------------------------------------------------------------

INDEX_HEADER = """# The regression corpus

Named traces (spec/traces.md) that CI replays against impl at level `records` and against the
model (tests/test_corpus.py). Each file is called after its content hash and carries a one-line
description in its header. Together they reach every runtime rule of the model that an event can
reach (`python -m kraftspec.conformance.coverage conformance/corpus` prints the table).

Rebuild it after a change to the specification or the model, deterministically, with
`python -m kraftspec.conformance.targeted conformance/corpus`; add a trace by hand with
`kraftspec.conformance.shrink.write_to_corpus(trace, description, "conformance/corpus")`, which
also rewrites this index.
"""


def write_index(corpus_dir: str | Path) -> Path:
    """Write ``README.md`` in a corpus directory: every trace's name, steps, description and the
    rules it reaches, and the runtime rules the corpus does not reach."""
    corpus_dir = Path(corpus_dir)
    entries = list(read_all([corpus_dir]))
    report = coverage(t for _, t in entries)
    lines = [INDEX_HEADER, f"{len(entries)} traces, {report.step_count} steps; "
             f"{len(report.target) - len(report.never_reached)} of {len(report.target)} runtime rules reached.", ""]
    if report.never_reached:
        lines.append("Runtime rules not reached:")
        lines.append("")
        for r in report.never_reached:
            lines.append(f"- {r} {title(r)}: {NOT_REACHABLE_BY_EVENTS.get(r, 'no trace fires it')}")
        lines.append("")
    lines.append("| trace | steps | description | rules it reaches |")
    lines.append("|---|---|---|---|")
    for path, trace in sorted(entries, key=lambda e: (_natural(e[1].header.description), e[0].name)):
        reached = sorted(trace.rules(), key=rule_key)
        description = trace.header.description.replace("|", "\\|")
        lines.append(f"| [{trace.name}]({path.name}) | {len(trace.steps)} | {description} | {' '.join(reached)} |")
    index = corpus_dir / "README.md"
    index.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return index


def _natural(text: str) -> list:
    """A sort key that puts ISR-2 before ISR-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    paths = [a for a in args if a != "--json"]
    if not paths:
        print("usage: python -m kraftspec.conformance.coverage [--json] <trace files or directories>", file=sys.stderr)
        return 2
    try:  # every trace read and checked before anything is counted
        traces = [t for _, t in read_all(paths)]
    except TraceError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    report = coverage(traces)
    print(json.dumps(report.to_json(), indent=1) if as_json else report.table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
