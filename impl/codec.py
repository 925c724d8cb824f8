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
"""

from __future__ import annotations

import linecache
import struct
from collections.abc import Callable, Sequence
from typing import Any, Union
from uuid import UUID

from attrs import frozen

from kraftspec.spec.schemas import record_schemas, rpc_schemas

from .messages import MESSAGE_CLASSES, RECORD_CLASSES, default_value, snake_case

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

FRAME_TYPE = 0  # DEC-10: seed 000's "currently 0"; Kafka writes 1
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


# ---- schema versions ---------------------------------------------------------------


def in_versions(versions: str, version: int) -> bool:
    """Whether a schema's version range (``"0"``, ``"0-1"``, ``"1+"``) includes ``version``."""
    if versions.endswith("+"):
        return version >= int(versions[:-1])
    low, _, high = versions.partition("-")
    return int(low) <= version <= int(high or low)


def valid_versions(schema: dict[str, Any]) -> range:
    """The versions a record or message has (its ``validVersions``, a closed range)."""
    low, _, high = schema["validVersions"].partition("-")
    return range(int(low), int(high or low) + 1)


def present_fields(fields: Sequence[dict[str, Any]], version: int) -> list[dict[str, Any]]:
    return [field for field in fields if in_versions(field["versions"], version)]


def is_tagged(field: dict[str, Any], version: int) -> bool:
    return "tag" in field and in_versions(field["taggedVersions"], version)


def is_nullable(field: dict[str, Any], version: int) -> bool:
    return "nullableVersions" in field and in_versions(field["nullableVersions"], version)


# ---- field types ---------------------------------------------------------------------

_FIXED_CODES = {
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

_FIXED_SIZES = {kind: struct.calcsize(">" + code) for kind, code in _FIXED_CODES.items()}

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}

_NUMBER_ARRAY_KINDS = ("int8", "int16", "int32", "int64", "uint16", "float64")
"""Element types of the arrays packed and unpacked whole with one ``struct.Struct``."""


def is_fixed(kind: str) -> bool:
    return kind in _FIXED_CODES


def is_struct(kind: str) -> bool:
    return not is_fixed(kind) and kind not in ("string", "bytes") and not kind.startswith("[]")


def min_size(field: dict[str, Any], version: int) -> int:
    """The fewest bytes a value of ``field`` takes: its size if fixed, else its length varint,
    or for a struct its fields' least sizes plus its tagged-field count."""
    kind = field["type"]
    if is_fixed(kind):
        return _FIXED_SIZES[kind]
    if is_struct(kind):
        children = [child for child in present_fields(field["fields"], version) if not is_tagged(child, version)]
        return 1 + sum(min_size(child, version) for child in children)
    return 1


def element_field(field: dict[str, Any]) -> dict[str, Any]:
    """The field of one element of an array field: its element type, never null."""
    dropped = ("nullableVersions", "tag", "taggedVersions", "default")
    element = {key: value for key, value in field.items() if key not in dropped}
    element["type"] = field["type"][2:]
    return element


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

_CACHED_ARRAY_LENGTHS = 64
_ARRAY_STRUCTS: dict[str, tuple[struct.Struct, ...]] = {
    kind: tuple(struct.Struct(f">{n}{_FIXED_CODES[kind]}") for n in range(_CACHED_ARRAY_LENGTHS))
    for kind in _NUMBER_ARRAY_KINDS
}


def array_struct(kind: str, n: int) -> struct.Struct:
    """The ``Struct`` of ``n`` big-endian numbers of ``kind``, precompiled for short arrays."""
    structs = _ARRAY_STRUCTS[kind]
    return structs[n] if n < _CACHED_ARRAY_LENGTHS else struct.Struct(f">{n}{_FIXED_CODES[kind]}")


def number_array_writer(kind: str) -> Callable[[Sequence[Any]], bytes]:
    """The writer of a non-null array of ``kind`` numbers: count + 1, then the numbers."""
    structs = _ARRAY_STRUCTS[kind]

    def write_number_array(values: Sequence[Any]) -> bytes:
        n = len(values)
        packer = structs[n] if n < _CACHED_ARRAY_LENGTHS else array_struct(kind, n)
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


# ---- the generator -------------------------------------------------------------------

BOOL_BYTE = {False: 0, True: 1}
"""A bool field's byte; a value that is not a key (None, 2, "yes") cannot be written."""

