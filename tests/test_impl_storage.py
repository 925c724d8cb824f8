"""impl's storage: the metadata log on disk, the committed offset file, snapshot files, crash
recovery and the start-up rebuild (LOG-4, LOG-6, LOG-10, LOG-11, LOG-12; impl/STORAGE.md).

Frames are opaque to this layer, so the tests use arbitrary byte strings. Crashes are simulated
on copies of a log directory: a segment cut at every byte of its last batch, a byte flipped at
every position, a segment out of place, a zero-filled tail.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kraftspec.impl import snapshot_store, storage
from kraftspec.impl.storage import (
    BATCH_HEADER,
    CommittedDataLoss,
    CommittedOffsetUnknown,
    SegmentsOverlap,
    CorruptBatchError,
    DiskLog,
    LogBatch,
    SnapshotStore,
    StorageError,
    encode_batch,
    plan_rebuild,
    segment_name,
    snapshot_name,
)


def frame(offset: int) -> bytes:
    """A distinct frame per offset, of varying length; every tenth is long enough to need a
    two-byte length varint."""
    body = f"record-{offset}".encode()
    return body + (b"\xab" * 200 if offset % 10 == 3 else bytes([offset % 251]) * (offset % 5))


def batch_at(base_offset: int, count: int) -> list[bytes]:
    return [frame(base_offset + i) for i in range(count)]


def build_log(directory: Path, sizes: list[int], segment_bytes: int = 400, committed: int | None = None) -> list[LogBatch]:
    """A closed log with one batch per entry of ``sizes`` (its record count), synced; the
    committed offset file set to ``committed`` if given. Returns the batches written."""
    written = []
    with DiskLog(directory, segment_bytes=segment_bytes) as log:
        for count in sizes:
            batch = LogBatch(log.end_offset, batch_at(log.end_offset, count))
            log.append(batch.base_offset, batch.frames)
            written.append(batch)
        log.sync()
        if committed is not None:
            log.write_committed_offset(committed)
    return written


def read_all(log: DiskLog) -> list[LogBatch]:
    return list(log.read())


def batch_positions(segment: Path) -> list[int]:
    """The byte position of every batch in a segment file, and its length at the end."""
    data, positions, position = segment.read_bytes(), [], 0
    while position < len(data):
        positions.append(position)
        length = BATCH_HEADER.unpack_from(data, position)[4]
        position += BATCH_HEADER.size + length
    return positions + [position]


def segments_of(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def files_of(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` (but the lock) by relative name, with its bytes."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file() and p.name != ".lock"}


def segment_bytes_of(files: dict[str, bytes]) -> dict[str, bytes]:
    return {name: data for name, data in files.items() if name.endswith(".log")}


def reassembled(directory: Path, before: dict[str, bytes]) -> dict[str, bytes]:
    """Each segment file of ``before`` put together again from what is left of it in
    ``directory`` and what quarantine holds of it (a moved file, or bytes cut from byte P on)."""
    out = {}
    for name in segment_bytes_of(before):
        data = (directory / name).read_bytes() if (directory / name).exists() else b""
        for piece in sorted((directory / "quarantine").glob(f"*/{name}*")):
            data += piece.read_bytes()
        out[name] = data
    return out


# ---- append, read, roll, reopen -----------------------------------------------------------


def test_append_and_read_round_trip_across_segment_rolls_and_reopen(tmp_path):
    """LOG-4: batches get consecutive offsets; segments roll by size and are named by base offset."""
    sizes = [1, 3, 2, 5, 1, 4, 2, 2, 6, 1]
    written = build_log(tmp_path, sizes, segment_bytes=300)
    with DiskLog(tmp_path, segment_bytes=300) as log:
        assert log.recovery is None
        assert log.start_offset == 0 and log.end_offset == sum(sizes)
        assert read_all(log) == written
        assert len(log.segment_files) > 2
        bases = [int(p.name.removesuffix(".log")) for p in log.segment_files]
        assert [p.name for p in log.segment_files] == [segment_name(b) for b in bases]
        assert all(b in {w.base_offset for w in written} for b in bases)
        assert segment_name(7) == "00000000000000000007.log"
        # a range in the middle, between batch boundaries, across segments
        middle = list(log.read(from_offset=written[3].base_offset, to_offset=written[8].base_offset))
        assert middle == written[3:8]
        assert list(log.read(from_offset=log.end_offset)) == []
        # appending after reopening continues the offsets
        log.append(log.end_offset, [b"after-reopen"])
        assert list(log.read(from_offset=sum(sizes))) == [LogBatch(sum(sizes), [b"after-reopen"])]


def test_no_segment_exceeds_segment_bytes_unless_it_holds_one_batch(tmp_path):
    build_log(tmp_path, [3] * 20, segment_bytes=250)
    for segment in segments_of(tmp_path):
        positions = batch_positions(segment)
        assert segment.stat().st_size <= 250 or len(positions) == 2


def test_read_streams_one_batch_at_a_time(tmp_path):
    written = build_log(tmp_path, [2] * 50, segment_bytes=200)
    with DiskLog(tmp_path) as log:
        reader = log.read()
        assert next(reader) == written[0]
        assert next(reader) == written[1]


def test_append_refuses_a_base_offset_other_than_the_log_end_an_empty_batch_and_non_bytes(tmp_path):
    with DiskLog(tmp_path) as log:
        log.append(0, [b"a", b"b"])
        with pytest.raises(ValueError, match="base offset 1 is not the log end offset 2"):
            log.append(1, [b"c"])
        with pytest.raises(ValueError, match="at least one record"):
            log.append(2, [])
        with pytest.raises(TypeError, match="frame 1 is a str"):
            log.append(2, [b"ok", "not bytes"])
        log.append(2, [bytearray(b"c"), memoryview(b"d"), b""])
        assert read_all(log) == [LogBatch(0, [b"a", b"b"]), LogBatch(2, [b"c", b"d", b""])]


def test_read_refuses_offsets_outside_the_log_or_inside_a_batch(tmp_path):
    build_log(tmp_path, [3, 3])
    with DiskLog(tmp_path) as log:
        with pytest.raises(ValueError, match="the log holds 0 to 6"):
            log.read(from_offset=7)
        with pytest.raises(ValueError, match="offset 1 is inside the batch at 0"):
            list(log.read(from_offset=1))
        with pytest.raises(ValueError, match="offset 4 is inside the batch at 3"):
            list(log.read(to_offset=4))


# ---- truncate, delete_before ---------------------------------------------------------------


def test_truncate_at_a_batch_boundary_drops_the_tail_durably(tmp_path):
    """LOG-10: failover drops the uncommitted tail, at a batch boundary."""
    written = build_log(tmp_path, [2, 3, 1, 4, 2, 3, 2], segment_bytes=200, committed=5)
    cut = written[3].base_offset
    with DiskLog(tmp_path) as log:
        segments_before = len(log.segment_files)
        log.truncate(cut)
        assert log.end_offset == cut and log.synced_offset == cut
        assert read_all(log) == written[:3]
        assert len(log.segment_files) < segments_before
        assert set(segments_of(tmp_path)) == set(log.segment_files)
    with DiskLog(tmp_path) as log:
        assert log.recovery is None and read_all(log) == written[:3]
        log.append(cut, [b"new"])  # the dropped offsets are given out again
        assert read_all(log)[-1] == LogBatch(cut, [b"new"])


def test_truncate_to_the_start_of_a_segment_leaves_it_empty_and_usable(tmp_path):
    written = build_log(tmp_path, [2] * 12, segment_bytes=120)
    second = int(segments_of(tmp_path)[1].name.removesuffix(".log"))
    with DiskLog(tmp_path) as log:
        log.truncate(second)
        assert log.end_offset == second
        assert log.segment_files[-1].stat().st_size == 0
        log.append(second, [b"x"])
    with DiskLog(tmp_path) as log:
        assert log.recovery is None
        assert read_all(log) == [b for b in written if b.base_offset < second] + [LogBatch(second, [b"x"])]


def test_truncate_refuses_inside_a_batch_below_the_committed_offset_or_past_the_end(tmp_path):
    build_log(tmp_path, [3, 3, 3], committed=3)
    with DiskLog(tmp_path) as log:
        with pytest.raises(ValueError, match="offset 4 is inside a batch"):
            log.truncate(4)
        with pytest.raises(ValueError, match="from 3"):
            log.truncate(0)  # committed records are never dropped
        with pytest.raises(ValueError, match="log end offset 9"):
            log.truncate(10)
        log.truncate(9)  # the end itself: nothing to do
        assert log.end_offset == 9


def test_delete_before_drops_whole_segments_that_end_at_or_before_the_offset(tmp_path):
    """LOG-11: after a snapshot, the log before its end offset is dropped."""
    written = build_log(tmp_path, [2] * 20, segment_bytes=150, committed=40)
    with DiskLog(tmp_path) as log:
        bases = [int(p.name.removesuffix(".log")) for p in log.segment_files]
        offset = bases[2] + 1  # inside the third segment: the first two end before it
        deleted = log.delete_before(offset)
        assert [int(p.name.removesuffix(".log")) for p in deleted] == bases[:2]
        assert log.start_offset == bases[2]
        assert read_all(log) == [b for b in written if b.base_offset >= bases[2]]
        with pytest.raises(ValueError, match="the log holds"):
            log.read(from_offset=0)
        assert log.delete_before(40) and len(log.segment_files) == 1  # the last segment stays
        assert log.end_offset == 40
    with DiskLog(tmp_path) as log:
        assert log.start_offset == bases[-1] and log.end_offset == 40


def test_delete_before_refuses_uncommitted_records(tmp_path):
    build_log(tmp_path, [2] * 10, segment_bytes=100, committed=4)
    with DiskLog(tmp_path) as log, pytest.raises(ValueError, match="only committed records"):
        log.delete_before(10)


# ---- the committed offset -------------------------------------------------------------------


def test_the_committed_offset_survives_reopening_and_is_zero_for_a_new_log(tmp_path):
    """LOG-6. The file is written before the first segment, so a log never has segments
    without it."""
    with DiskLog(tmp_path) as log:
        assert log.committed_offset == 0 and log.committed_offset_known
        assert not (tmp_path / "committed-offset").exists()  # opening an empty directory writes nothing
        log.append(0, [b"a"])
        assert (tmp_path / "committed-offset").exists()
        log.append(1, [b"b", b"c"])
        log.sync()
        log.write_committed_offset(3)
    with DiskLog(tmp_path) as log:
        assert log.committed_offset == 3


def test_a_missing_committed_offset_file_is_refused_and_changes_nothing(tmp_path):
    """The open neither guesses 0 (which would make every record uncommitted, and a failover
    would delete them) nor guesses the log end: it names the file and the choices."""
    written = build_log(tmp_path, [2, 3, 1, 4], segment_bytes=150, committed=6)
    (tmp_path / "committed-offset").unlink()
    before = files_of(tmp_path)
    with pytest.raises(CommittedOffsetUnknown) as raised:
        DiskLog(tmp_path)
    message = str(raised.value)
    assert str(tmp_path / "committed-offset") in message and "offsets 0 to 9" in message
    assert "committed_offset_missing='keep'" in message and "Nothing was changed" in message.replace("nothing", "Nothing")
    assert files_of(tmp_path) == before
    with DiskLog(tmp_path, committed_offset_missing="keep") as log:  # every record kept, only the start proven
        assert read_all(log) == written and log.recovery is None
        assert not log.committed_offset_known and log.committed_offset == 0
        log.truncate(5)  # a failover now: what it drops may have been committed, so it is set aside
        [aside] = log.quarantined
        assert aside.folder == tmp_path / "quarantine" / "0001" and "unknown" in aside.reason
        assert log.delete_before(0) == []
    assert (tmp_path / "quarantine" / "0001" / "REASON.txt").exists()
    assert reassembled(tmp_path, before) == segment_bytes_of(before)  # not a byte deleted
    with pytest.raises(CommittedOffsetUnknown):  # still unknown: nothing made it up
        DiskLog(tmp_path)
    with DiskLog(tmp_path, committed_offset_missing="keep") as log:
        log.write_committed_offset(5)  # the quorum says so
    with DiskLog(tmp_path) as log:
        assert log.committed_offset_known and log.committed_offset == 5 and read_all(log) == written[:2]


def test_a_batch_is_committed_only_once_synced_and_the_offset_never_decreases(tmp_path):
    with DiskLog(tmp_path) as log:
        log.append(0, [b"a"])
        with pytest.raises(ValueError, match="sync"):
            log.write_committed_offset(1)
        log.sync()
        log.write_committed_offset(1)
        with pytest.raises(ValueError, match="never decreases"):
            log.write_committed_offset(0)


def test_a_corrupt_committed_offset_file_is_reported_by_path(tmp_path):
    build_log(tmp_path, [2], committed=2)
    path = tmp_path / "committed-offset"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(StorageError, match="committed-offset: corrupt committed offset file"):
        DiskLog(tmp_path)


# ---- crash recovery ---------------------------------------------------------------------------


SIZES = [2, 1, 3, 2, 4, 1, 2, 1, 2, 1, 5]  # three segments at 400 bytes, the last with three batches


@pytest.fixture
def crashed_log(tmp_path):
    """A log whose batches are all synced and all but the last committed; returns the source
    directory, the batches and the byte range of the last batch in the last segment."""
    source = tmp_path / "source"
    written = build_log(source, SIZES, segment_bytes=400, committed=sum(SIZES[:-1]))
    last_segment = segments_of(source)[-1]
    positions = batch_positions(last_segment)
    assert len(segments_of(source)) > 1 and len(positions) > 3  # earlier batches in the same segment too
    return source, written, last_segment.name, positions[-2], positions[-1]


@pytest.fixture
def no_fsync(monkeypatch):
    """For the loops that open hundreds of copies: fsync cannot change what a test without a
    power cut observes, and test_the_fsync_policy checks the calls themselves."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


