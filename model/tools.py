"""Formats and checks of the operator tools seed 000 names (TOOL-1 to TOOL-5) and of its configuration (CONF-1, CONF-3, CONF-4).

Pure functions: the command-line wrappers read and write files; these decide what to
read, write and print.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from attrs import frozen

from .framing import record_schema_of, snake_case
from .messages import UnregisterBrokerRequest
from .kafka_records import BrokerFeature as KafkaBrokerFeature
from .records import BrokerFeature, Record
from .rules import cite
from .state import MetadataImage


# ---- UUID text form (TOOL-2) ------------------------------------------------------


def uuid_text(value: UUID) -> str:
    """TOOL-2: 22 characters of URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def parse_uuid_text(text: str) -> UUID | None:
    """The UUID a 22-character text form names, or None if it is not one."""
    if len(text) != 22:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError):
        return None
    return UUID(bytes=raw) if len(raw) == 16 and uuid_text(UUID(bytes=raw)) == text else None


def random_uuid_text(bits: int) -> str:
    """TOOL-2 random-uuid: the text form of the UUID made of 128 random ``bits`` (the caller draws them)."""
    cite("TOOL-2")
    return uuid_text(UUID(int=bits & ((1 << 128) - 1)))


def random_id(draw: Callable[[], int]) -> str:
    """TOOL-2 random-uuid: the text form of the first of ``draw()``'s 128-bit numbers that is not
    the zero UUID and whose text does not start with '-' (a command line would take it for an option)."""
    cite("TOOL-2")
    while True:
        text = random_uuid_text(draw())
        if not text.startswith("-") and text != uuid_text(UUID(int=0)):
            return text


# ---- meta.properties (TOOL-1) ----------------------------------------------------


@frozen
class MetaProperties:
    cluster_id: str
    node_id: int


class MetaPropertiesError(ValueError):
    """A meta.properties that a KIP-500 node refuses; the message names the file and the key."""


def render_meta_properties(meta: MetaProperties) -> str:
    """TOOL-1: version 1 of meta.properties."""
    cite("TOOL-1")
    return f"#\n#kraftspec\ncluster.id={meta.cluster_id}\nversion=1\nnode.id={meta.node_id}\n"


def parse_meta_properties(text: str, path: str, configured_node_id: int | None = None) -> MetaProperties:
    """TOOL-1: read a version 1 meta.properties, refusing what a node refuses to start with."""
    cite("TOOL-1")
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise MetaPropertiesError(f"{path}: line {line!r} is not key=value")
        values[key.strip()] = value.strip()
    if values.get("version") != "1":
        raise MetaPropertiesError(f"{path}: version is {values.get('version')!r}, expected 1")
    for key in ("cluster.id", "node.id"):
        if not values.get(key):
            raise MetaPropertiesError(f"{path}: {key} is missing")
    try:
        node_id = int(values["node.id"])
    except ValueError:
        raise MetaPropertiesError(f"{path}: node.id {values['node.id']!r} is not an integer") from None
    if configured_node_id is not None and node_id != configured_node_id:
        raise MetaPropertiesError(f"{path}: node.id {node_id} differs from the configured node.id {configured_node_id}")
    return MetaProperties(values["cluster.id"], node_id)


@frozen
class FormatPlan:
    """What ``kafka-storage format`` writes (path -> contents), skips, or why it refuses."""

    writes: dict[str, str]
    skipped: tuple[str, ...]
    error: str | None = None


def format_plan(
    directories: Mapping[str, str | None], cluster_id: str, node_id: int, ignore_formatted: bool
) -> FormatPlan:
    """TOOL-2 format: ``directories`` maps each log directory to its meta.properties text, or
    None if it has none. Formatted directories make it refuse, unless ``ignore_formatted``."""
    cite("TOOL-2")
    formatted = tuple(sorted(d for d, meta in directories.items() if meta is not None))
    if formatted and not ignore_formatted:
        return FormatPlan({}, (), f"already formatted: {', '.join(formatted)} (use --ignore-formatted to skip them)")
    contents = render_meta_properties(MetaProperties(cluster_id, node_id))
    writes = {f"{d}/meta.properties": contents for d in sorted(directories) if d not in formatted}
    return FormatPlan(writes, formatted)


