"""Reading a Kafka server configuration: a ``server.properties`` file, refused when it is not one.

The syntax is ``java.util.Properties``'s, as Kafka reads it (``Properties.load`` on the bytes, so
ISO-8859-1 text): a logical line is ``key=value``, ``key: value`` or ``key value`` (the key ends at
the first unescaped ``=``, ``:`` or white space); lines whose first non-blank character is ``#``
or ``!`` are comments; a line ending in an odd number of backslashes goes on at the next line,
whose leading white space is dropped; ``\\t \\n \\r \\f \\uXXXX`` are escapes and a backslash before
any other character stands for that character.

kraftspec is stricter than Java where Java would silently read something else than was meant:

- the file must be text: UTF-8, or else ISO-8859-1, with no NUL byte or other control character
  (a binary file, or UTF-16 text, which Kafka would read as garbage keys);
- no byte order mark (Java would make it part of the first key);
- every logical line that is not a comment is a setting: a key made of letters, digits, ``.``,
  ``_`` and ``-``, then a separator and its value; a ``\\u`` escape has four hex digits;
- a file none of whose keys is a known setting, or nearly one, is not a server configuration.

``read`` returns the settings with their lines; ``unknown_keys`` names the keys kraftspec does not
know as a Kafka server's (``KNOWN``, ``KNOWN_PREFIXES``), each with the nearest known key, and the
keys KIP-631 retires (``RETIRED``). A full configuration reader can grow from this module.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from attrs import frozen

# ---- the keys --------------------------------------------------------------------------------------

SEED_KEYS = (  # the configuration seed 000 (KIP-631) lists
    "process.roles", "node.id", "controller.listener.names", "listeners", "controller.quorum.voters",
    "initial.broker.registration.timeout.ms", "broker.heartbeat.interval.ms", "broker.session.timeout.ms",
    "metadata.log.dir", "controller.quorum.fetch.timeout.ms", "controller.quorum.election.timeout.ms",
    "controller.quorum.election.backoff.max.ms", "controller.quorum.request.timeout.ms",
    "controller.quorum.retry.backoff.ms", "controller.quorum.retry.backoff.max.ms", "sasl.mechanism.controller.protocol",
)
OTHER_KEYS = (  # other common keys of a Kafka server's configuration (besides those under KNOWN_PREFIXES)
    "advertised.listeners", "inter.broker.listener.name", "listener.security.protocol.map", "early.start.listeners",
    "controller.quorum.bootstrap.servers", "controller.quorum.append.linger.ms", "controller.socket.timeout.ms",
    "broker.id", "broker.rack", "reserved.broker.max.id", "auto.create.topics.enable", "auto.leader.rebalance.enable",
    "default.replication.factor", "min.insync.replicas", "delete.topic.enable", "unclean.leader.election.enable",
    "compression.type", "message.max.bytes", "fetch.max.bytes", "background.threads", "queued.max.requests",
    "connections.max.idle.ms", "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
    "max.connection.creation.rate", "connection.failed.authentication.delay.ms", "security.inter.broker.protocol",
    "super.users", "authorizer.class.name", "allow.everyone.if.no.acl.found", "principal.builder.class",
    "metric.reporters", "create.topic.policy.class.name", "alter.config.policy.class.name",
    "metadata.log.segment.bytes", "metadata.log.segment.ms", "metadata.log.max.record.bytes.between.snapshots",
    "metadata.log.max.snapshot.interval.ms", "metadata.max.retention.bytes", "metadata.max.retention.ms",
    "metadata.max.idle.interval.ms", "request.timeout.ms", "config.providers",
)
KNOWN_PREFIXES = (  # families of Kafka server keys, each too large to list
    "log.", "num.", "socket.", "offsets.", "transaction.state.log.", "transaction.", "group.", "listener.name.",
    "ssl.", "sasl.", "replica.", "leader.imbalance.", "quota.", "client.quota.", "metrics.", "kafka.metrics.",
    "remote.log.", "share.", "delegation.token.", "password.encoder.", "producer.id.", "config.providers.",
)
RETIRED = {  # keys KIP-631 retires (seed 000, "Deprecated configurations")
    "control.plane.listener.name": "a KRaft controller sends no requests to brokers, so it needs no control plane listener",
    "broker.id.generation.enable": "KRaft does not generate broker ids",
    "zookeeper.": "KRaft needs no ZooKeeper",
}
_KEY = re.compile(r"[A-Za-z0-9._-]+")
NEAR_MISS = 0.8  # difflib's ratio from which an unknown key counts as a misspelling of a known one


def is_known(key: str, also: tuple[str, ...] = ()) -> bool:
    """Is ``key`` a Kafka server setting kraftspec knows (or one of ``also``)?"""
    return key in _KNOWN or key in also or key.startswith(KNOWN_PREFIXES)


def retired(key: str) -> str | None:
    """Why KIP-631 retires ``key``, if it does."""
    for name, reason in RETIRED.items():
        if key == name or (name.endswith(".") and key.startswith(name)):
            return reason
    return None


def nearest(key: str, also: tuple[str, ...] = (), cutoff: float = 0.6) -> str | None:
    """The known key (or one of ``also``) closest to ``key``, if any is close enough."""
    close = difflib.get_close_matches(key, [*_KNOWN, *also], n=1, cutoff=cutoff)
    return close[0] if close else None


_KNOWN = frozenset(SEED_KEYS + OTHER_KEYS)


# ---- reading ---------------------------------------------------------------------------------------


class BadInput(Exception):
    """Input that cannot be read or checked; the message names the file, the line, and the key and
    value or the offending text (also in ``where``, for JSON)."""

    def __init__(self, message: str, **where) -> None:
        super().__init__(message)
        self.where = where


@frozen
class Setting:
    """A key's value in the file: the last line that sets it wins, as in Java."""

    value: str
    line: int
    earlier: tuple[int, ...] = ()  # earlier lines that set it too


