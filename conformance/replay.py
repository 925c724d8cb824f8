"""The replayer: drive a system under test through a trace and stop at the first divergence.

At level ``responses`` every step's sequence number and replies must match; at ``state`` also
the committed state, after every commit, failover and snapshot and wherever the trace records a
change, and after the last step; at ``records`` also every appended record, with its frame bytes
when the adapter reports them (spec/traces.md).
"""

from __future__ import annotations

import difflib
import gc
import json
import shlex
import time
from pathlib import Path
from typing import Any

from attrs import field, frozen

from .adapters import Adapter, AdapterFailure
from .trace import LEVELS, Step, Trace, profile_of, step_error

CHECKS_COMMITTED = ("commit", "failover", "snapshot")
REPLY_HOW = {"differs": "differs", "missing": "expected, not released", "unexpected": "released, not expected"}


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

    def reply(self) -> tuple[dict[str, Any], str] | None:
        """For a divergence in the replies: the first reply that differs, and how (``differs``,
        ``missing`` when it was expected and not released, ``unexpected`` when it was released and not
        expected). The reply is the expected one, or the actual one when it was not expected."""
        if self.part != "replies":
            return None
        expected = list(self.expected or [])
        actual = self.actual if isinstance(self.actual, list) else []
        for i in range(max(len(expected), len(actual))):
            want = expected[i] if i < len(expected) else None
            got = actual[i] if i < len(actual) else None
            if want != got:
                if want is None:
                    return (got, "unexpected") if isinstance(got, dict) else None
                return want, "differs" if got is not None else "missing"
        return None


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
    not_supported: str | None = None  # what the adapter declared it cannot do, where the trace needed it
    first_records: Divergence | None = None  # the first record that differs, when the level does not compare records
    ignored: tuple[str, ...] = ()  # fields the adapter declared unsupported, left out of the comparison

    @property
    def passed(self) -> bool:
        return self.divergence is None and self.not_supported is None

    @property
    def trace(self) -> str:
        """The trace's name, computed only when a report asks for it (naming encodes every line)."""
        return self.source.name

    def repro(self, adapter_spec: str | None = None, path: str | Path | None = None) -> str | None:
        """A one-line command that replays the trace file (``path``, or the one replayed) to the
        same place; None when the trace was replayed from memory and no file is named."""
        path = path or self.path
        if not path:
            return None
        return f"kraftspec replay {shlex.quote(str(path))} --adapter {shlex.quote(adapter_spec or self.adapter)} --level {self.level}"

    def report(self, adapter_spec: str | None = None, path: str | Path | None = None) -> str:
        """What happened, for a person: the step, the event, the reply or part that differs, the rules
        that decided it, a diff, and the command that replays the trace file (``path``, or the one
        replayed; none when the trace has no file)."""
        ignoring = f"; not compared, as the adapter does not support them: {', '.join(self.ignored)}" if self.ignored else ""
        if self.not_supported is not None:
            return f"NOT SUPPORTED {self.trace}: {self.adapter} does not support {self.not_supported}{ignoring}"
        if self.passed:
            return f"PASS {self.trace} ({self.steps} steps, {self.adapter}, {self.level}{ignoring})"
        d = self.divergence
        assert d is not None
        parts = [
            f"FAIL {self.trace}: {self.adapter} departs from the trace at step {d.step} of {self.total} ({d.part})",
            f"  event:   {json.dumps(d.event, sort_keys=True)}",
        ]
        parts += self._reply_and_rules(d)
        parts.append("  " + d.diff().replace("\n", "\n  "))
        first = self.first_records
        if first is not None and first.step <= d.step:
            parts.append(f"  records: first differ at step {first.step} ({first.event.get('api') or first.event.get('kind')}): "
                         f"{record_difference(first.expected, first.actual)}; often the cause of a later reply difference")
        if ignoring:
            parts.append(f"  {ignoring[2:]}")
        repro = self.repro(adapter_spec, path)
        if repro:
            parts.append(f"  repro:   {repro}")
        return "\n".join(parts)

    def _reply_and_rules(self, d: Divergence) -> list[str]:
        """The report's lines naming the reply that differs (api, seq, the step of its request) and
        the rules that decided it: those of the request's step, then those of the step that released
        the reply when it is another (a commit, say)."""
        def rules(names, refused) -> str:
            return (" ".join(names) or "-") + (f"; refused by {' '.join(refused)}" if refused else "")

        found = d.reply()
        if found is None:
            return [f"  rules:   {rules(d.rules, d.rejected_by)}"]
        reply, how = found
        seq = reply.get("seq")
        request = next((s for s in self.source.steps if s.seq is not None and s.seq == seq), None)
        asked = f" to the request of step {request.n}" if request is not None else ""
        lines = [f"  reply:   {reply.get('api', '?')} seq {seq}{asked}, released at step {d.step}: {REPLY_HOW[how]}"]
        if request is None or request.n == d.step:
            lines.append(f"  rules:   {rules(d.rules, d.rejected_by)}")
        else:
            lines.append(f"  rules:   step {request.n} (the request): {rules(request.rules, request.rejected_by)}")
            lines.append(f"           step {d.step} (released it): {rules(d.rules, d.rejected_by)}")
        return lines


