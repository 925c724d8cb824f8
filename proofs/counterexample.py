"""Counterexamples that mean something: a failed obligation's Z3 model, turned into a concrete
state and event of the model, replayed, and classified.

A failed obligation ``Inv and T => Inv'`` comes with a state that satisfies the invariant and an
event that breaks it. :func:`concretize` builds the model's :class:`ControllerState` and event
from it (brokers numbered from 1, each partition its own topic), :func:`classify` runs the model
on them and says which of three things it is:

- **drift**: the model, from that state, keeps the invariant. The encoding lets the event do
  something the model does not (a guard missing from the encoding); the drift check should
  have caught it, and the encoding needs fixing.
- **reachable**: the model breaks the invariant from that state too, and a bounded exhaustive
  search from a fresh cluster finds a sequence of events that breaks the same invariant: a real
  failure of the model, with a trace for the conformance corpus.
- **counterexample to induction**: the model breaks the invariant from that state, but no
  sequence within the search bound does. The state is probably unreachable: the invariant needs
  strengthening (a new invariant id that rules the state out), or the search a larger bound.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import attrs
import z3

from ..model.controller import step as model_step
from ..model.events import Commit, Failover, TakeSnapshot, Tick
from ..model.heartbeat import expire_lease, next_lease_expiry, scan_delay_ms, scan_sessions
from ..model.invariants import STATE_INVARIANTS, STEP_INVARIANTS
from ..model.log import append, snapshot_records
from ..model.messages import (
    AlterIsrPartition,
    AlterIsrRequest,
    AlterIsrTopic,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    Feature,
    UnregisterBrokerRequest,
)
from ..model.records import NO_LEADER
from ..model.sessions import SessionTable
from ..model.state import BrokerRegistration, Config, ControllerState, Lease, MetadataImage, Partition, Snapshot, Topic
from ..spec.profiles import DEFAULT_PROFILE, Profile
from .symbolic import Broker, Part, View

NAMESPACE = uuid.UUID("6b726166-7473-7065-6300-000000000000")


@attrs.frozen
class Concrete:
    """A countermodel as the model's own values."""

    state: ControllerState
    event: Any  # the model's event, or ("expire", broker id) for a piece of a tick's loop
    brokers: dict  # Z3 broker value -> broker id
    partitions: dict  # Z3 partition value -> partition key


def _value(model: z3.ModelRef, term, default=0):
    value = model.eval(term, model_completion=True)
    if z3.is_int_value(value):
        return value.as_long()
    if z3.is_true(value):
        return True
    if z3.is_false(value):
        return False
    return default


