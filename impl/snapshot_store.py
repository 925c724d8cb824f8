"""Snapshot files (LOG-11, LOG-12): :class:`SnapshotStore` writes them atomically and loads the
newest that validates completely (STORAGE.md: "Snapshot files", "Loading at start-up")."""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from attrs import field, frozen

from .batch_format import BadBatch, encode_batch, frame_bytes, read_batch
from .disk_files import StorageError, fsync_directory, prepare_directory, remove_quietly


SNAPSHOT_MAGIC = b"KSS1"
SNAPSHOT_VERSION = 1
SNAPSHOT_HEADER = struct.Struct(">4sIhqqq")
"""magic, CRC-32 of the rest of the header, format version (int16), end offset, record count,
data length (the bytes of batches after the header); big-endian, 34 bytes."""
SNAPSHOT_SUFFIX = ".snapshot"
TEMP_SUFFIX = ".tmp"
DEFAULT_BATCH_RECORDS = 1000
DEFAULT_BATCH_BYTES = 1024 * 1024
_SNAPSHOT_NAME = re.compile(r"(\d{20})\.snapshot")
_SNAPSHOT_TEMP_NAME = re.compile(r"\d{20}\.snapshot\.tmp")


def snapshot_name(end_offset: int) -> str:
    """A snapshot's file name: its end offset, zero-padded to 20 digits, and ``.snapshot``."""
    return f"{end_offset:020d}{SNAPSHOT_SUFFIX}"


@frozen
class SnapshotFile:
    """A snapshot file in the store, by end offset (LOG-11)."""

    end_offset: int
    path: Path


@frozen
class SnapshotProblem:
    """A snapshot file that could not be used, and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@frozen
class LoadedSnapshot:
    """The newest snapshot that validated completely, and the problems of the newer ones.

    The file was read and checked whole before this was returned. Its frames are read again,
    a batch at a time, by :meth:`batches` or :meth:`frames`, so that loading holds no more than
    one batch beyond what the caller keeps; the second reading is checked too, and raises
    :class:`StorageError` if the file changed in between."""

    path: Path
    end_offset: int
    record_count: int
    problems: tuple[SnapshotProblem, ...] = field(default=())

    def batches(self) -> Iterator[list[bytes]]:
        """The snapshot's frames, one batch (a list) at a time."""
        try:
            for _, frames in _read_snapshot(self.path, self.end_offset, keep=True):
                assert frames is not None
                yield frames
        except BadBatch as bad:
            raise StorageError(self.path, f"the snapshot changed after it was validated: {bad.reason}") from None
        except OSError as error:
            raise StorageError(self.path, f"cannot read the snapshot: {error.strerror}") from error

    def frames(self) -> Iterator[bytes]:
        """The snapshot's frames, in order."""
        for batch in self.batches():
            yield from batch


def _snapshot_header(end_offset: int, record_count: int, data_length: int) -> bytes:
    covered = SNAPSHOT_HEADER.pack(SNAPSHOT_MAGIC, 0, SNAPSHOT_VERSION, end_offset, record_count, data_length)[8:]
    return SNAPSHOT_MAGIC + zlib.crc32(covered).to_bytes(4, "big") + covered


