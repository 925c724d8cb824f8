"""Adapters: how the replayer talks to a system under test.

An adapter starts a fresh controller from a trace's configuration, takes one neutral event at a
time (spec/traces.md) and answers with what the controller did, in the neutral form:
``{"seq", "records": [{"offset", "type", "version", "data", "frame"}], "replies": [{"seq",
"api", "version", "body"}]}``; on request it reports its committed state as the minimal records
of LOG-11 (``[{"type", "data"}]``). The model adapter is how traces are recorded; the impl
adapter tests kraftspec's own controller; conformance/subprocess_adapter.py speaks to any
other implementation over JSON lines.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol

from kraftspec.impl import codec as impl_codec
from kraftspec.impl import messages as impl_messages
from kraftspec.impl.config import ControllerConfig
from kraftspec.impl.controller import Controller
from kraftspec.model import Commit, Config, Failover, FeatureRange, TakeSnapshot, Tick, initial_state, step
from kraftspec.model import messages as model_messages
from kraftspec.model.controller import StepResult
from kraftspec.model.formats import FORMATS as MODEL_FORMATS
from kraftspec.model.formats import record_version
from kraftspec.model.framing import encode_record as model_encode_record
from kraftspec.model.log import part_records, snapshot_parts, snapshot_records
from kraftspec.model.state import ControllerState
from kraftspec.spec.profiles import DEFAULT_PROFILE, profile, profile_names

from .jsonform import compiled_from_json, fast_from_json, fast_to_json, in_versions, newest_version, qualified, schema_of


class Adapter(Protocol):
    """What the replayer needs from a system under test."""

    name: str

    @property
    def levels(self) -> tuple[str, ...]: ...  # the comparison levels it can report (spec/traces.md), only read

    # optional: profiles: tuple[str, ...], the behaviour profiles it implements (spec/profiles.toml);
    # a trace of another profile is reported not supported. An adapter without it is given any trace.

    def start(self, config: dict[str, Any]) -> None: ...

    def step(self, event: dict[str, Any]) -> dict[str, Any]: ...

    def committed(self) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


class AdapterFailure(Exception):
    """The system under test failed to answer (crashed, hung, answered garbage); the message says how."""


def response_version(api: str, version: int, formats: str = "seed-000") -> int:
    """RPC-2: a reply is in the request's version, or in version 0 when that version is refused
    (the versions of the message formats ``formats``, DEC-9)."""
    low, _, high = schema_of(qualified(f"{api}Request", formats))["validVersions"].partition("-")
    return version if int(low) <= version <= int(high or low) else 0


def api_of(message_type: type) -> str:
    return _api_named(message_type.__name__)


def _api_named(name: str) -> str:
    """The API of the message class named ``name``: ``BrokerHeartbeatRequest`` -> ``BrokerHeartbeat``."""
    return name.removesuffix("Request").removesuffix("Response")


# ---- the model ---------------------------------------------------------------------------------


def model_config(config: dict[str, Any]) -> Config:
    """The model's configuration for a trace header's ``config``; one without a profile is of the
    default profile (spec/traces.md)."""
    return Config(
        cluster_id=config["cluster_id"],
        heartbeat_interval_ms=config["heartbeat_interval_ms"],
        session_timeout_ms=config["session_timeout_ms"],
        finalized_features=tuple(FeatureRange(name, low, high) for name, low, high in config["finalized_features"]),
        profile=config.get("profile", DEFAULT_PROFILE),
    )


def config_json(config: Config) -> dict[str, Any]:
    """The trace header's form of a model configuration, its profile always named."""
    return {
        "cluster_id": config.cluster_id,
        "heartbeat_interval_ms": config.heartbeat_interval_ms,
        "session_timeout_ms": config.session_timeout_ms,
        "finalized_features": [[f.name, f.min_level, f.max_level] for f in config.finalized_features],
        "profile": config.profile,
    }


