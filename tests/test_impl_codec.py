"""impl/codec.py: the production codec of records (LOG-1 to LOG-3) and RPC bodies (RPC-1).

Checked against the schemas (round trips of random values of every record and message,
every version), against the reference encoder of the model (the same bytes), and against
malformed input (a catalogue, every truncation, random byte flips).
"""

from __future__ import annotations

import ast
import pickle
import struct
from functools import cache
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftspec.spec.schemas import INT_RANGES
from kraftspec.impl import codec
from kraftspec.impl.codec import (
    CodecError,
    EncodeError,
    codec_source,
    decode_message,
    decode_record,
    encode_message,
    encode_record,
    read_uvarint,
    write_uvarint,
)
from kraftspec.impl.messages import (
    MESSAGE_CLASSES,
    RECORD_CLASSES,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    snake_case,
)
from kraftspec.model import framing
from kraftspec.model.records import RECORD_TYPES, STRUCT_TYPES
from kraftspec.spec.schemas import record_schemas, rpc_schemas

T = UUID("6f1b1a2c-0000-4000-8000-00000000abcd")
IMPL = Path(__file__).resolve().parent.parent / "impl"


# ---- values drawn from the schemas -------------------------------------------------

FEW_UUIDS = [T, UUID(int=0), UUID(int=1)]  # repeated ids, as in a snapshot


def in_versions(versions: str, version: int) -> bool:
    if versions.endswith("+"):
        return version >= int(versions[:-1])
    low, _, high = versions.partition("-")
    return int(low) <= version <= int(high or low)


def versions_of(schema: dict[str, Any]) -> list[int]:
    low, _, high = schema["validVersions"].partition("-")
    return list(range(int(low), int(high or low) + 1))


def value_strategy(field: dict[str, Any], parent: type, version: int, element: bool = False) -> st.SearchStrategy:
    """Values of a schema field: ints in their type's range, tuples for arrays, nested structs."""
    kind = field["type"]
    if kind.startswith("[]"):
        item = value_strategy(dict(field, type=kind[2:]), parent, version, element=True)
        values = st.lists(item, max_size=4).map(tuple)
    elif kind in INT_RANGES:
        values = st.integers(*INT_RANGES[kind])
    elif kind == "bool":
        values = st.booleans()
    elif kind == "float64":
        values = st.floats(allow_nan=False)
    elif kind == "uuid":
        values = st.sampled_from(FEW_UUIDS) | st.uuids()
    elif kind == "string":
        values = st.text(max_size=12)
    elif kind == "bytes":
        values = st.binary(max_size=12)
    else:
        values = object_strategy(getattr(parent, kind), field["fields"], version)
    if not element and "nullableVersions" in field and in_versions(field["nullableVersions"], version):
        values = st.none() | values
    return values


def object_strategy(cls: type, fields: list[dict[str, Any]], version: int) -> st.SearchStrategy:
    """impl objects of ``cls`` at ``version``; fields the version lacks keep their default."""
    present = [field for field in fields if in_versions(field["versions"], version)]
    return st.builds(cls, **{snake_case(f["name"]): value_strategy(f, cls, version) for f in present})


@cache
def record_strategy(api_key: int) -> st.SearchStrategy:
    return object_strategy(RECORD_CLASSES[api_key], record_schemas()[api_key]["fields"], 0)


@cache
def message_strategy(name: str, version: int) -> st.SearchStrategy:
    return object_strategy(MESSAGE_CLASSES[name], rpc_schemas()[name]["fields"], version)


MESSAGE_VERSIONS = [(name, v) for name, schema in sorted(rpc_schemas().items()) for v in versions_of(schema)]
ANY_RECORD = st.sampled_from(sorted(record_schemas())).flatmap(record_strategy)
ANY_MESSAGE = st.sampled_from(MESSAGE_VERSIONS).flatmap(
    lambda nv: st.tuples(st.just(nv[0]), st.just(nv[1]), message_strategy(*nv))
)


def model_record(record: Any) -> Any:
    """The model's record with the same field values as impl's ``record``."""
    schema = record_schemas()[record.API_KEY]
    return RECORD_TYPES[record.API_KEY](**model_values(record, schema["fields"]))


