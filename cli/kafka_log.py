"""Reading metadata logs on disk: Apache Kafka's ``__cluster_metadata`` and kraftspec impl's own.

Two on-disk formats are read, told apart by their first bytes:

* **Kafka's** log segments (``00000000000000000000.log``) and snapshots
  (``<end offset>-<epoch>.checkpoint``) are sequences of record batches of format v2 ("magic 2"):
  a 61-byte header (base offset, length, partition leader epoch, magic, a CRC32C of everything
  from the attributes to the end of the batch, attributes, last offset delta, timestamps, producer
  id, epoch and sequence, record count) and the records, each framed by zigzag varints. A batch
  whose attributes have the control bit holds control records (LeaderChange, SnapshotHeader,
  SnapshotFooter, KRaftVersion, KRaftVoters); any other batch of the metadata log holds metadata
  records, whose value is a frame (frame type 1, api key, version, LOG-2) and the record in Kafka's
  flexible encoding (LOG-3).
* **kraftspec impl's** log segments (batches with the magic ``KSB1``) and snapshot files (magic
  ``KSS1``), as impl/STORAGE.md describes; each record is a frame of its profile's codec.

The record types kraftspec has schemas for are decoded into the model's record classes (through
the record formats of the profile whose frame type the record carries, DEC-10, DEC-22), and print as
TOOL-4 says. Every other Kafka type is named (``KAFKA_RECORD_TYPES``) and decoded with the small
schemas of this module where it has one, else shown as its bytes in hex.

Nothing here raises on bad input: a corrupt or truncated batch becomes a :class:`Problem` naming
the file, the byte position and what is wrong, and reading goes on with the next batch where its
length can still be trusted. The entry points are :func:`read_file`, :func:`read_directory` and
:func:`metadata_records`.
"""

from __future__ import annotations

import gzip
import json
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import crc32c as _crc32c

from kraftspec.impl.batch_format import BATCH_HEADER, BATCH_MAGIC
from kraftspec.impl.snapshot_store import SNAPSHOT_HEADER, SNAPSHOT_MAGIC
from kraftspec.model.framing import FrameError, decode_record
from kraftspec.model.tools import dump_payload, uuid_text
from kraftspec.spec.profiles import Profile, profile, profile_names

# ---- facts of Kafka's formats ---------------------------------------------------------------

KAFKA_MAGIC = 2
KAFKA_HEADER = struct.Struct(">qiibIhiqqqhii")
"""base offset, batch length, partition leader epoch, magic, CRC32C, attributes, last offset delta,
base timestamp, max timestamp, producer id, producer epoch, base sequence, record count: 61 bytes."""
KAFKA_CRC_FROM = 21  # the CRC covers the batch from the attributes to its end
KAFKA_LENGTH_FROM = 12  # the batch length counts the bytes after the length field
COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION",
                 6: "KRAFT_VOTERS"}
KAFKA_FRAME_TYPE = 1

KAFKA_RECORD_TYPES = {
    0: "RegisterBrokerRecord", 1: "UnregisterBrokerRecord", 2: "TopicRecord", 3: "PartitionRecord", 4: "ConfigRecord",
    5: "PartitionChangeRecord", 7: "FenceBrokerRecord", 8: "UnfenceBrokerRecord", 9: "RemoveTopicRecord",
    10: "DelegationTokenRecord", 11: "UserScramCredentialRecord", 12: "FeatureLevelRecord", 14: "ClientQuotaRecord",
    15: "ProducerIdsRecord", 17: "BrokerRegistrationChangeRecord", 18: "AccessControlEntryRecord",
    19: "RemoveAccessControlEntryRecord", 20: "NoOpRecord", 21: "ZkMigrationStateRecord",
    22: "RemoveUserScramCredentialRecord", 23: "BeginTransactionRecord", 24: "EndTransactionRecord",
    25: "AbortTransactionRecord", 26: "RemoveDelegationTokenRecord", 27: "RegisterControllerRecord",
}
"""Apache Kafka's metadata record types by api key."""

KAFKA_LIFECYCLE_KEYS = frozenset({0, 1, 2, 3, 5, 7, 8, 9, 12, 17})
"""The Kafka types whose bytes kraftspec's kafka record formats describe (spec/schemas/kafka-records/
and records/, DEC-22): decoded into the model's records. Kafka's PartitionRecord and
PartitionChangeRecord also have a tagged LeaderRecoveryState, which the model's schemas skip."""

KAFKA_PROFILE = "kafka"


def _f(name: str, kind: str, versions: str = "0+", **more: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "versions": versions, **more}


_ENDPOINT = [_f("Name", "string"), _f("Host", "string"), _f("Port", "uint16")]
_FEATURE = [_f("Name", "string"), _f("MinSupportedVersion", "int16"), _f("MaxSupportedVersion", "int16")]

