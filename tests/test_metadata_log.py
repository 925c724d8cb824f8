"""The metadata log: LOG-1 to LOG-17."""

from uuid import UUID

import pytest

from cluster import Cluster
from kraftspec.model import Commit, Config, Error, FeatureRange, initial_state
from kraftspec.model.framing import FrameError, decode_record, encode_record, uvarint
from kraftspec.model.log import snapshot_records
from kraftspec.model.messages import (
    CreatableTopic,
    CreateTopicsRequest,
    ListPartitionReassignmentsRequest,
    ReplicaAssignment,
    UnregisterBrokerRequest,
)
from kraftspec.model.records import (
    RECORD_TYPES,
    AccessControlRecord,
    BrokerEndpoint,
    BrokerFeature,
    ConfigRecord,
    CredentialInfo,
    DelegationTokenRecord,
    EntityData,
    FailedReplicasRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    QuotaRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    TopicWithFailures,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)
from kraftspec.model.replay import replay, replay_all
from kraftspec.model.state import MetadataImage

T = UUID("6f1b1a2c-0000-4000-8000-00000000abcd")

ONE_OF_EACH = [
    RegisterBrokerRecord(1, UUID(int=7), 3, [BrokerEndpoint("PLAINTEXT", "h", 9092, 0)], [BrokerFeature("m", 1, 2)], "r"),
    RegisterBrokerRecord(2, UUID(int=8), 4, None, None, None),
    UnregisterBrokerRecord(1, 3),
    TopicRecord("bar", T),
    PartitionRecord(0, T, [1, 2], [1], [2], [], 1, 4, 9),
    ConfigRecord(2, "bar", "retention.ms", "1000"),
    PartitionChangeRecord(0, T),
    PartitionChangeRecord(0, T, isr=[1, 2], leader=-1, replicas=[2, 1], removing_replicas=[], adding_replicas=[3]),
    AccessControlRecord(2, None, 3, "User:a", "*", 4, 3),
    FenceBrokerRecord(1, 3),
    UnfenceBrokerRecord(1, 3),
    RemoveTopicRecord(T),
    DelegationTokenRecord("User:o", ["User:r"], 1, 2, 3, "tok"),
    UserScramCredentialRecord("u", [CredentialInfo(1, b"salt", b"\x00\xff", 4096)]),
    FeatureLevelRecord("metadata.format", 1, 2),
    FailedReplicasRecord(3, [TopicWithFailures(T, [0, 2])]),
    QuotaRecord([EntityData("user", None)], "producer_byte_rate", 1.5, False),
]


def test_log_1_every_record_type_of_seed_000_exists_with_its_type_number():
    """LOG-1, DEC-22."""
    assert sorted(RECORD_TYPES) == list(range(15))
    assert {type(r).API_KEY for r in ONE_OF_EACH} == set(range(15))


def test_log_2_the_frame_is_type_zero_then_record_type_then_version():
    """LOG-2, DEC-10: seed 000's own example, a TopicRecord."""
    data = encode_record(TopicRecord("bar", T))
    assert data[:3] == bytes([0, 2, 0])
    assert uvarint(300) == bytes([0xAC, 0x02])


@pytest.mark.parametrize("record", ONE_OF_EACH, ids=lambda r: type(r).__name__)
def test_log_3_every_record_round_trips_exactly(record):
    """LOG-3."""
    data = encode_record(record)
    assert decode_record(data) == (record, 0)
    assert encode_record(decode_record(data)[0]) == data


def test_log_3_tagged_fields_at_their_default_are_left_out():
    """LOG-3: a PartitionChangeRecord that changes nothing is ids plus an empty tag section."""
    assert encode_record(PartitionChangeRecord(0, T)) == bytes([0, 5, 0]) + bytes(4) + T.bytes + bytes([0])


@pytest.mark.parametrize(
    "data, offset, problem",
    [
        (bytes([1, 2, 0]), 0, "frame type 1"),
        (bytes([0x80] * 6), 0, "varint"),
        (bytes([0, 99, 0]), 1, "unknown record type 99"),
        (bytes([0, 2, 3]), 2, "no version 3"),
        (bytes([0, 2, 0, 0x05, 0x61]), 4, "needs 4 bytes"),
        (bytes([0, 13, 0, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0x7F]), 7, "elements claimed"),
        (encode_record(FenceBrokerRecord(1, 2)) + b"\x00", 16, "1 bytes left"),
        (bytes([0, 2, 0, 0x02, 0xFF]) + T.bytes + bytes([0]), 3, "not UTF-8"),
    ],
    ids=["frame-1", "long-varint", "unknown-type", "bad-version", "short-string", "huge-array", "trailing", "bad-utf8"],
)
def test_log_2_malformed_frames_are_refused_naming_the_byte(data, offset, problem):
    """LOG-2: the error names the offset and the problem; a huge claimed length fails at once."""
    with pytest.raises(FrameError) as caught:
        decode_record(data)
    assert caught.value.offset == offset and problem in str(caught.value)