_RUNTIME: dict[str, Any] = {
    "BOOL_BYTE": BOOL_BYTE,
    "read_uvarint": read_uvarint,
    "write_uvarint": write_uvarint,
    "intern_uuid": intern_uuid,
    "find_interned_uuid": interned_uuids.get,
    "array_struct": array_struct,
    "write_string": write_string,
    "write_bytes": write_bytes,
    "write_string_array": write_string_array,
    "write_bytes_array": write_bytes_array,
    "write_struct_array": write_struct_array,
    "fixed_run_cut": fixed_run_cut,
    "bad_bool_in_run": bad_bool_in_run,
    "null_refused": null_refused,
    "too_many_bytes": too_many_bytes,
    "too_many_elements": too_many_elements,
    "not_utf8": not_utf8,
    "bytes_left_over": bytes_left_over,
    "read_tagged_fields": read_tagged_fields,
    **{f"write_{kind}_array": number_array_writer(kind) for kind in _NUMBER_ARRAY_KINDS},
    **{f"{kind.upper()}_ARRAYS": _ARRAY_STRUCTS[kind] for kind in _NUMBER_ARRAY_KINDS},
}
"""The names the generated source uses besides its own constants."""

_LOCALS = {
    *("obj", "data", "pos", "end", "tagged", "value", "failure"),  # parameters and section locals
    *("n", "start", "n_item", "start_item", "item", "items"),  # a length, and the elements of an array
}
_RESERVED = _LOCALS | set(_RUNTIME)
"""Names a field's local variable must not take. (The generated constants are upper case or
class names, so a field's snake-case name never takes one of them.)"""


def local_name(field: dict[str, Any]) -> str:
    """The local variable of a field in the generated decoder."""
    name = snake_case(field["name"])
    return f"field_{name}" if name in _RESERVED else name


def fixed_writer(kind: str, expression: str) -> tuple[str, str]:
    """The ``struct`` code that writes a fixed-size value, and the expression it packs: a
    uuid's 16 bytes, a bool's 0 or 1 (only True and False have one: None is refused)."""
    if kind == "uuid":
        return _FIXED_CODES[kind], f"{expression}.bytes"
    if kind == "bool":
        return _FIXED_CODES[kind], f"BOOL_BYTE[{expression}]"
    return _FIXED_CODES[kind], expression


@frozen(eq=False)
class StructVersion:
    """One struct (a record, a message, or the element of a struct array) at one version."""

    cls: type
    fields: tuple[dict[str, Any], ...]  # all of the schema's, in order
    version: int
    where: str  # its path in error messages: "RegisterBrokerRecord.EndPoints"
    base: str  # the stem of its functions' names: "RegisterBrokerRecord_BrokerEndpoint_v0"

    def present(self) -> list[dict[str, Any]]:
        return present_fields(self.fields, self.version)

    def tagged(self) -> list[dict[str, Any]]:
        return sorted((f for f in self.present() if is_tagged(f, self.version)), key=lambda f: f["tag"])

    def element(self, field: dict[str, Any]) -> StructVersion:
        """The struct of the elements of the struct array ``field``."""
        name = field["type"][2:]
        cls = getattr(self.cls, name)
        stem = cls.__qualname__.replace(".", "_")
        where = f"{self.where}.{field['name']}"
        return StructVersion(cls, tuple(field["fields"]), self.version, where, f"{stem}_v{self.version}")


