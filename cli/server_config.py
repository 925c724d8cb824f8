"""A Kafka ``server.properties``, read and checked: :class:`ServerConfig` (CONF-1, CONF-2, CONF-4).

:func:`ServerConfig.read` reads the file with :mod:`kraftspec.properties` (Java's syntax, and
what is not a properties file refused), then types every setting seed 000 lists, with its
default when the file leaves it out, and refuses what cannot work, naming the file, the line, the
key and the value: an unknown role, a malformed voter or listener, a node id that is not a
non-negative 32-bit integer, a negative timeout, a session timeout not longer than the heartbeat
interval (CONF-2), and a KRaft process that lacks what its roles need (CONF-4). Keys that are not
settings kraftspec knows are returned as warnings with the nearest known key, and the keys KIP-631
deprecates as warnings saying so. The values' syntax and the requirements are the model's
(``kraftspec.model.tools``); this module adds the file and the lines.
"""

from __future__ import annotations

import re
from pathlib import Path

from attrs import frozen

from kraftspec.model.tools import (
    DEFAULT_LOG_DIR,
    DEFAULT_TIMEOUTS_MS,
    MAY_BE_ZERO,
    Listener,
    Voter,
    kraft_problems,
    parse_id,
    parse_listeners,
    parse_names,
    parse_process_roles,
    parse_voters,
)
from kraftspec.properties import BadInput, Setting, Unknown, read as read_properties, unknown_keys

MAX_INT = 2**31 - 1  # Kafka's int settings
_INTEGER = re.compile(r"[+-]?[0-9]+")
_ATTRIBUTES = {  # each timing key's attribute of ServerConfig
    "initial.broker.registration.timeout.ms": "initial_broker_registration_timeout_ms",
    "broker.heartbeat.interval.ms": "heartbeat_interval_ms",
    "broker.session.timeout.ms": "session_timeout_ms",
    "controller.quorum.fetch.timeout.ms": "quorum_fetch_timeout_ms",
    "controller.quorum.election.timeout.ms": "quorum_election_timeout_ms",
    "controller.quorum.election.backoff.max.ms": "quorum_election_backoff_max_ms",
    "controller.quorum.request.timeout.ms": "quorum_request_timeout_ms",
    "controller.quorum.retry.backoff.ms": "quorum_retry_backoff_ms",
    "controller.quorum.retry.backoff.max.ms": "quorum_retry_backoff_max_ms",
}


def parse_int(text: str, minimum: int, maximum: int = MAX_INT, unit: str = "ms") -> int:
    """An integer in [minimum, maximum]; else ValueError saying what is wrong with ``text``."""
    value = text.strip()
    if not _INTEGER.fullmatch(value):
        raise ValueError(f"is not an integer ({unit})")
    number = int(value)
    if number < 0:
        raise ValueError(f"is negative; it must be at least {minimum}")
    if number < minimum:
        raise ValueError("must be positive")
    if number > maximum:
        raise ValueError(f"is too large; it must be at most {maximum}")
    return number


