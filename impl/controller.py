"""The active controller: events in, records and responses out.

The same event interface as the model: a request (with its version), a clock tick, a commit up
to an offset, a failover, a snapshot. This module is the event loop, model/controller.py and
model/log.py's counterpart: it hands each request to its handler, one module per concern as in the
model (registration.py, heartbeat.py, alter_isr.py, topics.py, reassignment.py, and partitions.py
for the partition changes they share). A handler is a function of the controller and the request;
it decides records and the response, adding each record to the request's batch with
:meth:`Controller._add`, which replays it into the in-memory state at once (LOG-5), so that later
decisions of the same batch see it. The batch is appended to the log whole (LOG-4) and the
response waits for its commit (LOG-7). A failover restores the committed state from the journal
(LOG-10). Leases are soft state, kept apart (leases.py).

Which records say what follows the profile's record formats (formats.py, DEC-22), held as
``controller.formats``; the log and the snapshots hold them framed by the profile's codec
(``controller.codec``: its record formats and frame type, DEC-10).
"""

from __future__ import annotations

import functools
import gc
import os
from collections import deque
from pathlib import Path

from . import meta_properties
from .alter_isr import handle_alter_isr
from .builder import UNSET
from .codec import CodecError, profile_codec
from .config import ControllerConfig
from .errors import Error, Refused
from .formats import formats_of
from .heartbeat import handle_broker_heartbeat, lapsed_brokers, lowest_acknowledged_offset_versions, scan_sessions
from .leases import LeaseManager
from .metrics import ControllerMetrics
from .sessions import registration_order
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
    KafkaRegisterBrokerRecord,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    PartitionRecord,
    RegisterBrokerRecord,
    Struct,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from .partitions import fence_broker
from .reassignment import handle_alter_partition_reassignments, handle_list_partition_reassignments
from .registration import handle_broker_registration, handle_unregister_broker
from .state import MetadataState
from .storage import DiskLog, SnapshotStore, StorageError, plan_rebuild
from .topics import handle_create_topics, handle_delete_topics

REGISTRATION_RECORDS = (RegisterBrokerRecord, KafkaRegisterBrokerRecord)  # either formats' (DEC-22)
SNAPSHOTS_KEPT = 2  # STORAGE.md: keep two, and the log from the older one on


