"""impl's binary codec: metadata records (LOG-2, LOG-3) and the bodies of the RPCs (RPC-1).

The bytes are the reference's (``model/framing.py``) exactly; the way to them is not. The
reference interprets the schema field by field on every call. This module reads each schema
once, at import, and writes the Python source of one encode and one decode function per
struct and version, with the fixed-size fields of a run packed by one precompiled
``struct.Struct``, and executes it. ``codec_source(name)`` returns that source, so a reader
can see exactly what runs.

The encoding (LOG-3) is Kafka's flexible one: big-endian integers, ``uint16``, a bool as one
byte 0 or 1, ``float64``, a ``uuid`` as 16 bytes; strings, bytes and arrays as an unsigned
varint of length + 1 (0 for null) and then their bytes or elements; and every struct, the
payload included, ends with its tagged fields (a count, then tag, size and value per field
present, tags ascending, a field equal to its default left out). A record is framed (LOG-2)
as three unsigned varints, frame type 0 (DEC-10), record type and version, then its payload.

Decoding trusts nothing it reads. Every failure is a ``CodecError`` naming the byte offset
and the problem; a claimed length is checked against the bytes left before anything is
built from it, so a few bytes claiming a huge array fail at once. A null in a field that is
not nullable is refused. Unknown tagged fields are skipped (KIP-482). Two things that are not
canonical are accepted, as Kafka accepts them: a varint with redundant zero groups, and a
tagged field written at its default; re-encoding gives the canonical bytes. Decoded UUIDs are
interned: a snapshot repeats each topic id once per partition, and building a ``uuid.UUID``
costs more than decoding the rest of the record.

Encoding takes impl's objects (``impl/messages.py``) and refuses, with an ``EncodeError``
naming the field, a value its field cannot hold.

Three modules: wire.py holds the primitives (the errors, varints, the fixed-size types, interned
UUIDs, and the helpers the generated code calls), codegen.py the generator, and this one builds
every codec at import and is the interface.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any
from uuid import UUID

from kraftspec.spec.schemas import record_schemas, rpc_schemas

from .codegen import CodecWriter, element_field, is_nullable, present_fields
from .messages import MESSAGE_CLASSES, RECORD_CLASSES, snake_case
from .wire import BOOL_BYTE, FRAME_TYPE, Buffer, CodecError, EncodeError, intern_uuid, read_uvarint, write_uvarint

# the wire primitives' other names that were this module's before wire.py had them (proofs/ and the tests use them)
from .wire import _ONE_BYTE_UVARINTS as _ONE_BYTE_UVARINTS
from .wire import MAX_UVARINT as MAX_UVARINT
from .wire import MAX_UVARINT_BYTES as MAX_UVARINT_BYTES
from .wire import UUID_CACHE_SIZE as UUID_CACHE_SIZE
from .wire import interned_uuids as interned_uuids

__all__ = [
    "FRAME_TYPE",
    "CodecError",
    "EncodeError",
    "write_uvarint",
    "read_uvarint",
    "encode_record",
    "decode_record",
    "encode_message",
    "decode_message",
    "codec_source",
    "intern_uuid",
]

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}


# ---- explaining an encoder's failure -----------------------------------------------


def value_problem(value: Any, field: dict[str, Any], parent: type, version: int, where: str) -> EncodeError | None:
    """Why ``value`` cannot be written as ``field`` (None if it can)."""
    kind = field["type"]
    if value is None:
        return None if is_nullable(field, version) else EncodeError(where, "is None, but the field is not nullable")
    if kind.startswith("[]"):
        if not isinstance(value, (tuple, list)):
            return EncodeError(where, f"expected a tuple, got {type(value).__name__}")
        element = element_field(field)
        for index, item in enumerate(value):
            problem = value_problem(item, element, parent, version, f"{where}[{index}]")
            if problem is not None:
                return problem
        return None
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        if not isinstance(value, int):
            return EncodeError(where, f"expected an integer for {kind}, got {type(value).__name__}")
        return None if low <= value <= high else EncodeError(where, f"{value} does not fit {kind}")
    if kind == "float64":
        writable = isinstance(value, (int, float))
        return None if writable else EncodeError(where, f"expected a float, got {type(value).__name__}")
    if kind == "uuid":
        return None if isinstance(value, UUID) else EncodeError(where, f"expected a UUID, got {type(value).__name__}")
    if kind == "string":
        if not isinstance(value, str):
            return EncodeError(where, f"expected a str, got {type(value).__name__}")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as failure:
            return EncodeError(where, f"not encodable as UTF-8 ({failure.reason})")
        return None
    if kind == "bytes":
        try:
            memoryview(value)
        except TypeError:
            return EncodeError(where, f"expected bytes, got {type(value).__name__}")
        return None
    if kind == "bool":
        writable = isinstance(value, (bool, int, float)) and value in BOOL_BYTE
        return None if writable else EncodeError(where, f"expected True or False, got {value!r}")
    return struct_problem(value, getattr(parent, kind), field["fields"], version, where)


def struct_problem(obj: Any, cls: type, fields: list[dict[str, Any]], version: int, where: str) -> EncodeError | None:
    if type(obj) is not cls:
        return EncodeError(where, f"expected a {cls.__qualname__}, got {type(obj).__qualname__}")
    for field in present_fields(fields, version):
        value = getattr(obj, snake_case(field["name"]))
        problem = value_problem(value, field, cls, version, f"{where}.{field['name']}")
        if problem is not None:
            return problem
    return None


def encode_failure(obj: Any, schema: dict[str, Any], version: int, failure: Exception) -> EncodeError:
    """The EncodeError for an encoder that raised ``failure`` on ``obj``: the field to blame."""
    cls = type(obj)
    problem = struct_problem(obj, cls, schema["fields"], version, schema["name"])
    return problem or EncodeError(schema["name"], f"cannot be encoded: {failure!r}")


# ---- the codecs, built at import -----------------------------------------------------

_SOURCES: dict[str, str] = {}
_RECORD_ENCODERS: dict[type, dict[int, Callable[[Any], bytes]]] = {}
_RECORD_DECODERS: dict[int, tuple[str, dict[int, Callable[..., Any]]]] = {}
_FRAME_DECODERS: dict[tuple[int, int], Callable[..., Any]] = {}
"""(record type, version) -> decoder, for the frames whose three varints are one byte each."""
_MESSAGE_ENCODERS: dict[type, dict[int, Callable[[Any], bytes]]] = {}
_MESSAGE_DECODERS: dict[str, dict[int, Callable[..., Any]]] = {}


def build_codecs() -> None:
    for record_type, schema in sorted(record_schemas().items()):
        cls = RECORD_CLASSES[record_type]
        encoders, decoders, _SOURCES[schema["name"]] = CodecWriter(schema["name"], cls, schema, record_type).write()
        _RECORD_ENCODERS[cls] = encoders
        _RECORD_DECODERS[record_type] = (schema["name"], decoders)
        for version, decoder in decoders.items():
            if record_type < 0x80 and version < 0x80:
                _FRAME_DECODERS[(record_type, version)] = decoder
    for name, schema in sorted(rpc_schemas().items()):
        cls = MESSAGE_CLASSES[name]
        encoders, decoders, _SOURCES[name] = CodecWriter(name, cls, schema, None).write()
        _MESSAGE_ENCODERS[cls] = encoders
        _MESSAGE_DECODERS[name] = decoders


build_codecs()

_ENCODER_FAILURES = (struct.error, TypeError, AttributeError, ValueError, OverflowError, LookupError)
"""What a generated encoder raises on a value its field cannot hold."""


# ---- the interface -------------------------------------------------------------------


def encode_record(record: Any, version: int = 0) -> bytes:
    """LOG-2, LOG-3: the framed record, at ``version``. EncodeError names a field that cannot
    be written, or a record or version that does not exist."""
    encoders = _RECORD_ENCODERS.get(type(record))
    if encoders is None:
        raise EncodeError(type(record).__qualname__, "is not one of impl's record classes (RECORD_CLASSES)")
    encode = encoders.get(version)
    if encode is None:
        raise EncodeError(type(record).__name__, f"has no version {version}")
    try:
        return encode(record)
    except _ENCODER_FAILURES as failure:
        raise encode_failure(record, record_schemas()[record.API_KEY], version, failure) from failure


def buffer_range(data: Buffer, pos: int, end: int | None) -> tuple[Buffer, int]:
    """``data`` as something indexed by byte, and ``end`` checked (default: the end of data)."""
    if type(data) is memoryview and (data.format != "B" or not data.c_contiguous):
        data = data.tobytes()  # struct reads contiguous bytes only
    size = len(data)
    if end is None:
        end = size
    if not 0 <= pos <= end <= size:
        raise CodecError(pos, f"range {pos}..{end} is not inside the {size} bytes given")
    return data, end


def decode_record(data: Buffer, pos: int = 0, end: int | None = None) -> tuple[Any, int]:
    """LOG-2: the record framed in ``data[pos:end]`` (``end`` defaults to the end of data), and
    its version. The record must end exactly at ``end``. CodecError names the byte and the
    problem; offsets count from the start of ``data``."""
    data, end = buffer_range(data, pos, end)
    if end - pos >= 3 and data[pos] == FRAME_TYPE:
        decode = _FRAME_DECODERS.get((data[pos + 1], data[pos + 2]))
        if decode is not None:
            return decode(data, pos + 3, end), data[pos + 2]
    frame_type, at = read_uvarint(data, pos, end, "frame type")
    if frame_type != FRAME_TYPE:
        raise CodecError(pos, f"frame type {frame_type}, expected {FRAME_TYPE}")
    type_at = at
    record_type, at = read_uvarint(data, at, end, "record type")
    if record_type not in _RECORD_DECODERS:
        raise CodecError(type_at, f"unknown record type {record_type}")
    name, decoders = _RECORD_DECODERS[record_type]
    version_at = at
    version, at = read_uvarint(data, at, end, "record version")
    if version not in decoders:
        raise CodecError(version_at, f"{name} has no version {version}")
    return decoders[version](data, at, end), version


def encode_message(message: Any, version: int) -> bytes:
    """RPC-1: the body of a request or response (no request header), at ``version``."""
    encoders = _MESSAGE_ENCODERS.get(type(message))
    if encoders is None:
        raise EncodeError(type(message).__qualname__, "is not one of impl's message classes (MESSAGE_CLASSES)")
    encode = encoders.get(version)
    if encode is None:
        raise EncodeError(type(message).__name__, f"has no version {version}")
    try:
        return encode(message)
    except _ENCODER_FAILURES as failure:
        raise encode_failure(message, rpc_schemas()[type(message).__name__], version, failure) from failure


def decode_message(name: str, version: int, data: Buffer, pos: int = 0, end: int | None = None) -> Any:
    """RPC-1: the request or response ``name`` at ``version`` whose body is ``data[pos:end]``;
    it must end exactly at ``end``. CodecError names the byte and the problem (offset ``pos``
    for a name or version that does not exist)."""
    decoders = _MESSAGE_DECODERS.get(name)
    if decoders is None:
        raise CodecError(pos, f"unknown message {name!r}")
    decode = decoders.get(version)
    if decode is None:
        raise CodecError(pos, f"{name} has no version {version}")
    data, end = buffer_range(data, pos, end)
    return decode(data, pos, end)


def codec_source(name: str) -> str:
    """The generated source of the encode and decode functions of the record or message
    ``name`` (``"PartitionRecord"``, ``"BrokerHeartbeatResponse"``), every version."""
    try:
        return _SOURCES[name]
    except KeyError:
        raise KeyError(f"no record or message named {name!r}") from None
