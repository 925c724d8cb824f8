"""Conformance traces: a header and steps, as canonical JSON lines (spec/traces.md).

A trace is what the model did with a sequence of events: for each event, what an outside
observer must see from any implementation of spec/, at three levels: the replies; the committed
state; the exact records (with their frame bytes). Reading a file validates every line before
anything is replayed, and every problem names the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from attrs import field, frozen

from kraftspec.spec import SPEC_VERSION

FORMAT = "kraftspec-trace"
FORMAT_VERSION = 1
LEVELS = ("responses", "state", "records")
"""Comparison levels, each including the ones before it."""

EVENT_KINDS = ("request", "tick", "commit", "failover", "snapshot")
REQUEST_APIS = {
    "BrokerRegistration": (0, 0),
    "BrokerHeartbeat": (0, 1),
    "UnregisterBroker": (0, 0),
    "AlterIsr": (0, 0),
    "CreateTopics": (0, 0),
    "DeleteTopics": (0, 0),
    "AlterPartitionReassignments": (0, 0),
    "ListPartitionReassignments": (0, 0),
}
"""The requests a trace may carry, with the versions the specification defines (RPC-1). A
trace may send a version outside them: the expected reply is then UNSUPPORTED_VERSION (RPC-2)."""


class TraceError(ValueError):
    """A trace file that cannot be used; names the file, the line and the field."""

    def __init__(self, path: str, line: int, field_path: str, problem: str):
        super().__init__(f"{path}:{line}: {field_path}: {problem}")
        self.path, self.line, self.field, self.problem = path, line, field_path, problem


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(obj: Any) -> str:
    """The canonical JSON text of a value: sorted keys, no spaces, UTF-8 kept as is."""
    return _CANONICAL.encode(obj)


@frozen
class Step:
    """One event and what it must produce.

    ``seq``: the request's sequence number (RPC-6), or None for other events.
    ``records``: appended records, each ``{"offset", "type", "version", "data", "frame"}``.
    ``replies``: released replies, each ``{"seq", "api", "version", "body"}``.
    ``committed``: the committed state as its minimal records (LOG-11), each ``{"type", "data"}``,
    when this step changed it; None when it did not.
    ``rules`` fired; ``rejected_by``: the rules among them that refused something.
    """

    n: int
    event: dict[str, Any]
    seq: int | None = None
    records: tuple[dict[str, Any], ...] = ()
    replies: tuple[dict[str, Any], ...] = ()
    committed: tuple[dict[str, Any], ...] | None = None
    rules: tuple[str, ...] = ()
    rejected_by: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        line: dict[str, Any] = {
            "type": "step",
            "n": self.n,
            "event": self.event,
            "seq": self.seq,
            "records": list(self.records),
            "replies": list(self.replies),
            "rules": list(self.rules),
            "rejected_by": list(self.rejected_by),
        }
        if self.committed is not None:
            line["committed"] = list(self.committed)
        return line


@frozen
class Header:
    """What a trace needs before its first event: the controller's configuration, and where it came from."""

    config: dict[str, Any]
    generator: dict[str, Any] = field(factory=dict)
    seed: int | None = None
    description: str = ""
    spec_version: str = SPEC_VERSION
    format_version: int = FORMAT_VERSION

    def to_json(self, steps: int) -> dict[str, Any]:
        return {
            "type": "header",
            "format": FORMAT,
            "format_version": self.format_version,
            "spec_version": self.spec_version,
            "generator": self.generator,
            "seed": self.seed,
            "config": self.config,
            "description": self.description,
            "steps": steps,
        }