def concretize(model: z3.ModelRef, pre: View, s, transition=None, profile: str = DEFAULT_PROFILE) -> Concrete:
    """The state (and the transition's event) that ``model`` describes, under behaviour ``profile``."""
    brokers = {str(b): (i + 1, b) for i, b in enumerate(model.get_universe(Broker) or [])}
    parts = {str(p): (i, p) for i, p in enumerate(model.get_universe(Part) or [])}

    def broker_id(term) -> int:
        return brokers[str(model.eval(term, model_completion=True))][0]

    registrations, leases = {}, {}
    for bid, b in brokers.values():
        if _value(model, pre.reg(b), False):
            registrations[bid] = BrokerRegistration(
                bid, uuid.uuid5(NAMESPACE, f"incarnation-{_value(model, pre.inc(b))}"), _value(model, pre.epoch(b)),
                (), (), None, fenced=_value(model, pre.fenced(b), True),
                in_controlled_shutdown=_value(model, pre.rshut(b), False))
        if _value(model, pre.lease(b), False):
            leases[bid] = Lease(_value(model, pre.contact(b)), _value(model, pre.offset(b), -1),
                                _value(model, pre.shut(b), False), _value(model, pre.released(b), False),
                                _value(model, pre.soff(b), -1))
    brokers_by_id = {bid: b for bid, b in brokers.values()}

    def members(p, field):
        chosen = [bid for bid, b in brokers.values() if _value(model, field(p, b), False)]
        return tuple(sorted(chosen, key=lambda bid: _value(model, pre.rank(p, brokers_by_id[bid]))))

    topics, partitions, keys = {}, {}, {}
    for i, p in parts.values():
        topic_id = uuid.uuid5(NAMESPACE, f"topic-{i}")
        keys[str(p)] = (topic_id, 0)
        if not _value(model, pre.live(p), False):
            continue
        topics[topic_id] = Topic(f"t{i}", topic_id)
        leader = broker_id(pre.leader(p)) if _value(model, pre.led(p), False) else NO_LEADER
        partitions[(topic_id, 0)] = Partition(
            topic_id, 0, members(p, pre.rep), members(p, pre.isr), members(p, pre.rem), members(p, pre.add), leader,
            _value(model, pre.lepoch(p)), _value(model, pre.pepoch(p)))
    image = MetadataImage({}, registrations, topics, partitions)
    timeout = max(2, _value(model, s, 2))
    config = Config(heartbeat_interval_ms=1, session_timeout_ms=timeout, finalized_features=(), profile=profile)
    log_end = max(_value(model, pre.log_end), 0)
    state = ControllerState(config, _value(model, pre.now), image, image, (), log_end,
                            Snapshot(log_end, snapshot_records(image, config.params.record_formats)), leases)
    offsets = {bid: _value(model, pre.roff(b), registrations[bid].epoch) for bid, b in brokers_by_id.items() if bid in registrations}
    state = state.evolve(registration_offsets=offsets, committed_registration_offsets=offsets)  # LEASE-9
    if config.params.lease_expiry == "hash-map-scan":  # DEC-25: the sessions of the current epochs, the next scan
        sessions = SessionTable()
        for bid, b in sorted(brokers_by_id.items()):
            if bid in registrations and _value(model, pre.sess(b), False):
                sessions = sessions.touched(bid, registrations[bid].epoch, _value(model, pre.scontact(b)))
        state = state.evolve(sessions=sessions, next_scan_ms=_value(model, pre.next_scan))
    event = _event(model, transition, broker_id, keys, image) if transition is not None else None
    return Concrete(state, event, {k: v[0] for k, v in brokers.items()}, keys)


def _event(model, transition, broker_id, keys, image: MetadataImage):
    k = transition.params
    v = lambda term, default=0: _value(model, term, default)  # noqa: E731
    name = transition.name
    if name == "BrokerHeartbeat":
        return BrokerHeartbeatRequest(broker_id(k["broker"]), v(k["epoch"]), v(k["offset"]), v(k["want_fence"], False),
                                      v(k["want_shut_down"], False), 1 if v(k["version_ok"], True) else 2)
    if name == "BrokerRegistration":
        well_formed = v(k["well_formed"], True)
        return BrokerRegistrationRequest(
            broker_id(k["broker"]), Config().cluster_id if well_formed else "another-cluster",
            uuid.uuid5(NAMESPACE, f"incarnation-{v(k['incarnation'])}"), -1, (),
            () if v(k["features_ok"], True) else (Feature("unknown.feature", 1, 1),))
    if name == "UnregisterBroker":
        return UnregisterBrokerRequest(broker_id(k["broker"]))
    if name == "AlterIsr":
        entries = []
        for text, key in keys.items():
            p = _part(model, text)
            if key in image.partitions and v(k["named"](p), False):
                members = tuple(b for b in image.brokers if v(k["new_isr"](p, _broker(model, b, broker_id)), False))
                entries.append(AlterIsrTopic(key[0], (AlterIsrPartition(0, v(k["leader_epoch"](p)), members,
                                                                        v(k["partition_epoch"](p))),)))
        return AlterIsrRequest(broker_id(k["broker"]), v(k["epoch"]), tuple(entries))
    if name in ("Tick (clock)",):
        return Tick(v(k["now"]))
    if name == "Tick (a lease lapses)":
        return ("expire", broker_id(k["broker"]))
    if name == "Tick (done)":
        return ("end of tick",)
    if name == "Tick (scan)":
        return ("scan",)
    if name == "Commit":
        return Commit(v(k["committed"]))
    if name == "Failover":
        return Failover()
    if name == "TakeSnapshot":
        return TakeSnapshot()
    return None  # topics and reassignments: the state is given, the event is described in words