def _read_snapshot(path: Path, expected_end: int, keep: bool) -> Iterator[tuple[int, list[bytes] | None]]:
    """Read a snapshot file, checking everything: the header and its CRC, the format version,
    the end offset against the name, the file's length, every batch, the record count. Yields
    each batch's record count and frames (None unless ``keep``); raises :class:`BadBatch`."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        header = f.read(SNAPSHOT_HEADER.size)
        if header[:4] != SNAPSHOT_MAGIC[: len(header)]:
            raise BadBatch(f"corrupt: bad magic {header[:4]!r}, expected {SNAPSHOT_MAGIC!r}")
        if len(header) < SNAPSHOT_HEADER.size:
            raise BadBatch(f"truncated: {size} bytes, shorter than the {SNAPSHOT_HEADER.size}-byte header")
        _, crc, version, end_offset, record_count, data_length = SNAPSHOT_HEADER.unpack(header)
        if zlib.crc32(header[8:]) != crc:
            raise BadBatch("corrupt: header CRC mismatch")
        if version != SNAPSHOT_VERSION:
            raise BadBatch(f"unsupported format version {version} (this build reads {SNAPSHOT_VERSION})")
        if end_offset != expected_end:
            raise BadBatch(f"corrupt: the header says end offset {end_offset}, the file name {expected_end}")
        if size != SNAPSHOT_HEADER.size + data_length:
            held = size - SNAPSHOT_HEADER.size
            what = "truncated" if held < data_length else "corrupt: trailing bytes"
            raise BadBatch(f"{what}: the header promises {data_length} bytes of batches, the file holds {held}")
        records, position = 0, SNAPSHOT_HEADER.size
        while (batch := read_batch(f, position, size, records, keep)) is not None:
            count, frames, batch_size = batch
            records += count
            position += batch_size
            if records > record_count:
                raise BadBatch(f"corrupt: more records than the {record_count} the header promises")
            yield count, frames
        if records != record_count:
            raise BadBatch(f"truncated: the header promises {record_count} records, the file holds {records}")


class SnapshotStore:
    """Snapshot files in a directory (it may be the log's), one per end offset, written
    atomically: a temporary file, fsynced, renamed into place, the directory fsynced. A crash
    leaves the previous snapshots untouched and at most a temporary file, which the store
    ignores and removes when it is opened."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = prepare_directory(Path(directory), "snapshot")
        self.problems: tuple[SnapshotProblem, ...] = ()
        """The snapshots the last :meth:`load_newest` skipped, newest first, and why."""
        self.removed_temporary_files: tuple[Path, ...] = tuple(
            self.directory / name for name in os.listdir(self.directory) if _SNAPSHOT_TEMP_NAME.fullmatch(name)
        )
        """Leftovers of interrupted writes, removed at open."""
        for path in self.removed_temporary_files:
            remove_quietly(path)

    def write(
        self,
        end_offset: int,
        frames: Iterable[bytes],
        *,
        batch_records: int = DEFAULT_BATCH_RECORDS,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
    ) -> SnapshotFile:
        """Write the snapshot ending at ``end_offset`` from ``frames`` (streamed, in batches of
        at most ``batch_records`` frames or about ``batch_bytes`` bytes), atomically. A snapshot
        with the same end offset is replaced."""
        if end_offset < 0:
            raise ValueError(f"a snapshot's end offset is not negative, got {end_offset}")
        if batch_records < 1 or batch_bytes < 1:
            raise ValueError(f"batch_records and batch_bytes must be positive, got {batch_records} and {batch_bytes}")
        final = self.directory / snapshot_name(end_offset)
        temp = final.with_name(final.name + TEMP_SUFFIX)
        try:
            with open(temp, "wb") as f:
                f.write(bytes(SNAPSHOT_HEADER.size))  # the real header, once the counts are known
                records = data_length = pending_bytes = 0
                pending: list[bytes] = []
                for frame in frames:
                    frame = frame_bytes(frame, records + len(pending))
                    pending.append(frame)
                    pending_bytes += len(frame)
                    if len(pending) >= batch_records or pending_bytes >= batch_bytes:
                        data_length += f.write(encode_batch(records, pending))
                        records += len(pending)
                        pending, pending_bytes = [], 0
                if pending:
                    data_length += f.write(encode_batch(records, pending))
                    records += len(pending)
                f.seek(0)
                f.write(_snapshot_header(end_offset, records, data_length))
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, final)
            fsync_directory(self.directory)
        except OSError as error:
            remove_quietly(temp)
            raise StorageError(final, f"cannot write the snapshot: {error.strerror}") from error
        except BaseException:
            remove_quietly(temp)
            raise
        return SnapshotFile(end_offset, final)

    def load_newest(self) -> LoadedSnapshot | None:
        """The newest snapshot that validates completely, or None. Every newer snapshot that
        failed is listed, by path and reason, in the result's ``problems`` and in
        :attr:`problems` (which is set even when no snapshot is valid)."""
        problems: list[SnapshotProblem] = []
        for snapshot in reversed(self.list()):
            try:
                record_count = sum(count for count, _ in _read_snapshot(snapshot.path, snapshot.end_offset, keep=False))
            except BadBatch as bad:
                problems.append(SnapshotProblem(snapshot.path, bad.reason))
                continue
            except OSError as error:
                problems.append(SnapshotProblem(snapshot.path, f"unreadable: {error.strerror}"))
                continue
            self.problems = tuple(problems)
            return LoadedSnapshot(snapshot.path, snapshot.end_offset, record_count, self.problems)
        self.problems = tuple(problems)
        return None

    def delete_older_than(self, end_offset: int) -> list[Path]:
        """Delete the snapshots that end before ``end_offset``; returns their paths, oldest first."""
        deleted = [s.path for s in self.list() if s.end_offset < end_offset]
        try:
            for path in deleted:
                remove_quietly(path)
            if deleted:
                fsync_directory(self.directory)
        except OSError as error:
            raise StorageError(self.directory, f"cannot delete snapshots before {end_offset}: {error.strerror}") from error
        return deleted

    def list(self) -> list[SnapshotFile]:
        """The snapshot files, oldest first (temporary files are not snapshots)."""
        found = []
        for name in os.listdir(self.directory):
            match = _SNAPSHOT_NAME.fullmatch(name)
            if match:
                found.append(SnapshotFile(int(match.group(1)), self.directory / name))
        return sorted(found, key=lambda s: s.end_offset)
