"""Which row of the divergence ledger (spec/kafka.md, part B) explains where a trace parts from
Apache Kafka: so that a run of thousands of random walks against Kafka says, for every trace that
fails, which known difference it hit, and lists the ones no row explains.

    python -m kraftspec.conformance.kafka_causes WALKS_DIR [--adapter kafka:4.4.0] [--level records]
        [--json causes.json]

Each row has a signature: a test of the trace and of its first divergence that holds when that
difference is what the replay ran into. The signatures are checked in the ledger's order and the
first that holds names the cause. A failure that none explains is ``unexplained``: a difference the
ledger does not know yet, to be shrunk (``kraftspec shrink``) and written down.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from attrs import frozen

from kraftspec.model import initial_state
from kraftspec.model import step as model_step

from .adapters import model_config, model_event
from .replay import Divergence, replay
from .subprocess_adapter import adapter_from_spec
from .trace import LEVELS, Trace, TraceError, read_all

DUPLICATE_BROKER_REGISTRATION = 101
INVALID_REGISTRATION = 119  # Kafka's code (B4)
NEW_LEADER_ELECTED = 108  # Kafka's code for ISR-10's case (B9)
FENCE = 1


@frozen
class Row:
    """A ledger row and the signature of the divergences it explains."""

    row: str
    summary: str
    matches: Callable[[Trace, Divergence], bool]


def _requests(trace: Trace, upto: int, api: str) -> Iterable[dict[str, Any]]:
    """The bodies of the ``api`` requests of the trace's first ``upto + 1`` steps."""
    for step in trace.steps[: upto + 1]:
        if step.event.get("kind") == "request" and step.event.get("api") == api:
            yield step.event["body"]


def _negative_broker_id(trace: Trace, d: Divergence) -> bool:
    """B1: a broker registered with a negative id before the traces part."""
    return any(body["BrokerId"] < 0 for body in _requests(trace, d.step, "BrokerRegistration"))


def _reregistration_after_shutdown(trace: Trace, d: Divergence) -> bool:
    """B2 (KAFKA-19047): Kafka refuses DUPLICATE_BROKER_REGISTRATION a new incarnation of a broker
    that was answered ShouldShutDown, where the trace expects it registered."""
    if d.part != "replies" or d.event.get("api") != "BrokerRegistration" and not _any_reply(d.actual, "BrokerRegistration"):
        return False
    refused = [r for r in d.actual or () if r.get("api") == "BrokerRegistration"
               and r["body"].get("ErrorCode") == DUPLICATE_BROKER_REGISTRATION]
    if not refused:
        return False
    heartbeats = {step.seq: step for step in trace.steps[: d.step] if step.event.get("api") == "BrokerHeartbeat"}
    # let go: a heartbeat answered ShouldShutDown (released then or later), or one that asked to shut
    # down and was granted in a batch not committed yet (ShouldShutDown comes with the fencing, SHUT-6)
    let_go = {heartbeats[reply["seq"]].event["body"]["BrokerId"] for step in trace.steps for reply in step.replies
              if reply["seq"] in heartbeats and reply["body"].get("ShouldShutDown")}
    asked = set()  # brokers that have asked to shut down: a later fencing heartbeat is the grant
    for step in heartbeats.values():
        broker = step.event["body"]["BrokerId"]
        asked |= {broker} if step.event["body"].get("WantShutDown") else set()
        if broker in asked and broker in _fences(step.records):
            let_go.add(broker)
    return any(_broker_of(trace, r["seq"]) in let_go for r in refused)


def _any_reply(replies: Any, api: str) -> bool:
    return any(r.get("api") == api for r in replies or ())


def _broker_of(trace: Trace, seq: int) -> int | None:
    """The BrokerId of the request numbered ``seq``."""
    for step in trace.steps:
        if step.seq == seq:
            return step.event["body"].get("BrokerId")
    return None