def test_dec_32_a_varint_above_32_bits_is_refused_and_never_written():
    """DEC-32: an unsigned varint holds 0 to 2**32 - 1. Five bytes that give a larger value (here
    in a tagged field's tag, which would otherwise be skipped) are refused where the varint starts,
    and the encoder refuses to write one."""
    fence = encode_record(FenceBrokerRecord(1, 2))
    assert fence[-1] == 0  # the record's tagged-field count
    tagged = fence[:-1] + bytes([1, 0x80, 0x80, 0x80, 0x80, 0x10, 0])  # one field, tag 2**32, empty
    with pytest.raises(FrameError) as caught:
        decode_record(tagged)
    assert caught.value.offset == len(fence) and "above 4294967295" in str(caught.value)
    largest = fence[:-1] + bytes([1, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0])  # tag 2**32 - 1: read and skipped
    assert decode_record(largest)[0] == FenceBrokerRecord(1, 2)
    assert len(uvarint(2**32 - 1)) == 5
    with pytest.raises(ValueError, match="holds 0 to 4294967295"):
        uvarint(2**32)


def test_log_4_a_request_appends_one_batch_with_consecutive_offsets():
    """LOG-4."""
    c = Cluster()
    c.start_brokers(1, 2)
    end = c.state.log_end_offset
    result = c.send(topic_request())
    [batch] = result.batches
    assert batch.base_offset == end and c.state.log_end_offset == end + len(batch.records) == end + 2


def topic_request():
    return CreateTopicsRequest([CreatableTopic("t", UUID(int=3), assignments=[ReplicaAssignment(0, [1, 2])])])


def test_log_5_the_active_controller_decides_on_uncommitted_state():
    """LOG-5: a second registration attempt sees the first, uncommitted one."""
    c = Cluster()
    c.register(1, commit=False)
    assert 1 in c.state.image.brokers and 1 not in c.state.committed_image.brokers
    c.register(1, generation=1, commit=False)
    c.commit()
    assert c.replies[1].error_code == Error.DUPLICATE_BROKER_REGISTRATION


def test_log_6_commits_are_whole_batches_and_never_go_back():
    """LOG-6, DEC-30."""
    c = Cluster()
    c.start_brokers(1, 2)
    c.send(topic_request())  # a two-record batch
    start = c.state.committed_offset
    c.send(Commit(start + 1))  # inside the batch: nothing commits
    assert c.state.committed_offset == start
    c.send(Commit(start + 2))
    assert c.state.committed_offset == start + 2
    c.send(Commit(0))
    c.send(Commit(10**9))  # beyond the log end: up to the end
    assert c.state.committed_offset == c.state.log_end_offset


def test_log_7_a_write_is_answered_when_the_log_as_it_stood_commits_even_a_refusal():
    """LOG-7, DEC-21: a refusal decided on uncommitted state waits too; order is kept."""
    c = Cluster()
    first = c.send(UnregisterBrokerRequest(5))
    assert [r.seq for r in first.replies] == [first.seq]  # nothing pending: answered at once
    c.register(1, commit=False)
    refused = c.register(1, generation=1, commit=False)  # refused, on uncommitted state
    assert refused is None
    released = c.commit().replies
    assert [r.response.error_code for r in released] == [Error.NONE, Error.DUPLICATE_BROKER_REGISTRATION]


def test_log_8_reads_answer_at_once_from_committed_state():
    """LOG-8."""
    c = Cluster()
    c.register(1, commit=False)
    result = c.send(ListPartitionReassignmentsRequest(None))
    assert [r.seq for r in result.replies] == [result.seq]


def test_log_9_only_committed_state_is_visible():
    """LOG-9: the committed state is the replay of committed records; uncommitted ones are only in memory."""
    c = Cluster()
    c.start_brokers(1)
    c.heartbeat(1, want_fence=True, commit=False)
    assert c.state.image.brokers[1].fenced and not c.state.committed_image.brokers[1].fenced
    assert c.state.pending  # the response saying IsFenced=true is held back


