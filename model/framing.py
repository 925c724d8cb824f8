"""The frame and payload encoding of metadata records (LOG-2, LOG-3).

Driven by the schemas in spec/schemas/records/, so the encoding follows the schema's
field order, types, versions, tags and defaults. Written for clarity: impl/ has the
production codec; this one is the reference it is compared with.
"""

from __future__ import annotations

import functools
import re
import struct
from typing import Any
from uuid import UUID

from kraftspec.spec.profiles import Profile, profile
from kraftspec.spec.schemas import record_schema, record_schemas

from .formats import FORMATS, record_version
from .records import Record
from .rules import cite

FRAME_TYPE = profile().frame_type  # DEC-10: seed 000's "currently 0"; the kafka profile's is Kafka's 1
MAX_VARINT_BYTES = 5
MAX_UVARINT = 2**32 - 1  # DEC-32

_FIXED = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint16": ">H", "float64": ">d"}


class FrameError(ValueError):
    """Bytes that are not a valid record frame; ``offset`` is where decoding failed."""

    def __init__(self, offset: int, problem: str):
        super().__init__(f"byte {offset}: {problem}")
        self.offset = offset
        self.problem = problem


@functools.cache
def snake_case(name: str) -> str:
    """A schema field name in the model's spelling: ``BrokerEpoch`` -> ``broker_epoch``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@functools.cache
def _in_versions(spec: str, version: int) -> bool:
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    low, _, high = spec.partition("-")
    return int(low) <= version <= int(high or low)


@functools.cache
def _nullable(spec: str | None, version: int) -> bool:
    """Whether a field whose ``nullableVersions`` is ``spec`` may be null at ``version``: only
    where the schema says so (LOG-3); a field without ``nullableVersions`` never is."""
    return spec is not None and _in_versions(spec, version)


def _element(field: dict[str, Any]) -> dict[str, Any]:
    """The field of one element of an array field: the element type, never null (LOG-3)."""
    element = {k: v for k, v in field.items() if k not in ("nullableVersions", "tag", "taggedVersions", "default")}
    element["type"] = field["type"][2:]
    return element


def _default(field: dict[str, Any]) -> Any:
    raw = field.get("default")
    if raw is None or raw == "null":
        return None
    if field["type"] == "bool":
        return raw == "true"
    if field["type"] in _FIXED:
        return float(raw) if field["type"] == "float64" else int(raw)
    return raw


# ---- encoding ----------------------------------------------------------------------


def uvarint(value: int) -> bytes:
    """LOG-2: unsigned varint, seven bits a byte, least significant group first.

    pre: 0 <= value <= MAX_UVARINT
    post: (reader := _Reader(__return__)).uvarint("value") == value and reader.remaining() == 0
    post: len(__return__) == 1 or __return__[-1] != 0
    """
    if not 0 <= value <= MAX_UVARINT:  # DEC-32
        raise ValueError(f"an unsigned varint holds 0 to {MAX_UVARINT}, not {value}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SCHEMAS: dict[type, dict[str, Any]] = {}


def record_schema_of(cls: type) -> dict[str, Any]:
    """The schema of the record class ``cls``, in the record formats it belongs to: Kafka's for
    the classes of kafka_records.py, which name them, seed 000's for the others (DEC-22)."""
    schema = _SCHEMAS.get(cls)
    if schema is None:
        schema = _SCHEMAS[cls] = record_schema(cls.__name__, getattr(cls, "FORMATS", "seed-000"))
    return schema


def encode_record(record: Record, version: int | None = None, frame_type: int = FRAME_TYPE) -> bytes:
    """LOG-2: frame type, record type, version (by default the one the record's formats write it
    at), then the payload (LOG-3)."""
    cite("LOG-2")
    cls = type(record)
    schema = record_schema_of(cls)
    version = record_version(record) if version is None else version
    header = uvarint(frame_type) + uvarint(cls.API_KEY) + uvarint(version)
    return header + _encode_struct(record, schema["fields"], version)


def _encode_struct(obj: Any, fields: list[dict[str, Any]], version: int) -> bytes:
    cite("LOG-3")
    out = bytearray()
    tagged: list[tuple[int, bytes]] = []
    for field in fields:
        if not _in_versions(field["versions"], version):
            continue
        value = getattr(obj, snake_case(field["name"]))
        if "tag" in field and _in_versions(field["taggedVersions"], version):
            if value != _default(field):  # a tagged field equal to its default is left out
                tagged.append((field["tag"], _encode_value(value, field, version)))
            continue
        out += _encode_value(value, field, version)
    out += uvarint(len(tagged))
    for tag, data in sorted(tagged):
        out += uvarint(tag) + uvarint(len(data)) + data
    return bytes(out)


def _encode_value(value: Any, field: dict[str, Any], version: int) -> bytes:
    kind = field["type"]
    if value is None and not _nullable(field.get("nullableVersions"), version):
        raise ValueError(f"{field['name']} is None, but the field is not nullable")
    if kind.startswith("[]"):
        if value is None:
            return uvarint(0)
        element = _element(field)
        items = b"".join(_encode_value(v, element, version) for v in value)
        return uvarint(len(value) + 1) + items
    if kind in _FIXED:
        return struct.pack(_FIXED[kind], value)
    if kind == "bool":
        return b"\x01" if value else b"\x00"
    if kind == "uuid":
        return value.bytes
    if kind in ("string", "bytes"):
        if value is None:
            return uvarint(0)
        data = value.encode("utf-8") if kind == "string" else bytes(value)
        return uvarint(len(data) + 1) + data
    return _encode_struct(value, field["fields"], version)  # a struct element of an array


# ---- decoding ----------------------------------------------------------------------