EXTRA_SCHEMAS: dict[str, dict[str, Any]] = {
    "ConfigRecord": {"validVersions": "0", "fields": [
        _f("ResourceType", "int8"), _f("ResourceName", "string"), _f("Name", "string"),
        _f("Value", "string", nullableVersions="0+")]},
    "ProducerIdsRecord": {"validVersions": "0", "fields": [
        _f("BrokerId", "int32"), _f("BrokerEpoch", "int64"), _f("NextProducerId", "int64")]},
    "NoOpRecord": {"validVersions": "0", "fields": []},
    "BeginTransactionRecord": {"validVersions": "0", "fields": [
        _f("Name", "string", nullableVersions="0+", tag=0, taggedVersions="0+", default="null")]},
    "EndTransactionRecord": {"validVersions": "0", "fields": []},
    "AbortTransactionRecord": {"validVersions": "0", "fields": [
        _f("Reason", "string", nullableVersions="0+", tag=0, taggedVersions="0+", default="null")]},
    "RegisterControllerRecord": {"validVersions": "0", "fields": [
        _f("ControllerId", "int32"), _f("IncarnationId", "uuid"), _f("ZkMigrationReady", "bool"),
        _f("EndPoints", "[]ControllerEndpoint", fields=[*_ENDPOINT, _f("SecurityProtocol", "int16")]),
        _f("Features", "[]ControllerFeature", fields=_FEATURE)]},
}
"""Kafka record types outside the broker lifecycle that kraftspec decodes for display only, written
from Kafka's definitions (same conventions as spec/schemas/)."""

CONTROL_SCHEMAS: dict[str, dict[str, Any]] = {
    "LEADER_CHANGE": {"validVersions": "0-1", "fields": [
        _f("Version", "int16"), _f("LeaderId", "int32"),
        _f("Voters", "[]Voter", fields=[_f("VoterId", "int32"), _f("VoterDirectoryId", "uuid", "1+")]),
        _f("GrantingVoters", "[]Voter", fields=[_f("VoterId", "int32"), _f("VoterDirectoryId", "uuid", "1+")])]},
    "SNAPSHOT_HEADER": {"validVersions": "0", "fields": [_f("Version", "int16"), _f("LastContainedLogTimestamp", "int64")]},
    "SNAPSHOT_FOOTER": {"validVersions": "0", "fields": [_f("Version", "int16")]},
    "KRAFT_VERSION": {"validVersions": "0", "fields": [_f("Version", "int16"), _f("KRaftVersion", "int16")]},
    "KRAFT_VOTERS": {"validVersions": "0", "fields": [
        _f("Version", "int16"),
        _f("Voters", "[]Voter", fields=[
            _f("VoterId", "int32"), _f("VoterDirectoryId", "uuid"), _f("Endpoints", "[]Endpoint", fields=_ENDPOINT),
            _f("KRaftVersionFeature", "KRaftVersionFeature",
               fields=[_f("MinSupportedVersion", "int16"), _f("MaxSupportedVersion", "int16")])])]},
}
"""The control records of Kafka's metadata log; each value begins with its own ``Version``."""