def crash_copy(source: Path, target: Path, segment: str, data: bytes) -> Path:
    """``source`` copied to ``target`` with ``segment`` holding ``data``. After the first call
    only the segment is rewritten: recovery and the tests change nothing else."""
    if not target.exists():
        shutil.copytree(source, target)
    (target / segment).write_bytes(data)
    return target


def test_a_cut_at_every_byte_of_the_last_batch_keeps_every_earlier_batch(no_fsync, crashed_log, tmp_path):
    """A crash tears at most the unsynced tail: recovery keeps every committed batch and the
    last batch whole or not at all."""
    source, written, segment, start, end = crashed_log
    data = (source / segment).read_bytes()
    for cut in range(start, end + 1):
        target = crash_copy(source, tmp_path / "cut", segment, data[:cut])
        with DiskLog(target) as log:
            expected = written if cut == end else written[:-1]
            assert read_all(log) == expected, cut
            assert log.end_offset == (sum(SIZES) if cut == end else sum(SIZES[:-1]))
            assert log.committed_offset == sum(SIZES[:-1])
            if cut in (start, end):
                assert log.recovery is None, cut
            else:
                report = log.recovery
                assert report is not None, cut
                assert report.path == target / segment and report.position == start
                assert report.offset == written[-1].base_offset
                assert report.bytes_dropped == cut - start and report.reason.startswith("torn"), report
                assert (target / segment).stat().st_size == start
            log.append(log.end_offset, [b"after-recovery"])
        with DiskLog(target) as log:  # recovery is durable and the log is usable after it
            assert log.recovery is None
            assert read_all(log)[-1].frames == [b"after-recovery"]