def model_values(obj: Any, fields: list[dict[str, Any]]) -> dict[str, Any]:
    values = {}
    for field in fields:
        value = getattr(obj, snake_case(field["name"]))
        if "fields" in field and value is not None:
            struct_class = STRUCT_TYPES[field["type"][2:]]
            value = tuple(struct_class(**model_values(item, field["fields"])) for item in value)
        values[snake_case(field["name"])] = value
    return values


# ---- unsigned varints (LOG-2) ------------------------------------------------------


@given(st.integers(0, 2**32 - 1))
def test_log_2_uvarints_round_trip(value):
    """LOG-2: read_uvarint(write_uvarint(v)) gives v and the position after its bytes."""
    data = write_uvarint(value)
    assert read_uvarint(data, 0) == (value, len(data))
    assert read_uvarint(b"\xaa" + data + b"\xbb", 1) == (value, len(data) + 1)
    assert data == framing.uvarint(value)


@pytest.mark.parametrize(
    "value, length",
    [(0, 1), (127, 1), (128, 2), (2**14 - 1, 2), (2**14, 3), (2**21 - 1, 3), (2**21, 4), (2**28 - 1, 4), (2**28, 5)]
    + [(2**32 - 1, 5)],
)
def test_log_2_uvarints_take_one_to_five_bytes(value, length):
    """LOG-2: seven bits a byte, least significant group first."""
    data = write_uvarint(value)
    assert len(data) == length and all(byte & 0x80 for byte in data[:-1]) and data[-1] < 0x80
    assert write_uvarint(300) == bytes([0xAC, 0x02])


@pytest.mark.parametrize(
    "data, pos, end, problem",
    [
        (bytes([0x80] * 5 + [0x01]), 0, None, "longer than 5 bytes"),
        (bytes([0xFF] * 6), 0, None, "longer than 5 bytes"),
        (bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x10]), 0, None, "does not fit 32 bits"),
        (bytes([0x80, 0x80]), 0, None, "runs past the end"),
        (b"", 0, None, "runs past the end"),
        (bytes([0x81, 0x01]), 0, 1, "runs past the end"),
        (bytes([0x01]), 3, None, "runs past the end"),
    ],
    ids=["six-bytes", "six-bytes-ff", "over-32-bits", "cut", "empty", "cut-by-end", "past-the-data"],
)
def test_log_2_bad_uvarints_are_refused_at_their_first_byte(data, pos, end, problem):
    """LOG-2: a varint past the end or past five bytes is refused, naming where it starts."""
    with pytest.raises(CodecError) as caught:
        read_uvarint(data, pos, end)
    assert caught.value.offset == pos and problem in caught.value.problem


@pytest.mark.parametrize("value", [-1, 2**32])
def test_log_2_write_uvarint_refuses_what_32_bits_cannot_hold(value):
    with pytest.raises(EncodeError):
        write_uvarint(value)


# ---- round trips -------------------------------------------------------------------


@pytest.mark.parametrize("api_key", sorted(record_schemas()), ids=lambda k: record_schemas()[k]["name"])
@given(data=st.data())
def test_log_3_every_record_type_round_trips(api_key, data):
    """LOG-3: decode(encode(x)) == x and encode(decode(b)) == b, for random values of every field."""
    record = data.draw(record_strategy(api_key))
    encoded = encode_record(record)
    assert encoded[:3] == bytes([0, api_key, 0])
    assert decode_record(encoded) == (record, 0)
    assert decode_record(memoryview(encoded)) == (record, 0)
    assert encode_record(decode_record(encoded)[0]) == encoded


@pytest.mark.parametrize("name, version", MESSAGE_VERSIONS, ids=[f"{n}-v{v}" for n, v in MESSAGE_VERSIONS])
@given(data=st.data())
def test_rpc_1_every_message_and_version_round_trips(name, version, data):
    """RPC-1: every request and response body, at every version, round trips."""
    message = data.draw(message_strategy(name, version))
    encoded = encode_message(message, version)
    assert decode_message(name, version, encoded) == message
    assert encode_message(decode_message(name, version, memoryview(encoded)), version) == encoded


