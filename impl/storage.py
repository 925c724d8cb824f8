"""The controller's storage: the metadata log on disk and the snapshot files, with crash
recovery (LOG-4, LOG-6, LOG-10, LOG-11, LOG-12).

This layer stores *frames*: opaque byte strings, one per record, that the codec writes and
reads (LOG-2). It never looks inside a frame. Four parts, each a section below:

- the **batch format**, shared by log segments and snapshot files: a header with a CRC over
  everything after it, then each frame preceded by its length;
- :class:`DiskLog`, the metadata log: append-only segments in a directory, the committed offset
  file, and recovery at open that cuts a torn or corrupt tail and never hides a lost committed
  batch;
- :class:`SnapshotStore`, snapshot files written atomically and loaded newest valid first;
- :func:`plan_rebuild`, the start-up path of LOG-10: the newest valid snapshot, then the
  committed batches after it.

``STORAGE.md`` beside this file describes the formats and the fsync policy for operators and
implementers. Expected conditions (a corrupt file, a directory in use or missing permissions)
raise :class:`StorageError` naming the path and the problem; a caller's mistake (an offset that
is not the log end, a committed offset that would go backwards) raises ``ValueError``.
"""

from __future__ import annotations

import bisect
import fcntl
import os
import re
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple, NoReturn

from attrs import field, frozen

# ---- errors ------------------------------------------------------------------------


class StorageError(Exception):
    """An expected storage condition, with the path it concerns: ``"<path>: <problem>"``."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = Path(path)
        self.problem = problem


class CorruptBatchError(StorageError):
    """A batch that failed validation while being read after the log was opened: the disk
    changed under the log (recovery at open had found it valid)."""

    def __init__(self, path: Path, position: int, reason: str) -> None:
        super().__init__(path, f"byte {position}: {reason}")
        self.position = position
        self.reason = reason


class CommittedDataLoss(StorageError):
    """Recovery would leave the log ending before records that were (or, with the committed
    offset unknown, may have been) committed: the disk corrupted or lost synced data, or a file
    was removed. Raised at open, before anything on disk is changed, unless the log is opened
    with ``quarantine_and_continue``. ``committed_offset`` is None when it is unknown."""

    def __init__(self, path: Path, committed_offset: int | None, end_offset: int, cut: RecoveryReport | None, why: str) -> None:
        if committed_offset is None:
            what = (
                f"POSSIBLE DATA LOSS: the committed offset is unknown ({COMMITTED_OFFSET_FILE} is missing) and the "
                f"log can only be recovered up to offset {end_offset}, because {why}; the records after it may "
                "have been committed."
            )
        else:
            what = (
                f"DATA LOSS: the committed offset is {committed_offset} but the log can only be recovered up to "
                f"offset {end_offset}, because {why}; committed records {end_offset} to {committed_offset - 1} "
                "cannot be recovered from this directory."
            )
        super().__init__(
            path,
            f"{what} Nothing was changed on disk. Restore the directory from another controller, or open it "
            f"with quarantine_and_continue=True to move the unrecoverable files and bytes into "
            f"{Path(path) / QUARANTINE_DIR}/ and continue without those records.",
        )
        self.committed_offset = committed_offset
        self.end_offset = end_offset
        self.cut = cut


class CommittedOffsetUnknown(StorageError):
    """The committed offset file is missing from a log that holds records: which of them were
    committed is unknown. Raised at open, before anything on disk is changed, unless the log is
    opened with ``committed_offset_missing="keep"``."""


class SegmentsOverlap(StorageError):
    """Two segment files hold the same offsets: one of them does not belong to the log. Raised at
    open, before anything on disk is changed, unless the log is opened with
    ``quarantine_and_continue``."""


# ---- the batch format (log segments and snapshot files) -----------------------------

BATCH_MAGIC = b"KSB1"
BATCH_HEADER = struct.Struct(">4sIqii")
"""magic, CRC-32 of every byte after the CRC field (the rest of the header and the payload),
base offset, record count, payload length; big-endian, 24 bytes."""
MAX_INT32 = 2**31 - 1
MAX_VARINT_BYTES = 5  # enough for any length up to MAX_INT32

_SHORT_VARINTS = [bytes([n]) for n in range(0x80)]


class LogBatch(NamedTuple):
    """One batch as read back: the offset of its first record and its frames, in order."""

    base_offset: int
    frames: list[bytes]


class _BadBatch(Exception):
    """Internal: the bytes at a position are not a valid batch; ``reason`` says why, starting
    with ``torn`` (the file ends inside it) or ``corrupt`` (its bytes are wrong)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def encode_varint(value: int) -> bytes:
    """An unsigned LEB128 varint: seven bits per byte, low group first, high bit on all but the last."""
    if value < 0:
        raise ValueError(f"a varint is unsigned, got {value}")
    if value < 0x80:
        return _SHORT_VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _frame_bytes(frame: object, index: int) -> bytes:
    """``frame`` as bytes; a frame must be bytes-like (the codec's output)."""
    if type(frame) is bytes:
        return frame
    if isinstance(frame, (bytes, bytearray, memoryview)):
        return bytes(frame)
    raise TypeError(f"frame {index} is a {type(frame).__name__}, not bytes")