def test_log_10_failover_truncates_answers_not_controller_and_rebuilds():
    """LOG-10, RPC-3."""
    c = Cluster()
    c.start_brokers(1, 2)
    committed = c.state.committed_image
    end = c.state.committed_offset
    waiting = c.send(topic_request())
    result = c.failover()
    assert [(r.seq, r.response.topics[0].error_code) for r in result.replies] == [(waiting.seq, Error.NOT_CONTROLLER)]
    assert c.state.image == committed and c.state.log_end_offset == end
    assert c.send(topic_request()).batches[0].base_offset == end  # offsets are given out again


def test_log_11_a_snapshot_holds_the_minimal_records_in_a_fixed_order():
    """LOG-11, DEC-22: unfenced brokers get an UnfenceBrokerRecord after their registration."""
    c = Cluster()
    c.start_brokers(2)
    c.register(1)
    c.create_topic("t", assignment=[[2, 1]])
    records = snapshot_records(c.state.committed_image)
    assert [type(r).__name__ for r in records] == [
        "FeatureLevelRecord",
        "RegisterBrokerRecord",
        "RegisterBrokerRecord",
        "UnfenceBrokerRecord",
        "TopicRecord",
        "PartitionRecord",
    ]
    assert [getattr(r, "broker_id", None) for r in records[1:4]] == [1, 2, 2]
    c.snapshot()
    assert c.state.log_start_offset == c.state.committed_offset and c.state.batches == ()


def test_log_12_snapshot_plus_later_records_gives_the_same_state():
    """LOG-12."""
    c = Cluster()
    c.start_brokers(1, 2, 3)
    c.create_topic("t", assignment=[[1, 2, 3]])
    c.snapshot()
    c.heartbeat(1, want_fence=True)
    c.reassign("t", [3, 2])
    c.failover()  # rebuilt from the snapshot and the records after it
    rebuilt = replay_all(replay_all(MetadataImage(), c.state.snapshot.records), [r for b in c.state.batches for r in b.records])
    assert rebuilt == c.state.committed_image == c.state.image


def test_log_13_replay_of_a_record_that_does_not_apply_changes_nothing():
    """LOG-13, DEC-29."""
    image = replay(MetadataImage(), TopicRecord("a", T))
    for record in [
        FenceBrokerRecord(5, 1),
        UnregisterBrokerRecord(5, 1),
        PartitionChangeRecord(0, UUID(int=1), leader=3),
        PartitionRecord(0, UUID(int=1), [1], [1]),
        RemoveTopicRecord(UUID(int=1)),
        TopicRecord("a", UUID(int=2)),
        TopicRecord("b", T),
    ]:
        assert replay(image, record) == image


def test_log_14_the_log_starts_with_the_finalized_features_committed():
    """LOG-14, DEC-23."""
    state = initial_state(Config(finalized_features=(FeatureRange("z.feature", 0, 1), FeatureRange("a.feature", 2, 3))))
    [batch] = state.batches
    assert batch.base_offset == 0 and list(batch.records) == [FeatureLevelRecord("a.feature", 2, 3), FeatureLevelRecord("z.feature", 0, 1)]
    assert state.committed_offset == 2
    assert initial_state(Config(finalized_features=())).log_end_offset == 0


def test_log_15_time_is_an_input_and_never_goes_back():
    """LOG-15."""
    c = Cluster()
    c.tick(500)
    c.tick(100)
    assert c.state.now_ms == 500


def test_log_16_records_outside_the_lifecycle_change_nothing():
    """LOG-16."""
    image = MetadataImage()
    for record in ONE_OF_EACH:
        if type(record).API_KEY in (4, 6, 10, 11, 13, 14):
            assert replay(image, record) == image


def test_log_17_feature_level_replay_sets_the_finalized_range():
    """LOG-17."""
    image = replay(MetadataImage(), FeatureLevelRecord("metadata.format", 1, 3))
    assert (image.features["metadata.format"].min_level, image.features["metadata.format"].max_level) == (1, 3)


def test_log_2_an_error_inside_a_tagged_field_names_its_offset_in_the_whole_record():
    """LOG-2: the byte offset counts from the start of the frame, inside tagged fields too."""
    good = encode_record(PartitionChangeRecord(0, T, isr=(1, 2)))
    # the ISR is tag 0: ... 01 (one tag) 00 (tag 0) 0a (10 bytes) 03 (two elements) ...; claim 200 elements
    at = good.index(bytes([0x01, 0x00, 0x09, 0x03])) + 3
    bad = good[:at] + bytes([0xC9, 0x01]) + good[at + 1 :]
    with pytest.raises(FrameError) as caught:
        decode_record(bad)
    assert caught.value.offset == at  # the length varint, counted from the start of the frame
