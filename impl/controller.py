"""The active controller: events in, records and responses out.

The same event interface as the model: a request (with its version), a clock tick, a commit up
to an offset, a failover, a snapshot. Handlers decide records and responses; every record is
replayed into the in-memory state as it is added to the request's batch (LOG-5), so that later
decisions of the same batch see it; the batch is appended to the log whole (LOG-4) and the
response waits for its commit (LOG-7). A failover restores the committed state from the journal
(LOG-10). Leases are soft state, kept apart (leases.py).
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from uuid import UUID

from .builder import UNSET, build_change, elect
from .codec import decode_record, encode_record
from .config import ControllerConfig
from .errors import Error
from .leases import LeaseManager
from .messages import (
    ZERO_UUID,
    AlterIsrRequest,
    AlterIsrResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    FeatureLevelRecord,
    FenceBrokerRecord,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    Struct,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from .replication import NO_LEADER, Partition
from .state import MetadataState
from .storage import DiskLog, SnapshotStore, plan_rebuild

SNAPSHOTS_KEPT = 2  # STORAGE.md: keep two, and the log from the older one on

HEARTBEAT_VERSIONS = (0, 1)
MAX_TOPIC_NAME = 249
MAX_RECORDS_PER_REQUEST = 10_000  # TOPIC-11: the records one CreateTopics may append (Kafka's bound per operation)
_LEGAL_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _supported(request_type: type[Struct], version: int) -> bool:
    low, _, high = request_type.VALID_VERSIONS.partition("-")
    return int(low) <= version <= int(high or low)


class Reply:
    """A released response: the request's sequence number, the request, its version, the response."""

    __slots__ = ("seq", "request", "version", "response")

    def __init__(self, seq: int, request, version: int, response) -> None:
        self.seq = seq
        self.request = request
        self.version = version
        self.response = response


class Outcome:
    """What one event did: batches appended as (base offset, records), replies released, the
    request's sequence number (None for other events)."""

    __slots__ = ("batches", "replies", "seq")

    def __init__(self, batches=(), replies=(), seq=None) -> None:
        self.batches = batches
        self.replies = replies
        self.seq = seq


def error_response(request, error: int):
    """The response of a request refused as a whole: every other field at its schema default."""
    if isinstance(request, BrokerRegistrationRequest):
        return BrokerRegistrationResponse(error_code=error)
    if isinstance(request, BrokerHeartbeatRequest):
        return BrokerHeartbeatResponse(error_code=error)
    if isinstance(request, UnregisterBrokerRequest):
        return UnregisterBrokerResponse(error_code=error)
    if isinstance(request, AlterIsrRequest):
        return AlterIsrResponse(error_code=error)
    if isinstance(request, CreateTopicsRequest):
        result = CreateTopicsResponse.CreatableTopicResult
        return CreateTopicsResponse(topics=tuple(result(name=t.name, topic_id=ZERO_UUID, error_code=error) for t in request.topics))
    if isinstance(request, DeleteTopicsRequest):
        result = DeleteTopicsResponse.DeletableTopicResult
        return DeleteTopicsResponse(responses=tuple(result(name=n, topic_id=ZERO_UUID, error_code=error) for n in request.topic_names))
    if isinstance(request, AlterPartitionReassignmentsRequest):
        return AlterPartitionReassignmentsResponse(error_code=error)
    if isinstance(request, ListPartitionReassignmentsRequest):
        return ListPartitionReassignmentsResponse(error_code=error)
    raise TypeError(f"not a request: {request!r}")


