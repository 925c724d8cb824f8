"""The metadata log: appending batches, commit and release, failover, snapshots
(LOG-4 to LOG-12, LOG-14, LEASE-14)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from .errors import Error
from .heartbeat import scan_delay_ms
from .messages import Request, Response, error_response
from .formats import FORMATS, RecordFormats, Registration, formats_of
from . import kafka_records as kafka
from .records import PartitionRecord, Record, RegisterBrokerRecord
from .replay import replay_all
from .rules import cite, reject
from .sessions import SessionTable, registration_order
from .state import (Batch, BrokerRegistration, Config, ControllerState, FeatureRange, Lease, MetadataImage, Partition,
                    PendingReply, Reply, Snapshot, Topic)


REGISTRATION_RECORDS = (RegisterBrokerRecord, kafka.RegisterBrokerRecord)


def bootstrap_records(config: Config) -> tuple[Record, ...]:
    """LOG-14: the finalized features, by name, as the log's first batch."""
    cite("LOG-14")
    return formats_of(config.params).finalized((f.name, f.min_level, f.max_level) for f in config.finalized_features)


def initial_state(config: Config | None = None, now_ms: int = 0) -> ControllerState:
    """A freshly formatted cluster: the bootstrap batch, committed (LOG-14), no brokers."""
    config = config if config is not None else Config()
    records = bootstrap_records(config)
    batches = (Batch(0, records),) if records else ()
    image = replay_all(MetadataImage(), records)
    return ControllerState(
        config=config,
        now_ms=now_ms,
        image=image,
        committed_image=image,
        batches=batches,
        committed_offset=len(records),
        snapshot=None,
        leases={},
        next_scan_ms=_first_scan_ms(config, now_ms),
    )


def _first_scan_ms(config: Config, now_ms: int) -> int:
    """DEC-25, kafka profile: a controller that becomes active at ``now_ms`` scans its sessions
    first a scan period later (0, unused, in the kip-631 profile)."""
    return now_ms + scan_delay_ms(config, found=False) if config.params.lease_expiry == "hash-map-scan" else 0


def append(state: ControllerState, records: Sequence[Record]) -> tuple[ControllerState, Batch | None]:
    """LOG-4, LOG-5: append ``records`` as one batch at the log end and replay them at once."""
    if not records:
        return state, None
    cite("LOG-4")
    batch = Batch(state.log_end_offset, tuple(records))
    cite("LOG-5")
    image = replay_all(state.image, batch.records)
    offsets = registration_offsets(state.registration_offsets, (batch,))
    return state.evolve(image=image, batches=state.batches + (batch,), registration_offsets=offsets), batch


def registration_offsets(offsets: dict[int, int], batches: Sequence[Batch]) -> dict[int, int]:
    """LEASE-9, DEC-3: ``offsets`` (broker id to the offset of its latest RegisterBrokerRecord) after
    ``batches``, whichever formats' record (DEC-22)."""
    found = {r.broker_id: o for b in batches for o, r in enumerate(b.records, b.base_offset) if isinstance(r, REGISTRATION_RECORDS)}
    return {**offsets, **found} if found else offsets


def commit(state: ControllerState, offset: int) -> tuple[ControllerState, tuple[Reply, ...]]:
    """LOG-6: advance the committed offset to the last batch boundary at or below ``offset``;
    LOG-7: release the responses that were waiting for it."""
    cite("LOG-6")
    target = state.committed_offset
    for batch in state.batches:
        if batch.base_offset >= state.committed_offset and batch.end_offset <= offset:
            target = batch.end_offset  # DEC-30: whole batches only
    if target == state.committed_offset:
        return state, ()
    newly = [b for b in state.batches if state.committed_offset <= b.base_offset < target]
    cite("LOG-9")  # the committed state: the replay of the committed records
    state = state.evolve(
        committed_offset=target,
        committed_image=replay_all(state.committed_image, [r for b in newly for r in b.records]),
        committed_registration_offsets=registration_offsets(state.committed_registration_offsets, newly),
    )
    return release(state)


def release(state: ControllerState) -> tuple[ControllerState, tuple[Reply, ...]]:
    """LOG-7: release, in arrival order, every response whose offset has committed."""
    ready = tuple(p for p in state.pending if p.release_offset <= state.committed_offset)
    if not ready:
        return state, ()
    cite("LOG-7")
    waiting = tuple(p for p in state.pending if p.release_offset > state.committed_offset)
    return state.evolve(pending=waiting), tuple(Reply(p.seq, p.request, p.response) for p in ready)


def answer_after_commit(
    state: ControllerState, seq: int, request: Request, response: Response, **changes
) -> tuple[ControllerState, tuple[Reply, ...]]:
    """LOG-7: hold a write's response until the log as it stands now has committed (DEC-21:
    refusals and record-less results too). ``changes`` are other fields of the state to set in
    the same copy."""
    release_offset = state.log_end_offset
    if release_offset <= state.committed_offset and not state.pending:
        cite("LOG-7")  # already committed, nothing before it waiting: released at once
        return (state.evolve(**changes) if changes else state), (Reply(seq, request, response),)
    pending = PendingReply(seq, release_offset, request, response)
    return release(state.evolve(pending=state.pending + (pending,), **changes))