class CodecWriter:
    """Writes, for one record or message schema, the source of its encode and decode functions,
    one pair per version and per nested struct, and the constants that source refers to."""

    def __init__(self, name: str, cls: type, schema: dict[str, Any], record_type: int | None):
        if schema.get("flexibleVersions") != "0+":
            raise ValueError(f"{name}: only schemas flexible from version 0 are encoded here (LOG-3, RPC-1)")
        self.name = name
        self.cls = cls
        self.schema = schema
        self.record_type = record_type
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = dict(_RUNTIME)
        self.counter = 0

    def write(self) -> tuple[dict[int, Callable[[Any], bytes]], dict[int, Callable[..., Any]], str]:
        """The encoders and decoders by version, and the source they were built from."""
        stems = {}
        for version in valid_versions(self.schema):
            top = StructVersion(self.cls, tuple(self.schema["fields"]), version, self.name, f"{self.name}_v{version}")
            header = b""
            if self.record_type is not None:  # LOG-2: frame type, record type, version
                header = write_uvarint(FRAME_TYPE) + write_uvarint(self.record_type) + write_uvarint(version)
            self.write_struct(top, header, top=True)
            stems[version] = top.base
        source = "\n".join(self.lines) + "\n"
        filename = f"<kraftspec.impl.codec {self.name}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # tracebacks show it
        exec(compile(source, filename, "exec"), self.namespace)  # noqa: S102 - generated from the schema
        encoders = {version: self.namespace[f"encode_{stem}"] for version, stem in stems.items()}
        decoders = {version: self.namespace[f"decode_{stem}"] for version, stem in stems.items()}
        return encoders, decoders, source

    def constant(self, hint: str, value: Any, numbered: bool = True) -> str:
        """A name in the generated source's namespace bound to ``value``: ``hint`` and a number,
        or, unless ``numbered`` or taken by another value, ``hint`` itself."""
        name = hint
        if numbered or self.namespace.get(name, value) is not value:
            self.counter += 1
            name = f"{hint}_{self.counter}"
        self.namespace[name] = value
        return name

    def default(self, field: dict[str, Any]) -> str:
        """The name of ``field``'s default value in the generated source."""
        return self.constant(f"{snake_case(field['name']).upper()}_DEFAULT", default_value(field), numbered=False)

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def write_struct(self, struct_version: StructVersion, header: bytes, top: bool) -> None:
        """The functions of a struct, then those of the structs of its arrays."""
        self.write_encoder(struct_version, header, top)
        self.write_decoder(struct_version, top)
        for field in struct_version.present():
            if field["type"].startswith("[]") and is_struct(field["type"][2:]):
                self.write_struct(struct_version.element(field), b"", top=False)

    # -- encoders -----------------------------------------------------------------

    def write_encoder(self, s: StructVersion, header: bytes, top: bool) -> None:
        """``encode_<base>(obj)``: one join of the header, the packed fixed-size runs, the other
        fields' bytes, and the tagged fields."""
        parts: list[str] = [repr(header)] if header else []
        run: list[tuple[str, str]] = []  # (struct code, expression) of the pending fixed-size fields

        def flush_run() -> None:
            if run:
                packer = self.constant("PACK", struct.Struct(">" + "".join(code for code, _ in run)).pack)
                parts.append(f"{packer}({', '.join(expression for _, expression in run)})")
                run.clear()

        for field in s.present():
            if is_tagged(field, s.version):
                continue
            kind, expression = field["type"], f"obj.{snake_case(field['name'])}"
            if is_fixed(kind):
                run.append(fixed_writer(kind, expression))
            else:
                flush_run()
                parts.append(self.value_writer(s, field, expression))
        flush_run()
        parts.append(f"encode_{s.base}_tagged_fields(obj)" if s.tagged() else repr(b"\x00"))  # LOG-3
        what = "frame (LOG-2) and payload (LOG-3)" if header else "payload (LOG-3)" if top else "one element (LOG-3)"
        self.emit(0, f"def encode_{s.base}(obj):")
        self.emit(1, f'"""{s.where} version {s.version}: its {what}."""')
        self.emit(1, "return b''.join((")
        for part in parts:
            self.emit(2, f"{part},")
        self.emit(1, "))")
        self.emit(0, "")
        if s.tagged():
            self.write_tagged_encoder(s)

    def write_tagged_encoder(self, s: StructVersion) -> None:
        """LOG-3: the count, then tag, size and value of each field not at its default, by tag."""
        self.emit(0, f"def encode_{s.base}_tagged_fields(obj):")
        self.emit(1, f'"""{s.where} version {s.version}: its tagged fields, those not at their default, by tag."""')
        self.emit(1, "tagged = []")
        for field in s.tagged():
            default = default_value(field)
            self.emit(1, f"value = obj.{snake_case(field['name'])}")
            if default is None:
                self.emit(1, "if value is not None:")
            elif field["type"].startswith("[]"):
                self.emit(1, "if value is None or len(value) != 0:")
            else:
                self.emit(1, f"if value != {self.default(field)}:")
            writer = self.value_writer(s, field, "value", null_written=default is not None)
            self.emit(2, f"value = {writer}  # {field['name']}")
            self.emit(2, f"tagged.append({write_uvarint(field['tag'])!r} + write_uvarint(len(value)) + value)")
        self.emit(1, "return write_uvarint(len(tagged)) + b''.join(tagged)")
        self.emit(0, "")

    def value_writer(self, s: StructVersion, field: dict[str, Any], expression: str, null_written: bool = True) -> str:
        """An expression for the bytes of ``field``'s value ``expression``, outside a run; with
        ``null_written`` false, the caller has dealt with null already (a tagged default)."""
        kind = field["type"]
        if kind.startswith("[]"):
            element = kind[2:]
            if element in _NUMBER_ARRAY_KINDS or element in ("string", "bytes"):
                writer = f"write_{element}_array({expression})"
            elif is_struct(element):
                writer = f"write_struct_array({expression}, encode_{s.element(field).base})"
            else:
                raise ValueError(f"{s.where}.{field['name']}: arrays of {element} are in no schema, and not written")
        elif kind in ("string", "bytes"):
            writer = f"write_{kind}({expression})"
        elif is_fixed(kind):
            code, argument = fixed_writer(kind, expression)
            writer = f"{self.constant('PACK', struct.Struct('>' + code).pack)}({argument})"
        else:
            raise ValueError(f"{s.where}.{field['name']}: a struct outside an array is in no schema, and not written")
        if is_nullable(field, s.version) and null_written:
            return f"(b'\\x00' if {expression} is None else {writer})"
        return writer

    # -- decoders -----------------------------------------------------------------

    def write_decoder(self, s: StructVersion, top: bool) -> None:
        """``decode_<base>(data, pos, end)``: the fields in order, checked as they are read;
        the whole payload returns the object, an element also the position after it."""
        self.emit(0, f"def decode_{s.base}(data, pos, end):")
        returns = f"the {s.where} in data[pos:end]" if top else f"one element of {s.where} at pos, and where it ends"
        self.emit(1, f'"""{s.where} version {s.version}: {returns}."""')
        run: list[dict[str, Any]] = []
        for field in s.present():
            if is_tagged(field, s.version):
                self.emit(1, f"{local_name(field)} = {self.default(field)}  # tag {field['tag']}")
            elif is_fixed(field["type"]):
                run.append(field)
            else:
                self.read_fixed_run(s.where, run, 1)
                run = []
                self.read_value(s, field, f"{s.where}.{field['name']}", local_name(field), 1, 0)
        self.read_fixed_run(s.where, run, 1)
        self.read_tagged_section(s)
        arguments = [local_name(f) if in_versions(f["versions"], s.version) else self.default(f) for f in s.fields]
        built = f"{self.constant(s.cls.__name__, s.cls, numbered=False)}({', '.join(arguments)})"
        if top:
            self.emit(1, "if pos != end:")
            self.emit(2, f"raise bytes_left_over(pos, end, {s.where!r})")
            self.emit(1, f"return {built}")
        else:
            self.emit(1, f"return {built}, pos")
        self.emit(0, "")
        for field in s.tagged():
            self.write_tag_decoder(s, field)

    def read_fixed_run(
        self, where: str, run: list[dict[str, Any]], indent: int, names: list[str] | None = None
    ) -> None:
        """Reads consecutive fixed-size fields with one length check and one unpack, into their
        local variables (or ``names``); checks bools, interns UUIDs."""
        if not run:
            return
        layout, size = [], 0
        for field in run:
            layout.append((f"{where}.{field['name']}", size, _FIXED_SIZES[field["type"]], field["type"]))
            size += _FIXED_SIZES[field["type"]]
        layout_name = self.constant("RUN", tuple(layout))
        unpack = self.constant("UNPACK", struct.Struct(">" + "".join(_FIXED_CODES[f["type"]] for f in run)).unpack_from)
        names = names or [local_name(field) for field in run]
        self.emit(indent, f"if end - pos < {size}:  # {', '.join(f['name'] for f in run)}")
        self.emit(indent + 1, f"raise fixed_run_cut(pos, end, {layout_name})")
        self.emit(indent, f"{', '.join(names)}, = {unpack}(data, pos)")
        bools = [name for name, field in zip(names, run, strict=True) if field["type"] == "bool"]
        if bools:
            self.emit(indent, f"if {' or '.join(f'{name} > 1' for name in bools)}:")
            self.emit(indent + 1, f"raise bad_bool_in_run(data, pos, {layout_name})")
            for name in bools:
                self.emit(indent, f"{name} = {name} == 1")
        for name, field in zip(names, run, strict=True):
            if field["type"] == "uuid":
                self.emit(indent, f"{name} = find_interned_uuid({name}) or intern_uuid({name})")
        self.emit(indent, f"pos += {size}")

    def read_uvarint_into(self, target: str, what: str, indent: int) -> None:
        """Reads an unsigned varint: one byte inline, longer ones (and errors) by read_uvarint."""
        self.emit(indent, "if pos < end and data[pos] < 0x80:")
        self.emit(indent + 1, f"{target} = data[pos]")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "else:")
        self.emit(indent + 1, f"{target}, pos = read_uvarint(data, pos, end, {what!r})")

    def read_length(
        self, s: StructVersion, field: dict[str, Any], where: str, target: str, indent: int, depth: int
    ) -> int:
        """Reads a length or count (its varint holds it + 1, or 0 for null) into ``n``, or
        ``n_item`` inside an array; returns the indent at which a value that is not null is read."""
        n, start = ("n", "start") if depth == 0 else ("n_item", "start_item")
        self.emit(indent, f"{start} = pos")
        self.read_uvarint_into(n, f"{where} length", indent)
        self.emit(indent, f"if {n} == 0:")
        if is_nullable(field, s.version):
            self.emit(indent + 1, f"{target} = None")
            self.emit(indent, "else:")
            indent += 1
        else:
            self.emit(indent + 1, f"raise null_refused({start}, {where!r})")
        self.emit(indent, f"{n} -= 1")
        return indent

    def read_value(
        self, s: StructVersion, field: dict[str, Any], where: str, target: str, indent: int, depth: int
    ) -> None:
        """Reads into ``target`` one value of ``field`` that is not in a fixed run; ``depth`` is 1
        for an element of an array of strings or bytes."""
        kind = field["type"]
        if is_fixed(kind):
            self.read_fixed_run(where.rpartition(".")[0], [field], indent, [target])
            return
        n, start = ("n", "start") if depth == 0 else ("n_item", "start_item")
        indent = self.read_length(s, field, where, target, indent, depth)
        if kind in ("string", "bytes"):
            self.emit(indent, f"if {n} > end - pos:")
            self.emit(indent + 1, f"raise too_many_bytes({start}, {where!r}, {n}, end - pos)")
            if kind == "string":
                self.emit(indent, "try:")
                self.emit(indent + 1, f"{target} = str(data[pos:pos + {n}], 'utf-8')")
                self.emit(indent, "except UnicodeDecodeError as failure:")
                self.emit(indent + 1, f"raise not_utf8(pos, failure, {where!r}) from None")
            else:
                self.emit(indent, f"{target} = bytes(data[pos:pos + {n}])")
            self.emit(indent, f"pos += {n}")
            return
        element = element_field(field)
        least = min_size(element, s.version)
        self.emit(indent, f"if {n} * {least} > end - pos:" if least > 1 else f"if {n} > end - pos:")
        self.emit(indent + 1, f"raise too_many_elements({start}, {where!r}, {n}, end - pos)")
        if element["type"] in _NUMBER_ARRAY_KINDS:
            self.emit(indent, f"if {n} < {_CACHED_ARRAY_LENGTHS}:")
            self.emit(indent + 1, f"{target} = {element['type'].upper()}_ARRAYS[{n}].unpack_from(data, pos)")
            self.emit(indent, "else:")
            self.emit(indent + 1, f"{target} = array_struct({element['type']!r}, {n}).unpack_from(data, pos)")
            self.emit(indent, f"pos += {n} * {least}")
            return
        if depth > 0 or not (is_struct(element["type"]) or element["type"] in ("string", "bytes")):
            raise ValueError(f"{where}: arrays of {element['type']} are in no schema, and not read")
        self.emit(indent, "items = []")
        self.emit(indent, f"for _ in range({n}):")
        if is_struct(element["type"]):
            self.emit(indent + 1, f"item, pos = decode_{s.element(field).base}(data, pos, end)")
        else:
            self.read_value(s, element, where, "item", indent + 1, depth + 1)
        self.emit(indent + 1, "items.append(item)")
        self.emit(indent, f"{target} = tuple(items)")

    def read_tagged_section(self, s: StructVersion) -> None:
        """LOG-3: an empty tagged-field section inline; any other by read_tagged_fields."""
        self.emit(1, "if pos < end and data[pos] == 0:  # no tagged fields")
        self.emit(2, "pos += 1")
        self.emit(1, "else:")
        if not s.tagged():
            self.emit(2, f"pos = read_tagged_fields(data, pos, end, {s.where!r}, {{}})[1]")
            return
        known = ", ".join(f"{f['tag']}: ({f['name']!r}, decode_{s.base}_{f['name']})" for f in s.tagged())
        self.emit(2, f"tagged, pos = read_tagged_fields(data, pos, end, {s.where!r}, {{{known}}})")
        for field in s.tagged():
            self.emit(2, f"{local_name(field)} = tagged.get({field['tag']}, {local_name(field)})")

    def write_tag_decoder(self, s: StructVersion, field: dict[str, Any]) -> None:
        self.emit(0, f"def decode_{s.base}_{field['name']}(data, pos, end):")
        what = f"{s.where}.{field['name']} version {s.version} (tag {field['tag']})"
        self.emit(1, f'"""{what}: its value, and where it ends."""')
        self.read_value(s, field, f"{s.where}.{field['name']}", "value", 1, 0)
        self.emit(1, "return value, pos")
        self.emit(0, "")


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
