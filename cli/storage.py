"""``kraftspec storage`` (info, format, random-uuid) and ``kraftspec cluster`` (cluster-id,
unregister): seed 000's kafka-storage and kafka-cluster tools, on real directories (TOOL-1 to
TOOL-3).

What is written and how it is checked is decided by the model (``kraftspec.model.tools``:
meta.properties, the format plan, the UUID text form, the unregister request); the files are
written with impl's durable primitives, and the metadata log is impl's own (the bootstrap batch
is written by opening impl's controller on the newly formatted directory). Exit status: 0 done,
1 refused or a problem found (a formatted directory, an error code), 2 bad input (the message
names the file, line, key and value, or the directory and the key).
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kraftspec.properties import BadInput

if TYPE_CHECKING:
    from kraftspec.server_config import ServerConfig

META = "meta.properties"


class Failed(Exception):
    """A refusal that is not bad input (exit status 1)."""


# ---- the parsers -----------------------------------------------------------------------------------


def _cluster_id(text: str) -> str:
    from kraftspec.model.tools import parse_uuid_text

    if parse_uuid_text(text) is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a cluster id: 22 characters of URL-safe base64 (kraftspec storage random-uuid prints one)")
    return text


def _broker_id(text: str) -> int:
    from kraftspec.model.tools import parse_id

    try:
        return parse_id(text, "broker id")
    except ValueError as reason:
        raise argparse.ArgumentTypeError(f"{text!r} {reason}") from None


def add_parsers(commands) -> None:
    from kraftspec.cli import add_profile_option

    storage = commands.add_parser(
        "storage", help="format and inspect a node's log directories (kafka-storage)",
        description="The storage tool of a KRaft node: format its log directories before it first starts, "
        "list what they hold, or print a new random id for a cluster.",
    )
    tools = storage.add_subparsers(dest="storage_command", metavar="SUBCOMMAND", required=True)
    info = tools.add_parser(
        "info", help="list the log directories of a configuration and what their meta.properties say",
        description="Read the configuration's log directories (log.dirs, or log.dir, and metadata.log.dir) and "
        "print, for each, whether it exists and what its meta.properties holds, then any problems: a "
        "directory or meta.properties that is missing or unreadable, a node.id other than the configuration's, "
        "directories that name different clusters. Nothing is written. Exit status: 0 no problem, 1 problems "
        "found, 2 bad input.",
    )
    info.add_argument("--config", "-c", required=True, metavar="FILE", help="the node's server.properties")
    info.add_argument("--json", action="store_true", help="print the result as JSON on standard output")

    format_ = tools.add_parser(
        "format", help="format the log directories of a configuration",
        description="Write meta.properties (version=1, the cluster id, the configuration's node.id) into every "
        "log directory of the configuration (log.dirs, or log.dir, and metadata.log.dir), creating them if "
        "needed, and the bootstrap batch (the finalized features) into the metadata log of metadata.log.dir. "
        "A node refuses to start on a directory that is not formatted. If any directory is already formatted, "
        "nothing is written and the command fails, unless --ignore-formatted is given: then formatted "
        "directories are left as they are and the others formatted. Exit status: 0 formatted, 1 refused, "
        "2 bad input.",
    )
    format_.add_argument("--config", "-c", required=True, metavar="FILE", help="the node's server.properties")
    format_.add_argument("--cluster-id", "-t", required=True, type=_cluster_id, metavar="ID",
                         help="the cluster's id, 22 characters (kraftspec storage random-uuid prints a new one)")
    format_.add_argument("--ignore-formatted", "-g", action="store_true",
                         help="skip directories that are already formatted instead of failing")
    add_profile_option(format_, "the behaviour profile whose finalized features and log format the metadata log gets")

    tools.add_parser(
        "random-uuid", help="print a new random id",
        description="Print a new random UUID in the text form of cluster ids: 22 characters of URL-safe base64 "
        "without padding. It never starts with '-', so that it cannot be taken for an option.",
    )

    cluster = commands.add_parser(
        "cluster", help="the cluster's id, and unregister a broker (kafka-cluster)",
        description="The cluster tool, working on a controller's metadata directory: print the cluster's id, or "
        "unregister a broker.",
    )
    cluster_tools = cluster.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND", required=True)
    cluster_id = cluster_tools.add_parser(
        "cluster-id", help="print the cluster's id",
        description="Print the cluster id that the metadata directory's meta.properties holds. Exit status: 0, "
        "or 2 when the directory is not formatted or its meta.properties cannot be read.",
    )
    unregister = cluster_tools.add_parser(
        "unregister", help="unregister a broker",
        description="Open the controller on the metadata directory, send it UnregisterBroker for the broker, "
        "commit what it appends to the directory's metadata log, and print the response's error code. The "
        "directory must not be in use by a running controller. Exit status: 0 NONE, 1 another error code, "
        "2 bad input.",
    )
    unregister.add_argument("--id", "-i", required=True, type=_broker_id, metavar="ID", dest="broker_id",
                            help="the id of the broker to unregister")
    for parser in (cluster_id, unregister):
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--metadata-dir", metavar="DIR", help="the controller's metadata directory (metadata.log.dir)")
        where.add_argument("--config", "-c", metavar="FILE", help="the controller's server.properties, to take metadata.log.dir from")
    add_profile_option(unregister, "the behaviour profile the metadata log was formatted under")


# ---- shared ----------------------------------------------------------------------------------------


def _read_config(args, err) -> ServerConfig:
    """The configuration of ``--config``; its warnings (deprecated and unknown keys) go to ``err``."""
    from kraftspec.properties import retired
    from kraftspec.server_config import ServerConfig

    config, warnings = ServerConfig.read(args.config)
    for warning in warnings:
        if warning.deprecated:
            message = (f"line {warning.line}: {warning.key} is deprecated and has no effect in KRaft mode "
                       f"({retired(warning.key)})")
        else:
            message = warning.message
        err.write(f"kraftspec {args.tool}: warning: {args.config}, {message}\n")
    return config


def _meta_text(directory: Path) -> str | None:
    """The text of ``directory``'s meta.properties, or None if it has none; BadInput if it cannot be read."""
    path = directory / META
    try:
        return path.read_bytes().decode("iso-8859-1")
    except (FileNotFoundError, NotADirectoryError):
        if directory.exists() and not directory.is_dir():
            raise BadInput(f"{directory}: is a file, not a log directory", file=str(directory)) from None
        return None
    except OSError as error:
        raise BadInput(f"{path}: cannot read it ({error.strerror})", file=str(path)) from None