def _part(model, text):
    for p in model.get_universe(Part) or []:
        if str(p) == text:
            return p
    raise KeyError(text)


def _broker(model, broker_id_wanted, broker_id):
    for b in model.get_universe(Broker) or []:
        if broker_id(b) == broker_id_wanted:
            return b
    raise KeyError(broker_id_wanted)


# ---- replay and classification -----------------------------------------------------------------


def replay(concrete: Concrete):
    """Run the model on the countermodel's state and event: the state after, and the result."""
    event = concrete.event
    if isinstance(event, tuple) and event[0] == "expire":
        return _expire(concrete.state, event[1]), None
    if isinstance(event, tuple) and event[0] == "end of tick":  # the model's loop: no lapsed lease is left
        state = concrete.state
        while (broker_id := next_lease_expiry(state)) is not None:
            state = _expire(state, broker_id)
        return state, None
    if isinstance(event, tuple) and event[0] == "scan":  # the kafka tick's scan, at the state's time (DEC-25)
        return _scan(concrete.state), None
    result = model_step(concrete.state, event)
    return result.state, result


def _expire(state: ControllerState, broker_id: int) -> ControllerState:
    decision = expire_lease(state, broker_id)
    after, _ = append(state, decision.records)
    return after.evolve(leases=decision.leases)


def _scan(state: ControllerState) -> ControllerState:
    """model.controller._scan: the scan, if it is due, in the model's own order of the sessions."""
    if state.now_ms < state.next_scan_ms:
        return state
    decision, found = scan_sessions(state)
    after, _ = append(state, decision.records)
    return after.evolve(leases=decision.leases if decision.leases is not None else state.leases,
                        sessions=decision.sessions, next_scan_ms=state.now_ms + scan_delay_ms(state.config, found))


def lemma_1_unfenced_lease_not_released(state: ControllerState) -> list[str]:
    """LEMMA-1 (proofs/inductive.py) on a concrete state: an unfenced broker's lease is not released."""
    return [f"LEMMA-1 broker {b} is unfenced and its lease is released" for b, r in state.image.brokers.items()
            if not r.fenced and b in state.leases and state.leases[b].released]


LEMMA_CHECKS = {"LEMMA-1": lemma_1_unfenced_lease_not_released}
"""The model-side check of each lemma of the proofs, for classifying a counterexample."""


def model_violations(inv_id: str, concrete: Concrete) -> list[str] | None:
    """What the model's own check of ``inv_id`` says after replaying, or None if it cannot be replayed."""
    if concrete.event is None:
        return None
    after, result = replay(concrete)
    if inv_id in STATE_INVARIANTS:
        return [v for v in STATE_INVARIANTS[inv_id](after) if v.startswith(inv_id)]
    if inv_id in LEMMA_CHECKS:
        return LEMMA_CHECKS[inv_id](after)
    if inv_id in STEP_INVARIANTS and result is not None:
        return STEP_INVARIANTS[inv_id](concrete.state, concrete.event, result)
    return None


def reachable(inv_id: str, brokers: int, partitions: int, depth: int = 3, profile: str = DEFAULT_PROFILE):
    """A trace of at most ``depth`` events after the exhaustive scope's warm start (a scope of this
    size, at most 3 brokers and 2 partitions, under behaviour ``profile``) whose last event breaks
    ``inv_id``; None when no sequence within the bound does."""
    from ..conformance.exhaustive import Scope, frontier, trace_of

    scope = Scope(brokers=max(1, min(brokers, 3)), partitions=max(1, min(partitions, 2)),
                  config=Config.for_profile(profile))
    found = frontier(scope, depth)
    for path, broken in found.violations:
        if any(v.startswith(inv_id) for v in broken):
            return trace_of(scope, path)
    return None


TRACES_TO: Path | None = None
"""A folder to write the trace of every reachable counterexample to (``kraftspec prove --traces``)."""