def failover(state: ControllerState) -> tuple[ControllerState, tuple[Reply, ...]]:
    """LOG-10: drop the uncommitted tail, rebuild from the snapshot and the committed records,
    answer every waiting request NOT_CONTROLLER, and give every broker a fresh lease (LEASE-14)."""
    cite("LOG-10")
    before = state
    batches = state.committed_batches()
    if state.snapshot is not None:
        cite("LOG-12")  # the snapshot, then the committed records after it
    rebuilt = replay_all(MetadataImage(), state.snapshot.records if state.snapshot else ())
    rebuilt = replay_all(rebuilt, [r for b in batches for r in b.records])
    if state.pending:
        reject("RPC-3")  # every waiting request is refused
    replies = tuple(Reply(p.seq, p.request, error_response(p.request, Error.NOT_CONTROLLER, state.config.params.rpc_formats)) for p in state.pending)
    cite("LEASE-14")  # DEC-28: soft state is lost; every registered broker gets a full session
    # DEC-6: a fenced broker has not been heard from by this controller, so it holds no claim on its
    # id until it is (a broker that shut down cleanly can come back at once)
    leases = {b: Lease(state.now_ms, released=r.fenced) for b, r in rebuilt.brokers.items()}
    state = state.evolve(image=rebuilt, committed_image=rebuilt, batches=batches, pending=(), leases=leases,
                         registration_offsets=state.committed_registration_offsets)
    if state.config.params.lease_expiry == "hash-map-scan":
        # DEC-25, kafka profile: Kafka (4.1 on) gives each unfenced broker a session, in the order it
        # holds its registrations (sized by those it held before and after the failover), and schedules its
        # first scan
        sessions = SessionTable()
        for b in registration_order(sorted(set(before.image.brokers) | set(rebuilt.brokers))):
            if b in rebuilt.brokers and not rebuilt.brokers[b].fenced:
                sessions = sessions.touched(b, rebuilt.brokers[b].epoch, state.now_ms)
        state = state.evolve(sessions=sessions, next_scan_ms=_first_scan_ms(state.config, state.now_ms))
    return state, replies


SnapshotPart = dict[str, FeatureRange] | BrokerRegistration | Topic | Partition


def snapshot_parts(image: MetadataImage) -> Iterator[SnapshotPart]:
    """LOG-11: what a snapshot of ``image`` writes records for, in its fixed order: the finalized
    features, the brokers by id, then each topic by name, followed by its partitions by index."""
    yield image.features
    for broker_id in sorted(image.brokers):
        yield image.brokers[broker_id]
    for topic in sorted(image.topics.values(), key=lambda t: t.name):
        yield topic
        yield from image.partitions_of(topic.topic_id)


def part_records(part: SnapshotPart, say: RecordFormats) -> tuple[Record, ...]:
    """LOG-11: the records that give one part of a snapshot (snapshot_parts), in the record
    formats ``say`` (DEC-22)."""
    if isinstance(part, Partition):
        return (
            PartitionRecord(  # REASSIGN-11: the reassignment lists are hard state, kept here
                partition_id=part.partition_id,
                topic_id=part.topic_id,
                replicas=part.replicas,
                isr=part.isr,
                removing_replicas=part.removing_replicas,
                adding_replicas=part.adding_replicas,
                leader=part.leader,
                leader_epoch=part.leader_epoch,
                partition_epoch=part.partition_epoch,
            ),
        )
    if isinstance(part, Topic):
        return (say.topic(part.name, part.topic_id),)
    if isinstance(part, BrokerRegistration):
        return say.registration(Registration(part.broker_id, part.incarnation_id, part.epoch, part.end_points, part.features,
                                             part.rack, fenced=part.fenced, in_controlled_shutdown=part.in_controlled_shutdown))
    return say.finalized((name, f.min_level, f.max_level) for name, f in part.items())


def snapshot_records(image: MetadataImage, formats: str = "seed-000") -> tuple[Record, ...]:
    """LOG-11: the minimal records that give ``image``, in a fixed order, in the record formats
    named ``formats`` (DEC-22)."""
    cite("LOG-11")
    say = FORMATS[formats]
    return tuple(record for part in snapshot_parts(image) for record in part_records(part, say))


def take_snapshot(state: ControllerState) -> ControllerState:
    """LOG-11: snapshot the committed state at the committed offset; the log before it goes."""
    snapshot = Snapshot(state.committed_offset, snapshot_records(state.committed_image, state.config.params.record_formats))
    batches = tuple(b for b in state.batches if b.base_offset >= snapshot.end_offset)
    return state.evolve(snapshot=snapshot, batches=batches)