def _controller_config(config: ServerConfig | None, profile: str, cluster_id: str, node_id: int):
    """impl's configuration: the profile's, with the file's timings where it sets them."""
    from kraftspec.impl.config import ControllerConfig

    timings = {}
    if config is not None:
        for key, attribute in (("broker.heartbeat.interval.ms", "heartbeat_interval_ms"),
                               ("broker.session.timeout.ms", "session_timeout_ms")):
            if key in config.settings:
                timings[attribute] = getattr(config, attribute)
    return ControllerConfig.for_profile(profile, cluster_id=cluster_id, node_id=node_id, **timings)


# ---- storage ---------------------------------------------------------------------------------------


def storage_info(args, out, err) -> int:
    from kraftspec.model.tools import MetaPropertiesError, parse_meta_properties

    config = _read_config(args, err)
    node_id = config.node_id
    rows, problems = [], []
    clusters: dict[str, list[str]] = {}  # the directories formatted for each cluster id
    for name in config.directories():
        directory = Path(name)
        row: dict = {"path": name, "metadata_log": name == config.metadata_log_dir, "exists": directory.is_dir(),
                     "meta_properties": None}
        rows.append(row)
        if not directory.exists():
            problems.append(f"{name}: the directory does not exist")
            continue
        text = _meta_text(directory)
        if text is None:
            problems.append(f"{directory / META}: missing: the directory is not formatted")
            continue
        try:
            meta = parse_meta_properties(text, str(directory / META))
        except MetaPropertiesError as error:
            problems.append(str(error))
            continue
        row["meta_properties"] = {"version": 1, "cluster.id": meta.cluster_id, "node.id": meta.node_id}
        clusters.setdefault(meta.cluster_id, []).append(name)
        if node_id is not None and meta.node_id != node_id:
            problems.append(f"{directory / META}: node.id is {meta.node_id} but the configured node.id is {node_id}")
    if len(clusters) > 1:
        problems.append("the directories name different clusters: " +
                        "; ".join(f"cluster.id {c} in {', '.join(d)}" for c, d in clusters.items()))
    if args.json:
        out.write(json.dumps({"config": args.config, "node_id": node_id, "directories": rows,
                              "cluster_ids": sorted(clusters), "problems": problems}, indent=2) + "\n")
    else:
        lines = ["Found log directories:"]
        for row in rows:
            notes = [n for n, on in (("metadata log", row["metadata_log"]), ("missing", not row["exists"])) if on]
            lines.append(f"  {row['path']}{'  (' + ', '.join(notes) + ')' if notes else ''}")
        for cluster, directories in clusters.items():
            ids = sorted({r["meta_properties"]["node.id"] for r in rows if r["path"] in directories})
            lines += ["", f"Found metadata: version 1, cluster.id {cluster}, node.id {', '.join(map(str, ids))}"
                      f" (in {len(directories)} of {len(rows)} directories)"]
        if problems:
            lines += ["", "Found problems:"] + [f"  {p}" for p in problems]
        out.write("\n".join(lines) + "\n")
    return 1 if problems else 0