def impl_config(config: dict[str, Any]) -> ControllerConfig:
    """impl's configuration for a trace header's ``config``, its profile included."""
    return ControllerConfig(
        cluster_id=config["cluster_id"],
        heartbeat_interval_ms=config["heartbeat_interval_ms"],
        session_timeout_ms=config["session_timeout_ms"],
        finalized_features=tuple(tuple(f) for f in config["finalized_features"]),
        profile=config.get("profile", DEFAULT_PROFILE),
    )


def make_model(path: str, kwargs: dict[str, Any]):
    formats, _, path = path.rpartition(":")  # a type of a profile's own formats (jsonform.qualified)
    top = path.split(".")[0]
    if top in model_messages.__dict__:  # a message: one class for every message formats (DEC-9)
        return (model_messages.SCHEMA_STRUCTS[path] if "." in path else getattr(model_messages, path))(**kwargs)
    say = MODEL_FORMATS[formats or "seed-000"]
    if "." in path:
        return say.structs[path.split(".")[-1]](**kwargs)
    return next(c for c in say.types.values() if c.__name__ == path)(**kwargs)


def model_event(event: dict[str, Any], formats: str = "seed-000"):
    """The model's event for a neutral event, its request in the message formats ``formats`` (a
    profile's ``rpc_formats``, DEC-9)."""
    kind = event["kind"]
    if kind == "request":
        name = qualified(f"{event['api']}Request", formats)
        request = fast_from_json(event["body"], name, make_model, event["version"])
        if event["api"] == "BrokerHeartbeat":
            from attrs import evolve

            request = evolve(request, version=event["version"])
        return request
    if kind == "tick":
        return Tick(event["now_ms"])
    if kind == "commit":
        return Commit(event["offset"])
    if kind == "failover":
        return Failover()
    return TakeSnapshot()


@functools.cache
def _request_form(class_name: str, formats: str) -> tuple[str, str]:
    """(api, schema name) of the request class named ``class_name`` in the message formats ``formats``."""
    return _api_named(class_name), qualified(class_name, formats)


def event_json(event, formats: str = "seed-000") -> dict[str, Any]:
    """The neutral form of a model event, its request in the message formats ``formats`` (DEC-9)."""
    if isinstance(event, model_messages.REQUEST_TYPES):
        version = event.version if isinstance(event, model_messages.BrokerHeartbeatRequest) else 0
        api, name = _request_form(type(event).__name__, formats)
        return {"kind": "request", "api": api, "version": version, "body": fast_to_json(event, version, name)}
    if isinstance(event, Tick):
        return {"kind": "tick", "now_ms": event.now_ms}
    if isinstance(event, Commit):
        return {"kind": "commit", "offset": event.offset}
    if isinstance(event, Failover):
        return {"kind": "failover"}
    return {"kind": "snapshot"}


class ModelAdapter:
    """The model itself: recording traces from it, or replaying them against it."""

    name = "model"
    levels: tuple[str, ...] = ("responses", "state", "records")
    profiles = profile_names()

    def __init__(self) -> None:
        self.state: ControllerState | None = None
        self.last: StepResult | None = None

    def start(self, config: dict[str, Any]) -> None:
        self.state = initial_state(model_config(config))

    def started(self) -> ControllerState:
        """The model's state in the trace being replayed; start() makes the first."""
        if self.state is None:
            raise RuntimeError("the model adapter was not started: start() comes before any event")
        return self.state

    def run(self, event) -> tuple[dict[str, Any], StepResult]:
        """Handle a model event; the neutral outputs and the model's StepResult."""
        result = step(self.started(), event)
        self.state = result.state
        self.last = result
        return outputs_of(result), result

    def step(self, event: dict[str, Any]) -> dict[str, Any]:
        return self.run(model_event(event, self.started().config.params.rpc_formats))[0]

    def committed(self) -> list[dict[str, Any]]:
        return committed_of(self.started())

    def close(self) -> None:
        self.state = None


def committed_of(state) -> list[dict[str, Any]]:
    """The neutral committed state of a model state: its minimal records (LOG-11), each in the
    version its record formats write it at (DEC-22)."""
    return [_committed_form(r) for r in snapshot_records(state.committed_image, state.config.params.record_formats)]


