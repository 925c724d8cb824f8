"""impl's record and message classes, generated from spec/schemas at import time.

impl is written independently of kraftspec.model: its classes come straight from the
schemas, the single source both share. Every record type and every request and response
gets a slotted class whose attributes are the schema's fields in snake case
(``BrokerEpoch`` -> ``broker_epoch``), whose keyword arguments default to the schema's
defaults, and whose nested struct arrays are classes of their own, reachable as attributes
(``RegisterBrokerRecord.BrokerEndpoint``, ``AlterIsrRequest.PartitionData``).

Records come in the record formats the specification defines (``record_schemas(formats)``,
DEC-22): ``RECORD_CLASSES_OF[formats]`` maps each record type of a formats to its class. Seed
000's classes are ``RECORD_CLASSES``; the kafka formats (Kafka at metadata.version 3.7-IV1) share
them where Kafka's definition is seed 000's and have classes of their own, of the same name,
for the four types Kafka defines differently (``KafkaRegisterBrokerRecord``,
``BrokerRegistrationChangeRecord``, ``KafkaFeatureLevelRecord``, ``KafkaTopicRecord``). A record
class says which formats it belongs to (``FORMATS``) and the version it is written at
(``record_version``: 0 for seed 000's; what 3.7-IV1 writes for Kafka's).

Conventions the codec and the controller keep: arrays are tuples, UUIDs are ``uuid.UUID``,
and an object is never changed after it is built.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast
from uuid import UUID

from kraftspec.generated import define
from kraftspec.spec.schemas import FORMATS as SCHEMA_FORMATS
from kraftspec.spec.schemas import RPC_FORMATS
from kraftspec.spec.schemas import default_value, record_schemas, rpc_schemas

ZERO_UUID = UUID(int=0)
SEED_FORMATS = "seed-000"  # DEC-22: the record formats of spec/schemas/records/ (the kip-631 profile's)
KAFKA_FORMATS = "kafka-3.7-IV1"  # DEC-22: Kafka's, at metadata.version 3.7-IV1 (the kafka profile's)
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def snake_case(name: str) -> str:
    return _SNAKE.sub("_", name).lower()


if TYPE_CHECKING:

    class _StructMeta(type):
        # a generated class's nested struct classes (``AlterIsrRequest.PartitionData``) are made
        # from the schema at import: a type checker sees them as Any
        def __getattr__(cls, name: str) -> Any: ...

else:
    _StructMeta = type


class Struct(metaclass=_StructMeta):
    """Base of every generated class: equality and repr over the fields, in schema order."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()
    SCHEMA_FIELDS: ClassVar[tuple[dict[str, Any], ...]] = ()
    API_KEY: ClassVar[int]  # records (a message's api key is its profile's, DEC-9: spec/schemas rpc_schema)
    VALID_VERSIONS: ClassVar[str]
    FORMATS: ClassVar[str]  # records: the record formats whose definition the class follows (DEC-22)
    record_version: ClassVar[Any]  # records: the version one is written at (an int, or a property of the record)
    make: ClassVar[Callable[..., Any]]  # make(**fields) builds what cls(**fields) does, faster (make_class)

    if TYPE_CHECKING:
        # the fields and the keyword arguments of ``__init__`` are made from the schema at
        # import: a type checker sees them as Any
        def __init__(self, **fields: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]  # equal by value, and not meant as keys

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self.FIELDS)})"


def make_class(name: str, fields: list[dict[str, Any]], qualname: str | None = None) -> type[Struct]:
    """A slotted class for a schema struct: ``__init__`` takes every field by keyword, in order."""
    names = tuple(snake_case(f["name"]) for f in fields)
    for n in names:
        if keyword.iskeyword(n):
            raise ValueError(f"{name}: field {n!r} is a Python keyword")
    defaults = {n: default_value(f) for n, f in zip(names, fields, strict=True)}
    params = ", ".join(f"{n}=_d_{n}" for n in names)
    body = "\n".join(f"    self.{n} = {n}" for n in names) or "    pass"
    namespace: dict[str, Any] = {f"_d_{n}": v for n, v in defaults.items()}
    define(f"def __init__(self, {params}):\n{body}\n", namespace, f"kraftspec.impl.messages {name}.__init__")
    compare = " and ".join(f"self.{n} == other.{n}" for n in names) or "True"
    define(
        f"def __eq__(self, other):\n    if type(other) is not type(self):\n        return NotImplemented\n"
        f"    return {compare}\n",
        namespace, f"kraftspec.impl.messages {name}.__eq__",
    )
    cls = cast("type[Struct]", type(name, (Struct,), {
        "__slots__": names, "__init__": namespace["__init__"], "__eq__": namespace["__eq__"], "__hash__": None, "FIELDS": names,
    }))
    # make(...): the object cls(...) builds, built without calling the class, which turns keyword
    # arguments into a dict and back before __init__ runs (half the time of a small record)
    namespace.update(_cls=cls, _new=object.__new__)
    define(f"def make({params}):\n    self = _new(_cls)\n{body}\n    return self\n", namespace, f"kraftspec.impl.messages {name}.make")
    cls.make = staticmethod(namespace["make"])
    cls.SCHEMA_FIELDS = tuple(fields)
    cls.__qualname__ = qualname or name
    for f in fields:
        if f["type"].startswith("[]") and "fields" in f:
            struct_name = f["type"][2:]
            setattr(cls, struct_name, make_class(struct_name, f["fields"], f"{cls.__qualname__}.{struct_name}"))
    return cls