def committed_checks(trace: Trace, level: str) -> list[bool]:
    """For each step, whether the replayer will ask for the committed state after it: at level
    ``state`` and above, after every commit, failover and snapshot, where the trace records a change,
    and after the last step (once a committed state has been recorded)."""
    if LEVELS.index(level) < 1:
        return [False] * len(trace.steps)
    checks, recorded = [], False
    for step in trace.steps:
        if step.committed is not None:
            recorded = True
            checks.append(True)
        else:
            checks.append(recorded and step.event["kind"] in CHECKS_COMMITTED)
    if checks:
        checks[-1] = recorded  # the last step, once a committed state has been recorded
    return checks


class _Run:
    """A replay as it goes: what its verdict says beside the divergence. A class rather than
    closures over replay's locals: compiled, closures that call one another share one scope object
    with a reference cycle through it, which kept each trace alive until the cyclic collector ran."""

    def __init__(self, trace: Trace, adapter: Adapter, level: str, path: str | Path | None) -> None:
        self.trace, self.adapter, self.level, self.path = trace, adapter, level, path
        self.started = time.perf_counter()
        self.steps_run = 0
        self.first_records: Divergence | None = None
        self.without = Unsupported(())
        self.profile = profile_of(trace.header.config)

    def verdict(self, divergence: Divergence | None = None, not_supported: str | None = None) -> Verdict:
        return Verdict(self.trace, str(self.path) if self.path else None, self.adapter.name, self.level, self.steps_run,
                       len(self.trace.steps), time.perf_counter() - self.started, divergence, not_supported,
                       self.first_records, self.without.fields)

    def not_supported_level(self) -> Verdict:  # declared: reported as not supported, not replayed
        return self.verdict(not_supported=f"level {self.level} (it reports {', '.join(self.adapter.levels)})")

    def profile_unsupported(self) -> Verdict | None:  # declared: a trace of a profile it does not implement
        profiles = getattr(self.adapter, "profiles", None)
        if profiles is None or self.profile in profiles:
            return None
        return self.verdict(not_supported=f"profile {self.profile} (it implements {', '.join(profiles) or 'none'})")

    def diverge(self, step: Step, part: str, expected: Any, actual: Any) -> Verdict:
        return self.verdict(Divergence(step.n, step.event, part, expected, actual, step.rules, step.rejected_by))


