"""Configurations and operator tools: CONF-1 to CONF-3, TOOL-1 to TOOL-5."""

import json
from uuid import UUID

import pytest

from cluster import Cluster
from kraftspec.model import Config, ConfigError
from kraftspec.model.records import FenceBrokerRecord, PartitionChangeRecord, PartitionRecord, TopicRecord
from kraftspec.model.tools import (
    MetaProperties,
    MetaPropertiesError,
    dump_payload,
    format_plan,
    metadata_tree,
    node_names,
    parse_meta_properties,
    parse_uuid_text,
    random_uuid_text,
    render_meta_properties,
    unregister_command,
    uuid_text,
)

GU = parse_uuid_text("GU_rXds2FGppL1JqXYpx2g")


def test_conf_1_defaults_the_kip_names():
    """CONF-1, DEC-12."""
    config = Config()
    assert (config.heartbeat_interval_ms, config.session_timeout_ms) == (3000, 18000)
    assert [f.name for f in config.finalized_features] == ["metadata.format"]


@pytest.mark.parametrize(
    "fields, named",
    [
        ({"heartbeat_interval_ms": 0}, "broker.heartbeat.interval.ms"),
        ({"session_timeout_ms": -5}, "broker.session.timeout.ms"),
        ({"heartbeat_interval_ms": 2000, "session_timeout_ms": 2000}, "broker.session.timeout.ms (2000)"),
        ({"cluster_id": ""}, "cluster.id"),
    ],
)
def test_conf_2_bad_timing_settings_are_refused_naming_the_setting(fields, named):
    """CONF-2."""
    with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace(")", r"\)")):
        Config(**fields)


def test_conf_3_a_co_located_process_is_two_nodes_with_one_id():
    """CONF-3, DEC-11: and a broker may use an id a controller uses."""
    assert node_names(0, "broker,controller") == ["broker-0", "controller-0"]
    with pytest.raises(ValueError, match="process.roles"):
        node_names(0, "broker,broker")
    c = Cluster()
    assert c.register(0).error_code == 0  # controller-0 exists in any co-located setup; no conflict


def test_tool_1_meta_properties_version_1():
    """TOOL-1: written and read back; refusals name the file and the key."""
    text = render_meta_properties(MetaProperties("3Db5QLSqSZieL3rJBUUegA", 0))
    assert parse_meta_properties(text, "/d/meta.properties", configured_node_id=0) == MetaProperties("3Db5QLSqSZieL3rJBUUegA", 0)
    seed_example = "#\n#Tue Dec 01 10:08:08 PST 2020\ncluster.id=3Db5QLSqSZieL3rJBUUegA\nversion=1\nnode.id=0\n"
    assert parse_meta_properties(seed_example, "p").node_id == 0
    for bad, key in [("version=0\ncluster.id=x\nnode.id=0", "version"), ("version=1\nnode.id=0", "cluster.id"), ("version=1\ncluster.id=x", "node.id")]:
        with pytest.raises(MetaPropertiesError, match=f"/d/meta.properties: {key}"):
            parse_meta_properties(bad, "/d/meta.properties")
    with pytest.raises(MetaPropertiesError, match="differs from the configured node.id 2"):
        parse_meta_properties(text, "p", configured_node_id=2)


def test_tool_2_format_and_the_uuid_text_form():
    """TOOL-2: refuses formatted directories unless told to skip them; 22-character UUIDs."""
    dirs = {"/a": None, "/b": "version=1\ncluster.id=x\nnode.id=1\n"}
    refused = format_plan(dirs, "cid", 1, ignore_formatted=False)
    assert refused.writes == {} and "/b" in refused.error
    plan = format_plan(dirs, "cid", 1, ignore_formatted=True)
    assert list(plan.writes) == ["/a/meta.properties"] and plan.skipped == ("/b",)
    assert uuid_text(GU) == "GU_rXds2FGppL1JqXYpx2g" and len(random_uuid_text(12345)) == 22
    assert parse_uuid_text("not-a-uuid") is None


def test_tool_3_unregister_sends_an_unregister_broker_request():
    """TOOL-3."""
    c = Cluster()
    c.register(4)
    assert c.request(unregister_command(4)).error_code == 0 and 4 not in c.state.image.brokers


def test_tool_4_the_metadata_decoder_prints_seed_000s_format():
    """TOOL-4, DEC-36: seed 000's example lines, byte for byte where our schema agrees with it; the
    schema's field names where the example's keys differ (`name`, `id`, `epoch`)."""
    assert dump_payload(PartitionChangeRecord(0, GU, leader=-1)) == (
        'payload: {"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,"topicId":"GU_rXds2FGppL1JqXYpx2g","leader":-1}}'
    )
    topic = json.loads(dump_payload(TopicRecord("bar", GU)).removeprefix("payload: "))
    assert topic == {"type": "TOPIC_RECORD", "version": 0, "data": {"topicName": "bar", "topicId": "GU_rXds2FGppL1JqXYpx2g"}}
    partition = json.loads(dump_payload(PartitionRecord(0, GU, [1], [1], leader=1)).removeprefix("payload: "))
    assert partition["data"] == {
        "partitionId": 0, "topicId": "GU_rXds2FGppL1JqXYpx2g", "replicas": [1], "isr": [1], "removingReplicas": [],
        "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
    }
    assert dump_payload(FenceBrokerRecord(1, 0)).endswith('{"type":"FENCE_BROKER_RECORD","version":0,"data":{"brokerId":1,"brokerEpoch":0}}')


def test_tool_5_the_metadata_shell_tree():
    """TOOL-5."""
    c = Cluster()
    c.start_brokers(1)
    c.create_topic("bar", assignment=[[1]])
    tree = metadata_tree(c.state.committed_image)
    assert tree["/brokers/1/fenced"] == "false"
    assert tree["/features/metadata.format"] == "1-1"
    assert tree["/topics/bar/0/isr"] == "[1]" and tree["/topics/bar/0/leader"] == "1"
    assert UUID(int=0) != parse_uuid_text(tree["/topics/bar/id"])
