"""Conformance traces: a header and steps, as canonical JSON lines (spec/traces.md).

A trace is what the model did with a sequence of events: for each event, what an outside
observer must see from any implementation of spec/, at three levels: the replies; the committed
state; the exact records (with their frame bytes). Reading a file validates every line before
anything is replayed, and every problem names the file, the line and the field.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import msgspec
from attrs import field, frozen

from kraftspec.model import Config, ConfigError, FeatureRange
from kraftspec.model.framing import FrameError, decode_record
from kraftspec.spec import SPEC_VERSION
from kraftspec.spec.profiles import DEFAULT_PROFILE, profile, profile_names
from kraftspec.spec.schemas import INT_RANGES, record_schemas

from .jsonform import (
    FormError,
    check_form,
    describe,
    fast_to_json,
    in_versions,
    newest_version,
    qualified,
    schema_of,
    valid_text,
)

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


_CANONICAL = msgspec.json.Encoder(order="sorted")


def canonical_bytes(obj: Any) -> bytes:
    """The canonical JSON of a value, UTF-8 encoded: keys sorted, no spaces, non-ASCII characters
    kept, control characters escaped. For the values a trace holds (objects, arrays, strings,
    integers, booleans, null; never a float) these are exactly the bytes of Python's
    ``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``, several times
    faster (tests/test_traces.py checks the two agree)."""
    return _CANONICAL.encode(obj)


def canonical(obj: Any) -> str:
    """The canonical JSON text of a value (see canonical_bytes)."""
    return _CANONICAL.encode(obj).decode()


@frozen
class Step:
    """One event and what it must produce.

    ``seq``: the request's sequence number (RPC-6), or None for other events.
    ``records``: appended records, each ``{"offset", "type", "version", "data", "frame"}``.
    ``replies``: released replies, each ``{"seq", "api", "version", "body"}``.
    ``committed``: the committed state as its minimal records (LOG-11), each ``{"type", "data"}``,
    when this step changed it; None when it did not.
    ``rules`` fired; ``rejected_by``: the rules among them that refused something.
    ``line``: the step's line in the file it was read from (None for a trace made in memory).
    """

    n: int
    event: dict[str, Any]
    seq: int | None = None
    records: tuple[dict[str, Any], ...] = ()
    replies: tuple[dict[str, Any], ...] = ()
    committed: tuple[dict[str, Any], ...] | None = None
    rules: tuple[str, ...] = ()
    rejected_by: tuple[str, ...] = ()
    line: int | None = field(default=None, eq=False, repr=False)  # where a file had it, for messages

    def to_json(self) -> dict[str, Any]:
        """The step's line as a JSON value; its arrays are the step's tuples, which every JSON
        encoder writes as arrays."""
        line: dict[str, Any] = {
            "type": "step",
            "n": self.n,
            "event": self.event,
            "seq": self.seq,
            "records": self.records,
            "replies": self.replies,
            "rules": self.rules,
            "rejected_by": self.rejected_by,
        }
        if self.committed is not None:
            line["committed"] = self.committed
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

    def step_bytes(self) -> list[bytes]:
        """The steps' canonical lines, encoded (computed once: naming and writing share them)."""
        lines = self._cache.get("steps")
        if lines is None:
            lines = self._cache["steps"] = [_CANONICAL.encode(s.to_json()) for s in self.steps]
        return lines

    def step_lines(self) -> list[str]:
        """The steps' canonical lines."""
        return [line.decode() for line in self.step_bytes()]

    def lines(self) -> list[str]:
        return [canonical(self.header.to_json(len(self.steps))), *self.step_lines()]

    @property
    def name(self) -> str:
        """The trace's name: a hash of its content, its description left out, so that naming a
        regression trace does not rename it, and its profile left out when it is the default one,
        which a header without a profile has, so that traces written before profiles keep their
        names (spec/traces.md)."""
        name = self._cache.get("name")
        if name is None:
            header = self.header.to_json(len(self.steps))
            del header["description"]
            if header["config"].get("profile") == DEFAULT_PROFILE:
                header["config"] = {k: v for k, v in header["config"].items() if k != "profile"}
            digest = hashlib.sha256(canonical_bytes(header))
            for line in self.step_bytes():
                digest.update(b"\n")
                digest.update(line)
            name = self._cache["name"] = digest.hexdigest()[:16]
        return name

    def with_description(self, description: str) -> "Trace":
        return Trace(Header(**{**_header_fields(self.header), "description": description}), self.steps)

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        if path.is_dir():
            path = path / f"{self.name}.jsonl"
        data = b"\n".join([canonical_bytes(self.header.to_json(len(self.steps))), *self.step_bytes()]) + b"\n"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
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
#
# Everything a file says is checked before anything is replayed (spec/traces.md, "Checks on
# reading"): each line on its own (JSON, the fields of the format, every request, reply and
# record against its schema) and the lines together (sequence numbers, the clock, offsets against
# the log end). The first problem stops the reading with the file, the line and the field.