@pytest.mark.parametrize("mask", [0x01, 0x80, 0xFF])
def test_a_flipped_byte_anywhere_in_the_last_batch_drops_exactly_that_batch(no_fsync, crashed_log, tmp_path, mask):
    source, written, segment, start, end = crashed_log
    data = (source / segment).read_bytes()
    for position in range(start, end):
        changed = bytearray(data)
        changed[position] ^= mask
        target = crash_copy(source, tmp_path / "flip", segment, bytes(changed))
        with DiskLog(target) as log:
            assert read_all(log) == written[:-1], position
            report = log.recovery
            assert report is not None and report.position == start and report.offset == written[-1].base_offset
            assert report.bytes_dropped == end - start
            assert report.reason.startswith(("corrupt", "torn")), report
            if position - start < 4:
                assert "bad magic" in report.reason
            elif position - start >= BATCH_HEADER.size:
                assert "CRC mismatch" in report.reason


def test_corruption_in_a_middle_segment_drops_that_batch_and_every_later_segment(tmp_path):
    written = build_log(tmp_path / "log", [2] * 20, segment_bytes=150, committed=4)
    segments = segments_of(tmp_path / "log")
    index = next(i for i, s in enumerate(segments[:-2]) if i > 0 and len(batch_positions(s)) > 2)
    middle = segments[index]  # a middle segment with at least two batches
    positions = batch_positions(middle)
    data = bytearray(middle.read_bytes())
    data[positions[1] + BATCH_HEADER.size + 2] ^= 0x10  # a payload byte of its second batch
    middle.write_bytes(bytes(data))
    dropped = middle.stat().st_size - positions[1] + sum(s.stat().st_size for s in segments[index + 1 :])
    first_lost = int(middle.name.removesuffix(".log")) + 2
    with DiskLog(tmp_path / "log") as log:
        report = log.recovery
        assert report is not None
        assert report.path == middle and report.position == positions[1] and report.offset == first_lost
        assert "CRC mismatch" in report.reason and report.bytes_dropped == dropped
        assert report.dropped_segments == tuple(segments[index + 1 :])
        assert str(middle) in str(report) and "CRC mismatch" in str(report)
        assert segments_of(tmp_path / "log") == segments[: index + 1]
        assert read_all(log) == [b for b in written if b.base_offset < first_lost]


