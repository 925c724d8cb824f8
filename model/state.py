"""The model's state: the metadata image (hard state), the active controller's soft
state, and the log.

Everything is frozen. Dicts inside frozen objects are never mutated: every change
builds a new dict (``{**d, key: value}``). The hard state, :class:`MetadataImage`,
changes only by ``replay.replay`` (LOG-5); soft state (leases, responses waiting for
commit, the clock) belongs to the active controller and is never logged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from uuid import UUID

import attrs
from attrs import field, frozen

from kraftspec.generated import define
from kraftspec.spec.profiles import DEFAULT_PROFILE, Profile, ProfileError, profile_names
from kraftspec.spec.profiles import profile as profile_named

from .messages import Request, Response
from .records import NO_LEADER, BrokerEndpoint, BrokerFeature, Record
from .kafka_records import BrokerFeature as KafkaBrokerFeature
from .sessions import SessionTable

DEFAULT_CLUSTER_ID = "BzQ3d36UVz-6ojsUlsLasQ"
"""The cluster id a default configuration uses (a UUID in the text form of TOOL-2)."""

DEFAULT_HEARTBEAT_INTERVAL_MS = 3000  # LEASE-1, DEC-12
DEFAULT_SESSION_TIMEOUT_MS = 18000  # LEASE-1, DEC-12


T = TypeVar("T")
_REPLACERS: dict[type, Callable[..., Any]] = {}
_KEEP = object()


def replace(instance: T, **changes) -> T:
    """A copy of a frozen state object with some fields changed: ``attrs.evolve`` without its
    look at the class on every call, which the model would pay several times per event. Only for
    the state classes, which have no converters or validators to run."""
    replacer = _REPLACERS.get(type(instance))
    if replacer is None:
        replacer = _REPLACERS[type(instance)] = _make_replacer(type(instance))
    return replacer(instance, **changes)


def _make_replacer(cls: type) -> Callable[..., Any]:
    names = [a.name for a in attrs.fields(cls)]
    params = ", ".join(f"{n}=_KEEP" for n in names)
    namespace: dict[str, Any] = {"_KEEP": _KEEP, "_new": object.__new__, "_cls": cls}
    lines = []
    for n in names:  # a slot is set through its descriptor, which is quicker than object.__setattr__
        slot = next((c.__dict__[n] for c in cls.__mro__ if n in c.__dict__), None)
        namespace[f"_set_{n}"] = slot.__set__ if slot is not None and hasattr(slot, "__set__") else (
            lambda new, value, name=n: object.__setattr__(new, name, value))
        lines.append(f"    _set_{n}(new, o.{n} if {n} is _KEEP else {n})")
    body = "\n".join(lines)
    source = f"def replace_{cls.__name__}(o, {params}):\n    new = _new(_cls)\n{body}\n    return new\n"
    define(source, namespace, f"kraftspec.model.state replace_{cls.__name__}")  # exec, or its compiled equivalent
    return namespace[f"replace_{cls.__name__}"]


class ConfigError(ValueError):
    """A configuration value that breaks CONF-2; the message names the setting and value."""


@frozen
class FeatureRange:
    """A finalized feature and its level range (LOG-17)."""

    name: str
    min_level: int
    max_level: int


def _feature_ranges(ranges: Iterable[FeatureRange]) -> tuple[FeatureRange, ...]:
    """The finalized features as given (any iterable of them), kept as a tuple."""
    return tuple(ranges)


def _check_positive(instance, attribute, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{_setting(attribute.name)} must be a positive integer, got {value!r}")


def _setting(attribute_name: str) -> str:
    return {
        "heartbeat_interval_ms": "broker.heartbeat.interval.ms",
        "session_timeout_ms": "broker.session.timeout.ms",
    }.get(attribute_name, attribute_name)


_FEATURE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


@frozen
class Config:
    """What the controller is configured with (CONF-1): the timings, the cluster, and the
    behaviour profile it follows (profiles.toml).

    ``finalized_features`` become the bootstrap records of the log (LOG-14). ``params`` is the
    profile's parameters. Construction refuses values that break CONF-2, and an unknown profile,
    with a :class:`ConfigError`. :meth:`for_profile` gives a profile's default timings (DEC-12).
    """

    cluster_id: str = DEFAULT_CLUSTER_ID
    # LEASE-1: brokers use the heartbeat interval; the controller uses only the session timeout
    heartbeat_interval_ms: int = field(default=DEFAULT_HEARTBEAT_INTERVAL_MS, validator=_check_positive)
    session_timeout_ms: int = field(default=DEFAULT_SESSION_TIMEOUT_MS, validator=_check_positive)
    finalized_features: tuple[FeatureRange, ...] = field(
        default=(FeatureRange("metadata.format", 1, 1),), converter=_feature_ranges
    )
    profile: str = DEFAULT_PROFILE
    params: Profile = field(init=False, eq=False, repr=False)

    @classmethod
    def for_profile(cls, profile: str = DEFAULT_PROFILE, **settings: Any) -> "Config":
        """A configuration of ``profile`` with its default timings (DEC-12) and finalized features
        (DEC-23) unless ``settings`` name them."""
        try:
            params = profile_named(profile)
        except ProfileError as e:
            raise ConfigError(str(e)) from None
        interval, timeout = params.default_timings
        settings.setdefault("heartbeat_interval_ms", interval)
        settings.setdefault("session_timeout_ms", timeout)
        settings.setdefault("finalized_features", tuple(FeatureRange(*f) for f in params.default_features))
        return cls(profile=profile, **settings)

    def __attrs_post_init__(self) -> None:
        if self.profile not in profile_names():
            raise ConfigError(f"unknown profile {self.profile!r}; the profiles are {', '.join(profile_names())}")
        object.__setattr__(self, "params", profile_named(self.profile))
        # CONF-2: a broker heartbeating on time must not lose its lease between heartbeats.
        if self.session_timeout_ms <= self.heartbeat_interval_ms:
            raise ConfigError(
                f"broker.session.timeout.ms ({self.session_timeout_ms}) must be longer than "
                f"broker.heartbeat.interval.ms ({self.heartbeat_interval_ms})"
            )
        if not self.cluster_id:
            raise ConfigError("cluster.id must not be empty")
        names = [f.name for f in self.finalized_features]
        for feature in self.finalized_features:
            if not _FEATURE_NAME.match(feature.name):
                raise ConfigError(f"finalized feature name {feature.name!r} is not a feature name")
            if not 0 <= feature.min_level <= feature.max_level:
                raise ConfigError(
                    f"finalized feature {feature.name} has levels [{feature.min_level}, {feature.max_level}]; "
                    "need 0 <= min <= max"
                )
        if len(set(names)) != len(names):
            raise ConfigError(f"finalized features name a feature twice: {names}")
        if self.params.record_formats != "seed-000":  # DEC-22: Kafka's FeatureLevelRecord holds one level
            for feature in self.finalized_features:
                if feature.min_level != feature.max_level:
                    raise ConfigError(
                        f"finalized feature {feature.name} has levels [{feature.min_level}, {feature.max_level}]; "
                        f"the {self.profile} profile finalizes one level per feature (min = max)"
                    )


# ---- hard state: the metadata image ---------------------------------------------


@frozen
class BrokerRegistration:
    """A registered broker (MEM-1, REG-8)."""

    broker_id: int
    incarnation_id: UUID
    epoch: int
    end_points: tuple[BrokerEndpoint, ...] | None
    features: tuple[BrokerFeature | KafkaBrokerFeature, ...] | None  # the profile's record formats' (DEC-22)
    rack: str | None
    fenced: bool = True
    in_controlled_shutdown: bool = False  # DEC-22: recorded by the kafka profile's records only


@frozen
class Topic:
    name: str
    topic_id: UUID


@frozen
class Partition:
    """A partition (PART-1)."""

    topic_id: UUID
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0

    @property
    def key(self) -> tuple[UUID, int]:
        return (self.topic_id, self.partition_id)

    @property
    def is_reassigning(self) -> bool:
        """A reassignment is in progress (REASSIGN-4)."""
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """The reassignment's target: ``Replicas`` without ``RemovingReplicas`` (REASSIGN-4)."""
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    def names(self, broker_id: int) -> bool:
        """The partition mentions ``broker_id`` in any of its lists or as leader."""
        return (
            broker_id in self.replicas
            or broker_id in self.isr
            or broker_id in self.adding_replicas
            or broker_id in self.removing_replicas
            or broker_id == self.leader
        )


