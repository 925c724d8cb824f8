"""TOOL-1 in impl: a controller starts only on a directory formatted for its node and cluster.

``Controller.open`` refuses a directory without ``meta.properties``, or whose ``meta.properties``
names another node or cluster, or is not version 1, naming the file and the key, and touches
nothing on disk; ``Controller.create`` formats a new directory (meta.properties, then the
bootstrap batch) and refuses one already formatted. The file impl writes is the one the model
renders and parses, and the reverse.
"""

from __future__ import annotations

import os

import pytest

from kraftspec.impl import meta_properties
from kraftspec.impl.config import ConfigError, ControllerConfig
from kraftspec.impl.controller import Controller
from kraftspec.impl.meta_properties import MetaProperties, MetaPropertiesError
from kraftspec.model.tools import MetaProperties as ModelMeta
from kraftspec.model.tools import parse_meta_properties, render_meta_properties
from test_impl_storage import files_of

CLUSTER = "3Db5QLSqSZieL3rJBUUegA"


def test_tool_1_an_unformatted_directory_is_refused_and_left_untouched(tmp_path):
    target = tmp_path / "metadata"
    with pytest.raises(MetaPropertiesError) as raised:
        Controller.open(target)
    assert str(raised.value) == (f"{target / 'meta.properties'}: missing: the directory is not formatted "
                                 "(format it first: kraftspec storage format)")
    assert not target.exists()  # not even created
    target.mkdir()
    (target / "stray").write_text("x")
    with pytest.raises(MetaPropertiesError):
        Controller.open(target)
    assert files_of(target) == {"stray": b"x"}


def test_tool_1_create_formats_then_open_checks_node_and_cluster(tmp_path):
    config = ControllerConfig(cluster_id=CLUSTER, node_id=3)
    controller = Controller.create(tmp_path, config)
    assert controller.committed_offset == 1  # LOG-14: the bootstrap batch, committed
    controller.close()
    assert meta_properties.read(tmp_path) == MetaProperties(CLUSTER, 3)
    assert not list(tmp_path.glob("*.tmp"))  # written atomically: no temporary file left
    Controller.open(tmp_path, config).close()
    before = files_of(tmp_path)
    with pytest.raises(MetaPropertiesError, match=r"meta.properties: node.id is 3 but the configured node.id is 4") as raised:
        Controller.open(tmp_path, ControllerConfig(cluster_id=CLUSTER, node_id=4))
    assert raised.value.key == "node.id"
    with pytest.raises(MetaPropertiesError, match="cluster.id is '3Db5QLSqSZieL3rJBUUegA' but the configured cluster id is") as raised:
        Controller.open(tmp_path, ControllerConfig(node_id=3))
    assert raised.value.key == "cluster.id"
    assert files_of(tmp_path) == before
    with pytest.raises(MetaPropertiesError, match="already formatted"):
        Controller.create(tmp_path, config)
    assert files_of(tmp_path) == before


@pytest.mark.parametrize("text, key, says", [
    ("cluster.id=x\nnode.id=0\n", "version", "version is missing"),
    ("version=0\ncluster.id=x\nbroker.id=0\n", "version", "version is '0'; only version 1"),
    ("version=1\nnode.id=0\n", "cluster.id", "cluster.id is missing"),
    ("version=1\ncluster.id=x\nbroker.id=0\n", "node.id", "node.id is missing (broker.id is version 0's key)"),
    ("version=1\ncluster.id=x\nnode.id=-1\n", "node.id", "node.id '-1' is not a node id"),
    ("version=1\ncluster.id=x\nnode.id=2147483648\n", "node.id", "node.id '2147483648' is not a node id"),
    ("version=1\ncluster.id=x\nnode.id 0\n", None, "line 3: 'node.id 0' is not key=value"),
])
def test_tool_1_a_malformed_meta_properties_is_refused_naming_the_key(tmp_path, text, key, says):
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(MetaPropertiesError) as raised:
        Controller.open(tmp_path)
    assert str(raised.value).startswith(f"{tmp_path / 'meta.properties'}: {says}")
    assert raised.value.key == key
    assert files_of(tmp_path) == {"meta.properties": text.encode()}


def test_tool_1_impl_and_the_model_read_each_others_files(tmp_path):
    """Two independent readers of one format: the model's rendering, impl's parser, and back."""
    for cluster_id, node_id in ((CLUSTER, 0), ("MkU3OEVBNTcwNTJENDM2Qk", 2**31 - 1)):
        model_text = render_meta_properties(ModelMeta(cluster_id, node_id))
        assert meta_properties.parse(model_text.encode(), tmp_path) == MetaProperties(cluster_id, node_id)
        impl_bytes = meta_properties.render(MetaProperties(cluster_id, node_id))
        assert parse_meta_properties(impl_bytes.decode(), "p", configured_node_id=node_id) == ModelMeta(cluster_id, node_id)


def test_tool_1_a_crash_while_formatting_leaves_no_meta_properties_or_a_whole_one(tmp_path, monkeypatch):
    """The write goes through a temporary file renamed over meta.properties: if the rename never
    happens, the directory is not formatted; the stale temporary file does not count."""
    def crash(source, target):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(Exception, match="meta.properties: cannot write: Input/output error"):
        Controller.create(tmp_path)
    monkeypatch.undo()
    assert meta_properties.read(tmp_path) is None
    Controller.create(tmp_path).close()
    assert meta_properties.read(tmp_path) == MetaProperties(ControllerConfig().cluster_id, 0)


@pytest.mark.parametrize("node_id", [-1, 2**31, True])
def test_conf_1_the_node_id_is_a_non_negative_int32(node_id):
    with pytest.raises(ConfigError, match="node.id must be an integer from 0 to 2147483647"):
        ControllerConfig(node_id=node_id)