def test_a_zero_filled_tail_is_cut(crashed_log, tmp_path):
    """Some file systems leave zeros where a crash interrupted an append."""
    source, written, segment, start, end = crashed_log
    target = crash_copy(source, tmp_path / "zeros", segment, (source / segment).read_bytes())
    with open(target / segment, "ab") as f:
        f.write(bytes(100))
    with DiskLog(target) as log:
        assert read_all(log) == written
        assert log.recovery is not None and "bad magic" in log.recovery.reason
        assert log.recovery.bytes_dropped == 100


def test_an_empty_last_segment_left_by_a_crash_during_a_roll_is_valid(tmp_path):
    written = build_log(tmp_path, [2, 2, 2])
    (tmp_path / segment_name(6)).touch()
    with DiskLog(tmp_path) as log:
        assert log.recovery is None and log.end_offset == 6 and read_all(log) == written
        log.append(6, [b"x"])
    with DiskLog(tmp_path) as log:
        assert read_all(log)[-1] == LogBatch(6, [b"x"])


def test_a_gap_after_the_committed_offset_is_cut_with_every_later_segment(tmp_path):
    """Only uncommitted records follow the gap: they may go, and the report says why."""
    written = build_log(tmp_path, [2, 2, 2])
    stray = tmp_path / segment_name(9)  # the log ends at 6: offsets 6 to 8 are missing
    stray.write_bytes(encode_batch(9, [b"stray"]))
    with DiskLog(tmp_path) as log:
        assert read_all(log) == written
        report = log.recovery
        assert report is not None and report.path == stray and report.dropped_segments == (stray,)
        assert report.reason == f"offsets 6 to 8 are missing: no segment file holds them, between {segment_name(0)} (which ends at offset 6) and {segment_name(9)}"
        assert not stray.exists()


def test_losing_a_committed_batch_is_refused_loudly_and_changes_nothing(crashed_log, tmp_path):
    """A committed batch was synced, so only a faulty disk can lose it: opening names the path,
    the offsets lost, and leaves the files for the operator, unless the loss is accepted."""
    source, written, segment, start, end = crashed_log
    target = crash_copy(source, tmp_path / "lost", segment, (source / segment).read_bytes())
    path = target / segment
    positions = batch_positions(path)
    data = bytearray(path.read_bytes())
    data[positions[0] + BATCH_HEADER.size] ^= 0x01  # the first batch of the last segment: committed
    path.write_bytes(bytes(data))
    before = files_of(target)
    first_lost = int(segment.removesuffix(".log"))
    with pytest.raises(CommittedDataLoss, match="DATA LOSS") as raised:
        DiskLog(target)
    error = raised.value
    assert error.committed_offset == sum(SIZES[:-1]) and error.end_offset == first_lost
    assert error.cut is not None and error.cut.path == path and str(target) in str(error)
    assert f"byte {positions[0]} (offset {first_lost})" in str(error) and "quarantine_and_continue=True" in str(error)
    assert files_of(target) == before
    with DiskLog(target, quarantine_and_continue=True) as log:
        assert log.committed_loss == range(first_lost, sum(SIZES[:-1]))
        assert log.committed_offset == log.end_offset == first_lost
        assert log.recovery is not None and log.recovery.offset == first_lost
        assert read_all(log) == [b for b in written if b.base_offset < first_lost]
        [aside] = log.quarantined
        assert aside.files == (target / "quarantine" / "0001" / f"{segment}.from-byte-0",)
    assert reassembled(target, before) == segment_bytes_of(before)  # set aside, not deleted
    with DiskLog(target) as log:  # accepted once: the log is consistent again
        assert log.recovery is None and log.committed_loss is None and log.quarantined == []


