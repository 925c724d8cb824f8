"""Start-up (LOG-10, LOG-12): :func:`plan_rebuild` joins the newest valid snapshot and the
committed log after it (STORAGE.md, "Loading at start-up")."""

from __future__ import annotations

from collections.abc import Iterator

from attrs import field, frozen

from .disk_files import StorageError
from .disk_log import DiskLog
from .snapshot_store import LoadedSnapshot, SnapshotProblem, SnapshotStore


@frozen
class Rebuild:
    """Where the controller's state comes from at start-up or failover (LOG-10, LOG-12): the
    newest valid snapshot, then the log's committed batches after it."""

    snapshot: LoadedSnapshot | None
    snapshot_problems: tuple[SnapshotProblem, ...]
    log: DiskLog = field(eq=False, repr=False)
    from_offset: int
    to_offset: int

    def batches(self) -> Iterator[tuple[int | None, list[bytes]]]:
        """:meth:`frames`, a batch (a list of frames) at a time, each with the offset of its first
        record in the log (None for the snapshot's, whose records have no offsets of their own)."""
        if self.snapshot is not None:
            for frames in self.snapshot.batches():
                yield None, frames
        for batch in self.log.read(self.from_offset, self.to_offset):
            yield batch.base_offset, batch.frames

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