HEADER_KEYS = {"type", "format", "format_version", "spec_version", "generator", "seed", "config", "description", "steps"}
CONFIG_KEYS = {"cluster_id", "heartbeat_interval_ms", "session_timeout_ms", "finalized_features"}
CONFIG_OPTIONAL_KEYS = {"profile"}  # a header without one is of the default profile (written before profiles)
STEP_KEYS = {"type", "n", "event", "seq", "records", "replies", "rules", "rejected_by"}
STEP_OPTIONAL_KEYS = {"committed"}
EVENT_KEYS = {
    "request": {"kind", "api", "version", "body"},
    "tick": {"kind", "now_ms"},
    "commit": {"kind", "offset"},
    "failover": {"kind"},
    "snapshot": {"kind"},
}
RECORD_KEYS, RECORD_OPTIONAL_KEYS = {"offset", "type", "version", "data"}, {"frame"}
REPLY_KEYS = {"seq", "api", "version", "body"}
COMMITTED_KEYS = {"type", "data"}
FREE_FORM_DEPTH = 32
"""How deeply the header's free-form ``generator`` may nest."""

_RULE_ID = re.compile(r"[A-Z]{2,10}-[0-9]{1,3}")
_HEX = re.compile(r"(?:[0-9a-f]{2})*")
_INT_DIGITS = "integer string conversion"  # in the message of the ValueError for too many digits


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