def committed_log(directory: Path) -> tuple[list[LogBatch], list[Path], int]:
    """Twenty committed batches of two records in several segments, and the index of a middle
    segment with two batches or more."""
    written = build_log(directory, [2] * 20, segment_bytes=150, committed=40)
    segments = segments_of(directory)
    middle = next(i for i, s in enumerate(segments[:-2]) if i > 0 and len(batch_positions(s)) > 2)
    return written, segments, middle


def test_corrupt_committed_data_set_aside_moves_every_later_segment_and_deletes_nothing(tmp_path):
    """The escape hatch gives up what cannot be read in order, but keeps every byte of it."""
    written, segments, index = committed_log(tmp_path)
    middle = segments[index]
    data = bytearray(middle.read_bytes())
    data[batch_positions(middle)[1] + BATCH_HEADER.size] ^= 0x01
    middle.write_bytes(bytes(data))
    before = files_of(tmp_path)
    first_lost = int(middle.name.removesuffix(".log")) + 2
    with DiskLog(tmp_path, quarantine_and_continue=True) as log:
        assert read_all(log) == written[: first_lost // 2] and log.committed_loss == range(first_lost, 40)
        [aside] = log.quarantined
        names = [p.name for p in aside.files]
        assert names == [f"{middle.name}.from-byte-{batch_positions(middle)[1]}"] + [p.name for p in segments[index + 1 :]]
        note = (aside.folder / "REASON.txt").read_text()
        assert "CRC mismatch" in note and all(name in note for name in names)
    assert reassembled(tmp_path, before) == segment_bytes_of(before)


def test_an_empty_stray_segment_is_set_aside_and_every_committed_record_kept(tmp_path):
    """An empty file among the segments holds no record: it is not a gap and loses nothing."""
    written, segments, index = committed_log(tmp_path)
    inside = tmp_path / segment_name(int(segments[index].name.removesuffix(".log")) + 1)
    beyond = tmp_path / segment_name(100)
    inside.touch()
    beyond.touch()
    with DiskLog(tmp_path) as log:
        assert read_all(log) == written and log.recovery is None and log.committed_loss is None
        [aside] = log.quarantined
        assert [p.name for p in aside.files] == [inside.name, beyond.name]
        assert "is empty and not where the log continues" in aside.reason
        assert segments_of(tmp_path) == segments
        log.append(40, [b"x"])
    with DiskLog(tmp_path) as log:
        assert log.quarantined == [] and read_all(log)[-1] == LogBatch(40, [b"x"])


def test_a_segment_overlapping_the_log_is_refused_by_name_or_set_aside(tmp_path):
    written, segments, index = committed_log(tmp_path)
    base = int(segments[index].name.removesuffix(".log"))
    overlap = tmp_path / segment_name(base + 2)
    assert not overlap.exists()
    overlap.write_bytes(encode_batch(base + 2, [b"other"]))
    before = files_of(tmp_path)
    with pytest.raises(SegmentsOverlap) as raised:
        DiskLog(tmp_path)
    assert raised.value.path == overlap
    assert f"but {segments[index].name} already holds the log up to offset" in str(raised.value)
    assert files_of(tmp_path) == before
    with DiskLog(tmp_path, quarantine_and_continue=True) as log:
        assert read_all(log) == written and log.committed_loss is None
        assert [p.name for p in log.quarantined[0].files] == [overlap.name]


@pytest.mark.parametrize("which", ["first", "middle"])
def test_a_missing_segment_is_reported_by_the_log_with_the_offsets_and_the_files_around_it(tmp_path, which):
    written, segments, middle = committed_log(tmp_path)
    index = 0 if which == "first" else middle
    segments[index].unlink()
    start = int(segments[index].name.removesuffix(".log"))
    after = int(segments[index + 1].name.removesuffix(".log"))
    before = files_of(tmp_path)
    with pytest.raises(CommittedDataLoss) as raised:
        DiskLog(tmp_path)
    message = str(raised.value)
    assert message.startswith(f"{tmp_path}: DATA LOSS")
    assert f"offsets {start} to {after - 1} are missing" in message and segments[index + 1].name in message
    if which == "first":
        assert "between the log start (offset 0, recorded in committed-offset)" in message
    else:
        assert f"between {segments[index - 1].name} (which ends at offset {start})" in message
    assert files_of(tmp_path) == before
    with DiskLog(tmp_path, quarantine_and_continue=True) as log:
        assert read_all(log) == written[: start // 2] and log.committed_loss == range(start, 40)
        assert [p.name for p in log.quarantined[0].files] == [p.name for p in segments[index + 1 :]]
    assert reassembled(tmp_path, before) == segment_bytes_of(before)


def test_segments_left_by_an_interrupted_delete_before_are_kept(tmp_path):
    """delete_before records the new log start before deleting: a crash in between leaves old
    segments before the recorded start, which still join the log."""
    written, segments, _ = committed_log(tmp_path)
    saved = {p: p.read_bytes() for p in segments[:2]}
    with DiskLog(tmp_path) as log:
        log.delete_before(int(segments[2].name.removesuffix(".log")))
    for path, data in saved.items():
        path.write_bytes(data)
    with DiskLog(tmp_path) as log:
        assert log.recovery is None and log.quarantined == [] and read_all(log) == written


def test_a_batch_corrupted_after_opening_is_reported_by_path_when_read(tmp_path):
    build_log(tmp_path, [2, 2])
    with DiskLog(tmp_path) as log:
        segment = log.segment_files[0]
        data = bytearray(segment.read_bytes())
        data[-1] ^= 0x01
        segment.write_bytes(bytes(data))
        with pytest.raises(CorruptBatchError, match="CRC mismatch") as raised:
            read_all(log)
        assert raised.value.path == segment


def test_an_append_that_fails_leaves_no_partial_batch_and_stops_the_log(tmp_path, monkeypatch):
    written = build_log(tmp_path, [2, 2])
    log = DiskLog(tmp_path)

    real_write = os.write

    def disk_full(fd, data):
        real_write(fd, bytes(data[:10]))  # a partial write, then the error
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    with pytest.raises(StorageError, match="No space left on device") as raised:
        log.append(4, [b"x"])
    assert raised.value.path == log.segment_files[-1]
    monkeypatch.undo()
    with pytest.raises(StorageError, match="failed earlier"):
        log.append(4, [b"x"])
    log.close()
    with DiskLog(tmp_path) as log:
        assert log.recovery is None and read_all(log) == written  # the partial batch was cut off


# ---- the directory ------------------------------------------------------------------------


def test_a_missing_directory_is_created_and_a_file_in_its_place_is_named(tmp_path):
    with DiskLog(tmp_path / "a" / "b") as log:
        assert log.end_offset == 0 and read_all(log) == []
    (tmp_path / "file").write_text("")
    with pytest.raises(StorageError, match="file: the log directory is a file"):
        DiskLog(tmp_path / "file")
    with pytest.raises(StorageError, match="file: the snapshot directory is a file"):
        SnapshotStore(tmp_path / "file")


def test_one_open_log_per_directory(tmp_path):
    first = DiskLog(tmp_path)
    with pytest.raises(StorageError, match="in use"):
        DiskLog(tmp_path)
    first.close()
    with pytest.raises(StorageError, match="closed"):
        first.append(0, [b"x"])
    DiskLog(tmp_path).close()


def test_the_fsync_policy(tmp_path, monkeypatch):
    """Data is fsynced before the committed offset may cover it; the committed offset file is
    written before the first segment; a directory is fsynced after every file created, renamed
    or deleted in it, before the call returns; the new log start is durable before old segments
    are deleted; the committed offset and snapshots are written temporary file, fsync, rename,
    fsync directory."""
    events: list[tuple[str, str]] = []
    real_fsync, real_replace, real_open, real_unlink = os.fsync, os.replace, os.open, os.unlink

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(source, target):
        events.append(("rename", f"{Path(source).name} -> {Path(target).name}"))
        real_replace(source, target)

    def open_(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and not os.path.exists(path):
            events.append(("create", Path(path).name))
        return real_open(path, flags, *args, **kwargs)

    def unlink(path, *args, **kwargs):
        events.append(("unlink", Path(path).name))
        real_unlink(path, *args, **kwargs)

    log = DiskLog(tmp_path / "log", segment_bytes=100)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "unlink", unlink)
    directory, committed = str(tmp_path / "log"), str(tmp_path / "log" / "committed-offset")
    segment = str(tmp_path / "log" / segment_name(0))
    write_committed = [
        ("create", "committed-offset.tmp"),
        ("fsync", committed + ".tmp"),
        ("rename", "committed-offset.tmp -> committed-offset"),
        ("fsync", directory),
    ]
    log.append(0, [b"a"])
    assert events == write_committed + [("create", segment_name(0)), ("fsync", directory)]
    events.clear()
    log.sync()
    assert events == [("fsync", segment)]
    events.clear()
    log.append(1, [b"b"])
    log.sync()
    assert events == [("fsync", segment)]
    events.clear()
    log.write_committed_offset(2)
    assert events == write_committed
    events.clear()
    log.append(2, [b"c" * 90])  # rolls: the full segment is fsynced before the next is created
    assert events == [("fsync", segment), ("create", segment_name(2)), ("fsync", directory)]
    log.sync()
    events.clear()
    log.write_committed_offset(3)
    log.delete_before(2)  # the new log start is durable before the old segment goes
    assert events == write_committed + write_committed + [("unlink", segment_name(0)), ("fsync", directory)]
    events.clear()
    log.close()
    SnapshotStore(tmp_path / "snapshots").write(2, [b"a", b"b"])
    name = snapshot_name(2)
    assert events == [
        ("fsync", str(tmp_path)),  # the new snapshot directory
        ("fsync", str(tmp_path / "snapshots") + "/" + name + ".tmp"),
        ("rename", f"{name}.tmp -> {name}"),
        ("fsync", str(tmp_path / "snapshots")),
    ]
    events.clear()
    SnapshotStore(tmp_path / "new" / "snapshots")  # a new directory's entry is made durable in its parent
    assert events == [("fsync", str(tmp_path)), ("fsync", str(tmp_path / "new"))]


# ---- snapshots ------------------------------------------------------------------------------


def snapshot_frames(end_offset: int, count: int) -> list[bytes]:
    return [f"snapshot-{end_offset}-{i}".encode() + (b"\x00" * 150 if i % 7 == 0 else b"") for i in range(count)]


def test_a_snapshot_round_trips_in_batches(tmp_path):
    """LOG-11: a snapshot holds the frames it was given, in order, under its end offset."""
    store = SnapshotStore(tmp_path)
    frames = snapshot_frames(40, 25) + [b""]
    written = store.write(40, iter(frames), batch_records=4)
    assert written.path == tmp_path / "00000000000000000040.snapshot"
    loaded = store.load_newest()
    assert loaded is not None and loaded.end_offset == 40 and loaded.record_count == 26
    assert loaded.problems == () and store.problems == ()
    assert [len(b) for b in loaded.batches()] == [4, 4, 4, 4, 4, 4, 2]
    assert list(loaded.frames()) == frames


def test_an_empty_snapshot_is_valid(tmp_path):
    store = SnapshotStore(tmp_path)
    store.write(0, [])
    loaded = store.load_newest()
    assert loaded is not None and loaded.record_count == 0 and list(loaded.frames()) == []


def test_load_newest_picks_the_highest_end_offset_and_delete_older_than_keeps_the_rest(tmp_path):
    store = SnapshotStore(tmp_path)
    for end in (30, 10, 20):
        store.write(end, snapshot_frames(end, 3))
    assert [s.end_offset for s in store.list()] == [10, 20, 30]
    loaded = store.load_newest()
    assert loaded is not None and loaded.end_offset == 30 and list(loaded.frames()) == snapshot_frames(30, 3)
    assert [p.name for p in store.delete_older_than(30)] == [snapshot_name(10), snapshot_name(20)]
    assert [s.end_offset for s in store.list()] == [30]


def test_a_crash_before_the_rename_leaves_the_previous_snapshot_newest(tmp_path):
    store = SnapshotStore(tmp_path)
    store.write(10, snapshot_frames(10, 3))
    leftover = tmp_path / (snapshot_name(20) + ".tmp")
    leftover.write_bytes(b"KSS1 half written")
    loaded = store.load_newest()
    assert loaded is not None and loaded.end_offset == 10 and loaded.problems == ()
    reopened = SnapshotStore(tmp_path)
    assert reopened.removed_temporary_files == (leftover,) and not leftover.exists()
    assert [s.end_offset for s in reopened.list()] == [10]


def test_a_write_that_fails_leaves_no_file_and_the_previous_snapshot(tmp_path):
    store = SnapshotStore(tmp_path)
    store.write(10, snapshot_frames(10, 3))

    def failing_frames():
        yield b"first"
        raise RuntimeError("the state could not be read")

    with pytest.raises(RuntimeError):
        store.write(20, failing_frames())
    assert sorted(p.name for p in tmp_path.iterdir()) == [snapshot_name(10)]
    with pytest.raises(TypeError, match="frame 0 is a int"):
        store.write(20, [7])  # type: ignore[list-item]
    assert sorted(p.name for p in tmp_path.iterdir()) == [snapshot_name(10)]


def corrupt_newest(tmp_path: Path, damage) -> tuple[SnapshotStore, Path]:
    store = SnapshotStore(tmp_path)
    store.write(10, snapshot_frames(10, 5), batch_records=2)
    newest = store.write(20, snapshot_frames(20, 5), batch_records=2).path
    newest.write_bytes(damage(newest.read_bytes()))
    return store, newest


def flip(data: bytes, position: int) -> bytes:
    changed = bytearray(data)
    changed[position] ^= 0x01
    return bytes(changed)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda data: b"XXXX" + data[4:], "bad magic"),
        (lambda data: data[:-1], "truncated"),
        (lambda data: flip(data, len(data) - 1), "CRC mismatch"),
        (lambda data: flip(data, 12), "header CRC mismatch"),
        (lambda data: data[:20], "truncated"),
        (lambda data: data + b"\x00", "trailing bytes"),
    ],
    ids=["bad-magic", "truncated", "flipped-payload-byte", "flipped-header-byte", "cut-in-header", "trailing"],
)
def test_a_corrupt_newest_snapshot_is_reported_and_the_older_one_used(tmp_path, damage, reason):
    store, newest = corrupt_newest(tmp_path, damage)
    loaded = store.load_newest()
    assert loaded is not None and loaded.end_offset == 10 and list(loaded.frames()) == snapshot_frames(10, 5)
    [problem] = loaded.problems
    assert problem.path == newest and reason in problem.reason
    assert store.problems == loaded.problems and str(newest) in str(problem)