class CommittedForms:
    """The neutral committed states of the successive states of one model run, as committed_of
    gives them, with the forms of what did not change reused (the same objects), which a trace then
    shares among the steps that hold them. The committed image's parts (snapshot_parts: its
    features, brokers, topics and partitions) are immutable and shared by one image and the next
    while they do not change, so each part is converted once, by its identity; a new part's
    records that were seen before (a failover rebuilds the whole image; a broker unfenced keeps
    its registration) reuse their forms. Each part kept stays alive, so no other object can take
    its identity."""

    __slots__ = ("by_part", "by_record")

    def __init__(self) -> None:
        self.by_part: dict[int, tuple[object, list[dict[str, Any]]]] = {}
        self.by_record: dict[object, dict[str, Any]] = {}

    def of(self, state) -> list[dict[str, Any]]:
        say = MODEL_FORMATS[state.config.params.record_formats]
        by_part, by_record = self.by_part, self.by_record
        out: list[dict[str, Any]] = []
        for part in snapshot_parts(state.committed_image):
            entry = by_part.get(id(part))
            if entry is None:
                forms = []
                for record in part_records(part, say):
                    form = by_record.get(record)
                    if form is None:
                        form = by_record[record] = _committed_form(record)
                    forms.append(form)
                entry = by_part[id(part)] = (part, forms)
            out.extend(entry[1])
        return out


def _committed_form(record) -> dict[str, Any]:
    return {"type": type(record).__name__, "data": fast_to_json(record, record_version(record))}


@functools.cache
def _reply_form(class_name: str, version: int, rpc_formats: str) -> tuple[str, int, str]:
    """(api, version of the response, its schema name) for a reply to a request of the class named
    ``class_name`` at ``version`` in the message formats ``rpc_formats``."""
    api = _api_named(class_name)
    return api, response_version(api, version, rpc_formats), qualified(f"{api}Response", rpc_formats)


def outputs_of(result) -> dict[str, Any]:
    """The neutral outputs of a model step."""
    params = result.state.config.params
    records = []
    if result.batches:
        frame_type = params.frame_type  # DEC-10
        for batch in result.batches:
            for offset, record in batch.with_offsets():
                version = record_version(record)
                records.append({"offset": offset, "type": type(record).__name__, "version": version,
                                "data": fast_to_json(record, version),
                                "frame": model_encode_record(record, frame_type=frame_type).hex()})
    replies = []
    rpc_formats = params.rpc_formats  # DEC-9
    for reply in result.replies:
        api, version, name = _reply_form(type(reply.request).__name__, getattr(reply.request, "version", 0), rpc_formats)
        replies.append({"seq": reply.seq, "api": api, "version": version, "body": fast_to_json(reply.response, version, name)})
    return {"seq": result.seq, "records": records, "replies": replies}


# ---- impl, in process -------------------------------------------------------------------------------


@functools.cache
def impl_class(path: str) -> type:
    """impl's class for a schema path (``AlterIsrRequest.TopicData.PartitionData``), a record type
    of a profile's own formats named ``FORMATS:Name`` (jsonform.qualified)."""
    formats, _, path = path.rpartition(":")
    top, *nested = path.split(".")
    cls = impl_messages.MESSAGE_CLASSES.get(top)  # one class for every message formats (DEC-9)
    if cls is None:
        classes = impl_messages.RECORD_CLASSES_OF[formats or "seed-000"]
        cls = next(c for c in classes.values() if c.__name__ == top)
    for name in nested:
        cls = getattr(cls, name)
    return cls


def make_impl(path: str, kwargs: dict[str, Any]):
    return impl_class(path)(**kwargs)


make_impl.resolve = impl_class  # type: ignore[attr-defined]  # a function's attribute, which compiled_from_json reads