def _fences(records: Any) -> list[int]:
    """The broker ids the records fence, in order, in either profile's record formats."""
    fenced = []
    for r in records or ():
        data = r.get("data", {})
        if r.get("type") == "FenceBrokerRecord" or (
                r.get("type") == "BrokerRegistrationChangeRecord" and data.get("Fenced") == FENCE):
            fenced.append(data.get("BrokerId", data.get("Id")))
    return fenced


def _offset_below_minus_one(trace: Trace, d: Divergence) -> bool:
    """B5: a registration whose CurrentMetadataOffset is below -1 (Kafka's request has no such field)."""
    return any(body.get("CurrentMetadataOffset", -1) < -1 for body in _requests(trace, d.step, "BrokerRegistration"))


def _no_finalized_features(trace: Trace, d: Divergence) -> bool:
    """B21: a cluster that finalizes no features, which the adapter cannot give Kafka."""
    return not trace.header.config.get("finalized_features")


def _range_below_zero(trace: Trace, d: Divergence) -> bool:
    """B22: a registration whose supported range of a feature starts below 0."""
    return any(f.get("MinSupportedVersion", 0) < 0
               for body in _requests(trace, d.step, "BrokerRegistration") for f in body.get("Features") or ())


def _invalid_registration(trace: Trace, d: Divergence) -> bool:
    """B4: a registration that does not list metadata.version, in a kip-631 trace (whose
    metadata.format Kafka sees as metadata.version): Kafka answers INVALID_REGISTRATION, kraftspec
    UNSUPPORTED_VERSION for the unlisted metadata.format."""
    return d.part == "replies" and any(
        r.get("api") == "BrokerRegistration" and r["body"].get("ErrorCode") == INVALID_REGISTRATION for r in d.actual or ())



def _entries(replies: Any) -> Iterable[tuple[str, dict[str, Any]]]:
    """(topic name, partition) of each entry of ListPartitionReassignments answers, in their order."""
    for r in replies or ():
        for t in r.get("body", {}).get("Topics") or ():
            for p in t.get("Partitions") or ():
                yield t.get("Name"), p


def _listed(replies: Any) -> list[str]:
    """The entries of ListPartitionReassignments answers, in their order, each as a JSON text."""
    return [json.dumps([name, p], sort_keys=True) for name, p in _entries(replies)]


def _listing(d: Divergence) -> bool:
    return d.part == "replies" and d.event.get("api") == "ListPartitionReassignments"


def _adding_kept(trace: Trace, d: Divergence) -> bool:
    """B12: a reassignment replaced by one that adds no replica keeps the first one's
    AddingReplicas in Kafka (the record leaves the list out, or there is no record when nothing else
    changes), where kraftspec empties it."""
    if d.part == "records" and d.event.get("api") == "AlterPartitionReassignments":
        emptied = [e for e in d.expected or () if e.get("data", {}).get("AddingReplicas") == []]
        if emptied and not d.actual:
            return True
        return any(e.get("data", {}).get("AddingReplicas") == [] and a.get("data", {}).get("AddingReplicas") is None
                   for e, a in zip(d.expected or (), d.actual or (), strict=False))
    if d.part == "replies" and d.event.get("api") == "AlterPartitionReassignments":
        return bool(d.actual) and not d.expected  # Kafka wrote nothing, so it answered at once
    if _listing(d):  # Kafka lists a partition with a broker both adding and removing
        return any(set(p.get("AddingReplicas") or ()) & set(p.get("RemovingReplicas") or ()) for _, p in _entries(d.actual))
    return False