def test_a_snapshot_cut_at_any_byte_is_never_used(tmp_path, no_fsync):
    """Including a cut right after its last complete batch: the header's length and record
    count catch it."""
    store = SnapshotStore(tmp_path / "store")
    store.write(10, snapshot_frames(10, 3))
    newest = store.write(20, snapshot_frames(20, 9), batch_records=3).path
    for cut in reversed(range(newest.stat().st_size)):
        os.truncate(newest, cut)
        loaded = store.load_newest()
        assert loaded is not None and loaded.end_offset == 10, cut
        assert [p.path for p in loaded.problems] == [newest]
        assert loaded.problems[0].reason.startswith("truncated"), (cut, loaded.problems)


def test_a_flipped_byte_anywhere_in_a_snapshot_is_caught(tmp_path, no_fsync):
    store = SnapshotStore(tmp_path / "store")
    newest = store.write(20, snapshot_frames(20, 9), batch_records=3).path
    data = newest.read_bytes()
    with open(newest, "r+b") as f:
        for position in range(len(data)):
            os.pwrite(f.fileno(), bytes([data[position] ^ 0x01]), position)
            assert store.load_newest() is None, position
            [problem] = store.problems
            assert problem.path == newest
            os.pwrite(f.fileno(), data[position : position + 1], position)
    assert store.load_newest() is not None