@frozen
class MetadataImage:
    """Hard state: what replaying records gives (LOG-9). Dicts are never mutated."""

    features: dict[str, FeatureRange] = field(factory=dict)
    brokers: dict[int, BrokerRegistration] = field(factory=dict)
    topics: dict[UUID, Topic] = field(factory=dict)
    partitions: dict[tuple[UUID, int], Partition] = field(factory=dict)

    def topic_named(self, name: str) -> Topic | None:
        for topic in self.topics.values():
            if topic.name == name:
                return topic
        return None

    def partitions_in_order(self) -> list[Partition]:
        """Partitions by topic name, then partition id (PART-5's partition order)."""
        names = {tid: t.name for tid, t in self.topics.items()}
        return sorted(self.partitions.values(), key=lambda p: (names.get(p.topic_id, ""), p.partition_id))

    def partitions_of(self, topic_id: UUID) -> list[Partition]:
        return sorted((p for p in self.partitions.values() if p.topic_id == topic_id), key=lambda p: p.partition_id)

    def leads_any(self, broker_id: int) -> bool:
        return any(p.leader == broker_id for p in self.partitions.values())


# ---- soft state of the active controller -------------------------------------------


@frozen
class Lease:
    """A broker's lease and what its heartbeats reported (LEASE-7, SHUT-1). Never logged."""

    last_contact_ms: int
    metadata_offset: int = -1  # the recorded CurrentMetadataOffset; -1 before the first heartbeat
    in_controlled_shutdown: bool = False
    # REG-4, DEC-6: the incarnation holds no claim on its id: its last accepted heartbeat was answered
    # ShouldShutDown, or it was fenced at a failover and this controller has not heard from it since
    # (LEASE-14), or, in the kafka profile, it has registered but not yet sent a heartbeat
    released: bool = False
    shutdown_offset: int = -1  # SHUT-3, DEC-14: the last offset of the batch that began the shutdown

    def deadline(self, session_timeout_ms: int) -> int:
        """The time the lease's period ends (LEASE-8)."""
        return self.last_contact_ms + session_timeout_ms

    def lapsed(self, now_ms: int, config: Config) -> bool:
        """LEASE-8: the lease has lapsed at ``now_ms`` (DEC-7)."""
        return lapsed(self.last_contact_ms, now_ms, config)


