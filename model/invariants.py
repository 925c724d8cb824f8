"""The invariants of spec/invariants.md, one named predicate per id.

State invariants take a :class:`ControllerState`; step invariants take the state before,
the event and the :class:`StepResult` after; reply invariants look at the replies a step released.
Each predicate returns a list of violations (empty when it holds), so a failure says
what broke. :func:`violations` runs them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .controller import StepResult
from .events import Event, Failover
from .messages import BrokerHeartbeatRequest, BrokerHeartbeatResponse, Request, Response
from .log import REGISTRATION_RECORDS
from .records import NO_LEADER, PartitionChangeRecord, RemoveTopicRecord
from .replay import replay_all
from .state import ControllerState, MetadataImage

Violations = list[str]


def _images(state: ControllerState) -> list[tuple[str, MetadataImage]]:
    return [("in-memory", state.image), ("committed", state.committed_image)]


def inv_1_leader_in_isr(state: ControllerState) -> Violations:
    """INV-1: a leader is -1 or in the ISR."""
    return [
        f"INV-1 {which} {p.topic_id}:{p.partition_id} leader {p.leader} not in ISR {p.isr}"
        for which, image in _images(state)
        for p in image.partitions.values()
        if p.leader != NO_LEADER and p.leader not in p.isr
    ]


def inv_2_replica_lists_well_formed(state: ControllerState) -> Violations:
    """INV-2: no duplicates; ISR, adding, removing within the replicas; adding and removing disjoint."""
    out = []
    for which, image in _images(state):
        for p in image.partitions.values():
            lists = {"replicas": p.replicas, "isr": p.isr, "adding": p.adding_replicas, "removing": p.removing_replicas}
            for name, values in lists.items():
                if len(set(values)) != len(values):
                    out.append(f"INV-2 {which} {p.key} {name} {values} has duplicates")
                if name != "replicas" and not set(values) <= set(p.replicas):
                    out.append(f"INV-2 {which} {p.key} {name} {values} not within replicas {p.replicas}")
            if set(p.adding_replicas) & set(p.removing_replicas):
                out.append(f"INV-2 {which} {p.key} adding {p.adding_replicas} meets removing {p.removing_replicas}")
    return out


def inv_3_leader_registered_unfenced(state: ControllerState) -> Violations:
    """INV-3: a leader is a registered, unfenced broker."""
    out = []
    for which, image in _images(state):
        for p in image.partitions.values():
            if p.leader == NO_LEADER:
                continue
            registration = image.brokers.get(p.leader)
            if registration is None or registration.fenced:
                out.append(f"INV-3 {which} {p.key} leader {p.leader} is {'fenced' if registration else 'unregistered'}")
    return out


def epochs_went_back(before: MetadataImage, after: MetadataImage, recreated: frozenset = frozenset(), which: str = "") -> list[str]:
    """INV-4 between two images: no broker epoch, leader epoch or partition epoch is lower in
    ``after`` (the partitions of a topic in ``recreated``, removed and created again, start anew,
    DEC-31). ``which`` names the images in the messages (``"committed "``)."""
    out = []
    for broker_id, registration in after.brokers.items():
        previous = before.brokers.get(broker_id)
        if previous is not None and registration.epoch < previous.epoch:
            out.append(f"INV-4 {which}broker {broker_id} epoch {previous.epoch} -> {registration.epoch}")
    for key, p in after.partitions.items():
        q = before.partitions.get(key)
        if q is None or p.topic_id in recreated:
            continue
        if p.leader_epoch < q.leader_epoch or p.partition_epoch < q.partition_epoch:
            out.append(f"INV-4 {which}{key} epochs {q.leader_epoch}/{q.partition_epoch} -> {p.leader_epoch}/{p.partition_epoch}")
    return out


def inv_4_epochs_never_go_back(before: ControllerState, event: Event, result: StepResult) -> Violations:
    """INV-4: broker epochs, leader and partition epochs, the committed offset and the clock.

    The in-memory state is compared with the in-memory state before, except at a failover,
    which returns it to the committed state; then it is compared with the committed state.
    """
    after = result.state
    in_memory_before = before.committed_image if isinstance(event, Failover) else before.image
    # DEC-31: a commit that applies a topic's removal and its re-creation under the same id
    # makes its partitions new ones; they are not compared with the removed topic's.
    recreated = {
        record.topic_id
        for batch in before.uncommitted_batches()
        if batch.end_offset <= after.committed_offset
        for record in batch.records
        if isinstance(record, RemoveTopicRecord)
    }
    out = epochs_went_back(in_memory_before, after.image, frozenset(), "in-memory ")
    out += epochs_went_back(before.committed_image, after.committed_image, frozenset(recreated), "committed ")
    if after.committed_offset < before.committed_offset:
        out.append(f"INV-4 committed offset {before.committed_offset} -> {after.committed_offset}")
    if after.now_ms < before.now_ms:
        out.append(f"INV-4 clock {before.now_ms} -> {after.now_ms}")
    return out


def inv_5_unregistered_in_no_isr(state: ControllerState) -> Violations:
    """INV-5: an unregistered broker leads no partition and is in no ISR but as its sole member."""
    return [
        f"INV-5 {which} {p.key} ISR {p.isr} holds unregistered broker {b}"
        for which, image in _images(state)
        for p in image.partitions.values()
        for b in p.isr
        if b not in image.brokers and p.isr != (b,)
    ]


def inv_6_epochs_distinct_below_log_end(state: ControllerState) -> Violations:
    """INV-6: no two registrations share an epoch; every epoch is below the log end offset."""
    epochs = [r.epoch for r in state.image.brokers.values()]
    out = []
    if len(set(epochs)) != len(epochs):
        out.append(f"INV-6 epochs {sorted(epochs)} repeat")
    out += [
        f"INV-6 broker {r.broker_id} epoch {r.epoch} not below log end {state.log_end_offset}"
        for r in state.image.brokers.values()
        if r.epoch >= state.log_end_offset
    ]
    return out


def inv_7_registration_carries_its_offset(state: ControllerState) -> Violations:
    """INV-7 on the model's log: each RegisterBrokerRecord carries the offset where its registration's
    records begin (registration_epoch_problem)."""
    amends = state.config.params.retry_registration == "amend"
    out = []
    for batch in state.batches:
        records = batch.with_offsets()
        out += [problem for i, (_, record) in enumerate(records) if isinstance(record, REGISTRATION_RECORDS)
                and (problem := registration_epoch_problem(records, i, amends)) is not None]
    return out


def registration_epoch_problem(batch: Sequence[tuple[int, Any]], i: int, amends: bool) -> str | None:
    """INV-7: what is wrong with the epoch of the registration record at position ``i`` of ``batch``
    ((offset, record) pairs), or None. Its BrokerEpoch is where the registration's records begin:
    its own offset, or that of the partition changes just before it in its batch, which take an
    unfenced predecessor out of its ISRs (REG-6, REG-9). Where registrations are amended (kafka
    profile, DEC-5) any earlier offset is the registration's. (A log Kafka wrote may hold other
    requests' records before them in the same batch, so the batch's first offset is not enough.)"""
    offset, record = batch[i]
    epoch = record.broker_epoch
    if epoch == offset or (amends and epoch < offset):
        return None
    # both record formats write seed 000's PartitionChangeRecord (DEC-22: Kafka's differs only in version)
    if batch[0][0] <= epoch < offset and all(isinstance(r, PartitionChangeRecord) for o, r in batch[:i] if o >= epoch):
        return None
    return f"INV-7 {type(record).__name__} at offset {offset} carries epoch {record.broker_epoch}"


def inv_8_committed_state_is_replay(state: ControllerState) -> Violations:
    """INV-8: snapshot + committed records, replayed onto nothing, give the committed state."""
    image = replay_all(MetadataImage(), state.snapshot.records if state.snapshot else ())
    image = replay_all(image, [r for b in state.committed_batches() for r in b.records])
    return [] if image == state.committed_image else ["INV-8 committed state differs from the replay of the committed records"]


def inv_9_only_sole_isr_member_fenced(state: ControllerState) -> Violations:
    """INV-9: in an ISR of two or more, every member is registered and unfenced."""
    out = []
    for which, image in _images(state):
        for p in image.partitions.values():
            if len(p.isr) > 1:
                for b in p.isr:
                    registration = image.brokers.get(b)
                    if registration is None or registration.fenced:
                        out.append(f"INV-9 {which} {p.key} ISR {p.isr} holds ineligible broker {b}")
    return out


def inv_10_unfenced_broker_holds_lease(state: ControllerState) -> Violations:
    """INV-10: unfenced brokers are inside their lease (in the kafka profile, where a periodic scan
    fences, DEC-25: hold a session of their epoch that their lease's last contact renewed); leases
    exist exactly for registered brokers."""
    out = []
    if set(state.leases) != set(state.image.brokers):
        out.append(f"INV-10 leases for {sorted(state.leases)} but registrations for {sorted(state.image.brokers)}")
    timeout = state.config.session_timeout_ms
    scanned = state.config.params.lease_expiry == "hash-map-scan"
    for b, registration in state.image.brokers.items():
        lease = state.leases.get(b)
        if lease is None or registration.fenced:
            continue
        if scanned:  # DEC-25, kafka profile: a lapsed lease waits for a scan, in its session
            session = state.sessions.get(b, registration.epoch)
            if session is None or session.last_contact_ms != lease.last_contact_ms:
                out.append(f"INV-10 broker {b} unfenced with no session of epoch {registration.epoch} last renewed "
                           f"at {lease.last_contact_ms}")
        elif lease.lapsed(state.now_ms, state.config):
            out.append(f"INV-10 broker {b} unfenced at {state.now_ms} past its deadline {lease.deadline(timeout)}")
    return out


def decided_responses(result: StepResult) -> list[tuple[Request, Response]]:
    """The responses decided in this step: released at once, or waiting in ``pending``."""
    decided = [(p.request, p.response) for p in result.state.pending if p.seq == result.seq]
    return decided + [(r.request, r.response) for r in result.replies if r.seq == result.seq]


def inv_11_should_shut_down_leads_nothing(before: ControllerState, event: Event, result: StepResult) -> Violations:
    """INV-11: a ShouldShutDown names a broker that leads nothing in the in-memory state after
    the step that decided it (SHUT-6)."""
    del before, event
    return [
        f"INV-11 ShouldShutDown to broker {request.broker_id}, which still leads"
        for request, response in decided_responses(result)
        if isinstance(request, BrokerHeartbeatRequest)
        and isinstance(response, BrokerHeartbeatResponse)
        and response.should_shut_down
        and result.state.image.leads_any(request.broker_id)
    ]


def inv_12_lao_at_most_active_offsets(before: ControllerState, event: Event, result: StepResult) -> Violations:
    """INV-12: LowestAcknowledgedOffset is at most every unfenced broker's recorded offset,
    for the responses decided in this step, against the state after it."""
    del before, event
    state = result.state
    out = []
    for _, response in decided_responses(result):
        if isinstance(response, BrokerHeartbeatResponse) and response.lowest_acknowledged_offset is not None:
            for b, registration in state.image.brokers.items():
                if not registration.fenced and response.lowest_acknowledged_offset > state.leases[b].metadata_offset:
                    out.append(
                        f"INV-12 LowestAcknowledgedOffset {response.lowest_acknowledged_offset} above broker {b}'s "
                        f"{state.leases[b].metadata_offset}"
                    )
    return out


def inv_13_controlled_shutdown_unfenced(state: ControllerState) -> Violations:
    """INV-13: a broker in controlled shutdown is registered and unfenced."""
    return [
        f"INV-13 broker {b} in controlled shutdown while {'fenced' if b in state.image.brokers else 'unregistered'}"
        for b, lease in state.leases.items()
        if lease.in_controlled_shutdown and (b not in state.image.brokers or state.image.brokers[b].fenced)
    ]


def inv_14_topics_consistent(state: ControllerState) -> Violations:
    """INV-14: unique names and ids; partitions of existing topics, numbered 0..n-1."""
    out = []
    for which, image in _images(state):
        names = [t.name for t in image.topics.values()]
        if len(set(names)) != len(names):
            out.append(f"INV-14 {which} topic names repeat: {sorted(names)}")
        for topic_id, topic in image.topics.items():
            if topic.topic_id != topic_id:
                out.append(f"INV-14 {which} topic {topic.name} filed under {topic_id}")
            ids = [p.partition_id for p in image.partitions_of(topic_id)]
            if ids != list(range(len(ids))):
                out.append(f"INV-14 {which} topic {topic.name} has partitions {ids}")
        out += [f"INV-14 {which} partition {p.key} of no topic" for p in image.partitions.values() if p.topic_id not in image.topics]
    return out


def inv_15_log_bookkeeping(state: ControllerState) -> Violations:
    """INV-15: snapshot <= committed <= log end, on a batch boundary; contiguous batches; waits above commit."""
    out = []
    if not state.log_start_offset <= state.committed_offset <= state.log_end_offset:
        out.append(f"INV-15 offsets start {state.log_start_offset} committed {state.committed_offset} end {state.log_end_offset}")
    boundaries = {state.log_start_offset} | {b.end_offset for b in state.batches}
    if state.committed_offset not in boundaries:
        out.append(f"INV-15 committed offset {state.committed_offset} inside a batch")
    expected = state.log_start_offset
    for batch in state.batches:
        if batch.base_offset != expected or not batch.records:
            out.append(f"INV-15 batch at {batch.base_offset} (expected {expected}, {len(batch.records)} records)")
        expected = batch.end_offset
    out += [f"INV-15 reply {p.seq} waits for committed offset {p.release_offset}" for p in state.pending if p.release_offset <= state.committed_offset]
    return out


def inv_16_memory_is_committed_plus_tail(state: ControllerState) -> Violations:
    """INV-16: the in-memory state is the committed state with the uncommitted records replayed."""
    image = replay_all(state.committed_image, [r for b in state.uncommitted_batches() for r in b.records])
    return [] if image == state.image else ["INV-16 in-memory state differs from committed state + uncommitted records"]


def inv_17_removing_replicas_apart(state: ControllerState) -> Violations:
    """INV-17: RemovingReplicas is a prefix of Replicas, or a suffix in the kafka profile's layout."""
    kafka_layout = state.config.params.reassignment_layout == "target-then-removing"
    return [
        f"INV-17 {which} {p.key} replicas {p.replicas} do not {'end' if kafka_layout else 'start'} with removing {p.removing_replicas}"
        for which, image in _images(state)
        for p in image.partitions.values()
        if p.removing_replicas
        and (p.replicas[-len(p.removing_replicas):] if kafka_layout else p.replicas[: len(p.removing_replicas)])
        != p.removing_replicas
    ]


STATE_INVARIANTS: dict[str, Callable[[ControllerState], Violations]] = {
    "INV-1": inv_1_leader_in_isr,
    "INV-2": inv_2_replica_lists_well_formed,
    "INV-3": inv_3_leader_registered_unfenced,
    "INV-5": inv_5_unregistered_in_no_isr,
    "INV-6": inv_6_epochs_distinct_below_log_end,
    "INV-7": inv_7_registration_carries_its_offset,
    "INV-8": inv_8_committed_state_is_replay,
    "INV-9": inv_9_only_sole_isr_member_fenced,
    "INV-10": inv_10_unfenced_broker_holds_lease,
    "INV-13": inv_13_controlled_shutdown_unfenced,
    "INV-14": inv_14_topics_consistent,
    "INV-15": inv_15_log_bookkeeping,
    "INV-16": inv_16_memory_is_committed_plus_tail,
    "INV-17": inv_17_removing_replicas_apart,
}

STEP_INVARIANTS: dict[str, Callable[[ControllerState, Event, StepResult], Violations]] = {
    "INV-4": inv_4_epochs_never_go_back,
    "INV-11": inv_11_should_shut_down_leads_nothing,
    "INV-12": inv_12_lao_at_most_active_offsets,
}


def violations(before: ControllerState, event: Event, result: StepResult) -> Violations:
    """Every invariant violated by a step: the state invariants of its result, and the step
    and reply invariants of the step itself."""
    out = []
    for check in STATE_INVARIANTS.values():
        out += check(result.state)
    for step_check in STEP_INVARIANTS.values():
        out += step_check(before, event, result)
    return out