class _Reader:
    """Reads ``data[pos:end]``; positions in errors are offsets into the whole of ``data``."""

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None, structs: dict[str, type] | None = None):
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        self.structs = structs if structs is not None else FORMATS["seed-000"].structs  # the nested records' classes

    def remaining(self) -> int:
        return self.end - self.pos

    def take(self, n: int, what: str) -> bytes:
        if n > self.remaining():
            raise FrameError(self.pos, f"{what} needs {n} bytes, {self.remaining()} left")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def uvarint(self, what: str) -> int:
        """LOG-2: the unsigned varint at ``pos``, which moves past it; ``what`` names it in errors.

        pre: 0 <= self.pos <= self.end <= len(self.data)
        post: __old__.self.pos < self.pos <= __old__.self.pos + MAX_VARINT_BYTES
        post: __return__ < 1 << 7 * (self.pos - __old__.self.pos)
        post: __return__ <= MAX_UVARINT
        raises: FrameError
        """
        start, value = self.pos, 0
        for i in range(MAX_VARINT_BYTES):
            if self.pos >= self.end:
                raise FrameError(start, f"{what}: varint runs past the end")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                if value > MAX_UVARINT:  # DEC-32: 32 bits, as Kafka's int; never silently cut
                    raise FrameError(start, f"{what}: varint value {value} is above {MAX_UVARINT}")
                return value
        raise FrameError(start, f"{what}: varint longer than {MAX_VARINT_BYTES} bytes")


def decode_record(data: bytes, params: Profile | None = None) -> tuple[Record, int]:
    """LOG-2: the record in ``data`` and its version, in the frame type and record formats of the
    profile ``params`` (the default profile's when None); FrameError names the byte that is wrong."""
    cite("LOG-2")
    params = params if params is not None else profile()
    formats = FORMATS[params.record_formats]
    reader = _Reader(data, structs=formats.structs)
    frame_type = reader.uvarint("frame type")
    if frame_type != params.frame_type:  # DEC-10
        raise FrameError(0, f"frame type {frame_type}, expected {params.frame_type}")
    at = reader.pos
    api_key = reader.uvarint("record type")
    schema = record_schemas(formats.name).get(api_key)
    if schema is None:
        raise FrameError(at, f"unknown record type {api_key}")
    at = reader.pos
    version = reader.uvarint("record version")
    if not _in_versions(schema["validVersions"], version):
        raise FrameError(at, f"{schema['name']} has no version {version}")
    values = _decode_struct(reader, schema["fields"], version, schema["name"])
    if reader.remaining():
        raise FrameError(reader.pos, f"{reader.remaining()} bytes left after the {schema['name']} payload")
    return formats.types[api_key](**values), version


def _decode_struct(reader: _Reader, fields: list[dict[str, Any]], version: int, where: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    tagged = {}
    for field in fields:
        if not _in_versions(field["versions"], version):
            continue
        if "tag" in field:
            tagged[field["tag"]] = field
            values[snake_case(field["name"])] = _default(field)
            continue
        values[snake_case(field["name"])] = _decode_value(reader, field, version, f"{where}.{field['name']}")
    count = reader.uvarint(f"{where} tagged field count")
    previous = -1
    for _ in range(count):
        at = reader.pos
        tag = reader.uvarint(f"{where} tag")
        if tag <= previous:
            raise FrameError(at, f"{where}: tag {tag} out of order")
        previous = tag
        size = reader.uvarint(f"{where} tag {tag} size")
        start = reader.pos
        reader.take(size, f"{where} tag {tag}")
        tagged_field = tagged.get(tag)
        if tagged_field is None:
            continue  # an unknown tagged field is skipped (KIP-482)
        inner = _Reader(reader.data, start, start + size, reader.structs)
        name = tagged_field["name"]
        values[snake_case(name)] = _decode_value(inner, tagged_field, version, f"{where}.{name}")
        if inner.remaining():
            raise FrameError(at, f"{where}: tag {tag} has {inner.remaining()} bytes too many")
    return values


def _null(field: dict[str, Any], version: int, at: int, where: str) -> None:
    """LOG-3: a null (length varint 0) read at ``at``: None where the schema makes the field
    nullable at ``version``; anywhere else the payload is malformed (LOG-2)."""
    if not _nullable(field.get("nullableVersions"), version):
        raise FrameError(at, f"{where}: null, but the field is not nullable")
    return None


def _decode_value(reader: _Reader, field: dict[str, Any], version: int, where: str) -> Any:
    kind = field["type"]
    if kind.startswith("[]"):
        at = reader.pos
        n = reader.uvarint(f"{where} length")
        if n == 0:
            return _null(field, version, at, where)
        if n - 1 > reader.remaining():  # every element takes at least one byte
            raise FrameError(at, f"{where}: {n - 1} elements claimed, {reader.remaining()} bytes left")
        element = _element(field)
        return tuple(_decode_value(reader, element, version, where) for _ in range(n - 1))
    if kind in _FIXED:
        return struct.unpack(_FIXED[kind], reader.take(struct.calcsize(_FIXED[kind]), where))[0]
    if kind == "bool":
        at = reader.pos
        byte = reader.take(1, where)[0]
        if byte > 1:
            raise FrameError(at, f"{where}: bool byte {byte}")
        return byte == 1
    if kind == "uuid":
        return UUID(bytes=reader.take(16, where))
    if kind in ("string", "bytes"):
        at = reader.pos
        n = reader.uvarint(f"{where} length")
        if n == 0:
            return _null(field, version, at, where)
        data = reader.take(n - 1, where)
        if kind == "bytes":
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise FrameError(at, f"{where}: not UTF-8") from None
    return reader.structs[kind](**_decode_struct(reader, field["fields"], version, where))
