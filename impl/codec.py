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
as three unsigned varints, frame type, record type and version, then its payload.

Records are written and read per profile: a ``RecordCodec`` (``profile_codec(params)``) holds the
codecs of the profile's record formats (``record_formats``, DEC-22: seed 000's records, or
Kafka's at metadata.version 3.7-IV1 where they differ) with its frame type (``frame_type``,
DEC-10: 0, or Kafka's 1), and writes each record at the version its formats write it
(``record_version``: RegisterBrokerRecord at 2 in Kafka's). Every profile's codec is built at
import. ``encode_record`` and ``decode_record`` take any of impl's record classes and the
default profile's formats and frame type unless told otherwise.

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

from kraftspec.spec.profiles import Profile, profile_names
from kraftspec.spec.profiles import profile as profile_named
from kraftspec.spec.schemas import RPC_FORMATS, record_schemas, rpc_schemas

from .codegen import CodecWriter, element_field, is_nullable, present_fields
from .messages import MESSAGE_CLASSES, RECORD_CLASSES, RECORD_CLASSES_OF, PartitionRecord, Struct, snake_case
from .wire import BOOL_BYTE, FRAME_TYPE, Buffer, CodecError, EncodeError, intern_uuid, read_uvarint, write_uvarint

# the wire primitives' other names that were this module's before wire.py had them (proofs/ and the tests use them)
from .wire import _ONE_BYTE_UVARINTS as _ONE_BYTE_UVARINTS
from .wire import MAX_UVARINT as MAX_UVARINT
from .wire import MAX_UVARINT_BYTES as MAX_UVARINT_BYTES
from .wire import UUID_CACHE_SIZE as UUID_CACHE_SIZE
from .wire import interned_uuids as interned_uuids

DEFAULT_FORMATS = profile_named().record_formats  # DEC-22: the default profile's
DEFAULT_RPC_FORMATS = profile_named().rpc_formats  # DEC-9: the default profile's
SEED_RPC_FORMATS = "seed-000"  # seed 000's messages, which the other formats build on

__all__ = [
    "FRAME_TYPE",
    "RecordCodec",
    "record_codec",
    "profile_codec",
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
"""Record or message name -> the generated source (a record type of formats other than seed 000's
that defines it differently is named ``formats:Name``, as in traces)."""
_RECORD_CODECS: dict[tuple[type, int], tuple[dict[int, Callable[[Any], bytes]], dict[int, Callable[..., Any]]]] = {}
"""(record class, frame type) -> its encoders and decoders by version."""
_MESSAGE_ENCODERS: dict[tuple[str, type], dict[int, Callable[[Any], bytes]]] = {}
"""(message formats, message class) -> its encoders by version (DEC-9)."""
_MESSAGE_DECODERS: dict[tuple[str, str], dict[int, Callable[..., Any]]] = {}
"""(message formats, message name) -> its decoders by version (DEC-9)."""


def source_name(cls: type[Struct]) -> str:
    """The name :func:`codec_source` knows a record class by: ``Name``, or ``formats:Name`` for a
    type its formats define otherwise than seed 000 (DEC-22)."""
    return cls.__name__ if cls is RECORD_CLASSES.get(cls.API_KEY) else f"{cls.FORMATS}:{cls.__name__}"


def _record_codecs(cls: type[Struct], schema: dict[str, Any], frame_type: int):
    """The encoders and decoders of one record class, its frames beginning with ``frame_type``."""
    built = _RECORD_CODECS.get((cls, frame_type))
    if built is None:
        name = source_name(cls)
        label = name if frame_type == FRAME_TYPE else f"{name} frame type {frame_type}"
        encoders, decoders, source = CodecWriter(schema["name"], cls, schema, cls.API_KEY, frame_type, label).write()
        _SOURCES.setdefault(name, source)
        built = _RECORD_CODECS[(cls, frame_type)] = (encoders, decoders)
    return built


class RecordCodec:
    """The records of one record formats (DEC-22), framed with one frame type (DEC-10): what a
    controller of a profile writes to its log and snapshots and reads back (LOG-2, LOG-3).

    ``encode(record, version=None)`` takes the formats' own record classes and writes a record at
    the version its formats write it (``record_version``) unless told another; ``decode(data, pos,
    end)`` reads the formats' record types only, and refuses a frame of another frame type."""

    __slots__ = (
        "formats", "frame_type", "_encoders", "_decoders", "_frame_decoders", "_fast_frame_type", "_partition_head",
        "_partition_shapes",
    )

    def __init__(self, formats: str, frame_type: int) -> None:
        if formats not in RECORD_CLASSES_OF:
            raise KeyError(f"unknown record formats {formats!r}; expected one of {', '.join(RECORD_CLASSES_OF)}")
        if not 0 <= frame_type <= MAX_UVARINT:
            raise ValueError(f"frame type {frame_type} is not an unsigned 32-bit varint")
        self.formats = formats
        self.frame_type = frame_type
        self._encoders: dict[type, dict[int, Callable[[Any], bytes]]] = {}
        self._decoders: dict[int, tuple[str, dict[int, Callable[..., Any]]]] = {}
        self._frame_decoders: dict[tuple[int, int], Callable[..., Any]] = {}
        """(record type, version) -> decoder, for the frames whose three varints are one byte each."""
        self._fast_frame_type = frame_type if frame_type < 0x80 else -1  # a one-byte frame type, or none
        schemas = record_schemas(formats)
        # decode_frames' plain PartitionRecords: when the formats' PartitionRecord is seed 000's, at version 0
        plain = RECORD_CLASSES_OF[formats].get(PartitionRecord.API_KEY) is PartitionRecord and frame_type < 0x80
        self._partition_head = bytes((frame_type, PartitionRecord.API_KEY, 0)) if plain else None
        self._partition_shapes: dict[int, struct.Struct | None] = {}  # by frame size << 8 | replica count
        for record_type, cls in RECORD_CLASSES_OF[formats].items():
            encoders, decoders = _record_codecs(cls, schemas[record_type], frame_type)
            self._encoders[cls] = encoders
            self._decoders[record_type] = (cls.__name__, decoders)
            for version, decoder in decoders.items():
                if record_type < 0x80 and version < 0x80:
                    self._frame_decoders[(record_type, version)] = decoder

    def __repr__(self) -> str:
        return f"RecordCodec({self.formats!r}, frame type {self.frame_type})"

    def encode(self, record: Any, version: int | None = None) -> bytes:
        """LOG-2, LOG-3: the framed record, at ``version`` (default: the version its formats write
        it at). EncodeError names a field that cannot be written, or a record or version that
        does not exist."""
        encoders = self._encoders.get(type(record))
        if encoders is None:
            if type(record) in _FORMATS_OF_CLASS:
                raise EncodeError(type(record).__qualname__, f"is not a record type of the {self.formats} record formats")
            raise EncodeError(type(record).__qualname__, "is not one of impl's record classes (RECORD_CLASSES)")
        if version is None:
            version = record.record_version
        encode = encoders.get(version)
        if encode is None:
            raise EncodeError(type(record).__name__, f"has no version {version}")
        try:
            return encode(record)
        except _ENCODER_FAILURES as failure:
            schema = record_schemas(self.formats)[record.API_KEY]
            raise encode_failure(record, schema, version, failure) from failure

    def decode(self, data: Buffer, pos: int = 0, end: int | None = None) -> tuple[Any, int]:
        """LOG-2: the record framed in ``data[pos:end]`` (``end`` defaults to the end of data), and
        its version. The record must end exactly at ``end``. CodecError names the byte and the
        problem; offsets count from the start of ``data``."""
        data, end = buffer_range(data, pos, end)
        if end - pos >= 3 and data[pos] == self._fast_frame_type:
            decode = self._frame_decoders.get((data[pos + 1], data[pos + 2]))
            if decode is not None:
                return decode(data, pos + 3, end), data[pos + 2]
        frame_type, at = read_uvarint(data, pos, end, "frame type")
        if frame_type != self.frame_type:  # DEC-10
            raise CodecError(pos, f"frame type {frame_type}, expected {self.frame_type}")
        type_at = at
        record_type, at = read_uvarint(data, at, end, "record type")
        if record_type not in self._decoders:
            raise CodecError(type_at, f"unknown record type {record_type}")
        name, decoders = self._decoders[record_type]
        version_at = at
        version, at = read_uvarint(data, at, end, "record version")
        if version not in decoders:
            raise CodecError(version_at, f"{name} has no version {version}")
        return decoders[version](data, at, end), version


    def decode_frames(self, frames) -> list:
        """The records of ``frames`` (each a whole frame), as :meth:`decode` gives them one by one.

        A snapshot is almost all PartitionRecords of a plain shape: one-byte varints, short replica
        lists and ISRs, no reassignment, no tagged field. Such a frame is read by one precompiled
        ``struct`` per shape (its length and its replica count), its length bytes checked to be what
        the shape says; any other frame, and any that fails a check, goes through :meth:`decode`, which
        gives the same record or the error that names what is wrong."""
        out: list[Any] = []
        append = out.append
        head = self._partition_head
        shapes = self._partition_shapes
        decode = self.decode
        for frame in frames:
            size = len(frame)
            if size > _PARTITION_FIXED and frame[:3] == head and 0 < frame[23] < 0x80:
                replicas = frame[23] - 1
                key = size << 8 | replicas
                shape = shapes.get(key)
                if shape is None and key not in shapes:
                    shape = shapes[key] = _partition_shape(size, replicas)
                if shape is not None:
                    # PartitionId, TopicId, r + 1, r replicas, i + 1, i ISR members, 1, 1, Leader,
                    # LeaderEpoch, PartitionEpoch, 0 tagged fields
                    values = shape.unpack_from(frame, 3)
                    if values[replicas + 3] == len(values) - replicas - 9 and values[-6] == values[-5] == 1 and values[-1] == 0:
                        raw = values[1]
                        append(_partition_record(
                            values[0], find_interned_uuid(raw) or intern_uuid(raw), values[3:replicas + 3], values[replicas + 4:-6],
                            (), (), values[-4], values[-3], values[-2],
                        ))
                        continue
            append(decode(frame)[0])
        return out


find_interned_uuid = interned_uuids.get
_partition_record: Callable[..., Any] = PartitionRecord.make  # called with its fields in order

_PARTITION_FIXED = 40
"""The bytes of a PartitionRecord frame beside its replicas and ISR: the frame's three varints,
PartitionId and TopicId, four one-byte array lengths, Leader, LeaderEpoch, PartitionEpoch and the
tagged field count."""


def _partition_shape(size: int, replicas: int) -> struct.Struct | None:
    """The ``struct`` of a plain PartitionRecord frame of ``size`` bytes with ``replicas`` replicas,
    from after the frame's varints: PartitionId, TopicId, the replicas' length byte and the replicas,
    the ISR's length byte and the ISR, the two empty lists' length bytes, the three int32s and the
    tagged field count. None when no such frame has that size."""
    isr, rest = divmod(size - _PARTITION_FIXED - 4 * replicas, 4)
    if rest or isr < 0 or isr + 1 >= 0x80:
        return None
    return struct.Struct(f">i16sB{replicas}iB{isr}iBBiiiB")


_FORMATS_OF_CLASS = {cls: cls.FORMATS for classes in RECORD_CLASSES_OF.values() for cls in classes.values()}
"""Every record class of every formats -> the formats it belongs to."""

_RECORD_CODEC_CACHE: dict[tuple[str, int], RecordCodec] = {}


def record_codec(formats: str = DEFAULT_FORMATS, frame_type: int = FRAME_TYPE) -> RecordCodec:
    """The codec of the records of ``formats`` framed with ``frame_type`` (built once)."""
    codec = _RECORD_CODEC_CACHE.get((formats, frame_type))
    if codec is None:
        codec = _RECORD_CODEC_CACHE[(formats, frame_type)] = RecordCodec(formats, frame_type)
    return codec


def profile_codec(params: Profile) -> RecordCodec:
    """DEC-22, DEC-10: the codec of a profile: its record formats, framed with its frame type."""
    return record_codec(params.record_formats, params.frame_type)


def build_codecs() -> None:
    """Every profile's record codec (profiles.toml) and every message's."""
    for name in profile_names():
        profile_codec(profile_named(name))
    for formats in RPC_FORMATS:  # DEC-9: seed 000's messages, and Kafka's forms of three of them
        for name, schema in sorted(rpc_schemas(formats).items()):
            if formats != SEED_RPC_FORMATS and schema is rpc_schemas(SEED_RPC_FORMATS)[name]:  # seed 000's definition
                _MESSAGE_ENCODERS[(formats, MESSAGE_CLASSES[name])] = _MESSAGE_ENCODERS[(SEED_RPC_FORMATS, MESSAGE_CLASSES[name])]
                _MESSAGE_DECODERS[(formats, name)] = _MESSAGE_DECODERS[(SEED_RPC_FORMATS, name)]
                continue
            label = name if formats == SEED_RPC_FORMATS else f"{formats}:{name}"
            encoders, decoders, _SOURCES[label] = CodecWriter(name, MESSAGE_CLASSES[name], schema, None, label=label).write()
            _MESSAGE_ENCODERS[(formats, MESSAGE_CLASSES[name])] = encoders
            _MESSAGE_DECODERS[(formats, name)] = decoders


_ENCODER_FAILURES = (struct.error, TypeError, AttributeError, ValueError, OverflowError, LookupError)
"""What a generated encoder raises on a value its field cannot hold."""

build_codecs()

DEFAULT_CODEC = profile_codec(profile_named())
"""The default profile's record codec (seed 000's records, frame type 0)."""


# ---- the interface -------------------------------------------------------------------


def encode_record(record: Any, version: int | None = None, frame_type: int = FRAME_TYPE) -> bytes:
    """LOG-2, LOG-3: the framed record, at ``version`` (default: the version its record formats
    write it at, DEC-22), its frame beginning with ``frame_type`` (DEC-10; default: the default
    profile's). Any of impl's record classes, of any formats. EncodeError names a field that
    cannot be written, or a record or version that does not exist."""
    formats = _FORMATS_OF_CLASS.get(type(record))
    if formats is None:
        raise EncodeError(type(record).__qualname__, "is not one of impl's record classes (RECORD_CLASSES)")
    return record_codec(formats, frame_type).encode(record, version)


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


def decode_record(data: Buffer, pos: int = 0, end: int | None = None, params: Profile | None = None) -> tuple[Any, int]:
    """LOG-2: the record framed in ``data[pos:end]`` (``end`` defaults to the end of data), and
    its version, in the record formats and frame type of the profile ``params`` (DEC-22, DEC-10;
    default: the default profile's). The record must end exactly at ``end``. CodecError names
    the byte and the problem; offsets count from the start of ``data``."""
    codec = DEFAULT_CODEC if params is None else profile_codec(params)
    return codec.decode(data, pos, end)


def encode_message(message: Any, version: int, formats: str = DEFAULT_RPC_FORMATS) -> bytes:
    """RPC-1: the body of a request or response (no request header), at ``version``, as the
    message formats ``formats`` define it (DEC-9; default seed 000's)."""
    encoders = _MESSAGE_ENCODERS.get((formats, type(message)))
    if encoders is None:
        if formats not in RPC_FORMATS:
            raise EncodeError(type(message).__qualname__, f"unknown message formats {formats!r}")
        raise EncodeError(type(message).__qualname__, "is not one of impl's message classes (MESSAGE_CLASSES)")
    encode = encoders.get(version)
    if encode is None:
        raise EncodeError(type(message).__name__, f"has no version {version}")
    try:
        return encode(message)
    except _ENCODER_FAILURES as failure:
        raise encode_failure(message, rpc_schemas(formats)[type(message).__name__], version, failure) from failure


def decode_message(
    name: str, version: int, data: Buffer, pos: int = 0, end: int | None = None, formats: str = DEFAULT_RPC_FORMATS
) -> Any:
    """RPC-1: the request or response ``name`` at ``version`` whose body is ``data[pos:end]``, as
    the message formats ``formats`` define it (DEC-9); it must end exactly at ``end``. CodecError
    names the byte and the problem (offset ``pos`` for a name or version that does not exist)."""
    decoders = _MESSAGE_DECODERS.get((formats, name))
    if decoders is None:
        raise CodecError(pos, f"unknown message {name!r}" if formats in RPC_FORMATS else f"unknown message formats {formats!r}")
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
