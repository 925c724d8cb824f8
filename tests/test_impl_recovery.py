"""impl on disk: a controller restarted on its metadata log directory comes back with exactly
the committed state (LOG-10, LOG-12), whatever a crash did to the uncommitted tail."""

import shutil
from uuid import UUID


from kraftspec.impl.controller import Controller
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
    """Three brokers, unfenced, and a topic; everything committed."""
    controller = Controller.open(directory)
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