def _kafkas_listing(trace: Trace, d: Divergence) -> list[str]:
    """The entries Kafka's controller lists for the step's ListPartitionReassignments, as _listed gives
    them: the topics at the committed offset (those reassigning there, or those the request names),
    each looked up again, with its partitions, in the uncommitted state, as the model holds both
    before the step."""
    config = model_config(trace.header.config)
    state = initial_state(config)
    for s in trace.steps[: d.step]:
        state = model_step(state, model_event(s.event, config.params.rpc_formats)).state
    committed, live = state.committed_image, state.image
    asked = d.event.get("body", {}).get("Topics")
    if asked is None:
        topics = [(tid, [p.partition_id for p in committed.partitions_of(tid) if p.is_reassigning])
                  for tid in committed.topics]
    else:
        named = [(committed.topic_named(t["Name"]), t["PartitionIndexes"]) for t in asked]
        topics = [(topic.topic_id, indexes) for topic, indexes in named if topic is not None]
    entries = []
    for topic_id, indexes in topics:
        topic = live.topics.get(topic_id)
        if topic is None:
            continue
        for index in indexes:
            p = live.partitions.get((topic_id, index))
            if p is not None and p.is_reassigning:
                entries.append(json.dumps([topic.name, {
                    "AddingReplicas": list(p.adding_replicas), "PartitionIndex": index,
                    "RemovingReplicas": list(p.removing_replicas), "Replicas": list(p.replicas)}], sort_keys=True))
    return entries


def _listing_reads_uncommitted(trace: Trace, d: Divergence) -> bool:
    """B13: ListPartitionReassignments lists other reassignments, those Kafka finds when it takes the
    reassigning topics at the committed offset but their partitions from the uncommitted state."""
    return (_listing(d) and set(_listed(d.expected)) != set(_listed(d.actual))
            and set(_listed(d.actual)) == set(_kafkas_listing(trace, d)))


def _topic_listed_twice(trace: Trace, d: Divergence) -> bool:
    """B30: an answer to a request for every topic lists a topic twice, as Kafka does after a
    failover that undid the topic's uncommitted deletion."""
    if not _listing(d) or d.event.get("body", {}).get("Topics") is not None:
        return False
    names = [t.get("Name") for r in d.actual or () for t in r.get("body", {}).get("Topics") or ()]
    return len(names) != len(set(names))


def _listed_in_kafkas_order(trace: Trace, d: Divergence) -> bool:
    """B29: ListPartitionReassignments lists the same reassignments in another order: Kafka lists a
    topic's partitions, when every topic is asked for, in the order they began reassigning."""
    return _listing(d) and set(_listed(d.expected)) == set(_listed(d.actual))


def _fenced(records: Any) -> list[int]:
    """The brokers that records fence, in their order."""
    return [r["data"].get("BrokerId") for r in records or () if r.get("type") == "FenceBrokerRecord"
            or (r.get("type") == "BrokerRegistrationChangeRecord" and r.get("data", {}).get("Fenced") == FENCE)]


def _sessions_after_unregistration(trace: Trace, d: Divergence) -> bool:
    """B31: a tick fences another broker first, after a broker was unregistered: Kafka's table of
    registrations keeps the size it once needed, which sets the order a newly active controller
    gives the sessions in."""
    if d.part != "records" or d.event.get("kind") != "tick":
        return False
    expected, actual = _fenced(d.expected), _fenced(d.actual)
    return bool(expected) and bool(actual) and expected != actual and any(_requests(trace, d.step, "UnregisterBroker"))


def _another_order(trace: Trace, d: Divergence) -> bool:
    """B25: the same records in another order: Kafka walks a broker's partitions in the order of
    its index of ISR members (topics in the order of their random ids)."""
    if d.part != "records" or not d.expected or not d.actual or len(d.expected) != len(d.actual):
        return False

    def content(records):
        return sorted(json.dumps([r.get("type"), r.get("data")], sort_keys=True) for r in records)

    return content(d.expected) == content(d.actual)


def _completion(trace: Trace, d: Divergence) -> bool:
    """B26: Kafka 4.3 and later complete a reassignment on another ISR than kraftspec's profile,
    which follows 4.0 to 4.2: a record that completes it (RemovingReplicas emptied) on one side only."""
    if d.part != "records" or d.event.get("api") not in ("AlterIsr", "AlterPartitionReassignments"):
        return False

    def completes(records):
        return any(r.get("type") == "PartitionChangeRecord" and r["data"].get("RemovingReplicas") == [] for r in records or ())

    return completes(d.expected) != completes(d.actual)