# ---- what reading gives ----------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """Something wrong in a file: where (``position``, a byte offset into ``file``), at which log
    offset if known, in which field, and what."""

    file: str
    position: int
    message: str
    offset: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}: byte {self.position}"
        if self.offset is not None:
            where += f" (offset {self.offset})"
        if self.field is not None:
            where += f", {self.field}"
        return f"{where}: {self.message}"

    def as_json(self) -> dict[str, Any]:
        return {"file": self.file, "position": self.position, "offset": self.offset, "field": self.field, "message": self.message}


@dataclass
class Entry:
    """One record of a batch. ``record`` is the model's record for the broker-lifecycle types
    kraftspec has schemas for; ``data`` the record's fields as TOOL-4 prints them (None when only
    its bytes, ``payload``, are known)."""

    offset: int
    position: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    kind: str = "metadata"  # "metadata" or "control"
    type_name: str | None = None  # TopicRecord, ..., or a control type (LEADER_CHANGE)
    api_key: int | None = None
    version: int | None = None
    record: Any = None
    data: dict[str, Any] | None = None
    payload: bytes | None = None  # the record's bytes after its frame, when not decoded
    note: str | None = None  # why the fields are not decoded
    frame_type: int | None = None  # the frame type a kraftspec impl frame begins with (DEC-10)

    def payload_json(self) -> dict[str, Any]:
        """TOOL-4's ``{"type":...,"version":...,"data":...}``; ``hex`` in place of ``data`` when
        only the bytes are known."""
        name = _upper_snake(self.type_name) if self.kind == "metadata" and self.type_name else (self.type_name or "UNKNOWN")
        out: dict[str, Any] = {"type": name, "version": self.version}
        if self.data is not None:
            out["data"] = self.data
        else:
            out["hex"] = (self.payload if self.payload is not None else self.value or b"").hex()
            if self.note:
                out["note"] = self.note
        return out

    def payload_line(self) -> str:
        if self.record is not None:
            return dump_payload(self.record, self.version or 0)  # TOOL-4, the model's formatter
        label = "payload" if self.kind == "metadata" else "control"
        return f"{label}: " + json.dumps(self.payload_json(), separators=(",", ":"))


@dataclass
class Batch:
    """One batch of a file, with its header's fields."""

    file: str
    position: int
    size: int
    format: str  # "kafka" or "kraftspec"
    base_offset: int
    count: int
    crc: int
    crc_valid: bool
    last_offset_delta: int = 0
    partition_leader_epoch: int = -1
    magic: int = KAFKA_MAGIC
    attributes: int = 0
    base_timestamp: int = -1
    max_timestamp: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    entries: list[Entry] = field(default_factory=list)

    @property
    def last_offset(self) -> int:
        return self.base_offset + (self.last_offset_delta if self.format == "kafka" else self.count - 1)

    @property
    def compression(self) -> str:
        return COMPRESSION.get(self.attributes & 0x07, f"unknown ({self.attributes & 0x07})")

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    def metadata_line(self) -> str:
        if self.format != "kafka":
            return (f"baseOffset: {self.base_offset} lastOffset: {self.last_offset} count: {self.count} position: {self.position} "
                    f"size: {self.size} magic: KSB1 crc: {self.crc} isvalid: {str(self.crc_valid).lower()}")
        last_sequence = self.base_sequence + self.last_offset_delta if self.base_sequence >= 0 else -1
        stamp = "LogAppendTime" if self.attributes & 0x08 else "CreateTime"
        return (f"baseOffset: {self.base_offset} lastOffset: {self.last_offset} count: {self.count} "
                f"baseSequence: {self.base_sequence} lastSequence: {last_sequence} producerId: {self.producer_id} "
                f"producerEpoch: {self.producer_epoch} partitionLeaderEpoch: {self.partition_leader_epoch} "
                f"isTransactional: {str(self.is_transactional).lower()} isControl: {str(self.is_control).lower()} "
                f"position: {self.position} {stamp}: {self.max_timestamp} size: {self.size} magic: {self.magic} "
                f"compresscodec: {self.compression} crc: {self.crc} isvalid: {str(self.crc_valid).lower()}")

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "position": self.position, "size": self.size, "format": self.format,
                               "baseOffset": self.base_offset, "lastOffset": self.last_offset, "count": self.count,
                               "crc": self.crc, "isValid": self.crc_valid}
        if self.format == "kafka":
            out.update({"partitionLeaderEpoch": self.partition_leader_epoch, "magic": self.magic,
                        "compression": self.compression, "isControl": self.is_control,
                        "isTransactional": self.is_transactional, "producerId": self.producer_id,
                        "producerEpoch": self.producer_epoch, "baseSequence": self.base_sequence,
                        "baseTimestamp": self.base_timestamp, "maxTimestamp": self.max_timestamp})
        return out


@dataclass
class FileRead:
    """What reading one file gave. ``kind`` is ``kafka-log``, ``kafka-snapshot``,
    ``kraftspec-log``, ``kraftspec-snapshot``, ``empty`` or ``unknown``."""

    path: str
    kind: str
    batches: list[Batch] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    end_offset: int | None = None  # a snapshot's end offset, from its name (Kafka) or header (kraftspec)

    @property
    def is_snapshot(self) -> bool:
        return self.kind.endswith("snapshot")


# ---- small decoding helpers --------------------------------------------------------------------


class _Bad(Exception):
    """Bytes that cannot be read; ``position`` is a byte offset into the file."""

    def __init__(self, position: int, message: str, field_name: str | None = None):
        super().__init__(message)
        self.position = position
        self.message = message
        self.field = field_name


def _upper_snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def _lower_camel(name: str) -> str:
    return name[:1].lower() + name[1:]


class _Cursor:
    """Reads ``data[pos:end]``; ``base`` is added to positions so that errors name the file's bytes."""

    def __init__(self, data: bytes, pos: int, end: int, base: int = 0):
        self.data, self.pos, self.end, self.base = data, pos, end, base

    def left(self) -> int:
        return self.end - self.pos

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or n > self.left():
            raise _Bad(self.base + self.pos, f"{what} needs {n} bytes, {self.left()} left", what)
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def uvarint(self, what: str, max_bytes: int = 5) -> int:
        start, value = self.pos, 0
        for i in range(max_bytes):
            if self.pos >= self.end:
                raise _Bad(self.base + start, f"{what}: the varint runs past the end", what)
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                return value
        raise _Bad(self.base + start, f"{what}: a varint longer than {max_bytes} bytes", what)

    def varint(self, what: str, max_bytes: int = 5) -> int:
        raw = self.uvarint(what, max_bytes)
        return (raw >> 1) ^ -(raw & 1)

    def fixed(self, fmt: str, what: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]


