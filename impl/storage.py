"""The controller's storage: the metadata log on disk and the snapshot files, with crash
recovery (LOG-4, LOG-6, LOG-10, LOG-11, LOG-12).

This layer stores *frames*: opaque byte strings, one per record, that the codec writes and
reads (LOG-2). It never looks inside a frame. This module gathers its public names; the code is
in one module per part:

- batch_format.py, the **batch format** shared by log segments and snapshot files: a header with
  a CRC over everything after it, then each frame preceded by its length;
- disk_log.py, :class:`DiskLog`, the metadata log: append-only segments in a directory, the
  committed offset file, and recovery at open that cuts a torn or corrupt tail and never hides a
  lost committed batch; log_directory.py, the names and formats of its files and what opening it
  reports and raises;
- snapshot_store.py, :class:`SnapshotStore`, snapshot files written atomically and loaded newest
  valid first;
- rebuild.py, :func:`plan_rebuild`, the start-up path of LOG-10: the newest valid snapshot, then
  the committed batches after it;
- disk_files.py, :class:`StorageError` and the durable file primitives the others write with.

``STORAGE.md`` beside this file describes the formats and the fsync policy for operators and
implementers. Expected conditions (a corrupt file, a directory in use or missing permissions)
raise :class:`StorageError` naming the path and the problem; a caller's mistake (an offset that
is not the log end, a committed offset that would go backwards) raises ``ValueError``.
"""

from __future__ import annotations

from .batch_format import BATCH_HEADER, BATCH_MAGIC, MAX_INT32, MAX_VARINT_BYTES, LogBatch, encode_batch, encode_varint
from .disk_files import StorageError
from .disk_log import DEFAULT_SEGMENT_BYTES, MISSING_CHOICES, DiskLog
from .log_directory import (
    COMMITTED_FORMAT,
    COMMITTED_MAGIC,
    COMMITTED_OFFSET_FILE,
    LOCK_FILE,
    QUARANTINE_DIR,
    QUARANTINE_NOTE,
    SEGMENT_SUFFIX,
    CommittedDataLoss,
    CommittedOffsetUnknown,
    CorruptBatchError,
    QuarantineReport,
    RecoveryReport,
    SegmentsOverlap,
    segment_name,
)
from .rebuild import Rebuild, plan_rebuild
from .snapshot_store import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_BATCH_RECORDS,
    SNAPSHOT_HEADER,
    SNAPSHOT_MAGIC,
    SNAPSHOT_SUFFIX,
    SNAPSHOT_VERSION,
    TEMP_SUFFIX,
    LoadedSnapshot,
    SnapshotFile,
    SnapshotProblem,
    SnapshotStore,
    snapshot_name,
)

__all__ = [
    # errors
    "StorageError",
    "CorruptBatchError",
    "CommittedDataLoss",
    "CommittedOffsetUnknown",
    "SegmentsOverlap",
    # the batch format
    "BATCH_MAGIC",
    "BATCH_HEADER",
    "MAX_INT32",
    "MAX_VARINT_BYTES",
    "LogBatch",
    "encode_varint",
    "encode_batch",
    # the metadata log
    "SEGMENT_SUFFIX",
    "COMMITTED_OFFSET_FILE",
    "LOCK_FILE",
    "QUARANTINE_DIR",
    "QUARANTINE_NOTE",
    "DEFAULT_SEGMENT_BYTES",
    "COMMITTED_MAGIC",
    "COMMITTED_FORMAT",
    "MISSING_CHOICES",
    "segment_name",
    "RecoveryReport",
    "QuarantineReport",
    "DiskLog",
    # snapshots
    "SNAPSHOT_MAGIC",
    "SNAPSHOT_VERSION",
    "SNAPSHOT_HEADER",
    "SNAPSHOT_SUFFIX",
    "TEMP_SUFFIX",
    "DEFAULT_BATCH_RECORDS",
    "DEFAULT_BATCH_BYTES",
    "snapshot_name",
    "SnapshotFile",
    "SnapshotProblem",
    "LoadedSnapshot",
    "SnapshotStore",
    # start-up
    "Rebuild",
    "plan_rebuild",
]