# ---- the server configuration (CONF-1, CONF-4) -------------------------------------------

MAX_ID = 2**31 - 1  # node ids and voter ids are non-negative 32-bit integers (CONF-1)
ROLES = ("broker", "controller")
DEFAULT_LOG_DIR = "/tmp/kafka-logs"  # Kafka's log.dir, used when log.dirs is not set
DEFAULT_TIMEOUTS_MS = {  # CONF-1: the defaults of the timings seed 000 lists (the quorum's as Kafka ships them)
    "initial.broker.registration.timeout.ms": 60000,
    "broker.heartbeat.interval.ms": 3000,
    "broker.session.timeout.ms": 18000,
    "controller.quorum.fetch.timeout.ms": 2000,
    "controller.quorum.election.timeout.ms": 1000,
    "controller.quorum.election.backoff.max.ms": 1000,
    "controller.quorum.request.timeout.ms": 2000,
    "controller.quorum.retry.backoff.ms": 20,
    "controller.quorum.retry.backoff.max.ms": 1000,
}
MAY_BE_ZERO = ("controller.quorum.election.backoff.max.ms", "controller.quorum.retry.backoff.ms",
               "controller.quorum.retry.backoff.max.ms")  # backoffs may be zero; every other timeout is positive


@frozen
class Voter:
    """One entry of ``controller.quorum.voters``: ``id@host:port``."""

    node_id: int
    host: str
    port: int


@frozen
class Listener:
    """One entry of ``listeners``: ``NAME://host:port`` (the host may be empty: every interface)."""

    name: str
    host: str
    port: int


def parse_process_roles(text: str) -> tuple[str, ...]:
    """CONF-1: ``broker``, ``controller`` or both, comma-separated, each once; ValueError saying why not."""
    cite("CONF-1")
    roles = tuple(r.strip() for r in text.split(","))
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise ValueError(f"names the unknown role {unknown[0]!r}: the roles are broker and controller")
    if len(set(roles)) != len(roles):
        raise ValueError("names a role twice")
    return roles


def parse_id(text: str, what: str = "node id") -> int:
    """CONF-1: a non-negative 32-bit integer, in decimal."""
    value = text.strip()
    if not value.isascii() or not value.lstrip("-").isdigit():
        raise ValueError(f"is not a {what}: a {what} is an integer from 0 to {MAX_ID}")
    if not 0 <= int(value) <= MAX_ID:
        raise ValueError(f"is not a {what}: a {what} is an integer from 0 to {MAX_ID}, not {int(value)}")
    return int(value)


def _port(text: str, entry: str) -> int:
    if not text.isascii() or not text.isdigit() or not 0 <= int(text) <= 65535:
        raise ValueError(f"entry {entry!r} has the port {text!r}, which is not a port number (0 to 65535)")
    return int(text)


def _host_and_port(text: str, entry: str, empty_host: bool) -> tuple[str, int]:
    if text.startswith("["):  # an IPv6 address: [::1]:9093
        host, sep, port = text[1:].partition("]:")
        if not sep or not host:
            raise ValueError(f"entry {entry!r}: an IPv6 host is written [address]:port")
        return host, _port(port, entry)
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ValueError(f"entry {entry!r} has no port (host:port)")
    if not host and not empty_host:
        raise ValueError(f"entry {entry!r} has no host")
    if ":" in host or "@" in host or any(c.isspace() for c in host):
        raise ValueError(f"entry {entry!r} has the host {host!r}, which is not a host name")
    return host, _port(port, entry)


def _entries(text: str) -> list[str]:
    entries = [e.strip() for e in text.split(",")] if text.strip() else []
    if any(not e for e in entries):
        raise ValueError("has an empty entry (two commas in a row, or one at an end)")
    return entries