@frozen
class Trace:
    header: Header
    steps: tuple[Step, ...]
    # the step lines and the name, once computed; init=False so that evolve() starts a fresh cache
    _cache: dict = field(factory=dict, init=False, eq=False, repr=False)

    def step_lines(self) -> list[str]:
        """The steps' canonical lines (computed once: naming and writing share them)."""
        lines = self._cache.get("steps")
        if lines is None:
            lines = self._cache["steps"] = [canonical(s.to_json()) for s in self.steps]
        return lines

    def lines(self) -> list[str]:
        return [canonical(self.header.to_json(len(self.steps))), *self.step_lines()]

    @property
    def name(self) -> str:
        """The trace's name: a hash of its content, its description left out, so that naming a
        regression trace does not rename it."""
        name = self._cache.get("name")
        if name is None:
            header = self.header.to_json(len(self.steps))
            del header["description"]
            digest = hashlib.sha256(canonical(header).encode())
            for line in self.step_lines():
                digest.update(b"\n" + line.encode())
            name = self._cache["name"] = digest.hexdigest()[:16]
        return name

    def with_description(self, description: str) -> "Trace":
        return Trace(Header(**{**_header_fields(self.header), "description": description}), self.steps)

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        if path.is_dir():
            path = path / f"{self.name}.jsonl"
        text = "\n".join(self.lines()) + "\n"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        return path

    def rules(self) -> set[str]:
        return {rule for step in self.steps for rule in step.rules}


def _header_fields(header: Header) -> dict[str, Any]:
    return {
        "config": header.config,
        "generator": header.generator,
        "seed": header.seed,
        "description": header.description,
        "spec_version": header.spec_version,
        "format_version": header.format_version,
    }


# ---- reading, with validation ------------------------------------------------------------------


HEADER_KEYS = {"type", "format", "format_version", "spec_version", "generator", "seed", "config", "description", "steps"}
STEP_KEYS = {"type", "n", "event", "seq", "records", "replies", "rules", "rejected_by"}
STEP_OPTIONAL_KEYS = {"committed"}


class _Checker:
    def __init__(self, path: str, line: int):
        self.path, self.line = path, line

    def fail(self, field_path: str, problem: str):
        raise TraceError(self.path, self.line, field_path, problem)

    def keys(self, obj: dict, required: set[str], optional: set[str] = frozenset()) -> None:
        for key in sorted(required - set(obj)):
            self.fail(key, "missing")
        for key in sorted(set(obj) - required - optional):
            self.fail(key, f"unknown field (expected {', '.join(sorted(required | optional))})")

    def need(self, obj: dict, key: str, kinds, where: str):
        if not isinstance(obj, dict):
            self.fail(where or "(line)", f"expected a JSON object, got {type(obj).__name__}")
        if key not in obj:
            self.fail(f"{where}.{key}" if where else key, "missing")
        value = obj[key]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
            self.fail(f"{where}.{key}" if where else key, f"expected {_kind_names(kinds)}, got {json.dumps(value)[:60]}")
        return value


def _as_tuple(kinds) -> tuple:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _kind_names(kinds) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", bool: "a boolean", type(None): "null"}
    return " or ".join(names.get(k, k.__name__) for k in _as_tuple(kinds))


def _check_header(obj: Any, check: _Checker) -> Header:
    kind = check.need(obj, "type", str, "")
    if kind != "header":
        check.fail("type", f"the first line must be the header, got type {kind!r}")
    check.keys(obj, HEADER_KEYS)
    if check.need(obj, "format", str, "") != FORMAT:
        check.fail("format", f"expected {FORMAT!r}, got {obj['format']!r}")
    version = check.need(obj, "format_version", int, "")
    if version != FORMAT_VERSION:
        check.fail("format_version", f"this kraftspec reads format version {FORMAT_VERSION}, the file has {version}")
    spec_version = check.need(obj, "spec_version", str, "")
    config = check.need(obj, "config", dict, "")
    check.need(config, "cluster_id", str, "config")
    for key in ("heartbeat_interval_ms", "session_timeout_ms"):
        check.need(config, key, int, "config")
    features = check.need(config, "finalized_features", list, "config")
    for i, feature in enumerate(features):
        if not (isinstance(feature, list) and len(feature) == 3 and isinstance(feature[0], str)
                and all(isinstance(x, int) and not isinstance(x, bool) for x in feature[1:])):
            check.fail(f"config.finalized_features[{i}]", f"expected [name, min, max], got {json.dumps(feature)}")
    check.need(obj, "steps", int, "")
    generator = check.need(obj, "generator", dict, "")
    seed = obj.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        check.fail("seed", f"expected an integer or null, got {json.dumps(seed)}")
    description = obj.get("description", "")
    if not isinstance(description, str):
        check.fail("description", "expected a string")
    return Header(config, generator, seed, description, spec_version, version)