def _in_versions(spec: str, version: int) -> bool:
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    low, _, high = spec.partition("-")
    return int(low) <= version <= int(high or low)


_FIXED = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint16": ">H", "float64": ">d"}


def _decode_fields(cur: _Cursor, fields: list[dict[str, Any]], version: int, where: str) -> dict[str, Any]:
    """A struct of a schema in Kafka's flexible encoding, as JSON (TOOL-4's spelling: lower camel
    case names, UUIDs in their text form, only present tagged fields)."""
    out: dict[str, Any] = {}
    tagged: dict[int, dict[str, Any]] = {}
    for f in fields:
        if not _in_versions(f["versions"], version):
            continue
        if "tag" in f:
            tagged[f["tag"]] = f
            continue
        out[_lower_camel(f["name"])] = _decode_value(cur, f, version, f"{where}.{f['name']}")
    for _ in range(cur.uvarint(f"{where} tagged field count")):
        tag = cur.uvarint(f"{where} tag")
        size = cur.uvarint(f"{where} tag {tag} size")
        start = cur.pos
        cur.take(size, f"{where} tag {tag}")
        if tag in tagged:
            inner = _Cursor(cur.data, start, start + size, cur.base)
            out[_lower_camel(tagged[tag]["name"])] = _decode_value(inner, tagged[tag], version, where)
    return out


def _decode_value(cur: _Cursor, f: dict[str, Any], version: int, where: str) -> Any:
    kind = f["type"]
    nullable = "nullableVersions" in f and _in_versions(f["nullableVersions"], version)
    if kind.startswith("[]"):
        n = cur.uvarint(f"{where} length")
        if n == 0:
            if not nullable:
                raise _Bad(cur.base + cur.pos - 1, f"{where}: null, but the field is not nullable", where)
            return None
        element = {k: v for k, v in f.items() if k not in ("nullableVersions", "tag", "taggedVersions", "default")}
        element["type"] = kind[2:]
        return [_decode_value(cur, element, version, where) for _ in range(n - 1)]
    if kind in _FIXED:
        return cur.fixed(_FIXED[kind], where)
    if kind == "bool":
        return cur.take(1, where)[0] != 0
    if kind == "uuid":
        return uuid_text(UUID(bytes=cur.take(16, where)))
    if kind in ("string", "bytes"):
        n = cur.uvarint(f"{where} length")
        if n == 0:
            if not nullable:
                raise _Bad(cur.base + cur.pos - 1, f"{where}: null, but the field is not nullable", where)
            return None
        raw = cur.take(n - 1, where)
        if kind == "bytes":
            return raw.hex()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _Bad(cur.base + cur.pos - len(raw), f"{where}: not UTF-8", where) from None
    return _decode_fields(cur, f["fields"], version, where)


def _decode_with(schema: dict[str, Any], data: bytes, start: int, version: int, base: int, where: str) -> dict[str, Any]:
    cur = _Cursor(data, start, len(data), base)
    out = _decode_fields(cur, schema["fields"], version, where)
    if cur.left():
        raise _Bad(base + cur.pos, f"{where}: {cur.left()} bytes left after the record", where)
    return out


def _model_payload(record: Any, version: int) -> dict[str, Any]:
    line = dump_payload(record, version)
    return json.loads(line[len("payload: "):])["data"]


_PROFILES_BY_FRAME_TYPE: dict[int, Profile] = {}


def profile_of_frame_type(frame_type: int) -> Profile | None:
    """The profile whose records begin with ``frame_type`` (DEC-10), or None."""
    if not _PROFILES_BY_FRAME_TYPE:
        for name in profile_names():
            _PROFILES_BY_FRAME_TYPE.setdefault(profile(name).frame_type, profile(name))
    return _PROFILES_BY_FRAME_TYPE.get(frame_type)


# ---- metadata record values -------------------------------------------------------------------


