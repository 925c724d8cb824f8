"""The replayer: drive a system under test through a trace and stop at the first divergence.

At level ``responses`` every step's sequence number and replies must match; at ``state`` also
the committed state, after every commit, failover and snapshot and wherever the trace records a
change, and after the last step; at ``records`` also every appended record, with its frame bytes
when the adapter reports them (spec/traces.md).
"""

from __future__ import annotations

import difflib
import json
import shlex
import time
from pathlib import Path
from typing import Any

from attrs import field, frozen

from .adapters import Adapter, AdapterFailure
from .trace import LEVELS, Step, Trace, step_error

CHECKS_COMMITTED = ("commit", "failover", "snapshot")


@frozen
class Divergence:
    """Where a system under test first departed from a trace."""

    step: int
    event: dict[str, Any]
    part: str  # "seq", "replies", "committed", "records", or "adapter" when it failed to answer
    expected: Any
    actual: Any
    rules: tuple[str, ...]
    rejected_by: tuple[str, ...]

    def diff(self, context: int = 2, limit: int = 40) -> str:
        """A small unified diff of expected against actual."""
        def lines(value):
            return json.dumps(value, indent=1, sort_keys=True).splitlines()

        out = list(difflib.unified_diff(lines(self.expected), lines(self.actual), "expected", "actual", n=context, lineterm=""))
        if len(out) > limit:
            out = out[:limit] + [f"... ({len(out) - limit} more diff lines)"]
        return "\n".join(out)


@frozen
class Verdict:
    source: Trace = field(eq=False, repr=False)  # the trace replayed
    path: str | None
    adapter: str
    level: str
    steps: int  # steps replayed (the divergent one included)
    total: int
    seconds: float
    divergence: Divergence | None = None

    @property
    def passed(self) -> bool:
        return self.divergence is None

    @property
    def trace(self) -> str:
        """The trace's name, computed only when a report asks for it (naming encodes every line)."""
        return self.source.name

    def repro(self, adapter_spec: str | None = None) -> str:
        """A one-line command that replays the trace to the same place."""
        target = shlex.quote(self.path) if self.path else f"<{self.trace}.jsonl>"
        return f"kraftspec replay {target} --adapter {shlex.quote(adapter_spec or self.adapter)} --level {self.level}"

    def report(self, adapter_spec: str | None = None) -> str:
        if self.passed:
            return f"PASS {self.trace} ({self.steps} steps, {self.adapter}, {self.level})"
        d = self.divergence
        parts = [
            f"FAIL {self.trace}: {self.adapter} departs from the trace at step {d.step} of {self.total} ({d.part})",
            f"  event:   {json.dumps(d.event, sort_keys=True)}",
            f"  rules:   {' '.join(d.rules) or '-'}" + (f"; refused by {' '.join(d.rejected_by)}" if d.rejected_by else ""),
            "  " + d.diff().replace("\n", "\n  "),
            f"  repro:   {self.repro(adapter_spec)}",
        ]
        return "\n".join(parts)


def committed_checks(trace: Trace, level: str) -> list[bool]:
    """For each step, whether the replayer will ask for the committed state after it: at level
    ``state`` and above, after every commit, failover and snapshot, where the trace records a change,
    and after the last step (once a committed state has been recorded)."""
    if LEVELS.index(level) < 1:
        return [False] * len(trace.steps)
    checks, recorded = [], False
    for step in trace.steps:
        recorded = recorded or step.committed is not None
        last = step.n == len(trace.steps) - 1
        checks.append(recorded and (step.committed is not None or step.event["kind"] in CHECKS_COMMITTED or last))
    return checks


def replay(trace: Trace, adapter: Adapter, level: str = "records", path: str | Path | None = None) -> Verdict:
    """Replay ``trace`` against ``adapter`` at ``level``; stop at the first divergence."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    if level not in adapter.levels:
        raise ValueError(f"adapter {adapter.name} cannot report level {level!r} (it reports {', '.join(adapter.levels)})")
    compare_records = level == "records"
    checks = committed_checks(trace, level)
    started = time.perf_counter()
    expected_committed = None
    steps_run = 0

    def verdict(divergence: Divergence | None = None) -> Verdict:
        return Verdict(trace, str(path) if path else None, adapter.name, level, steps_run, len(trace.steps),
                       time.perf_counter() - started, divergence)

    native = getattr(adapter, "replay_native", None)
    if native is not None:  # an in-process adapter compares its own objects: fast, and exact
        try:
            differs_at = native(trace, level, checks)
        except ValueError:  # replayed the generic way, which names the step that raised it
            differs_at = NotImplemented
        finally:
            adapter.close()
        if differs_at is None:
            steps_run = len(trace.steps)
            return verdict()
        steps_run = 0  # NotImplemented, or a step differs: replay the generic way, which reports it
    try:
        adapter.start(trace.header.config)
        prepare = getattr(adapter, "prepare", None)
        if prepare is not None:  # an adapter may send events ahead of their results (the subprocess one does)
            prepare(trace, level, checks)

        def diverge(step: Step, part: str, expected: Any, actual: Any) -> Verdict:
            return verdict(Divergence(step.n, step.event, part, expected, actual, step.rules, step.rejected_by))

        for step in trace.steps:
            steps_run += 1
            try:
                actual = adapter.step(step.event)
            except AdapterFailure as failure:
                return diverge(step, "adapter", "an answer", str(failure))
            except ValueError as problem:  # a value the system under test cannot take: the trace's line
                raise step_error(path, step, problem) from problem
            if actual.get("seq") != step.seq:
                return diverge(step, "seq", step.seq, actual.get("seq"))
            if actual.get("replies") != list(step.replies):
                return diverge(step, "replies", list(step.replies), actual.get("replies"))
            if compare_records:
                expected_records = list(step.records)
                actual_records = actual.get("records")
                if "frame" not in _first(actual_records, {"frame": None}):  # the adapter reports no bytes
                    expected_records = [{k: v for k, v in r.items() if k != "frame"} for r in expected_records]
                if actual_records != expected_records:
                    return diverge(step, "records", expected_records, actual_records)
            if step.committed is not None:
                expected_committed = list(step.committed)
            if checks[step.n]:
                try:
                    committed = adapter.committed()
                except AdapterFailure as failure:
                    return diverge(step, "adapter", "the committed state", str(failure))
                if committed != expected_committed:
                    return diverge(step, "committed", expected_committed, committed)
        return verdict()
    finally:
        adapter.close()


def _first(items, default):
    return items[0] if items else default
