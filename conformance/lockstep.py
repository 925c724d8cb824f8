"""Model and impl in lockstep: the same event to both, every observable output compared.

The model is the oracle. After every event the two must agree, in the neutral form of
jsonform.py, on: the request's sequence number, the batches appended (offsets and records),
the replies released (sequence numbers and responses), and the committed state (as the
minimal records of LOG-11, a canonical listing of brokers, features, topics and partitions).
"""

from __future__ import annotations

from kraftspec.impl.config import ControllerConfig
from kraftspec.impl.controller import Controller
from kraftspec.model import Commit, Config, Failover, TakeSnapshot, Tick, initial_state, step
from kraftspec.model.log import snapshot_records
from kraftspec.model.messages import REQUEST_TYPES, BrokerHeartbeatRequest

from .adapters import make_impl
from .jsonform import from_json, qualified, schema_of, to_json


def _written_at(record) -> int:
    """The version a record is written at: its formats' (DEC-22), 0 for seed 000's records."""
    return getattr(record, "record_version", 0)


def impl_config(config: Config) -> ControllerConfig:
    return ControllerConfig(
        cluster_id=config.cluster_id,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
        session_timeout_ms=config.session_timeout_ms,
        finalized_features=tuple((f.name, f.min_level, f.max_level) for f in config.finalized_features),
        profile=config.profile,
    )


def request_version(request) -> int:
    return request.version if isinstance(request, BrokerHeartbeatRequest) else 0


def response_version(request) -> int:
    """RPC-2: a response is in the request's version, or in version 0 when that version is refused."""
    version = request_version(request)
    low, _, high = schema_of(type(request).__name__)["validVersions"].partition("-")
    return version if int(low) <= version <= int(high or low) else 0


def records_json(batches) -> list:
    return [(base, [(type(r).__name__, to_json(r, _written_at(r))) for r in records]) for base, records in batches]


class Lockstep:
    """Drive the model and impl with the same events and report where they differ."""

    def __init__(self, config: Config | None = None) -> None:
        self.config = config or Config()
        self.model = initial_state(self.config)
        self.impl = Controller(impl_config(self.config))

    def send(self, event) -> list[str]:
        """Handle ``event`` (a model event) on both sides; the list of differences (empty if they agree)."""
        result = step(self.model, event)
        self.model = result.state
        outcome = self._impl_handle(event)
        differences = []
        if result.seq != outcome.seq:
            differences.append(f"sequence number: model {result.seq}, impl {outcome.seq}")
        model_batches = records_json((b.base_offset, b.records) for b in result.batches)
        impl_batches = records_json(outcome.batches)
        if model_batches != impl_batches:
            differences.append(f"records: model {model_batches}, impl {impl_batches}")
        fmt = self.config.params.rpc_formats  # DEC-9: the replies as the profile's messages carry them
        model_replies = [(r.seq, to_json(r.response, response_version(r.request), qualified(type(r.response).__name__, fmt)))
                         for r in result.replies]
        impl_replies = [(r.seq, to_json(r.response, r.version, qualified(type(r.response).__name__, fmt))) for r in outcome.replies]
        if model_replies != impl_replies:
            differences.append(f"replies: model {model_replies}, impl {impl_replies}")
        if self.model_committed() != self.impl_committed():
            differences.append(f"committed state: model {self.model_committed()}, impl {self.impl_committed()}")
        return differences

    def _impl_handle(self, event):
        if isinstance(event, REQUEST_TYPES):
            name = qualified(type(event).__name__, self.config.params.rpc_formats)
            request = from_json(to_json(event, request_version(event), name), name, make_impl)
            return self.impl.handle_request(request, request_version(event))
        if isinstance(event, Tick):
            return self.impl.tick(event.now_ms)
        if isinstance(event, Commit):
            return self.impl.commit(event.offset)
        if isinstance(event, Failover):
            return self.impl.failover()
        if isinstance(event, TakeSnapshot):
            return self.impl.take_snapshot()
        raise TypeError(f"not an event: {event!r}")

    def model_committed(self) -> list:
        return [(type(r).__name__, to_json(r, _written_at(r))) for r in snapshot_records(self.model.committed_image, self.model.config.params.record_formats)]

    def impl_committed(self) -> list:
        return [(type(r).__name__, to_json(r, _written_at(r))) for r in self.impl.committed_records()]