def decode_kafka_value(entry: Entry, value: bytes, base: int) -> None:
    """Fill ``entry`` from a Kafka metadata record's value (LOG-2's frame, then the record); raises
    :class:`_Bad` for bytes that are no record."""
    cur = _Cursor(value, 0, len(value), base)
    frame_type = cur.uvarint("frame type")
    if frame_type != KAFKA_FRAME_TYPE:
        raise _Bad(base, f"frame type {frame_type}, Kafka's records have {KAFKA_FRAME_TYPE}", "frame type")
    api_key = cur.uvarint("record type")
    version = cur.uvarint("record version")
    entry.api_key, entry.version = api_key, version
    entry.type_name = KAFKA_RECORD_TYPES.get(api_key)
    start = cur.pos
    entry.payload = value[start:]
    if entry.type_name is None:
        entry.type_name = f"UnknownRecord{api_key}"
        entry.note = f"api key {api_key} is not one of Kafka's record types"
        return
    if api_key in KAFKA_LIFECYCLE_KEYS:
        try:
            record, version = decode_record(value, profile(KAFKA_PROFILE))
        except FrameError as e:
            if "has no version" in e.problem:
                entry.note = f"{entry.type_name} version {version} is not in kraftspec's schemas"
                return
            raise _Bad(base + e.offset, e.problem, entry.type_name) from None
        entry.record, entry.data = record, _model_payload(record, version)
        return
    schema = EXTRA_SCHEMAS.get(entry.type_name)
    if schema is None:
        entry.note = f"kraftspec has no schema for {entry.type_name}"
        return
    if not _in_versions(schema["validVersions"], version):
        entry.note = f"{entry.type_name} version {version} is not in kraftspec's schemas"
        return
    entry.data = _decode_with(schema, value, start, version, base, entry.type_name)


def decode_control(entry: Entry, key: bytes | None, value: bytes | None, key_at: int, value_at: int) -> None:
    """Fill ``entry`` from a control record: its key (version, type) and value."""
    entry.kind = "control"
    if key is None or len(key) < 4:
        raise _Bad(key_at, f"a control record's key has {0 if key is None else len(key)} bytes, needs 4", "key")
    control_type = struct.unpack(">h", key[2:4])[0]
    entry.type_name = CONTROL_TYPES.get(control_type, f"UNKNOWN_CONTROL_{control_type}")
    entry.payload = value
    schema = CONTROL_SCHEMAS.get(entry.type_name)
    if value is None or len(value) < 2:
        raise _Bad(value_at, f"{entry.type_name}: a control record's value needs at least 2 bytes", "value")
    entry.version = struct.unpack(">h", value[:2])[0]
    if schema is None:
        entry.note = f"no schema for control type {entry.type_name}"
        return
    if not _in_versions(schema["validVersions"], entry.version):
        entry.note = f"{entry.type_name} version {entry.version} is not known"
        return
    entry.data = _decode_with(schema, value, 0, entry.version, value_at, entry.type_name)


def decode_frame(entry: Entry, frame: bytes, base: int, params: Profile | None = None) -> None:
    """Fill ``entry`` from a kraftspec impl frame: decoded in ``params``'s formats, or in those of
    the profile whose frame type it carries."""
    cur = _Cursor(frame, 0, len(frame), base)
    frame_type = entry.frame_type = cur.uvarint("frame type")
    entry.api_key = cur.uvarint("record type")
    entry.version = cur.uvarint("record version")
    entry.payload = frame[cur.pos:]
    chosen = params if params is not None else profile_of_frame_type(frame_type)
    if chosen is None:
        raise _Bad(base, f"frame type {frame_type} is no profile's", "frame type")
    try:
        record, version = decode_record(frame, chosen)
    except FrameError as e:
        raise _Bad(base + e.offset, e.problem, "frame") from None
    entry.type_name = type(record).__name__
    entry.record, entry.version, entry.data = record, version, _model_payload(record, version)


# ---- Kafka's record batches --------------------------------------------------------------------


