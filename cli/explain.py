"""``kraftspec explain``: the model at work on a seeded scenario, told step by step."""

from __future__ import annotations

import argparse
import collections
import sys
from enum import Enum
from typing import Any, TextIO
from uuid import UUID

import attrs

from kraftspec.conformance.simulation import Happening, Simulation
from kraftspec.model import Config, ConfigError
from kraftspec.model.membership import membership
from kraftspec.model.messages import Feature, Listener
from kraftspec.model.records import BrokerEndpoint, BrokerFeature
from kraftspec.model.state import ControllerState, Partition
from kraftspec.model.tools import uuid_text
from kraftspec.spec import SPEC_VERSION, title

INDENT = " " * 7


def show(value: Any, hide_defaults: bool = False) -> str:
    """A compact, readable rendering of records, messages and their fields.

    Records hide fields at their default (a PartitionChangeRecord's -2 and nulls mean
    "unchanged"); messages show every field, since a default there is an answer.
    """
    if isinstance(value, (Listener, BrokerEndpoint)):
        return f"{value.name}://{value.host}:{value.port}"
    if isinstance(value, Feature):
        return f"{value.name} {value.min_supported_version}-{value.max_supported_version}"
    if isinstance(value, BrokerFeature):
        return f"{value.name} {value.min_version}-{value.max_version}"
    if attrs.has(type(value)):
        parts = []
        for field in attrs.fields(type(value)):
            item = getattr(value, field.name)
            if hide_defaults and field.default is not attrs.NOTHING and item == field.default:
                continue
            parts.append(f"{field.name}={show(item, hide_defaults)}")
        return f"{type(value).__name__}({', '.join(parts)})"
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, UUID):
        return uuid_text(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(show(v, hide_defaults) for v in value) + "]"
    return repr(value) if isinstance(value, str) else str(value)


def broker_line(state: ControllerState, simulation: Simulation) -> str:
    parts = []
    for broker_id, process in sorted(simulation.processes.items()):
        registration = state.image.brokers.get(broker_id)
        epoch = f" e{registration.epoch}" if registration else ""
        parts.append(f"{broker_id}:{membership(state, broker_id).value}{epoch} ({process.state.name})")
    return "  ".join(parts)


def partition_line(state: ControllerState, p: Partition) -> str:
    name = state.image.topics[p.topic_id].name
    line = f"{name}-{p.partition_id} replicas {list(p.replicas)} isr {list(p.isr)} leader {p.leader}"
    line += f" (leader epoch {p.leader_epoch}, partition epoch {p.partition_epoch})"
    if p.is_reassigning:
        line += f" adding {list(p.adding_replicas)} removing {list(p.removing_replicas)}"
    return line


def tell(h: Happening, simulation: Simulation, out: TextIO) -> None:
    result, state = h.result, h.result.state
    out.write(f"[{h.number:4}] t={state.now_ms / 1000:.3f}s  {h.note}\n")
    if result.seq is not None:
        out.write(f"{INDENT}request    #{result.seq} {show(h.event)}\n")
    else:
        out.write(f"{INDENT}event      {show(h.event)}\n")
    for batch in result.batches:
        for offset, record in batch.with_offsets():
            out.write(f"{INDENT}record     @{offset} {show(record, hide_defaults=True)}\n")
    for pending in state.pending:
        if pending.seq == result.seq:
            out.write(f"{INDENT}waits      #{pending.seq} is answered once offset {pending.release_offset - 1} commits\n")
    for reply in result.replies:
        out.write(f"{INDENT}reply      #{reply.seq} {show(reply.response)}\n")
    out.write(f"{INDENT}rules      {' '.join(result.rules)}\n")
    out.write(f"{INDENT}brokers    {broker_line(state, simulation)}\n")
    partitions = state.image.partitions_in_order()
    for i, p in enumerate(partitions):
        out.write(f"{INDENT}{'partitions' if i == 0 else '':<11}{partition_line(state, p)}\n")
    out.write(f"{INDENT}log        end {state.log_end_offset}, committed {state.committed_offset}\n\n")


def explain(args: argparse.Namespace, parser: argparse.ArgumentParser, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    timing = {}
    if args.heartbeat_interval_ms is not None:
        timing["heartbeat_interval_ms"] = args.heartbeat_interval_ms
    if args.session_timeout_ms is not None:
        timing["session_timeout_ms"] = args.session_timeout_ms
    try:  # the profile's default timings (DEC-12), unless given
        config = Config.for_profile(args.profile, **timing)
    except ConfigError as problem:
        parser.error(str(problem))
    simulation = Simulation(args.seed, args.brokers, args.partitions, config)
    out.write(
        f"kraftspec explain: seed {args.seed}, {args.brokers} brokers, {args.partitions} partitions, "
        f"{args.steps} steps, profile {config.profile} (heartbeat every {config.heartbeat_interval_ms} ms, "
        f"session timeout {config.session_timeout_ms} ms; spec {SPEC_VERSION})\n"
        "Each step: what happened, the request or event the controller got (#n numbers requests), the\n"
        "records it appended (@offset), the replies released, the rules that fired, and the state after.\n"
        "Broker states are the controller's view, the broker's own state in parentheses.\n\n"
    )
    fired: collections.Counter[str] = collections.Counter()
    for happening in simulation.run(args.steps):
        tell(happening, simulation, out)
        fired.update(happening.result.rules)
    if not args.no_legend:
        out.write(f"Rules that fired ({len(fired)}), with how many steps each:\n")
        for rule_id, count in sorted(fired.items(), key=lambda kv: (kv[0].split("-")[0], int(kv[0].split("-")[1]))):
            out.write(f"  {rule_id:<12}{count:>5}  {title(rule_id)}\n")
    return 0
