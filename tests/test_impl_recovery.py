"""impl on disk: a controller restarted on its metadata log directory comes back with exactly
the committed state (LOG-10, LOG-12), whatever a crash did to the uncommitted tail."""

import shutil

import pytest
from uuid import UUID


from kraftspec.impl.controller import Controller
from kraftspec.impl.storage import StorageError
from test_impl_storage import files_of
from kraftspec.impl.messages import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    CreateTopicsRequest,
    UnregisterBrokerRequest,
)

FEATURES = (BrokerRegistrationRequest.Feature(name="metadata.format", min_supported_version=1, max_supported_version=1),)


def registration(controller: Controller, broker_id: int):
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=controller.config.cluster_id, incarnation_id=UUID(int=100 + broker_id),
        current_metadata_offset=-1, features=FEATURES,
    )


def busy_cluster(directory) -> Controller:
    """Three brokers, unfenced, and a topic; everything committed, in a directory formatted for it."""
    controller = Controller.create(directory)
    for b in (1, 2, 3):
        controller.handle_request(registration(controller, b))
    controller.commit(controller.log_end_offset)
    for b in (1, 2, 3):
        epoch = controller.state.cluster.brokers[b].epoch
        controller.handle_request(BrokerHeartbeatRequest(broker_id=b, broker_epoch=epoch, current_metadata_offset=controller.committed_offset), 1)
    topic = CreateTopicsRequest.CreatableTopic(name="t", topic_id=UUID(int=9), num_partitions=3, replication_factor=3)
    controller.handle_request(CreateTopicsRequest(topics=(topic,)))
    controller.commit(controller.log_end_offset)
    return controller


def test_a_new_directory_is_formatted_and_a_restart_restores_the_committed_state(tmp_path):
    controller = busy_cluster(tmp_path)
    committed = list(controller.committed_records())
    controller.handle_request(UnregisterBrokerRequest(broker_id=1))  # uncommitted when we stop
    controller.close()
    restarted = Controller.open(tmp_path)
    assert list(restarted.committed_records()) == committed
    assert restarted.log_end_offset == restarted.committed_offset == controller.committed_offset
    assert 1 in restarted.state.cluster.brokers  # the uncommitted unregistration is gone
    assert set(restarted.leases.leases) == {1, 2, 3}  # LEASE-14: everyone gets a fresh lease
    restarted.close()


def test_a_crash_anywhere_in_the_last_batch_keeps_every_committed_record(tmp_path):
    """Cut the last batch (written and synced, never committed) at every byte position: every
    restart has exactly the committed state."""
    original = tmp_path / "original"
    controller = busy_cluster(original)
    committed = list(controller.committed_records())
    segment = sorted((original / "log").glob("*.log"))[-1]
    start = segment.stat().st_size  # where the last batch will begin
    controller.handle_request(UnregisterBrokerRequest(broker_id=2))
    controller.disk.sync()  # on disk, but never committed
    controller.close()
    data = segment.read_bytes()
    assert len(data) > start
    for cut in range(start, len(data) + 1):
        copy = tmp_path / "copy"
        shutil.copytree(original, copy, ignore=shutil.ignore_patterns(".lock"))
        (copy / "log" / segment.name).write_bytes(data[:cut])
        restarted = Controller.open(copy)
        assert list(restarted.committed_records()) == committed, cut
        assert restarted.log_end_offset == controller.committed_offset
        restarted.close()
        shutil.rmtree(copy)


