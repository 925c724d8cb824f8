"""The metadata log reader (cli/kafka_log.py) and the two commands on it, on small files built here
byte by byte: Kafka's record batches v2 (a CRC32C failure, a truncation, compression, control
records, types outside kraftspec's schemas) and kraftspec impl's own log; TOOL-4 and TOOL-6."""

import gzip
import json
import shutil
import struct
from uuid import UUID

import crc32c
import pytest

from kraftspec.cli import main
from kraftspec.kafka_log import metadata_records, read_directory, read_file
from kraftspec.model import kafka_records as kafka
from kraftspec.model.framing import encode_record, uvarint
from kraftspec.model.log_check import check_log, snapshot_differences
from kraftspec.model.records import BrokerEndpoint, PartitionChangeRecord, PartitionRecord
from kraftspec.model.replay import replay_all
from kraftspec.model.state import Config, MetadataImage
from kraftspec.model.tools import uuid_text

TOPIC = UUID(int=0x1234)
INCARNATION = UUID(int=0x77)


# ---- building Kafka's bytes --------------------------------------------------------------------


def zigzag(value: int) -> bytes:
    return uvarint((value << 1) ^ (value >> 63) if value >= 0 else ((-value) << 1) - 1)


def kafka_record(offset_delta: int, value: bytes | None, key: bytes | None = None) -> bytes:
    body = b"\x00" + zigzag(0) + zigzag(offset_delta)
    body += zigzag(-1) if key is None else zigzag(len(key)) + key
    body += zigzag(-1) if value is None else zigzag(len(value)) + value
    body += zigzag(0)
    return zigzag(len(body)) + body


def kafka_batch(base_offset: int, values: list[bytes], control: bool = False, codec: int = 0, keys=None) -> bytes:
    records = b"".join(kafka_record(i, v, None if keys is None else keys[i]) for i, v in enumerate(values))
    if codec == 1:
        records = gzip.compress(records)
    attributes = codec | (0x20 if control else 0)
    after_crc = struct.pack(">hiqqqhii", attributes, len(values) - 1, 1000, 1000, -1, -1, -1, len(values)) + records
    crc = crc32c.crc32c(after_crc)
    head = struct.pack(">iBI", 1, 2, crc)  # partition leader epoch, magic, CRC
    return struct.pack(">qi", base_offset, len(head) + len(after_crc)) + head + after_crc


def frame(record) -> bytes:
    return encode_record(record, frame_type=1)


def registration(broker_id: int, epoch: int) -> bytes:
    return frame(kafka.RegisterBrokerRecord(broker_id, incarnation_id=INCARNATION, broker_epoch=epoch,
                                            end_points=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9092, 0),),
                                            features=(kafka.BrokerFeature("metadata.version", 7, 16),), fenced=False))


def leader_change(leader: int) -> tuple[bytes, bytes]:
    voters = uvarint(2) + struct.pack(">i", leader) + b"\x00"
    return struct.pack(">hh", 0, 2), struct.pack(">hi", 0, leader) + voters + voters + b"\x00"


def sample_log() -> tuple[bytes, list[int]]:
    """A control batch, features, a registration, a topic and its partition, a NoOpRecord: the
    bytes and each batch's position."""
    key, value = leader_change(1)
    batches = [
        kafka_batch(0, [value], control=True, keys=[key]),
        kafka_batch(1, [frame(kafka.FeatureLevelRecord("metadata.version", 16))]),
        kafka_batch(2, [registration(1, 2)]),
        kafka_batch(3, [frame(kafka.TopicRecord("alpha", TOPIC)),
                        frame(PartitionRecord(0, TOPIC, (1,), (1,), (), (), 1, 0, 0))]),
        kafka_batch(5, [uvarint(1) + uvarint(20) + uvarint(0) + b"\x00"]),  # NoOpRecord
    ]
    positions, at = [], 0
    for b in batches:
        positions.append(at)
        at += len(b)
    return b"".join(batches), positions


def write_log(tmp_path, data: bytes, name: str = "00000000000000000000.log"):
    folder = tmp_path / "__cluster_metadata-0"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(data)
    return folder


def cli(capsys, *argv) -> tuple[int, str, str]:
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


# ---- the reader ------------------------------------------------------------------------------


