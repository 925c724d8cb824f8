"""Well-formedness and consistency checks for the JSON schemas in kraftspec.spec.schemas."""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import pytest

import kraftspec.spec.schemas as schemas

SCHEMA_ROOT = files("kraftspec.spec.schemas")

MESSAGE_KEYS = ["apiKey", "type", "name", "validVersions", "flexibleVersions", "source", "kraftspec", "fields"]
REQUIRED_MESSAGE_KEYS = {"apiKey", "type", "name", "validVersions", "flexibleVersions", "source", "fields"}
FIELD_KEYS = ["name", "type", "versions", "nullableVersions", "default", "mapKey", "entityType",
              "taggedVersions", "tag", "about", "fields"]

INT_RANGES = schemas.INT_RANGES
SCALAR_TYPES = set(INT_RANGES) | {"float64", "bool", "string", "bytes", "uuid"}
SCALAR_ARRAY_TYPES = {"[]int32", "[]string"}
STRUCT_ARRAY = re.compile(r"^\[\]([A-Z][A-Za-z0-9]*)$")
NULLABLE_TYPES = {"string", "bytes"}  # plus every array type

EXPECTED_RECORD_KEYS = set(range(15))
EXPECTED_ERRORS = {
    "NONE": 0, "UNKNOWN_TOPIC_OR_PARTITION": 3, "NOT_LEADER_OR_FOLLOWER": 6,
    "INVALID_TOPIC_EXCEPTION": 17, "UNSUPPORTED_VERSION": 35, "TOPIC_ALREADY_EXISTS": 36,
    "INVALID_PARTITIONS": 37, "INVALID_REPLICATION_FACTOR": 38, "INVALID_REPLICA_ASSIGNMENT": 39,
    "NOT_CONTROLLER": 41, "INVALID_REQUEST": 42, "POLICY_VIOLATION": 44, "FENCED_LEADER_EPOCH": 74,
    "STALE_BROKER_EPOCH": 77, "NO_REASSIGNMENT_IN_PROGRESS": 85, "INVALID_UPDATE_VERSION": 95,
    "UNKNOWN_TOPIC_ID": 100,
    "DUPLICATE_BROKER_REGISTRATION": 101, "BROKER_ID_NOT_REGISTERED": 102,
    "INVALID_CLUSTER_ID": 104, "INELIGIBLE_REPLICA": 107,
    "NEW_LEADER_ELECTED": 108,
    "INVALID_REGISTRATION": 119,
}


# ---------------------------------------------------------------- helpers

def _schema_files() -> list[tuple[str, Any]]:
    """Every message/record JSON file as (relative path, Traversable)."""
    found = []
    for subdir in ("records", "kafka-records", "rpcs", "kafka-rpcs"):
        for entry in SCHEMA_ROOT.joinpath(subdir).iterdir():
            if entry.name.endswith(".json"):
                found.append((f"{subdir}/{entry.name}", entry))
    return sorted(found, key=lambda item: item[0])


SCHEMA_FILES = _schema_files()
SCHEMA_PATHS = [path for path, _ in SCHEMA_FILES]


def _load(path: str) -> dict[str, Any]:
    return json.loads(SCHEMA_ROOT.joinpath(path).read_text(encoding="utf-8"))


MESSAGES = {path: _load(path) for path in SCHEMA_PATHS}


def parse_versions(spec: str) -> tuple[int, int | None]:
    """Parse a Kafka version range ("3", "0-1", "1+") into (low, high); high None = open-ended."""
    if m := re.fullmatch(r"(\d+)\+", spec):
        return int(m[1]), None
    if m := re.fullmatch(r"(\d+)-(\d+)", spec):
        low, high = int(m[1]), int(m[2])
        assert low <= high, f"empty version range {spec!r}"
        return low, high
    if m := re.fullmatch(r"\d+", spec):
        return int(spec), int(spec)
    raise AssertionError(f"malformed version range {spec!r}")


