"""What ``kraftspec check-config`` reads (cli/properties.py): a properties file or nothing.

Input that is not a properties file (random bytes, UTF-16, control characters, lines that are not
settings) is refused with the file, the line and the offending text, exit status 2, never read as
the defaults; a misspelt timing key is refused naming the key it resembles; other unknown keys are
warned about with the nearest known key; Java's syntax (separators, comments, continuation lines,
escapes, line terminators) is followed; Kafka's own sample configuration reads without a warning.
"""

from __future__ import annotations

import json
import random

import pytest

from kraftspec.cli import main

UNSAFE = "broker.heartbeat.interval.ms=3000\nbroker.session.timeout.ms=4000\n"  # TIME-1 fails: exit 1 if read

# The shape of Kafka's sample config/kraft/server.properties: its keys and values, comments of our own.
KAFKA_SAMPLE = """\
# A combined broker and controller, in KRaft mode.

############################# Server Basics #############################

# its roles
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093

############################# Socket Server Settings #############################

#     listeners = listener_name://host_name:port
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

############################# Log Basics #############################

log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1

############################# Internal Topic Settings  #############################
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1

############################# Log Flush Policy #############################

#log.flush.interval.messages=10000
#log.flush.interval.ms=1000

############################# Log Retention Policy #############################

log.retention.hours=168
#log.retention.bytes=1073741824
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


def check(tmp_path, capsys, data: bytes | str, *options: str, name: str = "server.properties"):
    """Run check-config on a file holding ``data``: (exit status, stdout, stderr, the file's path)."""
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    status = main(["check-config", str(path), *options])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.out, captured.err, str(path)


@pytest.mark.parametrize("seed", range(20))
def test_random_bytes_are_refused_naming_file_line_and_text(tmp_path, capsys, seed):
    data = random.Random(seed).randbytes(2000)
    status, out, err, path = check(tmp_path, capsys, data)
    assert status == 2 and out == ""
    assert err.startswith(f"kraftspec check-config: {path}, line ") and "not a properties file" in err
    assert ", column " in err and " in " in err  # where, and the offending text


def test_random_bytes_as_json_name_the_line_column_and_text(tmp_path, capsys):
    status, out, err, path = check(tmp_path, capsys, b"node.id=1\nbroker.session.timeout.ms=4\x01000\n", "--json")
    assert status == 2
    error = json.loads(out)["error"]
    assert {k: error[k] for k in ("file", "line", "column", "text")} == {
        "file": path, "line": 2, "column": 28, "text": "broker.session.timeout.ms=4\x01000"}
    assert "the control character '\\x01'" in error["message"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-16-le"])
def test_utf_16_with_unsafe_settings_is_refused_not_read_as_the_defaults(tmp_path, capsys, encoding):
    """Read as ISO-8859-1 (as Java would) UTF-16 holds no key at all, so the defaults were checked
    and found safe; it is refused instead, with or without a byte order mark."""
    status, out, err, path = check(tmp_path, capsys, UNSAFE.encode(encoding))
    assert status == 2 and out == ""
    assert "UTF-16" in err and "save it as UTF-8 or ISO-8859-1" in err
    assert err.startswith(f"kraftspec check-config: {path}")


def test_a_utf_8_byte_order_mark_is_refused(tmp_path, capsys):
    """Java would read it as part of the first key: a timing key there would be silently ignored."""
    status, out, err, _ = check(tmp_path, capsys, b"\xef\xbb\xbf" + UNSAFE.encode())
    assert status == 2 and "UTF-8 byte order mark" in err


def test_a_misspelt_timing_key_is_refused_naming_the_key_it_resembles(tmp_path, capsys):
    status, out, err, path = check(tmp_path, capsys, "node.id=1\nbroker.session.timout.ms=1000\n")
    assert status == 2 and out == ""
    assert err == (f"kraftspec check-config: {path}, line 2: broker.session.timout.ms = '1000' is not a setting; it "
                   "looks like a misspelling of broker.session.timeout.ms, which the file does not set, so its "
                   "default (18000 ms) would be checked instead\n")


def test_a_misspelt_timing_key_in_json(tmp_path, capsys):
    status, out, _, path = check(tmp_path, capsys, "broker.heartbeat.intervall.ms=9000\n", "--json")
    assert status == 2
    error = json.loads(out)["error"]
    assert (error["line"], error["key"], error["value"]) == (1, "broker.heartbeat.intervall.ms", "9000")
    assert "misspelling of broker.heartbeat.interval.ms" in error["message"]


def test_a_misspelt_kraftspec_key_names_the_nearest(tmp_path, capsys):
    status, _, err, _ = check(tmp_path, capsys, "kraftspec.clock.drift=1000\n")
    assert status == 2 and "is not a kraftspec setting" in err and "did you mean kraftspec.clock.drift.ppm?" in err


def test_unknown_and_retired_keys_are_warned_about_with_the_nearest_known_key(tmp_path, capsys):
    """A near-miss of a timing key the file does set leaves no default in force: a warning, as
    for any key kraftspec does not know; keys KIP-631 retires are named as such."""
    text = ("broker.session.timeout.ms=18000\nbroker.sesion.timeout.ms=1000\ncontroller.quorum.voter=1@a:9093\n"
            "zookeeper.connect=zk:2181\ncontrol.plane.listener.name=CONTROL\nfrobnicate.level=11\n")
    status, out, err, _ = check(tmp_path, capsys, text)
    assert status == 0 and err == ""
    assert ("warnings:\n"
            "  line 2: broker.sesion.timeout.ms is not a Kafka server setting kraftspec knows (did you mean "
            "broker.session.timeout.ms?)\n"
            "  line 3: controller.quorum.voter is not a Kafka server setting kraftspec knows (did you mean "
            "controller.quorum.voters?)\n"
            "  line 4: zookeeper.connect is retired by KIP-631 (KRaft needs no ZooKeeper)\n"
            "  line 5: control.plane.listener.name is retired by KIP-631") in out
    assert "line 6: frobnicate.level is not a Kafka server setting kraftspec knows (no known key is close to it)" in out
    status, out, _, _ = check(tmp_path, capsys, text, "--json")
    warnings = json.loads(out)["warnings"]
    assert [(w["line"], w["key"], w["nearest"]) for w in warnings] == [
        (2, "broker.sesion.timeout.ms", "broker.session.timeout.ms"), (3, "controller.quorum.voter", "controller.quorum.voters"),
        (4, "zookeeper.connect", None), (5, "control.plane.listener.name", None), (6, "frobnicate.level", None)]


def test_kafkas_sample_configuration_reads_without_a_warning(tmp_path, capsys):
    status, out, err, _ = check(tmp_path, capsys, KAFKA_SAMPLE)
    assert status == 0 and err == ""
    assert "warnings" not in out and "SAFE" in out
    assert "(22 other keys in the file: not about lease timing, ignored)" in out
    status, out, _, _ = check(tmp_path, capsys, KAFKA_SAMPLE, "--json")
    assert json.loads(out)["warnings"] == []


def test_a_file_with_no_kafka_setting_is_refused(tmp_path, capsys):
    status, _, err, path = check(tmp_path, capsys, "colour = blue\nshape: round\n")
    assert status == 2
    assert err == (f"kraftspec check-config: {path}: none of its 2 keys is a Kafka server setting (the first, on line 1, "
                   "is 'colour'): is it a server.properties file?\n")


@pytest.mark.parametrize("text, line, why", [
    ("node.id=1\n[broker]\n", 2, "'[broker]' is not a setting: a key of letters, digits, '.', '_' and '-' was expected"),
    ("node.id=1\n\nhello\n", 3, "'hello' is not a setting: a key without a separator or value"),
    ("= 3000\n", 1, "'= 3000' is not a setting: a value without a key"),
    ('{"node.id": 1}\n', 1, "is not a setting: a key of letters"),
    ("node.id=\\u00G1\n", 1, "a \\u escape without four hex digits in 'node.id=\\\\u00G1'"),
])
def test_a_line_that_is_not_a_setting_is_refused_with_its_line_and_text(tmp_path, capsys, text, line, why):
    status, out, err, path = check(tmp_path, capsys, text)
    assert status == 2 and out == ""
    assert err.startswith(f"kraftspec check-config: {path}, line {line}: ") and why in err


def test_javas_syntax_continuations_escapes_and_line_terminators(tmp_path, capsys):
    """A key continued across lines, a \\u escape, an escaped separator in a value, CRLF and a lone
    CR as line ends, a comment ending in a backslash (which continues nothing), and a UTF-8 comment
    whose bytes hold 0x85, which Java does not take for a line break: every line number stays right."""
    text = ("# \u00c5lesund rack\r\n"                            # line 1: U+00C5 is c3 85 in UTF-8
            "broker.heartbeat\\\r\n    .interval.ms = 2000\r"   # lines 2-3, then a lone CR
            "broker.session.timeout.ms: \\u0039000\n"            # line 4: 9000
            "! a comment \\\n"                                   # line 5: continues nothing
            "kraftspec.broker.self.fence.timeout.ms 15000\n"     # line 6
            "listener.security.protocol.map=CONTROLLER\\:PLAINTEXT\n")
    status, out, err, _ = check(tmp_path, capsys, text, "--json")
    assert status == 0, err
    settings = json.loads(out)["settings"]
    assert settings["broker.heartbeat.interval.ms"] == {"symbol": "h", "value": 2000, "unit": "ms",
                                                        "source": "server.properties line 2"}
    assert settings["broker.session.timeout.ms"]["value"] == 9000
    assert settings["broker.session.timeout.ms"]["source"] == "server.properties line 4"
    assert settings["kraftspec.broker.self.fence.timeout.ms"]["source"] == "server.properties line 6"
    assert json.loads(out)["warnings"] == []


def test_iso_8859_1_text_is_read_as_kafka_reads_it_line_numbers_included(tmp_path, capsys):
    """Not UTF-8, so ISO-8859-1, as Java reads every properties file: accented comments and values are
    text, and byte 0x85 (an ellipsis in Windows-1252) is a character, not a line break."""
    data = "# r\u00e9gion: \u00e9t\u00e9\u2026 to check\nbroker.rack=m\u00e4lar\n".encode("cp1252") + UNSAFE.encode()
    status, out, err, _ = check(tmp_path, capsys, data, "--json")
    assert status == 1 and err == ""
    report = json.loads(out)
    assert report["safe"] is False and report["warnings"] == []
    assert report["settings"]["broker.session.timeout.ms"]["source"] == "server.properties line 4"