class _Checker:
    def __init__(self, path: str, line: int):
        self.path, self.line = path, line

    def fail(self, field_path: str, problem: str):
        raise TraceError(self.path, self.line, field_path, problem)

    def keys(self, obj: dict, required: AbstractSet[str], optional: AbstractSet[str] = frozenset(), where: str = "") -> None:
        if obj.keys() == required or (optional and obj.keys() == required | optional):
            return
        prefix = f"{where}." if where else ""
        for key in sorted(required - set(obj)):
            self.fail(prefix + key, "missing")
        for key in sorted(set(obj) - required - optional):
            self.fail(prefix + key, f"unknown field (expected {', '.join(sorted(required | optional))})")

    def need(self, obj: dict, key: str, kinds, where: str):
        if type(obj) is dict and type(obj.get(key)) is kinds:  # the common case, quickly
            return obj[key]
        if not isinstance(obj, dict):
            self.fail(where or "(line)", f"expected a JSON object, got {describe(obj)}")
        if key not in obj:
            self.fail(f"{where}.{key}" if where else key, "missing")
        value = obj[key]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
            self.fail(f"{where}.{key}" if where else key, f"expected {_kind_names(kinds)}, got {describe(value)}")
        return value

    def integer(self, obj: dict, key: str, where: str, kind: str = "int64", low: int | None = None) -> int:
        """An integer field of the format, in the range of ``kind`` and at least ``low``."""
        value = self.need(obj, key, int, where)
        low = INT_RANGES[kind][0] if low is None else low
        if not low <= value <= INT_RANGES[kind][1]:
            self.fail(f"{where}.{key}" if where else key, f"expected an integer from {low} to {INT_RANGES[kind][1]}, got {value}")
        return value

    def text(self, obj: dict, key: str, where: str) -> str:
        value = self.need(obj, key, str, where)
        if not valid_text(value):
            self.fail(f"{where}.{key}" if where else key, "not valid Unicode (a lone surrogate)")
        return value

    def form(self, data: Any, name: str, version: int, where: str) -> None:
        """``data`` must be the neutral form of the message or record ``name`` at ``version``."""
        try:
            check_form(data, name, version)
        except FormError as problem:
            self.fail(f"{where}.{problem.path}" if problem.path else where, problem.problem)

    def free_form(self, value: Any, where: str, depth: int = 0) -> None:
        """Any JSON, as long as it nests at most FREE_FORM_DEPTH deep and its text is valid."""
        if depth > FREE_FORM_DEPTH:
            self.fail(where, f"nested more than {FREE_FORM_DEPTH} levels deep")
        if isinstance(value, dict):
            for key, item in value.items():
                if not valid_text(key):
                    self.fail(where, f"a key that is not valid Unicode: {describe(key)}")
                self.free_form(item, f"{where}.{key}", depth + 1)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.free_form(item, f"{where}[{index}]", depth + 1)
        elif isinstance(value, str) and not valid_text(value):
            self.fail(where, "not valid Unicode (a lone surrogate)")


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
        check.fail("format", f"expected {FORMAT!r}, got {describe(obj['format'])}")
    version = check.need(obj, "format_version", int, "")
    if version != FORMAT_VERSION:
        check.fail("format_version", f"this kraftspec reads format version {FORMAT_VERSION}, the file has {version}")
    spec_version = check.text(obj, "spec_version", "")
    config = _check_config(check.need(obj, "config", dict, ""), check)
    check.integer(obj, "steps", "", low=0)
    generator = check.need(obj, "generator", dict, "")
    check.free_form(generator, "generator")
    seed = obj["seed"]
    if seed is not None:
        check.integer(obj, "seed", "")
    description = check.text(obj, "description", "")
    return Header(config, generator, seed, description, spec_version, version)


def _check_config(config: dict, check: _Checker) -> dict:
    """The controller's configuration: each value of its type, then as the model accepts it. The
    configuration returned names its profile: the default one when the header names none."""
    check.keys(config, CONFIG_KEYS, CONFIG_OPTIONAL_KEYS, where="config")
    if not check.text(config, "cluster_id", "config"):
        check.fail("config.cluster_id", "empty")
    for key in ("heartbeat_interval_ms", "session_timeout_ms"):
        check.integer(config, key, "config", "int32", low=1)
    features = check.need(config, "finalized_features", list, "config")
    low, high = INT_RANGES["int16"]
    for i, feature in enumerate(features):
        if not (isinstance(feature, list) and len(feature) == 3 and isinstance(feature[0], str) and valid_text(feature[0])
                and all(type(x) is int and low <= x <= high for x in feature[1:])):
            check.fail(f"config.finalized_features[{i}]", f"expected [name, min level, max level] with int16 levels, "
                       f"got {describe(feature) if not isinstance(feature, list) else json.dumps(feature)[:60]}")
    profile = DEFAULT_PROFILE
    if "profile" in config:
        profile = check.text(config, "profile", "config")
        if profile not in profile_names():
            check.fail("config.profile", f"unknown profile {describe(profile)}; the profiles are {', '.join(profile_names())}")
    try:  # what else the model refuses (CONF-2, feature names and levels), in its words
        Config(config["cluster_id"], config["heartbeat_interval_ms"], config["session_timeout_ms"],
               tuple(FeatureRange(name, lo, hi) for name, lo, hi in features), profile=profile)
    except ConfigError as problem:
        check.fail("config", str(problem))
    return config if "profile" in config else {**config, "profile": profile}