def test_rpc_1_lowest_acknowledged_offset_exists_only_in_heartbeat_version_1():
    """RPC-1: the v0 response has no LowestAcknowledgedOffset on the wire; decoding gives the default."""
    response = BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False, lowest_acknowledged_offset=42)
    v0, v1 = encode_message(response, 0), encode_message(response, 1)
    assert v0 == struct.pack(">ih???", 0, 0, True, False, False) + b"\x00"
    assert v1 == v0[:-1] + struct.pack(">q", 42) + b"\x00"
    assert decode_message("BrokerHeartbeatResponse", 0, v0).lowest_acknowledged_offset == -1
    assert decode_message("BrokerHeartbeatResponse", 1, v1).lowest_acknowledged_offset == 42


def test_log_3_long_values_take_multi_byte_lengths():
    """LOG-3: a length over 127 takes a two-byte varint; long arrays still match the reference."""
    record = PartitionRecord(partition_id=1, topic_id=T, replicas=tuple(range(200)), isr=tuple(range(70)), leader=3)
    topic = TopicRecord(topic_name="t" * 300, topic_id=T)
    for value in (record, topic):
        encoded = encode_record(value)
        assert encoded == framing.encode_record(model_record(value))
        assert decode_record(encoded) == (value, 0)
    assert encode_record(record)[23:25] == write_uvarint(201)


# ---- the same bytes as the reference -----------------------------------------------


@given(ANY_RECORD)
def test_log_3_records_encode_to_the_references_bytes(record):
    """LOG-2, LOG-3: impl's codec and model/framing.py agree byte for byte, both ways."""
    reference = model_record(record)
    encoded = encode_record(record)
    assert encoded == framing.encode_record(reference)
    assert framing.decode_record(encoded) == (reference, 0)


def test_log_3_tagged_fields_at_their_default_are_left_out():
    """LOG-3: a PartitionChangeRecord that changes nothing is ids plus an empty tag section."""
    unchanged = PartitionChangeRecord(partition_id=0, topic_id=T)
    assert encode_record(unchanged) == bytes([0, 5, 0]) + bytes(4) + T.bytes + b"\x00"
    leader_only = encode_record(PartitionChangeRecord(partition_id=0, topic_id=T, leader=3))
    assert leader_only[23:] == bytes([1, 1, 4]) + struct.pack(">i", 3)


def test_log_3_unknown_tags_are_skipped_and_a_known_tag_at_its_default_is_read():
    """LOG-3, KIP-482: an unknown tag is skipped; a tag written at its default still decodes."""
    fence = encode_record(FenceBrokerRecord(broker_id=1, broker_epoch=2))
    with_unknown = fence[:-1] + bytes([2, 3, 2, 0xAB, 0xCD, 9, 0])
    assert decode_record(with_unknown) == (FenceBrokerRecord(broker_id=1, broker_epoch=2), 0)
    explicit_default = bytes([0, 5, 0]) + bytes(4) + T.bytes + bytes([1, 1, 4]) + struct.pack(">i", -2)
    assert decode_record(explicit_default) == (PartitionChangeRecord(partition_id=0, topic_id=T), 0)


# ---- malformed input ---------------------------------------------------------------

FENCE = encode_record(FenceBrokerRecord(broker_id=1, broker_epoch=2))
HEARTBEAT = encode_message(BrokerHeartbeatRequest(broker_id=1, broker_epoch=2, current_metadata_offset=3), 0)
PARTITION_HEAD = bytes([0, 3, 0]) + struct.pack(">i", 0) + T.bytes  # frame, PartitionId, TopicId: 23 bytes
CHANGE_HEAD = bytes([0, 5, 0]) + struct.pack(">i", 0) + T.bytes  # the tag section starts at byte 23
LEADER_TAG = bytes([1, 4]) + struct.pack(">i", 3)  # tag 1 (Leader), size 4, value 3


def record(data: bytes):
    return lambda: decode_record(data)


def message(name: str, version: int, data: bytes):
    return lambda: decode_message(name, version, data)


