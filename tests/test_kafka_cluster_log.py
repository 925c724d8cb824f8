"""Apache Kafka's own metadata log, written by a real cluster, read by dump-log and check-log
(TOOL-4, TOOL-6).

The module's fixture runs Kafka 4.4 (kafka_2.13 from Maven Central, conformance/kafka-cluster/) on
loopback ports: node 1 in combined mode (broker and controller), formatted by Kafka's StorageTool
at metadata.version 3.7-IV1 (the kafka profile's); it creates two topics, is stopped with SIGTERM
and started again; node 2, a broker alone, joins; partition alpha-0 is reassigned from broker 1 to
broker 2 (Kafka writes a PartitionChangeRecord that starts the reassignment, adding 2 and removing
1, and one that completes it once 2 has caught up); topic beta is deleted; both nodes are stopped.
Snapshots are taken every second (metadata.log.max.snapshot.interval.ms), so the log directory
holds Kafka's checkpoints too. Every wait is on a condition the driver polls with a deadline
(brokers listed by describeCluster, leaders, the reassignment done, the topic gone), never a sleep.
"""

import json
import shutil
import uuid
from types import SimpleNamespace

import pytest

from kraftspec.cli import main
from kraftspec.conformance.kafka_cluster import KafkaNode, classpath, free_port
from kraftspec.kafka_log import metadata_records, read_directory, read_file
from kraftspec.model import kafka_records as kafka
from kraftspec.model.records import PartitionChangeRecord, RemoveTopicRecord
from kraftspec.model.tools import uuid_text


def _topics(described: str) -> dict[str, str]:
    return {parts[1]: parts[2] for parts in (line.split() for line in described.splitlines()) if parts and parts[0] == "topic"}


@pytest.fixture(scope="module")
def kafka_log(tmp_path_factory):
    home = tmp_path_factory.mktemp("kafka")
    cp = classpath()
    cluster_id = uuid_text(uuid.uuid4())
    controller_port = free_port()
    node1 = KafkaNode(home, 1, cluster_id, controller_port, cp=cp)
    node2 = KafkaNode(home, 2, cluster_id, controller_port, roles="broker", cp=cp)
    try:
        node1.format()
        node2.format()
        node1.start()
        created = _topics(node1.drive("wait-brokers", "1", "90000", "create-topic", "alpha", "3", "1",
                                      "create-topic", "beta", "1", "1", "describe"))
        first_stop = node1.stop()
        node1.start()
        node2.start()
        final = _topics(node1.drive("wait-brokers", "1,2", "90000", "reassign", "alpha", "0", "2", "90000",
                                    "delete-topic", "beta", "60000", "describe"))
        stops = (node2.stop(), node1.stop())
    finally:  # exactly the processes this fixture started, also when it failed
        node2.stop()
        node1.stop()
    return SimpleNamespace(directory=node1.metadata_dir, follower=node2.metadata_dir, created=created, final=final,
                           first_stop=first_stop, stops=stops, home=home)