@pytest.mark.parametrize(("promised", "reason"), [(7, "the header promises 7 records, the file holds 6"), (5, "more records")])
def test_a_header_whose_record_count_disagrees_with_the_batches_is_caught(tmp_path, promised, reason):
    store = SnapshotStore(tmp_path)
    path = store.write(10, snapshot_frames(10, 6), batch_records=2).path
    data = path.read_bytes()
    header = snapshot_store._snapshot_header(10, promised, len(data) - storage.SNAPSHOT_HEADER.size)
    path.write_bytes(header + data[len(header) :])
    assert store.load_newest() is None and reason in store.problems[0].reason


def test_no_valid_snapshot_gives_none_with_every_problem_listed(tmp_path):
    store = SnapshotStore(tmp_path)
    paths = [store.write(end, snapshot_frames(end, 2)).path for end in (10, 20)]
    for path in paths:
        path.write_bytes(path.read_bytes()[:-3])
    assert store.load_newest() is None
    assert [p.path for p in store.problems] == paths[::-1]  # newest first
    assert all("truncated" in p.reason for p in store.problems)


def test_a_snapshot_changed_after_validation_is_refused_while_read(tmp_path):
    store = SnapshotStore(tmp_path)
    path = store.write(10, snapshot_frames(10, 6), batch_records=2).path
    loaded = store.load_newest()
    assert loaded is not None
    path.write_bytes(flip(path.read_bytes(), len(path.read_bytes()) - 1))
    with pytest.raises(StorageError, match="changed after it was validated"):
        list(loaded.frames())


