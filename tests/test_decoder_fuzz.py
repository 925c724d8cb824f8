"""The model's record decoder (model/framing.py) against impl's (impl/codec.py), on bytes that are
mostly wrong (LOG-2, LOG-3).

The two decoders are written independently; neither imports the other, but this test imports
both. On any input both must refuse (the model with a FrameError, impl with a CodecError, and
nothing else may escape either), or both accept and give the same record, compared in the
neutral form of conformance/jsonform.py. The inputs: random bytes after a valid frame header,
and mutations of real records (the frames of the regression corpus, and one record of every
record type with every nested struct filled in): bytes flipped, inserted, deleted, replaced,
the record cut short, a length varint set to null, to zero or to a huge count.

A separate test writes a null into every string, bytes and array field of every record type in
turn: the schema's nullableVersions alone decides whether a decoder takes it."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftspec.conformance.jsonform import to_json
from kraftspec.impl import codec
from kraftspec.model.framing import FrameError, decode_record, encode_record, snake_case
from kraftspec.model.records import RECORD_TYPES, STRUCT_TYPES
from kraftspec.spec.schemas import record_schemas
from kraftspec.spec.profiles import profile, profile_names

CORPUS = Path(__file__).resolve().parent.parent / "conformance" / "corpus"
FUZZ_EXAMPLES = settings.default.max_examples * 10  # 2,000 per test with the ci profile
HUGE = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])  # 2**32 - 1, the largest varint (DEC-32)
SCALARS: dict[str, Any] = {
    "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint16": 5, "float64": 0.5, "bool": True, "uuid": UUID(int=6),
}


def outcome(data: bytes) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """What each decoder makes of ``data``: ("refused", offset) or ("accepted", neutral form)."""
    answers = []
    params = profile_of_frame(data)
    decoders = ((lambda d: decode_record(d, params), FrameError), (lambda d: codec.decode_record(d, params=params), codec.CodecError))
    for decode, refusal in decoders:
        try:
            record, version = decode(data)
        except refusal as error:
            answers.append(("refused", error.offset))
            continue
        neutral = json.dumps(to_json(record, version), sort_keys=True)  # NaN == NaN as text
        answers.append(("accepted", (type(record).__name__, version, neutral)))
    return answers[0], answers[1]


def profile_of_frame(data: bytes):
    """The profile whose frame type (DEC-10) the data begins with, so that the corpus's frames of
    both profiles decode in their own record formats (DEC-22); the default profile otherwise."""
    for name in profile_names():
        if data and profile(name).frame_type == data[0]:
            return profile(name)
    return profile()


def assert_agree(data: bytes) -> None:
    model, impl = outcome(data)
    assert model[0] == impl[0], f"{data.hex()}: the model {model}, impl {impl}"
    if model[0] == "refused":  # each names a byte of the input (or its end, for input cut short);
        # not always the same one: impl checks a claimed count against the bytes left before
        # reading, the model as it reads
        assert 0 <= model[1] <= len(data) and 0 <= impl[1] <= len(data), (data.hex(), model, impl)
    else:
        assert model == impl, f"{data.hex()}: the model decodes {model[1]}, impl {impl[1]}"


# ---- one record of every type, and where its length varints are ---------------------------


def length_paths(fields: list[dict[str, Any]], prefix: str) -> list[str]:
    """The paths of the string, bytes and array fields (``[]`` for the element of an array of
    strings or bytes), nested structs included: every place a length varint is written."""
    paths = []
    for field in fields:
        path, kind = f"{prefix}.{field['name']}", field["type"]
        if kind in ("string", "bytes") or kind.startswith("[]"):
            paths.append(path)
        if kind in ("[]string", "[]bytes"):
            paths.append(path + "[]")
        if "fields" in field:
            paths += length_paths(field["fields"], path + "[]")
    return paths


def value(field: dict[str, Any], path: str, target: str, longer: bool) -> Any:
    """A value for ``field``: empty at ``target`` (one byte longer with ``longer``), and arrays of
    structs with one element so that the fields inside them are written too."""
    kind = field["type"]
    here = f"{path}.{field['name']}"
    if kind in ("string", "bytes"):
        text = "x" if here == target and longer else ""
        return text if kind == "string" else text.encode()
    if not kind.startswith("[]"):
        return SCALARS[kind]
    element = kind[2:]
    if element in STRUCT_TYPES:
        one = STRUCT_TYPES[element](**{
            snake_case(f["name"]): value(f, here + "[]", target, longer) for f in field["fields"]
        })
        return (one,) if here != target or longer else ()
    if element in ("string", "bytes"):
        text = "x" if here + "[]" == target and longer else ""
        item = text if element == "string" else text.encode()
        return (item,) if here != target or longer else ()
    return (SCALARS[element],) if here == target and longer else ()


def sample(api_key: int, target: str = "", longer: bool = False) -> bytes:
    schema = record_schemas()[api_key]
    values = {snake_case(f["name"]): value(f, schema["name"], target, longer) for f in schema["fields"]}
    return encode_record(RECORD_TYPES[api_key](**values))


@cache
def length_offsets(api_key: int) -> dict[str, int]:
    """Where each length varint of the sample record is: the first byte that differs between
    the record with that field empty and with it one longer (a one-byte varint either way)."""
    schema = record_schemas()[api_key]
    offsets = {}
    for path in length_paths(schema["fields"], schema["name"]):
        empty, longer = sample(api_key, path), sample(api_key, path, longer=True)
        at = next(i for i, (a, b) in enumerate(zip(empty, longer, strict=False)) if a != b)  # longer is longer
        if "tag" in field_at(api_key, path):
            at += 1  # that was the tagged field's size (1, a one-byte varint); its length follows
        assert empty[at] == 1, (path, empty.hex())
        offsets[path] = at
    return offsets


def neutral_at(form: dict[str, Any], path: str) -> Any:
    """The value at ``path`` (``Record.Field[].Inner``) of a record's neutral form; ``[]`` is
    the first element."""
    value: Any = form
    for name in path.split(".")[1:]:
        value = value[name.removesuffix("[]")]
        if name.endswith("[]"):
            value = value[0]
    return value


def field_at(api_key: int, path: str) -> dict[str, Any]:
    """The schema field at ``path``; for the element of an array of strings or bytes, a field
    of the element type (never null, never tagged)."""
    fields, field = record_schemas()[api_key]["fields"], None
    for name in path.split(".")[1:]:
        field = next(f for f in fields if f["name"] == name.removesuffix("[]"))
        if name.endswith("[]"):
            if "fields" not in field:
                return {"name": field["name"], "type": field["type"][2:]}
            fields = field["fields"]
    assert field is not None
    return field


def nullable(api_key: int, path: str) -> bool:
    return "nullableVersions" in field_at(api_key, path)  # every record has version 0 alone; "0+" covers it


NULL_CASES = [(api_key, path) for api_key in sorted(record_schemas()) for path in length_offsets(api_key)]


@pytest.mark.parametrize(("api_key", "path"), NULL_CASES, ids=[path for _, path in NULL_CASES])
def test_log_2_a_null_is_taken_only_where_the_schema_makes_the_field_nullable(api_key, path):
    """LOG-2, LOG-3: a null (length varint 0) in a field the schema does not make nullable is a
    malformed payload, refused by both decoders naming the varint's byte and the field; where
    the schema allows it, both decode the field as null."""
    data = bytearray(sample(api_key, path))
    at = length_offsets(api_key)[path]
    data[at] = 0
    model, impl = outcome(bytes(data))
    if nullable(api_key, path):
        assert model[0] == "accepted" and model == impl
        record, _ = decode_record(bytes(data))
        assert neutral_at(to_json(record), path) is None
    else:
        assert model == impl == ("refused", at)
        with pytest.raises(FrameError, match=f"{path.split('.')[-1].removesuffix('[]')}: null, but the field is not nullable"):
            decode_record(bytes(data))


def test_log_2_the_model_refuses_the_two_nulls_it_once_took():
    """LOG-2: a TopicRecord without a name and a PartitionRecord whose AddingReplicas is null
    were taken (the first as a name of None) or broke with a TypeError."""
    topic = bytearray(sample(2))
    topic[length_offsets(2)["TopicRecord.TopicName"]] = 0
    with pytest.raises(FrameError, match="TopicRecord.TopicName: null") as caught:
        decode_record(bytes(topic))
    assert caught.value.offset == 3
    partition = bytearray(sample(3))
    at = length_offsets(3)["PartitionRecord.AddingReplicas"]
    partition[at] = 0
    with pytest.raises(FrameError, match="PartitionRecord.AddingReplicas: null") as caught:
        decode_record(bytes(partition))
    assert caught.value.offset == at


# ---- the fuzzing -----------------------------------------------------------------------------


@cache
def seeds() -> tuple[bytes, ...]:
    """Real records: every distinct frame of the regression corpus, and the samples."""
    frames = set()
    for trace in sorted(CORPUS.glob("*.jsonl")):
        for line in trace.read_text().splitlines():
            step = json.loads(line)
            for record in step.get("records") or ():
                if record.get("frame"):
                    frames.add(bytes.fromhex(record["frame"]))
    assert len(frames) > 20, "the corpus holds record frames"
    return tuple(sorted(frames)) + tuple(sample(api_key) for api_key in sorted(record_schemas()))


def test_every_seed_decodes_the_same_in_both():
    for data in seeds():
        model, impl = outcome(data)
        assert model[0] == "accepted" and model == impl, data.hex()


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds())))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "replace", "truncate", "length"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 4))]
        elif kind == "replace" and data:
            data[at] = draw(st.sampled_from([0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF]))
        elif kind == "truncate":
            del data[at:]
        elif kind == "length" and len(data) >= 3 and data[0] == 0 and data[1] in record_schemas():
            offsets = length_offsets(data[1])
            if offsets:
                # in the sample this is a length; in another record of the type, whatever is there
                at = offsets[draw(st.sampled_from(sorted(offsets)))]
                if at < len(data):
                    data[at : at + 1] = draw(st.sampled_from([b"\x00", b"\x01", b"\x80\x01", HUGE, b"\xFF\xFF\xFF\xFF\x10"]))
    return bytes(data)


@settings(max_examples=FUZZ_EXAMPLES)
@given(mutated())
def test_log_2_the_decoders_agree_on_mutated_records(data):
    """LOG-2: on a real record with a few bytes changed, both accept the same record or both refuse."""
    assert_agree(data)


@settings(max_examples=FUZZ_EXAMPLES)
@given(st.sampled_from(sorted(record_schemas())), st.binary(max_size=80))
def test_log_2_the_decoders_agree_on_random_payloads(api_key, payload):
    """LOG-2: random bytes after a valid frame header (frame type, record type, version 0)."""
    assert_agree(bytes([0, api_key, 0]) + payload)


@settings(max_examples=FUZZ_EXAMPLES)
@given(st.binary(max_size=40))
def test_log_2_the_decoders_agree_on_random_bytes(data):
    """LOG-2: any bytes at all."""
    assert_agree(data)



def test_log_3_the_model_never_writes_a_null_the_schema_does_not_allow():
    """LOG-3: encoding a record with None in a field that is not nullable is refused, naming
    the field, rather than writing bytes that no decoder takes; a nullable field writes null."""
    from kraftspec.model.records import PartitionRecord, RegisterBrokerRecord, TopicRecord

    with pytest.raises(ValueError, match="TopicName is None, but the field is not nullable"):
        encode_record(TopicRecord(None, UUID(int=1)))
    partition = PartitionRecord(0, UUID(int=1), (1,), (1,))
    object.__setattr__(partition, "adding_replicas", None)  # past the converter, which makes a tuple
    with pytest.raises(ValueError, match="AddingReplicas is None, but the field is not nullable"):
        encode_record(partition)
    registration = RegisterBrokerRecord(1, UUID(int=1), 1, None, None, None)
    assert decode_record(encode_record(registration))[0] == registration