def lapsed(last_contact_ms: int, now_ms: int, config: Config) -> bool:
    """LEASE-8: a lease or session last renewed at ``last_contact_ms`` has lapsed at ``now_ms``: at
    its deadline or only after it, as the profile says (DEC-7)."""
    deadline = last_contact_ms + config.session_timeout_ms
    return now_ms >= deadline if config.params.lease_lapses == "at-deadline" else now_ms > deadline


# ---- the log -----------------------------------------------------------------------


@frozen
class Batch:
    """Records appended together, with consecutive offsets from ``base_offset`` (LOG-4)."""

    base_offset: int
    records: tuple[Record, ...]

    @property
    def end_offset(self) -> int:
        """One past the batch's last offset."""
        return self.base_offset + len(self.records)

    def with_offsets(self) -> list[tuple[int, Record]]:
        return [(self.base_offset + i, r) for i, r in enumerate(self.records)]


def next_offset(log_start_offset: int, batches: tuple[Batch, ...]) -> int:
    """LOG-4: the offset the next record gets: the end of the last batch, or the log start when
    there is none. A new registration's epoch is this offset, where its batch begins (REG-6,
    DEC-4); it is past every record of the log and before it, so above every earlier epoch (REG-7).

    pre: all(b.base_offset == (batches[i - 1].end_offset if i else log_start_offset) for i, b in enumerate(batches))
    post: __return__ >= log_start_offset
    post: all(b.end_offset <= __return__ for b in batches)
    """
    return batches[-1].end_offset if batches else log_start_offset