def encode_batch(base_offset: int, frames: list[bytes]) -> bytes:
    """The bytes of one batch: header, then each frame as its length (varint) and its bytes."""
    if not 0 <= base_offset < 2**63:
        raise ValueError(f"base offset {base_offset} is not a non-negative int64")
    if not 0 < len(frames) <= MAX_INT32:
        raise ValueError(f"a batch holds 1 to {MAX_INT32} records, got {len(frames)}")
    parts: list[bytes] = []
    for frame in frames:
        size = len(frame)
        parts.append(_SHORT_VARINTS[size] if size < 0x80 else encode_varint(size))
        parts.append(frame)
    payload = b"".join(parts)
    if len(payload) > MAX_INT32:
        raise ValueError(f"a batch payload is at most {MAX_INT32} bytes, got {len(payload)}")
    covered = BATCH_HEADER.pack(BATCH_MAGIC, 0, base_offset, len(frames), len(payload))[8:]
    crc = zlib.crc32(payload, zlib.crc32(covered))
    return BATCH_MAGIC + crc.to_bytes(4, "big") + covered + payload


def _decode_varint(data: bytes, position: int) -> tuple[int, int]:
    """The varint at ``position`` in ``data`` and the position after it."""
    value = shift = 0
    for index in range(position, min(position + MAX_VARINT_BYTES, len(data))):
        byte = data[index]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, index + 1
        shift += 7
    if position + MAX_VARINT_BYTES <= len(data):
        raise _BadBatch(f"corrupt: a record length longer than {MAX_VARINT_BYTES} bytes")
    raise _BadBatch("corrupt: a record length runs past the end of the payload")


def _split_records(payload: bytes, count: int, keep: bool) -> list[bytes] | None:
    """Walk the ``count`` length-prefixed frames that must fill ``payload`` exactly; return them
    if ``keep``."""
    frames: list[bytes] | None = [] if keep else None
    position, end = 0, len(payload)
    for index in range(count):
        if position >= end:
            raise _BadBatch(f"corrupt: the payload ends after {index} of {count} records")
        size = payload[position]
        if size < 0x80:
            position += 1
        else:
            size, position = _decode_varint(payload, position)
        stop = position + size
        if stop > end:
            raise _BadBatch(f"corrupt: record {index} runs {stop - end} bytes past the payload")
        if frames is not None:
            frames.append(payload[position:stop])
        position = stop
    if position != end:
        raise _BadBatch(f"corrupt: {end - position} bytes follow the last of the {count} records")
    return frames


def _read_batch(
    f: BinaryIO, position: int, limit: int, expected_base: int, keep: bool
) -> tuple[int, list[bytes] | None, int] | None:
    """Read and validate the batch at ``position`` (where ``f`` stands), which must end by byte
    ``limit``: ``(record count, frames if keep, size in bytes)``, or None when ``position`` is
    ``limit`` (a clean end). Raises :class:`_BadBatch`."""
    remaining = limit - position
    if remaining == 0:
        return None
    if remaining < BATCH_HEADER.size:
        raise _BadBatch(f"torn: {remaining} bytes remain, fewer than a {BATCH_HEADER.size}-byte batch header")
    header = f.read(BATCH_HEADER.size)
    if len(header) < BATCH_HEADER.size:
        raise _BadBatch(f"torn: the file ends {len(header)} bytes into a batch header")
    magic, crc, base_offset, count, length = BATCH_HEADER.unpack(header)
    if magic != BATCH_MAGIC:
        raise _BadBatch(f"corrupt: bad magic {magic!r}, expected {BATCH_MAGIC!r}")
    if length < 0 or length > remaining - BATCH_HEADER.size:
        if length >= 0:
            available = remaining - BATCH_HEADER.size
            raise _BadBatch(f"torn: the batch claims a {length}-byte payload but {available} bytes remain")
        raise _BadBatch(f"corrupt: negative payload length {length}")
    payload = f.read(length)
    if len(payload) < length:
        raise _BadBatch(f"torn: the file ends {len(payload)} bytes into a {length}-byte payload")
    actual = zlib.crc32(payload, zlib.crc32(header[8:]))
    if actual != crc:
        raise _BadBatch(f"corrupt: CRC mismatch (stored {crc:#010x}, computed {actual:#010x})")
    if base_offset != expected_base:
        raise _BadBatch(f"corrupt: base offset {base_offset}, expected {expected_base}")
    if count < 1:
        raise _BadBatch(f"corrupt: record count {count}")
    frames = _split_records(payload, count, keep)
    return count, frames, BATCH_HEADER.size + length


# ---- files and directories -----------------------------------------------------------


def _prepare_directory(directory: Path, what: str) -> Path:
    """``directory``, created if missing (durably: the parent of every directory created is
    fsynced); a clear error if it cannot be or is not writable."""
    created = [d for d in (directory, *directory.parents) if not d.exists()]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for made in reversed(created):
            _fsync_directory(made.parent)
    except FileExistsError:
        raise StorageError(directory, f"the {what} directory is a file, not a directory") from None
    except NotADirectoryError:
        raise StorageError(directory, f"a part of the {what} directory's path is a file, not a directory") from None
    except OSError as error:
        raise StorageError(directory, f"cannot create the {what} directory: {error.strerror}") from error
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StorageError(directory, f"the {what} directory is not writable")
    return directory


def _fsync_directory(directory: Path) -> None:
    """Make the directory's entries (created, renamed, deleted files) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_new_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (created or emptied) and fsync it; the caller fsyncs the directory."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content: write a
    temporary file, fsync it, rename it over ``path``, fsync the directory."""
    temp = path.with_name(path.name + ".tmp")
    try:
        _write_new_file(temp, data)
        os.replace(temp, path)
        _fsync_directory(path.parent)
    except OSError as error:
        _remove_quietly(temp)
        raise StorageError(path, f"cannot write: {error.strerror}") from error