def walk_structs(message: dict[str, Any]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Yield (path, field list) for the message body and every nested struct."""
    stack = [(message["name"], message["fields"])]
    while stack:
        path, fields = stack.pop()
        yield path, fields
        for field in fields:
            if "fields" in field:
                stack.append((f"{path}.{field['name']}", field["fields"]))


def walk_fields(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield (dotted path, field) for every field at any depth."""
    for path, fields in walk_structs(message):
        for field in fields:
            yield f"{path}.{field['name']}", field


def all_fields() -> list[tuple[str, dict[str, Any]]]:
    return [item for message in MESSAGES.values() for item in walk_fields(message)]


ALL_FIELDS = all_fields()
FIELD_IDS = [path for path, _ in ALL_FIELDS]


def is_struct_array(type_: str) -> bool:
    return type_ not in SCALAR_ARRAY_TYPES and STRUCT_ARRAY.match(type_) is not None


# ---------------------------------------------------------------- files

@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_every_schema_file_parses_as_a_json_object(path: str) -> None:
    assert isinstance(_load(path), dict)


def test_errors_file_parses_as_a_json_object_with_an_errors_list() -> None:
    data = json.loads(SCHEMA_ROOT.joinpath("errors.json").read_text(encoding="utf-8"))
    assert list(data) == ["errors"]
    assert isinstance(data["errors"], list)


def test_schema_directory_holds_only_the_expected_files() -> None:
    top = sorted(e.name for e in SCHEMA_ROOT.iterdir() if e.name != "__pycache__")
    assert top == ["__init__.py", "errors.json", "kafka-records", "kafka-rpcs", "records", "rpcs", "trace.schema.json"]
    assert len([p for p in SCHEMA_PATHS if p.startswith("records/")]) == 15
    assert len([p for p in SCHEMA_PATHS if p.startswith("kafka-records/")]) == 4
    assert len([p for p in SCHEMA_PATHS if p.startswith("rpcs/")]) == 16
    assert len([p for p in SCHEMA_PATHS if p.startswith("kafka-rpcs/")]) == 6


@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_message_name_equals_file_name(path: str) -> None:
    assert MESSAGES[path]["name"] == path.split("/")[1].removesuffix(".json")


@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_message_keys_are_known_required_and_in_canonical_order(path: str) -> None:
    keys = list(MESSAGES[path])
    assert REQUIRED_MESSAGE_KEYS <= set(keys)
    assert set(keys) <= set(MESSAGE_KEYS)
    assert keys == [k for k in MESSAGE_KEYS if k in keys]


@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_message_source_and_kraftspec_note_are_nonempty_strings(path: str) -> None:
    message = MESSAGES[path]
    assert isinstance(message["source"], str) and message["source"].strip()
    if "kraftspec" in message:
        assert isinstance(message["kraftspec"], str) and message["kraftspec"].strip()


@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_message_type_matches_its_directory_and_name(path: str) -> None:
    message = MESSAGES[path]
    if path.startswith(("records/", "kafka-records/")):
        assert message["type"] == "metadata"
        assert message["name"].endswith("Record")
    else:
        assert message["type"] in ("request", "response")
        assert message["name"].endswith(message["type"].capitalize())


# ---------------------------------------------------------------- versions and keys

def test_record_api_keys_are_0_to_14() -> None:
    keys = [m["apiKey"] for p, m in MESSAGES.items() if p.startswith("records/")]
    assert len(keys) == len(set(keys)), "record api keys must be unique"
    assert set(keys) == EXPECTED_RECORD_KEYS


def test_every_record_has_valid_versions_0() -> None:
    for path, message in MESSAGES.items():
        if path.startswith("records/"):
            assert message["validVersions"] == "0", path


@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_every_message_is_flexible_from_version_0(path: str) -> None:
    assert MESSAGES[path]["flexibleVersions"] == "0+"


def test_request_response_pairs_share_api_key_and_valid_versions() -> None:
    rpcs = {m["name"]: m for p, m in MESSAGES.items() if p.startswith("rpcs/")}
    requests = {n.removesuffix("Request") for n in rpcs if n.endswith("Request")}
    responses = {n.removesuffix("Response") for n in rpcs if n.endswith("Response")}
    assert requests == responses, "every request needs a response and vice versa"
    api_keys = set()
    for base in requests:
        request, response = rpcs[base + "Request"], rpcs[base + "Response"]
        assert request["apiKey"] == response["apiKey"], base
        assert request["validVersions"] == response["validVersions"], base
        api_keys.add(request["apiKey"])
    assert len(api_keys) == len(requests), "each RPC needs its own api key"


def test_rpc_api_keys_and_versions_are_the_specified_ones() -> None:
    expected = {
        "BrokerRegistration": (57, "0"), "BrokerHeartbeat": (58, "0-1"), "UnregisterBroker": (59, "0"),
        "AlterIsr": (56, "0"), "CreateTopics": (19, "0"), "DeleteTopics": (20, "0"),
        "AlterPartitionReassignments": (45, "0"), "ListPartitionReassignments": (46, "0"),
    }
    for base, (api_key, versions) in expected.items():
        for suffix in ("Request", "Response"):
            message = schemas.schema(base + suffix)
            assert (message["apiKey"], message["validVersions"]) == (api_key, versions), base + suffix


@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_field_versions_are_well_formed_and_inside_valid_versions(path: str) -> None:
    message = MESSAGES[path]
    valid_low, valid_high = parse_versions(message["validVersions"])
    assert valid_high is not None, "validVersions must be a closed range"
    parse_versions(message["flexibleVersions"])
    for field_path, field in walk_fields(message):
        low, high = parse_versions(field["versions"])
        assert valid_low <= low <= valid_high, field_path
        assert high is None or high <= valid_high, field_path
        for key in ("nullableVersions", "taggedVersions"):
            if key in field:
                sub_low, _ = parse_versions(field[key])
                assert sub_low >= low, f"{field_path}: {key} starts before the field exists"


# ---------------------------------------------------------------- fields

@pytest.mark.parametrize(("path", "field"), ALL_FIELDS, ids=FIELD_IDS)
def test_every_field_has_name_type_versions(path: str, field: dict[str, Any]) -> None:
    for key in ("name", "type", "versions"):
        assert isinstance(field.get(key), str) and field[key], f"{path} lacks {key}"
    assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", field["name"]), path


@pytest.mark.parametrize(("path", "field"), ALL_FIELDS, ids=FIELD_IDS)
def test_field_keys_are_known_and_in_canonical_order(path: str, field: dict[str, Any]) -> None:
    keys = list(field)
    assert set(keys) <= set(FIELD_KEYS), path
    assert keys == [k for k in FIELD_KEYS if k in keys], path
    assert isinstance(field.get("about"), str) and field["about"].strip(), f"{path} lacks about"


@pytest.mark.parametrize(("path", "field"), ALL_FIELDS, ids=FIELD_IDS)
def test_field_types_are_from_the_allowed_set(path: str, field: dict[str, Any]) -> None:
    type_ = field["type"]
    assert type_ in SCALAR_TYPES or type_ in SCALAR_ARRAY_TYPES or is_struct_array(type_), f"{path}: {type_}"


@pytest.mark.parametrize(("path", "field"), ALL_FIELDS, ids=FIELD_IDS)
def test_struct_array_fields_carry_fields_and_scalar_fields_do_not(path: str, field: dict[str, Any]) -> None:
    if is_struct_array(field["type"]):
        assert isinstance(field.get("fields"), list) and field["fields"], path
    else:
        assert "fields" not in field, path


@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_field_names_are_unique_within_each_struct(path: str) -> None:
    for struct_path, fields in walk_structs(MESSAGES[path]):
        names = [f["name"] for f in fields]
        assert len(names) == len(set(names)), struct_path


@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_struct_names_are_not_reused_with_different_shapes(path: str) -> None:
    shapes: dict[str, list[dict[str, Any]]] = {}
    for _, field in walk_fields(MESSAGES[path]):
        if is_struct_array(field["type"]):
            struct = field["type"][2:]
            assert struct not in shapes or shapes[struct] == field["fields"], struct
            shapes[struct] = field["fields"]


@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_tags_are_unique_within_a_struct_and_only_on_tagged_fields(path: str) -> None:
    message = MESSAGES[path]
    flexible_low, _ = parse_versions(message["flexibleVersions"])
    for struct_path, fields in walk_structs(message):
        tags = []
        for field in fields:
            has_tag, has_tagged_versions = "tag" in field, "taggedVersions" in field
            assert has_tag == has_tagged_versions, f"{struct_path}.{field['name']}: tag and taggedVersions go together"
            if has_tag:
                assert isinstance(field["tag"], int) and not isinstance(field["tag"], bool)
                assert field["tag"] >= 0
                assert parse_versions(field["taggedVersions"])[0] >= flexible_low, "tagged fields need flexible versions"
                tags.append(field["tag"])
        assert len(tags) == len(set(tags)), f"{struct_path}: duplicate tags {tags}"


@pytest.mark.parametrize(("path", "field"), ALL_FIELDS, ids=FIELD_IDS)
def test_nullable_versions_only_on_nullable_types(path: str, field: dict[str, Any]) -> None:
    if "nullableVersions" in field:
        assert field["type"] in NULLABLE_TYPES or field["type"].startswith("[]"), path


@pytest.mark.parametrize(("path", "field"), ALL_FIELDS, ids=FIELD_IDS)
def test_map_key_and_entity_type_are_well_typed(path: str, field: dict[str, Any]) -> None:
    if "mapKey" in field:
        assert field["mapKey"] is True, path
    if "entityType" in field:
        assert field["entityType"] in {"brokerId", "topicName"}, path


def default_parses(type_: str, default: str, nullable: bool) -> bool:
    """Whether ``default`` is a legal Kafka JSON default for a field of ``type_``."""
    if default == "null":
        return nullable
    if type_ in INT_RANGES:
        if not re.fullmatch(r"-?\d+", default):
            return False
        low, high = INT_RANGES[type_]
        return low <= int(default) <= high
    if type_ == "float64":
        try:
            return math.isfinite(float(default))
        except ValueError:
            return False
    if type_ == "bool":
        return default in ("true", "false")
    if type_ == "string":
        return True
    if type_ == "uuid":
        try:
            uuid.UUID(default)
            return True
        except ValueError:
            return False
    return False  # bytes and arrays only take "null"


@pytest.mark.parametrize(("path", "field"), ALL_FIELDS, ids=FIELD_IDS)
def test_defaults_are_strings_that_parse_for_their_type(path: str, field: dict[str, Any]) -> None:
    if "default" in field:
        assert isinstance(field["default"], str), f"{path}: defaults are strings"
        assert default_parses(field["type"], field["default"], "nullableVersions" in field), \
            f"{path}: default {field['default']!r} is not a {field['type']}"


def test_default_parser_rejects_bad_defaults() -> None:
    assert not default_parses("int8", "128", nullable=False)
    assert not default_parses("int32", "null", nullable=False)
    assert not default_parses("bool", "True", nullable=False)
    assert not default_parses("[]int32", "[]", nullable=True)
    assert default_parses("[]int32", "null", nullable=True)
    assert default_parses("uint16", "65535", nullable=False)


# ---------------------------------------------------------------- specific decisions

def test_partition_change_record_tags_follow_seed_000() -> None:
    fields = schemas.schema("PartitionChangeRecord")["fields"]
    assert [f["name"] for f in fields[:2]] == ["PartitionId", "TopicId"]
    tagged = {f["name"]: f["tag"] for f in fields[2:]}
    assert tagged == {"Isr": 0, "Leader": 1, "Replicas": 2, "RemovingReplicas": 3, "AddingReplicas": 4}
    assert fields[3]["default"] == "-2"


def test_partition_record_has_partition_epoch_after_leader_epoch() -> None:
    names = [f["name"] for f in schemas.schema("PartitionRecord")["fields"]]
    assert names[names.index("LeaderEpoch") + 1] == "PartitionEpoch"


def test_heartbeat_lowest_acknowledged_offset_is_version_1_only() -> None:
    field = schemas.schema("BrokerHeartbeatResponse")["fields"][-1]
    assert (field["name"], field["versions"], field["default"]) == ("LowestAcknowledgedOffset", "1+", "-1")


# ---------------------------------------------------------------- errors

def test_error_codes_are_unique_by_name_and_number() -> None:
    data = json.loads(SCHEMA_ROOT.joinpath("errors.json").read_text(encoding="utf-8"))
    names = [e["name"] for e in data["errors"]]
    codes = [e["code"] for e in data["errors"]]
    assert len(names) == len(set(names))
    assert len(codes) == len(set(codes))
    for error in data["errors"]:
        assert list(error) == ["name", "code", "about"]
        assert isinstance(error["code"], int) and error["about"].strip()


def test_error_codes_are_exactly_the_specified_set() -> None:
    assert schemas.error_codes() == EXPECTED_ERRORS


# ---------------------------------------------------------------- loader

def test_loader_indexes_records_by_api_key_and_rpcs_by_name() -> None:
    records = schemas.record_schemas()
    assert set(records) == EXPECTED_RECORD_KEYS
    assert all(record["apiKey"] == key for key, record in records.items())
    rpcs = schemas.rpc_schemas()
    assert len(rpcs) == 16 and all(message["name"] == name for name, message in rpcs.items())


def test_loader_finds_every_file_by_name_and_caches_it() -> None:
    for path, message in MESSAGES.items():
        if path.startswith("kafka-records/"):  # the kafka profile's formats (DEC-22), by formats and name
            loaded = schemas.record_schema(message["name"], "kafka-3.7-IV1")
            assert loaded is schemas.record_schema(message["name"], "kafka-3.7-IV1")
        elif path.startswith("kafka-rpcs/"):  # the kafka profile's messages (DEC-9), by formats and name
            loaded = schemas.rpc_schema(message["name"], "kafka-4.0")
            assert loaded is schemas.rpc_schema(message["name"], "kafka-4.0")
        else:
            loaded = schemas.schema(message["name"])
            assert loaded is schemas.schema(message["name"])
        assert loaded == message


def test_loader_rejects_unknown_names() -> None:
    with pytest.raises(KeyError):
        schemas.schema("NoSuchRecord")


def test_spec_version_is_1_0() -> None:
    assert schemas.SPEC_VERSION == "1.0"