def _shutdown_waits_for_a_forgotten_offset(trace: Trace, d: Divergence) -> bool:
    """B27: kraftspec lets a broker in controlled shutdown go where Kafka still waits, because Kafka
    forgot the metadata offset of an active broker whose registration change it replayed."""
    if d.event.get("api") != "BrokerHeartbeat":  # asking to shut down, or to be fenced while shutting down
        return False
    broker = d.event["body"]["BrokerId"]
    if d.part == "records":
        return broker in _fences(d.expected) and broker not in _fences(d.actual)
    if d.part == "replies":
        return any(r.get("api") == "BrokerHeartbeat" and r["body"].get("ShouldShutDown") is False
                   for r in d.actual or ()) and not any(r.get("api") == "BrokerHeartbeat" for r in d.expected or ())
    return False


def _new_leader_elected(trace: Trace, d: Divergence) -> bool:
    """B9: Kafka answers an AlterIsr partition NEW_LEADER_ELECTED where the kip-631 profile answers
    seed 000's FENCED_LEADER_EPOCH (the kafka profile answers as Kafka does)."""
    code = f'"ErrorCode": {NEW_LEADER_ELECTED}'
    return d.part == "replies" and json.dumps(d.actual or []).count(code) > json.dumps(d.expected or []).count(code)


def _empty_alter_isr(trace: Trace, d: Divergence) -> bool:
    """B10: an AlterIsr with no topics, answered at once by Kafka; a kip-631 trace answers it when
    the log as it stood commits, so the two sides release its NONE at different steps."""
    def empty_answers(replies) -> int:
        return sum(1 for r in replies or () if isinstance(r, dict) and r.get("api") == "AlterIsr" and not r["body"].get("Topics"))
    return d.part == "replies" and empty_answers(d.actual) != empty_answers(d.expected)


def _partition_named_twice(trace: Trace, d: Divergence) -> bool:
    """B11: an AlterIsr that names a partition twice."""
    for body in _requests(trace, d.step, "AlterIsr"):
        for topic in body.get("Topics") or ():
            indexes = [p["PartitionIndex"] for p in topic.get("Partitions") or ()]
            if len(indexes) != len(set(indexes)):
                return True
    return False


def _zero_topic_id(trace: Trace, d: Divergence) -> bool:
    """B14: a topic created with the zero id, which Kafka ignores (it invents one)."""
    return any(t.get("TopicId") == "AAAAAAAAAAAAAAAAAAAAAA"
               for body in _requests(trace, d.step, "CreateTopics") for t in body.get("Topics") or ())


ROWS: tuple[Row, ...] = (
    Row("B1", "a broker id below zero registered, then placement stalls (Kafka bug)", _negative_broker_id),
    Row("B2", "a new incarnation after ShouldShutDown refused (KAFKA-19047)", _reregistration_after_shutdown),
    Row("B21", "a cluster that finalizes no features", _no_finalized_features),
    Row("B5", "a registration whose CurrentMetadataOffset is below -1", _offset_below_minus_one),
    Row("B22", "a registration whose feature range starts below 0", _range_below_zero),
    Row("B4", "a registration without the finalized metadata.version: INVALID_REGISTRATION", _invalid_registration),
    Row("B12", "a replaced reassignment keeps its adding replicas", _adding_kept),
    Row("B13", "ListPartitionReassignments reads uncommitted partitions", _listing_reads_uncommitted),
    Row("B30", "a topic listed twice after a failover undid its deletion", _topic_listed_twice),
    Row("B29", "reassignments listed in Kafka's order", _listed_in_kafkas_order),
    Row("B25", "the same records in Kafka's order of partitions", _another_order),
    Row("B26", "a reassignment completed on another ISR (Kafka 4.3 and later)", _completion),
    Row("B27", "a controlled shutdown held back by a metadata offset Kafka forgot", _shutdown_waits_for_a_forgotten_offset),
    Row("B31", "sessions lapsing together after an unregistration, fenced in another order", _sessions_after_unregistration),
    Row("B9", "NEW_LEADER_ELECTED for an AlterIsr that completes a reassignment", _new_leader_elected),
    Row("B10", "an AlterIsr with no topics", _empty_alter_isr),
    Row("B11", "an AlterIsr naming a partition twice", _partition_named_twice),
    Row("B14", "a topic created with the zero id", _zero_topic_id),
)