def _remove_quietly(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


# ---- the metadata log ----------------------------------------------------------------

SEGMENT_SUFFIX = ".log"
COMMITTED_OFFSET_FILE = "committed-offset"
LOCK_FILE = ".lock"
QUARANTINE_DIR = "quarantine"
QUARANTINE_NOTE = "REASON.txt"
DEFAULT_SEGMENT_BYTES = 8 * 1024 * 1024
_SEGMENT_NAME = re.compile(r"(\d{20})\.log")
COMMITTED_MAGIC = b"KSC2"
COMMITTED_FORMAT = struct.Struct(">4sIqq")
"""The committed offset file: magic, CRC-32 of the next 16 bytes, the committed offset and the
log start offset (int64 each)."""
MISSING_CHOICES = ("refuse", "keep")


def segment_name(base_offset: int) -> str:
    """A segment's file name: its base offset, zero-padded to 20 digits, and ``.log``."""
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


@frozen
class RecoveryReport:
    """What recovery at open cut: the first dropped batch's segment, offset and byte position,
    why it was invalid, how many bytes were dropped from the log in all, and the later segment
    files dropped with it (deleted when they held only uncommitted records, else moved into
    quarantine: see :attr:`DiskLog.quarantined`)."""

    path: Path
    offset: int
    position: int
    reason: str
    bytes_dropped: int
    dropped_segments: tuple[Path, ...] = ()

    def __str__(self) -> str:
        later = f" and {len(self.dropped_segments)} later segment(s)" if self.dropped_segments else ""
        return (
            f"{self.path}: cut at byte {self.position} (offset {self.offset}): {self.reason}; "
            f"dropped {self.bytes_dropped} bytes{later}"
        )


@frozen
class QuarantineReport:
    """Files and bytes the log set aside instead of deleting them: the quarantine folder, what it
    now holds (each a segment file moved there, or ``<segment>.from-byte-<P>``: the bytes cut
    from a segment at byte P), and why."""

    folder: Path
    files: tuple[Path, ...]
    reason: str

    def __str__(self) -> str:
        names = ", ".join(p.name for p in self.files)
        return f"moved into {self.folder}: {names} ({self.reason})"


class _Segment:
    """The log's bookkeeping for one segment file (mutable, private to DiskLog)."""

    __slots__ = ("base_offset", "end_offset", "path", "size")

    def __init__(self, base_offset: int, path: Path) -> None:
        self.base_offset = base_offset
        self.end_offset = base_offset  # the offset after its last batch
        self.path = path
        self.size = 0  # the bytes of its valid batches


@frozen
class _Cut:
    """Where to cut the log: segment ``index`` at byte ``position`` (or the whole segment), which
    is where offset ``offset`` starts; ``reason`` says why."""

    index: int
    position: int
    offset: int
    reason: str
    whole_segment: bool = False


class DiskLog:
    """The metadata log in a directory (``metadata.log.dir``): batches of frames with
    consecutive offsets (LOG-4), in append-only segment files, plus the committed offset (LOG-6)
    and the log start offset in the committed offset file.

    Opening the log recovers it: every batch is validated and the log is cut at the first torn
    or corrupt one or at a gap between segments (see :attr:`recovery`). Opening never deletes a
    byte that may hold a committed record: if a cut would lose one, or the committed offset file
    is missing, or two segments overlap, opening raises and changes nothing, unless the caller
    chose otherwise (``quarantine_and_continue``: move what cannot be recovered into the
    ``quarantine`` folder and continue without it; ``committed_offset_missing="keep"``: keep
    every record, counting as committed only the log start).

    Durability: :meth:`append` writes to the operating system; :meth:`sync` makes everything
    appended durable. A batch is committed once it is synced *and* the committed offset file
    covers it: :meth:`write_committed_offset` refuses an offset beyond the synced end.

    One process at a time: the directory is locked (``.lock``) until :meth:`close`.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        quarantine_and_continue: bool = False,
        committed_offset_missing: str = "refuse",
    ) -> None:
        if segment_bytes < 1:
            raise ValueError(f"segment_bytes must be positive, got {segment_bytes}")
        if committed_offset_missing not in MISSING_CHOICES:
            raise ValueError(f"committed_offset_missing is one of {', '.join(MISSING_CHOICES)}, got {committed_offset_missing!r}")
        self.directory = _prepare_directory(Path(directory), "log")
        self._segment_bytes = segment_bytes
        self._segments: list[_Segment] = []
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._committed = 0
        self._committed_known = True
        self._start = 0  # the log start offset, as the committed offset file records it
        self._state_on_disk = False  # whether the committed offset file exists
        self._synced = 0
        self._closed = False
        self._broken: str | None = None
        self.recovery: RecoveryReport | None = None
        """What recovery cut at open, or None when every batch on disk was valid."""
        self.committed_loss: range | None = None
        """Offsets that were (or, with the committed offset unknown, may have been) committed and
        that ``quarantine_and_continue`` gave up; else None."""
        self.quarantined: list[QuarantineReport] = []
        """What the log moved into quarantine instead of deleting, at open or since."""
        self._lock_fd = self._lock()
        try:
            self._recover(quarantine_and_continue, committed_offset_missing == "keep")
        except BaseException:
            self._close_files()
            raise

    # -- the state ---------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        """The offset of the first record on disk (0 until segments are deleted)."""
        return self._segments[0].base_offset if self._segments else self._start

    @property
    def end_offset(self) -> int:
        """The log end offset: the offset the next record gets (LOG-4)."""
        return self._segments[-1].end_offset if self._segments else self._start

    @property
    def synced_offset(self) -> int:
        """Every record below this offset is durable (the end offset at the last sync)."""
        return self._synced

    @property
    def committed_offset(self) -> int:
        """The committed offset as the committed offset file holds it (0 for a new log). When
        the file is missing and the log was opened with ``committed_offset_missing="keep"``, the
        highest offset the log proves committed: its start."""
        return self._committed

    @property
    def committed_offset_known(self) -> bool:
        """False while the committed offset file is missing (opened with
        ``committed_offset_missing="keep"``), until :meth:`write_committed_offset`."""
        return self._committed_known

    @property
    def segment_files(self) -> tuple[Path, ...]:
        """The segment files, oldest first."""
        return tuple(s.path for s in self._segments)

    # -- writing -----------------------------------------------------------------------

    def append(self, base_offset: int, frames: Iterable[bytes]) -> None:
        """Append ``frames`` as one batch whose first record gets ``base_offset``, which must be
        the log end offset. Not durable until :meth:`sync`."""
        self._check_usable()
        if base_offset != self.end_offset:
            raise ValueError(f"{self.directory}: base offset {base_offset} is not the log end offset {self.end_offset}")
        batch_frames = [_frame_bytes(frame, index) for index, frame in enumerate(frames)]
        if not batch_frames:
            raise ValueError(f"{self.directory}: a batch needs at least one record")
        data = encode_batch(base_offset, batch_frames)
        active = self._segments[-1] if self._segments else None
        if active is None or (active.size > 0 and active.size + len(data) > self._segment_bytes):
            self._roll(base_offset)
            active = self._segments[-1]
        assert self._fd is not None
        try:
            _write_all(self._fd, data)
        except OSError as error:
            try:  # undo a partial write; if even that fails, recovery at the next open cuts it
                os.ftruncate(self._fd, active.size)
            except OSError:
                pass
            self._fail(active.path, f"cannot append the batch at offset {base_offset}: {error.strerror}", error)
        active.size += len(data)
        active.end_offset += len(batch_frames)

    def sync(self) -> None:
        """Make every appended batch durable: fsync the active segment (a new segment's directory
        entry was made durable when it was created). After a failed fsync the log refuses every
        further operation (the kernel may have dropped the unwritten pages): reopen it."""
        self._check_usable()
        try:
            if self._fd is not None and self._synced < self.end_offset:
                os.fsync(self._fd)
        except OSError as error:
            self._fail(self._segments[-1].path if self._segments else self.directory, f"fsync failed: {error.strerror}", error)
        self._synced = self.end_offset

    def write_committed_offset(self, offset: int) -> None:
        """Record durably that every record below ``offset`` is committed (LOG-6). The offset, a
        batch boundary (not checked here), never decreases and must be synced already: call
        :meth:`sync` first."""
        self._check_usable()
        if offset < self._committed:
            raise ValueError(f"{self.directory}: the committed offset never decreases ({self._committed} to {offset})")
        if offset > self._synced:
            raise ValueError(
                f"{self.directory}: offset {offset} is past the synced offset {self._synced}: "
                "sync() before declaring records committed"
            )
        if offset != self._committed or not self._committed_known:
            self._write_state(offset, self.start_offset)
            self._committed_known = True

    def truncate(self, end_offset: int) -> None:
        """Drop every batch at or after ``end_offset``, a batch boundary not below the committed
        offset (LOG-10: failover drops the uncommitted tail). Durable when it returns. While the
        committed offset is unknown, what is dropped is moved into quarantine, not deleted."""
        self._check_usable()
        if end_offset == self.end_offset:
            return
        low = max(self._committed, self.start_offset)
        if not low <= end_offset < self.end_offset:
            raise ValueError(
                f"{self.directory}: cannot truncate to offset {end_offset}: it must be from {low} "
                f"(the committed offset or the log start) to the log end offset {self.end_offset}"
            )
        index = self._segment_index(end_offset)
        position = self._position_of(self._segments[index], end_offset)
        cut = _Cut(index, position, end_offset, "truncate")
        if self._committed_known:
            self._cut(cut)
        else:
            why = f"truncated to offset {end_offset} while the committed offset was unknown"
            self._cut(cut, set_aside=why)

    def delete_before(self, offset: int) -> list[Path]:
        """Delete the segments that end at or before ``offset`` (after a snapshot ending there,
        LOG-11); the last segment is always kept, and so is every segment while the committed
        offset is unknown. Returns the deleted files, oldest first."""
        self._check_usable()
        if offset > self._committed:
            raise ValueError(
                f"{self.directory}: cannot delete records before {offset}: only committed records "
                f"(below {self._committed}) can be covered by a snapshot"
            )
        if not self._committed_known:
            return []
        drop = 0
        while drop + 1 < len(self._segments) and self._segments[drop + 1].base_offset <= offset:
            drop += 1
        if not drop:
            return []
        # the new start first: a crash before the deletions leaves extra old segments, never a gap
        self._write_state(self._committed, self._segments[drop].base_offset)
        deleted: list[Path] = []
        try:
            for segment in self._segments[:drop]:  # oldest first: a crash leaves a contiguous suffix
                _remove_quietly(segment.path)
                deleted.append(segment.path)
            _fsync_directory(self.directory)
        except OSError as error:
            self._fail(self.directory, f"cannot delete segments before offset {offset}: {error.strerror}", error)
        finally:
            del self._segments[: len(deleted)]
        return deleted

    def close(self) -> None:
        """Sync (unless the log failed) and release the directory. Closing twice is harmless."""
        if self._closed:
            return
        try:
            if self._broken is None:
                self.sync()
        finally:
            self._close_files()

    def __enter__(self) -> DiskLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------

    def read(self, from_offset: int | None = None, to_offset: int | None = None) -> Iterator[LogBatch]:
        """The batches from ``from_offset`` (default: the log start) up to ``to_offset``
        (default: the log end offset as it is now), one at a time, validated as they are read.
        Both must be batch boundaries. Only one batch is in memory at a time."""
        self._check_usable()
        start = self.start_offset if from_offset is None else from_offset
        stop = self.end_offset if to_offset is None else to_offset
        if not self.start_offset <= start <= stop <= self.end_offset:
            raise ValueError(
                f"{self.directory}: cannot read offsets {start} to {stop}: the log holds "
                f"{self.start_offset} to {self.end_offset}"
            )
        if start == stop:
            return iter(())
        first = self._segment_index(start)
        segments = [(s.path, s.base_offset, s.size) for s in self._segments[first:]]
        return _read_segments(segments, start, stop)

    # -- recovery ----------------------------------------------------------------------

    def _recover(self, quarantine_and_continue: bool, keep_if_missing: bool) -> None:
        """Validate the directory and decide everything before changing anything; then apply the
        decision: set strays aside, cut, lower the committed offset if a loss was accepted."""
        state = _read_state_file(self.directory / COMMITTED_OFFSET_FILE)
        found = self._list_segments()
        strays, cut = self._scan(found, None if state is None else state[1])
        self._state_on_disk = state is not None
        if state is not None:
            self._committed, self._start = state
        elif self._segments:
            self._committed_known = False
            self._committed = self._start = self._segments[0].base_offset
        if not self._committed_known and not keep_if_missing:
            raise CommittedOffsetUnknown(
                self.directory / COMMITTED_OFFSET_FILE,
                f"the committed offset file is missing, but the log holds offsets {self.start_offset} to "
                f"{self._disk_end(found) - 1} in {len(found)} segment file(s) ({found[0].path.name} to "
                f"{found[-1].path.name}): which of them were committed is unknown, so the log was not opened "
                "and nothing was changed. Restore the file from a backup, or open with "
                "committed_offset_missing='keep' to keep every record, counting as committed only what the "
                "directory proves (the log start; for a controller, also its newest valid snapshot) and the "
                "rest as uncommitted until the next commit",
            )
        overlapping = [(segment, why) for segment, why in strays if segment.path.stat().st_size > 0]
        if overlapping and not quarantine_and_continue:
            segment, why = overlapping[0]
            raise SegmentsOverlap(
                segment.path,
                f"{why}. Nothing was changed on disk. Move the file that does not belong out of the "
                f"directory, or open with quarantine_and_continue=True to move {segment.path.name} into "
                f"{self.directory / QUARANTINE_DIR}/",
            )
        report = self._report(cut) if cut is not None else None
        end = cut.offset if cut is not None else self.end_offset
        may_be_committed = self._disk_end(found) if not self._committed_known else self._committed
        loses = end < may_be_committed and (cut is not None or self._committed_known)
        if loses and not quarantine_and_continue:
            why = str(report) if report is not None else f"the segments end there ({found[-1].path.name if found else 'no segment files'})"
            raise CommittedDataLoss(self.directory, self._committed if self._committed_known else None, end, report, why)
        _remove_quietly(self.directory / (COMMITTED_OFFSET_FILE + ".tmp"))
        aside = [segment.path for segment, _ in strays]
        reasons = [why for _, why in strays]
        if cut is not None:
            if loses:
                reasons.append(f"recovery cut the log at offset {end} ({report})")
            self._cut(cut, set_aside="; ".join(reasons) if loses or aside else None, strays=aside, delete_dropped=not loses)
        elif aside:
            self._set_aside("; ".join(reasons), aside)
        self.recovery = report
        if loses:
            self.committed_loss = range(end, may_be_committed)
            if self._committed_known and self._committed > self.end_offset:
                self._write_state(self.end_offset, self.start_offset)  # accepted: the committed offset follows the log
        self._open_active()
        try:  # what survived a crash may still be only in the page cache: make it durable now
            if self._fd is not None:
                os.fsync(self._fd)
            _fsync_directory(self.directory)
        except OSError as error:
            raise StorageError(self.directory, f"fsync at open failed: {error.strerror}") from error
        self._synced = self.end_offset

    def _list_segments(self) -> list[_Segment]:
        segments = []
        for entry in os.scandir(self.directory):
            match = _SEGMENT_NAME.fullmatch(entry.name)
            if match and entry.is_file():
                segments.append(_Segment(int(match.group(1)), Path(entry.path)))
        return sorted(segments, key=lambda s: s.base_offset)

    def _disk_end(self, found: list[_Segment]) -> int:
        """The highest offset any segment file's name claims, or the log end if greater: what the
        directory may hold, for the messages and for a committed offset that is unknown."""
        return max([self.end_offset] + [s.end_offset for s in found])

    def _scan(self, found: list[_Segment], recorded_start: int | None) -> tuple[list[tuple[_Segment, str]], _Cut | None]:
        """Walk the segment files in order of base offset, validating every batch, and set
        :attr:`_segments` to the log's chain of segments. Returns the strays (files that do not
        belong to the chain: empty ones, and ones overlapping the chain, each with why) and where
        the log must be cut, or None. Changes nothing on disk."""
        chain: list[_Segment] = []
        strays: list[tuple[_Segment, str]] = []
        expected = recorded_start
        for index, segment in enumerate(found):
            try:
                size = segment.path.stat().st_size
            except OSError as error:
                raise StorageError(segment.path, f"cannot read the segment: {error.strerror}") from error
            last = index == len(found) - 1
            if expected is None or (not chain and segment.base_offset <= expected and size > 0):
                expected = segment.base_offset  # the first segment; older ones than the recorded start are kept
            if size == 0 and (not last or segment.base_offset != expected):
                strays.append((segment, f"{segment.path.name} is empty and not where the log continues (offset {expected})"))
                continue
            if segment.base_offset < expected:
                holder = chain[-1].path.name if chain else COMMITTED_OFFSET_FILE
                strays.append((
                    segment,
                    f"{segment.path.name} starts at offset {segment.base_offset}, but {holder} already holds the log "
                    f"up to offset {expected}: two segment files hold the same offsets",
                ))
                continue
            self._segments = chain + found[index:]
            if segment.base_offset > expected:
                before = f"{chain[-1].path.name} (which ends at offset {expected})" if chain else (
                    f"the log start (offset {expected}, recorded in {COMMITTED_OFFSET_FILE})"
                )
                reason = (
                    f"offsets {expected} to {segment.base_offset - 1} are missing: no segment file holds them, "
                    f"between {before} and {segment.path.name}"
                )
                return strays, _Cut(len(chain), 0, expected, reason, whole_segment=True)
            position = 0
            try:
                with open(segment.path, "rb") as f:
                    while (batch := _read_batch(f, position, size, expected, keep=False)) is not None:
                        count, _, batch_size = batch
                        expected += count
                        position += batch_size
            except _BadBatch as bad:
                segment.end_offset, segment.size = expected, position
                return strays, _Cut(len(chain), position, expected, bad.reason)
            except OSError as error:
                raise StorageError(segment.path, f"cannot read the segment: {error.strerror}") from error
            segment.end_offset, segment.size = expected, position
            chain.append(segment)
        self._segments = chain
        return strays, None

    def _report(self, cut: _Cut) -> RecoveryReport:
        segment = self._segments[cut.index]
        later = self._segments[cut.index + 1 :]
        dropped = segment.path.stat().st_size - cut.position + sum(s.path.stat().st_size for s in later)
        dropped_files = ([segment] if cut.whole_segment else []) + later
        return RecoveryReport(segment.path, cut.offset, cut.position, cut.reason, dropped, tuple(s.path for s in dropped_files))

    # -- internals ---------------------------------------------------------------------

    def _cut(self, cut: _Cut, set_aside: str | None = None, strays: list[Path] | None = None, delete_dropped: bool | None = None) -> None:
        """Drop everything from ``cut`` on, durably. With ``set_aside`` (the reason), the bytes
        cut from the segment and the later segment files are moved into a quarantine folder
        first (and ``strays`` with them); otherwise later segments are deleted newest first (so
        a crash leaves a contiguous prefix). ``delete_dropped`` false keeps the dropped bytes
        even without a reason of their own (only strays to set aside)."""
        self._close_active()
        keep = cut.index if cut.whole_segment else cut.index + 1
        dropped = self._segments[keep:]
        if delete_dropped is None:
            delete_dropped = set_aside is None
        try:
            if set_aside is not None:
                tail = None
                if not delete_dropped and not cut.whole_segment:
                    tail = (self._segments[cut.index].path, cut.position)
                moved = [] if delete_dropped else [s.path for s in dropped]
                self._set_aside(set_aside, (strays or []) + moved, tail)
            if delete_dropped:
                for segment in reversed(dropped):
                    _remove_quietly(segment.path)
            del self._segments[keep:]
            _fsync_directory(self.directory)
            if not cut.whole_segment:
                segment = self._segments[cut.index]
                fd = os.open(segment.path, os.O_WRONLY)
                try:
                    os.ftruncate(fd, cut.position)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                segment.size, segment.end_offset = cut.position, cut.offset
        except OSError as error:
            self._fail(self.directory, f"cannot cut the log at offset {cut.offset}: {error.strerror}", error)
        self._synced = self.end_offset  # earlier segments were fsynced when rolled, this one just now
        self._open_active()

    def _set_aside(self, reason: str, paths: list[Path], tail: tuple[Path, int] | None = None) -> QuarantineReport:
        """Move ``paths`` (and copy the bytes of ``tail``'s segment from its byte position on)
        into a new numbered folder under ``quarantine/``, durably, with a note saying why."""
        root = self.directory / QUARANTINE_DIR
        try:
            if not root.is_dir():
                root.mkdir()
                _fsync_directory(self.directory)
            taken = [int(p.name) for p in root.iterdir() if p.name.isdigit()]
            folder = root / f"{max(taken, default=0) + 1:04d}"
            folder.mkdir()
            _fsync_directory(root)
            placed: list[Path] = []
            if tail is not None:
                source, position = tail
                with open(source, "rb") as f:
                    f.seek(position)
                    data = f.read()
                copy = folder / f"{source.name}.from-byte-{position}"
                _write_new_file(copy, data)
                placed.append(copy)
            for path in paths:
                os.rename(path, folder / path.name)
                placed.append(folder / path.name)
            lines = [f"Set aside by the metadata log in {self.directory}.", f"Why: {reason}.", "Files:"]
            lines += [f"  {p.name}" for p in placed]
            _write_new_file(folder / QUARANTINE_NOTE, ("\n".join(lines) + "\n").encode())
            _fsync_directory(folder)
            _fsync_directory(self.directory)
        except OSError as error:
            self._fail(root, f"cannot move files into quarantine: {error.strerror}", error)
        report = QuarantineReport(folder, tuple(placed), reason)
        self.quarantined.append(report)
        return report

    def _segment_index(self, offset: int) -> int:
        """The index of the segment holding ``offset`` (the last one starting at or before it)."""
        return bisect.bisect_right([s.base_offset for s in self._segments], offset) - 1

    def _position_of(self, segment: _Segment, offset: int) -> int:
        """The byte position in ``segment`` of the batch starting at ``offset``."""
        expected, position = segment.base_offset, 0
        with open(segment.path, "rb") as f:
            while expected < offset:
                try:
                    batch = _read_batch(f, position, segment.size, expected, keep=False)
                except _BadBatch as bad:
                    raise CorruptBatchError(segment.path, position, bad.reason) from None
                assert batch is not None  # offset < the segment's end offset
                expected += batch[0]
                position += batch[2]
        if expected != offset:
            raise ValueError(f"{segment.path}: offset {offset} is inside a batch, not at a batch boundary")
        return position

    def _roll(self, base_offset: int) -> None:
        """Start a new segment at ``base_offset``. The one it replaces is fsynced first, so that
        only the last segment can ever hold unsynced bytes; the new one's directory entry is
        fsynced at once. Before the first segment, the committed offset file is written, so that
        a log with segments and no such file is known to have lost it."""
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError as error:
                self._fail(self._segments[-1].path, f"fsync failed: {error.strerror}", error)
            self._close_active()
        if not self._segments and not self._state_on_disk:
            self._write_state(self._committed, base_offset)
        path = self.directory / segment_name(base_offset)
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except OSError as error:
            raise StorageError(path, f"cannot create the segment: {error.strerror}") from error
        self._segments.append(_Segment(base_offset, path))
        try:
            _fsync_directory(self.directory)
        except OSError as error:
            self._fail(self.directory, f"fsync failed: {error.strerror}", error)

    def _open_active(self) -> None:
        self._close_active()
        if self._segments:
            path = self._segments[-1].path
            try:
                self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            except OSError as error:
                raise StorageError(path, f"cannot open the segment for appending: {error.strerror}") from error

    def _close_active(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _write_state(self, committed: int, start: int) -> None:
        """Write the committed offset file (the committed offset and the log start), atomically."""
        covered = committed.to_bytes(8, "big") + start.to_bytes(8, "big")
        data = COMMITTED_FORMAT.pack(COMMITTED_MAGIC, zlib.crc32(covered), committed, start)
        _write_atomically(self.directory / COMMITTED_OFFSET_FILE, data)
        self._committed, self._start, self._state_on_disk = committed, start, True

    def _lock(self) -> int:
        path = self.directory / LOCK_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise StorageError(path, f"cannot open the lock file: {error.strerror}") from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StorageError(self.directory, "the log directory is in use: another open DiskLog holds its lock") from None
        return fd

    def _close_files(self) -> None:
        self._close_active()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        self._closed = True

    def _fail(self, path: Path, problem: str, error: OSError) -> NoReturn:
        """An I/O failure leaves the files in an unknown state: refuse everything from now on
        (reopening recovers from what is on disk)."""
        self._broken = f"{path}: {problem}"
        self._close_active()
        raise StorageError(path, problem) from error

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise StorageError(self.directory, f"the log failed earlier ({self._broken}): close and reopen it")
        if self._closed:
            raise StorageError(self.directory, "the log is closed")


def _read_segments(segments: list[tuple[Path, int, int]], start: int, stop: int) -> Iterator[LogBatch]:
    """The batches in ``segments`` (path, base offset, size) from ``start`` to ``stop``."""
    for path, base_offset, size in segments:
        expected, position = base_offset, 0
        try:
            with open(path, "rb") as f:
                while expected < stop:
                    try:
                        batch = _read_batch(f, position, size, expected, keep=expected >= start)
                    except _BadBatch as bad:
                        raise CorruptBatchError(path, position, bad.reason) from None
                    if batch is None:
                        break
                    count, frames, batch_size = batch
                    if expected < start < expected + count or expected < stop < expected + count:
                        inside = start if expected < start < expected + count else stop
                        raise ValueError(f"{path}: offset {inside} is inside the batch at {expected}, not at a batch boundary")
                    if frames is not None:
                        yield LogBatch(expected, frames)
                    expected += count
                    position += batch_size
        except OSError as error:
            raise StorageError(path, f"cannot read the segment: {error.strerror}") from error
        if expected >= stop:
            return


def _read_state_file(path: Path) -> tuple[int, int] | None:
    """The committed offset file's committed offset and log start offset; None when the file
    does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StorageError(path, f"cannot read the committed offset: {error.strerror}") from error
    if len(data) != COMMITTED_FORMAT.size:
        raise StorageError(path, f"corrupt committed offset file: {len(data)} bytes, expected {COMMITTED_FORMAT.size}")
    magic, crc, committed, start = COMMITTED_FORMAT.unpack(data)
    if magic != COMMITTED_MAGIC or zlib.crc32(data[8:]) != crc or not 0 <= start <= committed:
        raise StorageError(path, "corrupt committed offset file: bad magic, CRC or offsets")
    return committed, start



# ---- snapshots -----------------------------------------------------------------------

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
        except _BadBatch as bad:
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
    each batch's record count and frames (None unless ``keep``); raises :class:`_BadBatch`."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        header = f.read(SNAPSHOT_HEADER.size)
        if header[:4] != SNAPSHOT_MAGIC[: len(header)]:
            raise _BadBatch(f"corrupt: bad magic {header[:4]!r}, expected {SNAPSHOT_MAGIC!r}")
        if len(header) < SNAPSHOT_HEADER.size:
            raise _BadBatch(f"truncated: {size} bytes, shorter than the {SNAPSHOT_HEADER.size}-byte header")
        _, crc, version, end_offset, record_count, data_length = SNAPSHOT_HEADER.unpack(header)
        if zlib.crc32(header[8:]) != crc:
            raise _BadBatch("corrupt: header CRC mismatch")
        if version != SNAPSHOT_VERSION:
            raise _BadBatch(f"unsupported format version {version} (this build reads {SNAPSHOT_VERSION})")
        if end_offset != expected_end:
            raise _BadBatch(f"corrupt: the header says end offset {end_offset}, the file name {expected_end}")
        if size != SNAPSHOT_HEADER.size + data_length:
            held = size - SNAPSHOT_HEADER.size
            what = "truncated" if held < data_length else "corrupt: trailing bytes"
            raise _BadBatch(f"{what}: the header promises {data_length} bytes of batches, the file holds {held}")
        records, position = 0, SNAPSHOT_HEADER.size
        while (batch := _read_batch(f, position, size, records, keep)) is not None:
            count, frames, batch_size = batch
            records += count
            position += batch_size
            if records > record_count:
                raise _BadBatch(f"corrupt: more records than the {record_count} the header promises")
            yield count, frames
        if records != record_count:
            raise _BadBatch(f"truncated: the header promises {record_count} records, the file holds {records}")


class SnapshotStore:
    """Snapshot files in a directory (it may be the log's), one per end offset, written
    atomically: a temporary file, fsynced, renamed into place, the directory fsynced. A crash
    leaves the previous snapshots untouched and at most a temporary file, which the store
    ignores and removes when it is opened."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = _prepare_directory(Path(directory), "snapshot")
        self.problems: tuple[SnapshotProblem, ...] = ()
        """The snapshots the last :meth:`load_newest` skipped, newest first, and why."""
        self.removed_temporary_files: tuple[Path, ...] = tuple(
            self.directory / name for name in os.listdir(self.directory) if _SNAPSHOT_TEMP_NAME.fullmatch(name)
        )
        """Leftovers of interrupted writes, removed at open."""
        for path in self.removed_temporary_files:
            _remove_quietly(path)

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
                    frame = _frame_bytes(frame, records + len(pending))
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
            _fsync_directory(self.directory)
        except OSError as error:
            _remove_quietly(temp)
            raise StorageError(final, f"cannot write the snapshot: {error.strerror}") from error
        except BaseException:
            _remove_quietly(temp)
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
            except _BadBatch as bad:
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
                _remove_quietly(path)
            if deleted:
                _fsync_directory(self.directory)
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


# ---- start-up ------------------------------------------------------------------------


@frozen
class Rebuild:
    """Where the controller's state comes from at start-up or failover (LOG-10, LOG-12): the
    newest valid snapshot, then the log's committed batches after it."""

    snapshot: LoadedSnapshot | None
    snapshot_problems: tuple[SnapshotProblem, ...]
    log: DiskLog = field(eq=False, repr=False)
    from_offset: int
    to_offset: int

    def frames(self) -> Iterator[bytes]:
        """Every frame to replay, in order: the snapshot's, then the log's from
        ``from_offset`` up to ``to_offset``."""
        if self.snapshot is not None:
            yield from self.snapshot.frames()
        for batch in self.log.read(self.from_offset, self.to_offset):
            yield from batch.frames


def plan_rebuild(log: DiskLog, snapshots: SnapshotStore) -> Rebuild:
    """Pick the newest valid snapshot and the log range to replay after it, up to the committed
    offset. Raises :class:`StorageError` when the two do not join: the log starts after the
    snapshot (or after 0 with no snapshot), or ends before it."""
    snapshot = snapshots.load_newest()
    problems = snapshots.problems
    skipped = "".join(f"; skipped {p}" for p in problems)
    first = log.segment_files[0].name if log.segment_files else "no segment files"
    if snapshot is None:
        if log.start_offset > 0:
            raise StorageError(
                log.directory,
                f"the log starts at offset {log.start_offset} ({first}) and no valid snapshot "
                f"covers records 0 to {log.start_offset - 1}{skipped}",
            )
        return Rebuild(None, problems, log, 0, log.committed_offset)
    if snapshot.end_offset < log.start_offset:
        raise StorageError(
            snapshot.path,
            f"the newest valid snapshot ends at offset {snapshot.end_offset} but the log starts at "
            f"{log.start_offset} ({first}): records {snapshot.end_offset} to {log.start_offset - 1} "
            f"are in neither{skipped}",
        )
    if snapshot.end_offset > log.end_offset:
        raise StorageError(
            snapshot.path,
            f"the snapshot ends at offset {snapshot.end_offset}, past the log end offset {log.end_offset}",
        )
    return Rebuild(snapshot, problems, log, snapshot.end_offset, max(log.committed_offset, snapshot.end_offset))