def _kafka_records(batch: Batch, data: bytes, start: int, end: int, base: int, problems: list[Problem], path: str) -> None:
    """The records of a batch: ``data[start:end]``, whose byte 0 is file byte ``base``."""
    cur = _Cursor(data, start, end, base)
    for index in range(batch.count):
        at = cur.pos
        offset = batch.base_offset
        try:
            if cur.left() <= 0:
                raise _Bad(base + at, f"the batch holds {index} records, its header says {batch.count}", "recordsCount")
            length = cur.varint("record length")
            body_start = cur.pos
            if length < 0 or length > cur.left():
                raise _Bad(base + at, f"record {index} claims {length} bytes, {cur.left()} left in the batch", "length")
            rec = _Cursor(data, body_start, body_start + length, base)
            rec.take(1, "attributes")
            timestamp_delta = rec.varint("timestampDelta", 10)
            offset_delta = rec.varint("offsetDelta")
            offset = batch.base_offset + offset_delta
            key_length = rec.varint("keyLength")
            key_at = base + rec.pos
            key = None if key_length < 0 else rec.take(key_length, "key")
            value_length = rec.varint("valueLength")
            value_at = base + rec.pos
            value = None if value_length < 0 else rec.take(value_length, "value")
            headers = []
            for _ in range(rec.varint("header count")):
                name = rec.take(rec.varint("header key length"), "header key").decode("utf-8", "replace")
                n = rec.varint("header value length")
                headers.append((name, None if n < 0 else rec.take(n, "header value")))
            if rec.left():
                raise _Bad(base + rec.pos, f"{rec.left()} bytes left inside record {index}", "length")
            cur.pos = body_start + length
            entry = Entry(offset, base + at, batch.base_timestamp + timestamp_delta, key, value, tuple(headers))
            batch.entries.append(entry)
            try:
                if batch.is_control:
                    decode_control(entry, key, value, key_at, value_at)
                elif value is None:
                    raise _Bad(value_at, "a metadata record with a null value", "value")
                else:
                    decode_kafka_value(entry, value, value_at)
            except _Bad as bad:
                entry.note = bad.message
                problems.append(Problem(path, bad.position, bad.message, offset, bad.field))
        except _Bad as bad:
            problems.append(Problem(path, bad.position, bad.message, offset, bad.field))
            return
    if cur.left():
        problems.append(Problem(path, base + cur.pos, f"{cur.left()} bytes follow the last of the {batch.count} records",
                                batch.base_offset, "length"))


def read_kafka(path: str, data: bytes, kind: str) -> FileRead:
    """Kafka's record batches v2 in ``data``, the bytes of the file ``path``."""
    out = FileRead(path, kind)
    pos, size = 0, len(data)
    while pos < size:
        if size - pos < KAFKA_LENGTH_FROM:
            if not any(data[pos:]):  # a preallocated tail of zeros ends the log
                break
            out.problems.append(Problem(path, pos, f"truncated: {size - pos} bytes remain, fewer than a batch's base offset and length"))
            break
        base_offset, length = struct.unpack_from(">qi", data, pos)
        if base_offset == 0 and length == 0 and not any(data[pos:pos + 64]):
            break  # zeros after the last batch
        total = KAFKA_LENGTH_FROM + length
        if length < KAFKA_HEADER.size - KAFKA_LENGTH_FROM:
            out.problems.append(Problem(path, pos + 8, f"batch length {length} is shorter than a batch header; "
                                        "the rest of the file cannot be framed", base_offset, "batchLength"))
            break
        if pos + total > size:
            out.problems.append(Problem(path, pos, f"truncated: the batch claims {total} bytes, {size - pos} remain",
                                        base_offset, "batchLength"))
            break
        (base_offset, length, leader_epoch, magic, crc, attributes, last_delta, base_ts, max_ts, producer_id,
         producer_epoch, base_sequence, count) = KAFKA_HEADER.unpack_from(data, pos)
        crc &= 0xFFFFFFFF
        if magic != KAFKA_MAGIC:
            out.problems.append(Problem(path, pos + 16, f"magic {magic}, this reader reads record batches of magic {KAFKA_MAGIC}",
                                        base_offset, "magic"))
            pos += total
            continue
        computed = _crc32c.crc32c(data[pos + KAFKA_CRC_FROM:pos + total])
        batch = Batch(path, pos, total, "kafka", base_offset, count, crc, computed == crc, last_delta, leader_epoch, magic,
                      attributes, base_ts, max_ts, producer_id, producer_epoch, base_sequence)
        out.batches.append(batch)
        if computed != crc:
            out.problems.append(Problem(path, pos + 17, f"CRC32C mismatch: stored {crc}, computed {computed}; "
                                        "the batch's records are not read", base_offset, "crc"))
        elif count < 0 or last_delta < 0:
            out.problems.append(Problem(path, pos + 23, f"record count {count}, last offset delta {last_delta}", base_offset,
                                        "recordsCount"))
        else:
            codec = attributes & 0x07
            if codec == 0:
                _kafka_records(batch, data, pos + KAFKA_HEADER.size, pos + total, 0, out.problems, path)
            elif codec == 1:
                try:
                    inflated = gzip.decompress(data[pos + KAFKA_HEADER.size:pos + total])
                except (OSError, EOFError, zlib.error) as e:
                    out.problems.append(Problem(path, pos + KAFKA_HEADER.size, f"gzip: {e}", base_offset, "records"))
                else:  # positions inside inflated records are given as the batch's records' start
                    _kafka_records(batch, inflated, 0, len(inflated), pos + KAFKA_HEADER.size, out.problems, path)
            else:
                out.problems.append(Problem(path, pos + 21, f"compression {batch.compression} is not supported "
                                            "(the metadata log is normally uncompressed; gzip is read)", base_offset,
                                            "attributes"))
        pos += total
    return out


# ---- kraftspec impl's files -------------------------------------------------------------------


