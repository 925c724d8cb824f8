"""The model's records and messages follow spec/schemas/ field for field (no drift)."""

import attrs
import pytest

from kraftspec.model import messages
from kraftspec.model.framing import _default, snake_case
from kraftspec.model.records import RECORD_TYPES, STRUCT_TYPES
from kraftspec.model.formats import FORMATS as MODEL_FORMATS
from kraftspec.spec.schemas import FORMATS, RPC_FORMATS, record_schemas, rpc_schemas

# kraftspec classes for the nested structs of the messages (their schema names repeat across messages)
MESSAGE_STRUCTS = {
    ("BrokerRegistrationRequest", "Listeners"): messages.Listener,
    ("BrokerRegistrationRequest", "Features"): messages.Feature,
    ("AlterIsrRequest", "Topics"): messages.AlterIsrTopic,
    ("AlterIsrRequest", "Partitions"): messages.AlterIsrPartition,
    ("AlterIsrResponse", "Topics"): messages.AlterIsrTopicResult,
    ("AlterIsrResponse", "Partitions"): messages.AlterIsrPartitionResult,
    ("CreateTopicsRequest", "Topics"): messages.CreatableTopic,
    ("CreateTopicsRequest", "Assignments"): messages.ReplicaAssignment,
    ("CreateTopicsResponse", "Topics"): messages.CreatableTopicResult,
    ("DeleteTopicsResponse", "Responses"): messages.DeletableTopicResult,
    ("AlterPartitionReassignmentsRequest", "Topics"): messages.ReassignableTopic,
    ("AlterPartitionReassignmentsRequest", "Partitions"): messages.ReassignablePartition,
    ("AlterPartitionReassignmentsResponse", "Responses"): messages.ReassignableTopicResult,
    ("AlterPartitionReassignmentsResponse", "Partitions"): messages.ReassignablePartitionResult,
    ("ListPartitionReassignmentsRequest", "Topics"): messages.ListedTopic,
    ("ListPartitionReassignmentsResponse", "Topics"): messages.OngoingTopicReassignment,
    ("ListPartitionReassignmentsResponse", "Partitions"): messages.OngoingPartitionReassignment,
}
NOT_WIRE_FIELDS = {"BrokerHeartbeatRequest": {"version"}}  # the request header's version, not a body field


def field_names(cls) -> list[str]:
    return [a.name for a in attrs.fields(cls)]


def schema_names(fields, *, skip=("ThrottleTimeMs",)) -> list[str]:
    return [snake_case(f["name"]) for f in fields if f["name"] not in skip]


@pytest.mark.parametrize("api_key", sorted(record_schemas()))
def test_record_classes_match_their_schema(api_key):
    schema = record_schemas()[api_key]
    cls = RECORD_TYPES[api_key]
    assert cls.__name__ == schema["name"]
    assert field_names(cls) == schema_names(schema["fields"])
    for field in schema["fields"]:
        if "fields" in field:
            struct = STRUCT_TYPES[field["type"][2:]]
            assert field_names(struct) == schema_names(field["fields"])
        if "tag" in field:  # a tagged field's default decides whether it is written
            assert attrs.fields_dict(cls)[snake_case(field["name"])].default == _default(field)


@pytest.mark.parametrize("name", sorted(rpc_schemas()))
def test_message_classes_match_their_schema(name):
    """A message class has the fields of every message formats' definition of it (DEC-9): seed
    000's in order, then those only Kafka's has; api_key is each formats' own."""
    schema = rpc_schemas()[name]
    cls = getattr(messages, name)
    names = [n for n in field_names(cls) if n not in NOT_WIRE_FIELDS.get(name, set())]
    union = schema_names(schema["fields"])
    for formats in RPC_FORMATS:
        union += [n for n in schema_names(rpc_schemas(formats)[name]["fields"]) if n not in union]
    assert names == union
    for formats in RPC_FORMATS:
        if schema["type"] == "request":
            assert messages.api_key(cls, formats) == rpc_schemas(formats)[name]["apiKey"]

    def nested(fields):
        for field in fields:
            if "fields" in field:
                struct = MESSAGE_STRUCTS[(name, field["name"])]
                assert field_names(struct) == schema_names(field["fields"]), (name, field["name"])
                nested(field["fields"])

    nested(schema["fields"])


@pytest.mark.parametrize("formats", sorted(FORMATS))
def test_every_formats_class_matches_its_formats_schema(formats):
    """DEC-22: each profile's record formats, the kafka profile's own four types included, follow
    their definitions (spec/schemas/kafka-records/ over spec/schemas/records/)."""
    say = MODEL_FORMATS[formats]
    for api_key, schema in record_schemas(formats).items():
        cls = say.types[api_key]
        assert cls.__name__ == schema["name"]
        assert field_names(cls) == schema_names(schema["fields"]), schema["name"]
        for field in schema["fields"]:
            if "fields" in field:
                assert field_names(say.structs[field["type"][2:]]) == schema_names(field["fields"])
            if "tag" in field:
                assert attrs.fields_dict(cls)[snake_case(field["name"])].default == _default(field)