def replay(trace: Trace, adapter: Adapter, level: str = "records", path: str | Path | None = None) -> Verdict:
    """Replay ``trace`` against ``adapter`` at ``level``; stop at the first divergence."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    compare_records = level == "records"
    checks = committed_checks(trace, level)
    run = _Run(trace, adapter, level, path)
    expected_committed = None

    if level not in adapter.levels:
        return run.not_supported_level()
    unsupported_profile = run.profile_unsupported()
    if unsupported_profile is not None:
        return unsupported_profile

    native = getattr(adapter, "replay_native", None)
    if native is not None:  # an in-process adapter compares its own objects: fast, and exact
        # without the automatic cyclic collector, given back as it was: a replay leaves almost no
        # cycles behind (a few objects a trace), and the collections its allocations set off only
        # walked its live objects, about a twentieth of its time
        collecting = gc.isenabled()
        gc.disable()
        try:
            differs_at = native(trace, level, checks)
        except ValueError:  # replayed the generic way, which names the step that raised it
            differs_at = NotImplemented
        finally:
            if collecting:
                gc.enable()
            adapter.close()
        if differs_at is None:
            run.steps_run = len(trace.steps)
            return run.verdict()
        # NotImplemented, or a step differs: replay the generic way, which reports it
    try:
        adapter.start(trace.header.config)
        if level not in adapter.levels:  # a server says what it reports when it starts
            return run.not_supported_level()
        unsupported_profile = run.profile_unsupported()  # and which profiles it implements
        if unsupported_profile is not None:
            return unsupported_profile
        watch_records = not compare_records and "records" in adapter.levels  # for the first record difference
        unsupported = getattr(adapter, "unsupported", None) or {}
        without = run.without = Unsupported(unsupported.get("fields", ()))
        unsupported_requests = frozenset(unsupported.get("requests", ()))
        prepare = getattr(adapter, "prepare", None)
        if prepare is not None:  # an adapter may send events ahead of their results (the subprocess one does)
            prepare(trace, level, checks)
        diverge = run.diverge

        for step in trace.steps:
            if step.event.get("kind") == "request" and step.event.get("api") in unsupported_requests:
                return run.verdict(not_supported=f"request {step.event['api']} (step {step.n})")
            run.steps_run += 1
            try:
                actual = adapter.step(step.event)
            except AdapterFailure as failure:
                return diverge(step, "adapter", "an answer", str(failure))
            except ValueError as problem:  # a value the system under test cannot take: the trace's line
                raise step_error(path, step, problem) from problem
            if actual.get("seq") != step.seq:
                return diverge(step, "seq", step.seq, actual.get("seq"))
            expected_replies, actual_replies = list(step.replies), actual.get("replies")
            if without:
                expected_replies, actual_replies = without.replies(expected_replies), without.replies(actual_replies)
            if compare_records or (watch_records and run.first_records is None):
                expected_records = list(step.records)
                actual_records = actual.get("records")
                if "frame" not in _first(actual_records, {"frame": None}):  # the adapter reports no bytes
                    expected_records = [{k: v for k, v in r.items() if k != "frame"} for r in expected_records]
                if without:
                    expected_records, actual_records = without.records(expected_records), without.records(actual_records)
                if actual_records != expected_records:
                    if not compare_records:
                        run.first_records = Divergence(step.n, step.event, "records", expected_records, actual_records,
                                                       step.rules, step.rejected_by)
                    elif actual_replies == expected_replies:
                        return diverge(step, "records", expected_records, actual_records)
            if actual_replies != expected_replies:
                return diverge(step, "replies", expected_replies, actual_replies)
            if step.committed is not None:
                expected_committed = list(step.committed)
            if checks[step.n]:
                try:
                    committed = adapter.committed()
                except AdapterFailure as failure:
                    return diverge(step, "adapter", "the committed state", str(failure))
                if without:
                    committed = without.records(committed)
                    expected_committed = without.records(expected_committed)
                if committed != expected_committed:
                    return diverge(step, "committed", expected_committed, committed)
        return run.verdict()
    finally:
        adapter.close()


def record_difference(expected: Any, actual: Any) -> str:
    """The first record that differs, in a few words: its offset, each side's type and version, and
    the data fields that differ."""
    expected = expected if isinstance(expected, list) else []
    actual = actual if isinstance(actual, list) else []
    for i in range(max(len(expected), len(actual))):
        want = expected[i] if i < len(expected) else None
        got = actual[i] if i < len(actual) else None
        if want == got:
            continue
        if not isinstance(want, dict) or not isinstance(got, dict):
            present = want if isinstance(want, dict) else got if isinstance(got, dict) else {}
            side = "expected, not appended" if isinstance(want, dict) else "appended, not expected"
            return f"{present.get('type', '?')} at offset {present.get('offset', '?')} {side}"
        what = f"{want.get('type')} v{want.get('version')}"
        if (got.get("type"), got.get("version")) != (want.get("type"), want.get("version")):
            what += f", appended {got.get('type')} v{got.get('version')}"
        data_w, data_g = want.get("data") or {}, got.get("data") or {}
        fields = sorted(k for k in set(data_w) | set(data_g) if data_w.get(k, ...) != data_g.get(k, ...))
        return f"{what} at offset {want.get('offset')}" + (f", fields {', '.join(fields)}" if fields else ", its frame")
    return "the same records"


class Unsupported:
    """The fields an adapter declared it does not support (spec/protocol.md), each ``Message.Field``
    or a path through nested structs (``AlterIsrResponse.Topics.Partitions.PartitionEpoch``), and
    how to leave them out of replies and records before they are compared."""

    def __init__(self, fields) -> None:
        self.fields = tuple(sorted(fields))
        self.paths: dict[str, list[list[str]]] = {}
        for name in self.fields:
            message, *path = name.split(".")
            if path:
                self.paths.setdefault(message, []).append(path)

    def __bool__(self) -> bool:
        return bool(self.paths)

    def replies(self, replies):
        if not isinstance(replies, list):
            return replies
        return [self._without(r, f"{r.get('api')}Response", "body") if isinstance(r, dict) else r for r in replies]

    def records(self, records):
        if not isinstance(records, list):
            return records
        return [self._without(r, r.get("type"), "data") if isinstance(r, dict) else r for r in records]

    def _without(self, item: dict, message: Any, key: str) -> dict:
        paths = self.paths.get(message) if isinstance(message, str) else None
        if not paths or not isinstance(item.get(key), dict):
            return item
        body = json.loads(json.dumps(item[key]))  # a copy, to change
        for path in paths:
            _drop(body, path)
        return {**item, key: body}


def _drop(value: Any, path: list[str]) -> None:
    if isinstance(value, list):
        for item in value:
            _drop(item, path)
    elif isinstance(value, dict):
        if len(path) == 1:
            value.pop(path[0], None)
        elif path[0] in value:
            _drop(value[path[0]], path[1:])


def _first(items, default):
    return items[0] if items else default
