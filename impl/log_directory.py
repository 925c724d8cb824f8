"""The metadata log's directory (STORAGE.md: "The directories", "The committed offset file",
"Errors"): the names of its files, the committed offset file's format, and what opening the log
reports (:class:`RecoveryReport`, :class:`QuarantineReport`) and raises."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

from attrs import frozen

from .disk_files import StorageError

SEGMENT_SUFFIX = ".log"
COMMITTED_OFFSET_FILE = "committed-offset"
LOCK_FILE = ".lock"
QUARANTINE_DIR = "quarantine"
QUARANTINE_NOTE = "REASON.txt"
SEGMENT_NAME = re.compile(r"(\d{20})\.log")
COMMITTED_MAGIC = b"KSC2"
COMMITTED_FORMAT = struct.Struct(">4sIqq")
"""The committed offset file: magic, CRC-32 of the next 16 bytes, the committed offset and the
log start offset (int64 each)."""


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


def read_state_file(path: Path) -> tuple[int, int] | None:
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


# ---- what the log raises ----------------------------------------------------------------


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
