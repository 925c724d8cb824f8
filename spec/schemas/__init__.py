"""Message, record and error-code definitions of the kraftspec specification.

The definitions are JSON data files shipped inside this package:

* ``records/<Name>.json``: one metadata record type per file (api keys 0..14), seed 000's;
* ``kafka-records/<Name>.json``: Kafka's definitions of the record types the ``kafka`` profile
  writes differently (:data:`FORMATS`);
* ``rpcs/<Name>.json``: one request or response per file, seed 000's;
* ``kafka-rpcs/<Name>.json``: Kafka's definitions of the messages the ``kafka`` profile speaks
  differently (:data:`RPC_FORMATS`);
* ``errors.json``: the error codes, as ``{"errors": [{"name", "code", "about"}, ...]}``.

The message files use Kafka's message-definition JSON conventions (``apiKey``,
``type``, ``name``, ``validVersions``, ``flexibleVersions``, ``fields``) plus two
kraftspec keys: ``source`` (where the definition comes from) and the optional
``kraftspec`` (how and why it deviates from that source).

The files are read through :mod:`importlib.resources`, so this works both for an
installed package and for an editable install. Parsed JSON is cached: every
function returns the same shared objects on every call, and callers must treat
them as read-only (copy them, e.g. with :func:`copy.deepcopy`, before changing
anything).
"""

from __future__ import annotations

import functools
import json
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any
from uuid import UUID

__all__ = ["SPEC_VERSION", "INT_RANGES", "FORMATS", "RPC_FORMATS", "record_schemas", "record_schema", "rpc_schemas", "rpc_schema", "schema", "error_codes", "default_value"]

from kraftspec.spec import SPEC_VERSION  # the version of the specification these schemas belong to


def _package_root() -> Traversable:
    """Return the directory of this package as an importlib.resources Traversable."""
    return files(__name__)


def _load_dir(subdir: str) -> list[dict[str, Any]]:
    """Parse every ``*.json`` file of ``subdir``, in file-name order.

    Raises ValueError when a file's ``name`` differs from its file name, since
    lookups by name rely on the two matching.
    """
    loaded: list[dict[str, Any]] = []
    entries = sorted(_package_root().joinpath(subdir).iterdir(), key=lambda e: e.name)
    for entry in entries:
        if not entry.name.endswith(".json"):
            continue
        message = json.loads(entry.read_text(encoding="utf-8"))
        stem = entry.name.removesuffix(".json")
        if message.get("name") != stem:
            raise ValueError(f"{subdir}/{entry.name} defines {message.get('name')!r}, expected {stem!r}")
        loaded.append(message)
    return loaded


FORMATS = {"seed-000": ("records",), "kafka-3.7-IV1": ("kafka-records", "records")}
"""The record formats a profile writes (profiles.toml, ``record_formats``, DEC-22) -> the folders
of their record definitions, the first naming a type winning: the kafka formats are Kafka's own
definitions of the types it changed, and seed 000's for the rest."""

DEFAULT_FORMATS = "seed-000"


@functools.cache
def record_schemas(formats: str = DEFAULT_FORMATS) -> dict[int, dict[str, Any]]:
    """Return the metadata record definitions of ``formats`` keyed by apiKey.

    The returned dicts are cached and shared: do not mutate them.
    Raises ValueError if two records of one folder declare the same apiKey, and KeyError for
    formats the specification does not define.
    """
    if formats not in FORMATS:
        raise KeyError(f"unknown record formats {formats!r}; expected one of {', '.join(FORMATS)}")
    records: dict[int, dict[str, Any]] = {}
    for folder in reversed(FORMATS[formats]):  # the first folder overrides the later ones
        mine: dict[int, dict[str, Any]] = {}
        for record in _load_dir(folder):
            key = record["apiKey"]
            if key in mine:
                raise ValueError(f"apiKey {key} used by both {mine[key]['name']} and {record['name']}")
            mine[key] = record
        records.update(mine)
    return dict(sorted(records.items()))


@functools.cache
def record_schema(name: str, formats: str = DEFAULT_FORMATS) -> dict[str, Any]:
    """The definition of the record type ``name`` in ``formats``; KeyError if it has none."""
    for record in record_schemas(formats).values():
        if record["name"] == name:
            return record
    raise KeyError(f"no record named {name!r} in the {formats} record formats")


RPC_FORMATS = {"seed-000": ("rpcs",), "kafka-4.0": ("kafka-rpcs", "rpcs")}
"""The message formats a profile speaks (profiles.toml, ``rpc_formats``, DEC-9) -> the folders of
their definitions, the first naming a message winning: Kafka's own definitions of the broker
lifecycle's three messages (api keys 62, 63, 64), and seed 000's for the rest."""


@functools.cache
def rpc_schemas(formats: str = DEFAULT_FORMATS) -> dict[str, dict[str, Any]]:
    """Return the request and response definitions of ``formats`` keyed by name.

    The returned dicts are cached and shared: do not mutate them. KeyError for formats the
    specification does not define.
    """
    if formats not in RPC_FORMATS:
        raise KeyError(f"unknown message formats {formats!r}; expected one of {', '.join(RPC_FORMATS)}")
    messages: dict[str, dict[str, Any]] = {}
    for folder in reversed(RPC_FORMATS[formats]):  # the first folder overrides the later ones
        messages.update((message["name"], message) for message in _load_dir(folder))
    return dict(sorted(messages.items()))


def rpc_schema(name: str, formats: str = DEFAULT_FORMATS) -> dict[str, Any]:
    """The definition of the request or response ``name`` in ``formats``; KeyError if it has none."""
    try:
        return rpc_schemas(formats)[name]
    except KeyError:
        raise KeyError(f"no message named {name!r} in the {formats} message formats") from None


@functools.cache
def _all_by_name() -> dict[str, dict[str, Any]]:
    """Index every record and RPC definition by its name."""
    by_name = {record["name"]: record for record in record_schemas().values()}
    by_name.update(rpc_schemas())
    return by_name


def schema(name: str) -> dict[str, Any]:
    """Return the definition of the message or record called ``name``.

    ``name`` is the definition's ``name``, e.g. ``"PartitionRecord"`` or
    ``"BrokerHeartbeatRequest"``. The returned dict is cached and shared: do
    not mutate it. Raises KeyError for an unknown name.
    """
    try:
        return _all_by_name()[name]
    except KeyError:
        raise KeyError(f"no kraftspec message or record named {name!r}") from None


@functools.cache
def error_codes() -> dict[str, int]:
    """Return the error codes as a mapping from error name to numeric code.

    The returned dict is cached and shared: do not mutate it.
    """
    data = json.loads(_package_root().joinpath("errors.json").read_text(encoding="utf-8"))
    return {error["name"]: error["code"] for error in data["errors"]}


INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}
"""The values each integer type of the schemas holds, lowest and highest."""


def default_value(field: dict[str, Any]) -> Any:
    """The value a field has when it is not given: the schema's default, else Kafka's zero value
    (an empty tuple for an array, the zero uuid, empty bytes or string)."""
    kind, raw = field["type"], field.get("default")
    if raw == "null":
        return None
    if kind.startswith("[]"):
        return ()
    if kind == "bool":
        return raw == "true"
    if kind in ("int8", "int16", "int32", "int64", "uint16"):
        return int(raw) if raw is not None else 0
    if kind == "float64":
        return float(raw) if raw is not None else 0.0
    if kind == "uuid":
        return UUID(int=0)
    if kind == "bytes":
        return b""
    return raw if raw is not None else ""