def profile_of(config: dict[str, Any]) -> str:
    """The profile a trace header's configuration names: the default one when it names none."""
    return config.get("profile", DEFAULT_PROFILE)


class _Run:
    """What the steps read so far say about the run: the next sequence number, the requests not
    yet answered, the clock, and the log end (exact until a failover truncates the log to its
    committed offset, which the trace does not record; then an upper bound until records are
    appended again)."""

    def __init__(self, header: Header):
        self.next_seq = 0
        self.waiting: dict[int, tuple[str, int]] = {}  # seq -> (api, version) of requests not yet answered
        self.now_ms, self.clock_line = 0, 0
        self.log_end = len(header.config["finalized_features"])  # LOG-14: the bootstrap batch
        self.log_end_exact = True
        self.committed_at_most = self.log_end
        params = self.params = profile(profile_of(header.config))
        self.formats = params.record_formats  # DEC-22: the records' definitions
        self.rpc_formats = params.rpc_formats  # DEC-9: the messages' definitions


def _check_event(event: Any, check: _Checker, run: _Run) -> dict:
    kind = check.need(event, "kind", str, "event")
    if kind not in EVENT_KINDS:
        check.fail("event.kind", f"unknown event kind {kind!r}; expected one of {', '.join(EVENT_KINDS)}")
    check.keys(event, EVENT_KEYS[kind], where="event")
    if kind == "request":
        api = check.need(event, "api", str, "event")
        if api not in REQUEST_APIS:
            check.fail("event.api", f"unknown request {api!r}; expected one of {', '.join(REQUEST_APIS)}")
        version = check.integer(event, "version", "event", "int16", low=0)
        check.form(event["body"], qualified(f"{api}Request", run.rpc_formats), version, "event.body")
    elif kind == "tick":
        now_ms = check.integer(event, "now_ms", "event", low=0)
        if now_ms < run.now_ms:
            check.fail("event.now_ms", f"the clock goes backwards: {now_ms} after {run.now_ms} (line {run.clock_line})")
        run.now_ms, run.clock_line = now_ms, check.line
    elif kind == "commit":
        offset = check.integer(event, "offset", "event", low=0)
        if offset > run.log_end:
            check.fail("event.offset", f"commits offset {offset}, beyond the log end "
                       f"({'' if run.log_end_exact else 'at most '}{run.log_end})")
        run.committed_at_most = max(run.committed_at_most, offset)
    elif kind == "failover":  # LOG-10: the log is cut back to its committed offset
        run.log_end, run.log_end_exact = min(run.log_end, run.committed_at_most), False
    return event


def _check_seq(obj: dict, event: dict, check: _Checker, run: _Run) -> int | None:
    seq = obj["seq"]
    if event["kind"] != "request":
        if seq is not None:
            check.fail("seq", f"expected null: only a request gets a sequence number, got {describe(seq)}")
        return None
    if type(seq) is not int:
        check.fail("seq", f"expected the request's sequence number {run.next_seq}, got {describe(seq)}")
    if seq != run.next_seq:
        check.fail("seq", f"expected {run.next_seq}: requests are numbered 0, 1, 2, ... in order (RPC-6), got {seq}")
    run.next_seq += 1
    run.waiting[seq] = (event["api"], event["version"])
    return seq


def _check_records(records: list, check: _Checker, run: _Run) -> None:
    for i, record in enumerate(records):
        where = f"records[{i}]"
        check.need(record, "type", str, where)
        check.keys(record, RECORD_KEYS, RECORD_OPTIONAL_KEYS, where)
        name = _record_type(record, where, check, run.formats)
        offset = check.integer(record, "offset", where, low=0)
        version = _version(record, name, where, check)
        check.form(record["data"], name, version, f"{where}.data")
        if "frame" in record:
            if _HEX.fullmatch(check.need(record, "frame", str, where)) is None:
                check.fail(f"{where}.frame", f"expected the record's bytes in lower-case hex, got {describe(record['frame'])}")
            _check_frame(record, version, f"{where}.frame", check, run)
        if offset != run.log_end if run.log_end_exact or i else offset > run.log_end:
            check.fail(f"{where}.offset", f"expected {'' if run.log_end_exact or i else 'at most '}{run.log_end}, "
                       f"the log end, got {offset}")
        run.log_end, run.log_end_exact = offset + 1, True