def _record_class(formats: str, api_key: int, schema: dict[str, Any]) -> type[Struct]:
    cls = make_class(schema["name"], schema["fields"])
    cls.API_KEY = api_key
    cls.VALID_VERSIONS = schema["validVersions"]
    cls.FORMATS = formats
    cls.record_version = 0  # the version it is written at; Kafka's own types below
    return cls


def _build() -> tuple[dict[str, dict[int, type[Struct]]], dict[str, type[Struct]]]:
    seed_schemas = record_schemas(SEED_FORMATS)
    seed = {api_key: _record_class(SEED_FORMATS, api_key, schema) for api_key, schema in sorted(seed_schemas.items())}
    records = {SEED_FORMATS: seed}
    for formats in SCHEMA_FORMATS:
        if formats != SEED_FORMATS:  # seed 000's class wherever the formats define the type as seed 000 does
            records[formats] = {
                api_key: seed[api_key] if schema == seed_schemas.get(api_key) else _record_class(formats, api_key, schema)
                for api_key, schema in sorted(record_schemas(formats).items())
            }
    messages = {}
    for name, schema in sorted(rpc_schemas().items()):
        # DEC-9: one class per message holds the fields of every message formats (Kafka's
        # UnregisterBrokerResponse adds ErrorMessage); each formats' codec and JSON form write its own
        fields = list(schema["fields"])
        for formats in RPC_FORMATS:
            known = {f["name"] for f in fields}
            fields += [f for f in rpc_schemas(formats)[name]["fields"] if f["name"] not in known]
        cls = make_class(name, fields)
        cls.VALID_VERSIONS = schema["validVersions"]
        messages[name] = cls
    return records, messages


RECORD_CLASSES_OF, MESSAGE_CLASSES = _build()
"""Record formats (DEC-22) -> record type -> class, and message name -> class."""

RECORD_CLASSES = RECORD_CLASSES_OF[SEED_FORMATS]
"""Seed 000's record classes, by record type."""

globals().update({cls.__name__: cls for cls in RECORD_CLASSES.values()})
globals().update(MESSAGE_CLASSES)

# Named here so that readers and tools see what this module provides.
RegisterBrokerRecord = RECORD_CLASSES[0]
UnregisterBrokerRecord = RECORD_CLASSES[1]
TopicRecord = RECORD_CLASSES[2]
PartitionRecord = RECORD_CLASSES[3]
ConfigRecord = RECORD_CLASSES[4]
PartitionChangeRecord = RECORD_CLASSES[5]
AccessControlRecord = RECORD_CLASSES[6]
FenceBrokerRecord = RECORD_CLASSES[7]
UnfenceBrokerRecord = RECORD_CLASSES[8]
RemoveTopicRecord = RECORD_CLASSES[9]
DelegationTokenRecord = RECORD_CLASSES[10]
UserScramCredentialRecord = RECORD_CLASSES[11]
FeatureLevelRecord = RECORD_CLASSES[12]
FailedReplicasRecord = RECORD_CLASSES[13]
QuotaRecord = RECORD_CLASSES[14]

# DEC-22: the types Kafka at metadata.version 3.7-IV1 defines differently (spec/schemas/kafka-records/)
KafkaRegisterBrokerRecord = RECORD_CLASSES_OF[KAFKA_FORMATS][0]
KafkaTopicRecord = RECORD_CLASSES_OF[KAFKA_FORMATS][2]
KafkaFeatureLevelRecord = RECORD_CLASSES_OF[KAFKA_FORMATS][12]
BrokerRegistrationChangeRecord = RECORD_CLASSES_OF[KAFKA_FORMATS][17]


def _change_record_version(record: Struct) -> int:
    """Kafka writes a BrokerRegistrationChangeRecord that fences or unfences at version 0, one that
    says InControlledShutdown at version 1 (the first to have the field)."""
    return 0 if record.in_controlled_shutdown == 0 else 1


KafkaRegisterBrokerRecord.record_version = 2  # DEC-22: what metadata.version 3.7-IV1 writes
BrokerRegistrationChangeRecord.record_version = property(_change_record_version)

BrokerRegistrationRequest = MESSAGE_CLASSES["BrokerRegistrationRequest"]
BrokerRegistrationResponse = MESSAGE_CLASSES["BrokerRegistrationResponse"]
BrokerHeartbeatRequest = MESSAGE_CLASSES["BrokerHeartbeatRequest"]
BrokerHeartbeatResponse = MESSAGE_CLASSES["BrokerHeartbeatResponse"]
UnregisterBrokerRequest = MESSAGE_CLASSES["UnregisterBrokerRequest"]
UnregisterBrokerResponse = MESSAGE_CLASSES["UnregisterBrokerResponse"]
AlterIsrRequest = MESSAGE_CLASSES["AlterIsrRequest"]
AlterIsrResponse = MESSAGE_CLASSES["AlterIsrResponse"]
CreateTopicsRequest = MESSAGE_CLASSES["CreateTopicsRequest"]
CreateTopicsResponse = MESSAGE_CLASSES["CreateTopicsResponse"]
DeleteTopicsRequest = MESSAGE_CLASSES["DeleteTopicsRequest"]
DeleteTopicsResponse = MESSAGE_CLASSES["DeleteTopicsResponse"]
AlterPartitionReassignmentsRequest = MESSAGE_CLASSES["AlterPartitionReassignmentsRequest"]
AlterPartitionReassignmentsResponse = MESSAGE_CLASSES["AlterPartitionReassignmentsResponse"]
ListPartitionReassignmentsRequest = MESSAGE_CLASSES["ListPartitionReassignmentsRequest"]
ListPartitionReassignmentsResponse = MESSAGE_CLASSES["ListPartitionReassignmentsResponse"]
