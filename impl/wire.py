"""impl's wire primitives (LOG-2, LOG-3, RPC-1): the errors of the codec, unsigned varints, the
layout of the fixed-size types, interned UUIDs, and the helpers the generated encoders and
decoders call. The generator (codegen.py) writes code against these; codec.py builds the codecs
and is the interface."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any, Union
from uuid import UUID

from kraftspec.spec.profiles import profile

FRAME_TYPE = profile().frame_type
"""DEC-10: the default profile's frame type (seed 000's "currently 0"); a controller frames its
records with its own profile's (``frame_type``: the kafka profile's is Kafka's 1)."""
MAX_UVARINT_BYTES = 5
MAX_UVARINT = 2**32 - 1
UUID_CACHE_SIZE = 1 << 16
"""Interned UUIDs kept at most; the cache starts over when it is full."""

Buffer = Union[bytes, bytearray, memoryview]


class CodecError(ValueError):
    """Bytes that do not decode: ``offset`` is the byte of the input where decoding failed
    (counted from the start of the buffer given, not from ``pos``), ``problem`` what was wrong."""

    def __init__(self, offset: int, problem: str):
        super().__init__(offset, problem)
        self.offset = offset
        self.problem = problem

    def __str__(self) -> str:
        return f"byte {self.offset}: {self.problem}"


class EncodeError(ValueError):
    """A value its schema field cannot hold: ``field`` is its path (``PartitionRecord.Leader``,
    ``RegisterBrokerRecord.EndPoints[0].Port``), ``problem`` what is wrong with it."""

    def __init__(self, field: str, problem: str):
        super().__init__(field, problem)
        self.field = field
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}"


# ---- unsigned varints (LOG-2) --------------------------------------------------------

_ONE_BYTE_UVARINTS = tuple(bytes([value]) for value in range(0x80))


def write_uvarint(value: int) -> bytes:
    """LOG-2: ``value`` as an unsigned varint, seven bits a byte, least significant group
    first, the high bit set on every byte but the last.

    pre: 0 <= value <= 0xFFFFFFFF
    post: 1 <= len(__return__) <= 5
    post: read_uvarint(__return__, 0) == (value, len(__return__))
    """
    if 0 <= value < 0x80:
        return _ONE_BYTE_UVARINTS[value]
    if not 0 <= value <= MAX_UVARINT:
        raise EncodeError("varint", f"{value} is outside 0..{MAX_UVARINT}")
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(data: Buffer, pos: int, end: int | None = None, what: str = "varint") -> tuple[int, int]:
    """LOG-2: the unsigned varint at ``pos`` and the position after it. ``end`` (default: the
    end of ``data``) bounds the read; ``what`` names the number in errors.

    Refuses with a CodecError at ``pos`` a varint that runs past ``end``, one longer than five
    bytes, and one whose value exceeds 32 bits.

    pre: 0 <= pos
    post: pos < __return__[1] <= pos + 5
    post: 0 <= __return__[0] <= 0xFFFFFFFF
    raises: CodecError
    """
    if end is None or end > len(data):
        end = len(data)
    if pos < 0:
        raise CodecError(pos, f"{what}: negative position")
    value = 0
    for index in range(MAX_UVARINT_BYTES):
        at = pos + index
        if at >= end:
            raise CodecError(pos, f"{what}: varint runs past the end")
        byte = data[at]
        value |= (byte & 0x7F) << (7 * index)
        if byte < 0x80:
            if value > MAX_UVARINT:
                raise CodecError(pos, f"{what}: varint value {value} does not fit 32 bits")
            return value, at + 1
    raise CodecError(pos, f"{what}: varint longer than {MAX_UVARINT_BYTES} bytes")


# ---- the fixed-size types ---------------------------------------------------------------

FIXED_CODES = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint16": "H",
    "float64": "d",
    "bool": "B",
    "uuid": "16s",
}
"""``struct`` codes of the fixed-size types (a bool is its byte, a uuid its 16 bytes)."""

FIXED_SIZES = {kind: struct.calcsize(">" + code) for kind, code in FIXED_CODES.items()}

NUMBER_ARRAY_KINDS = ("int8", "int16", "int32", "int64", "uint16", "float64")
"""Element types of the arrays packed and unpacked whole with one ``struct.Struct``."""

BOOL_BYTE = {False: 0, True: 1}
"""A bool field's byte; a value that is not a key (None, 2, "yes") cannot be written."""


# ---- interned UUIDs ----------------------------------------------------------------

interned_uuids: dict[bytes, UUID] = {}
"""16 bytes -> their UUID, at most UUID_CACHE_SIZE of them; read it, never change it."""


def intern_uuid(raw: bytes) -> UUID:
    """The one UUID object for these 16 bytes while it stays in the bounded cache."""
    found = interned_uuids.get(raw)
    if found is None:
        if len(interned_uuids) >= UUID_CACHE_SIZE:
            interned_uuids.clear()  # bounded, and atomic under the GIL; a snapshot's locality refills it
        found = interned_uuids[raw] = UUID(bytes=raw)
    return found


# ---- what the generated encoders call ----------------------------------------------

CACHED_ARRAY_LENGTHS = 64
ARRAY_STRUCTS: dict[str, tuple[struct.Struct, ...]] = {
    kind: tuple(struct.Struct(f">{n}{FIXED_CODES[kind]}") for n in range(CACHED_ARRAY_LENGTHS))
    for kind in NUMBER_ARRAY_KINDS
}