def storage_format(args, out, err) -> int:
    from kraftspec.impl.controller import Controller
    from kraftspec.impl.disk_files import StorageError, prepare_directory, write_atomically
    from kraftspec.model.tools import format_plan

    config = _read_config(args, err)
    node_id = config.require_kraft("storage format")
    directories = config.directories()
    found = {name: _meta_text(Path(name)) for name in directories}
    plan = format_plan(found, args.cluster_id, node_id, args.ignore_formatted)
    if plan.error:
        raise Failed(f"nothing written: {plan.error}")
    metadata = Path(config.metadata_log_dir)
    controller_config = _controller_config(config, args.profile, args.cluster_id, node_id)
    if f"{metadata}/{META}" in plan.writes and any((metadata / "log").glob("*.log")):
        raise Failed(f"nothing written: {metadata / 'log'} holds a metadata log, but {metadata} has no {META}: "
                     "it was not formatted by this tool; move the log away or restore its meta.properties")
    try:
        for target, contents in plan.writes.items():
            prepare_directory(Path(target).parent, "log")
            write_atomically(Path(target), contents.encode("ascii"))
            out.write(f"Formatted {Path(target).parent}: cluster.id {args.cluster_id}, node.id {node_id}\n")
        for skipped in plan.skipped:
            out.write(f"Skipped {skipped}: already formatted\n")
        if f"{metadata}/{META}" in plan.writes:  # LOG-14: opening a formatted, empty log writes the bootstrap batch
            controller = Controller.open(metadata, controller_config)
            controller.close()
            out.write(f"Wrote the bootstrap batch to {metadata / 'log'}: {controller.committed_offset} "
                      f"record{'s' if controller.committed_offset != 1 else ''} (the finalized features), committed\n")
    except StorageError as error:
        raise BadInput(str(error), file=str(error.path)) from None
    return 0


def storage_random_uuid(args, out, err) -> int:
    from kraftspec.model.tools import random_id

    out.write(random_id(lambda: secrets.randbits(128)) + "\n")
    return 0


# ---- cluster ---------------------------------------------------------------------------------------


def _metadata(args, err) -> tuple[Path, ServerConfig | None, int | None]:
    """The metadata directory, the configuration it came from (or None) and its node id."""
    if args.metadata_dir:
        return Path(args.metadata_dir), None, None
    config = _read_config(args, err)
    return Path(config.metadata_log_dir), config, config.node_id


def _meta(directory: Path):
    from kraftspec.model.tools import MetaPropertiesError, parse_meta_properties

    text = _meta_text(directory)
    if text is None:
        raise BadInput(f"{directory / META}: missing: {directory} is not a formatted metadata directory",
                       file=str(directory / META))
    try:
        return parse_meta_properties(text, str(directory / META))
    except MetaPropertiesError as error:
        raise BadInput(str(error), file=str(directory / META)) from None


def cluster_id(args, out, err) -> int:
    directory, _, _ = _metadata(args, err)
    out.write(_meta(directory).cluster_id + "\n")
    return 0


def cluster_unregister(args, out, err) -> int:
    from kraftspec.impl.controller import Controller
    from kraftspec.impl.errors import Error
    from kraftspec.impl.messages import UnregisterBrokerRequest
    from kraftspec.impl.storage import StorageError
    from kraftspec.model.tools import unregister_command

    directory, config, node_id = _metadata(args, err)
    meta = _meta(directory)
    controller_config = _controller_config(config, args.profile, meta.cluster_id, meta.node_id if node_id is None else node_id)
    request = unregister_command(args.broker_id)  # TOOL-3: what the tool sends
    try:
        controller = Controller.open(directory, controller_config)
    except StorageError as error:
        raise BadInput(str(error), file=str(error.path)) from None
    try:
        outcome = controller.handle_request(UnregisterBrokerRequest(broker_id=request.broker_id))
        replies = list(outcome.replies) + list(controller.commit(controller.log_end_offset).replies)
        appended = [record for _, records in outcome.batches for record in records]
    finally:
        controller.close()
    [reply] = [r for r in replies if r.seq == outcome.seq]
    error_name = Error(reply.response.error_code).name
    out.write(f"UnregisterBroker(BrokerId={request.broker_id}): {error_name}\n")
    if appended:
        names = ", ".join(type(r).__name__ for r in appended)
        out.write(f"committed to {directory / 'log'} at offset {controller.committed_offset - len(appended)}: {names}\n")
    return 0 if error_name == "NONE" else 1


_RUN = {
    ("storage", "info"): storage_info,
    ("storage", "format"): storage_format,
    ("storage", "random-uuid"): storage_random_uuid,
    ("cluster", "cluster-id"): cluster_id,
    ("cluster", "unregister"): cluster_unregister,
}


def run(args, out=None, err=None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    sub = args.storage_command if args.command == "storage" else args.cluster_command
    args.tool = f"{args.command} {sub}"
    try:
        return _RUN[args.command, sub](args, out, err)
    except BadInput as error:
        err.write(f"kraftspec {args.command} {sub}: error: {error}\n")
        return 2
    except Failed as error:
        err.write(f"kraftspec {args.command} {sub}: {error}\n")
        return 1