@functools.cache
def supported_versions(request_type: type[Struct]) -> tuple[int, ...]:
    """RPC-2: the versions of a request type the schema gives (``VALID_VERSIONS``, "0-1" or "0")."""
    low, _, high = request_type.VALID_VERSIONS.partition("-")
    return tuple(range(int(low), int(high or low) + 1))


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

    __slots__ = (
        "config", "formats", "codec", "_fencing", "now_ms", "state", "leases", "batches", "disk", "snapshots", "startup",
        "log_start_offset", "log_end_offset", "committed_offset", "snapshot", "pending", "next_seq", "_batch", "_handlers",
        "next_offset_unit", "lao_versions", "metrics",
    )

    def __init__(self, config: ControllerConfig | None = None, now_ms: int = 0, *, bootstrap: bool = True) -> None:
        self.config = config or ControllerConfig()
        self.formats = formats_of(self.config.params)  # DEC-22: which records say what
        self.codec = profile_codec(self.config.params)  # DEC-22, DEC-10: how they are framed on disk
        self._fencing = self.formats.fencing  # the records that fence or unfence, which the leases follow
        self.now_ms = now_ms
        self.state = MetadataState()
        self.leases = self._lease_manager()
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
        self._batch: list | None = None  # the request's batch, from its first record (None before it)
        # the write requests' handlers, each called as handler(controller, request, version), with
        # the versions of the request its schema gives (RPC-2)
        self._handlers = {
            kind: (handler, supported_versions(kind)) for kind, handler in (
                (BrokerRegistrationRequest, handle_broker_registration),
                (BrokerHeartbeatRequest, handle_broker_heartbeat),
                (UnregisterBrokerRequest, handle_unregister_broker),
                (AlterIsrRequest, handle_alter_isr),
                (CreateTopicsRequest, handle_create_topics),
                (DeleteTopicsRequest, handle_delete_topics),
                (AlterPartitionReassignmentsRequest, handle_alter_partition_reassignments),
            )
        }
        # DEC-2: a heartbeat's offset is one more than the highest applied (kip-631), or the highest
        # applied (kafka); read on every heartbeat, so decided once here
        self.next_offset_unit = self.config.params.heartbeat_offset == "next-offset"
        self.lao_versions = lowest_acknowledged_offset_versions(self.config.params.rpc_formats)  # LAO-1, DEC-9
        self.metrics = ControllerMetrics()  # METRIC-1 to METRIC-6, in the controller's own clock
        if bootstrap:
            self._bootstrap()
            self.metrics = ControllerMetrics()  # METRIC-2: the batches a controller starts with are not observed

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

        The directory must be formatted (TOOL-1): its ``meta.properties`` must name this
        configuration's ``node_id`` and ``cluster_id``, or the open is refused with a
        :class:`~kraftspec.impl.meta_properties.MetaPropertiesError` (a :class:`StorageError`)
        naming the file and the key, before anything on disk is touched. :meth:`create` formats
        a new directory and opens it.

        A formatted directory whose log holds nothing committed yet (just formatted, or a crash
        before the format's commit) gets the bootstrap batch (LOG-14). Otherwise the newest valid
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
        settings = config or ControllerConfig()
        meta_properties.check(directory, settings.cluster_id, settings.node_id)  # TOOL-1: refuse an unformatted directory
        disk = DiskLog(
            directory / "log", committed_offset_missing=committed_offset_missing, quarantine_and_continue=quarantine_and_continue
        )
        try:
            return cls._recover(disk, SnapshotStore(directory / "snapshots"), config, now_ms)
        except BaseException as failure:
            disk.close()
            if isinstance(failure, CodecError):  # DEC-22, DEC-10: written under another profile?
                profile = (config or ControllerConfig()).profile
                raise StorageError(
                    directory, f"a record does not decode in the {profile} profile's record formats and frame type ({failure})"
                ) from failure
            raise

    @classmethod
    def create(cls, directory: str | os.PathLike, config: ControllerConfig | None = None, now_ms: int = 0) -> "Controller":
        """A controller on a new metadata directory: writes its ``meta.properties`` (TOOL-1) for
        this configuration's node and cluster, then opens it, which writes the bootstrap batch
        (LOG-14). Refuses (StorageError) a directory that is already formatted."""
        directory = Path(directory)
        settings = config or ControllerConfig()
        existing = meta_properties.read(directory)
        if existing is not None:
            raise meta_properties.MetaPropertiesError(
                directory / meta_properties.META_PROPERTIES,
                f"already formatted (cluster.id {existing.cluster_id}, node.id {existing.node_id}); open it instead",
            )
        meta_properties.write(directory, meta_properties.MetaProperties(settings.cluster_id, settings.node_id))
        return cls.open(directory, config, now_ms)

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
            controller.metrics = ControllerMetrics()
            return controller
        rebuild = plan_rebuild(disk, snapshots)
        replay_all, decode_frames = controller.state.replay_all, controller.codec.decode_frames
        # the cyclic garbage collector paused while the state is built: loading makes millions of
        # objects that live on and almost no garbage (what dies, dies by reference counting), and
        # each collection on the way would walk every object made so far (a third of the time of
        # a snapshot of a million partitions)
        collecting = gc.isenabled()
        gc.disable()
        try:
            for base_offset, frames in rebuild.batches():
                decoded = decode_frames(frames)
                replay_all(decoded)
                if base_offset is not None:  # LEASE-9: where the log's registration records stand
                    controller._note_registrations(base_offset, decoded)
        finally:
            if collecting:
                gc.enable()
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
        controller._fresh_leases(list(controller.state.cluster.brokers))  # LEASE-14
        controller.metrics = ControllerMetrics(rebuild.snapshot.end_offset if rebuild.snapshot else None)
        for base, records in controller.batches:  # kept uncommitted: appended, as far as it knows, as it starts
            controller.metrics.appended_batch(base, base + len(records), now_ms)
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
            records = tuple(self.codec.decode(frame)[0] for frame in batch.frames)
            journal.open_batch()
            for record in records:
                self.state.replay(record)
            self._note_registrations(batch.base_offset, records)
            self.log_end_offset = batch.base_offset + len(records)
            journal.close_batch(self.log_end_offset)
            self.batches.append((batch.base_offset, records))

    def _note_registrations(self, base_offset: int, records) -> None:
        """LEASE-9: the offsets of the registration records among ``records``, read from the log from
        ``base_offset`` (a registration loaded from a snapshot counts at its epoch)."""
        for offset, record in enumerate(records, base_offset):
            if type(record) in REGISTRATION_RECORDS:
                self.state.cluster.registered_at(record.broker_id, offset)

    def close(self) -> None:
        if self.disk is not None:
            self.disk.close()

    def _bootstrap(self) -> None:
        """LOG-14: the finalized features, by name, as the first batch, committed."""
        features = self.formats.finalized(self.config.finalized_features)
        if features:
            for record in features:
                self._add(record)
            self._close_batch()
            self._commit_to(self.log_end_offset)

    # ---- batches --------------------------------------------------------------------------

    def _open_batch(self) -> list:
        """Open a batch: an event's first record does (an event that writes nothing opens none)."""
        batch: list = []
        self._batch = batch
        self.state.journal.open_batch()
        return batch

    def _add(self, record) -> None:
        """Replay a record into the in-memory state at once (LOG-5) and add it to the request's batch."""
        batch = self._batch
        if batch is None:
            batch = self._open_batch()
        self.state.replay(record)
        kind = type(record)
        fencing = self._fencing.get(kind)  # LEASE-15: the leases follow the fenced flag
        if fencing is not None:
            fenced = fencing(record)
            if fenced is not None:
                self.leases.set_fenced(record.broker_id, fenced)
        elif kind in REGISTRATION_RECORDS:  # LEASE-9: where the broker's registration record stands
            self.state.cluster.registered_at(record.broker_id, self.log_end_offset + len(batch))
        batch.append(record)

    def _add_all(self, records: list) -> None:
        """:meth:`_add` for each of ``records`` in turn, which are partition changes (no record
        among them fences or unfences: the leases are not consulted)."""
        if not records:
            return
        batch = self._batch
        if batch is None:
            batch = self._open_batch()
        self.state.replay_all(records)
        batch.extend(records)

    def batch_size(self) -> int:
        """The records in the request's batch so far."""
        return 0 if self._batch is None else len(self._batch)

    def _close_batch(self) -> tuple[int, tuple] | None:
        """Append the request's batch to the log as one (LOG-4); None if it wrote nothing."""
        records, self._batch = self._batch, None
        if not records:
            return None
        base = self.log_end_offset
        batch = (base, tuple(records))
        self.log_end_offset = base + len(records)
        self.state.journal.close_batch(self.log_end_offset)
        self.batches.append(batch)
        self.metrics.appended_batch(base, self.log_end_offset, self.now_ms)
        if self.disk is not None:
            encode = self.codec.encode
            self.disk.append(base, [encode(r) for r in records])
        return batch

    # ---- the event interface ------------------------------------------------------------------

    def handle_request(self, request, version: int = 0) -> Outcome:
        """Handle a request at ``version``; replies carry the response's version (RPC-2: 0 when refused for its version)."""
        seq = self.next_seq
        self.next_seq = seq + 1
        if type(request) is ListPartitionReassignmentsRequest:  # LOG-8: a read, answered at once
            return Outcome(replies=(Reply(seq, request, version, handle_list_partition_reassignments(self, request)),), seq=seq)
        found = self._handlers.get(type(request))
        if found is None:
            raise TypeError(f"not a request this controller handles: {request!r}")
        handler, versions = found
        response = handler(self, request, version)  # its records go to its batch as it adds them
        batch = None if self._batch is None else self._close_batch()
        if version not in versions:  # RPC-2: refused for its version, answered at version 0
            version = 0
        if type(response) is Refused:
            refusal, response = response, response.response
            if refusal.rule in self.config.params.answered_at_once:  # DEC-21, kafka profile
                return Outcome((), (Reply(seq, request, version, response),), seq)
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
        leases = self.leases
        if leases.sessions is not None:  # DEC-25, kafka profile: the periodic scan, once if it is due
            if now_ms < leases.next_scan_ms:
                return Outcome()
            leases.next_scan_ms = now_ms + leases.scan_delay_ms(scan_sessions(self))
            batch = self._close_batch()
            return Outcome((batch,) if batch else ())
        batches = []
        for broker_id in lapsed_brokers(self, now_ms):
            fence_broker(self, broker_id)
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
        return Outcome((), self._release())

    def _commit_to(self, offset: int) -> None:
        if self.disk is not None:  # STORAGE.md: synced before it counts as committed
            self.disk.sync()
            self.disk.write_committed_offset(offset)
        self.committed_offset = offset
        self.metrics.committed(offset, self.now_ms)
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
        held = list(self.state.cluster.brokers)
        self.state.undo_uncommitted()
        self.batches.clear()
        if self.disk is not None:
            self.disk.truncate(self.committed_offset)
        self.log_end_offset = self.committed_offset
        self.metrics.truncated(self.committed_offset)
        replies = tuple(
            Reply(seq, request, version, error_response(request, Error.NOT_CONTROLLER))
            for _, seq, request, version, _ in self.pending
        )
        self.pending.clear()
        self._fresh_leases(held)
        return Outcome(replies=replies)

    def _fresh_leases(self, held: list[int]) -> None:
        """LEASE-14: a lease for every registered broker; in the kafka profile (DEC-25) a session for
        every unfenced one, in Kafka's order of its registration table, which held ``held``."""
        self.leases = self._lease_manager()
        brokers = self.state.cluster.brokers
        for broker_id, registration in sorted(brokers.items()):
            lease = self.leases.start(broker_id, self.now_ms, registration.fenced)
            lease.released = registration.fenced  # DEC-6: this controller has heard nothing from a fenced broker
        sessions = self.leases.sessions
        if sessions is not None:
            for broker_id in registration_order(sorted(set(held) | set(brokers))):
                unfenced = brokers.get(broker_id)
                if unfenced is not None and not unfenced.fenced:
                    sessions.touch(broker_id, unfenced.epoch, self.now_ms)

    def _lease_manager(self) -> LeaseManager:
        params = self.config.params
        return LeaseManager(
            self.config.session_timeout_ms, params.lease_lapses == "after-deadline", params.lease_expiry == "hash-map-scan",
            self.now_ms,
        )

    def take_snapshot(self) -> Outcome:
        """LOG-11: the committed state as its minimal records; the log before it may go."""
        end = self.committed_offset
        if self.snapshots is None:
            self.snapshot = (end, tuple(self.committed_records()))
        else:
            self.snapshots.write(end, map(self.codec.encode, self.committed_records()))
            kept = self.snapshots.list()[-SNAPSHOTS_KEPT:]
            self.snapshots.delete_older_than(kept[0].end_offset)
            assert self.disk is not None, "a controller with a snapshot store has a log on disk"
            self.disk.delete_before(kept[0].end_offset)
            self.snapshot = (end, None)
        self.log_start_offset = end
        self.metrics.snapshot_taken(end)
        return Outcome()

    # ---- the committed state ------------------------------------------------------------------

    def committed_records(self):
        """LOG-11: the minimal records of the committed state, in the snapshot's order, in the
        profile's record formats (DEC-22)."""
        say = self.formats
        cluster, journal = self.state.cluster, self.state.journal
        features = {}
        for name in set(cluster.features) | {k[1] for k in journal.touched() if k[0] == "feature"}:
            value = journal.committed_image(("feature", name), missing=cluster.features.get(name))
            if value is not None:
                features[name] = value
        yield from say.finalized((name, low, high) for name, (low, high) in features.items())
        broker_ids = set(cluster.brokers) | {k[1] for k in journal.touched() if k[0] == "broker"}
        for broker_id in sorted(broker_ids):
            live = cluster.brokers.get(broker_id)
            fields = journal.committed_image(("broker", broker_id), missing=live.fields() if live else None)
            if fields is None:
                continue
            yield from say.registration(*fields)  # Registration.fields(): the record's fields, fenced, in controlled shutdown
        current = None
        for name, topic_id, partition_id, fields in self.state.replication.committed_partitions():
            replicas, isr, removing, adding, leader, leader_epoch, partition_epoch = fields
            if topic_id != current:
                current = topic_id
                yield say.topic(name, topic_id)
            yield PartitionRecord.make(
                partition_id=partition_id, topic_id=topic_id, replicas=replicas, isr=isr,
                removing_replicas=removing, adding_replicas=adding, leader=leader,
                leader_epoch=leader_epoch, partition_epoch=partition_epoch,
            )


__all__ = ["Controller", "ControllerConfig", "Outcome", "Reply", "UNSET", "error_response"]