class ImplAdapter:
    """kraftspec's impl, in this process."""

    name = "impl"
    levels: tuple[str, ...] = ("responses", "state", "records")
    profiles = profile_names()  # ControllerConfig takes every profile

    def __init__(self) -> None:
        self.controller: Controller | None = None
        self.last_metrics: dict[str, int | float | None] | None = None  # METRIC-1 to METRIC-6 as the last replay ended

    def start(self, config: dict[str, Any]) -> None:
        self.controller = Controller(impl_config(config))

    def started(self) -> Controller:
        """The controller replaying the trace; start() makes it."""
        if self.controller is None:
            raise RuntimeError("the impl adapter was not started: start() comes before any event")
        return self.controller

    def handle(self, event: dict[str, Any]):
        controller = self.started()
        kind = event["kind"]
        if kind == "request":
            name = qualified(f"{event['api']}Request", controller.config.params.rpc_formats)
            return controller.handle_request(fast_from_json(event["body"], name, make_impl, event["version"]), event["version"])
        if kind == "tick":
            return controller.tick(event["now_ms"])
        if kind == "commit":
            return controller.commit(event["offset"])
        if kind == "failover":
            return controller.failover()
        return controller.take_snapshot()

    def step(self, event: dict[str, Any]) -> dict[str, Any]:
        outcome = self.handle(event)
        params = self.started().config.params
        frame_type = params.frame_type  # DEC-10
        records = [
            {"offset": base + i, "type": type(record).__name__, "version": record.record_version,
             "data": fast_to_json(record, record.record_version),
             "frame": impl_codec.encode_record(record, frame_type=frame_type).hex()}
            for base, batch in outcome.batches
            for i, record in enumerate(batch)
        ]
        rpc_formats = params.rpc_formats  # DEC-9
        replies = [
            {"seq": r.seq, "api": api_of(type(r.request)), "version": r.version,
             "body": fast_to_json(r.response, r.version, qualified(type(r.response).__name__, rpc_formats))}
            for r in outcome.replies
        ]
        return {"seq": outcome.seq, "records": records, "replies": replies}

    def committed(self) -> list[dict[str, Any]]:
        return [{"type": type(r).__name__, "data": fast_to_json(r, r.record_version)} for r in self.started().committed_records()]

    def close(self) -> None:
        if self.controller is not None:
            self.last_metrics = self.controller.metrics.values(self.controller)
        self.controller = None

    # ---- the fast path: the trace in impl's own objects --------------------------------------------

    def replay_native(self, trace, level: str, checks: list[bool]) -> int | None:
        """Replay ``trace`` comparing impl's objects with the trace's expectations, converted to impl
        objects once; the number of the first step that differs, or None (NotImplemented when a
        subclass overrides ``step``). The replayer calls this first and, only when a step differs,
        replays the generic way to report the difference."""
        if type(self).step is not ImplAdapter.step:
            return NotImplemented  # a subclass that changes step() must be replayed through it
        params = profile(trace.header.config.get("profile", DEFAULT_PROFILE))
        seen: dict = {}  # what _compile_step converted once for the whole trace
        compiled = [_compile_step(step, level, params.record_formats, params.rpc_formats, seen) for step in trace.steps]
        self.start(trace.header.config)
        controller = self.started()
        handle_request, tick, commit = controller.handle_request, controller.tick, controller.commit
        encode = controller.codec.encode  # the profile's frames (DEC-10, DEC-22), as impl writes its log

        expected_committed = None
        for n, (kind, payload, version, seq, replies, records, frames, committed) in enumerate(compiled):
            if kind == "request":
                outcome = handle_request(payload, version)
            elif kind == "tick":
                outcome = tick(payload)
            elif kind == "commit":
                outcome = commit(payload)
            elif kind == "failover":
                outcome = controller.failover()
            else:
                outcome = controller.take_snapshot()
            if outcome.seq != seq or len(outcome.replies) != len(replies):
                return n
            for reply, (reply_seq, reply_version, response) in zip(outcome.replies, replies, strict=True):
                if reply.seq != reply_seq or reply.version != reply_version or reply.response != response:
                    return n
            if frames is not None:  # the records' bytes, which say all the trace's records say
                actual = [record for _, batch in outcome.batches for record in batch]
                if len(actual) != len(frames) or [encode(r) for r in actual] != frames:
                    return n
            elif records is not None:  # a trace without frames: the records themselves
                actual = [record for _, batch in outcome.batches for record in batch]
                if actual != records:
                    return n
            if committed is not None:
                expected_committed = committed
            if checks[n] and list(controller.committed_records()) != expected_committed:
                return n
        return None