MALFORMED = [
    ("empty input", record(b""), 0, "frame type: varint runs past the end"),
    ("frame type 1 (Kafka's)", record(bytes([1, 2, 0])), 0, "frame type 1, expected 0"),
    ("frame type varint of 6 bytes", record(bytes([0x80] * 6)), 0, "varint longer than 5 bytes"),
    ("record type varint over 32 bits", record(bytes([0, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0])), 1, "does not fit 32 bits"),
    ("unknown record type 99", record(bytes([0, 99, 0])), 1, "unknown record type 99"),
    ("version 3 of TopicRecord", record(bytes([0, 2, 3])), 2, "TopicRecord has no version 3"),
    ("version varint cut", record(bytes([0, 2, 0x80])), 2, "record version: varint runs past the end"),
    ("version 2 of BrokerHeartbeatRequest", message("BrokerHeartbeatRequest", 2, HEARTBEAT), 0, "has no version 2"),
    ("unknown message", message("Metadata", 0, b""), 0, "unknown message 'Metadata'"),
    ("int32 cut", record(bytes([0, 7, 0, 0, 0])), 3, "FenceBrokerRecord.BrokerId: needs 4 bytes, 2 bytes left"),
    ("int64 cut", record(FENCE[:10]), 7, "FenceBrokerRecord.BrokerEpoch: needs 8 bytes, 3 bytes left"),
    ("uuid cut", record(bytes([0, 9, 0]) + bytes(10)), 3, "RemoveTopicRecord.TopicId: needs 16 bytes, 10 bytes left"),
    ("tag section missing", record(FENCE[:-1]), 15, "FenceBrokerRecord tagged field count: varint runs past the end"),
    ("string longer than the bytes left", record(bytes([0, 2, 0, 5, 0x61])), 3,
     "TopicRecord.TopicName: 4 bytes claimed, 1 byte left"),
    ("2 GB array in 5 bytes", message("DeleteTopicsRequest", 0, b"\xff\xff\xff\xff\x07"), 0,
     "DeleteTopicsRequest.TopicNames: 2147483646 elements claimed, 0 bytes left"),
    ("2 GB array after a frame", record(bytes([0, 14, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x07])), 3,
     "QuotaRecord.Entity: 2147483646 elements claimed, 0 bytes left"),
    ("int32 array longer than the bytes left", record(PARTITION_HEAD + bytes([4]) + bytes(8)), 23,
     "PartitionRecord.Replicas: 3 elements claimed, 8 bytes left"),
    ("struct array longer than the bytes left", record(bytes([0, 13, 0, 0, 0, 0, 1, 3]) + bytes(30)), 7,
     "FailedReplicasRecord.Topics: 2 elements claimed, 30 bytes left"),
    ("null in a field that is not nullable", record(bytes([0, 2, 0, 0]) + T.bytes + b"\x00"), 3,
     "TopicRecord.TopicName: null, but the field is not nullable"),
    ("bool byte 2", message("BrokerHeartbeatRequest", 0, HEARTBEAT[:20] + b"\x02" + HEARTBEAT[21:]), 20,
     "BrokerHeartbeatRequest.WantFence: bool byte 2, expected 0 or 1"),
    ("second bool byte 0xff", message("BrokerHeartbeatRequest", 0, HEARTBEAT[:21] + b"\xff" + HEARTBEAT[22:]), 21,
     "BrokerHeartbeatRequest.WantShutDown: bool byte 255"),
    ("invalid UTF-8", record(bytes([0, 2, 0, 2, 0xFF]) + T.bytes + b"\x00"), 4, "TopicRecord.TopicName: not UTF-8"),
    ("invalid UTF-8 after a valid byte", record(bytes([0, 2, 0, 3, 0x61, 0xC3]) + T.bytes + b"\x00"), 5, "not UTF-8"),
    ("tags out of order", record(CHANGE_HEAD + bytes([2]) + LEADER_TAG + bytes([0, 1, 1])), 30,
     "PartitionChangeRecord: tag 0 after tag 1: tags must ascend"),
    ("tag repeated", record(CHANGE_HEAD + bytes([2]) + LEADER_TAG + LEADER_TAG), 30,
     "PartitionChangeRecord: tag 1 repeated"),
    ("known tag larger than its value", record(CHANGE_HEAD + bytes([1, 1, 5]) + bytes(5)), 24,
     "PartitionChangeRecord.Leader (tag 1): size 5, but its value takes 4 bytes"),
    ("known tag smaller than its value", record(CHANGE_HEAD + bytes([1, 1, 3]) + bytes(3)), 26,
     "PartitionChangeRecord.Leader: needs 4 bytes, 3 bytes left"),
    ("tag larger than the bytes left", record(FENCE[:-1] + bytes([1, 9, 10, 0, 0])), 17,
     "FenceBrokerRecord tag 9: 10 bytes claimed, 2 bytes left"),
    ("more tags than bytes left", record(FENCE[:-1] + bytes([0xE8, 0x07, 0, 0])), 15,
     "FenceBrokerRecord: 1000 tagged fields claimed, 2 bytes left"),
    ("trailing byte", record(FENCE + b"\x00"), 16, "1 byte left over after the FenceBrokerRecord payload"),
    ("trailing bytes after a message", message("BrokerHeartbeatRequest", 0, HEARTBEAT + b"\x01\x02"), 23,
     "2 bytes left over after the BrokerHeartbeatRequest payload"),
]


