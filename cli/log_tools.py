"""``kraftspec dump-log`` and ``kraftspec check-log``: a metadata log on disk, printed and checked.

Both read Apache Kafka's ``__cluster_metadata`` files and kraftspec impl's own (kafka_log.py reads
them); dump-log prints batches and records as Kafka's dump tool does, with the record payloads of
TOOL-4, and check-log replays the log into the model and checks it (TOOL-6, model/log_check.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kraftspec.kafka_log import (
    Batch,
    FileRead,
    MetadataLog,
    NotAMetadataLog,
    Problem,
    file_kind,
    read_directory,
    profile_of_frame_type,
    read_file,
)
from kraftspec.model.log_check import CHECKED, LogCheck, check_log, snapshot_differences
from kraftspec.model.replay import replay_all
from kraftspec.model.state import Config, MetadataImage
from kraftspec.model.tools import uuid_text
from kraftspec.spec.profiles import profile, profile_names

EXIT_VALID, EXIT_PROBLEMS, EXIT_BAD_INPUT = 0, 1, 2


# ---- dump-log ----------------------------------------------------------------------------------


def add_parsers(commands) -> None:
    dump = commands.add_parser(
        "dump-log",
        help="print the batches and records of metadata log segments and snapshots",
        description="Print the batches and records of metadata log files: Apache Kafka's __cluster_metadata "
        "segments (*.log) and snapshots (*.checkpoint), and kraftspec's own log segments and snapshots; the "
        "format is told from each file's first bytes. A folder stands for its segments and snapshots. Each batch "
        "is printed on one line (offsets, count, position, size, checksum and whether it matches), then each "
        "record. A corrupt or truncated batch is reported on standard error with its file and byte position, "
        "and the rest of the file is still printed. Exit status: 0 when every file read cleanly, 1 when a "
        "file has a problem, 2 when a file cannot be read or is no metadata log file.",
    )
    dump.add_argument("files", nargs="+", metavar="FILE", help="segment or snapshot files, or folders holding them")
    dump.add_argument("--cluster-metadata-decoder", action="store_true",
                      help='decode each record as a metadata record: payload: {"type":...,"version":...,"data":{...}}')
    dump.add_argument("--skip-record-metadata", action="store_true",
                      help="leave out each record's offset, timestamp and sizes; batch lines are still printed")
    dump.add_argument("--json", action="store_true",
                      help="print one JSON object per line: each batch with its records, and each problem")

    check = commands.add_parser(
        "check-log",
        help="check a metadata log directory: checksums, offsets, and the model's invariants on its replay",
        description="Check a metadata log directory: Apache Kafka's __cluster_metadata-0 folder or kraftspec's own. "
        "Every batch's checksum is checked, offsets must follow each other without a gap, and every record must "
        "decode. The broker-lifecycle records (registrations, fencing, topics, partitions, features) are replayed "
        "into the model's state, from the newest snapshot when the log no longer starts at offset 0, and the "
        "model's invariants are checked after every batch. Other records (configurations, producer ids, "
        "no-ops, ...) are counted, not checked. Problems are reported with their file, byte position, offset, "
        "record and field, then a summary. Exit status: 0 valid, 1 problems found, 2 the directory cannot be "
        "read as a metadata log.",
    )
    check.add_argument("directory", metavar="DIR", help="the metadata log directory")
    check.add_argument("--profile", choices=profile_names(), default=None, metavar="NAME",
                       help=f"the behaviour profile whose invariants and record formats apply ({', '.join(profile_names())}); "
                       "default: the one the log's records are written in (kafka for Kafka's log)")
    check.add_argument("--json", action="store_true", help="print the report as one JSON object")


def _expand(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for text in paths:
        p = Path(text)
        if p.is_dir():
            out += sorted(q for q in p.iterdir() if q.suffix in (".log", ".checkpoint") or (q.suffix == ".snapshot" and _is_ours(q)))
        else:
            out.append(p)
    return out


def _is_ours(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return file_kind(path, f.read(17)) == "kraftspec-snapshot"
    except OSError:
        return False


def _error(line: str) -> None:
    print(f"kraftspec: {line}", file=sys.stderr)


def _record_line(entry, batch: Batch, args) -> str:
    if args.skip_record_metadata:
        return " " + entry.payload_line() if args.cluster_metadata_decoder else ""
    if batch.format == "kraftspec":  # a frame, with neither key nor timestamp
        line = f"| offset: {entry.offset} position: {entry.position} frameSize: {len(entry.value or b'')}"
        return line + (" " + entry.payload_line() if args.cluster_metadata_decoder else "")
    key_size = -1 if entry.key is None else len(entry.key)
    value_size = -1 if entry.value is None else len(entry.value)
    headers = "[" + ",".join(name for name, _ in entry.headers) + "]"
    line = f"| offset: {entry.offset} CreateTime: {entry.timestamp} keySize: {key_size} valueSize: {value_size} headerKeys: {headers}"
    if args.cluster_metadata_decoder:
        line += " " + entry.payload_line()
    return line


def _batch_json(batch: Batch, args) -> dict[str, Any]:
    out = {"kind": "batch", **batch.as_json(), "records": []}
    for entry in batch.entries:
        record: dict[str, Any] = {} if args.skip_record_metadata else {
            "offset": entry.offset, "position": entry.position, "timestamp": entry.timestamp,
            "keySize": -1 if entry.key is None else len(entry.key), "valueSize": -1 if entry.value is None else len(entry.value)}
        if args.cluster_metadata_decoder:
            record["control" if entry.kind == "control" else "payload"] = entry.payload_json()
        out["records"].append(record)
    return out


def dump_log(args) -> int:
    status = EXIT_VALID
    for path in _expand(args.files):
        if not path.is_file():
            _error(f"{path}: no such file")
            status = EXIT_BAD_INPUT
            continue
        read = read_file(path)
        if read.kind == "unknown":
            for problem in read.problems:
                _error(str(problem))
            status = EXIT_BAD_INPUT
            continue
        if not args.json:
            print(f"Dumping {path}")
            if read.is_snapshot:
                print(f"Snapshot end offset: {read.end_offset}")
            elif path.stem.isdigit():
                print(f"Log starting offset: {int(path.stem)}")
        for batch in read.batches:
            if args.json:
                print(json.dumps(_batch_json(batch, args), separators=(",", ":")))
                continue
            print(batch.metadata_line())
            for entry in batch.entries:
                line = _record_line(entry, batch, args)
                if line:
                    print(line)
        for problem in read.problems:
            _error(str(problem))
            if args.json:
                print(json.dumps({"kind": "problem", **problem.as_json()}, separators=(",", ":")))
        if read.problems and status == EXIT_VALID:
            status = EXIT_PROBLEMS
    return status


# ---- check-log ---------------------------------------------------------------------------------


def _contiguity(files: list[FileRead], start: int | None) -> list[Problem]:
    """LOG-4: each batch starts one past the previous batch's last offset (and a file named by its
    first offset starts there)."""
    out = []
    expected = start
    for read in files:
        name = Path(read.path).stem
        if not read.is_snapshot and name.isdigit() and read.batches and read.batches[0].base_offset != int(name):
            out.append(Problem(read.path, 0, f"the file's name says offset {int(name)}, its first batch starts at "
                               f"{read.batches[0].base_offset}", read.batches[0].base_offset, "baseOffset"))
        for batch in read.batches:
            if expected is not None and batch.base_offset != expected:
                what = "a gap" if batch.base_offset > expected else "an overlap"
                out.append(Problem(read.path, batch.position, f"{what}: the batch starts at offset {batch.base_offset}, "
                                   f"the one before it ends at {expected - 1}", batch.base_offset, "baseOffset"))
            expected = batch.last_offset + 1
    return out


def _records(batches: list[Batch], from_offset: int = 0) -> list[list[tuple[int, Any]]]:
    """The metadata records of ``batches`` at or after ``from_offset``, batch by batch, for the
    model: its record where it has one, else the entry (counted by its type name)."""
    out = []
    for batch in batches:
        if batch.is_control or not batch.crc_valid:
            continue
        records = [(e.offset, e.record if e.record is not None else e) for e in batch.entries
                   if e.kind == "metadata" and e.offset >= from_offset]
        if records:
            out.append(records)
    return out


def _infer_profile(log: MetadataLog) -> str:
    if log.format == "kafka":
        return "kafka"
    for batch in log.log_batches():
        for entry in batch.entries:
            if entry.frame_type is not None:
                chosen = profile_of_frame_type(entry.frame_type)  # DEC-10: the frame type names the profile
                if chosen is not None:
                    return chosen.name
    return "kip-631"


def _where(log: MetadataLog, offset: int) -> tuple[str, int]:
    """The file and byte position of the batch holding ``offset``."""
    for segment in log.segments:
        for batch in segment.batches:
            if batch.base_offset <= offset <= batch.last_offset:
                return batch.file, batch.position
    return log.directory, 0


def check_directory(directory: str, profile_name: str | None = None) -> dict[str, Any]:
    """TOOL-6 on a directory: the report as a dict (``problems`` empty when valid). Raises
    :class:`NotAMetadataLog` for a path that is not a metadata log directory, and ValueError for a
    profile that cannot read it."""
    first = read_directory(directory)
    name = profile_name or _infer_profile(first)
    if first.format == "kafka" and name != "kafka":
        raise ValueError(f"{directory}: Apache Kafka's metadata log is written in the kafka profile's records; "
                         f"check it with --profile kafka, not {name}")
    log = first if first.format == "kafka" or profile_name is None else read_directory(directory, profile(name))
    config = Config.for_profile(name)
    problems = list(log.problems)
    problems += _contiguity(log.segments, None)
    for snapshot in log.snapshots:
        problems += _contiguity([snapshot], 0)
    log_batches = list(log.log_batches())
    start = log_batches[0].base_offset if log_batches else 0
    end = log_batches[-1].last_offset + 1 if log_batches else 0

    # the state the log starts from: nothing at offset 0, else the newest snapshot that reaches the log
    base, used = MetadataImage(), None
    if start > 0:
        candidates = [s for s in log.snapshots if s.end_offset is not None and start <= s.end_offset <= end and not s.problems]
        if candidates:
            used = candidates[-1]
            snap = check_log(_records(used.batches), config, snapshot_end=used.end_offset)
            base = snap.image
        else:
            problems.append(Problem(log.directory, 0, f"the log starts at offset {start} and no valid snapshot ends between "
                                    f"{start} and {end}: the state before offset {start} is unknown", start, "logStartOffset"))
    from_offset = used.end_offset if used is not None and used.end_offset is not None else start
    result = check_log(_records(log_batches, from_offset), config, base)
    for violation in result.violations:
        path, position = _where(log, violation.offset)
        problems.append(Problem(path, position, violation.message, violation.offset, violation.invariant))

    # every other snapshot: its own invariants, and LOG-12 against the log's replay where the log reaches it
    snapshots_checked = []
    for snapshot in log.snapshots:
        if snapshot is used or snapshot.problems or snapshot.end_offset is None:
            continue
        if log.format == "kafka" and snapshot.end_offset == 0:
            snapshots_checked.append({"file": snapshot.path, "endOffset": 0, "checked": "bootstrap"})
            continue
        snap = check_log(_records(snapshot.batches), config, snapshot_end=snapshot.end_offset)
        for violation in snap.violations:
            problems.append(Problem(snapshot.path, 0, violation.message, None, violation.invariant))
        compared = "invariants"
        if from_offset <= snapshot.end_offset <= end:
            upto = [r for batch in _records(log_batches, from_offset) for (o, r) in batch if o < snapshot.end_offset]
            for difference in snapshot_differences(snap.image, replay_all(base, upto)):
                problems.append(Problem(snapshot.path, 0, f"LOG-12: unlike the log replayed to offset {snapshot.end_offset}: "
                                        f"{difference}", snapshot.end_offset, "records"))
            compared = "invariants and the log's replay"
        snapshots_checked.append({"file": snapshot.path, "endOffset": snapshot.end_offset, "checked": compared})

    records = sum(len(b.entries) for b in log_batches)
    control: dict[str, int] = {}
    for batch in log_batches:
        for entry in batch.entries:
            if entry.kind == "control":
                control[entry.type_name or "?"] = control.get(entry.type_name or "?", 0) + 1
    return _report(log, name, result, problems, snapshots_checked, used, start, end, records, control, len(log_batches))


def _report(log, name, result: LogCheck, problems, snapshots, used, start, end, records, control, batches) -> dict[str, Any]:
    image = result.image
    return {
        "directory": log.directory,
        "format": log.format,
        "profile": name,
        "segments": [s.path for s in log.segments],
        "snapshots": snapshots,
        "startedFrom": used.path if used is not None else None,
        "logStartOffset": start,
        "logEndOffset": end,
        "batches": batches,
        "records": records,
        "lifecycleRecords": dict(sorted(result.lifecycle.items())),
        "otherRecords": dict(sorted(result.other.items())),
        "controlRecords": dict(sorted(control.items())),
        "invariantsChecked": list(CHECKED),
        "features": {f.name: [f.min_level, f.max_level] for f in sorted(image.features.values(), key=lambda f: f.name)},
        "brokers": [{"id": b.broker_id, "epoch": b.epoch, "incarnationId": uuid_text(b.incarnation_id), "fenced": b.fenced,
                     "inControlledShutdown": b.in_controlled_shutdown} for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)],
        "topics": [{"name": t.name, "topicId": uuid_text(t.topic_id),
                    "partitions": [{"partition": p.partition_id, "replicas": list(p.replicas), "isr": list(p.isr), "leader": p.leader,
                                    "leaderEpoch": p.leader_epoch, "partitionEpoch": p.partition_epoch,
                                    "addingReplicas": list(p.adding_replicas), "removingReplicas": list(p.removing_replicas)}
                                   for p in image.partitions_of(t.topic_id)]}
                   for t in sorted(image.topics.values(), key=lambda t: t.name)],
        "problems": [p.as_json() for p in problems],
        "valid": not problems,
    }


def _print_report(report: dict[str, Any]) -> None:
    fmt = "Apache Kafka's metadata log" if report["format"] == "kafka" else "kraftspec's metadata log"
    print(f"{report['directory']}: {fmt}, checked under the {report['profile']} profile")
    print(f"  segments: {len(report['segments'])}; snapshots: {len(report['snapshots']) + (report['startedFrom'] is not None)}"
          + (f"; replay starts from {report['startedFrom']}" if report["startedFrom"] else ""))
    print(f"  offsets {report['logStartOffset']} to {report['logEndOffset'] - 1}: {report['batches']} batches, {report['records']} records")
    for title, key in (("broker lifecycle (replayed)", "lifecycleRecords"), ("other (counted)", "otherRecords"), ("control", "controlRecords")):
        counts = report[key]
        listed = ", ".join(f"{n} {c}" for n, c in counts.items()) or "none"
        print(f"  {title}: {sum(counts.values())} ({listed})")
    features = ", ".join(f"{n}={lo}" if lo == hi else f"{n}={lo}-{hi}" for n, (lo, hi) in report["features"].items()) or "none"
    print(f"  features: {features}")
    brokers = ", ".join(f"{b['id']} (epoch {b['epoch']}, {'fenced' if b['fenced'] else 'unfenced'})" for b in report["brokers"]) or "none"
    print(f"  brokers: {brokers}")
    topics = ", ".join(f"{t['name']} ({t['topicId']}, {len(t['partitions'])} partitions)" for t in report["topics"]) or "none"
    print(f"  topics: {topics}")
    print(f"  invariants checked after every batch: {' '.join(report['invariantsChecked'])}")
    for s in report["snapshots"]:
        print(f"  snapshot {Path(s['file']).name}: {s['checked']}")
    print(f"  problems: {len(report['problems'])}")
    print("valid" if report["valid"] else "INVALID")


def run_check_log(args) -> int:
    try:
        report = check_directory(args.directory, args.profile)
    except (NotAMetadataLog, ValueError) as e:
        _error(str(e))
        return EXIT_BAD_INPUT
    for problem in report["problems"]:
        _error(str(Problem(problem["file"], problem["position"], problem["message"], problem["offset"], problem["field"])))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        _print_report(report)
    return EXIT_VALID if report["valid"] else EXIT_PROBLEMS


COMMANDS = {"dump-log": dump_log, "check-log": run_check_log}
__all__ = ["add_parsers", "COMMANDS", "check_directory"]