def array_struct(kind: str, n: int) -> struct.Struct:
    """The ``Struct`` of ``n`` big-endian numbers of ``kind``, precompiled for short arrays."""
    structs = ARRAY_STRUCTS[kind]
    return structs[n] if n < CACHED_ARRAY_LENGTHS else struct.Struct(f">{n}{FIXED_CODES[kind]}")


def number_array_writer(kind: str) -> Callable[[Sequence[Any]], bytes]:
    """The writer of a non-null array of ``kind`` numbers: count + 1, then the numbers."""
    structs = ARRAY_STRUCTS[kind]

    def write_number_array(values: Sequence[Any]) -> bytes:
        n = len(values)
        packer = structs[n] if n < CACHED_ARRAY_LENGTHS else array_struct(kind, n)
        return write_uvarint(n + 1) + packer.pack(*values)

    write_number_array.__name__ = f"write_{kind}_array"
    return write_number_array


def write_string(value: str) -> bytes:
    data = value.encode("utf-8")
    return write_uvarint(len(data) + 1) + data


def write_bytes(value: bytes) -> bytes:
    data = bytes(memoryview(value))
    return write_uvarint(len(data) + 1) + data


def write_string_array(values: Sequence[str]) -> bytes:
    return write_uvarint(len(values) + 1) + b"".join([write_string(value) for value in values])


def write_bytes_array(values: Sequence[bytes]) -> bytes:
    return write_uvarint(len(values) + 1) + b"".join([write_bytes(value) for value in values])


def write_struct_array(values: Sequence[Any], write_element: Callable[[Any], bytes]) -> bytes:
    return write_uvarint(len(values) + 1) + b"".join([write_element(value) for value in values])


# ---- what the generated decoders call, on their error paths only --------------------


def fixed_run_cut(pos: int, end: int, run: tuple[tuple[str, int, int, str], ...]) -> CodecError:
    """The error for a run of fixed-size fields at ``pos`` that ``end`` cuts: names the first
    field that does not fit. ``run`` holds (field, offset in the run, size, type) per field."""
    for where, offset, size, _kind in run:
        if pos + offset + size > end:
            left = counted(max(end - pos - offset, 0), "byte")
            return CodecError(pos + offset, f"{where}: needs {size} bytes, {left} left")
    return CodecError(pos, "fixed-size fields cut")  # not reached: the caller checked the run's size


def bad_bool_in_run(data: Buffer, pos: int, run: tuple[tuple[str, int, int, str], ...]) -> CodecError:
    """The error for a run at ``pos`` holding a bool byte other than 0 or 1: names the first."""
    for where, offset, _size, kind in run:
        if kind == "bool" and data[pos + offset] > 1:
            return CodecError(pos + offset, f"{where}: bool byte {data[pos + offset]}, expected 0 or 1")
    return CodecError(pos, "bad bool")  # not reached: the caller found one


def null_refused(at: int, where: str) -> CodecError:
    return CodecError(at, f"{where}: null, but the field is not nullable")


def counted(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def too_many_bytes(at: int, where: str, claimed: int, left: int) -> CodecError:
    return CodecError(at, f"{where}: {counted(claimed, 'byte')} claimed, {counted(left, 'byte')} left")


def too_many_elements(at: int, where: str, claimed: int, left: int) -> CodecError:
    return CodecError(at, f"{where}: {counted(claimed, 'element')} claimed, {counted(left, 'byte')} left")


def not_utf8(pos: int, failure: UnicodeDecodeError, where: str) -> CodecError:
    return CodecError(pos + failure.start, f"{where}: not UTF-8 ({failure.reason})")


def bytes_left_over(pos: int, end: int, name: str) -> CodecError:
    return CodecError(pos, f"{counted(end - pos, 'byte')} left over after the {name} payload")


TagDecoder = Callable[[Buffer, int, int], tuple[Any, int]]


def read_tagged_fields(
    data: Buffer, pos: int, end: int, where: str, known: dict[int, tuple[str, TagDecoder]]
) -> tuple[dict[int, Any], int]:
    """LOG-3: the tagged-field section at ``pos`` (its count first): the values of the ``known``
    tags present, by tag, and the position after the section. Unknown tags are skipped
    (KIP-482); tags must ascend; a known tag's value must take exactly its size."""
    count_at = pos
    count, pos = read_uvarint(data, pos, end, f"{where} tagged field count")
    if count * 2 > end - pos:  # each tagged field takes at least its tag and its size
        claimed, left = counted(count, "tagged field"), counted(end - pos, "byte")
        raise CodecError(count_at, f"{where}: {claimed} claimed, {left} left")
    values: dict[int, Any] = {}
    previous = -1
    for _ in range(count):
        tag_at = pos
        tag, pos = read_uvarint(data, pos, end, f"{where} tag")
        if tag <= previous:
            order = "repeated" if tag == previous else f"after tag {previous}: tags must ascend"
            raise CodecError(tag_at, f"{where}: tag {tag} {order}")
        previous = tag
        size_at = pos
        size, pos = read_uvarint(data, pos, end, f"{where} tag {tag} size")
        if size > end - pos:
            raise too_many_bytes(size_at, f"{where} tag {tag}", size, end - pos)
        if tag in known:
            name, decode_value = known[tag]
            value, stop = decode_value(data, pos, pos + size)
            if stop != pos + size:
                problem = f"size {size}, but its value takes {stop - pos} bytes"
                raise CodecError(tag_at, f"{where}.{name} (tag {tag}): {problem}")
            values[tag] = value
        pos += size
    return values, pos
