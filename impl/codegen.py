"""The codec generator: reads a record or message schema once and writes the Python source of
one encode and one decode function per struct and version (codec.py builds every codec with it,
at import, and ``codec_source(name)`` shows the source). The generated code calls the wire
primitives (wire.py)."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from attrs import frozen

from kraftspec.generated import define

from .messages import default_value, snake_case
from .wire import (
    ARRAY_STRUCTS,
    BOOL_BYTE,
    CACHED_ARRAY_LENGTHS,
    FIXED_CODES,
    FIXED_SIZES,
    FRAME_TYPE,
    NUMBER_ARRAY_KINDS,
    array_struct,
    bad_bool_in_run,
    bytes_left_over,
    fixed_run_cut,
    intern_uuid,
    interned_uuids,
    not_utf8,
    null_refused,
    number_array_writer,
    read_tagged_fields,
    read_uvarint,
    too_many_bytes,
    too_many_elements,
    write_bytes,
    write_bytes_array,
    write_string,
    write_string_array,
    write_struct_array,
    write_uvarint,
)


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

def is_fixed(kind: str) -> bool:
    return kind in FIXED_CODES


def is_struct(kind: str) -> bool:
    return not is_fixed(kind) and kind not in ("string", "bytes") and not kind.startswith("[]")


def min_size(field: dict[str, Any], version: int) -> int:
    """The fewest bytes a value of ``field`` takes: its size if fixed, else its length varint,
    or for a struct its fields' least sizes plus its tagged-field count."""
    kind = field["type"]
    if is_fixed(kind):
        return FIXED_SIZES[kind]
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


# ---- the generator -------------------------------------------------------------------

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
    **{f"write_{kind}_array": number_array_writer(kind) for kind in NUMBER_ARRAY_KINDS},
    **{f"{kind.upper()}_ARRAYS": ARRAY_STRUCTS[kind] for kind in NUMBER_ARRAY_KINDS},
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
        return FIXED_CODES[kind], f"{expression}.bytes"
    if kind == "bool":
        return FIXED_CODES[kind], f"BOOL_BYTE[{expression}]"
    return FIXED_CODES[kind], expression


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

    def __init__(
        self, name: str, cls: type, schema: dict[str, Any], record_type: int | None, frame_type: int = FRAME_TYPE, label: str | None = None
    ):
        """``frame_type`` begins a record's frame (DEC-10); ``label`` names the generated source in
        tracebacks (default: ``name``)."""
        if schema.get("flexibleVersions") != "0+":
            raise ValueError(f"{name}: only schemas flexible from version 0 are encoded here (LOG-3, RPC-1)")
        self.name = name
        self.cls = cls
        self.schema = schema
        self.record_type = record_type
        self.frame_type = frame_type
        self.label = label or name
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
                header = write_uvarint(self.frame_type) + write_uvarint(self.record_type) + write_uvarint(version)
            self.write_struct(top, header, top=True)
            stems[version] = top.base
        source = "\n".join(self.lines) + "\n"
        define(source, self.namespace, f"kraftspec.impl.codec {self.label}")  # exec, or its compiled equivalent
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
            if element in NUMBER_ARRAY_KINDS or element in ("string", "bytes"):
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
            layout.append((f"{where}.{field['name']}", size, FIXED_SIZES[field["type"]], field["type"]))
            size += FIXED_SIZES[field["type"]]
        layout_name = self.constant("RUN", tuple(layout))
        unpack = self.constant("UNPACK", struct.Struct(">" + "".join(FIXED_CODES[f["type"]] for f in run)).unpack_from)
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
        if element["type"] in NUMBER_ARRAY_KINDS:
            self.emit(indent, f"if {n} < {CACHED_ARRAY_LENGTHS}:")
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