def test_a_snapshot_and_the_log_after_it_give_the_same_state_and_a_corrupt_snapshot_is_skipped(tmp_path):
    """LOG-11, LOG-12; a corrupt newest snapshot is reported by path and reason."""
    controller = busy_cluster(tmp_path)
    controller.take_snapshot()
    first = controller.committed_offset
    controller.handle_request(UnregisterBrokerRequest(broker_id=3))
    controller.commit(controller.log_end_offset)
    controller.take_snapshot()
    committed = list(controller.committed_records())
    controller.close()
    restarted = Controller.open(tmp_path)
    assert list(restarted.committed_records()) == committed
    restarted.close()
    newest = sorted((tmp_path / "snapshots").glob("*.snapshot"))[-1]
    newest.write_bytes(newest.read_bytes()[:-3])
    fallback = Controller.open(tmp_path)
    assert list(fallback.committed_records()) == committed  # older snapshot + the log after it
    [problem] = fallback.startup["snapshot_problems"]
    assert str(newest) in str(problem.path) and problem.reason
    assert fallback.startup["snapshot"].name.startswith(f"{first:020d}")
    fallback.close()


def test_failover_truncates_the_tail_on_disk_too(tmp_path):
    controller = busy_cluster(tmp_path)
    end = controller.committed_offset
    controller.handle_request(UnregisterBrokerRequest(broker_id=1))
    controller.failover()
    assert controller.disk.end_offset == end
    controller.close()
    assert Controller.open(tmp_path).log_end_offset == end


def segment_bytes(directory) -> int:
    return sum(p.stat().st_size for p in (directory / "log").glob("*.log"))


@pytest.mark.parametrize("snapshot", [True, False])
def test_a_missing_committed_offset_file_deletes_nothing_and_keep_recovers_every_record(tmp_path, snapshot):
    """Without the file, which records were committed is unknown: the open refuses, naming the
    directory and the choices, and changes nothing; with committed_offset_missing="keep" every
    record stays, the snapshot's end offset (what the directory proves) counts as committed and
    the rest waits, uncommitted, for the next commit."""
    controller = busy_cluster(tmp_path)
    if snapshot:
        controller.take_snapshot()
    proven = controller.committed_offset if snapshot else 0
    controller.handle_request(UnregisterBrokerRequest(broker_id=3))
    controller.commit(controller.log_end_offset)
    committed = list(controller.committed_records())
    end = controller.log_end_offset
    controller.close()
    (tmp_path / "log" / "committed-offset").unlink()
    before = files_of(tmp_path)
    with pytest.raises(StorageError) as raised:
        Controller.open(tmp_path)
    assert str(tmp_path / "log" / "committed-offset") in str(raised.value)
    assert "committed_offset_missing='keep'" in str(raised.value)
    assert files_of(tmp_path) == before
    restarted = Controller.open(tmp_path, committed_offset_missing="keep")
    assert files_of(tmp_path) == before  # not a byte deleted
    assert restarted.committed_offset == proven and restarted.log_end_offset == end
    assert restarted.startup["uncommitted_kept"] == range(proven, end)
    assert restarted.startup["committed_offset_known"] is False
    assert 3 not in restarted.state.cluster.brokers  # the kept records are in the in-memory state
    restarted.commit(end)  # the quorum says they were committed
    assert list(restarted.committed_records()) == committed
    restarted.close()
    reopened = Controller.open(tmp_path)  # the file is back
    assert list(reopened.committed_records()) == committed and reopened.log_end_offset == end
    reopened.close()


def test_a_failover_with_the_committed_offset_unknown_sets_the_tail_aside(tmp_path):
    controller = busy_cluster(tmp_path)
    controller.close()
    (tmp_path / "log" / "committed-offset").unlink()
    before = segment_bytes(tmp_path)
    restarted = Controller.open(tmp_path, committed_offset_missing="keep")
    restarted.failover()
    [aside] = restarted.disk.quarantined
    restarted.close()
    assert segment_bytes(tmp_path) + sum(p.stat().st_size for p in aside.files) == before


def test_an_empty_stray_segment_file_loses_no_committed_record(tmp_path):
    """A stray empty segment is not a gap: every record is kept, and the file is set aside."""
    controller = busy_cluster(tmp_path)
    committed = list(controller.committed_records())
    controller.close()
    stray = tmp_path / "log" / f"{5:020d}.log"
    stray.touch()
    restarted = Controller.open(tmp_path)
    assert list(restarted.committed_records()) == committed
    [aside] = restarted.startup["quarantined"]
    assert aside.files == (tmp_path / "log" / "quarantine" / "0001" / stray.name,) and not stray.exists()
    restarted.close()