_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # Java's line terminators (str.splitlines knows more)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # not text (tab, line breaks and form feed are)
_WHITE = " \t\f"
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|u|.|$)", re.DOTALL)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_QUOTED = 60


def _quote(text: str) -> str:
    return repr(text[:_QUOTED]) + (" ..." if len(text) > _QUOTED else "")


def decode(data: bytes, path: Path) -> list[str]:
    """The file's physical lines; BadInput if it is not text."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise BadInput(f"{path}: is UTF-16 text (it starts with a UTF-16 byte order mark); Kafka reads a properties "
                       "file as ISO-8859-1: save it as UTF-8 or ISO-8859-1", file=str(path), line=1)
    if data.startswith(b"\xef\xbb\xbf"):
        raise BadInput(f"{path}: starts with a UTF-8 byte order mark, which Kafka would read as part of the first "
                       "key: save it without one", file=str(path), line=1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")  # what Kafka reads: every byte is a character
    lines = _LINE_BREAK.split(text)
    for number, line in enumerate(lines, 1):
        bad = _CONTROL.search(line)
        if bad:
            what = "a NUL byte" if bad.group() == "\x00" else f"the control character {bad.group()!r}"
            hint = " (UTF-16 text? save it as UTF-8 or ISO-8859-1)" if bad.group() == "\x00" else ""
            raise BadInput(f"{path}, line {number}, column {bad.start() + 1}: {what} in {_quote(line)}: not a "
                           f"properties file{hint}", file=str(path), line=number, column=bad.start() + 1, text=line[:_QUOTED])
    return lines


def logical_lines(lines: list[str]):
    """(line number, logical line) for each line that is not blank or a comment. A line ending in an
    odd number of backslashes goes on at the next line, whose leading white space is dropped."""
    i = 0
    while i < len(lines):
        number, line = i + 1, lines[i].lstrip(_WHITE)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(_WHITE)
            i += 1
        if _continues(line):
            line = line[:-1]
        yield number, line


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def split_property(line: str, path: Path, number: int) -> tuple[str, str]:
    """Key and value of a logical line, by Java's rules: the key ends at the first unescaped '=',
    ':' or white space; then white space, at most one '=' or ':', and white space again. BadInput
    for a line that is not a setting."""
    i = 0
    while i < len(line) and line[i] not in "=:" + _WHITE:
        i += 2 if line[i] == "\\" else 1
    raw_key, rest = line[:i], line[i:]
    separated = bool(rest)
    rest = rest.lstrip(_WHITE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITE)
    key, value = _unescape(raw_key, path, number, line), _unescape(rest, path, number, line)
    if not key or not _KEY.fullmatch(key) or not separated:
        why = ("a value without a key" if not key else
               "a key without a separator or value" if not separated and _KEY.fullmatch(key) else
               f"a key of letters, digits, '.', '_' and '-' was expected, not {key!r}")
        raise BadInput(f"{path}, line {number}: {_quote(line)} is not a setting: {why}; a line is key=value, "
                       "key: value, key value, or a comment starting with # or !", file=str(path), line=number,
                       text=line[:_QUOTED])
    return key, value


def _unescape(text: str, path: Path, number: int, line: str) -> str:
    def one(match: re.Match) -> str:
        c = match.group(1)
        if len(c) == 5:
            return chr(int(c[1:], 16))
        if c == "u":
            raise BadInput(f"{path}, line {number}: a \\u escape without four hex digits in {_quote(line)}",
                           file=str(path), line=number, text=line[:_QUOTED])
        return _ESCAPES.get(c, c)

    return _ESCAPE.sub(one, text) if "\\" in text else text


def read(path: Path, also: tuple[str, ...] = ()) -> dict[str, Setting]:
    """key -> its Setting, from a properties file; BadInput, naming the file and line, for a file that
    cannot be read, is not text, has a line that is not a setting, or has no key that is known, or
    nearly (``also`` counts as known)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file", file=str(path)) from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not a properties file", file=str(path)) from None
    except OSError as error:
        raise BadInput(f"{path}: cannot read it ({error.strerror})", file=str(path)) from None
    found: dict[str, Setting] = {}
    for number, line in logical_lines(decode(data, path)):
        key, value = split_property(line, path, number)
        earlier = found.get(key)
        found[key] = Setting(value, number, (*earlier.earlier, earlier.line) if earlier else ())
    if found and not any(is_known(key, also) or retired(key) or nearest(key, also, NEAR_MISS) for key in found):
        first = min(found, key=lambda key: found[key].line)
        raise BadInput(f"{path}: none of its {len(found)} keys is a Kafka server setting (the first, on line "
                       f"{found[first].line}, is {first!r}): is it a server.properties file?", file=str(path),
                       line=found[first].line, key=first)
    return found


@frozen
class Unknown:
    """A key kraftspec does not know, or one KIP-631 retires."""

    key: str
    line: int
    nearest: str | None
    message: str
    deprecated: bool = False  # a key KIP-631 retires (seed 000, "Deprecated Configurations")


def unknown_keys(found: dict[str, Setting], also: tuple[str, ...] = ()) -> list[Unknown]:
    """The keys of ``found`` that are not known (``also`` counts as known), in the file's order, each
    with the nearest known key; and the retired ones, with the reason."""
    out = []
    for key, setting in sorted(found.items(), key=lambda item: item[1].line):
        reason = retired(key)
        if reason:
            out.append(Unknown(key, setting.line, None, f"line {setting.line}: {key} is retired by KIP-631 ({reason})", True))
        elif not is_known(key, also):
            close = nearest(key, also)
            hint = f"did you mean {close}?" if close else "no known key is close to it"
            out.append(Unknown(key, setting.line, close,
                               f"line {setting.line}: {key} is not a Kafka server setting kraftspec knows ({hint})"))
    return out