def parse_voters(text: str) -> tuple[Voter, ...]:
    """CONF-1: ``controller.quorum.voters``, ``id@host:port`` comma-separated, each id once."""
    cite("CONF-1")
    voters: list[Voter] = []
    for entry in _entries(text):
        node, sep, address = entry.partition("@")
        if not sep:
            raise ValueError(f"entry {entry!r} is not id@host:port")
        try:
            node_id = parse_id(node, "voter id")
        except ValueError as reason:
            raise ValueError(f"entry {entry!r}: {node.strip()!r} {reason}") from None
        host, port = _host_and_port(address, entry, empty_host=False)
        if any(v.node_id == node_id for v in voters):
            raise ValueError(f"names voter {node_id} twice")
        voters.append(Voter(node_id, host, port))
    return tuple(voters)


def parse_listeners(text: str) -> tuple[Listener, ...]:
    """CONF-1: ``listeners``, ``NAME://host:port`` comma-separated, each name once."""
    cite("CONF-1")
    listeners: list[Listener] = []
    for entry in _entries(text):
        name, sep, address = entry.partition("://")
        if not sep or not name or not (name.replace("_", "").isalnum() and name.isascii()):
            raise ValueError(f"entry {entry!r} is not NAME://host:port")
        host, port = _host_and_port(address, entry, empty_host=True)
        if any(listener.name == name for listener in listeners):
            raise ValueError(f"names the listener {name} twice")
        listeners.append(Listener(name, host, port))
    return tuple(listeners)


def parse_names(text: str) -> tuple[str, ...]:
    """A comma-separated list of listener names (``controller.listener.names``)."""
    return tuple(_entries(text))


def kraft_problems(
    roles: tuple[str, ...], node_id: int | None, voters: tuple[Voter, ...], listeners: tuple[Listener, ...] | None,
    controller_listener_names: tuple[str, ...],
) -> list[tuple[str, str]]:
    """CONF-4: what a process in KRaft mode (``roles`` not empty) lacks, as (key, why) pairs:
    a node id, voters, listeners (None when unset), and for a controller its listener names, each
    one of its listeners, and its own id among the voters. Empty when nothing is wrong."""
    cite("CONF-4")
    if not roles:
        return []  # legacy mode: the KRaft settings are not required
    problems = []
    if node_id is None:
        problems.append(("node.id", "is required when process.roles is set"))
    if not voters:
        problems.append(("controller.quorum.voters", f"is required for a process with the {' and '.join(roles)} role"
                                                     f"{'s' if len(roles) > 1 else ''}: it says where the controllers are"))
    if listeners is None:
        problems.append(("listeners", "is required when process.roles is set"))
    if "controller" in roles:
        if not controller_listener_names:
            problems.append(("controller.listener.names", "is required for a process with the controller role"))
        names = {listener.name for listener in listeners or ()}
        for name in controller_listener_names:
            if listeners is not None and name not in names:
                problems.append(("controller.listener.names", f"names {name}, which is not one of the listeners "
                                                              f"({', '.join(sorted(names)) or 'none'})"))
        if node_id is not None and voters and node_id not in {v.node_id for v in voters}:
            problems.append(("controller.quorum.voters", f"does not name this controller's node.id {node_id}"))
    return problems


# ---- kafka-cluster (TOOL-3) and node names (CONF-3) ----------------------------------


def unregister_command(broker_id: int) -> UnregisterBrokerRequest:
    """TOOL-3: ``kafka-cluster unregister --id N`` sends UnregisterBrokerRequest(N)."""
    cite("TOOL-3")
    return UnregisterBrokerRequest(broker_id)


def node_names(node_id: int, process_roles: str) -> list[str]:
    """CONF-3: a process is one node per role, all with the same node id (DEC-11)."""
    cite("CONF-3")
    roles = [r.strip() for r in process_roles.split(",") if r.strip()]
    if not roles or any(r not in ("broker", "controller") for r in roles) or len(set(roles)) != len(roles):
        raise ValueError(f"process.roles {process_roles!r} must be broker, controller, or broker,controller")
    if node_id < 0 or node_id > 2**31 - 1:
        raise ValueError(f"node.id {node_id} must be a non-negative 32-bit integer")
    return [f"{role}-{node_id}" for role in roles]


