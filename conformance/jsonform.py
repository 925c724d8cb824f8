"""The neutral form of records and messages: schema-keyed JSON, the same whatever
implementation produced them.

``to_json(obj, schema_name, version)`` reads an object field by field as the schema lists them
(attribute names are the schema's in snake case, which both kraftspec.model and kraftspec.impl
use), keeping only the fields the version has; a field the object lacks takes its schema
default (the model leaves out ThrottleTimeMs, always 0). UUIDs become their 22-character
text (TOOL-2), error codes plain integers. ``from_json`` builds an object of a given family of
classes back from that form. Conformance compares implementations in this form, and traces
(issue 4) are written in it.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Callable
from enum import Enum
from typing import Any
from uuid import UUID

from kraftspec.generated import define
from kraftspec.spec.schemas import FORMATS, INT_RANGES, RPC_FORMATS, default_value, record_schema, record_schemas, rpc_schema, rpc_schemas

_MISSING = object()
SEED_FORMATS = "seed-000"


def schema_of(name: str) -> dict[str, Any]:
    """The schema of a message or record. A record type or message of a profile's own formats that
    seed 000 defines differently (DEC-22, DEC-9) is named ``FORMATS:Name``, as :func:`qualified`
    gives it."""
    formats, _, bare = name.rpartition(":")
    if formats:
        return rpc_schema(bare, formats) if bare in rpc_schemas() else record_schema(bare, formats)
    if name in rpc_schemas():
        return rpc_schemas()[name]
    for schema in record_schemas().values():
        if schema["name"] == name:
            return schema
    raise KeyError(f"no schema named {name!r}")


@functools.cache
def qualified(name: str, formats: str) -> str:
    """The name :func:`schema_of` knows the record type or message ``name`` of ``formats`` (a
    profile's ``record_formats`` for a record, its ``rpc_formats`` for a message) by: the bare name
    where the formats share seed 000's definition, ``FORMATS:Name`` where they have their own."""
    if formats == SEED_FORMATS:
        return name
    if name in rpc_schemas():
        if formats not in RPC_FORMATS:
            return name
        return name if rpc_schema(name, formats) is rpc_schemas()[name] else f"{formats}:{name}"
    if formats not in FORMATS:
        return name
    try:
        own = record_schema(name, formats)
    except KeyError:
        return name
    try:
        seed = record_schema(name, SEED_FORMATS)
    except KeyError:
        seed = None
    return name if own is seed else f"{formats}:{name}"


@functools.cache
def newest_version(name: str) -> int:
    """The newest version of a record type: the one a committed record is in (spec/traces.md), as
    its formats write it (DEC-22; 0 for every record of seed 000's)."""
    return int(schema_of(name)["validVersions"].split("-")[-1].rstrip("+") or 0)


def qualified_name(cls: type) -> str:
    """The schema name of a record class: its formats' (``FORMATS`` class attribute) when not seed 000's."""
    return qualified(cls.__name__, getattr(cls, "FORMATS", SEED_FORMATS))


def in_versions(spec: str, version: int) -> bool:
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    low, _, high = spec.partition("-")
    return int(low) <= version <= int(high or low)


def snake_case(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def uuid_text(value: UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def text_uuid(text: str) -> UUID:
    return UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def _default(field: dict[str, Any]) -> Any:
    """The JSON form of a field's default value (spec.schemas.default_value)."""
    value = default_value(field)
    if isinstance(value, tuple):
        return []
    if isinstance(value, UUID):
        return uuid_text(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def _value_to_json(value: Any, field: dict[str, Any], version: int) -> Any:
    kind = field["type"]
    if value is None:
        return None
    if kind.startswith("[]"):
        element = dict(field, type=kind[2:])
        return [_value_to_json(v, element, version) for v in value]
    if "fields" in field:
        return _struct_to_json(value, field["fields"], version)
    if kind == "uuid":
        return uuid_text(value)
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Enum):
        return value.value
    if kind in ("int8", "int16", "int32", "int64", "uint16"):
        return int(value)
    if kind == "bool":
        return bool(value)
    return value


def _struct_to_json(obj: Any, fields: list[dict[str, Any]], version: int) -> dict[str, Any]:
    out = {}
    for field in fields:
        if not in_versions(field["versions"], version):
            continue
        value = getattr(obj, snake_case(field["name"]), _MISSING)
        out[field["name"]] = _default(field) if value is _MISSING else _value_to_json(value, field, version)
    return out


def to_json(obj: Any, version: int = 0, name: str | None = None) -> dict[str, Any]:
    """The neutral form of a record or message: ``{field: value}`` in schema order."""
    schema = schema_of(name or qualified_name(type(obj)))
    return _struct_to_json(obj, schema["fields"], version)


def _value_from_json(value: Any, field: dict[str, Any], make, parent: str) -> Any:
    kind = field["type"]
    if value is None:
        return None
    if kind.startswith("[]"):
        if "fields" in field:  # an array of structs: each element is a ``parent.Struct``
            path = f"{parent}.{kind[2:]}"
            return tuple(make(path, _struct_from_json(v, field["fields"], make, path)) for v in value)
        element = dict(field, type=kind[2:])
        return tuple(_value_from_json(v, element, make, parent) for v in value)
    if kind == "uuid":
        return text_uuid(value)
    if kind == "bytes":
        return base64.b64decode(value)
    return value


def _struct_from_json(data: dict[str, Any], fields: list[dict[str, Any]], make, path: str) -> dict[str, Any]:
    return {
        snake_case(field["name"]): _value_from_json(data[field["name"]], field, make, path)
        for field in fields
        if field["name"] in data
    }


def from_json(data: dict[str, Any], name: str, make: Callable[[str, dict[str, Any]], Any]) -> Any:
    """Build an object from its neutral form. ``make(path, kwargs)`` builds the object of a
    message or record (path = its name) or of a nested struct (path = ``Message.Struct`` or
    ``Message.Struct.Inner``) from keyword arguments in snake case."""
    schema = schema_of(name)
    return make(name, _struct_from_json(data, schema["fields"], make, name))


# ---- compiled converters -------------------------------------------------------------------------
#
# The functions above walk the schema for every value: clear, and the reference. Replaying and
# recording traces at volume convert millions of objects, so the two functions below compile,
# once per (class, version), Python source that reads and builds exactly the fields the schema
# has, in order. tests/test_jsonform.py checks that both ways agree.

_UUID_TEXT: dict[int, str] = {}  # by the UUID's integer, whose hash is C's (a UUID's own is Python code)
_TEXT_UUID: dict[str, UUID] = {}
_CACHE_LIMIT = 1 << 16


def cached_uuid_text(value: UUID) -> str:
    key = value.int
    text = _UUID_TEXT.get(key)
    if text is None:
        if len(_UUID_TEXT) >= _CACHE_LIMIT:
            _UUID_TEXT.clear()
        text = _UUID_TEXT[key] = uuid_text(value)
    return text


def cached_text_uuid(text: str) -> UUID:
    value = _TEXT_UUID.get(text)
    if value is None:
        if len(_TEXT_UUID) >= _CACHE_LIMIT:
            _TEXT_UUID.clear()
        value = _TEXT_UUID[text] = text_uuid(text)
    return value


_TO_JSON: dict[tuple[type, int, str | None], Callable[[Any], dict]] = {}


def compiled_to_json(cls: type, version: int, name: str | None = None) -> Callable[[Any], dict]:
    """A function turning an instance of ``cls`` into its neutral form at ``version``, in the schema
    ``name`` (by default the class's own, qualified_name). Kept by the arguments as given: the
    default name is worked out once, not at every call."""
    key = (cls, version, name)
    function = _TO_JSON.get(key)
    if function is None:
        schema = name or qualified_name(cls)
        namespace: dict[str, Any] = {"uuid_text": cached_uuid_text, "b64": base64.b64encode}
        source = _to_json_source("convert", schema_of(schema)["fields"], version, cls, namespace, [0])
        define(source, namespace, f"kraftspec.conformance.jsonform to_json {schema} v{version}")
        function = _TO_JSON[key] = namespace["convert"]
    return function


def _to_json_source(function: str, fields, version: int, cls, namespace, counter) -> str:
    items, helpers = [], []
    for field in fields:
        if not in_versions(field["versions"], version):
            continue
        attr = snake_case(field["name"])
        if cls is not None and not _has_attribute(cls, attr):
            items.append(f"{field['name']!r}: {_default(field)!r}")
            continue
        value = f"o.{attr}"
        kind = field["type"]
        nullable = "nullableVersions" in field and in_versions(field["nullableVersions"], version)
        if kind.startswith("[]") and "fields" in field:
            counter[0] += 1
            inner = f"_s{counter[0]}"
            helpers.append(_to_json_source(inner, field["fields"], version, _element_class(cls, attr), namespace, counter))
            expr = f"[{inner}(x) for x in {value}]"
        elif kind.startswith("[]"):
            element = kind[2:]
            expr = f"[uuid_text(x) for x in {value}]" if element == "uuid" else f"list({value})"
        elif kind == "uuid":
            expr = f"uuid_text({value})"
        elif kind == "bytes":
            expr = f"b64(bytes({value})).decode('ascii')"
        elif kind == "bool":
            expr = f"bool({value})"
        elif kind in ("int8", "int16", "int32", "int64", "uint16"):
            expr = f"int({value})"
        else:
            expr = value
        if nullable or kind.startswith("[]"):
            expr = f"(None if {value} is None else {expr})"
        items.append(f"{field['name']!r}: {expr}")
    body = ",\n        ".join(items)
    return "\n".join(helpers) + f"\ndef {function}(o):\n    return {{\n        {body}\n    }}\n"


def _has_attribute(cls, attr: str) -> bool:
    import attrs as _attrs

    if _attrs.has(cls):
        return attr in {a.name for a in _attrs.fields(cls)}
    return attr in getattr(cls, "__slots__", ()) or attr in getattr(cls, "FIELDS", ())


_ELEMENT_CLASSES: dict[tuple[type, str], type | None] = {}


def _element_class(cls, attr: str):
    """The class of an array of structs' elements, when it can be told from the class (impl's
    generated classes name it; the model's attrs classes do not, and the compiled converter then
    reads every attribute the schema names)."""
    return _ELEMENT_CLASSES.get((cls, attr))


_FROM_JSON: dict[tuple[str, int, int], Callable[[dict], Any]] = {}


def compiled_from_json(name: str, version: int, make: Callable[[str, dict[str, Any]], Any]) -> Callable[[dict], Any]:
    """A function building, with ``make``, the object of ``name`` from its neutral form. When
    ``make`` has a ``resolve(path) -> class`` attribute, the classes are looked up once, here, and
    the generated code calls their constructors directly."""
    key = (name, version, id(make))
    function = _FROM_JSON.get(key)
    if function is None:
        resolve = getattr(make, "resolve", None)
        namespace: dict[str, Any] = {"text_uuid": cached_text_uuid, "b64decode": base64.b64decode, "make": make}
        source = _from_json_source("build", schema_of(name)["fields"], version, name, namespace, [0], resolve)
        define(source, namespace, f"kraftspec.conformance.jsonform from_json {name} v{version}")
        function = _FROM_JSON[key] = namespace["build"]
    return function


def _from_json_source(function: str, fields, version: int, path: str, namespace, counter, resolve=None) -> str:
    helpers, arguments = [], []
    for field in fields:
        if not in_versions(field["versions"], version):
            continue
        name, attr, kind = field["name"], snake_case(field["name"]), field["type"]
        if kind.startswith("[]") and "fields" in field:
            counter[0] += 1
            inner = f"_b{counter[0]}"
            helpers.append(_from_json_source(inner, field["fields"], version, f"{path}.{kind[2:]}", namespace, counter, resolve))
            expr = f"tuple([{inner}(x) for x in v])"
        elif kind.startswith("[]"):
            expr = "tuple([text_uuid(x) for x in v])" if kind[2:] == "uuid" else "tuple(v)"
        elif kind == "uuid":
            expr = "text_uuid(v)"
        elif kind == "bytes":
            expr = "b64decode(v)"
        else:
            expr = "v"
        arguments.append((name, attr, expr))
    if resolve is not None:  # straight to the constructor; a field the data lacks keeps its default
        if helpers:  # the nested structs' builders, which the converters below call: defined before
            # them, so that a compiled build finds each converter's names bound when it is defined
            define("\n".join(helpers), namespace, f"kraftspec.conformance.jsonform from_json {path}")
            helpers = []
        counter[0] += 1
        cls_name = f"_c{counter[0]}"
        namespace[cls_name] = resolve(path)
        lines = []
        for name, attr, expr in arguments:
            converter = f"_x{counter[0]}_{attr}"
            define(f"def {converter}(v):\n    return None if v is None else {expr}\n", namespace,
                   f"kraftspec.conformance.jsonform from_json {path}")
            lines.append(f"    if {name!r} in d: k[{attr!r}] = {converter}(d[{name!r}])")
        simple = all(expr == "v" for _, _, expr in arguments)
        if simple:
            call = ", ".join(f"{attr}=d[{name!r}]" for name, attr, _ in arguments)
            body = f"    try:\n        return {cls_name}({call})\n    except KeyError:\n        pass\n"
        else:  # a field taken as it is needs no converter: ``None if v is None else v`` is v
            call = ", ".join(f"{attr}=d[{name!r}]" if expr == "v" else f"{attr}=_x{counter[0]}_{attr}(d[{name!r}])"
                             for name, attr, expr in arguments)
            body = f"    try:\n        return {cls_name}({call})\n    except KeyError:\n        pass\n"
        fallback = "\n".join(lines) or "    pass"
        return "\n".join(helpers) + f"\ndef {function}(d):\n{body}    k = {{}}\n{fallback}\n    return {cls_name}(**k)\n"
    lines = [f"    if {name!r} in d:\n        v = d[{name!r}]\n        k[{attr!r}] = None if v is None else {expr}" for name, attr, expr in arguments]
    body = "\n".join(lines) or "    pass"
    return "\n".join(helpers) + f"\ndef {function}(d):\n    k = {{}}\n{body}\n    return make({path!r}, k)\n"

def fast_to_json(obj: Any, version: int = 0, name: str | None = None) -> dict[str, Any]:
    """``to_json`` through the compiled converter of the object's class."""
    return compiled_to_json(type(obj), version, name)(obj)


def fast_from_json(data: dict[str, Any], name: str, make: Callable[[str, dict[str, Any]], Any], version: int = 0) -> Any:
    """``from_json`` through the compiled converter."""
    return compiled_from_json(name, version, make)(data)


# ---- checking the neutral form -------------------------------------------------------------------
#
# A trace is read from a file, so its messages and records are checked against their schema
# before anything converts them: every field of the version present, no other field, each value
# of its type (a boolean is not an integer), integers in their type's range, UUIDs and base64 as
# the neutral form writes them, null only where the schema allows it. The checks are built once
# per (schema, version) from the schema JSON, as nested functions; a failure names the field's
# path inside the message (``Topics[0].Partitions[1].Replicas[2]``).

_PLAIN_TYPES = {"bool": ((bool,), "a boolean"), "float64": ((int, float), "float64")}  # bool is not an int here
_UUID_TEXT_FORM = re.compile(r"[A-Za-z0-9_-]{21}[AQgw]")  # 128 bits in 22 characters, unpadded
_BASE64_FORM = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


class FormError(ValueError):
    """A value that is not in the neutral form of its schema: ``path`` names the field inside the
    message (empty for the message itself), ``problem`` says what is wrong. ``field`` is the
    name of the field at fault inside the struct that raises it."""

    def __init__(self, problem: str, field: str = ""):
        super().__init__(f"{field}: {problem}" if field else problem)
        self.problem, self.parts = problem, [f".{field}"] if field else []

    @property
    def path(self) -> str:
        return "".join(reversed(self.parts)).lstrip(".")

    def inside(self, part: str) -> "FormError":
        """The error, one level further out (``part`` is ``.Name`` or ``[i]``)."""
        self.parts.append(part)
        self.args = (f"{self.path}: {self.problem}",)
        return self


def describe(value: Any) -> str:
    """A value as an error message shows it: JSON, shortened; containers by their kind."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


def valid_text(value: str) -> bool:
    """Whether a string can be written as UTF-8 (JSON allows lone surrogates, UTF-8 does not)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _scalar_check(kind: str) -> Callable[[Any], None]:
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]

        def check_int(value):
            if type(value) is not int:
                raise FormError(f"expected {kind}, got {describe(value)}")
            if not low <= value <= high:
                raise FormError(f"expected {kind}, got {value}, outside {low}..{high}")

        return check_int
    if kind in _PLAIN_TYPES:
        types, what = _PLAIN_TYPES[kind]

        def check_plain(value):
            if type(value) not in types:
                raise FormError(f"expected {what}, got {describe(value)}")

        return check_plain
    if kind == "string":
        def check_string(value):
            if type(value) is not str:
                raise FormError(f"expected a string, got {describe(value)}")
            if not valid_text(value):
                raise FormError(f"expected a string, got {describe(value)}, which is not valid Unicode (a lone surrogate)")

        return check_string
    if kind in ("uuid", "bytes"):
        form, what = (_UUID_TEXT_FORM, "a uuid (22 characters of URL-safe base64)") if kind == "uuid" else (_BASE64_FORM, "bytes in base64")

        def check_text(value):
            if type(value) is not str or form.fullmatch(value) is None:
                raise FormError(f"expected {what}, got {describe(value)}")

        return check_text
    raise ValueError(f"the schemas use a type kraftspec cannot check: {kind!r}")


def _field_check(field: dict[str, Any], version: int) -> Callable[[Any], None]:
    kind = field["type"]
    if kind[2:] in INT_RANGES:  # []int32 and the like: the elements checked in one loop
        check = _int_array_check(kind[2:])
    elif kind.startswith("[]"):
        element = _struct_check(field["fields"], version) if "fields" in field else _scalar_check(kind[2:])
        expected = f"a list of {kind[2:]}"

        def check(value):
            if type(value) is not list:
                raise FormError(f"expected {expected}, got {describe(value)}")
            for index, item in enumerate(value):
                try:
                    element(item)
                except FormError as error:
                    raise error.inside(f"[{index}]") from None
    else:
        check = _scalar_check(kind)
    if _nullable(field, version):
        not_null = check

        def check(value):
            if value is not None:
                not_null(value)

    return check


def _int_array_check(kind: str) -> Callable[[Any], None]:
    low, high = INT_RANGES[kind]
    element = _scalar_check(kind)

    def check(value):
        if type(value) is not list:
            raise FormError(f"expected a list of {kind}, got {describe(value)}")
        for item in value:
            if type(item) is not int or not low <= item <= high:
                index = next(i for i, x in enumerate(value) if x is item)
                _raise_inside(element, item, f"[{index}]")

    return check


def _nullable(field: dict[str, Any], version: int) -> bool:
    return "nullableVersions" in field and in_versions(field["nullableVersions"], version)


def _raise_inside(check: Callable[[Any], None], value: Any, part: str) -> None:
    """Raise the error ``check`` finds in ``value``, one level further out."""
    try:
        check(value)
    except FormError as error:
        raise error.inside(part) from None


def _struct_check(fields: list[dict[str, Any]], version: int) -> Callable[[Any], None]:
    present = [f for f in fields if in_versions(f["versions"], version)]
    checks = {f["name"]: _field_check(f, version) for f in present}
    names = frozenset(checks)
    listed = ", ".join(checks)
    # the commonest fields, integers and strings that may not be null, are checked inline (a call
    # per field costs more than the check); on a failure, their own check says what is wrong
    ints = [(f["name"], *INT_RANGES[f["type"]]) for f in present if f["type"] in INT_RANGES and not _nullable(f, version)]
    strings = [f["name"] for f in present if f["type"] == "string" and not _nullable(f, version)]
    others = [(name, check) for name, check in checks.items() if name not in {i[0] for i in ints} | set(strings)]

    def check(value):
        if type(value) is not dict:
            raise FormError(f"expected an object with the fields {listed}, got {describe(value)}")
        if value.keys() != names:
            for name in checks:
                if name not in value:
                    raise FormError("missing", name)
            unknown = sorted(set(value) - names)[0]
            raise FormError(f"unknown field (expected {listed})", unknown)
        for name, low, high in ints:
            item = value[name]
            if type(item) is not int or not low <= item <= high:
                _raise_inside(checks[name], item, f".{name}")
        for name in strings:
            item = value[name]
            if type(item) is not str or not item.isascii():
                _raise_inside(checks[name], item, f".{name}")
        for name, check_field in others:
            try:
                check_field(value[name])
            except FormError as error:
                raise error.inside(f".{name}") from None

    return check


_CHECKS: dict[tuple[str, int], Callable[[Any], None]] = {}


def check_form(data: Any, name: str, version: int = 0) -> None:
    """Check that ``data`` is the neutral form of the message or record ``name`` at ``version``;
    raise :class:`FormError` naming the first field that is not."""
    key = (name, version)
    check = _CHECKS.get(key)
    if check is None:
        check = _CHECKS[key] = _struct_check(schema_of(name)["fields"], version)
    check(data)
