"""Read the metadata a file or directory holds, without changing it: the one place the metadata
shell and ``kraftspec metrics`` get their records from.

Apache Kafka's own metadata is read too, through kraftspec.kafka_log: a ``.checkpoint`` snapshot, or
a ``__cluster_metadata-0`` directory (its newest snapshot that reaches the log, then the log), in
the kafka profile's records. Otherwise, two sources in impl's formats (impl/STORAGE.md):

- a snapshot file (``00000000000000001234.snapshot``): its records;
- a metadata log directory as impl writes it (``log/`` and ``snapshots/`` inside it, or one
  directory holding both): its newest valid snapshot, then the committed batches of the log after
  it, as impl rebuilds its state at start-up (LOG-10, LOG-12). Records after the committed offset
  are read (to know where the log ends) but not replayed.

Nothing is written, locked, moved or cut, so a directory can be read while a controller runs. A
damaged file is an error (:class:`SourceError`) naming the file, the byte and the offset, and what
is wrong there; a damaged part after the committed offset only ends the log early, as it would at
start-up. Each record frame is decoded by the model (model/framing.py) in the record formats and
frame type of a behaviour profile: the one given, or the one whose frame type the first frame
carries (DEC-10).
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kraftspec.impl.batch_format import BadBatch, read_batch
from kraftspec.kafka_log import KAFKA_PROFILE, read_directory, read_file
from kraftspec.impl.log_directory import COMMITTED_OFFSET_FILE, read_state_file
from kraftspec.impl.storage import SNAPSHOT_HEADER, SNAPSHOT_MAGIC, SNAPSHOT_VERSION, StorageError
from kraftspec.model.framing import FrameError, decode_record
from kraftspec.model.records import Record
from kraftspec.model.replay import replay
from kraftspec.model.state import MetadataImage
from kraftspec.spec.profiles import DEFAULT_PROFILE, Profile, profile, profile_names

_SNAPSHOT_NAME = re.compile(r"(\d{20})\.snapshot")
_SEGMENT_NAME = re.compile(r"(\d{20})\.log")


class SourceError(Exception):
    """A file that cannot be read as metadata; the message names the file, the byte and the offset."""


@dataclass
class Loaded:
    """What a source holds: the replayed image and the offsets the metrics of a directory need."""

    image: MetadataImage
    profile: str
    records: int  # records replayed
    committed_offset: int  # a snapshot file's end offset, for a snapshot
    log_end_offset: int  # the end of the valid batches (the snapshot's end offset, for a snapshot)
    snapshot_end_offset: int | None  # the snapshot replayed, None without one
    snapshot: Path | None = None
    warnings: list[str] = field(default_factory=list)  # newer snapshots that were skipped, and why


def load(path: str | os.PathLike[str], profile_name: str | None = None) -> Loaded:
    """Replay the metadata at ``path`` (a snapshot file or a metadata log directory) into an image."""
    source = _Source(Path(path), profile_name)
    image = MetadataImage()
    count = 0
    for record in source.records():
        image = replay(image, record)
        count += 1
    return Loaded(image, source.profile_name or profile_name or DEFAULT_PROFILE, count, source.committed_offset,
                  source.log_end_offset, source.snapshot_end_offset, source.snapshot_path, source.warnings)


def load_image(path: str | os.PathLike[str], profile_name: str | None = None) -> MetadataImage:
    """The metadata image the records at ``path`` replay to."""
    return load(path, profile_name).image


def iter_records(path: str | os.PathLike[str], profile_name: str | None = None) -> Iterator[Record]:
    """The records at ``path`` in replay order: a snapshot's, then the committed log's after it."""
    return _Source(Path(path), profile_name).records()


# ---- reading --------------------------------------------------------------------------------------


class _Source:
    def __init__(self, path: Path, profile_name: str | None) -> None:
        if profile_name is not None and profile_name not in profile_names():
            raise SourceError(f"unknown profile {profile_name!r}; the profiles are {', '.join(profile_names())}")
        self.path = path
        self.profile_name = profile_name
        self.params: Profile | None = profile(profile_name) if profile_name else None
        self.committed_offset = self.log_end_offset = 0
        self.snapshot_end_offset: int | None = None
        self.snapshot_path: Path | None = None
        self.warnings: list[str] = []

    def records(self) -> Iterator[Record]:
        path = self.path
        if _is_kafkas(path):
            yield from self._kafka(path)
        elif path.is_dir():
            yield from self._directory(path)
        elif path.exists():
            end = _snapshot_end_in_name(path)
            for where, frame in _snapshot_frames(path, end):
                yield self._decode(frame, where)
            end = _snapshot_header(path)[0]
            self.snapshot_path = path
            self.committed_offset = self.log_end_offset = self.snapshot_end_offset = end
        else:
            raise SourceError(f"{path}: no such file or directory")

    def _decode(self, frame: bytes, where: str) -> Record:
        if self.params is None:
            self._detect(frame, where)
        try:
            record, _ = decode_record(frame, self.params)
        except FrameError as error:
            raise SourceError(f"{where}, byte {error.offset} of its frame: {error.problem} "
                              f"(read in the {self.profile_name} profile's record formats)") from None
        return record

    def _detect(self, frame: bytes, where: str) -> None:
        """DEC-10: the profile whose frame type the first frame carries (the default profile's first)."""
        frame_type = frame[0] if frame else None
        names = sorted(profile_names(), key=lambda name: name != DEFAULT_PROFILE)
        for name in names:
            if profile(name).frame_type == frame_type:
                self.profile_name, self.params = name, profile(name)
                return
        raise SourceError(f"{where}: frame type {frame_type} is no profile's "
                          f"({', '.join(f'{n}: {profile(n).frame_type}' for n in names)})")

    # ---- Apache Kafka's __cluster_metadata-0, or one of its .checkpoint snapshots ----

    def _kafka(self, path: Path) -> Iterator[Record]:
        """Kafka's records through kafka_log (Kafka's batch format, CRCs checked): a snapshot's, or a
        directory's newest valid snapshot that reaches its log and the log after it. Kafka keeps no
        committed offset in the directory, so the whole log is read; records of types outside the
        broker lifecycle are left out (LOG-16)."""
        if self.profile_name not in (None, KAFKA_PROFILE):
            raise SourceError(f"{path}: Apache Kafka's metadata is written in the kafka profile's records, "
                              f"not the {self.profile_name} profile's")
        self.profile_name, self.params = KAFKA_PROFILE, profile(KAFKA_PROFILE)
        try:
            log = read_directory(path) if path.is_dir() else None
            read = read_file(path) if log is None else None
        except (OSError, ValueError) as error:
            raise SourceError(f"{path}: {error}") from None
        if read is not None:  # a snapshot file
            if read.problems:
                raise SourceError(str(read.problems[0]))
            self.snapshot_path, end = path, read.end_offset
            self.committed_offset = self.log_end_offset = self.snapshot_end_offset = end or 0
            yield from _lifecycle(read.batches, 0)
            return
        assert log is not None
        if log.problems:
            self.warnings += [str(problem) for problem in log.problems]
        batches = list(log.log_batches())
        start = batches[0].base_offset if batches else 0
        end = batches[-1].last_offset + 1 if batches else 0
        if start > 0:
            reaching = [(s, s.end_offset) for s in log.snapshots  # each valid snapshot that reaches the log, with its end
                        if s.end_offset is not None and start <= s.end_offset <= end and not s.problems]
            if not reaching:
                raise SourceError(f"{path}: the log starts at offset {start} and no valid snapshot ends between {start} "
                                  f"and {end}: the state before offset {start} is unknown")
            snapshot, snapshot_end = reaching[-1]
            self.snapshot_path, self.snapshot_end_offset = Path(snapshot.path), snapshot_end
            yield from _lifecycle(snapshot.batches, 0)
            start = snapshot_end
        self.committed_offset = self.log_end_offset = end
        yield from _lifecycle(batches, start)

    # ---- a metadata log directory ----

    def _directory(self, path: Path) -> Iterator[Record]:
        log = path / "log" if (path / "log").is_dir() else path
        snapshots = path / "snapshots" if (path / "snapshots").is_dir() else path
        state_file = log / COMMITTED_OFFSET_FILE
        segments = sorted((int(m.group(1)), p) for p in _listing(log) if (m := _SEGMENT_NAME.fullmatch(p.name)))
        found = sorted((int(m.group(1)), p) for p in _listing(snapshots) if (m := _SNAPSHOT_NAME.fullmatch(p.name)))
        if not segments and not found and not state_file.exists():
            raise SourceError(f"{path}: not a metadata log directory: no log segments, snapshots or {COMMITTED_OFFSET_FILE} "
                              "(expected log/ and snapshots/ inside it, as kraftspec's controller writes them)")
        try:
            state = read_state_file(state_file)
        except StorageError as error:
            raise SourceError(str(error)) from None
        if state is None:
            raise SourceError(f"{state_file}: the committed offset file is missing, so which records were committed "
                              "cannot be told; restore it (impl/STORAGE.md, \"Recovery at open\")")
        committed, _ = state
        self.committed_offset = committed
        snapshot = self._newest_valid_snapshot([(end, p) for end, p in found if end <= committed])
        start = 0
        if snapshot is not None:
            start, snapshot_path, frames = snapshot
            self.snapshot_path, self.snapshot_end_offset = snapshot_path, start
            for where, frame in frames:
                yield self._decode(frame, where)
        yield from self._log(log, segments, start, committed)

    def _newest_valid_snapshot(self, found: list[tuple[int, Path]]):
        """The newest snapshot that reads whole (end offset, path, its frames), the newer ones as warnings."""
        for end, snapshot in reversed(found):
            try:
                frames = list(_snapshot_frames(snapshot, end))
            except SourceError as error:
                self.warnings.append(f"skipped {error}")
                continue
            return end, snapshot, frames
        return None

    def _log(self, log: Path, segments: list[tuple[int, Path]], start: int, committed: int) -> Iterator[Record]:
        """The committed records of the log from ``start``; sets where the valid batches end."""
        expected: int | None = None
        for base, segment in segments:
            if expected is None:
                if base > start and start < committed:
                    raise SourceError(f"{segment}: the log starts at offset {base}, but the records from offset {start} "
                                      f"to {min(base, committed)} are needed ({'after the snapshot' if start else 'no valid snapshot'})")
                expected = base
            elif base != expected:
                if expected < committed:
                    raise SourceError(f"{segment}: starts at offset {base}, but the segment before it ends at offset {expected}")
                break
            expected, ended_early = yield from self._segment(segment, base, start, committed)
            if ended_early:
                break
        self.log_end_offset = expected if expected is not None else start
        if self.log_end_offset < committed:
            raise SourceError(f"{log}: the log ends at offset {self.log_end_offset}, before the committed offset {committed} "
                              f"that {COMMITTED_OFFSET_FILE} records")

    def _segment(self, segment: Path, base: int, start: int, committed: int):
        offset, position = base, 0
        try:
            with open(segment, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                while True:
                    try:
                        batch = read_batch(f, position, size, offset, keep=offset < committed)
                    except BadBatch as bad:
                        if offset < committed:
                            raise SourceError(f"{segment}: byte {position}, the batch at offset {offset}: {bad.reason}") from None
                        return offset, True  # an uncommitted tail: the log ends here, as at start-up
                    if batch is None:
                        return offset, False
                    count, frames, batch_size = batch
                    if frames is not None and offset + count <= committed:
                        for index, frame in enumerate(frames):
                            if offset + index >= start:
                                yield self._decode(frame, f"{segment}: the record at offset {offset + index} (batch at byte {position})")
                    elif frames is not None and offset < committed:
                        raise SourceError(f"{segment}: byte {position}: the batch at offset {offset} holds {count} records, "
                                          f"past the committed offset {committed}: a committed offset inside a batch")
                    offset += count
                    position += batch_size
        except OSError as error:
            raise SourceError(f"{segment}: cannot read it: {error.strerror}") from None


def _listing(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError as error:
        raise SourceError(f"{folder}: cannot list it: {error.strerror}") from None


def _snapshot_end_in_name(path: Path) -> int | None:
    match = _SNAPSHOT_NAME.fullmatch(path.name)
    return int(match.group(1)) if match else None


def _snapshot_frames(path: Path, expected_end: int | None) -> Iterator[tuple[str, bytes]]:
    """Each frame of the snapshot file at ``path`` with where it is, checking what impl's store checks
    (impl/STORAGE.md, "Snapshot files"): the header and its CRC, the version, the end offset against
    the file's name (when it has impl's name), the length, every batch, the record count."""
    with _open(path) as f:
        end_offset, record_count, size = _check_header(path, f, expected_end)
        records, position = 0, SNAPSHOT_HEADER.size
        while True:
            try:
                batch = read_batch(f, position, size, records, keep=True)
            except BadBatch as bad:
                raise SourceError(f"{path}: byte {position}, the batch of records {records} on: {bad.reason}") from None
            if batch is None:
                break
            count, frames, batch_size = batch
            assert frames is not None
            for index, frame in enumerate(frames):
                yield f"{path}: record {records + index} of the snapshot (batch at byte {position})", frame
            records += count
            position += batch_size
        if records != record_count:
            raise SourceError(f"{path}: byte 18: record count {record_count}, but the file holds {records} records")


def _snapshot_header(path: Path) -> tuple[int, int, int]:
    """The end offset, record count and file size a snapshot file's header gives, checked."""
    with _open(path) as f:
        return _check_header(path, f, _snapshot_end_in_name(path))


def _open(path: Path):
    try:
        return open(path, "rb")
    except OSError as error:
        raise SourceError(f"{path}: cannot read it: {error.strerror}") from None


def _check_header(path: Path, f, expected_end: int | None) -> tuple[int, int, int]:
    size = os.fstat(f.fileno()).st_size
    header = f.read(SNAPSHOT_HEADER.size)
    if header[:4] != SNAPSHOT_MAGIC[: len(header)] or not header:
        raise SourceError(f"{path}: byte 0: magic {header[:4]!r}, expected {SNAPSHOT_MAGIC!r} "
                          "(not a snapshot file in kraftspec's format)")
    if len(header) < SNAPSHOT_HEADER.size:
        raise SourceError(f"{path}: byte {len(header)}: truncated: {size} bytes, shorter than the "
                          f"{SNAPSHOT_HEADER.size}-byte header")
    _, crc, version, end_offset, record_count, data_length = SNAPSHOT_HEADER.unpack(header)
    if zlib.crc32(header[8:]) != crc:
        raise SourceError(f"{path}: byte 4: header CRC {crc:#010x}, computed {zlib.crc32(header[8:]):#010x}")
    if version != SNAPSHOT_VERSION:
        raise SourceError(f"{path}: byte 8: format version {version}, this build reads {SNAPSHOT_VERSION}")
    if expected_end is not None and end_offset != expected_end:
        raise SourceError(f"{path}: byte 10: end offset {end_offset}, but the file's name says {expected_end}")
    if size != SNAPSHOT_HEADER.size + data_length:
        raise SourceError(f"{path}: byte 26: data length {data_length}, but the file holds "
                          f"{size - SNAPSHOT_HEADER.size} bytes after the header")
    return end_offset, record_count, size


def _is_kafkas(path: Path) -> bool:
    """Whether ``path`` is Apache Kafka's: a ``.checkpoint`` snapshot, or a log directory holding
    Kafka's segments or checkpoints (kraftspec's own have ``KSB1`` and ``KSS1`` files, impl/STORAGE.md)."""
    if path.is_file():
        return path.name.endswith(".checkpoint")
    if not path.is_dir() or (path / "log").is_dir():
        return False
    return any(p.name.endswith(".checkpoint") for p in path.iterdir()) or (path / "quorum-state").exists()


def _lifecycle(batches, from_offset: int) -> Iterator[Record]:
    """The broker-lifecycle records (the model's classes) of ``batches`` at or after ``from_offset``,
    leaving out control records, batches that failed their CRC and Kafka's other record types."""
    for batch in batches:
        if batch.is_control or not batch.crc_valid:
            continue
        for entry in batch.entries:
            if entry.kind == "metadata" and entry.record is not None and entry.offset >= from_offset:
                yield entry.record
