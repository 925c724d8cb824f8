"""The metrics of a ``kraftspec conform`` run, in Prometheus' text format: its progress (traces done
and failed, events, events per second) and the controller metrics of spec/operations.md (METRIC-1
to METRIC-6) summed over the traces replayed, served over HTTP while it runs (``--metrics-port``)
and written to ``metrics.prom`` in its output folder at the end.

While the run goes, each Spark task adds its rows to accumulators (:class:`Tap`), which reach the
driver as each task ends: the figures move a task at a time, and a task Spark runs twice counts
twice until the end. At the end :meth:`ConformMetrics.finish` replaces them with the exact figures
of the summary and of one aggregation of the results.

The controller metrics come from the adapter, when it reports them: impl (the default adapter)
does; the model, Kafka and subprocess servers do not, and the run then serves no controller
figures. Gauges that are not counts (the latest commit latency, the commit rate) do not add up
across traces, which each run a clock of their own; the sums are of the others.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

from kraftspec.metrics import controller_families, exposition, registry_of, serve, stop

SUMMED = ("metadata_lag", "metadata_commit_latency_ms_count", "metadata_commit_latency_ms_sum", "metadata_committed_records",
          "metadata_snapshot_offset_lag", "registered_brokers", "fenced_brokers", "active_brokers", "leaderless_partitions")
"""The controller metrics that add up over traces."""

PREFIX = "kraftspec_conform_"


def add_option(parser) -> None:
    """``--metrics-port``, for ``kraftspec conform``."""
    from kraftspec.cli import bounded

    parser.add_argument("--metrics-port", type=bounded("--metrics-port", 0, 65535), default=0, metavar="PORT",
                        help="serve the run's metrics (traces done and failed, events, events per second, and the "
                        "controller metrics summed over the traces) in Prometheus' text format at "
                        "http://127.0.0.1:PORT/metrics while it runs (default 0: not served); they are written to "
                        "OUT/metrics.prom at the end either way")


class DictSum:
    """A Spark accumulator of sums by name (pyspark's AccumulatorParam protocol)."""

    def zero(self, value: dict[str, float]) -> dict[str, float]:
        return {}

    def addInPlace(self, total: dict[str, float], more: dict[str, float]) -> dict[str, float]:  # noqa: N802 - pyspark's name
        for name, value in more.items():
            total[name] = total.get(name, 0.0) + value
        return total


class Tap:
    """Run in each Spark task on each result row: adds it to the run's accumulators, returns it unchanged."""

    def __init__(self, progress, controller) -> None:
        self.progress = progress  # traces, failed, events
        self.controller = controller  # controller metrics summed, and the traces that reported them

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        self.progress.add({"traces": 1.0, "failed": 0.0 if row["passed"] else 1.0, "events": float(row["events"])})
        metrics = row.get("controller_metrics")
        if metrics:
            self.controller.add({**{name: metrics[name] for name in SUMMED if name in metrics}, "traces": 1.0})
        return row


class ConformMetrics:
    """The run's figures: live from the accumulators, exact once :meth:`finish` has been called."""

    def __init__(self, spark, traces: int) -> None:
        self.traces = traces
        self.started = time.perf_counter()
        self.progress = spark.sparkContext.accumulator({}, DictSum())
        self.controller = spark.sparkContext.accumulator({}, DictSum())
        self.tap = Tap(self.progress, self.controller)
        self.final: tuple[dict[str, float], dict[str, float], float] | None = None
        self.lock = threading.Lock()
        self.registry = registry_of(self.families)
        self.server: tuple[Any, Any] | None = None

    def figures(self) -> tuple[dict[str, float], dict[str, float], float]:
        """(progress, controller sums, events per second): the final ones, or the live ones."""
        with self.lock:
            if self.final is not None:
                return self.final
        progress, controller = dict(self.progress.value), dict(self.controller.value)
        elapsed = time.perf_counter() - self.started
        return progress, controller, progress.get("events", 0.0) / elapsed if elapsed > 0 else 0.0

    def families(self):
        from prometheus_client.core import GaugeMetricFamily

        progress, controller, rate = self.figures()
        finished = 1.0 if self.final is not None else 0.0
        yield GaugeMetricFamily(PREFIX + "traces", "Traces the run replays", value=self.traces)
        yield GaugeMetricFamily(PREFIX + "traces_done", "Traces replayed so far (by the Spark tasks that have ended)",
                                value=progress.get("traces", 0.0))
        yield GaugeMetricFamily(PREFIX + "traces_failed", "Traces that diverged so far", value=progress.get("failed", 0.0))
        yield GaugeMetricFamily(PREFIX + "events", "Events replayed so far", value=progress.get("events", 0.0))
        yield GaugeMetricFamily(PREFIX + "events_per_second", "Events replayed a second of the run so far", value=rate)
        yield GaugeMetricFamily(PREFIX + "finished", "1 once the run has ended and these figures are final", value=finished)
        reported = controller.get("traces")
        if reported:
            yield GaugeMetricFamily(PREFIX + "controller_traces", "Traces whose controller reported its metrics",
                                    value=reported)
            summed = {name: controller.get(name, 0.0) for name in SUMMED}
            yield from controller_families(summed, prefix=PREFIX + "controller_",
                                           about=", summed over the traces, each at its end")

    def serve(self, port: int) -> None:
        """Serve /metrics on 127.0.0.1:port (0: not at all); says where on standard error."""
        if port:
            self.server = serve(self.registry, port)
            print(f"kraftspec conform: metrics at http://127.0.0.1:{self.server[0].server_port}/metrics",
                  file=sys.stderr, flush=True)

    def finish(self, summary, results, out: Path) -> Path:
        """The exact figures, from the summary and one aggregation of the results; writes OUT/metrics.prom."""
        from pyspark.sql import functions as F

        sums = (results.where("controller_metrics IS NOT NULL")
                .select(F.explode("controller_metrics").alias("name", "value"))
                .groupBy("name").agg(F.sum("value").alias("total")).collect())
        controller = {row["name"]: row["total"] for row in sums if row["name"] in SUMMED}
        reported = results.where("controller_metrics IS NOT NULL").count()
        if reported:
            controller["traces"] = float(reported)
        progress = {"traces": float(summary.traces), "failed": float(summary.failed), "events": float(summary.events)}
        rate = summary.events / summary.seconds if summary.seconds else 0.0
        with self.lock:
            self.final = (progress, controller, rate)
        path = out / "metrics.prom"
        path.write_text(exposition(self.registry), encoding="utf-8")
        return path

    def close(self) -> None:
        if self.server is not None:
            stop(*self.server)
            self.server = None