def test_a_snapshot_renamed_to_another_end_offset_is_refused(tmp_path):
    store = SnapshotStore(tmp_path)
    path = store.write(10, [b"a"]).path
    path.rename(tmp_path / snapshot_name(99))
    assert store.load_newest() is None
    assert "header says end offset 10, the file name 99" in store.problems[0].reason


# ---- start-up: snapshot, then the log after it --------------------------------------------


def test_rebuild_replays_the_newest_valid_snapshot_then_the_committed_log_after_it(tmp_path):
    """LOG-10, LOG-12: rebuild from the snapshot and the committed records after it; the
    uncommitted tail is not replayed."""
    written = build_log(tmp_path / "log", [2] * 10, segment_bytes=150, committed=16)
    snapshots = SnapshotStore(tmp_path / "snapshots")
    snapshots.write(8, [b"state-at-8"])
    with DiskLog(tmp_path / "log") as log:
        rebuild = plan_rebuild(log, snapshots)
        assert rebuild.snapshot is not None and rebuild.snapshot.end_offset == 8
        assert (rebuild.from_offset, rebuild.to_offset) == (8, 16)
        expected_log = [f for b in written if 8 <= b.base_offset < 16 for f in b.frames]
        assert list(rebuild.frames()) == [b"state-at-8"] + expected_log


def test_rebuild_without_a_snapshot_replays_the_log_from_zero(tmp_path):
    written = build_log(tmp_path / "log", [2, 3], committed=5)
    with DiskLog(tmp_path / "log") as log:
        rebuild = plan_rebuild(log, SnapshotStore(tmp_path / "snapshots"))
        assert rebuild.snapshot is None and list(rebuild.frames()) == written[0].frames + written[1].frames


def test_rebuild_refuses_when_the_fallback_snapshot_is_older_than_the_log(tmp_path):
    build_log(tmp_path / "log", [2] * 10, segment_bytes=100, committed=20)
    snapshots = SnapshotStore(tmp_path / "snapshots")
    snapshots.write(2, [b"old"])
    newest = snapshots.write(12, [b"new"]).path
    with DiskLog(tmp_path / "log") as log:
        log.delete_before(12)
        assert log.start_offset > 2
        newest.write_bytes(b"garbage")
        with pytest.raises(StorageError, match="are in neither") as raised:
            plan_rebuild(log, snapshots)
        assert str(newest) in str(raised.value) and f"({log.segment_files[0].name})" in str(raised.value)


def test_rebuild_refuses_a_log_that_starts_after_zero_without_a_snapshot(tmp_path):
    build_log(tmp_path / "log", [2] * 10, segment_bytes=100, committed=20)
    with DiskLog(tmp_path / "log") as log:
        log.delete_before(12)
        first = log.segment_files[0].name
        with pytest.raises(StorageError, match=f"\\({first}\\) and no valid snapshot covers records 0 to {log.start_offset - 1}"):
            plan_rebuild(log, SnapshotStore(tmp_path / "snapshots"))