@frozen
class Snapshot:
    """The committed state at ``end_offset`` as its minimal records (LOG-11)."""

    end_offset: int
    records: tuple[Record, ...]


@frozen
class Reply:
    """A released response, with its request and the request's sequence number (RPC-6)."""

    seq: int
    request: Request
    response: Response


@frozen
class PendingReply:
    """A decided response waiting for the committed offset to reach ``release_offset`` (LOG-7)."""

    seq: int
    release_offset: int
    request: Request  # kept so that a failover can answer it NOT_CONTROLLER in its own shape
    response: Response


@frozen
class ControllerState:
    """Everything the model knows: the config, the clock, the log, hard and soft state."""

    config: Config
    now_ms: int
    image: MetadataImage  # in-memory state, uncommitted records included (LOG-5)
    committed_image: MetadataImage  # the replay of the committed records (LOG-9)
    batches: tuple[Batch, ...]  # the log from ``log_start_offset`` on
    committed_offset: int  # LOG-6
    snapshot: Snapshot | None
    leases: dict[int, Lease]
    pending: tuple[PendingReply, ...] = ()
    next_seq: int = 0
    # DEC-25, kafka profile (lease_expiry = "hash-map-scan"): Kafka's sessions per broker id and epoch,
    # and the time of the next scan for a lapsed one; empty and 0 in the kip-631 profile
    sessions: SessionTable = SessionTable()
    next_scan_ms: int = 0
    # LEASE-9, DEC-3: the offset of each broker's latest RegisterBrokerRecord, which it must apply to
    # be caught up, in the log as it stands and up to the committed offset (REG-6: a registration's
    # epoch is where its batch begins, so the two part when the batch begins with other records)
    registration_offsets: dict[int, int] = field(factory=dict)
    committed_registration_offsets: dict[int, int] = field(factory=dict)

    @property
    def log_start_offset(self) -> int:
        return self.snapshot.end_offset if self.snapshot is not None else 0

    @property
    def log_end_offset(self) -> int:
        """The offset the next record gets (LOG-4)."""
        return next_offset(self.log_start_offset, self.batches)

    def uncommitted_batches(self) -> tuple[Batch, ...]:
        return tuple(b for b in self.batches if b.base_offset >= self.committed_offset)

    def committed_batches(self) -> tuple[Batch, ...]:
        return tuple(b for b in self.batches if b.end_offset <= self.committed_offset)

    def lease(self, broker_id: int) -> Lease:
        return self.leases[broker_id]

    def registration_offset(self, broker_id: int) -> int:
        """LEASE-9: the offset of the RegisterBrokerRecord of ``broker_id``'s registration; its epoch
        for a registration whose record this state has not seen written (one built without a log)."""
        offset = self.registration_offsets.get(broker_id)
        return offset if offset is not None else self.image.brokers[broker_id].epoch

    def evolve(self, **changes) -> "ControllerState":
        return replace(self, **changes)


# The model copies its state several times a step: evolve() is the very copier that replace() would
# pick for the class, so that a copy skips replace()'s lookup of it and the two passes of the changed
# fields through a dictionary (the same copy, and the same error for an unknown field).
ControllerState.evolve = _make_replacer(ControllerState)  # type: ignore[method-assign]
