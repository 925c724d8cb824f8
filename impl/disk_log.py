"""The metadata log on disk (LOG-4, LOG-6, LOG-10): :class:`DiskLog`, append-only segment files
in a directory, the committed offset file, and recovery at open that cuts a torn or corrupt tail
and never hides a lost committed batch (STORAGE.md: "Log segments", "The fsync policy",
"Recovery at open", "The quarantine"). The directory's file names and formats, and what opening
it reports and raises, are in log_directory.py."""

from __future__ import annotations

import bisect
import fcntl
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NoReturn

from attrs import frozen

from .batch_format import BadBatch, LogBatch, encode_batch, frame_bytes, read_batch
from .disk_files import StorageError, fsync_directory, prepare_directory, remove_quietly, write_all, write_atomically, write_new_file
from .log_directory import (
    COMMITTED_FORMAT,
    COMMITTED_MAGIC,
    COMMITTED_OFFSET_FILE,
    LOCK_FILE,
    QUARANTINE_DIR,
    QUARANTINE_NOTE,
    SEGMENT_NAME,
    CommittedDataLoss,
    CommittedOffsetUnknown,
    CorruptBatchError,
    QuarantineReport,
    RecoveryReport,
    SegmentsOverlap,
    read_state_file,
    segment_name,
)

DEFAULT_SEGMENT_BYTES = 8 * 1024 * 1024
MISSING_CHOICES = ("refuse", "keep")


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
        self.directory = prepare_directory(Path(directory), "log")
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
        batch_frames = [frame_bytes(frame, index) for index, frame in enumerate(frames)]
        if not batch_frames:
            raise ValueError(f"{self.directory}: a batch needs at least one record")
        data = encode_batch(base_offset, batch_frames)
        active = self._segments[-1] if self._segments else None
        if active is None or (active.size > 0 and active.size + len(data) > self._segment_bytes):
            self._roll(base_offset)
            active = self._segments[-1]
        assert self._fd is not None
        try:
            write_all(self._fd, data)
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
                remove_quietly(segment.path)
                deleted.append(segment.path)
            fsync_directory(self.directory)
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
        state = read_state_file(self.directory / COMMITTED_OFFSET_FILE)
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
        remove_quietly(self.directory / (COMMITTED_OFFSET_FILE + ".tmp"))
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
            fsync_directory(self.directory)
        except OSError as error:
            raise StorageError(self.directory, f"fsync at open failed: {error.strerror}") from error
        self._synced = self.end_offset

    def _list_segments(self) -> list[_Segment]:
        segments = []
        for entry in os.scandir(self.directory):
            match = SEGMENT_NAME.fullmatch(entry.name)
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
                    while (batch := read_batch(f, position, size, expected, keep=False)) is not None:
                        count, _, batch_size = batch
                        expected += count
                        position += batch_size
            except BadBatch as bad:
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
                    remove_quietly(segment.path)
            del self._segments[keep:]
            fsync_directory(self.directory)
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
                fsync_directory(self.directory)
            taken = [int(p.name) for p in root.iterdir() if p.name.isdigit()]
            folder = root / f"{max(taken, default=0) + 1:04d}"
            folder.mkdir()
            fsync_directory(root)
            placed: list[Path] = []
            if tail is not None:
                source, position = tail
                with open(source, "rb") as f:
                    f.seek(position)
                    data = f.read()
                copy = folder / f"{source.name}.from-byte-{position}"
                write_new_file(copy, data)
                placed.append(copy)
            for path in paths:
                os.rename(path, folder / path.name)
                placed.append(folder / path.name)
            lines = [f"Set aside by the metadata log in {self.directory}.", f"Why: {reason}.", "Files:"]
            lines += [f"  {p.name}" for p in placed]
            write_new_file(folder / QUARANTINE_NOTE, ("\n".join(lines) + "\n").encode())
            fsync_directory(folder)
            fsync_directory(self.directory)
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
                    batch = read_batch(f, position, segment.size, expected, keep=False)
                except BadBatch as bad:
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
            fsync_directory(self.directory)
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
        write_atomically(self.directory / COMMITTED_OFFSET_FILE, data)
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
                        batch = read_batch(f, position, size, expected, keep=expected >= start)
                    except BadBatch as bad:
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