@pytest.mark.parametrize("decode, offset, problem", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_log_2_malformed_input_is_refused_naming_the_byte_and_the_problem(decode, offset, problem):
    """LOG-2: every refusal is a CodecError with the offset and the problem; huge claims fail at once."""
    with pytest.raises(CodecError) as caught:
        decode()
    assert caught.value.offset == offset and problem in caught.value.problem
    assert str(caught.value) == f"byte {offset}: {caught.value.problem}"


def test_log_2_offsets_count_from_the_start_of_the_buffer_and_end_bounds_the_record():
    """LOG-2: a record inside a larger buffer decodes by pos and end; errors name absolute bytes."""
    buffer = b"\xee" * 5 + FENCE + b"\xee" * 3
    assert decode_record(memoryview(buffer), 5, 5 + len(FENCE)) == (FenceBrokerRecord(broker_id=1, broker_epoch=2), 0)
    with pytest.raises(CodecError) as caught:
        decode_record(buffer, 5, 5 + len(FENCE) + 1)
    assert caught.value.offset == 5 + len(FENCE) and "left over" in caught.value.problem
    with pytest.raises(CodecError) as caught:
        decode_record(buffer, 5, len(buffer) + 1)
    assert "not inside" in caught.value.problem
    with pytest.raises(CodecError):
        decode_record(buffer, -1)
    strided = memoryview(bytes(byte for b in FENCE for byte in (b, 0xEE)))[::2]  # not contiguous
    assert decode_record(strided) == (FenceBrokerRecord(broker_id=1, broker_epoch=2), 0)


def test_codec_errors_pickle_and_read_as_the_offset_then_the_problem():
    error = CodecError(7, "PartitionRecord.Replicas: 536870911 elements claimed, 2 bytes left")
    assert str(error) == "byte 7: PartitionRecord.Replicas: 536870911 elements claimed, 2 bytes left"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.offset, copy.problem, str(copy)) == (error.offset, error.problem, str(error))


# ---- fuzz ----------------------------------------------------------------------------


@given(ANY_RECORD)
def test_log_2_every_truncation_of_a_record_is_refused(record):
    """LOG-2: no prefix of a record's bytes decodes, whether cut by the buffer or by ``end``."""
    encoded = encode_record(record)
    for cut in range(len(encoded)):
        with pytest.raises(CodecError):
            decode_record(encoded[:cut])
        with pytest.raises(CodecError):
            decode_record(encoded, 0, cut)


@given(ANY_MESSAGE)
def test_rpc_1_every_truncation_of_a_message_is_refused(drawn):
    name, version, value = drawn
    encoded = encode_message(value, version)
    for cut in range(len(encoded)):
        with pytest.raises(CodecError):
            decode_message(name, version, encoded[:cut])