def cause(trace: Trace, divergence: Divergence | None) -> str | None:
    """The ledger row that explains ``divergence`` (None: no row does)."""
    if divergence is None:
        return None
    for row in ROWS:
        if row.matches(trace, divergence):
            return row.row
    return None


def classify(paths: list[Path], adapter_spec: str, level: str, progress: Callable[[str], None] | None = None
             ) -> dict[str, dict[str, Any]]:
    """Replay every trace against ``adapter_spec`` at ``level``: for each, by file name, its outcome
    (``passed``, ``not supported``, or ``failed``), and for a failure the step, the part and the
    ledger row that explains it (``unexplained`` when none does)."""
    adapter = adapter_from_spec(adapter_spec)
    results: dict[str, dict[str, Any]] = {}
    traces = list(read_all(paths))
    started = time.monotonic()
    try:
        for done, (path, trace) in enumerate(traces, start=1):
            verdict = replay(trace, adapter, level, path)
            if verdict.passed:
                results[path.name] = {"outcome": "passed"}
            elif verdict.not_supported:
                results[path.name] = {"outcome": "not supported", "why": verdict.not_supported}
            else:
                d = verdict.divergence
                assert d is not None  # a verdict that neither passed nor was not supported diverged
                results[path.name] = {"outcome": "failed", "step": d.step, "part": d.part,
                                      "cause": cause(trace, d) or "unexplained"}
            if progress and (done % 100 == 0 or done == len(traces)):
                elapsed = time.monotonic() - started
                left = elapsed / done * (len(traces) - done)
                progress(f"{done}/{len(traces)} traces, {elapsed:.0f} s, about {left:.0f} s left")
    finally:
        getattr(adapter, "shutdown", adapter.close)()
    return results


def summary(results: dict[str, dict[str, Any]]) -> str:
    counts = Counter(r["outcome"] for r in results.values())
    causes = Counter(r["cause"] for r in results.values() if r["outcome"] == "failed")
    lines = [f"{counts['passed']} of {len(results)} traces pass"
             + (f", {counts['not supported']} not supported" if counts["not supported"] else "")]
    titles = {row.row: row.summary for row in ROWS}
    for row, n in sorted(causes.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"  {n:6d}  {row}: {titles.get(row, 'no ledger row explains it: shrink one and add it to spec/kafka.md')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kraftspec.conformance.kafka_causes",
        description="Replay traces against Apache Kafka's controller and say, for each that fails, which "
        "known difference of the divergence ledger (spec/kafka.md) explains it; list those none explains. "
        "Exit status 1 if any failure is unexplained.")
    parser.add_argument("traces", nargs="+", type=Path, help="trace files, or directories of *.jsonl")
    parser.add_argument("--adapter", default="kafka:4.4.0", help="the system under test (default kafka:4.4.0)")
    parser.add_argument("--level", choices=LEVELS, default="records", help="what to compare (default records)")
    parser.add_argument("--json", type=Path, help="also write each trace's outcome and cause to this file")
    args = parser.parse_args(argv)
    try:
        results = classify(args.traces, args.adapter, args.level, progress=lambda line: print(line, file=sys.stderr))
    except (TraceError, ValueError) as problem:
        print(f"kraftspec: error: {problem}", file=sys.stderr)
        return 2
    print(summary(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 1 if any(r.get("cause") == "unexplained" for r in results.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
