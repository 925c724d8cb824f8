"""The controller's metrics, METRIC-1 to METRIC-6: impl's values (impl/metrics.py, kept as the
controller appends, commits, fails over and snapshots) equal the model's definitions
(model/metrics.py) after every event, on hand-made scenarios with known values and on simulated
stories in both profiles."""

from __future__ import annotations

import pytest

from cluster import Cluster
from kraftspec.conformance.lockstep import Lockstep
from kraftspec.conformance.simulation import Simulation
from kraftspec.model import Config, step
from kraftspec.model.metrics import RATE_WINDOW_MS, CommitClock, metrics_of, observe
from kraftspec.spec.profiles import profile_names


class MeteredCluster(Cluster):
    """A model cluster whose every event also goes to impl (in lockstep); :meth:`metrics` checks
    that both report the same values and returns them."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.pair = Lockstep(self.state.config)
        self.clock = CommitClock()

    def send(self, event):
        before = self.state
        result = super().send(event)
        self.clock = observe(self.clock, before, result)
        differences = self.pair.send(event)
        assert not differences, differences
        return result

    def metrics(self) -> dict:
        model = metrics_of(self.state, self.clock).as_dict()
        impl = self.pair.impl.metrics.values(self.pair.impl)
        assert impl == model
        return model


@pytest.fixture(params=profile_names())
def cluster(request) -> MeteredCluster:
    return MeteredCluster(profile=request.param)


def test_metric_1_metadata_lag_counts_replayed_records_not_yet_committed(cluster):
    """METRIC-1."""
    assert cluster.metrics()["metadata_lag"] == 0
    end = cluster.state.log_end_offset
    cluster.register(1, commit=False)
    appended = cluster.state.log_end_offset - end
    assert appended > 0 and cluster.metrics()["metadata_lag"] == appended
    cluster.register(2, commit=False)
    assert cluster.metrics()["metadata_lag"] == cluster.state.log_end_offset - end
    cluster.commit()
    assert cluster.metrics()["metadata_lag"] == 0
    cluster.register(3, commit=False)
    cluster.failover()  # the uncommitted registration is undone
    assert cluster.metrics()["metadata_lag"] == 0


def test_metric_2_commit_latency_is_commit_time_minus_append_time_in_the_controllers_clock(cluster):
    """METRIC-2: the bootstrap batch is not observed; a batch undone by a failover is not either."""
    assert cluster.metrics()["metadata_commit_latency_ms_count"] == 0
    cluster.register(1, commit=False)
    cluster.tick(700)
    cluster.commit()
    m = cluster.metrics()
    assert (m["metadata_commit_latency_ms_count"], m["metadata_commit_latency_ms_sum"], m["metadata_commit_latency_ms_latest"]) == (1, 700, 700)
    cluster.register(2, commit=False)
    cluster.tick(900)
    cluster.register(3, commit=False)
    cluster.tick(1000)
    cluster.commit()  # two batches: 300 ms and 100 ms
    m = cluster.metrics()
    assert (m["metadata_commit_latency_ms_count"], m["metadata_commit_latency_ms_sum"], m["metadata_commit_latency_ms_latest"]) == (3, 1100, 100)
    cluster.register(4, commit=False)
    cluster.failover()
    cluster.commit()
    assert cluster.metrics()["metadata_commit_latency_ms_count"] == 3


def test_metric_3_commit_rate_counts_the_records_of_the_last_minute(cluster):
    """METRIC-3: and the total since the controller became active."""
    cluster.register(1, commit=False)
    records = cluster.metrics()["metadata_lag"]
    cluster.tick(1000)
    cluster.commit()
    m = cluster.metrics()
    assert m["metadata_commit_rate_per_sec"] == pytest.approx(records / 60) and m["metadata_committed_records"] == records
    cluster.tick(1000 + RATE_WINDOW_MS - 1)
    assert cluster.metrics()["metadata_commit_rate_per_sec"] == pytest.approx(records / 60)
    cluster.tick(1000 + RATE_WINDOW_MS)  # the commit leaves the window (the lapsed lease's fencing has not committed)
    m = cluster.metrics()
    assert m["metadata_commit_rate_per_sec"] == 0 and m["metadata_committed_records"] == records


def test_metric_4_snapshot_offset_lag(cluster):
    """METRIC-4: the committed offset itself without a snapshot."""
    cluster.start_brokers(1, 2)
    assert cluster.metrics()["metadata_snapshot_offset_lag"] == cluster.state.committed_offset > 0
    cluster.snapshot()
    assert cluster.metrics()["metadata_snapshot_offset_lag"] == 0
    at = cluster.state.committed_offset
    cluster.register(3)
    assert cluster.metrics()["metadata_snapshot_offset_lag"] == cluster.state.committed_offset - at > 0


def test_metric_5_registered_fenced_and_active_brokers(cluster):
    """METRIC-5: counted in the in-memory image, uncommitted registrations included."""
    cluster.start_brokers(1, 2)
    m = cluster.metrics()
    assert (m["registered_brokers"], m["fenced_brokers"], m["active_brokers"]) == (2, 0, 2)
    cluster.register(3, commit=False)
    m = cluster.metrics()
    assert (m["registered_brokers"], m["fenced_brokers"], m["active_brokers"]) == (3, 1, 2)


def test_metric_6_partitions_without_a_leader(cluster):
    """METRIC-6: a partition whose only replica is fenced has no leader."""
    cluster.start_brokers(1, 2)
    cluster.create_topic("solo", assignment=[[1], [2]])
    assert cluster.metrics()["leaderless_partitions"] == 0
    cluster.heartbeat(1, want_fence=True)
    cluster.commit()
    assert cluster.state.image.brokers[1].fenced
    assert cluster.metrics()["leaderless_partitions"] == 1


@pytest.mark.parametrize("seed", range(6))
def test_metric_1_to_metric_6_impl_equals_the_model_after_every_event_of_a_story(seed):
    """METRIC-1, METRIC-2, METRIC-3, METRIC-4, METRIC-5, METRIC-6: simulated stories (commits,
    ticks, failovers, snapshots, fencing) in both profiles."""
    config = Config.for_profile(profile_names()[seed % len(profile_names())])
    pair = Lockstep(config)
    simulation = Simulation(seed, broker_count=4, partition_count=3)
    simulation.state = pair.model
    clock = CommitClock()
    nonzero: set[str] = set()
    for happening in simulation.run(200):
        before = pair.model
        result = step(before, happening.event)
        assert not pair.send(happening.event)
        clock = observe(clock, before, result)
        model = metrics_of(pair.model, clock).as_dict()
        assert pair.impl.metrics.values(pair.impl) == model, f"seed {seed} step {happening.number}: {happening.event!r}"
        nonzero |= {name for name, value in model.items() if value}
        simulation.state = pair.model
    assert {"metadata_lag", "metadata_commit_latency_ms_sum", "metadata_commit_rate_per_sec", "registered_brokers"} <= nonzero