def _check_frame(record: dict, version: int, where: str, check: _Checker, run: _Run) -> None:
    """A record's frame says what its type, version and data say: the bytes decode (in the frame
    type and record formats of the trace's profile) to that record, at that version."""
    try:
        decoded, frame_version = decode_record(bytes.fromhex(record["frame"]), run.params)
    except FrameError as error:
        check.fail(where, f"the bytes are not a record: {error}")
    said = fast_to_json(decoded, frame_version)
    if type(decoded).__name__ != record["type"] or frame_version != version or said != record["data"]:
        check.fail(where, f"the bytes are a {type(decoded).__name__} at version {frame_version} with {canonical(said)}, "
                   f"but the record says {record['type']} at version {version} with {canonical(record['data'])}")


def _check_replies(replies: list, check: _Checker, run: _Run) -> None:
    for i, reply in enumerate(replies):
        where = f"replies[{i}]"
        check.need(reply, "seq", int, where)
        check.keys(reply, REPLY_KEYS, where=where)
        seq, api = reply["seq"], check.need(reply, "api", str, where)
        if seq not in run.waiting:
            check.fail(f"{where}.seq", f"no request numbered {seq} is waiting for its reply")
        if api != run.waiting[seq][0]:
            check.fail(f"{where}.api", f"request {seq} is a {run.waiting[seq][0]} request, the reply says {describe(api)}")
        name = qualified(f"{api}Response", run.rpc_formats)
        version = _version(reply, name, where, check)
        check.form(reply["body"], name, version, f"{where}.body")
        del run.waiting[seq]


def _check_committed(committed: Any, check: _Checker, formats: str) -> None:
    if not isinstance(committed, list):
        check.fail("committed", f"expected a list of records, got {describe(committed)}")
    for i, record in enumerate(committed):
        where = f"committed[{i}]"
        check.need(record, "type", str, where)
        check.keys(record, COMMITTED_KEYS, where=where)
        name = _record_type(record, where, check, formats)
        check.form(record["data"], name, newest_version(name), f"{where}.data")


def _record_type(record: dict, where: str, check: _Checker, formats: str) -> str:
    """The record's type, as :func:`jsonform.qualified` names it in ``formats`` (DEC-22)."""
    name = record["type"]
    names = _record_names(formats)
    if name not in names:
        check.fail(f"{where}.type", f"unknown record type {describe(name)}; expected one of {', '.join(sorted(names))}")
    return qualified(name, formats)


def _version(obj: dict, name: str, where: str, check: _Checker) -> int:
    """A message's or record's version, one its schema defines."""
    version = check.integer(obj, "version", where, "int16", low=0)
    valid = schema_of(name)["validVersions"]
    if not in_versions(valid, version):
        check.fail(f"{where}.version", f"{name} has version {valid}, not {version}")
    return version


@functools.cache
def _record_names(formats: str) -> frozenset[str]:
    return frozenset(schema["name"] for schema in record_schemas(formats).values())