def _check_event(event: Any, check: _Checker) -> dict:
    kind = check.need(event, "kind", str, "event")
    if kind not in EVENT_KINDS:
        check.fail("event.kind", f"unknown event kind {kind!r}; expected one of {', '.join(EVENT_KINDS)}")
    if kind == "request":
        api = check.need(event, "api", str, "event")
        if api not in REQUEST_APIS:
            check.fail("event.api", f"unknown request {api!r}; expected one of {', '.join(REQUEST_APIS)}")
        check.need(event, "version", int, "event")
        check.need(event, "body", dict, "event")
    elif kind == "tick":
        check.need(event, "now_ms", int, "event")
    elif kind == "commit":
        check.need(event, "offset", int, "event")
    return event


def _check_step(obj: Any, n: int, check: _Checker) -> Step:
    kind = check.need(obj, "type", str, "")
    if kind != "step":
        check.fail("type", f"expected 'step', got {kind!r}")
    check.keys(obj, STEP_KEYS, STEP_OPTIONAL_KEYS)
    if check.need(obj, "n", int, "") != n:
        check.fail("n", f"expected step {n}, got {obj['n']} (steps must be numbered from 0, in order)")
    event = _check_event(check.need(obj, "event", dict, ""), check)
    seq = obj.get("seq")
    if seq is not None and not isinstance(seq, int):
        check.fail("seq", "expected an integer or null")
    records = check.need(obj, "records", list, "")
    for i, record in enumerate(records):
        for key, kinds in (("offset", int), ("type", str), ("version", int), ("data", dict)):
            check.need(record, key, kinds, f"records[{i}]")
    replies = check.need(obj, "replies", list, "")
    for i, reply in enumerate(replies):
        for key, kinds in (("seq", int), ("api", str), ("version", int), ("body", dict)):
            check.need(reply, key, kinds, f"replies[{i}]")
    committed = obj.get("committed")
    if committed is not None:
        if not isinstance(committed, list):
            check.fail("committed", "expected a list of records")
        for i, record in enumerate(committed):
            check.need(record, "type", str, f"committed[{i}]")
            check.need(record, "data", dict, f"committed[{i}]")
    rules = check.need(obj, "rules", list, "")
    rejected = check.need(obj, "rejected_by", list, "")
    for name, values in (("rules", rules), ("rejected_by", rejected)):
        for i, value in enumerate(values):
            if not isinstance(value, str):
                check.fail(f"{name}[{i}]", "expected a rule id")
    return Step(n, event, seq, tuple(records), tuple(replies), None if committed is None else tuple(committed),
                tuple(rules), tuple(rejected))


def parse(lines: Iterable[str], path: str = "<trace>") -> Trace:
    """A trace from its lines; raises TraceError (file, line, field) at the first problem."""
    header: Header | None = None
    expected = 0
    steps: list[Step] = []
    number = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        check = _Checker(path, number)
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as problem:
            check.fail("(line)", f"not JSON: {problem.msg} at column {problem.colno}")
        if header is None:
            header = _check_header(obj, check)
            expected = obj["steps"]
            continue
        steps.append(_check_step(obj, len(steps), check))
    if header is None:
        raise TraceError(path, max(number, 1), "(file)", "empty: no header line")
    if len(steps) != expected:
        raise TraceError(path, number, "steps", f"the header announces {expected} steps, the file has {len(steps)} (truncated?)")
    return Trace(header, tuple(steps))


def read(path: str | Path) -> Trace:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(str(path), 0, "(file)", "no such file") from None
    except UnicodeDecodeError as problem:
        raise TraceError(str(path), 0, "(file)", f"not UTF-8 text ({problem.reason})") from None
    return parse(text.splitlines(), str(path))


def read_all(paths: Iterable[str | Path]) -> Iterator[tuple[Path, Trace]]:
    """Every trace under the given files and directories (``*.jsonl``), in name order."""
    for given in paths:
        given = Path(given)
        files = sorted(given.glob("*.jsonl")) if given.is_dir() else [given]
        for path in files:
            yield path, read(path)