def test_a_clean_kafka_segment_decodes_every_record(tmp_path):
    """TOOL-4: Kafka's batches and records, the control record, the records of kraftspec's schemas
    and one outside them."""
    data, _ = sample_log()
    read = read_file(write_log(tmp_path, data) / "00000000000000000000.log")
    assert read.kind == "kafka-log" and read.problems == []
    assert [b.base_offset for b in read.batches] == [0, 1, 2, 3, 5]
    assert all(b.crc_valid for b in read.batches) and read.batches[0].is_control
    entries = [e for b in read.batches for e in b.entries]
    assert [e.offset for e in entries] == [0, 1, 2, 3, 4, 5]
    assert entries[0].kind == "control" and entries[0].type_name == "LEADER_CHANGE"
    assert entries[0].data == {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": [{"voterId": 1}]}
    assert entries[3].payload_line() == (
        'payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":"alpha","topicId":"%s"}}' % uuid_text(TOPIC))
    assert entries[2].record.broker_epoch == 2 and entries[2].version == 2
    assert entries[5].payload_json() == {"type": "NO_OP_RECORD", "version": 0, "data": {}}


def test_a_crc_failure_is_reported_by_file_and_byte_and_the_rest_is_read(tmp_path):
    """TOOL-6: a flipped byte fails the batch's CRC32C; later batches are still read."""
    data, positions = sample_log()
    corrupt = bytearray(data)
    corrupt[positions[3] + 70] ^= 0x01  # inside the records of the topic's batch
    path = write_log(tmp_path, bytes(corrupt)) / "00000000000000000000.log"
    read = read_file(path)
    [problem] = read.problems
    assert (problem.file, problem.position, problem.offset, problem.field) == (str(path), positions[3] + 17, 3, "crc")
    assert "CRC32C mismatch" in problem.message
    assert [b.base_offset for b in read.batches] == [0, 1, 2, 3, 5]
    assert read.batches[3].entries == [] and read.batches[4].entries[0].type_name == "NoOpRecord"


def test_a_truncated_batch_is_reported_where_it_starts(tmp_path):
    data, positions = sample_log()
    path = write_log(tmp_path, data[:-5]) / "00000000000000000000.log"
    read = read_file(path)
    [problem] = read.problems
    assert problem.position == positions[4] and problem.offset == 5 and problem.message.startswith("truncated")
    assert [b.base_offset for b in read.batches] == [0, 1, 2, 3]


def test_compression_gzip_is_read_and_other_codecs_are_named(tmp_path):
    zipped = kafka_batch(0, [frame(kafka.FeatureLevelRecord("metadata.version", 16))], codec=1)
    zstd = kafka_batch(1, [frame(kafka.FeatureLevelRecord("metadata.version", 16))], codec=4)
    after = kafka_batch(2, [registration(1, 2)])
    read = read_file(write_log(tmp_path, zipped + zstd + after) / "00000000000000000000.log")
    assert read.batches[0].entries[0].data == {"name": "metadata.version", "featureLevel": 16}
    [problem] = read.problems
    assert problem.offset == 1 and "compression zstd is not supported" in problem.message
    assert read.batches[2].entries[0].record.broker_id == 1


def test_types_outside_the_schemas_are_named_with_their_bytes(tmp_path):
    """LOG-16: a type kraftspec has no schema for is listed by name and version, its bytes in hex;
    a version beyond kraftspec's schemas likewise."""
    zk = uvarint(1) + uvarint(21) + uvarint(0) + b"\x01\x00"  # ZkMigrationStateRecord
    future = uvarint(1) + uvarint(3) + uvarint(2) + b"\xab"  # PartitionRecord version 2
    read = read_file(write_log(tmp_path, kafka_batch(0, [zk, future])) / "00000000000000000000.log")
    assert read.problems == []
    first, second = read.batches[0].entries
    assert first.payload_json() == {"type": "ZK_MIGRATION_STATE_RECORD", "version": 0, "hex": "0100",
                                    "note": "kraftspec has no schema for ZkMigrationStateRecord"}
    assert second.type_name == "PartitionRecord" and second.version == 2 and second.payload_json()["hex"] == "ab"


def test_metadata_records_yields_offset_record_and_version(tmp_path):
    data, _ = sample_log()
    folder = write_log(tmp_path, data)
    rows = list(metadata_records(folder))
    assert [(o, v) for o, _, v in rows] == [(1, 0), (2, 2), (3, 0), (4, 0), (5, 0)]
    assert rows[2][1] == kafka.TopicRecord("alpha", TOPIC)
    assert rows[4][1].type_name == "NoOpRecord"


# ---- dump-log ----------------------------------------------------------------------------------


def test_tool_4_dump_log_prints_batches_and_payloads(tmp_path, capsys):
    """TOOL-4: one line per batch, then per record its metadata and payload; --skip-record-metadata
    keeps the batch lines only."""
    data, _ = sample_log()
    path = write_log(tmp_path, data) / "00000000000000000000.log"
    status, out, err = cli(capsys, "dump-log", "--cluster-metadata-decoder", str(path))
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[:2] == [f"Dumping {path}", "Log starting offset: 0"]
    assert lines[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 ") and "isControl: true" in lines[2]
    topic = '{"type":"TOPIC_RECORD","version":0,"data":{"name":"alpha","topicId":"%s"}}' % uuid_text(TOPIC)
    assert any(line.startswith("| offset: 3 ") and line.endswith("payload: " + topic) for line in lines)
    status, out, _ = cli(capsys, "dump-log", "--cluster-metadata-decoder", "--skip-record-metadata", str(path))
    assert status == 0 and " payload: " + topic in out.splitlines() and "| offset:" not in out
    assert sum(line.startswith("baseOffset:") for line in out.splitlines()) == 5


def test_dump_log_on_a_corrupt_file_names_it_and_prints_the_rest(tmp_path, capsys):
    data, positions = sample_log()
    corrupt = bytearray(data)
    corrupt[positions[2] + 65] ^= 0xFF
    path = write_log(tmp_path, bytes(corrupt)) / "00000000000000000000.log"
    status, out, err = cli(capsys, "dump-log", "--cluster-metadata-decoder", str(path))
    assert status == 1
    assert f"{path}: byte {positions[2] + 17} (offset 2), crc: CRC32C mismatch" in err
    assert "TOPIC_RECORD" in out and "NO_OP_RECORD" in out
    status, out, _ = cli(capsys, "dump-log", "--json", "--cluster-metadata-decoder", str(path))
    kinds = [json.loads(line)["kind"] for line in out.splitlines()]
    assert status == 1 and kinds.count("batch") == 5 and kinds.count("problem") == 1


def test_dump_log_refuses_what_is_no_log_file(tmp_path, capsys):
    (tmp_path / "x.log").write_bytes(b"hello, this is not a log file at all")
    status, _, err = cli(capsys, "dump-log", str(tmp_path / "x.log"), str(tmp_path / "missing.log"))
    assert status == 2 and "neither a Kafka record batch file" in err and "missing.log: no such file" in err
    assert "Traceback" not in err


# ---- check-log ---------------------------------------------------------------------------------


def test_tool_6_check_log_replays_a_valid_log(tmp_path, capsys):
    """TOOL-6: the checksums, the offsets and the invariants; counts of what is not replayed."""
    data, _ = sample_log()
    folder = write_log(tmp_path, data)
    status, out, err = cli(capsys, "check-log", str(folder), "--json")
    report = json.loads(out)
    assert status == 0 and err == "" and report["valid"] and report["profile"] == "kafka"
    assert report["topics"] == [{"name": "alpha", "topicId": uuid_text(TOPIC), "partitions": [
        {"partition": 0, "replicas": [1], "isr": [1], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
         "addingReplicas": [], "removingReplicas": []}]}]
    assert report["brokers"][0] | {"incarnationId": None} == {"id": 1, "epoch": 2, "incarnationId": None, "fenced": False,
                                                              "inControlledShutdown": False}
    assert report["otherRecords"] == {"NoOpRecord": 1} and report["controlRecords"] == {"LEADER_CHANGE": 1}
    status, out, _ = cli(capsys, "check-log", str(folder))
    assert status == 0 and out.splitlines()[-1] == "valid"


def test_tool_6_check_log_reports_a_broken_invariant_and_a_gap(tmp_path, capsys):
    """TOOL-6: a leader that is not registered (INV-3), a registration whose epoch is not its
    offset (INV-7), and a gap in the offsets (LOG-4), each by file, byte and offset."""
    first = kafka_batch(0, [frame(kafka.TopicRecord("alpha", TOPIC)), frame(PartitionRecord(0, TOPIC, (5,), (5,), (), (), 5, 0, 0))])
    second = kafka_batch(7, [registration(1, 9)])  # an epoch past its own offset
    folder = write_log(tmp_path, first + second)
    path = str(folder / "00000000000000000000.log")
    status, out, err = cli(capsys, "check-log", str(folder), "--json")
    problems = json.loads(out)["problems"]
    assert status == 1
    assert {(p["field"], p["offset"], p["position"]) for p in problems} >= {
        ("INV-3", 0, 0), ("INV-7", 7, len(first)), ("baseOffset", 7, len(first))}
    assert all(p["file"] == path for p in problems)
    assert f"{path}: byte {len(first)} (offset 7), baseOffset: a gap" in err


def test_check_log_refuses_what_is_no_metadata_log(tmp_path, capsys):
    status, _, err = cli(capsys, "check-log", str(tmp_path / "nowhere"))
    assert status == 2 and "not a directory" in err
    status, _, err = cli(capsys, "check-log", str(tmp_path))
    assert status == 2 and "no metadata log segments" in err
    data, _ = sample_log()
    status, _, err = cli(capsys, "check-log", str(write_log(tmp_path, data)), "--profile", "kip-631")
    assert status == 2 and "--profile kafka" in err and "Traceback" not in err


def test_check_log_model_part_counts_what_it_does_not_replay():
    """TOOL-6, LOG-16: the pure part: records outside the lifecycle are counted, not failed."""
    config = Config.for_profile("kafka")
    batches = [[(0, kafka.FeatureLevelRecord("metadata.version", 16)), (1, "a record the model does not know")],
               [(2, PartitionChangeRecord(0, TOPIC, leader=3))]]
    result = check_log(batches, config)
    assert result.violations == () and result.lifecycle == {"FeatureLevelRecord": 1, "PartitionChangeRecord": 1}
    assert result.other == {"str": 1} and result.end_offset == 3


def test_log_12_snapshot_comparison_ignores_the_order_of_keyed_lists():
    """LOG-12: Kafka lists a registration's features by name in a map; a snapshot may reorder them."""
    def image(features):
        record = kafka.RegisterBrokerRecord(1, incarnation_id=INCARNATION, broker_epoch=2, features=features)
        return replay_all(MetadataImage(), [record])
    a, b = kafka.BrokerFeature("a", 0, 1), kafka.BrokerFeature("b", 0, 1)
    assert snapshot_differences(image((a, b)), image((b, a))) == []
    assert snapshot_differences(image((a,)), image((b, a))) != []


# ---- kraftspec impl's own log --------------------------------------------------------------------


@pytest.fixture
def impl_directory(tmp_path):
    from test_impl_recovery import busy_cluster

    controller = busy_cluster(tmp_path / "impl")
    controller.take_snapshot()
    controller.commit(controller.log_end_offset)
    controller.close()
    return tmp_path / "impl"


def test_impl_log_and_snapshot_are_read_and_checked(impl_directory, capsys):
    """TOOL-6 on impl's own directory (log/ and snapshots/): valid, snapshot compared (LOG-12)."""
    log = read_directory(impl_directory)
    assert log.format == "kraftspec" and log.problems == [] and len(log.snapshots) == 1
    status, out, _ = cli(capsys, "check-log", str(impl_directory), "--json")
    report = json.loads(out)
    assert status == 0 and report["profile"] == "kip-631" and [t["name"] for t in report["topics"]] == ["t"]
    assert report["snapshots"][0]["checked"] == "invariants and the log's replay"
    status, out, _ = cli(capsys, "dump-log", "--cluster-metadata-decoder", str(impl_directory / "log"), str(impl_directory / "snapshots"))
    assert status == 0 and out.count('"type":"TOPIC_RECORD"') == 2 and "magic: KSB1" in out


def test_a_corrupt_impl_segment_is_reported(impl_directory, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(impl_directory, copy)
    segment = copy / "log" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    batches = read_file(segment).batches
    data[batches[2].position + 30] ^= 0x10
    segment.write_bytes(bytes(data))
    status, _, err = cli(capsys, "check-log", str(copy))
    assert status == 1 and f"{segment}: byte {batches[2].position + 4} (offset {batches[2].base_offset}), crc: CRC-32 mismatch" in err


def snapshot_file(records: list[bytes]) -> bytes:
    """A Kafka checkpoint: SnapshotHeader, the records, SnapshotFooter."""
    header = kafka_batch(0, [struct.pack(">hq", 0, 1000) + b"\x00"], control=True, keys=[struct.pack(">hh", 0, 3)])
    body = kafka_batch(1, records)
    footer = kafka_batch(1 + len(records), [struct.pack(">h", 0) + b"\x00"], control=True, keys=[struct.pack(">hh", 0, 4)])
    return header + body + footer


def test_tool_6_a_log_that_starts_later_is_replayed_from_its_snapshot(tmp_path, capsys):
    """TOOL-6, LOG-12: the log's first segment starts at offset 5; the checkpoint ending there gives
    the state before it. Without the checkpoint the state before offset 5 is unknown: a problem."""
    state = [frame(kafka.FeatureLevelRecord("metadata.version", 16)), registration(1, 2), frame(kafka.TopicRecord("alpha", TOPIC)),
             frame(PartitionRecord(0, TOPIC, (1,), (1,), (), (), 1, 0, 0))]
    folder = write_log(tmp_path, kafka_batch(5, [frame(PartitionChangeRecord(0, TOPIC, leader=-1))]), "00000000000000000005.log")
    (folder / "00000000000000000005-0000000001.checkpoint").write_bytes(snapshot_file(state))
    status, out, err = cli(capsys, "check-log", str(folder), "--json")
    report = json.loads(out)
    assert status == 0 and report["startedFrom"].endswith("00000000000000000005-0000000001.checkpoint"), err
    assert report["topics"][0]["partitions"][0]["leader"] == -1 and report["brokers"][0]["id"] == 1
    (folder / "00000000000000000005-0000000001.checkpoint").unlink()
    status, out, _ = cli(capsys, "check-log", str(folder), "--json")
    [problem] = json.loads(out)["problems"]
    assert status == 1 and problem["field"] == "logStartOffset" and problem["offset"] == 5