@frozen
class ServerConfig:
    """The settings of one server.properties, typed, with their defaults (CONF-1).

    ``process_roles`` is empty in legacy mode (no ``process.roles``), where the KRaft settings
    are not required; ``node_id`` is None when the file does not set it. ``settings`` holds every
    key of the file with its value and line, for callers that read keys of their own.
    """

    path: Path
    settings: dict[str, Setting]
    process_roles: tuple[str, ...] = ()
    node_id: int | None = None
    controller_listener_names: tuple[str, ...] = ()
    listeners: tuple[Listener, ...] | None = None
    voters: tuple[Voter, ...] = ()
    sasl_mechanism_controller_protocol: str = "GSSAPI"
    log_dirs: tuple[str, ...] = (DEFAULT_LOG_DIR,)
    metadata_log_dir: str = DEFAULT_LOG_DIR
    initial_broker_registration_timeout_ms: int = DEFAULT_TIMEOUTS_MS["initial.broker.registration.timeout.ms"]
    heartbeat_interval_ms: int = DEFAULT_TIMEOUTS_MS["broker.heartbeat.interval.ms"]
    session_timeout_ms: int = DEFAULT_TIMEOUTS_MS["broker.session.timeout.ms"]
    quorum_fetch_timeout_ms: int = DEFAULT_TIMEOUTS_MS["controller.quorum.fetch.timeout.ms"]
    quorum_election_timeout_ms: int = DEFAULT_TIMEOUTS_MS["controller.quorum.election.timeout.ms"]
    quorum_election_backoff_max_ms: int = DEFAULT_TIMEOUTS_MS["controller.quorum.election.backoff.max.ms"]
    quorum_request_timeout_ms: int = DEFAULT_TIMEOUTS_MS["controller.quorum.request.timeout.ms"]
    quorum_retry_backoff_ms: int = DEFAULT_TIMEOUTS_MS["controller.quorum.retry.backoff.ms"]
    quorum_retry_backoff_max_ms: int = DEFAULT_TIMEOUTS_MS["controller.quorum.retry.backoff.max.ms"]

    @classmethod
    def read(cls, path: Path | str, *, also: tuple[str, ...] = (), timings_together: bool = True) -> tuple["ServerConfig", list[Unknown]]:
        """The file's configuration and its warnings (unknown keys with the nearest known one,
        deprecated keys); BadInput naming the file, line, key and value for anything invalid.
        ``also`` counts as known keys (a caller's own). With ``timings_together=False`` the
        session timeout may be no longer than the heartbeat interval (CONF-2 is left to the
        caller, as check-config reports it as a failed check)."""
        path = Path(path)
        found = read_properties(path, also=also)
        values: dict[str, object] = {"path": path, "settings": found}

        def bad(key: str, reason: str) -> BadInput:
            setting = found[key]
            return BadInput(f"{path}, line {setting.line}: {key} = {setting.value!r} {reason}", file=str(path),
                            line=setting.line, key=key, value=setting.value)

        def typed(key: str, parse):
            if key not in found:
                return None
            try:
                return parse(found[key].value)
            except ValueError as reason:
                raise bad(key, str(reason)) from None

        roles = typed("process.roles", parse_process_roles)
        if roles is not None:
            values["process_roles"] = roles
        values["node_id"] = typed("node.id", parse_id)
        if "broker.id" in found:  # an older name of node.id: if both are set they must agree
            broker_id = typed("broker.id", parse_id)
            if values["node_id"] is not None and broker_id != values["node_id"]:
                raise bad("broker.id", f"differs from node.id = {values['node_id']} (line {found['node.id'].line}); "
                                       "node.id replaces broker.id: remove it")
        for key, attribute, parse in (
            ("controller.listener.names", "controller_listener_names", parse_names),
            ("listeners", "listeners", parse_listeners),
            ("controller.quorum.voters", "voters", parse_voters),
        ):
            parsed = typed(key, parse)
            if parsed is not None:
                values[attribute] = parsed
        if "sasl.mechanism.controller.protocol" in found:
            values["sasl_mechanism_controller_protocol"] = typed("sasl.mechanism.controller.protocol", _word)
        for key, attribute in _ATTRIBUTES.items():
            number = typed(key, lambda text, key=key: parse_int(text, 0 if key in MAY_BE_ZERO else 1))
            if number is not None:
                values[attribute] = number
        log_dirs = typed("log.dirs", _directories) or ((typed("log.dir", _directory),) if "log.dir" in found else None)
        if log_dirs:
            values["log_dirs"] = log_dirs
        metadata = typed("metadata.log.dir", _directory)
        values["metadata_log_dir"] = metadata or (log_dirs or (DEFAULT_LOG_DIR,))[0]
        config = cls(**values)  # type: ignore[arg-type]
        config._check(found, bad, timings_together)
        warnings = unknown_keys(found, also=also)
        return config, warnings

    def _check(self, found: dict[str, Setting], bad, timings_together: bool) -> None:
        if timings_together:  # CONF-2, as the model's configuration decides it
            from kraftspec.model.state import Config, ConfigError

            try:
                Config(heartbeat_interval_ms=self.heartbeat_interval_ms, session_timeout_ms=self.session_timeout_ms)
            except ConfigError as error:
                key = "broker.session.timeout.ms" if "broker.session.timeout.ms" in found else "broker.heartbeat.interval.ms"
                if key in found:
                    raise bad(key, f"breaks CONF-2: {error}") from None
                raise BadInput(f"{self.path}: {error} (CONF-2)", file=str(self.path)) from None
        for key, why in kraft_problems(self.process_roles, self.node_id, self.voters, self.listeners,
                                       self.controller_listener_names):
            if key in found:
                raise bad(key, why)
            roles = found["process.roles"]
            raise BadInput(f"{self.path}: {key} {why} (process.roles = {roles.value!r}, line {roles.line})",
                           file=str(self.path), line=roles.line, key=key)

    # ---- what the tools ask ------------------------------------------------------------------

    @property
    def kraft(self) -> bool:
        """Is this a KRaft process (``process.roles`` set)?"""
        return bool(self.process_roles)

    def directories(self) -> tuple[str, ...]:
        """Every log directory, ``log.dirs`` first, then ``metadata.log.dir`` if it is another."""
        return tuple(dict.fromkeys((*self.log_dirs, self.metadata_log_dir)))

    def require_kraft(self, tool: str) -> int:
        """The node id of a KRaft process; BadInput naming the file when it is not one."""
        if not self.kraft or self.node_id is None:
            raise BadInput(f"{self.path}: {tool} needs a KRaft configuration: process.roles and node.id are not set",
                           file=str(self.path), key="process.roles")
        return self.node_id


def _word(text: str) -> str:
    value = text.strip()
    if not value or any(c.isspace() for c in value):
        raise ValueError("is not a SASL mechanism name")
    return value


def _directory(text: str) -> str:
    value = text.strip()
    if not value:
        raise ValueError("is empty: it must be a directory path")
    return str(Path(value))  # one spelling per directory: /data/ and /data are one


def _directories(text: str) -> tuple[str, ...]:
    entries = [e.strip() for e in text.split(",")]
    if not any(entries):
        raise ValueError("is empty: it must list directory paths, comma-separated")
    if not all(entries):
        raise ValueError("has an empty entry (two commas in a row, or one at an end)")
    return tuple(dict.fromkeys(str(Path(e)) for e in entries))
