"""The operator surface on real files: the server configuration (CONF-1, CONF-2, CONF-4),
``kraftspec storage`` (TOOL-1, TOOL-2) and ``kraftspec cluster`` (TOOL-3).

Every command runs through ``main`` on directories under tmp_path: what it prints, its exit
status, and what is on disk afterwards (meta.properties, impl's metadata log, the records an
unregistration committed). Bad input exits 2 with a message naming the file, line, key and value,
never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from uuid import UUID

import pytest

from kraftspec.cli import main
from kraftspec.impl.config import ControllerConfig
from kraftspec.impl.controller import Controller
from kraftspec.impl.messages import BrokerRegistrationRequest
from kraftspec.model.tools import (
    Listener,
    Voter,
    kraft_problems,
    parse_listeners,
    parse_uuid_text,
    parse_voters,
    random_id,
    random_uuid_text,
)
from kraftspec.properties import BadInput
from kraftspec.server_config import ServerConfig

CLUSTER = "3Db5QLSqSZieL3rJBUUegA"
KRAFT = ("process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:9093\n"
         "listeners=PLAINTEXT://:9092,CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n")


def config_file(tmp_path: Path, text: str, name: str = "server.properties") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def node(tmp_path: Path, extra: str = "") -> Path:
    """A combined node whose log directories are a and b, and whose metadata log is in m."""
    return config_file(tmp_path, KRAFT + f"log.dirs={tmp_path / 'a'},{tmp_path / 'b'}\nmetadata.log.dir={tmp_path / 'm'}\n" + extra)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.out, captured.err


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


# ---- the configuration ------------------------------------------------------------------------------


def test_conf_1_every_seed_key_is_read_with_its_default(tmp_path):
    """CONF-1: the defaults of seed 000's table, the quorum timeouts as Kafka ships them, and
    metadata.log.dir falling back to the first of log.dirs (and log.dirs to log.dir)."""
    config, warnings = ServerConfig.read(config_file(tmp_path, "node.id=7\n"))
    assert warnings == [] and config.process_roles == () and config.node_id == 7 and not config.kraft
    assert (config.initial_broker_registration_timeout_ms, config.heartbeat_interval_ms, config.session_timeout_ms) == (60000, 3000, 18000)
    assert (config.quorum_fetch_timeout_ms, config.quorum_election_timeout_ms, config.quorum_election_backoff_max_ms,
            config.quorum_request_timeout_ms, config.quorum_retry_backoff_ms, config.quorum_retry_backoff_max_ms) == (
        2000, 1000, 1000, 2000, 20, 1000)
    assert config.log_dirs == ("/tmp/kafka-logs",) and config.metadata_log_dir == "/tmp/kafka-logs"
    assert config.sasl_mechanism_controller_protocol == "GSSAPI" and config.listeners is None
    config, _ = ServerConfig.read(config_file(tmp_path, KRAFT + "log.dirs=/d1, /d2\ncontroller.quorum.retry.backoff.ms=0\n"
                                              "controller.quorum.fetch.timeout.ms=5000\nbroker.session.timeout.ms=9000\n"))
    assert config.process_roles == ("broker", "controller") and config.kraft
    assert config.voters == (Voter(1, "localhost", 9093),)
    assert config.listeners == (Listener("PLAINTEXT", "", 9092), Listener("CONTROLLER", "", 9093))
    assert config.controller_listener_names == ("CONTROLLER",)
    assert config.log_dirs == ("/d1", "/d2") and config.metadata_log_dir == "/d1" and config.directories() == ("/d1", "/d2")
    assert (config.quorum_retry_backoff_ms, config.quorum_fetch_timeout_ms, config.session_timeout_ms) == (0, 5000, 9000)
    config, _ = ServerConfig.read(config_file(tmp_path, "log.dir=/one\nmetadata.log.dir=/meta\n"))
    assert config.log_dirs == ("/one",) and config.directories() == ("/one", "/meta")


@pytest.mark.parametrize("text, line, key, says", [
    ("process.roles=broker,zookeeper\n", 1, "process.roles", "names the unknown role 'zookeeper'"),
    ("process.roles=broker,broker\n", 1, "process.roles", "names a role twice"),
    ("node.id=-1\n", 1, "node.id", "is not a node id: a node id is an integer from 0 to 2147483647, not -1"),
    ("node.id=2147483648\n", 1, "node.id", "not 2147483648"),
    ("node.id=one\n", 1, "node.id", "is not a node id"),
    ("controller.quorum.voters=1@localhost\n", 1, "controller.quorum.voters", "entry '1@localhost' has no port"),
    ("controller.quorum.voters=localhost:9093\n", 1, "controller.quorum.voters", "is not id@host:port"),
    ("controller.quorum.voters=x@h:1\n", 1, "controller.quorum.voters", "'x' is not a voter id"),
    ("controller.quorum.voters=1@h:1,,2@h:2\n", 1, "controller.quorum.voters", "has an empty entry"),
    ("controller.quorum.voters=1@h:99999\n", 1, "controller.quorum.voters", "is not a port number"),
    ("controller.quorum.voters=1@:9093\n", 1, "controller.quorum.voters", "has no host"),
    ("controller.quorum.voters=1@a:1,1@b:2\n", 1, "controller.quorum.voters", "names voter 1 twice"),
    ("listeners=PLAINTEXT:9092\n", 1, "listeners", "is not NAME://host:port"),
    ("a.b=c\nbroker.heartbeat.interval.ms=-5\n", 2, "broker.heartbeat.interval.ms", "is negative; it must be at least 1"),
    ("controller.quorum.request.timeout.ms=0\n", 1, "controller.quorum.request.timeout.ms", "must be positive"),
    ("controller.quorum.retry.backoff.ms=-1\n", 1, "controller.quorum.retry.backoff.ms", "is negative; it must be at least 0"),
    ("initial.broker.registration.timeout.ms=1m\n", 1, "initial.broker.registration.timeout.ms", "is not an integer (ms)"),
    ("broker.heartbeat.interval.ms=5000\nbroker.session.timeout.ms=5000\n", 2, "broker.session.timeout.ms",
     "breaks CONF-2: broker.session.timeout.ms (5000) must be longer than broker.heartbeat.interval.ms (5000)"),
    ("broker.heartbeat.interval.ms=20000\n", 1, "broker.heartbeat.interval.ms",
     "breaks CONF-2: broker.session.timeout.ms (18000) must be longer"),
    ("log.dirs=/a,,/b\n", 1, "log.dirs", "has an empty entry"),
    ("metadata.log.dir=\n", 1, "metadata.log.dir", "is empty"),
    ("node.id=1\nbroker.id=2\n", 2, "broker.id", "differs from node.id = 1 (line 1)"),
])
def test_conf_1_and_conf_2_an_invalid_value_is_refused_naming_file_line_key_and_value(tmp_path, text, line, key, says):
    path = config_file(tmp_path, text)
    with pytest.raises(BadInput) as raised:
        ServerConfig.read(path)
    value = text.splitlines()[line - 1].partition("=")[2]
    message = str(raised.value)
    assert message.startswith(f"{path}, line {line}: {key} = {value!r} ") and says in message
    assert raised.value.where == {"file": str(path), "line": line, "key": key, "value": value}


@pytest.mark.parametrize("text, line, key, says", [
    ("process.roles=broker\nnode.id=1\nlisteners=P://:9092\n", 0, "controller.quorum.voters",
     "controller.quorum.voters is required for a process with the broker role"),
    ("process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@h:9093\nlisteners=C://:9093\n", 0,
     "controller.listener.names", "controller.listener.names is required for a process with the controller role"),
    ("process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@h:9093\nlisteners=C://:9093\ncontroller.listener.names=D\n",
     5, "controller.listener.names", "names D, which is not one of the listeners (C)"),
    ("process.roles=controller\nnode.id=2\ncontroller.quorum.voters=1@h:9093\nlisteners=C://:9093\ncontroller.listener.names=C\n",
     3, "controller.quorum.voters", "does not name this controller's node.id 2"),
    ("process.roles=broker\ncontroller.quorum.voters=1@h:9093\nlisteners=P://:9092\n", 0, "node.id",
     "node.id is required when process.roles is set"),
    ("process.roles=broker\nnode.id=1\ncontroller.quorum.voters=1@h:9093\n", 0, "listeners",
     "listeners is required when process.roles is set"),
])
def test_conf_4_a_kraft_process_lacking_what_its_roles_need_is_refused(tmp_path, text, line, key, says):
    """CONF-4: the requirement is named with the key, and the line of what the file sets wrong
    (or of process.roles, when the key is missing)."""
    path = config_file(tmp_path, text)
    with pytest.raises(BadInput) as raised:
        ServerConfig.read(path)
    assert says in str(raised.value) and raised.value.where["key"] == key
    assert str(raised.value).startswith(f"{path}, line {line}: " if line else f"{path}: ")
    if not line:
        assert "(process.roles = " in str(raised.value)


def test_conf_4_the_models_checks_of_values_and_requirements():
    """CONF-4 and CONF-1 as pure functions: the voters and listeners of seed 000's syntax, and what
    a KRaft process must have; legacy mode (no roles) requires nothing."""
    assert parse_voters("1@a:9093, 2@[::1]:9094") == (Voter(1, "a", 9093), Voter(2, "::1", 9094))
    assert parse_voters("") == ()
    assert parse_listeners("INTERNAL://192.1.1.8:9092, EXTERNAL://10.1.1.5:9093, CONTROLLER://192.1.1.8:9094")[2] == (
        Listener("CONTROLLER", "192.1.1.8", 9094))
    assert kraft_problems((), None, (), None, ()) == []
    assert kraft_problems(("broker",), 1, (Voter(0, "a", 1),), (Listener("P", "", 1),), ()) == []
    assert [k for k, _ in kraft_problems(("controller",), None, (), None, ())] == [
        "node.id", "controller.quorum.voters", "listeners", "controller.listener.names"]


def test_conf_1_deprecated_and_unknown_keys_are_warnings_with_the_nearest_key(tmp_path):
    path = config_file(tmp_path, "node.id=1\nbroker.id.generation.enable=false\ncontrol.plane.listener.name=X\n"
                                 "zookeeper.connect=zk:2181\nbroker.heartbeat.intervals.ms=100\n")
    config, warnings = ServerConfig.read(path)
    assert config.heartbeat_interval_ms == 3000
    assert [(w.line, w.key, w.deprecated, w.nearest) for w in warnings] == [
        (2, "broker.id.generation.enable", True, None), (3, "control.plane.listener.name", True, None),
        (4, "zookeeper.connect", True, None), (5, "broker.heartbeat.intervals.ms", False, "broker.heartbeat.interval.ms")]


def test_check_config_refuses_an_invalid_kraft_setting_too(tmp_path, capsys):
    """check-config reads the file with the same reader: a malformed voter is bad input there too."""
    path = config_file(tmp_path, "controller.quorum.voters=1@localhost\n")
    status, out, err = run(capsys, "check-config", str(path))
    assert status == 2 and out == ""
    assert err == f"kraftspec check-config: {path}, line 1: controller.quorum.voters = '1@localhost' entry '1@localhost' has no port (host:port)\n"


# ---- kraftspec storage ------------------------------------------------------------------------------


def test_tool_2_random_ids_skip_the_zero_uuid_and_a_leading_dash():
    draws = iter([62 << 122, 0, 12345])  # '-' is 62 in URL-safe base64: the first draw's text starts with it
    assert random_uuid_text(62 << 122).startswith("-")
    assert random_id(lambda: next(draws)) == random_uuid_text(12345)


def test_tool_2_random_uuid_prints_a_fresh_22_character_id(capsys):
    seen = set()
    for _ in range(20):
        status, out, _ = run(capsys, "storage", "random-uuid")
        text = out.strip()
        assert status == 0 and len(text) == 22 and parse_uuid_text(text) is not None and not text.startswith("-")
        seen.add(text)
    assert len(seen) == 20


def test_tool_2_format_writes_every_directory_and_the_bootstrap_batch_and_impl_starts_on_it(tmp_path, capsys):
    path = node(tmp_path, "zookeeper.connect=zk:2181\n")
    status, out, err = run(capsys, "storage", "format", "-c", str(path), "-t", CLUSTER)
    assert status == 0, err
    assert f"kraftspec storage format: warning: {path}, line 8: zookeeper.connect is deprecated" in err
    for d in "abm":
        assert (tmp_path / d / "meta.properties").read_text().endswith(f"cluster.id={CLUSTER}\nversion=1\nnode.id=1\n")
        assert f"Formatted {tmp_path / d}: cluster.id {CLUSTER}, node.id 1" in out
    assert "Wrote the bootstrap batch" in out and not (tmp_path / "a" / "log").exists()
    controller = Controller.open(tmp_path / "m", ControllerConfig(cluster_id=CLUSTER, node_id=1))
    assert controller.committed_offset == 1 and controller.state.cluster.features == {"metadata.format": (1, 1)}  # LOG-14
    controller.close()
    status, out, _ = run(capsys, "storage", "info", "-c", str(path))
    assert status == 0
    assert f"Found metadata: version 1, cluster.id {CLUSTER}, node.id 1 (in 3 of 3 directories)" in out
    assert f"  {tmp_path / 'm'}  (metadata log)" in out and "problems" not in out


def test_tool_2_format_writes_nothing_if_any_directory_is_formatted_unless_told_to_skip_them(tmp_path, capsys):
    path = node(tmp_path)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "meta.properties").write_text(f"version=1\ncluster.id={CLUSTER}\nnode.id=1\n")
    before = files_under(tmp_path)
    status, out, err = run(capsys, "storage", "format", "-c", str(path), "-t", CLUSTER)
    assert status == 1 and out == ""
    assert err == (f"kraftspec storage format: nothing written: already formatted: {tmp_path / 'b'} "
                   "(use --ignore-formatted to skip them)\n")
    assert files_under(tmp_path) == before and not (tmp_path / "a").exists()
    status, out, err = run(capsys, "storage", "format", "-c", str(path), "-t", CLUSTER, "-g")
    assert status == 0, err
    assert f"Skipped {tmp_path / 'b'}: already formatted" in out
    assert (tmp_path / "b" / "meta.properties").read_bytes() == before["b/meta.properties"]
    assert (tmp_path / "a" / "meta.properties").exists() and (tmp_path / "m" / "log").is_dir()


def test_tool_2_format_refuses_a_metadata_log_without_meta_properties(tmp_path, capsys):
    """A log no format wrote (its meta.properties lost, say) is not adopted: nothing is written."""
    path = node(tmp_path, "")
    Controller.create(tmp_path / "m", ControllerConfig(cluster_id=CLUSTER, node_id=1)).close()
    (tmp_path / "m" / "meta.properties").unlink()
    before = files_under(tmp_path)
    status, _, err = run(capsys, "storage", "format", "-c", str(path), "-t", CLUSTER)
    assert status == 1 and f"{tmp_path / 'm' / 'log'} holds a metadata log, but {tmp_path / 'm'} has no meta.properties" in err
    assert files_under(tmp_path) == before


def test_conf_1_directories_are_compared_by_path_not_spelling(tmp_path, capsys):
    path = config_file(tmp_path, KRAFT + f"log.dirs={tmp_path / 'a'}/\nmetadata.log.dir={tmp_path / 'a'}\n")
    config, _ = ServerConfig.read(path)
    assert config.directories() == (str(tmp_path / "a"),)
    assert run(capsys, "storage", "format", "-c", str(path), "-t", CLUSTER)[0] == 0
    assert (tmp_path / "a" / "log").is_dir()  # one directory: the metadata log is in it


def test_tool_2_format_under_the_kafka_profile_writes_kafkas_bootstrap_records(tmp_path, capsys):
    path = node(tmp_path)
    assert run(capsys, "storage", "format", "-c", str(path), "-t", CLUSTER, "--profile", "kafka")[0] == 0
    controller = Controller.open(tmp_path / "m", ControllerConfig.for_profile("kafka", cluster_id=CLUSTER, node_id=1))
    assert controller.state.cluster.features == {"metadata.version": (16, 16)}
    controller.close()


@pytest.mark.parametrize("argv, says", [
    (["-t", "not-a-cluster-id"], "argument --cluster-id/-t: 'not-a-cluster-id' is not a cluster id"),
])
def test_tool_2_format_refuses_a_bad_cluster_id(tmp_path, capsys, argv, says):
    with pytest.raises(SystemExit) as exit_:
        main(["storage", "format", "-c", str(node(tmp_path)), *argv])
    assert exit_.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_tool_2_format_refuses_bad_input_naming_it(tmp_path, capsys):
    legacy = config_file(tmp_path, "log.dirs=/nowhere\n", "legacy.properties")
    status, out, err = run(capsys, "storage", "format", "-c", str(legacy), "-t", CLUSTER)
    assert status == 2 and out == ""
    assert err == (f"kraftspec storage format: error: {legacy}: storage format needs a KRaft configuration: "
                   "process.roles and node.id are not set\n")
    bad = config_file(tmp_path, "process.roles=broker,observer\n", "bad.properties")
    status, _, err = run(capsys, "storage", "format", "-c", str(bad), "-t", CLUSTER)
    assert status == 2 and err.startswith(f"kraftspec storage format: error: {bad}, line 1: process.roles = 'broker,observer'")
    status, _, err = run(capsys, "storage", "info", "-c", str(tmp_path / "missing.properties"))
    assert status == 2 and err == f"kraftspec storage info: error: {tmp_path / 'missing.properties'}: no such file\n"
    blocked = node(tmp_path)
    (tmp_path / "m").write_text("a file where the metadata directory should be")
    status, _, err = run(capsys, "storage", "format", "-c", str(blocked), "-t", CLUSTER)
    assert status == 2 and f"{tmp_path / 'm'}: is a file, not a log directory" in err


def test_tool_2_info_reports_missing_and_mismatched_directories(tmp_path, capsys):
    path = node(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "meta.properties").write_text(f"version=1\ncluster.id={CLUSTER}\nnode.id=1\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "meta.properties").write_text("version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=2\n")
    status, out, _ = run(capsys, "storage", "info", "-c", str(path))
    assert status == 1
    assert f"  {tmp_path / 'm'}  (metadata log, missing)" in out
    assert f"{tmp_path / 'b' / 'meta.properties'}: node.id is 2 but the configured node.id is 1" in out
    assert f"the directories name different clusters: cluster.id {CLUSTER} in {tmp_path / 'a'}" in out
    status, out, _ = run(capsys, "storage", "info", "-c", str(path), "--json")
    report = json.loads(out)
    assert status == 1 and report["node_id"] == 1 and report["cluster_ids"] == sorted([CLUSTER, "MkU3OEVBNTcwNTJENDM2Qg"])
    assert [(d["path"], d["exists"], d["metadata_log"]) for d in report["directories"]] == [
        (str(tmp_path / "a"), True, False), (str(tmp_path / "b"), True, False), (str(tmp_path / "m"), False, True)]
    assert report["directories"][0]["meta_properties"] == {"version": 1, "cluster.id": CLUSTER, "node.id": 1}
    assert len(report["problems"]) == 3
    (tmp_path / "a" / "meta.properties").write_text("version=0\nbroker.id=1\n")
    _, out, _ = run(capsys, "storage", "info", "-c", str(path))
    assert f"{tmp_path / 'a' / 'meta.properties'}: version is '0', expected 1" in out


# ---- kraftspec cluster ------------------------------------------------------------------------------


def formatted_with_a_broker(tmp_path: Path, capsys, broker_id: int) -> Path:
    path = node(tmp_path)
    assert run(capsys, "storage", "format", "-c", str(path), "-t", CLUSTER)[0] == 0
    controller = Controller.open(tmp_path / "m", ControllerConfig(cluster_id=CLUSTER, node_id=1))
    feature = BrokerRegistrationRequest.Feature(name="metadata.format", min_supported_version=1, max_supported_version=1)
    controller.handle_request(BrokerRegistrationRequest(broker_id=broker_id, cluster_id=CLUSTER, incarnation_id=UUID(int=5),
                                                        current_metadata_offset=-1, features=(feature,)))
    controller.commit(controller.log_end_offset)
    controller.close()
    return path


def test_tool_3_cluster_id_prints_the_id_of_a_directory_or_a_configuration(tmp_path, capsys):
    path = node(tmp_path)
    assert run(capsys, "storage", "format", "-c", str(path), "-t", CLUSTER)[0] == 0
    assert run(capsys, "cluster", "cluster-id", "--metadata-dir", str(tmp_path / "m")) == (0, CLUSTER + "\n", "")
    assert run(capsys, "cluster", "cluster-id", "--config", str(path)) == (0, CLUSTER + "\n", "")
    status, out, err = run(capsys, "cluster", "cluster-id", "--metadata-dir", str(tmp_path / "nowhere"))
    assert status == 2 and out == ""
    assert err == (f"kraftspec cluster cluster-id: error: {tmp_path / 'nowhere' / 'meta.properties'}: missing: "
                   f"{tmp_path / 'nowhere'} is not a formatted metadata directory\n")


def test_tool_3_unregister_commits_the_unregistration_to_the_directorys_log(tmp_path, capsys):
    path = formatted_with_a_broker(tmp_path, capsys, 4)
    status, out, err = run(capsys, "cluster", "unregister", "--id", "4", "--config", str(path))
    assert status == 0, err
    assert out.startswith("UnregisterBroker(BrokerId=4): NONE\n")
    assert f"committed to {tmp_path / 'm' / 'log'} at offset 2: UnregisterBrokerRecord" in out
    controller = Controller.open(tmp_path / "m", ControllerConfig(cluster_id=CLUSTER, node_id=1))
    assert 4 not in controller.state.cluster.brokers and controller.committed_offset == 3  # UNREG-2, on disk
    controller.close()
    # UNREG-1, DEC-35: an id with no registration is NONE in kip-631
    assert run(capsys, "cluster", "unregister", "--id", "4", "--metadata-dir", str(tmp_path / "m"))[:2] == (
        0, "UnregisterBroker(BrokerId=4): NONE\n")


def test_tool_3_unregister_reports_an_error_code_with_exit_status_1(tmp_path, capsys):
    path = node(tmp_path)
    assert run(capsys, "storage", "format", "-c", str(path), "-t", CLUSTER, "--profile", "kafka")[0] == 0
    status, out, _ = run(capsys, "cluster", "unregister", "-i", "9", "-c", str(path), "--profile", "kafka")
    assert (status, out) == (1, "UnregisterBroker(BrokerId=9): BROKER_ID_NOT_REGISTERED\n")


def test_tool_3_unregister_refuses_a_directory_it_cannot_start_on(tmp_path, capsys):
    path = formatted_with_a_broker(tmp_path, capsys, 4)
    other = config_file(tmp_path, path.read_text().replace("node.id=1", "node.id=2").replace("1@localhost", "2@localhost"),
                        "other.properties")
    before = files_under(tmp_path / "m")
    status, out, err = run(capsys, "cluster", "unregister", "--id", "4", "--config", str(other))
    assert status == 2 and out == ""
    assert err == (f"kraftspec cluster unregister: error: {tmp_path / 'm' / 'meta.properties'}: node.id is 1 but the "
                   "configured node.id is 2\n")
    status, _, err = run(capsys, "cluster", "unregister", "--id", "4", "--config", str(path), "--profile", "kafka")
    assert status == 2 and "does not decode in the kafka profile's record formats" in err
    assert files_under(tmp_path / "m") == before
    with pytest.raises(SystemExit) as exit_:
        main(["cluster", "unregister", "--id", "-3", "--metadata-dir", str(tmp_path / "m")])
    assert exit_.value.code == 2


def test_tool_3_unregister_refuses_a_directory_in_use(tmp_path, capsys):
    path = formatted_with_a_broker(tmp_path, capsys, 4)
    running = Controller.open(tmp_path / "m", ControllerConfig(cluster_id=CLUSTER, node_id=1))
    try:
        status, out, err = run(capsys, "cluster", "unregister", "--id", "4", "--config", str(path))
    finally:
        running.close()
    assert status == 2 and out == "" and err.startswith(f"kraftspec cluster unregister: error: {tmp_path / 'm' / 'log'}")
    reopened = Controller.open(tmp_path / "m", ControllerConfig(cluster_id=CLUSTER, node_id=1))
    assert 4 in reopened.state.cluster.brokers  # nothing was unregistered
    reopened.close()


def test_the_tools_help_is_written_for_users(capsys):
    for argv in (["storage", "--help"], ["storage", "format", "--help"], ["storage", "info", "--help"],
                 ["cluster", "unregister", "--help"], ["cluster", "cluster-id", "--help"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        out = capsys.readouterr().out
        assert exit_.value.code == 0 and "usage: kraftspec" in out
        assert "TOOL-" not in out and "`" not in out and "**" not in out