def _check_step(obj: Any, n: int, check: _Checker, run: _Run) -> Step:
    kind = check.need(obj, "type", str, "")
    if kind != "step":
        check.fail("type", f"expected 'step', got {kind!r}")
    check.keys(obj, STEP_KEYS, STEP_OPTIONAL_KEYS)
    if check.need(obj, "n", int, "") != n:
        check.fail("n", f"expected step {n}, got {describe(obj['n'])} (steps must be numbered from 0, in order)")
    event = _check_event(check.need(obj, "event", dict, ""), check, run)
    seq = _check_seq(obj, event, check, run)
    records = check.need(obj, "records", list, "")
    _check_records(records, check, run)
    replies = check.need(obj, "replies", list, "")
    _check_replies(replies, check, run)
    committed = obj.get("committed")
    if committed is not None:
        _check_committed(committed, check, run.formats)
    rules = check.need(obj, "rules", list, "")
    rejected = check.need(obj, "rejected_by", list, "")
    for name, values in (("rules", rules), ("rejected_by", rejected)):
        for i, value in enumerate(values):
            if not isinstance(value, str) or not _RULE_ID.fullmatch(value):
                check.fail(f"{name}[{i}]", f"expected a rule id such as LEASE-8, got {describe(value)}")
    for i, value in enumerate(rejected):
        if value not in rules:
            check.fail(f"rejected_by[{i}]", f"{value} is not among the rules that fired")
    return Step(n, event, seq, tuple(records), tuple(replies), None if committed is None else tuple(committed),
                tuple(rules), tuple(rejected), line=check.line)


def _decode(text: str, check: _Checker) -> Any:
    """One line's JSON, or a TraceError saying why it is not usable."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as problem:
        check.fail("(line)", f"not JSON: {problem.msg} (column {problem.colno})")
    except RecursionError:
        check.fail("(line)", "not usable JSON: nested too deeply")
    except ValueError as problem:
        if _INT_DIGITS in str(problem):
            check.fail("(line)", f"not usable JSON: a number longer than {sys.get_int_max_str_digits()} digits")
        check.fail("(line)", f"not usable JSON: {problem}")


def parse(lines: Iterable[str], path: str = "<trace>") -> Trace:
    """A trace from its lines; raises TraceError (file, line, field) at the first problem."""
    header: Header | None = None
    run: _Run | None = None
    expected = 0
    steps: list[Step] = []
    number = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        check = _Checker(path, number)
        obj = _decode(text, check)
        if run is None:  # the first line: the header
            header = _check_header(obj, check)
            expected, run = obj["steps"], _Run(header)
            continue
        if len(steps) == expected:
            check.fail("(line)", f"the header announces {expected} steps; this line is one more")
        steps.append(_check_step(obj, len(steps), check, run))
    if header is None:
        raise TraceError(path, max(number, 1), "(file)", "empty: no header line")
    if len(steps) != expected:
        raise TraceError(path, 1, "steps", f"the header announces {expected} steps, the file has {len(steps)} (truncated?)")
    return Trace(header, tuple(steps))


def read(path: str | Path) -> Trace:
    """The trace in a file: UTF-8 JSON lines, each ending at a newline (a line separator inside
    a string, which canonical lines keep as it is, does not end a line)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(str(path), 0, "(file)", "no such file") from None
    except OSError as problem:
        raise TraceError(str(path), 0, "(file)", problem.strerror or str(problem)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as problem:
        line_start = data.rfind(b"\n", 0, problem.start) + 1
        raise TraceError(str(path), data.count(b"\n", 0, problem.start) + 1, "(line)",
                         f"not UTF-8 text: byte 0x{data[problem.start]:02x} at column {problem.start - line_start + 1}") from None
    return parse(text.split("\n"), str(path))


def step_error(path: str | Path | None, step: Step, problem: Exception) -> TraceError:
    """An error raised while a step was replayed, named by the step's line (for a trace made in
    memory, the line the step has when the trace is written)."""
    line = step.line if step.line is not None else step.n + 2
    return TraceError(str(path) if path else "<trace>", line, "event", f"step {step.n} ({step.event['kind']}): {problem}")


def read_all(paths: Iterable[str | Path]) -> Iterator[tuple[Path, Trace]]:
    """Every trace under the given files and directories (``*.jsonl``), in name order."""
    for given in paths:
        given = Path(given)
        files = sorted(given.glob("*.jsonl")) if given.is_dir() else [given]
        for path in files:
            yield path, read(path)