def _compile_step(step, level: str, formats: str = "seed-000", rpc_formats: str = "seed-000",
                  seen: dict | None = None):
    """A step as impl objects: (kind, payload, version, seq, replies, records, frames, committed),
    its records of the record formats ``formats`` (DEC-22), its messages of ``rpc_formats`` (DEC-9).
    ``seen`` keeps, for the trace being compiled, the committed records already converted, by the
    identity of their neutral form: a recorded trace shares one form among the committed states it
    appears in (committed_of), and the trace keeps them all alive while it is compiled. Requests and
    responses already converted are kept by their content, across traces (_once)."""
    event = step.event
    kind = event["kind"]
    version = 0
    seen = {} if seen is None else seen
    if kind == "request":
        version = event["version"]
        payload = _once(event["api"], "Request", version, rpc_formats, event["body"])
    else:
        payload = event.get("now_ms", event.get("offset"))
    replies = [(r["seq"], r["version"], _once(r["api"], "Response", r["version"], rpc_formats, r["body"]))
               for r in step.replies]
    records = frames = None
    if level == "records":
        if step.records and all("frame" in r for r in step.records):
            # a record's frame holds its type, its version and every field its version has: what
            # the record's form in the trace says (the generic replay compares those forms)
            frames = [bytes.fromhex(r["frame"]) for r in step.records]
        else:
            records = [fast_from_json(r["data"], qualified(r["type"], formats), make_impl, r["version"]) for r in step.records]
    committed = None
    if level != "responses" and step.committed is not None:
        committed = []
        for r in step.committed:
            record = seen.get(id(r))
            if record is None:
                name = qualified(r["type"], formats)
                record = seen[id(r)] = fast_from_json(r["data"], name, make_impl, newest_version(name))
            committed.append(record)
    return kind, payload, version, step.seq, replies, records, frames, committed


@functools.cache
def _to_impl(name: str, version: int, formats: str) -> Callable[[dict[str, Any]], Any]:
    """The function that builds impl's object of the message or record type ``name`` at
    ``version`` of ``formats`` from its neutral form."""
    return compiled_from_json(qualified(name, formats), version, make_impl)


MESSAGES_KEPT = 20_000
"""How many converted messages :func:`_once` keeps before it starts afresh."""

_MESSAGES: dict[tuple, Any] = {}


@functools.cache
def _flat(api: str, kind: str, version: int, rpc_formats: str) -> bool:
    """Whether the ``api`` message of ``kind`` has only scalar fields at ``version`` (no array, no
    struct): its neutral form is then a dict of hashable values."""
    fields = schema_of(qualified(api + kind, rpc_formats))["fields"]
    return not any(f["type"].startswith("[]") or "fields" in f for f in fields if in_versions(f["versions"], version))


def _once(api: str, kind: str, version: int, rpc_formats: str, body: dict[str, Any]) -> Any:
    """impl's ``api`` message of ``kind`` (Request, Response) at ``version`` from ``body``. Most
    messages say what an earlier one said, in this trace or another (a broker's heartbeat, its
    answer): a message of scalar fields only is converted once for all its equals, which share the
    object (impl never changes an object it is given, impl/messages.py, and a response is only
    compared), among the last MESSAGES_KEPT or so converted in this process."""
    if not _flat(api, kind, version, rpc_formats):
        return _to_impl(api + kind, version, rpc_formats)(body)
    key = (api, kind, version, rpc_formats, tuple(body.items()))
    message = _MESSAGES.get(key)
    if message is None:
        message = _to_impl(api + kind, version, rpc_formats)(body)
        if len(_MESSAGES) >= MESSAGES_KEPT:
            _MESSAGES.clear()
        _MESSAGES[key] = message
    return message