def test_a_damaged_directory_is_refused_with_the_lock_released(tmp_path):
    """A refused open names what is wrong and leaves the directory free for the next attempt."""
    controller = busy_cluster(tmp_path)
    controller.take_snapshot()
    controller.close()
    shutil.rmtree(tmp_path / "log")
    for _ in range(2):
        with pytest.raises(StorageError, match="past the log end offset 0"):
            Controller.open(tmp_path)


def test_a_missing_first_segment_is_refused_by_name(tmp_path):
    controller = busy_cluster(tmp_path)
    controller.close()
    first = sorted((tmp_path / "log").glob("*.log"))[0]
    first.rename(first.with_name(f"{1:020d}.log"))  # the log no longer starts at 0
    with pytest.raises(StorageError, match="DATA LOSS") as raised:
        Controller.open(tmp_path)
    assert f"offsets 0 to 0 are missing: no segment file holds them, between the log start (offset 0, recorded in committed-offset) and {1:020d}.log" in str(raised.value)


def test_the_offset_a_broker_must_reach_to_be_caught_up_survives_a_failover_and_a_restart(tmp_path):
    """LEASE-9, REG-6, REG-9 (kafka profile): a new incarnation replacing an unfenced one gets the
    offset where its batch begins as its epoch; its RegisterBrokerRecord comes after the partition
    changes, and the broker is caught up only once it has applied that record, also after a failover
    and after a restart on the directory, which read the record's offset from the log."""
    from kraftspec.impl.config import ControllerConfig

    config = ControllerConfig.for_profile("kafka")
    controller = Controller.create(tmp_path, config)
    features = tuple(BrokerRegistrationRequest.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
                     for n, lo, hi in config.finalized_features)

    def register(b: int, generation: int = 0):
        return controller.handle_request(BrokerRegistrationRequest(
            broker_id=b, cluster_id=config.cluster_id, incarnation_id=UUID(int=100 * generation + b),
            current_metadata_offset=-1, features=features))

    def heartbeat(c: Controller, b: int, applied: int):
        epoch = c.state.cluster.brokers[b].epoch
        return c.handle_request(BrokerHeartbeatRequest(broker_id=b, broker_epoch=epoch, current_metadata_offset=applied), 1)

    for b in (1, 2):
        register(b)
    controller.commit(controller.log_end_offset)
    for b in (1, 2):
        heartbeat(controller, b, controller.committed_offset - 1)  # the kafka profile's unit: the highest applied
    topic = CreateTopicsRequest.CreatableTopic(name="t", topic_id=UUID(int=9), num_partitions=2, replication_factor=2)
    controller.handle_request(CreateTopicsRequest(topics=(topic,)))
    controller.commit(controller.log_end_offset)
    controller.tick(config.session_timeout_ms + 1)  # broker 2's session lapses; the scan has not fenced it
    assert not controller.state.cluster.brokers[2].fenced
    begins = controller.log_end_offset
    outcome = register(2, generation=1)
    (base, records), = outcome.batches
    assert base == begins and len(records) > 1  # the old incarnation leaves its ISRs first
    record = begins + len(records) - 1
    assert controller.state.cluster.brokers[2].epoch == begins
    controller.commit(controller.log_end_offset)

    def caught_up(c: Controller, applied: int) -> bool:
        """IsCaughtUp of broker 2's heartbeat, released once its batch (if any) commits."""
        replies = heartbeat(c, 2, applied).replies or c.commit(c.log_end_offset).replies
        reply, = replies
        return reply.response.is_caught_up

    assert not caught_up(controller, record - 1) and caught_up(controller, record)
    controller.failover()
    assert not caught_up(controller, record - 1) and caught_up(controller, record)
    controller.close()
    restarted = Controller.open(tmp_path, config)
    assert restarted.state.cluster.record_offsets[2] == record
    assert not caught_up(restarted, record - 1) and caught_up(restarted, record)
    restarted.close()