@given(ANY_RECORD, st.data())
def test_log_2_flipped_bytes_are_refused_or_decode_as_the_reference_does(record, data):
    """LOG-2: a changed byte gives a CodecError or a record; when impl decodes, the reference
    decodes the same bytes to the same record, and re-encoding is stable."""
    encoded = bytearray(encode_record(record))
    for _ in range(data.draw(st.integers(1, 3))):
        encoded[data.draw(st.integers(0, len(encoded) - 1))] = data.draw(st.integers(0, 255))
    mutated = bytes(encoded)
    try:
        decoded, version = decode_record(mutated)
    except CodecError:
        return
    reference, reference_version = framing.decode_record(mutated)
    assert version == reference_version
    assert encode_record(decoded, version) == framing.encode_record(reference, version)
    again = encode_record(decoded, version)
    assert encode_record(decode_record(again)[0]) == again


PLAIN_PARTITION_RECORDS = st.builds(
    PartitionRecord,
    partition_id=st.integers(*INT_RANGES["int32"]),
    topic_id=st.sampled_from(FEW_UUIDS) | st.uuids(),
    replicas=st.lists(st.integers(*INT_RANGES["int32"]), max_size=6).map(tuple),
    isr=st.lists(st.integers(*INT_RANGES["int32"]), max_size=6).map(tuple),
    removing_replicas=st.just(()) | st.lists(st.integers(0, 9), max_size=2).map(tuple),
    adding_replicas=st.just(()) | st.lists(st.integers(0, 9), max_size=2).map(tuple),
    leader=st.integers(*INT_RANGES["int32"]),
    leader_epoch=st.integers(*INT_RANGES["int32"]),
    partition_epoch=st.integers(*INT_RANGES["int32"]),
)


@pytest.mark.parametrize("profile", ["kip-631", "kafka"])
@given(records=st.lists(PLAIN_PARTITION_RECORDS | ANY_RECORD, min_size=1, max_size=8), data=st.data())
def test_log_2_decoding_a_batch_of_frames_gives_what_decoding_each_gives(profile, records, data):
    """LOG-2: ``RecordCodec.decode_frames`` (a snapshot's batches, its plain PartitionRecords read
    by one struct each) gives the records that ``decode`` gives frame by frame, and fails, on a
    changed byte, with the error ``decode`` gives."""
    from kraftspec.impl.codec import profile_codec
    from kraftspec.impl.config import ControllerConfig
    from kraftspec.impl.formats import formats_of

    params = ControllerConfig(profile=profile).params
    codec = profile_codec(params)
    kept = [r for r in records if type(r) in formats_of(params).classes.values()]
    frames = [bytearray(codec.encode(r)) for r in kept]
    if frames and data.draw(st.booleans()):
        frame = data.draw(st.sampled_from(frames))
        frame[data.draw(st.integers(0, len(frame) - 1))] = data.draw(st.integers(0, 255))
    frames = [bytes(f) for f in frames]
    try:
        expected = [codec.decode(f)[0] for f in frames]
    except CodecError as error:
        with pytest.raises(CodecError) as raised:
            codec.decode_frames(frames)
        assert str(raised.value) == str(error)
        return
    assert codec.decode_frames(frames) == expected


@given(st.sampled_from(sorted(record_schemas())), st.binary(max_size=64))
def test_log_2_random_payloads_are_refused_or_decode(api_key, payload):
    """LOG-2: any bytes after a valid frame give a CodecError or a record, nothing else."""
    try:
        decoded, _ = decode_record(bytes([0, api_key, 0]) + payload)
    except CodecError:
        return
    assert type(decoded) is RECORD_CLASSES[api_key]


@given(st.sampled_from(MESSAGE_VERSIONS), st.binary(max_size=64))
def test_rpc_1_random_bodies_are_refused_or_decode(name_version, body):
    name, version = name_version
    try:
        decoded = decode_message(name, version, body)
    except CodecError:
        return
    assert encode_message(decoded, version) is not None


# ---- encoding refusals ---------------------------------------------------------------