class Controller:
    """The active controller of kraftspec's impl."""

    def __init__(self, config: ControllerConfig | None = None, now_ms: int = 0, *, bootstrap: bool = True) -> None:
        self.config = config or ControllerConfig()
        self.now_ms = now_ms
        self.state = MetadataState()
        self.leases = LeaseManager(self.config.session_timeout_ms)
        self.batches: deque[tuple[int, tuple]] = deque()  # the uncommitted batches
        self.disk: DiskLog | None = None
        self.snapshots: SnapshotStore | None = None
        self.startup: dict[str, object] = {}  # what opening a directory found (recovery, snapshot problems)
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.committed_offset = 0
        self.snapshot: tuple[int, tuple | None] | None = None  # (end offset, records; None when on disk)
        self.pending: deque[tuple[int, int, object, int, object]] = deque()  # (release, seq, request, version, response)
        self.next_seq = 0
        self._batch: list | None = None
        self._handlers = {
            BrokerRegistrationRequest: self._broker_registration,
            BrokerHeartbeatRequest: self._broker_heartbeat,
            UnregisterBrokerRequest: self._unregister_broker,
            AlterIsrRequest: self._alter_isr,
            CreateTopicsRequest: self._create_topics,
            DeleteTopicsRequest: self._delete_topics,
            AlterPartitionReassignmentsRequest: self._alter_reassignments,
        }
        if bootstrap:
            self._bootstrap()

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike,
        config: ControllerConfig | None = None,
        now_ms: int = 0,
        *,
        committed_offset_missing: str = "refuse",
        quarantine_and_continue: bool = False,
    ) -> "Controller":
        """An active controller on a metadata log directory (``metadata.log.dir``).

        A new directory is formatted with the bootstrap batch (LOG-14). Otherwise the newest valid
        snapshot is loaded and the committed records after it replayed (LOG-12); what was not
        committed is dropped, as at a failover (LOG-10). ``startup`` reports what recovery cut,
        what it moved into quarantine and which snapshots were skipped, by path and reason.

        Opening never deletes a record that may have been committed (impl/STORAGE.md, "Recovery
        at open"): a damaged directory is refused with a :class:`StorageError` naming it and the
        choices. With ``committed_offset_missing="keep"`` a log whose committed offset file is
        missing counts as committed what the directory proves (the newest valid snapshot's end
        offset, or the log start) and keeps every later record as uncommitted batches, in memory
        and on disk, until the next commit. With ``quarantine_and_continue`` what cannot be
        recovered is moved into the log's ``quarantine`` folder and the controller starts without it.
        """
        directory = Path(directory)
        disk = DiskLog(
            directory / "log", committed_offset_missing=committed_offset_missing, quarantine_and_continue=quarantine_and_continue
        )
        try:
            return cls._recover(disk, SnapshotStore(directory / "snapshots"), config, now_ms)
        except BaseException:
            disk.close()
            raise

    @classmethod
    def _recover(cls, disk: DiskLog, snapshots: SnapshotStore, config: ControllerConfig | None, now_ms: int) -> "Controller":
        # nothing committed yet (a new directory, or a crash before formatting committed): format it
        fresh = disk.committed_offset_known and disk.committed_offset == 0 and not snapshots.list()
        controller = cls(config, now_ms, bootstrap=False)
        controller.disk, controller.snapshots = disk, snapshots
        if fresh:
            if disk.end_offset > 0:
                disk.truncate(0)  # never committed
            controller._bootstrap()
            return controller
        rebuild = plan_rebuild(disk, snapshots)
        replay = controller.state.replay
        for frame in rebuild.frames():
            replay(decode_record(frame)[0])
        committed = rebuild.to_offset
        controller.log_start_offset = rebuild.snapshot.end_offset if rebuild.snapshot else disk.start_offset
        controller.log_end_offset = controller.committed_offset = committed
        kept = None
        if disk.end_offset > committed:
            if disk.committed_offset_known:
                disk.truncate(committed)  # the uncommitted tail, as at a failover
            else:  # which of them were committed is unknown: keep them, uncommitted, for the quorum to decide
                kept = range(committed, disk.end_offset)
                controller._keep_uncommitted(committed)
        for broker_id, registration in sorted(controller.state.cluster.brokers.items()):
            controller.leases.start(broker_id, now_ms, registration.fenced)  # LEASE-14
        controller.startup = {
            "recovery": disk.recovery,
            "quarantined": tuple(disk.quarantined),
            "committed_loss": disk.committed_loss,
            "committed_offset_known": disk.committed_offset_known,
            "uncommitted_kept": kept,
            "snapshot": rebuild.snapshot.path if rebuild.snapshot else None,
            "snapshot_problems": rebuild.snapshot_problems,
        }
        return controller

    def _keep_uncommitted(self, committed: int) -> None:
        """Replay the log's batches after ``committed`` as uncommitted batches (LOG-5): in the
        in-memory state and the journal, so that a commit keeps them and a failover undoes them."""
        assert self.disk is not None
        journal = self.state.journal
        for batch in self.disk.read(committed, self.disk.end_offset):
            records = tuple(decode_record(frame)[0] for frame in batch.frames)
            journal.open_batch()
            for record in records:
                self.state.replay(record)
            self.log_end_offset = batch.base_offset + len(records)
            journal.close_batch(self.log_end_offset)
            self.batches.append((batch.base_offset, records))

    def close(self) -> None:
        if self.disk is not None:
            self.disk.close()

    def _bootstrap(self) -> None:
        """LOG-14: the finalized features, by name, as the first batch, committed."""
        features = sorted(self.config.finalized_features)
        if features:
            self._open_batch()
            for name, low, high in features:
                self._add(FeatureLevelRecord(name=name, min_feature_level=low, max_feature_level=high))
            self._close_batch()
            self._commit_to(self.log_end_offset)

    # ---- batches --------------------------------------------------------------------------

    def _open_batch(self) -> None:
        self._batch = []
        self.state.journal.open_batch()

    def _add(self, record) -> None:
        """Replay a record into the in-memory state at once (LOG-5) and add it to the open batch."""
        self.state.replay(record)
        kind = type(record)
        if kind is FenceBrokerRecord:
            self.leases.set_fenced(record.broker_id, True)
        elif kind is UnfenceBrokerRecord:
            self.leases.set_fenced(record.broker_id, False)
        assert self._batch is not None, "records are added only while a request's batch is open"
        self._batch.append(record)

    def _close_batch(self) -> tuple[int, tuple] | None:
        """Append the open batch to the log as one (LOG-4); None if it is empty."""
        records, self._batch = self._batch, None
        base = self.log_end_offset
        if not records:
            self.state.journal.close_batch(base)
            return None
        batch = (base, tuple(records))
        self.log_end_offset = base + len(records)
        self.state.journal.close_batch(self.log_end_offset)
        self.batches.append(batch)
        if self.disk is not None:
            self.disk.append(base, [encode_record(r) for r in records])
        return batch

    # ---- the event interface ------------------------------------------------------------------

    def handle_request(self, request, version: int = 0) -> Outcome:
        """Handle a request at ``version``; replies carry the response's version (RPC-2: 0 when refused for its version)."""
        seq = self.next_seq
        self.next_seq = seq + 1
        if type(request) is ListPartitionReassignmentsRequest:  # LOG-8: a read, answered at once
            return Outcome(replies=(Reply(seq, request, version, self._list_reassignments(request)),), seq=seq)
        handler = self._handlers.get(type(request))
        if handler is None:
            raise TypeError(f"not a request this controller handles: {request!r}")
        self._open_batch()
        response = handler(request, version)
        batch = self._close_batch()
        if not _supported(type(request), version):
            version = 0
        release = self.log_end_offset  # LOG-7: the log as it stands once the request is handled
        if release <= self.committed_offset and not self.pending:
            return Outcome((batch,) if batch else (), (Reply(seq, request, version, response),), seq)
        self.pending.append((release, seq, request, version, response))
        return Outcome((batch,) if batch else (), self._release(), seq)

    def tick(self, now_ms: int) -> Outcome:
        """LOG-15 and LEASE-8: time passes; lapsed leases fence their brokers, one batch each."""
        if now_ms <= self.now_ms:
            return Outcome()
        self.now_ms = now_ms
        batches = []
        for broker_id in self.leases.expired(now_ms):
            if self.state.cluster.is_active(broker_id):
                self._open_batch()
                self._fence(broker_id)
                batches.append(self._close_batch())
        return Outcome(tuple(batches))

    def commit(self, offset: int) -> Outcome:
        """LOG-6: the committed offset moves to the last batch boundary at or below ``offset``."""
        target = self.committed_offset
        for base, records in self.batches:
            end = base + len(records)
            if end > offset:
                break
            if end > target:
                target = end
        if target == self.committed_offset:
            return Outcome()
        self._commit_to(target)
        return Outcome(replies=self._release())

    def _commit_to(self, offset: int) -> None:
        if self.disk is not None:  # STORAGE.md: synced before it counts as committed
            self.disk.sync()
            self.disk.write_committed_offset(offset)
        self.committed_offset = offset
        self.state.journal.commit(offset)
        batches = self.batches
        while batches and batches[0][0] + len(batches[0][1]) <= offset:
            batches.popleft()  # committed: the log (or nothing, in memory) keeps them

    def _release(self) -> tuple[Reply, ...]:
        """LOG-7: release, in arrival order, the responses whose offset has committed."""
        released = []
        pending, committed = self.pending, self.committed_offset
        while pending and pending[0][0] <= committed:
            _, seq, request, version, response = pending.popleft()
            released.append(Reply(seq, request, version, response))
        return tuple(released)

    def failover(self) -> Outcome:
        """LOG-10: undo the uncommitted tail, answer what waited NOT_CONTROLLER, fresh leases (LEASE-14)."""
        self.state.undo_uncommitted()
        self.batches.clear()
        if self.disk is not None:
            self.disk.truncate(self.committed_offset)
        self.log_end_offset = self.committed_offset
        replies = tuple(
            Reply(seq, request, version, error_response(request, Error.NOT_CONTROLLER))
            for _, seq, request, version, _ in self.pending
        )
        self.pending.clear()
        self.leases = LeaseManager(self.config.session_timeout_ms)
        for broker_id, registration in sorted(self.state.cluster.brokers.items()):
            self.leases.start(broker_id, self.now_ms, registration.fenced)
        return Outcome(replies=replies)

    def take_snapshot(self) -> Outcome:
        """LOG-11: the committed state as its minimal records; the log before it may go."""
        end = self.committed_offset
        if self.snapshots is None:
            self.snapshot = (end, tuple(self.committed_records()))
        else:
            self.snapshots.write(end, (encode_record(r) for r in self.committed_records()))
            kept = self.snapshots.list()[-SNAPSHOTS_KEPT:]
            self.snapshots.delete_older_than(kept[0].end_offset)
            assert self.disk is not None, "a controller with a snapshot store has a log on disk"
            self.disk.delete_before(kept[0].end_offset)
            self.snapshot = (end, None)
        self.log_start_offset = end
        return Outcome()

    # ---- the committed state ------------------------------------------------------------------

    def committed_records(self):
        """LOG-11: the minimal records of the committed state, in the snapshot's order."""
        cluster, journal = self.state.cluster, self.state.journal
        features = {}
        for name in set(cluster.features) | {k[1] for k in journal.touched() if k[0] == "feature"}:
            value = journal.committed_image(("feature", name), missing=cluster.features.get(name))
            if value is not None:
                features[name] = value
        for name in sorted(features):
            low, high = features[name]
            yield FeatureLevelRecord(name=name, min_feature_level=low, max_feature_level=high)
        broker_ids = set(cluster.brokers) | {k[1] for k in journal.touched() if k[0] == "broker"}
        for broker_id in sorted(broker_ids):
            live = cluster.brokers.get(broker_id)
            fields = journal.committed_image(("broker", broker_id), missing=live.fields() if live else None)
            if fields is None:
                continue
            _, incarnation_id, epoch, end_points, features_, rack, fenced = fields
            yield RegisterBrokerRecord(
                broker_id=broker_id, incarnation_id=incarnation_id, broker_epoch=epoch,
                end_points=end_points, features=features_, rack=rack,
            )
            if not fenced:
                yield UnfenceBrokerRecord(broker_id=broker_id, broker_epoch=epoch)
        current = None
        for name, topic_id, partition_id, fields in self.state.replication.committed_partitions():
            replicas, isr, removing, adding, leader, leader_epoch, partition_epoch = fields
            if topic_id != current:
                current = topic_id
                yield TopicRecord(topic_name=name, topic_id=topic_id)
            yield PartitionRecord(
                partition_id=partition_id, topic_id=topic_id, replicas=replicas, isr=isr,
                removing_replicas=removing, adding_replicas=adding, leader=leader,
                leader_epoch=leader_epoch, partition_epoch=partition_epoch,
            )

    # ---- who may lead --------------------------------------------------------------------------

    def _stays(self, broker_id: int) -> bool:
        """PART-3: a leader stays while registered and unfenced."""
        return self.state.cluster.is_active(broker_id)

    def _eligible(self, broker_id: int) -> bool:
        """PART-3: registered, unfenced, not in controlled shutdown."""
        if not self.state.cluster.is_active(broker_id):
            return False
        lease = self.leases.leases.get(broker_id)
        return lease is None or not lease.in_controlled_shutdown

    def _change(self, partition: Partition, stays=None, eligible=None, **lists) -> None:
        """Build a partition change with the one builder and add it to the batch, if anything changes."""
        record = build_change(partition, stays or self._stays, eligible or self._eligible, **lists)
        if record is not None:
            self._add(record)

    def _without(self, broker_id: int):
        """The predicates of PART-3 for changes that take ``broker_id`` out (fencing, unregistering)."""
        stays, eligible = self._stays, self._eligible
        return (lambda b: b != broker_id and stays(b)), (lambda b: b != broker_id and eligible(b))

    # ---- fencing, unfencing, unregistering, controlled shutdown ----------------------------------

    def _fence(self, broker_id: int) -> None:
        """PART-6: out of every ISR but a sole place, out of leadership; then the FenceBrokerRecord."""
        epoch = self.state.cluster.brokers[broker_id].epoch
        stays, eligible = self._without(broker_id)
        for partition in self.state.replication.partitions_of(broker_id):
            isr = partition.isr
            if broker_id not in isr:
                continue
            new_isr = isr if len(isr) == 1 else tuple(b for b in isr if b != broker_id)
            self._change(partition, stays, eligible, isr=new_isr)
        self._add(FenceBrokerRecord(broker_id=broker_id, broker_epoch=epoch))

    def _unfence(self, broker_id: int) -> None:
        """LEASE-10 and PART-7: the UnfenceBrokerRecord, then elections where it is in sync and nobody leads."""
        self._add(UnfenceBrokerRecord(broker_id=broker_id, broker_epoch=self.state.cluster.brokers[broker_id].epoch))
        for partition in self.state.replication.partitions_of(broker_id):
            if partition.leader == NO_LEADER and broker_id in partition.isr:
                self._change(partition)

    def _controlled_shutdown(self, broker_id: int) -> bool:
        """SHUT-1 to SHUT-3; returns ShouldShutDown."""
        self.leases.leases[broker_id].in_controlled_shutdown = True
        replication = self.state.replication
        for partition in replication.partitions_of(broker_id):
            if partition.leader == broker_id:
                new_leader = elect(partition.replicas, partition.isr, self._eligible)
                if new_leader != NO_LEADER:
                    self._change(partition, leader=new_leader)
        if replication.leads_any(broker_id):
            return False
        self._fence(broker_id)
        return True

    # ---- requests -------------------------------------------------------------------------------

    def _broker_registration(self, request, version: int):
        """REG-1 to REG-6."""
        if version != 0:
            return BrokerRegistrationResponse(error_code=Error.UNSUPPORTED_VERSION)
        names = [listener.name for listener in request.listeners]
        feature_names = [feature.name for feature in request.features]
        if (
            request.broker_id < 0
            or request.incarnation_id == ZERO_UUID
            or request.current_metadata_offset < -1
            or len(set(names)) != len(names)
            or len(set(feature_names)) != len(feature_names)
            or any(f.min_supported_version < 0 or f.min_supported_version > f.max_supported_version for f in request.features)
        ):
            return BrokerRegistrationResponse(error_code=Error.INVALID_REQUEST)
        if request.cluster_id != self.config.cluster_id:
            return BrokerRegistrationResponse(error_code=Error.INVALID_CLUSTER_ID)
        broker_id = request.broker_id
        existing = self.state.cluster.brokers.get(broker_id)
        if existing is not None and existing.incarnation_id == request.incarnation_id:
            self.leases.touch(broker_id, self.now_ms)  # REG-3: a retry; contact
            return BrokerRegistrationResponse(error_code=Error.NONE, broker_epoch=existing.epoch)
        if existing is not None and self.leases.claimed(broker_id, self.now_ms):
            return BrokerRegistrationResponse(error_code=Error.DUPLICATE_BROKER_REGISTRATION)
        offered = {f.name: f for f in request.features}
        for name, (low, high) in self.state.cluster.features.items():
            feature = offered.get(name)
            if feature is None or not (feature.min_supported_version <= low and high <= feature.max_supported_version):
                return BrokerRegistrationResponse(error_code=Error.UNSUPPORTED_VERSION)
        epoch = self.log_end_offset  # REG-6: the offset this record is written at
        endpoint, feature_type = RegisterBrokerRecord.BrokerEndpoint, RegisterBrokerRecord.BrokerFeature
        self._add(RegisterBrokerRecord(
            broker_id=broker_id,
            incarnation_id=request.incarnation_id,
            broker_epoch=epoch,
            end_points=tuple(endpoint(name=l.name, host=l.host, port=l.port, security_protocol=l.security_protocol) for l in request.listeners),
            features=tuple(feature_type(name=f.name, min_version=f.min_supported_version, max_version=f.max_supported_version) for f in request.features),
            rack=request.rack,
        ))
        self.leases.start(broker_id, self.now_ms, fenced=True)
        return BrokerRegistrationResponse(error_code=Error.NONE, broker_epoch=epoch)

    def _broker_heartbeat(self, request, version: int):
        """LEASE-3 to LEASE-13, SHUT-1 to SHUT-4, LAO-1, LAO-2."""
        if version not in HEARTBEAT_VERSIONS:
            return BrokerHeartbeatResponse(error_code=Error.UNSUPPORTED_VERSION)
        broker_id = request.broker_id
        registration = self.state.cluster.brokers.get(broker_id)
        if registration is None:
            return BrokerHeartbeatResponse(error_code=Error.BROKER_ID_NOT_REGISTERED)
        if request.broker_epoch != registration.epoch:
            return BrokerHeartbeatResponse(error_code=Error.STALE_BROKER_EPOCH)
        offset = request.current_metadata_offset
        if offset < 0:
            return BrokerHeartbeatResponse(error_code=Error.INVALID_REQUEST)
        leases = self.leases
        lease = leases.leases[broker_id]
        if offset < lease.metadata_offset:  # LEASE-6: a late copy, answered and otherwise ignored
            return self._status(registration, lease, version, False)
        leases.touch(broker_id, self.now_ms, offset)
        should_shut_down = False
        if not registration.fenced:
            if request.want_fence:
                wants_shutdown = request.want_shut_down or lease.in_controlled_shutdown
                self._fence(broker_id)
                should_shut_down = wants_shutdown
            elif request.want_shut_down or lease.in_controlled_shutdown:
                should_shut_down = self._controlled_shutdown(broker_id)
        elif request.want_shut_down:
            should_shut_down = True
        elif not request.want_fence and offset > registration.epoch:
            self._unfence(broker_id)
        lease.shutdown_granted = should_shut_down  # REG-4: a broker let go gives its id up
        return self._status(registration, lease, version, should_shut_down)

    def _status(self, registration, lease, version: int, should_shut_down: bool):
        return BrokerHeartbeatResponse(
            error_code=Error.NONE,
            is_caught_up=lease.metadata_offset > registration.epoch,
            is_fenced=registration.fenced,
            should_shut_down=should_shut_down,
            lowest_acknowledged_offset=self.leases.lowest_acknowledged_offset(self.committed_offset) if version >= 1 else -1,
        )

    def _unregister_broker(self, request, version: int):
        """UNREG-1, UNREG-2, PART-8."""
        broker_id = request.broker_id
        registration = self.state.cluster.brokers.get(broker_id)
        if registration is None:
            return UnregisterBrokerResponse(error_code=Error.NONE)
        stays, eligible = self._without(broker_id)

        def without(brokers):
            return tuple(x for x in brokers if x != broker_id)

        for partition in self.state.replication.partitions_of(broker_id):
            self._change(
                partition,
                stays,
                eligible,
                replicas=without(partition.replicas),
                isr=without(partition.isr),
                removing=without(partition.removing_replicas),
                adding=without(partition.adding_replicas),
            )
        self._add(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=registration.epoch))
        self.leases.remove(broker_id)
        return UnregisterBrokerResponse(error_code=Error.NONE)

    def _alter_isr(self, request, version: int):
        """ISR-1 to ISR-11."""
        registration = self.state.cluster.brokers.get(request.broker_id)
        if registration is None or registration.epoch != request.broker_epoch:
            return AlterIsrResponse(error_code=Error.STALE_BROKER_EPOCH)
        counts: dict[tuple, int] = {}
        for topic in request.topics:
            for entry in topic.partitions:
                key = (topic.topic_id, entry.partition_index)
                counts[key] = counts.get(key, 0) + 1
        topic_result, partition_result = AlterIsrResponse.TopicData, AlterIsrResponse.TopicData.PartitionData
        topics = []
        for topic in request.topics:
            results = []
            for entry in topic.partitions:
                error = self._alter_partition_isr(request.broker_id, topic.topic_id, entry, counts)
                if error is not None:
                    results.append(partition_result(partition_index=entry.partition_index, error_code=error))
                    continue
                partition = self.state.replication.partition(topic.topic_id, entry.partition_index)
                assert partition is not None, "_alter_partition_isr found it"
                if partition.leader != request.broker_id:  # ISR-10: a completed reassignment removed it
                    results.append(partition_result(partition_index=entry.partition_index, error_code=Error.FENCED_LEADER_EPOCH))
                    continue
                results.append(partition_result(
                    partition_index=entry.partition_index, error_code=Error.NONE, leader_id=partition.leader,
                    leader_epoch=partition.leader_epoch, isr=partition.isr, partition_epoch=partition.partition_epoch,
                ))
            topics.append(topic_result(topic_id=topic.topic_id, partitions=tuple(results)))
        return AlterIsrResponse(error_code=Error.NONE, topics=tuple(topics))

    def _alter_partition_isr(self, requester: int, topic_id: UUID, entry, counts) -> int | None:
        """The checks of one partition (ISR-3 to ISR-8) and, if they pass, its change (ISR-9); the error or None."""
        partition = self.state.replication.partition(topic_id, entry.partition_index)
        if partition is None:
            return Error.UNKNOWN_TOPIC_OR_PARTITION
        if counts[(topic_id, entry.partition_index)] > 1:
            return Error.INVALID_REQUEST
        if entry.leader_epoch != partition.leader_epoch:
            return Error.FENCED_LEADER_EPOCH
        if requester != partition.leader:
            return Error.NOT_LEADER_OR_FOLLOWER
        if entry.partition_epoch != partition.partition_epoch:
            return Error.INVALID_UPDATE_VERSION
        new_isr = entry.new_isr
        replicas = partition.replicas
        if (
            not new_isr
            or len(set(new_isr)) != len(new_isr)
            or any(b not in replicas for b in new_isr)
            or partition.leader not in new_isr
        ):
            return Error.INVALID_REQUEST
        is_active = self.state.cluster.is_active
        if not all(is_active(b) for b in new_isr):
            return Error.INELIGIBLE_REPLICA
        self._change(partition, isr=tuple(new_isr))
        return None

    def _create_topics(self, request, version: int):
        """TOPIC-1 to TOPIC-6, TOPIC-9 and TOPIC-11: every topic is planned first, and its records are
        added only once the whole request is known to fit in one operation."""
        result = CreateTopicsResponse.CreatableTopicResult
        seen: set[str] = set()
        taken: set = set()  # the ids of the topics planned before, as the image would have them
        plans, room = [], MAX_RECORDS_PER_REQUEST
        for topic in request.topics:
            first = topic.name not in seen
            seen.add(topic.name)
            error, records = self._plan_topic(topic, first, taken, room)
            if error == Error.POLICY_VIOLATION:  # TOPIC-11: refused as a whole, nothing written
                return CreateTopicsResponse(topics=tuple(
                    result(name=t.name, topic_id=ZERO_UUID, error_code=Error.POLICY_VIOLATION) for t in request.topics))
            if records:
                taken.add(topic.topic_id)
                room -= len(records)
            plans.append((topic, error, records))
        results = []
        for topic, error, records in plans:
            for record in records:
                self._add(record)
            results.append(result(name=topic.name, topic_id=topic.topic_id if records else ZERO_UUID, error_code=error))
        return CreateTopicsResponse(topics=tuple(results))

    def _plan_topic(self, topic, first: bool, taken: set, room: int) -> tuple[int, list]:
        """One topic's error and records, when the request may still append ``room`` records."""
        name = topic.name
        if not (0 < len(name) <= MAX_TOPIC_NAME and name not in (".", "..") and set(name) <= _LEGAL_NAME_CHARS):
            return Error.INVALID_TOPIC_EXCEPTION, []
        if not first:
            return Error.INVALID_REQUEST, []
        replication, brokers = self.state.replication, self.state.cluster.brokers
        if name in replication.topics_by_name:
            return Error.TOPIC_ALREADY_EXISTS, []
        if topic.topic_id == ZERO_UUID or topic.topic_id in replication.topics or topic.topic_id in taken:
            return Error.INVALID_REQUEST, []
        by_count = topic.num_partitions != -1 or topic.replication_factor != -1
        if bool(topic.assignments) == by_count:
            return Error.INVALID_REQUEST, []
        if topic.assignments:  # TOPIC-3
            by_index = {a.partition_index: tuple(a.broker_ids) for a in topic.assignments}
            if len(by_index) != len(topic.assignments) or sorted(by_index) != list(range(len(by_index))):
                return Error.INVALID_REPLICA_ASSIGNMENT, []
            for replicas in by_index.values():
                if not replicas or len(set(replicas)) != len(replicas) or any(b not in brokers for b in replicas):
                    return Error.INVALID_REPLICA_ASSIGNMENT, []
            if len({len(replicas) for replicas in by_index.values()}) != 1:  # TOPIC-9
                return Error.INVALID_REPLICA_ASSIGNMENT, []
            count, no_isr = len(by_index), Error.INVALID_REPLICA_ASSIGNMENT
        else:  # TOPIC-4
            if topic.num_partitions < 1:
                return Error.INVALID_PARTITIONS, []
            if not 1 <= topic.replication_factor <= len(brokers):
                return Error.INVALID_REPLICATION_FACTOR, []
            count, no_isr = topic.num_partitions, Error.INVALID_REPLICATION_FACTOR
        if 1 + count > room:  # TOPIC-11: counted before anything is placed
            return Error.POLICY_VIOLATION, []
        if topic.assignments:
            assignment = [by_index[i] for i in range(count)]
        else:
            ids = sorted(brokers)
            n = len(ids)
            assignment = [tuple(ids[(p + j) % n] for j in range(topic.replication_factor)) for p in range(count)]
        isrs = [tuple(b for b in replicas if self._eligible(b)) for replicas in assignment]  # TOPIC-5
        if not all(isrs):
            return no_isr, []
        records = [TopicRecord(topic_name=name, topic_id=topic.topic_id)]
        for partition_id, (replicas, isr) in enumerate(zip(assignment, isrs, strict=True)):
            records.append(PartitionRecord(
                partition_id=partition_id, topic_id=topic.topic_id, replicas=replicas, isr=isr,
                removing_replicas=(), adding_replicas=(), leader=isr[0], leader_epoch=0, partition_epoch=0,
            ))
        return Error.NONE, records

    def _delete_topics(self, request, version: int):
        """TOPIC-7, TOPIC-10, REASSIGN-12."""
        result = DeleteTopicsResponse.DeletableTopicResult
        replication = self.state.replication
        seen: set[str] = set()
        results = []
        for name in request.topic_names:
            committed_id = replication.committed_topic_id(name)  # TOPIC-10: names resolve against committed state
            topic = None if committed_id is None else replication.topics.get(committed_id)
            if name in seen:
                results.append(result(name=name, topic_id=ZERO_UUID, error_code=Error.INVALID_REQUEST))
            elif committed_id is None:
                results.append(result(name=name, topic_id=ZERO_UUID, error_code=Error.UNKNOWN_TOPIC_OR_PARTITION))
            elif topic is None or topic.name != name:  # an uncommitted deletion already removed it
                results.append(result(name=name, topic_id=ZERO_UUID, error_code=Error.UNKNOWN_TOPIC_ID))
            else:
                results.append(result(name=name, topic_id=topic.topic_id, error_code=Error.NONE))
                self._add(RemoveTopicRecord(topic_id=topic.topic_id))
            seen.add(name)
        return DeleteTopicsResponse(responses=tuple(results))

    def _alter_reassignments(self, request, version: int):
        """REASSIGN-1 to REASSIGN-9."""
        counts: dict[tuple, int] = {}
        for topic in request.topics:
            for entry in topic.partitions:
                key = (topic.name, entry.partition_index)
                counts[key] = counts.get(key, 0) + 1
        topic_result = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
        partition_result = topic_result.ReassignablePartitionResponse
        replication, brokers = self.state.replication, self.state.cluster.brokers
        responses = []
        for topic in request.topics:
            known = replication.topics_by_name.get(topic.name)
            results = []
            for entry in topic.partitions:
                partition = replication.partition(known.topic_id, entry.partition_index) if known else None
                if partition is None:
                    error = Error.UNKNOWN_TOPIC_OR_PARTITION
                elif counts[(topic.name, entry.partition_index)] > 1:
                    error = Error.INVALID_REQUEST
                elif entry.replicas is None:
                    error = self._cancel_reassignment(partition)
                else:
                    target = tuple(entry.replicas)
                    if not target or len(set(target)) != len(target) or any(b not in brokers for b in target):
                        error = Error.INVALID_REPLICA_ASSIGNMENT
                    else:
                        error = Error.NONE
                        self._start_reassignment(partition, target)
                results.append(partition_result(partition_index=entry.partition_index, error_code=error))
            responses.append(topic_result(name=topic.name, partitions=tuple(results)))
        return AlterPartitionReassignmentsResponse(error_code=Error.NONE, responses=tuple(responses))

    def _start_reassignment(self, partition: Partition, target: tuple[int, ...]) -> None:
        """REASSIGN-4, REASSIGN-5, REASSIGN-9: removing replicas first, then the target in its order."""
        current = partition.replicas
        removing = tuple(b for b in current if b not in target)
        adding = tuple(b for b in target if b not in current)
        if not removing and not adding:
            self._change(partition, replicas=target, removing=(), adding=())
        else:
            self._change(partition, replicas=removing + target, removing=removing, adding=adding)

    def _cancel_reassignment(self, partition: Partition) -> Error:
        """REASSIGN-8."""
        if not partition.reassigning:
            return Error.NO_REASSIGNMENT_IN_PROGRESS
        adding = partition.adding_replicas
        isr = tuple(b for b in partition.isr if b not in adding)
        if not isr:
            return Error.INVALID_REPLICA_ASSIGNMENT
        replicas = tuple(b for b in partition.replicas if b not in adding)
        self._change(partition, isr=isr, replicas=replicas, removing=(), adding=())
        return Error.NONE

    def _list_reassignments(self, request):
        """REASSIGN-10: from the committed state."""
        wanted: dict[str, set[int]] | None
        if request.topics is None:
            wanted = None
        else:
            wanted = {}
            for topic in request.topics:
                wanted.setdefault(topic.name, set()).update(topic.partition_indexes)
        topic_type = ListPartitionReassignmentsResponse.OngoingTopicReassignment
        partition_type = topic_type.OngoingPartitionReassignment
        topics: dict[str, list] = {}
        for name, _, partition_id, fields in self.state.replication.committed_partitions(only_reassigning=True):
            replicas, _, removing, adding, *_ = fields
            if wanted is not None and partition_id not in wanted.get(name, ()):
                continue
            topics.setdefault(name, []).append(partition_type(
                partition_index=partition_id, replicas=replicas, adding_replicas=adding, removing_replicas=removing,
            ))
        return ListPartitionReassignmentsResponse(
            error_code=Error.NONE,
            topics=tuple(topic_type(name=name, partitions=tuple(ps)) for name, ps in sorted(topics.items())),
        )


__all__ = ["Controller", "ControllerConfig", "Outcome", "Reply", "UNSET", "error_response"]