def classify(inv_id: str, concrete: Concrete, depth: int = 3) -> tuple[str, str]:
    """("drift" | "reachable" | "counterexample to induction" | "not replayed", explanation)."""
    broken = model_violations(inv_id, concrete)
    if broken is None:
        return "not replayed", "this event kind is not rebuilt as a concrete event; the state and parameters are shown"
    if not broken:
        return "drift", (f"the model keeps {inv_id} from this state: the encoding allows something the model "
                         "does not (a guard missing from the encoding)")
    size = (len(concrete.state.image.brokers), len(concrete.state.image.partitions))
    trace = reachable(inv_id, *size, depth=depth, profile=concrete.state.config.profile)
    if trace is not None:
        where = f"trace {trace.name}"
        if TRACES_TO is not None:
            where = f"trace written to {trace.with_description(f'reaches a violation of {inv_id}').write(TRACES_TO)}"
        return "reachable", (f"the model breaks {inv_id} ({broken[0]}), and a fresh cluster gets there in "
                             f"{len(trace.steps)} events ({where}): a real failure, for the conformance corpus")
    return "counterexample to induction", (
        f"the model breaks {inv_id} from this state ({broken[0]}), but no sequence of {depth} events after a warm "
        f"start of {min(size[0], 3)} brokers and {min(size[1], 2)} partitions does: the state is probably "
        "unreachable, and the invariant needs strengthening to rule it out (or a deeper search finds it)")


def describe(concrete: Concrete) -> str:
    """The state and event in a few readable lines."""
    s = concrete.state
    lines = [f"clock {s.now_ms} ms, session timeout {s.config.session_timeout_ms} ms, log end {s.log_end_offset}"
             + (f", next scan at {s.next_scan_ms} ms" if s.config.params.lease_expiry == "hash-map-scan" else "")]
    for b, r in sorted(s.image.brokers.items()):
        lease = s.leases.get(b)
        held = (f"lease from {lease.last_contact_ms}, offset {lease.metadata_offset}"
                f"{', in controlled shutdown' if lease.in_controlled_shutdown else ''}"
                f"{', released' if lease.released else ''}"
                f"{f', shutdown offset {lease.shutdown_offset}' if lease.shutdown_offset >= 0 else ''}") if lease else "no lease"
        session = s.sessions.get(b, r.epoch) if s.config.params.lease_expiry == "hash-map-scan" else None
        held += f", session from {session.last_contact_ms}" if session is not None else ""
        said = ", registered as in controlled shutdown" if r.in_controlled_shutdown else ""
        lines.append(f"broker {b}: epoch {r.epoch}, {'fenced' if r.fenced else 'active'}{said}, {held}")
    for p in s.image.partitions.values():
        lines.append(f"partition {s.image.topics[p.topic_id].name}: replicas {list(p.replicas)}, isr {list(p.isr)}, "
                     f"leader {p.leader}, adding {list(p.adding_replicas)}, removing {list(p.removing_replicas)}, "
                     f"epochs {p.leader_epoch}/{p.partition_epoch}")
    lines.append(f"event: {concrete.event!r}")
    return "\n".join(lines)


def explain(model: z3.ModelRef, inv_id: str, pre: View, transition, branch: str, classify_it: bool = True,
            params: Profile | None = None) -> str:
    """A failed obligation in words (of profile ``params``, default kip-631): the state, the event,
    and what kind of counterexample it is."""
    from .inductive import session_timeout

    name = params.name if params is not None else DEFAULT_PROFILE
    where = f"{inv_id} fails after {transition.name if transition else 'the initial state'}" + (
        f" ({branch})" if branch else "") + f" in profile {name}"
    try:
        concrete = concretize(model, pre, session_timeout(), transition, name)
    except Exception as error:  # noqa: BLE001 - a countermodel the model's types refuse is still reported
        return f"{where}; the countermodel is not a state the model can hold ({error})"
    text = f"{where}\n{describe(concrete)}"
    if classify_it:
        kind, why = classify(inv_id, concrete)
        text += f"\n{kind}: {why}"
    return text