def _read_ksb(path: str, data: bytes, pos: int, end: int, out: FileRead, params: Profile | None) -> None:
    """kraftspec impl's batches (magic KSB1) in ``data[pos:end]``."""
    while pos < end:
        if end - pos < BATCH_HEADER.size:
            out.problems.append(Problem(path, pos, f"truncated: {end - pos} bytes remain, fewer than a {BATCH_HEADER.size}-byte batch header"))
            return
        magic, crc, base_offset, count, length = BATCH_HEADER.unpack_from(data, pos)
        if magic != BATCH_MAGIC:
            out.problems.append(Problem(path, pos, f"bad magic {magic!r}, expected {BATCH_MAGIC!r}; the rest of the file cannot be framed",
                                        None, "magic"))
            return
        total = BATCH_HEADER.size + length
        if length < 0 or pos + total > end:
            out.problems.append(Problem(path, pos, f"truncated: the batch claims a {length}-byte payload, {end - pos - BATCH_HEADER.size} bytes remain",
                                        base_offset, "length"))
            return
        computed = zlib.crc32(data[pos + 8:pos + total])
        batch = Batch(path, pos, total, "kraftspec", base_offset, count, crc, computed == crc, magic=0)
        out.batches.append(batch)
        if computed != crc:
            out.problems.append(Problem(path, pos + 4, f"CRC-32 mismatch: stored {crc}, computed {computed}; the batch's records are not read",
                                        base_offset, "crc"))
        else:
            cur = _Cursor(data, pos + BATCH_HEADER.size, pos + total)
            try:
                for index in range(count):
                    at = cur.pos
                    size = cur.uvarint("frame length")
                    frame_at = cur.pos
                    frame = cur.take(size, "frame")
                    entry = Entry(base_offset + index, at, -1, None, frame)
                    batch.entries.append(entry)
                    try:
                        decode_frame(entry, frame, frame_at, params)
                    except _Bad as bad:
                        entry.note = bad.message
                        out.problems.append(Problem(path, bad.position, bad.message, base_offset + index, bad.field))
                if cur.left():
                    raise _Bad(cur.pos, f"{cur.left()} bytes follow the last of the {count} records", "length")
            except _Bad as bad:
                out.problems.append(Problem(path, bad.position, bad.message, base_offset, bad.field))
        pos += total


def read_kraftspec_snapshot(path: str, data: bytes, params: Profile | None) -> FileRead:
    out = FileRead(path, "kraftspec-snapshot")
    if len(data) < SNAPSHOT_HEADER.size:
        out.problems.append(Problem(path, 0, f"truncated: {len(data)} bytes, shorter than the {SNAPSHOT_HEADER.size}-byte header"))
        return out
    _, crc, version, end_offset, record_count, data_length = SNAPSHOT_HEADER.unpack_from(data, 0)
    out.end_offset = end_offset
    if zlib.crc32(data[8:SNAPSHOT_HEADER.size]) != crc:
        out.problems.append(Problem(path, 4, "header CRC-32 mismatch", None, "crc"))
        return out
    if SNAPSHOT_HEADER.size + data_length != len(data):
        out.problems.append(Problem(path, 26, f"the header promises {data_length} bytes of batches, the file holds "
                                    f"{len(data) - SNAPSHOT_HEADER.size}", None, "data length"))
    _read_ksb(path, data, SNAPSHOT_HEADER.size, min(len(data), SNAPSHOT_HEADER.size + max(data_length, 0)), out, params)
    held = sum(b.count for b in out.batches)
    if not out.problems and held != record_count:
        out.problems.append(Problem(path, 18, f"the header promises {record_count} records, the file holds {held}", None, "record count"))
    return out


# ---- files and directories ---------------------------------------------------------------------

_CHECKPOINT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SEGMENT = re.compile(r"^(\d{20})\.log$")
_KRAFTSPEC_SNAPSHOT = re.compile(r"^(\d{20})\.snapshot$")


def file_kind(path: Path, head: bytes) -> str:
    """What a file is, by its first bytes (and, for Kafka's files, its name)."""
    if not head:
        return "empty"
    if head.startswith(BATCH_MAGIC):
        return "kraftspec-log"
    if head.startswith(SNAPSHOT_MAGIC):
        return "kraftspec-snapshot"
    if len(head) > 16 and head[16] == KAFKA_MAGIC:
        return "kafka-snapshot" if path.name.endswith(".checkpoint") else "kafka-log"
    return "unknown"


