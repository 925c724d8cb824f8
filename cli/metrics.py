"""The controller's metrics (spec/operations.md, METRIC-1 to METRIC-6) in Prometheus' text format,
and ``kraftspec metrics DIR``: the metrics a metadata log directory gives at rest.

Values come in as a dict under the names model/metrics.py's ``Metrics`` and impl/metrics.py give
them (``metadata_lag``, ...); :func:`controller_families` turns them into metric families, which a
:class:`FamiliesCollector` serves from a registry of its own (never prometheus_client's global one).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # prometheus_client is imported when metrics are made, not for every command's start
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import Metric

PREFIX = "kraftspec_"

GAUGES = {
    # value name: (metric name without the prefix, help)
    "metadata_lag": ("metadata_lag", "MetadataLag (METRIC-1): records the controller has replayed that have not committed "
                     "(log end offset minus committed offset)"),
    "metadata_commit_latency_ms_latest": ("metadata_commit_latency_latest_ms", "MetadataCommitLatencyMs (METRIC-2) of the "
                                          "latest batch committed, in the controller's clock"),
    "metadata_commit_rate_per_sec": ("metadata_commit_rate_per_sec", "MetadataCommitRatePerSec (METRIC-3): records committed "
                                     "in the last 60 s of the controller's clock, per second"),
    "metadata_snapshot_offset_lag": ("metadata_snapshot_offset_lag", "MetadataSnapshotOffsetLag (METRIC-4): committed offset "
                                     "minus the latest snapshot's end offset (the committed offset without a snapshot)"),
    "registered_brokers": ("registered_brokers", "Registered brokers (METRIC-5)"),
    "fenced_brokers": ("fenced_brokers", "Registered brokers that are fenced (METRIC-5)"),
    "active_brokers": ("active_brokers", "Registered brokers that are not fenced (METRIC-5)"),
    "leaderless_partitions": ("leaderless_partitions", "Partitions whose leader is -1 (METRIC-6)"),
    "committed_offset": ("metadata_committed_offset", "The committed offset (every record below it is committed)"),
    "log_end_offset": ("metadata_log_end_offset", "One past the last record of the log"),
}
NEEDS_A_RUNNING_CONTROLLER = ("metadata_commit_latency_ms", "metadata_commit_rate_per_sec", "metadata_committed_records")


def controller_families(values: Mapping[str, float | None], prefix: str = PREFIX, about: str = "") -> list[Metric]:
    """The families of the values given (a value that is absent or None gives none); ``about`` is
    added to each help text."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily

    families: list[Metric] = []
    for key, (name, text) in GAUGES.items():
        value = values.get(key)
        if value is not None:
            families.append(GaugeMetricFamily(prefix + name, text + about, value=value))
    count = values.get("metadata_commit_latency_ms_count")
    if count is not None:  # a count of batches, whole even when summed as floats (the exposition writes both alike)
        families.append(SummaryMetricFamily(
            prefix + "metadata_commit_latency_ms",
            "MetadataCommitLatencyMs (METRIC-2): commit time minus append time of each committed batch, in the "
            "controller's clock" + about,
            count_value=int(count), sum_value=values.get("metadata_commit_latency_ms_sum") or 0))
    if values.get("metadata_committed_records") is not None:
        families.append(CounterMetricFamily(
            prefix + "metadata_committed_records", "Records committed since the controller became active (METRIC-3)" + about,
            value=values["metadata_committed_records"]))
    return families


class FamiliesCollector:
    """A collector (prometheus_client's protocol) that asks ``families()`` for its families at every scrape."""

    def __init__(self, families: Callable[[], Iterable[Metric]]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return list(self.families())


def registry_of(families: Callable[[], Iterable[Metric]]) -> CollectorRegistry:
    """A registry of its own (not prometheus_client's global one) that serves ``families()``."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(FamiliesCollector(families))
    return registry


def exposition(registry: CollectorRegistry) -> str:
    from prometheus_client.exposition import generate_latest

    return generate_latest(registry).decode("utf-8")


def serve(registry: CollectorRegistry, port: int, host: str = "127.0.0.1"):
    """Serve ``registry`` at http://host:port/metrics (port 0: a free port) from a daemon thread; the
    server (``server.server_port`` is its port) and the thread. ``stop(server, thread)`` ends it."""
    from prometheus_client import start_http_server

    return start_http_server(port, addr=host, registry=registry)


def stop(server: Any, thread: Any) -> None:
    server.shutdown()
    server.server_close()
    thread.join()


# ---- kraftspec metrics DIR ---------------------------------------------------------------------------


def directory_values(path: str, profile: str | None = None) -> dict[str, float | None]:
    """The metrics a metadata log directory (or a snapshot file) gives at rest: the counts of its
    replayed state (METRIC-5, METRIC-6), and the lags its offsets give (METRIC-1, METRIC-4)."""
    from kraftspec.metadata_source import load
    from kraftspec.model.records import NO_LEADER

    loaded = load(path, profile)
    brokers = loaded.image.brokers
    fenced = sum(1 for b in brokers.values() if b.fenced)
    return {
        "metadata_lag": loaded.log_end_offset - loaded.committed_offset,
        "metadata_snapshot_offset_lag": loaded.committed_offset - (loaded.snapshot_end_offset or 0),
        "registered_brokers": len(brokers),
        "fenced_brokers": fenced,
        "active_brokers": len(brokers) - fenced,
        "leaderless_partitions": sum(1 for p in loaded.image.partitions.values() if p.leader == NO_LEADER),
        "committed_offset": loaded.committed_offset,
        "log_end_offset": loaded.log_end_offset,
    }


def add_parser(commands) -> None:
    from kraftspec.spec.profiles import profile_names

    metrics = commands.add_parser(
        "metrics",
        help="print the controller metrics a metadata log directory gives, in Prometheus' text format",
        description="Read a metadata log directory written by kraftspec's controller or Apache Kafka's "
        "__cluster_metadata-0 (or a snapshot file of either) without "
        "changing it, and print in Prometheus' text format the metrics it gives at rest: MetadataLag (records "
        "after the committed offset, not yet committed), MetadataSnapshotOffsetLag, the registered, fenced and "
        "active brokers and the partitions without a leader of its committed state, and its committed and log "
        "end offsets. MetadataCommitLatencyMs, MetadataCommitRatePerSec and the count of records committed "
        "need a running controller, which measures them in its own clock: a directory does not record when its "
        "batches were appended or committed, so they are not printed. Exit status: 0, or 2 when the directory "
        "cannot be read.",
    )
    metrics.add_argument("directory", metavar="DIR", help="a metadata log directory, or a snapshot file")
    metrics.add_argument("--profile", choices=profile_names(), default=None, metavar="NAME",
                         help=f"the behaviour profile whose record formats it holds ({', '.join(profile_names())}; "
                         "default: the one whose frame type the first record carries)")


def run(args) -> int:
    from kraftspec.metadata_source import SourceError

    try:
        values = directory_values(args.directory, args.profile)
    except SourceError as error:
        print(f"kraftspec metrics: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(exposition(registry_of(lambda: controller_families(values))))
    return 0