# ---- the metadata decoder of kafka-dump-log (TOOL-4) -----------------------------------


def _lower_camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def _record_type_name(name: str) -> str:
    return snake_case(name).upper()


def _json_value(value: Any, field: dict[str, Any]) -> Any:
    kind = field["type"]
    if value is None:
        return None
    if kind.startswith("[]"):
        return [_json_value(v, dict(field, type=kind[2:])) for v in value]
    if kind == "uuid":
        return uuid_text(value)
    if kind == "bytes":
        return base64.b64encode(value).decode("ascii")
    if "fields" in field:  # an element of an array of structs
        return _json_struct(value, field["fields"])
    return value


def _json_struct(obj: Any, fields: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for field in fields:
        value = getattr(obj, snake_case(field["name"]))
        if "tag" in field and value == _tag_default(field):
            continue  # only present tagged fields are printed
        out[_lower_camel(field["name"])] = _json_value(value, field)  # DEC-36: the schema's names
    return out


def _tag_default(field: dict[str, Any]) -> Any:
    raw = field.get("default")
    return None if raw in (None, "null") else int(raw)


def dump_payload(record: Record, version: int = 0) -> str:
    """TOOL-4: ``payload: {"type":...,"version":...,"data":...}`` as the decoder prints it."""
    cite("TOOL-4")
    cls = type(record)
    schema = record_schema_of(cls)  # the record's formats (DEC-22)
    payload = {"type": _record_type_name(schema["name"]), "version": version, "data": _json_struct(record, schema["fields"])}
    return "payload: " + json.dumps(payload, separators=(",", ":"))


# ---- the metadata shell's tree (TOOL-5) ------------------------------------------------


def metadata_tree(image: MetadataImage) -> dict[str, str]:
    """TOOL-5: the replayed state as path -> value, the files the metadata shell shows."""
    cite("TOOL-5")
    tree: dict[str, str] = {}
    for broker_id in sorted(image.brokers):
        b = image.brokers[broker_id]
        base = f"/brokers/{broker_id}"
        tree[f"{base}/incarnationId"] = uuid_text(b.incarnation_id)
        tree[f"{base}/epoch"] = str(b.epoch)
        tree[f"{base}/fenced"] = str(b.fenced).lower()
        tree[f"{base}/endpoints"] = ",".join(f"{e.name}://{e.host}:{e.port}" for e in b.end_points or ())
        tree[f"{base}/features"] = ",".join(_supported(f) for f in b.features or ())
        tree[f"{base}/rack"] = b.rack if b.rack is not None else "null"
    for name in sorted(image.features):
        f = image.features[name]
        tree[f"/features/{name}"] = f"{f.min_level}-{f.max_level}"
    for topic in sorted(image.topics.values(), key=lambda t: t.name):
        base = f"/topics/{topic.name}"
        tree[f"{base}/id"] = uuid_text(topic.topic_id)
        for p in image.partitions_of(topic.topic_id):
            at = f"{base}/{p.partition_id}"
            tree[f"{at}/replicas"] = _ids(p.replicas)
            tree[f"{at}/isr"] = _ids(p.isr)
            tree[f"{at}/addingReplicas"] = _ids(p.adding_replicas)
            tree[f"{at}/removingReplicas"] = _ids(p.removing_replicas)
            tree[f"{at}/leader"] = str(p.leader)
            tree[f"{at}/leaderEpoch"] = str(p.leader_epoch)
            tree[f"{at}/partitionEpoch"] = str(p.partition_epoch)
    return tree


def _supported(feature: BrokerFeature | KafkaBrokerFeature) -> str:
    """``name:low-high`` of a feature a broker supports, in either profile's record formats."""
    if isinstance(feature, KafkaBrokerFeature):
        return f"{feature.name}:{feature.min_supported_version}-{feature.max_supported_version}"
    return f"{feature.name}:{feature.min_version}-{feature.max_version}"


def _ids(values: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, values)) + "]"