def read_file(path: str | Path, params: Profile | None = None) -> FileRead:
    """Read one segment or snapshot file of either format. ``params`` decides how kraftspec
    impl's frames are decoded (by default, by the frame type each carries)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        return FileRead(str(p), "unknown", problems=[Problem(str(p), 0, f"cannot read the file: {e.strerror or e}")])
    kind = file_kind(p, data[:17])
    if kind == "empty":
        return FileRead(str(p), kind)
    if kind == "kraftspec-log":
        out = FileRead(str(p), kind)
        _read_ksb(str(p), data, 0, len(data), out, params)
        return out
    if kind == "kraftspec-snapshot":
        return read_kraftspec_snapshot(str(p), data, params)
    if kind.startswith("kafka"):
        out = read_kafka(str(p), data, kind)
        match = _CHECKPOINT.match(p.name)
        if match:
            out.end_offset = int(match.group(1))
        return out
    return FileRead(str(p), "unknown", problems=[Problem(str(p), 0, "neither a Kafka record batch file (magic 2 at byte 16) "
                                                          "nor a kraftspec log segment (KSB1) or snapshot (KSS1)")])


@dataclass
class MetadataLog:
    """A metadata log directory as read: its segments in offset order and its snapshots by end offset."""

    directory: str
    format: str  # "kafka" or "kraftspec"
    segments: list[FileRead]
    snapshots: list[FileRead]
    problems: list[Problem]

    def log_batches(self) -> Iterator[Batch]:
        for segment in self.segments:
            yield from segment.batches

    @property
    def log_start_offset(self) -> int | None:
        for batch in self.log_batches():
            return batch.base_offset
        return None


class NotAMetadataLog(ValueError):
    """A path that holds no metadata log; the message names it and says what was expected."""


def read_directory(directory: str | Path, params: Profile | None = None) -> MetadataLog:
    """Read every log segment and snapshot of a metadata log directory: Kafka's
    ``__cluster_metadata-0`` (``*.log`` and ``*.checkpoint``; its producer-state ``*.snapshot``
    files are not metadata and are left alone) or kraftspec impl's (``*.log`` and ``*.snapshot``, in
    one folder, or in ``log/`` and ``snapshots/`` of the folder impl's ``Controller.open`` was given).
    Raises :class:`NotAMetadataLog` for a path that is not such a directory."""
    d = Path(directory)
    if not d.is_dir():
        raise NotAMetadataLog(f"{d}: not a directory")
    log_dir, snapshot_dir = d, d
    if (d / "log").is_dir() and not any(_SEGMENT.match(p.name) for p in d.iterdir()):
        log_dir, snapshot_dir = d / "log", d / "snapshots"  # the folder impl's Controller.open is given
    segments = sorted((p for p in log_dir.iterdir() if _SEGMENT.match(p.name)), key=lambda p: p.name)
    checkpoints = sorted((p for p in log_dir.iterdir() if _CHECKPOINT.match(p.name)), key=lambda p: p.name)
    kss = sorted((p for p in snapshot_dir.iterdir() if _KRAFTSPEC_SNAPSHOT.match(p.name)), key=lambda p: p.name) \
        if snapshot_dir.is_dir() else []
    if not segments and not checkpoints and not kss:
        raise NotAMetadataLog(f"{d}: no metadata log segments (*.log) or snapshots (*.checkpoint, *.snapshot) in it")
    reads = [read_file(p, params) for p in segments]
    kinds = {r.kind for r in reads} - {"empty"}
    fmt = "kafka" if checkpoints or any(k.startswith("kafka") for k in kinds) else "kraftspec"
    if fmt == "kafka":
        snapshots = [read_file(p, params) for p in checkpoints]  # *.snapshot here: producer state, not metadata
    else:
        snapshots = [r for r in (read_file(p, params) for p in kss)]
    problems = [pr for r in reads + snapshots for pr in r.problems]
    for r in reads + snapshots:
        if r.kind not in ("empty", "unknown") and not r.kind.startswith(fmt):
            problems.append(Problem(r.path, 0, f"a {r.kind} file in a {fmt} metadata log directory"))
    return MetadataLog(str(d), fmt, reads, sorted(snapshots, key=lambda s: s.end_offset or 0), problems)


def metadata_records(directory: str | Path, params: Profile | None = None) -> Iterator[tuple[int, Any, int]]:
    """``(offset, record, version)`` for every metadata record of the log segments of a Kafka or
    kraftspec metadata log directory, in offset order; control records are left out. ``record`` is
    the model's record (kraftspec.model.records, kafka_records) for the broker-lifecycle types,
    else the :class:`Entry` itself (its ``type_name``, ``data`` or ``payload``). Records of
    batches that failed their CRC are not yielded; :func:`read_directory` reports them."""
    log = read_directory(directory, params)
    for batch in log.log_batches():
        for entry in batch.entries:
            if entry.kind == "metadata" and entry.version is not None:
                yield entry.offset, entry.record if entry.record is not None else entry, entry.version