def cli(capsys, *argv):
    status = main([str(a) for a in argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_the_cluster_ran_and_stopped_on_sigterm(kafka_log):
    assert set(kafka_log.created) == {"alpha", "beta"} and set(kafka_log.final) == {"alpha"}
    assert all(code in (0, 143) for code in (kafka_log.first_stop, *kafka_log.stops))  # 143: exited on SIGTERM


def test_tool_6_check_log_finds_kafkas_topics_brokers_and_no_problem(kafka_log, capsys):
    """TOOL-6 on Kafka's own __cluster_metadata-0: valid, with the topics, partitions and
    registrations the operations made."""
    status, out, err = cli(capsys, "check-log", kafka_log.directory, "--profile", "kafka", "--json")
    report = json.loads(out)
    assert report["problems"] == [] and status == 0 and err == ""
    assert report["format"] == "kafka" and report["features"] == {"metadata.version": [16, 16]}
    [alpha] = report["topics"]
    assert (alpha["name"], alpha["topicId"]) == ("alpha", kafka_log.created["alpha"])
    assert [p["partition"] for p in alpha["partitions"]] == [0, 1, 2]
    assert alpha["partitions"][0]["replicas"] == [2] and alpha["partitions"][1]["replicas"] == [1]
    assert [b["id"] for b in report["brokers"]] == [1, 2]
    epochs = {b["id"]: b["epoch"] for b in report["brokers"]}
    assert epochs[1] > 0 and epochs[2] > 0 and epochs[1] != epochs[2]  # each its registration's offset (INV-7)
    lifecycle = report["lifecycleRecords"]
    assert lifecycle["RegisterBrokerRecord"] == 3 and lifecycle["TopicRecord"] == 2 and lifecycle["RemoveTopicRecord"] == 1
    assert lifecycle["PartitionChangeRecord"] >= 2 and lifecycle["BrokerRegistrationChangeRecord"] >= 2
    assert "NoOpRecord" in report["otherRecords"] and "RegisterControllerRecord" in report["otherRecords"]
    assert report["controlRecords"]["LEADER_CHANGE"] >= 2  # one leader election per start of node 1
    status, out, _ = cli(capsys, "check-log", kafka_log.directory)
    assert status == 0 and out.splitlines()[-1] == "valid"


def test_tool_6_the_brokers_copy_is_valid_and_kafkas_snapshots_agree_with_the_log(kafka_log, capsys):
    """TOOL-6, LOG-12: node 2's replica of the log, and every checkpoint Kafka took, against the log."""
    for directory in (kafka_log.directory, kafka_log.follower):
        status, out, _ = cli(capsys, "check-log", directory, "--json")
        report = json.loads(out)
        assert status == 0 and report["problems"] == []
    log = read_directory(kafka_log.directory)
    assert any(s.end_offset and s.end_offset > 0 for s in log.snapshots)  # taken every second of the run


def test_the_reassignment_and_the_deletion_are_in_the_log(kafka_log):
    """The records the operations wrote, through metadata_records: (offset, record, version)."""
    rows = list(metadata_records(kafka_log.directory))
    offsets = [o for o, _, _ in rows]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    alpha, beta = (uuid_text_to_uuid(kafka_log.created[n]) for n in ("alpha", "beta"))
    records = [r for _, r, _ in rows]
    assert kafka.TopicRecord("alpha", alpha) in records and kafka.TopicRecord("beta", beta) in records
    started = [r for r in records if isinstance(r, PartitionChangeRecord) and r.topic_id == alpha and r.adding_replicas == (2,)]
    completed = [r for r in records if isinstance(r, PartitionChangeRecord) and r.topic_id == alpha and r.replicas == (2,)]
    assert started and started[0].removing_replicas == (1,) and completed
    assert RemoveTopicRecord(beta) in records
    versions = {type(r).__name__: v for _, r, v in rows if isinstance(r, kafka.RegisterBrokerRecord)}
    assert versions == {"RegisterBrokerRecord": 2}


def uuid_text_to_uuid(text):
    from kraftspec.model.tools import parse_uuid_text

    value = parse_uuid_text(text)
    assert value is not None, text
    return value


def test_tool_4_dump_log_prints_kafkas_segment(kafka_log, capsys):
    """TOOL-4 on Kafka's segment: every batch, and each record as payload: {"type","version","data"}."""
    segment = kafka_log.directory / "00000000000000000000.log"
    status, out, err = cli(capsys, "dump-log", "--cluster-metadata-decoder", segment)
    assert status == 0 and err == ""
    alpha = kafka_log.created["alpha"]
    assert f'payload: {{"type":"TOPIC_RECORD","version":0,"data":{{"name":"alpha","topicId":"{alpha}"}}}}' in out
    assert '"type":"REGISTER_BROKER_RECORD","version":2,' in out and '"type":"REMOVE_TOPIC_RECORD"' in out
    assert '"type":"REGISTER_CONTROLLER_RECORD","version":0,"data":{"controllerId":1,' in out
    assert 'control: {"type":"LEADER_CHANGE","version":0,"data":{"version":0,"leaderId":1,' in out
    assert '"addingReplicas":[2]' in out
    batches = read_file(segment).batches
    assert sum(line.startswith("baseOffset: ") for line in out.splitlines()) == len(batches)
    status, out, _ = cli(capsys, "dump-log", "--cluster-metadata-decoder", "--skip-record-metadata", segment)
    assert status == 0 and "| offset:" not in out and out.count("\n payload: ") + out.count("\n control: ") == sum(
        len(b.entries) for b in batches)


def test_dump_log_reads_kafkas_checkpoints(kafka_log, capsys):
    checkpoints = sorted(kafka_log.directory.glob("*.checkpoint"))
    status, out, _ = cli(capsys, "dump-log", "--cluster-metadata-decoder", *checkpoints)
    assert status == 0
    assert out.count('control: {"type":"SNAPSHOT_HEADER"') == len(checkpoints) == out.count('"type":"SNAPSHOT_FOOTER"')


def test_a_flipped_byte_in_kafkas_log_is_reported_by_file_and_offset(kafka_log, tmp_path, capsys):
    """TOOL-6: a copy of the log with one byte flipped inside alpha's TopicRecord batch."""
    copy = tmp_path / "__cluster_metadata-0"
    shutil.copytree(kafka_log.directory, copy)
    segment = copy / "00000000000000000000.log"
    batch = next(b for b in read_file(segment).batches
                 if any(e.type_name == "TopicRecord" and e.data["name"] == "alpha" for e in b.entries))
    data = bytearray(segment.read_bytes())
    data[batch.position + batch.size - 3] ^= 0x40
    segment.write_bytes(bytes(data))
    status, out, err = cli(capsys, "check-log", copy, "--json")
    problems = json.loads(out)["problems"]
    assert status == 1
    crc = [p for p in problems if p["field"] == "crc"]
    assert crc == [{"file": str(segment), "position": batch.position + 17, "offset": batch.base_offset, "field": "crc",
                    "message": crc[0]["message"]}]
    assert f"{segment}: byte {batch.position + 17} (offset {batch.base_offset}), crc: CRC32C mismatch" in err
    status, out, err = cli(capsys, "dump-log", "--cluster-metadata-decoder", segment)
    assert status == 1 and "CRC32C mismatch" in err and '"type":"REMOVE_TOPIC_RECORD"' in out  # the rest is printed


def test_tool_5_the_metadata_shell_reads_kafkas_log(kafka_log, capsys):
    """TOOL-5 on Kafka's __cluster_metadata-0: the tree of what Kafka's records say, read in one
    shot: the brokers that registered, alpha with the reassigned partition on broker 2, beta gone."""
    directory = str(kafka_log.directory)
    assert main(["metadata-shell", "--directory", directory, "ls", "/brokers"]) == 0
    assert capsys.readouterr().out.split() == ["1", "2"]
    assert main(["metadata-shell", "--directory", directory, "ls", "/topics"]) == 0
    assert capsys.readouterr().out.split() == ["alpha"]
    assert main(["metadata-shell", "--directory", directory, "-c", "cat /topics/alpha/0/replicas", "-c", "cat /features/metadata.version"]) == 0
    out = capsys.readouterr().out
    assert "[2]" in out and "16" in out
    checkpoints = sorted(kafka_log.directory.glob("*.checkpoint"))
    assert main(["metadata-shell", "--snapshot", str(checkpoints[-1]), "ls", "/brokers"]) == 0
    assert "1" in capsys.readouterr().out.split()

