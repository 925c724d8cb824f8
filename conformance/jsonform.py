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
from collections.abc import Callable
from enum import Enum
from typing import Any
from uuid import UUID

from kraftspec.spec.schemas import record_schemas, rpc_schemas

_MISSING = object()


def schema_of(name: str) -> dict[str, Any]:
    if name in rpc_schemas():
        return rpc_schemas()[name]
    for schema in record_schemas().values():
        if schema["name"] == name:
            return schema
    raise KeyError(f"no schema named {name!r}")


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
    kind, raw = field["type"], field.get("default")
    if raw == "null":
        return None
    if kind.startswith("[]"):
        return []
    if kind == "bool":
        return raw == "true"
    if kind in ("int8", "int16", "int32", "int64", "uint16"):
        return int(raw) if raw is not None else 0
    if kind == "float64":
        return float(raw) if raw is not None else 0.0
    if kind == "uuid":
        return uuid_text(UUID(int=0))
    return raw if raw is not None else ""


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
    schema = schema_of(name or type(obj).__name__)
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
