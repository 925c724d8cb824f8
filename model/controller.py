"""The model's single entry point: ``step(state, event) -> StepResult``.

A request is given the next sequence number (RPC-6) and handed to its handler, which
decides records and a response (a :class:`Decision`); the records are appended as one
batch and replayed at once (LOG-4, LOG-5), and the response waits for their commit
(LOG-7). Ticks fence lapsed leases (LEASE-8; in the kafka profile by a periodic scan, DEC-25);
commits release responses; a failover rebuilds from committed state (LOG-10).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attrs import frozen

from .alter_isr import handle_alter_isr
from .decision import Decision
from .events import Commit, Event, Failover, TakeSnapshot, Tick
from .heartbeat import expire_lease, handle_broker_heartbeat, next_lease_expiry, scan_delay_ms, scan_sessions
from .log import answer_after_commit, append, commit, failover, take_snapshot
from .messages import (
    REQUEST_TYPES,
    AlterIsrRequest,
    AlterPartitionReassignmentsRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    ListPartitionReassignmentsRequest,
    Request,
    UnregisterBrokerRequest,
)
from .reassignment import handle_alter_partition_reassignments, handle_list_partition_reassignments
from .registration import handle_broker_registration, handle_unregister_broker
from .rules import cite, collecting
from .state import Batch, ControllerState, Reply
from .topics import handle_create_topics, handle_delete_topics

WRITE_HANDLERS: dict[type, Callable[[ControllerState, Any], Decision]] = {
    BrokerRegistrationRequest: handle_broker_registration,
    BrokerHeartbeatRequest: handle_broker_heartbeat,
    UnregisterBrokerRequest: handle_unregister_broker,
    AlterIsrRequest: handle_alter_isr,
    CreateTopicsRequest: handle_create_topics,
    DeleteTopicsRequest: handle_delete_topics,
    AlterPartitionReassignmentsRequest: handle_alter_partition_reassignments,
}


@frozen
class StepResult:
    """What one event did.

    ``batches`` were appended (with their offsets), ``replies`` were released (each naming
    its request's sequence number), ``rules`` fired in the order they first did,
    ``rejected_by`` are the rules among them that refused a request or part of one, and
    ``seq`` is the sequence number the event got if it was a request.
    """

    state: ControllerState
    batches: tuple[Batch, ...] = ()
    replies: tuple[Reply, ...] = ()
    rules: tuple[str, ...] = ()
    seq: int | None = None
    rejected_by: tuple[str, ...] = ()


def step(state: ControllerState, event: Event) -> StepResult:
    """Handle one event."""
    with collecting() as log:
        if isinstance(event, Tick):
            result = _tick(state, event)
        elif isinstance(event, Commit):
            new_state, replies = commit(state, event.offset)
            result = StepResult(new_state, replies=replies)
        elif isinstance(event, Failover):
            new_state, replies = failover(state)
            result = StepResult(new_state, replies=replies)
        elif isinstance(event, TakeSnapshot):
            result = StepResult(take_snapshot(state))
        elif isinstance(event, REQUEST_TYPES):  # the rest of the Event union: the requests
            result = _request(state, event)
        else:
            raise TypeError(f"not an event the model knows: {event!r}")
    return StepResult(result.state, result.batches, result.replies, tuple(log.fired), result.seq, tuple(log.rejected))


def _request(state: ControllerState, request: Request) -> StepResult:
    cite("RPC-6")
    seq = state.next_seq
    if isinstance(request, ListPartitionReassignmentsRequest):
        # LOG-8: a read, answered at once from committed state
        reply = Reply(seq, request, handle_list_partition_reassignments(state, request))
        return StepResult(state.evolve(next_seq=seq + 1), replies=(reply,), seq=seq)
    decision = WRITE_HANDLERS[type(request)](state, request)
    assert decision.response is not None, "a request's handler always decides its response"
    changes: dict[str, Any] = {"next_seq": seq + 1}
    if decision.leases is not None:
        changes["leases"] = decision.leases
    if decision.sessions is not None:
        changes["sessions"] = decision.sessions
    if decision.refused_by in state.config.params.answered_at_once:
        cite("LOG-7")  # DEC-21, kafka profile: an error of the whole request is answered at once
        return StepResult(state.evolve(**changes), replies=(Reply(seq, request, decision.response),), seq=seq)
    state, batch = append(state, decision.records)
    state, replies = answer_after_commit(state, seq, request, decision.response, **changes)
    return StepResult(state, batches=(batch,) if batch else (), replies=replies, seq=seq)


def _tick(state: ControllerState, tick: Tick) -> StepResult:
    cite("LOG-15")
    if tick.now_ms <= state.now_ms:
        return StepResult(state)  # time never goes back
    state = state.evolve(now_ms=tick.now_ms)
    if state.config.params.lease_expiry == "hash-map-scan":
        return _scan(state)
    batches: list[Batch] = []
    while (broker_id := next_lease_expiry(state)) is not None:
        decision = expire_lease(state, broker_id)  # one batch per broker, each on the state the last left
        state, batch = append(state, decision.records)
        state = state.evolve(leases=decision.leases)
        if batch is not None:  # a lapsed lease always fences, so there is a batch
            batches.append(batch)
    return StepResult(state, batches=tuple(batches))


def _scan(state: ControllerState) -> StepResult:
    """LEASE-8, DEC-25, kafka profile: the periodic scan, if it is due, runs once at the tick's time
    and fences at most one broker (Kafka's clock moves only with ticks, so a tick runs it once at
    most, however long the tick)."""
    if state.now_ms < state.next_scan_ms:
        return StepResult(state)
    decision, found = scan_sessions(state)
    state, batch = append(state, decision.records)
    state = state.evolve(
        leases=decision.leases if decision.leases is not None else state.leases,
        sessions=decision.sessions,
        next_scan_ms=state.now_ms + scan_delay_ms(state.config, found),
    )
    return StepResult(state, batches=(batch,) if batch is not None else ())