ENDPOINT = RegisterBrokerRecord.BrokerEndpoint
UNWRITABLE = [
    ("int32 out of range", lambda: encode_record(PartitionRecord(partition_id=2**31)), "PartitionRecord.PartitionId",
     "does not fit int32"),
    ("null string", lambda: encode_record(TopicRecord(topic_name=None)), "TopicRecord.TopicName", "not nullable"),
    ("lone surrogate", lambda: encode_record(TopicRecord(topic_name="\ud800")), "TopicRecord.TopicName", "UTF-8"),
    ("uuid as a str", lambda: encode_record(TopicRecord(topic_id=str(T))), "TopicRecord.TopicId", "expected a UUID"),
    ("uint16 out of range", lambda: encode_record(RegisterBrokerRecord(end_points=(ENDPOINT(port=70000),))),
     "RegisterBrokerRecord.EndPoints[0].Port", "does not fit uint16"),
    ("struct of the wrong class", lambda: encode_record(RegisterBrokerRecord(features=(ENDPOINT(),))),
     "RegisterBrokerRecord.Features[0]", "expected a RegisterBrokerRecord.BrokerFeature"),
    ("record version", lambda: encode_record(FenceBrokerRecord(), version=1), "FenceBrokerRecord", "has no version 1"),
    ("the model's record", lambda: encode_record(model_record(FenceBrokerRecord())), "FenceBrokerRecord",
     "not one of impl's record classes"),
    ("message version", lambda: encode_message(BrokerHeartbeatResponse(), 2), "BrokerHeartbeatResponse",
     "has no version 2"),
    ("float for an int64", lambda: encode_message(BrokerHeartbeatRequest(broker_epoch=1.5), 0),
     "BrokerHeartbeatRequest.BrokerEpoch", "expected an integer"),
    ("null bool", lambda: encode_message(BrokerHeartbeatRequest(want_fence=None), 0),
     "BrokerHeartbeatRequest.WantFence", "not nullable"),
    ("bool 2", lambda: encode_message(BrokerHeartbeatResponse(is_fenced=2), 1), "BrokerHeartbeatResponse.IsFenced",
     "expected True or False"),
]


@pytest.mark.parametrize("encode, field, problem", [c[1:] for c in UNWRITABLE], ids=[c[0] for c in UNWRITABLE])
def test_values_a_field_cannot_hold_are_refused_naming_the_field(encode, field, problem):
    """Encoding refuses, with an EncodeError naming the field, what its field cannot hold."""
    with pytest.raises(EncodeError) as caught:
        encode()
    assert caught.value.field == field and problem in caught.value.problem


# ---- how it is built -----------------------------------------------------------------


def test_decoded_uuids_are_interned_and_the_cache_is_bounded():
    first = decode_record(encode_record(PartitionRecord(partition_id=0, topic_id=UUID(int=T.int))))[0]
    second = decode_record(encode_record(PartitionRecord(partition_id=1, topic_id=UUID(int=T.int))))[0]
    assert first.topic_id == T and first.topic_id is second.topic_id
    for n in range(codec.UUID_CACHE_SIZE + 10):
        codec.intern_uuid(n.to_bytes(16, "big"))
    assert len(codec.interned_uuids) <= codec.UUID_CACHE_SIZE


def test_codec_source_shows_the_generated_functions():
    source = codec_source("PartitionRecord")
    assert "def encode_PartitionRecord_v0(obj):" in source
    assert "def decode_PartitionRecord_v0(data, pos, end):" in source
    assert "unpack" in source and "schema" not in source  # specialised code, no schema interpretation
    heartbeat = codec_source("BrokerHeartbeatResponse")
    assert "def decode_BrokerHeartbeatResponse_v1" in heartbeat and "lowest_acknowledged_offset" in heartbeat
    for name in [schema["name"] for schema in record_schemas().values()] + list(rpc_schemas()):
        compile(codec_source(name), name, "exec")
    with pytest.raises(KeyError):
        codec_source("Nothing")


@pytest.mark.parametrize("module", ["codec.py", "wire.py", "codegen.py"])
def test_impl_codec_does_not_import_the_model(module):
    """impl/ is independent of kraftspec.model (CONTRIBUTING: model/ and impl/ never import each other)."""
    tree = ast.parse((IMPL / module).read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert not [name for name in imported if "model" in name]
