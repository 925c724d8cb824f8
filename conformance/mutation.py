"""The mutation check: deliberate single-rule breakages of impl, and which checks catch them.

Each :class:`Mutant` breaks exactly one rule of spec/ in :mod:`kraftspec.impl`, at run time: its
context manager (:meth:`Mutant.applied`) replaces one method or function of impl with a broken
variant written here (a module's function wherever impl imported it by name), and puts the original
back afterwards. impl's source files are never edited.

:func:`run` applies the mutants one at a time and records, for each, whether it is *killed*:

* by the **corpus**: every ``*.jsonl`` trace under ``conformance/corpus/`` replayed at level
  ``records`` against :class:`~kraftspec.conformance.adapters.ImplAdapter` (a deterministic set of
  ``walk(seed, 200)`` traces when the corpus is empty or missing, and the report says so);
* by the **stateful tests**: ``tests/test_stateful.py`` (``tests/test_impl_lockstep.py`` while
  that file does not exist, and the report says so) run by pytest in a subprocess, with the mutant
  applied inside that process by this module acting as a pytest plugin
  (``-p kraftspec.conformance.mutation``, the mutant named in ``KRAFTSPEC_MUTANT``).

Before any mutant, the same checks run against unmutated impl: a trace that already fails is left
out (it would kill every mutant), and a stateful run that already fails makes the stateful column
void. Inside the subprocess Hypothesis keeps the profile the tests chose but skips shrinking and
the example database: a kill needs one failing example, not the smallest, and a database would let
one mutant's failures steer the next run.

The whole check, from the repository root::

    python -m kraftspec.conformance.mutation            # --help for the options
    python -c "from kraftspec.conformance.mutation import run; print(run().table())"
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from attrs import frozen

from kraftspec.impl import alter_isr as impl_alter_isr
from kraftspec.impl import builder as impl_builder
from kraftspec.impl import heartbeat as impl_heartbeat
from kraftspec.impl import partitions as impl_partitions
from kraftspec.impl import reassignment as impl_reassignment
from kraftspec.impl import registration as impl_registration
from kraftspec.impl import topics as impl_topics
from kraftspec.impl.controller import Controller, Reply
from kraftspec.impl.errors import Error
from kraftspec.impl.heartbeat import HEARTBEAT_VERSIONS
from kraftspec.impl.leases import LeaseManager
from kraftspec.impl.messages import (
    BrokerRegistrationResponse,
    CreateTopicsRequest,
    FenceBrokerRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
)
from kraftspec.impl.replication import NO_LEADER
from kraftspec.impl.cluster import ClusterControl
from kraftspec.impl.state import MetadataState

from .adapters import ImplAdapter
from .generate import walk
from .replay import replay
from .trace import Trace, TraceError, read

MUTANT_ENV = "KRAFTSPEC_MUTANT"
"""The environment variable naming the mutant the pytest plugin applies in a subprocess."""
PLUGIN = "kraftspec.conformance.mutation"
"""This module's import name, the plugin pytest loads (``__name__`` is ``__main__`` under ``python -m``)."""

REPOSITORY = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).resolve().parent / "corpus"
STATEFUL_TESTS = REPOSITORY / "tests" / "test_stateful.py"
LOCKSTEP_TESTS = REPOSITORY / "tests" / "test_impl_lockstep.py"
WALK_STEPS = 200
DEFAULT_WALKS = 50
DEFAULT_TIMEOUT_S = 900.0


# ---- mutants -----------------------------------------------------------------------------------


@frozen
class Mutant:
    """One deliberate breakage of one rule: ``owner.attribute`` (a class or a module of impl)
    is replaced by ``variant(original)`` while :meth:`applied` is active; a module's function
    also in every module of impl that imported it by name (the controller imports its handlers
    so, and the handler modules the partition changes they share)."""

    name: str
    rule: str
    description: str
    owner: Any
    attribute: str
    variant: Callable[[Callable], Callable]

    @property
    def target(self) -> str:
        """What the mutant replaces, as ``module.Class.attribute`` or ``module.function``."""
        owner = self.owner
        if isinstance(owner, type):
            return f"{owner.__module__}.{owner.__qualname__}.{self.attribute}"
        return f"{owner.__name__}.{self.attribute}"

    @contextmanager
    def applied(self) -> Iterator["Mutant"]:
        """Replace the target with the broken variant; restore the original on the way out, always."""
        original = vars(self.owner)[self.attribute]
        places = [(self.owner, self.attribute)]
        if not isinstance(self.owner, type):
            places += [(module, name) for module in _impl_modules() if module is not self.owner
                       for name, value in vars(module).items() if value is original]
        broken = self.variant(original)
        for owner, name in places:
            setattr(owner, name, broken)
        try:
            yield self
        finally:
            for owner, name in places:
                setattr(owner, name, original)


def _impl_modules() -> list[Any]:
    """impl's modules imported so far."""
    return [module for name, module in list(sys.modules.items()) if name.startswith("kraftspec.impl.") and module is not None]


def _copy(message, **changes):
    """An impl message or record like ``message`` with some fields replaced (impl never changes one)."""
    fields = {name: getattr(message, name) for name in message.FIELDS}
    return type(message)(**{**fields, **changes})


# LEASE-8
def lapse_after_the_deadline(original):
    """Leases lapse only once the clock is past the deadline, one millisecond late."""

    def expired(self, now_ms):
        return original(self, now_ms - 1)

    return expired


# LEASE-7
def fenced_heartbeat_is_not_contact(original):
    """An accepted heartbeat of a fenced broker records its offset but not its contact."""

    def touch(self, broker_id, now_ms, metadata_offset=None):
        if metadata_offset is None or broker_id in self.unfenced:
            return original(self, broker_id, now_ms, metadata_offset)
        lease = self.leases[broker_id]
        last_contact = lease.last_contact_ms
        original(self, broker_id, now_ms, metadata_offset)
        lease.last_contact_ms = last_contact
        return lease

    return touch


# REG-4
def fenced_registration_gives_its_id_up(original):
    """The duplicate-registration check holds an id only for unfenced brokers."""

    def claimed(self, broker_id, now_ms):
        return broker_id in self.unfenced and original(self, broker_id, now_ms)

    return claimed


# LEASE-6
def lower_offset_heartbeat_is_ignored(original):
    """A heartbeat reporting a lower offset than an earlier one is answered and otherwise ignored (the rule before DEC-13)."""

    def handle_broker_heartbeat(controller, request, version):
        registration = controller.state.cluster.brokers.get(request.broker_id)
        lease = controller.leases.leases.get(request.broker_id)
        if (
            version in HEARTBEAT_VERSIONS
            and registration is not None
            and lease is not None
            and request.broker_epoch == registration.epoch
            and 0 <= request.current_metadata_offset < lease.metadata_offset
        ):
            return impl_heartbeat._status(controller, registration, lease, version, False)
        return original(controller, request, version)

    return handle_broker_heartbeat


# LEASE-4
def stale_epoch_heartbeat_is_accepted(original):
    """A heartbeat with another broker epoch is handled as if it carried the registration's."""

    def handle_broker_heartbeat(controller, request, version):
        registration = controller.state.cluster.brokers.get(request.broker_id)
        if registration is not None and request.broker_epoch != registration.epoch:
            request = _copy(request, broker_epoch=registration.epoch)
        return original(controller, request, version)

    return handle_broker_heartbeat


def _epoch_at(offset_of: Callable[[Controller], int]):
    """A registration handler that gives the epoch ``offset_of(controller)`` instead of the log end offset."""

    def variant(original):
        def handle_broker_registration(controller, request, version):
            log_end_offset = controller.log_end_offset
            controller.log_end_offset = offset_of(controller)  # the handler reads it only for the epoch
            try:
                return original(controller, request, version)
            finally:
                controller.log_end_offset = log_end_offset

        return handle_broker_registration

    return variant


# REG-6
epoch_from_the_committed_offset = _epoch_at(lambda controller: controller.committed_offset)
epoch_from_the_committed_offset.__doc__ = "The broker epoch is the committed offset, not the offset the record is written at."

# REG-6
epoch_from_the_next_offset = _epoch_at(lambda controller: controller.log_end_offset + 1)
epoch_from_the_next_offset.__doc__ = "The broker epoch is one past the offset the record is written at."


# REG-3
def retried_registration_registers_again(original):
    """A retry (same incarnation) writes a new RegisterBrokerRecord with a new epoch."""

    def handle_broker_registration(controller, request, version):
        existing = controller.state.cluster.brokers.get(request.broker_id)
        response = original(controller, request, version)
        if existing is None or existing.incarnation_id != request.incarnation_id or response.error_code != Error.NONE:
            return response
        epoch = controller.log_end_offset
        controller._add(RegisterBrokerRecord(
            broker_id=existing.broker_id, incarnation_id=existing.incarnation_id, broker_epoch=epoch,
            end_points=existing.end_points, features=existing.features, rack=existing.rack,
        ))
        controller.leases.start(existing.broker_id, controller.now_ms, fenced=True)
        return BrokerRegistrationResponse(error_code=Error.NONE, broker_epoch=epoch)

    return handle_broker_registration


# REG-5
def finalized_features_are_not_checked(original):
    """A registration is accepted whatever features the broker supports."""

    def handle_broker_registration(controller, request, version):
        cluster = controller.state.cluster
        features = cluster.features
        cluster.features = {}  # the handler reads them only for the check
        try:
            return original(controller, request, version)
        finally:
            cluster.features = features

    return handle_broker_registration


def _fencing(new_isr: Callable[[tuple, int], tuple], elect_new_leader: bool = True):
    """A ``fence_broker`` whose ISR change is ``new_isr(isr, broker)``, and which leaves a partition
    the fenced broker led without a leader when ``elect_new_leader`` is false."""

    def variant(original):
        def fence_broker(controller, broker_id):
            epoch = controller.state.cluster.brokers[broker_id].epoch
            stays, eligible = impl_partitions.predicates_without(controller, broker_id)
            for partition in controller.state.replication.partitions_of(broker_id):
                if broker_id not in partition.isr:
                    continue
                lists: dict[str, tuple | int] = {"isr": new_isr(partition.isr, broker_id)}
                if not elect_new_leader and partition.leader == broker_id:
                    lists["leader"] = NO_LEADER
                impl_partitions.partition_change(controller, partition, stays, eligible, **lists)
            controller._add(FenceBrokerRecord(broker_id=broker_id, broker_epoch=epoch))

        return fence_broker

    return variant


def _isr_without(isr: tuple, broker_id: int) -> tuple:
    return tuple(b for b in isr if b != broker_id)


# PART-6
fenced_broker_stays_in_isr = _fencing(lambda isr, broker_id: isr)
fenced_broker_stays_in_isr.__doc__ = "Fencing moves the broker's leaderships but leaves it in every ISR."

# PART-6
sole_isr_member_is_removed = _fencing(_isr_without)
sole_isr_member_is_removed.__doc__ = "Fencing removes the broker from an ISR it is the sole member of, emptying it."

# PART-6
fenced_leader_is_not_replaced = _fencing(lambda isr, b: isr if len(isr) == 1 else _isr_without(isr, b), elect_new_leader=False)
fenced_leader_is_not_replaced.__doc__ = "Fencing a leader leaves its partitions leaderless instead of electing from the ISR."


# PART-7
def unfenced_broker_joins_isrs(original):
    """Unfencing also adds the broker to the ISR of every partition that replicates on it."""

    def unfence_broker(controller, broker_id):
        original(controller, broker_id)
        for partition in controller.state.replication.partitions_of(broker_id):
            if broker_id not in partition.isr:
                impl_partitions.partition_change(controller, partition, isr=partition.isr + (broker_id,))

    return unfence_broker


# PART-7
def unfencing_elects_nobody(original):
    """Unfencing writes the UnfenceBrokerRecord and no election."""

    def unfence_broker(controller, broker_id):
        controller._add(UnfenceBrokerRecord(broker_id=broker_id, broker_epoch=controller.state.cluster.brokers[broker_id].epoch))

    return unfence_broker


# SHUT-1
def controlled_shutdown_is_forgotten(original):
    """A heartbeat without WantShutDown ends the broker's controlled shutdown."""

    def handle_broker_heartbeat(controller, request, version):
        lease = controller.leases.leases.get(request.broker_id)
        if lease is not None and not request.want_shut_down:
            lease.in_controlled_shutdown = False
        return original(controller, request, version)

    return handle_broker_heartbeat


# SHUT-2
def leadership_moves_to_a_broker_shutting_down(original):
    """Entering controlled shutdown records it but leaves the broker's ISRs and leaderships as they are."""

    def enter_controlled_shutdown(controller, broker_id):
        controller.leases.leases[broker_id].in_controlled_shutdown = True
        registration = controller.state.cluster.brokers[broker_id]
        for record in controller.formats.shutdown_begins(broker_id, registration.epoch, registration.in_controlled_shutdown):
            controller._add(record)

    return enter_controlled_shutdown


# SHUT-3
def shutdown_granted_at_once(original):
    """A broker entering controlled shutdown is let go in the heartbeat that asks, before the active brokers have applied the move (kafka profile)."""

    def controlled_shutdown(controller, broker_id):
        if original(controller, broker_id):
            return True
        impl_partitions.fence_broker(controller, broker_id)  # it leads nothing after SHUT-2: let it go now
        return True

    return controlled_shutdown


def _alter_isr_entry(**fields_from_partition: Callable[[Any], Any]):
    """An AlterIsr partition check that sees some of the request's fields replaced by the partition's own."""

    def variant(original):
        def _alter_partition(controller, requester, topic_id, entry, counts):
            partition = controller.state.replication.partition(topic_id, entry.partition_index)
            if partition is not None:
                entry = _copy(entry, **{name: value(partition) for name, value in fields_from_partition.items()})
            return original(controller, requester, topic_id, entry, counts)

        return _alter_partition

    return variant


# ISR-4
leader_epoch_is_not_checked = _alter_isr_entry(leader_epoch=lambda partition: partition.leader_epoch)
leader_epoch_is_not_checked.__doc__ = "AlterIsr accepts a leader epoch other than the partition's."

# ISR-6
partition_epoch_is_not_checked = _alter_isr_entry(partition_epoch=lambda partition: partition.partition_epoch)
partition_epoch_is_not_checked.__doc__ = "AlterIsr accepts a partition epoch other than the partition's."


# ISR-5
def any_broker_may_change_the_isr(original):
    """AlterIsr from a broker that is not the partition's leader is applied."""

    def _alter_partition(controller, requester, topic_id, entry, counts):
        partition = controller.state.replication.partition(topic_id, entry.partition_index)
        if partition is not None:
            requester = partition.leader
        return original(controller, requester, topic_id, entry, counts)

    return _alter_partition


# ISR-8
def ineligible_replica_is_accepted(original):
    """AlterIsr applies an ISR that names a fenced or unregistered broker."""

    def _alter_partition(controller, requester, topic_id, entry, counts):
        error = original(controller, requester, topic_id, entry, counts)
        if error != Error.INELIGIBLE_REPLICA:
            return error
        partition = controller.state.replication.partition(topic_id, entry.partition_index)
        impl_partitions.partition_change(controller, partition, isr=tuple(entry.new_isr))
        return None

    return _alter_partition


# REASSIGN-6
def one_adding_replica_completes(original):
    """A reassignment completes as soon as one adding replica (not all of them) is in the ISR."""

    def reassignment_complete(replicas, isr, adding, removing, completes="adding-in-sync"):
        if completes != "adding-in-sync":
            return original(replicas, isr, adding, removing, completes)
        if adding and not any(b in isr for b in adding):
            return False
        return any(b in replicas and b not in removing for b in isr)

    return reassignment_complete


# REASSIGN-4
def removing_replicas_go_last(original):
    """A reassignment's new replica list is the target followed by the removing replicas."""

    def start_reassignment(controller, partition, target):
        current = partition.replicas
        removing = tuple(b for b in current if b not in target)
        adding = tuple(b for b in target if b not in current)
        if not removing and not adding:
            impl_partitions.partition_change(controller, partition, replicas=target, removing=(), adding=())
        else:
            impl_partitions.partition_change(controller, partition, replicas=target + removing, removing=removing, adding=adding)

    return start_reassignment


# TOPIC-7
def deletion_unsets_leaders(original):
    """Deleting a topic first writes a change taking every partition's leader away."""

    def handle_delete_topics(controller, request, version):
        topics, seen = controller.state.replication.topics_by_name, set()
        for name in request.topic_names:
            topic = topics.get(name)
            if topic is not None and name not in seen:
                for partition in topic.partitions:
                    impl_partitions.partition_change(controller, partition, leader=NO_LEADER)
            seen.add(name)
        return original(controller, request, version)

    return handle_delete_topics


# TOPIC-4
def every_partition_on_the_first_brokers(original):
    """Placement by replication factor puts every partition on the lowest broker ids, not round robin."""

    def create_topic(controller, topic, first, taken, room):
        ids = sorted(controller.state.cluster.brokers)
        factor = topic.replication_factor
        if topic.assignments or not 1 <= topic.num_partitions < room or not 1 <= factor <= len(ids):
            return original(controller, topic, first, taken, room)
        assignment_type = CreateTopicsRequest.CreatableTopic.CreatableReplicaAssignment
        assignments = tuple(assignment_type(partition_index=p, broker_ids=tuple(ids[:factor])) for p in range(topic.num_partitions))
        explicit = _copy(topic, num_partitions=-1, replication_factor=-1, assignments=assignments)
        error, records = original(controller, explicit, first, taken, room)
        return (Error.INVALID_REPLICATION_FACTOR if error == Error.INVALID_REPLICA_ASSIGNMENT else error), records  # TOPIC-5's code

    return create_topic


# LOG-7
def responses_before_commit(original):
    """Write responses are released at once, before their records commit."""

    def release(self):
        released = tuple(Reply(seq, request, version, response) for _, seq, request, version, response in self.pending)
        self.pending.clear()
        return released

    return release


# LOG-8
def reads_see_uncommitted_state(original):
    """ListPartitionReassignments answers from the in-memory state, uncommitted changes included."""

    def handle_list_partition_reassignments(controller, request):
        journal = controller.state.journal
        batches = journal.batches
        journal.batches = deque()  # without the before-images the committed view is the live one
        try:
            return original(controller, request)
        finally:
            journal.batches = batches

    return handle_list_partition_reassignments


# LOG-10
def failover_keeps_uncommitted_tail(original):
    """A failover forgets the journal instead of undoing it: the uncommitted tail stays in the state."""

    def undo_uncommitted(self):
        self.journal.clear()

    return undo_uncommitted


# LAO-1
def fenced_brokers_count_for_lao(original):
    """LowestAcknowledgedOffset is the lowest offset of every registered broker, fenced ones included."""

    def lowest_acknowledged_offset(self, committed_offset):
        if not self.leases:
            return committed_offset
        return min(lease.metadata_offset for lease in self.leases.values())

    return lowest_acknowledged_offset


# PART-8
def unregistered_broker_leaves_the_replicas(original):
    """Unregistering takes the broker out of every list of its partitions, the replicas included (the rule before DEC-20)."""

    def unregister_broker(controller, broker_id):
        stays, eligible = impl_partitions.predicates_without(controller, broker_id)

        def without(brokers):
            return tuple(b for b in brokers if b != broker_id)

        for partition in controller.state.replication.partitions_of(broker_id):
            impl_partitions.partition_change(
                controller, partition, stays, eligible, replicas=without(partition.replicas), isr=without(partition.isr),
                removing=without(partition.removing_replicas), adding=without(partition.adding_replicas))
        return original(controller, broker_id)

    return unregister_broker


# PART-5
def change_records_repeat_unchanged_lists(original):
    """A PartitionChangeRecord names every list, changed or not."""

    def build_change(partition, stays, eligible, **lists):
        record = original(partition, stays, eligible, **lists)
        if record is None:
            return None

        def given(value, current):
            return current if value is None else value

        return PartitionChangeRecord(
            partition_id=record.partition_id, topic_id=record.topic_id, leader=record.leader,
            isr=given(record.isr, partition.isr),
            replicas=given(record.replicas, partition.replicas),
            removing_replicas=given(record.removing_replicas, partition.removing_replicas),
            adding_replicas=given(record.adding_replicas, partition.adding_replicas),
        )

    return build_change


def _edited(old: str, new: str, why: str):
    """A variant that is the original function with ``old`` (which must occur exactly once in its
    source) replaced by ``new``, compiled in the original's module; ``why`` says what it breaks."""

    def variant(original):
        function = original.__func__ if isinstance(original, (staticmethod, classmethod)) else original
        source = inspect.getsource(function)
        if source.count(old) != 1:
            raise LookupError(f"{function.__qualname__}: the text to replace occurs {source.count(old)} times, expected once: {old!r}")
        filename = inspect.getsourcefile(function)
        assert filename is not None  # getsource found the source above, in this file
        made: dict[str, Any] = {}
        exec(compile(textwrap.dedent(source.replace(old, new)), filename, "exec"),  # noqa: S102
             function.__globals__, made)
        return made[function.__name__]

    variant.__doc__ = why
    return variant


def _edit(name: str, rule: str, owner: Any, attribute: str, old: str, new: str, why: str) -> Mutant:
    """A mutant that edits one line or two of an impl function's source, in memory."""
    return Mutant(name, rule, why, owner, attribute, _edited(old, new, why))


def _mutant(name: str, rule: str, owner: Any, attribute: str, variant: Callable) -> Mutant:
    """A mutant described by its variant's docstring."""
    assert variant.__doc__ is not None, f"{name}: the variant has no docstring to describe the mutant"
    return Mutant(name, rule, variant.__doc__, owner, attribute, variant)


MUTANTS: tuple[Mutant, ...] = (
    # leases
    _mutant("lease-expiry-off-by-one", "LEASE-8", LeaseManager, "expired", lapse_after_the_deadline),
    _mutant("fenced-heartbeat-not-contact", "LEASE-7", LeaseManager, "touch", fenced_heartbeat_is_not_contact),
    _mutant("duplicate-check-ignores-fenced", "REG-4", LeaseManager, "claimed", fenced_registration_gives_its_id_up),
    _mutant("lower-offset-ignored", "LEASE-6", impl_heartbeat, "handle_broker_heartbeat", lower_offset_heartbeat_is_ignored),
    _mutant("stale-epoch-heartbeat-accepted", "LEASE-4", impl_heartbeat, "handle_broker_heartbeat", stale_epoch_heartbeat_is_accepted),
    # registration
    _mutant("epoch-from-committed-offset", "REG-6", impl_registration, "handle_broker_registration", epoch_from_the_committed_offset),
    _mutant("epoch-from-next-offset", "REG-6", impl_registration, "handle_broker_registration", epoch_from_the_next_offset),
    _mutant("retried-registration-writes-record", "REG-3", impl_registration, "handle_broker_registration", retried_registration_registers_again),
    _mutant("feature-check-skipped", "REG-5", impl_registration, "handle_broker_registration", finalized_features_are_not_checked),
    # fencing and unfencing
    _mutant("fenced-broker-left-in-isr", "PART-6", impl_partitions, "fence_broker", fenced_broker_stays_in_isr),
    _mutant("sole-isr-member-removed", "PART-6", impl_partitions, "fence_broker", sole_isr_member_is_removed),
    _mutant("fenced-leader-not-replaced", "PART-6", impl_partitions, "fence_broker", fenced_leader_is_not_replaced),
    _mutant("unfencing-adds-to-isr", "PART-7", impl_partitions, "unfence_broker", unfenced_broker_joins_isrs),
    _mutant("unfencing-elects-nobody", "PART-7", impl_partitions, "unfence_broker", unfencing_elects_nobody),
    # controlled shutdown
    _mutant("controlled-shutdown-not-sticky", "SHUT-1", impl_heartbeat, "handle_broker_heartbeat", controlled_shutdown_is_forgotten),
    _mutant("leadership-to-ineligible-broker", "SHUT-2", impl_partitions, "enter_controlled_shutdown",
            leadership_moves_to_a_broker_shutting_down),
    _mutant("shutdown-granted-at-once", "SHUT-3", impl_heartbeat, "controlled_shutdown", shutdown_granted_at_once),
    # AlterIsr
    _mutant("leader-epoch-check-skipped", "ISR-4", impl_alter_isr, "_alter_partition", leader_epoch_is_not_checked),
    _mutant("non-leader-isr-change-accepted", "ISR-5", impl_alter_isr, "_alter_partition", any_broker_may_change_the_isr),
    _mutant("partition-epoch-check-skipped", "ISR-6", impl_alter_isr, "_alter_partition", partition_epoch_is_not_checked),
    _mutant("fenced-isr-member-accepted", "ISR-8", impl_alter_isr, "_alter_partition", ineligible_replica_is_accepted),
    # partitions
    _mutant("change-record-repeats-lists", "PART-5", impl_builder, "build_change", change_records_repeat_unchanged_lists),
    _mutant("unregistered-broker-leaves-replicas", "PART-8", impl_partitions, "unregister_broker",
            unregistered_broker_leaves_the_replicas),
    # reassignment
    _mutant("reassignment-complete-too-early", "REASSIGN-6", impl_builder, "reassignment_complete", one_adding_replica_completes),
    _mutant("reassignment-wrong-replica-order", "REASSIGN-4", impl_reassignment, "start_reassignment", removing_replicas_go_last),
    # topics
    _mutant("delete-writes-partition-changes", "TOPIC-7", impl_topics, "handle_delete_topics", deletion_unsets_leaders),
    _mutant("placement-not-round-robin", "TOPIC-4", impl_topics, "create_topic", every_partition_on_the_first_brokers),
    # the metadata log: visibility, failover
    _mutant("responses-before-commit", "LOG-7", Controller, "_release", responses_before_commit),
    _mutant("reads-uncommitted-state", "LOG-8", impl_reassignment, "handle_list_partition_reassignments", reads_see_uncommitted_state),
    _mutant("failover-keeps-uncommitted-tail", "LOG-10", MetadataState, "undo_uncommitted", failover_keeps_uncommitted_tail),
    # LowestAcknowledgedOffset
    _mutant("lao-counts-fenced-brokers", "LAO-1", LeaseManager, "lowest_acknowledged_offset", fenced_brokers_count_for_lao),
)
"""The catalogue: every mutant, grouped by area."""

EDITS: tuple[Mutant, ...] = (
    # AlterIsr
    _edit("alter-isr-answers-old-partition-epoch", "ISR-1", impl_alter_isr, "handle_alter_isr",
          "partition_epoch=partition.partition_epoch,", "partition_epoch=entry.partition_epoch,",
          "An accepted AlterIsr answers the partition epoch the request carried, not the new one."),
    _edit("alter-isr-broker-epoch-unchecked", "ISR-2", impl_alter_isr, "handle_alter_isr",
          "if registration is None or registration.epoch != request.broker_epoch:", "if registration is None:",
          "AlterIsr from a registered broker is handled whatever broker epoch it carries."),
    _edit("unknown-partition-wrong-error", "ISR-3", impl_alter_isr, "_alter_partition",
          "return Error.UNKNOWN_TOPIC_OR_PARTITION if", "return Error.INVALID_REQUEST if",
          "AlterIsr for an unknown partition of a known topic answers INVALID_REQUEST."),
    _edit("unknown-topic-wrong-error", "ISR-3", impl_alter_isr, "_alter_partition",
          "else Error.UNKNOWN_TOPIC_ID", "else Error.UNKNOWN_TOPIC_OR_PARTITION",
          "AlterIsr for a topic id that is not known answers UNKNOWN_TOPIC_OR_PARTITION (the code before DEC-15)."),
    _edit("isr-without-leader-accepted", "ISR-7", impl_alter_isr, "_alter_partition",
          " or partition.leader not in new_isr:", ":",
          "AlterIsr accepts an ISR that leaves the leader out."),
    _edit("accepted-isr-change-not-applied", "ISR-9", impl_alter_isr, "_alter_partition",
          "partition_change(controller, partition, isr=tuple(new_isr))", "pass",
          "An accepted AlterIsr writes no partition change."),
    _edit("removed-leader-not-told-fenced", "ISR-10", impl_alter_isr, "handle_alter_isr",
          "if partition.leader != request.broker_id:", "if False:",
          "A leader whose AlterIsr completed a reassignment that removed it is answered NONE."),
    _edit("empty-alter-isr-checked", "ISR-12", impl_alter_isr, "handle_alter_isr",
          "if not request.topics:", "if not request.topics and request.broker_id < 0:",
          "An AlterIsr with no topics is checked like any other: a stale requester is refused."),
    _edit("partition-twice-accepted", "ISR-11", impl_alter_isr, "_alter_partition",
          "if counts[(topic_id.int, entry.partition_index)] > 1:", "if counts[(topic_id.int, entry.partition_index)] > 2:",
          "AlterIsr naming a partition twice handles both entries."),
    # heartbeats and leases
    _edit("refused-heartbeat-answers-lao", "LAO-2", impl_heartbeat, "handle_broker_heartbeat",
          'Refused("LEASE-4", BrokerHeartbeatResponse(error_code=Error.STALE_BROKER_EPOCH))',
          'Refused("LEASE-4", BrokerHeartbeatResponse(error_code=Error.STALE_BROKER_EPOCH, lowest_acknowledged_offset='
          'controller.leases.lowest_acknowledged_offset(controller.committed_offset) if version >= 1 else -1))',
          "A heartbeat refused for its broker epoch answers the LowestAcknowledgedOffset, not -1."),
    _edit("version-1-heartbeat-answers-no-lao", "LEASE-2", impl_heartbeat, "_status",
          "if version not in controller.lao_versions:",
          "if version - 1 not in controller.lao_versions:",
          "A version 1 heartbeat is answered LowestAcknowledgedOffset -1, as version 0 is."),
    _edit("unknown-broker-heartbeat-wrong-error", "LEASE-3", impl_heartbeat, "handle_broker_heartbeat",
          'Refused("LEASE-3", BrokerHeartbeatResponse(error_code=Error.STALE_BROKER_EPOCH))',
          'Refused("LEASE-3", BrokerHeartbeatResponse(error_code=Error.BROKER_ID_NOT_REGISTERED))',
          "A heartbeat from an unregistered id answers BROKER_ID_NOT_REGISTERED (the code before DEC-15)."),
    _edit("negative-offset-accepted", "LEASE-5", impl_heartbeat, "handle_broker_heartbeat",
          "if offset < 0 and next_offset_unit:", "if offset < -1 and next_offset_unit:",
          "A heartbeat with CurrentMetadataOffset -1 is accepted."),
    _edit("caught-up-one-offset-early", "LEASE-9", impl_heartbeat, "_status",
          "has_applied(controller, lease.metadata_offset, controller.state.cluster.record_offset(registration))",
          "has_applied(controller, lease.metadata_offset + 1, controller.state.cluster.record_offset(registration))",
          "IsCaughtUp is said one offset before the broker has applied its own registration."),
    _edit("caught-up-at-the-epoch", "LEASE-9", impl_heartbeat, "_status",
          "has_applied(controller, lease.metadata_offset, controller.state.cluster.record_offset(registration))",
          "has_applied(controller, lease.metadata_offset, registration.epoch)",
          "IsCaughtUp is said once the broker has applied the offset of its epoch, where its registration's batch "
          "begins, before its RegisterBrokerRecord when the batch first takes an unfenced predecessor out of its ISRs."),
    _edit("unfenced-one-offset-early", "LEASE-10", impl_heartbeat, "handle_broker_heartbeat",
          "elif not request.want_fence and has_applied(controller, offset, controller.state.cluster.record_offset(registration)):",
          "elif not request.want_fence and has_applied(controller, offset + 1, controller.state.cluster.record_offset(registration)):",
          "A fenced broker is unfenced one offset before it has applied its own registration."),
    _edit("fenced-broker-wanting-fence-unfenced", "LEASE-11", impl_heartbeat, "handle_broker_heartbeat",
          "elif not request.want_fence and has_applied(", "elif has_applied(",
          "A caught-up fenced broker is unfenced even while it sets WantFence."),
    _edit("want-fence-ignored", "LEASE-12", impl_heartbeat, "handle_broker_heartbeat",
          "elif request.want_fence:", "elif False:",
          "An active broker asking to be fenced stays active."),
    _edit("plain-heartbeat-starts-shutdown", "LEASE-13", impl_heartbeat, "handle_broker_heartbeat",
          "elif request.want_shut_down:\n            should_shut_down = controlled_shutdown(",
          "else:\n            should_shut_down = controlled_shutdown(",
          "An active broker that asks for nothing is put in controlled shutdown."),
    _edit("failover-keeps-old-leases", "LEASE-14", Controller, "failover",
          "        self._fresh_leases(held)\n", "",
          "A failover keeps the old leases instead of giving every broker a fresh one."),
    # the metadata log
    _edit("batch-leaves-an-offset-gap", "LOG-4", Controller, "_close_batch",
          "self.log_end_offset = base + len(records)", "self.log_end_offset = base + len(records) + 1",
          "Each batch leaves one offset unused after it."),
    _edit("records-not-replayed-as-appended", "LOG-5", Controller, "_add",
          "        self.state.replay(record)\n", "",
          "Records are appended without being replayed into the in-memory state."),
    _edit("commit-inside-a-batch", "LOG-6", Controller, "commit",
          "if end > offset:", "if base > offset:",
          "A commit offset inside a batch commits the whole batch."),
    _edit("committed-state-shows-uncommitted-brokers", "LOG-9", Controller, "committed_records",
          'fields = journal.committed_image(("broker", broker_id), missing=live.fields() if live else None)',
          "fields = live.fields() if live else None",
          "The committed state shows registrations that have not committed."),
    _edit("snapshot-leaves-out-unfencing", "LOG-11", Controller, "committed_records",
          "yield from say.registration(*fields)", "yield from say.registration(*fields[:6])",
          "The committed state's records give every broker as fenced (no UnfenceBrokerRecord; Fenced true)."),
    _edit("bootstrap-not-committed", "LOG-14", Controller, "_bootstrap",
          "            self._commit_to(self.log_end_offset)\n", "",
          "The bootstrap batch of finalized features is appended but not committed."),
    _edit("clock-lags-the-tick", "LOG-15", Controller, "tick",
          "self.now_ms = now_ms", "self.now_ms = now_ms - 1",
          "A tick sets the controller's clock a millisecond short of its time."),
    _edit("failover-releases-waiting-responses", "RPC-3", Controller, "failover",
          "Reply(seq, request, version, error_response(request, Error.NOT_CONTROLLER))\n"
          "            for _, seq, request, version, _ in self.pending",
          "Reply(seq, request, version, response)\n            for _, seq, request, version, response in self.pending",
          "A failover releases the waiting responses instead of answering them NOT_CONTROLLER."),
    _edit("sequence-numbers-skip", "RPC-6", Controller, "handle_request",
          "self.next_seq = seq + 1", "self.next_seq = seq + 2",
          "Requests are numbered 0, 2, 4, ... instead of consecutively."),
    _edit("refusals-answered-at-once-whatever-the-profile", "LOG-7", Controller, "handle_request",
          "if refusal.rule in self.config.params.answered_at_once:", "if True:",
          "Every refusal of a whole request is answered at once, before the log as it stood commits, whatever the profile."),
    _edit("unsupported-heartbeat-version-accepted", "RPC-2", impl_heartbeat, "handle_broker_heartbeat",
          "if version not in HEARTBEAT_VERSIONS:", "if version < 0:",
          "A heartbeat of an unsupported version is handled."),
    # membership and registration
    _edit("registration-starts-unfenced", "MEM-1", ClusterControl, "replay_register",
          "record.features, record.rack\n", "record.features, record.rack, False\n",
          "A new registration starts unfenced."),
    _edit("duplicate-registration-answers-an-epoch", "MEM-6", impl_registration, "handle_broker_registration",
          "BrokerRegistrationResponse(error_code=Error.DUPLICATE_BROKER_REGISTRATION)",
          "BrokerRegistrationResponse(error_code=Error.DUPLICATE_BROKER_REGISTRATION, broker_epoch=existing.epoch)",
          "A refused duplicate registration answers the registered broker's epoch, not -1."),
    _edit("unregistration-answers-an-error", "MEM-7", impl_registration, "handle_unregister_broker",
          "controller.leases.remove(broker_id)\n    return UnregisterBrokerResponse(error_code=Error.NONE)",
          "controller.leases.remove(broker_id)\n    return UnregisterBrokerResponse(error_code=Error.INVALID_REQUEST)",
          "A successful unregistration answers INVALID_REQUEST."),
    _edit("negative-broker-id-accepted", "REG-1", impl_registration, "handle_broker_registration",
          "request.broker_id < 0", "request.broker_id < -1",
          "A registration with broker id -1 is accepted."),
    _edit("cluster-id-unchecked", "REG-2", impl_registration, "handle_broker_registration",
          "if request.cluster_id != controller.config.cluster_id:", "if False:",
          "A registration from another cluster is accepted."),
    _edit("new-incarnation-keeps-the-epoch", "REG-7", impl_registration, "handle_broker_registration",
          "epoch = controller.log_end_offset", "epoch = controller.log_end_offset if existing is None else existing.epoch",
          "A new incarnation of a registered broker keeps its predecessor's epoch."),
    _edit("registration-elects-the-new-incarnation", "REG-9", impl_registration, "handle_broker_registration",
          "    lease = controller.leases.start(broker_id, controller.now_ms, fenced=True)\n",
          "    from kraftspec.impl.partitions import partition_change\n"
          "    from kraftspec.impl.replication import NO_LEADER\n"
          "    for partition in controller.state.replication.partitions_of(broker_id):\n"
          "        if partition.leader == NO_LEADER and broker_id in partition.isr:\n"
          "            partition_change(controller, partition, leader=broker_id)\n"
          "    lease = controller.leases.start(broker_id, controller.now_ms, fenced=True)\n",
          "Registering a new incarnation makes it leader where it is the sole, leaderless in-sync replica."),
    _edit("unregister-unknown-refused", "UNREG-1", impl_registration, "handle_unregister_broker",
          "error = Error[controller.config.params.unregister_unknown_error]", "error = Error.BROKER_ID_NOT_REGISTERED",
          "Unregistering an unknown broker id answers BROKER_ID_NOT_REGISTERED whatever the profile."),
    _edit("unregistered-broker-left-in-isrs", "UNREG-2", impl_partitions, "unregister_broker",
          "    leave_isrs(controller, broker_id)\n    controller._add(UnregisterBrokerRecord",
          "    controller._add(UnregisterBrokerRecord",
          "Unregistering leaves the broker in its ISRs and leaderships."),
    # partitions and controlled shutdown
    _edit("fenced-broker-eligible", "PART-3", impl_partitions, "is_eligible_leader",
          "    if not controller.state.cluster.is_eligible(broker_id):\n        return False\n", "",
          "A fenced broker can be elected leader."),
    _edit("election-picks-the-last-replica", "PART-4", impl_builder, "build_change",
          "leader = elect(preferred_order(replicas, removing), isr, eligible)",
          "leader = elect(tuple(reversed(preferred_order(replicas, removing))), isr, eligible)",
          "Elections pick the last eligible in-sync replica instead of the first."),
    _edit("fenced-broker-may-not-shut-down", "SHUT-4", impl_heartbeat, "handle_broker_heartbeat",
          "elif request.want_shut_down:  # SHUT-4\n        should_shut_down = True",
          "elif request.want_shut_down:  # SHUT-4\n        should_shut_down = False",
          "A fenced broker asking to shut down is not let go."),
    _edit("shutting-down-broker-eligible", "SHUT-5", ClusterControl, "is_eligible",
          " and not registration.in_controlled_shutdown", "",
          "A broker whose registration says it is in controlled shutdown can join an ISR and be elected leader."),
    _edit("shutdown-grant-ignores-lagging-brokers", "SHUT-3", impl_heartbeat, "shutdown_progress",
          "if not lease.in_controlled_shutdown and not has_applied(controller, lease.metadata_offset, target):",
          "if False:",
          "A broker in controlled shutdown is let go without waiting for the active brokers to apply its move (kafka profile)."),
    _edit("should-shut-down-said-to-a-leader", "SHUT-6", impl_heartbeat, "handle_broker_heartbeat",
          "should_shut_down = controlled_shutdown(controller, broker_id)",
          "should_shut_down = controlled_shutdown(controller, broker_id) or request.want_shut_down",
          "A broker asking to shut down is told ShouldShutDown while it still leads."),
    # reassignment
    _edit("failed-reassignment-top-level-error", "REASSIGN-1", impl_reassignment, "handle_alter_partition_reassignments",
          "return AlterPartitionReassignmentsResponse(error_code=Error.NONE, responses=tuple(responses))",
          "return AlterPartitionReassignmentsResponse(error_code=Error.NONE if any(p.error_code == Error.NONE "
          "for t in responses for p in t.partitions) else Error.INVALID_REQUEST, responses=tuple(responses))",
          "A reassignment request whose every partition fails gets a top-level error."),
    _edit("unknown-partition-reassignment-wrong-error", "REASSIGN-2", impl_reassignment, "handle_alter_partition_reassignments",
          "error = Error.UNKNOWN_TOPIC_OR_PARTITION", "error = Error.INVALID_REQUEST",
          "Reassigning an unknown partition answers INVALID_REQUEST."),
    _edit("reassignment-to-unregistered-broker-accepted", "REASSIGN-3", impl_reassignment, "handle_alter_partition_reassignments",
          "or any(b not in brokers for b in target)", "or any(b < 0 for b in target)",
          "A reassignment to a broker id that is not registered is accepted."),
    _edit("subset-reassignment-not-immediate", "REASSIGN-5", impl_builder, "build_change",
          "if (adding or removing) and reassignment_complete(", "if adding and reassignment_complete(",
          "A reassignment that only removes replicas waits instead of completing at once."),
    _edit("completion-keeps-removed-in-isr", "REASSIGN-7", impl_builder, "build_change",
          "isr = tuple([b for b in isr if b not in removing])", "isr = isr",
          "A completed reassignment leaves the removed replicas in the ISR."),
    _edit("cancel-keeps-adding-in-isr", "REASSIGN-8", impl_reassignment, "cancel_reassignment",
          "isr = tuple(b for b in partition.isr if b not in adding)", "isr = partition.isr",
          "Cancelling a reassignment leaves the adding replicas in the ISR."),
    _edit("new-target-refused-while-reassigning", "REASSIGN-9", impl_reassignment, "handle_alter_partition_reassignments",
          "                else:\n                    error = Error.NONE\n",
          "                elif partition.reassigning:\n                    error = Error.INVALID_REQUEST\n"
          "                else:\n                    error = Error.NONE\n",
          "A new target for a partition already reassigning is refused instead of replacing it."),
    _edit("list-ignores-partition-indexes", "REASSIGN-10", impl_reassignment, "handle_list_partition_reassignments",
          "listed = [ongoing(i, found[topic.name, i]) for i in topic.partition_indexes if (topic.name, i) in found]",
          "listed = [ongoing(i, fields) for (name, i), fields in found.items() if name == topic.name]",
          "ListPartitionReassignments lists every partition of a named topic, whatever indexes were asked for."),
    _edit("named-topics-listed-by-name", "REASSIGN-10", impl_reassignment, "handle_list_partition_reassignments",
          "        for topic in request.topics:\n", "        for topic in sorted(request.topics, key=lambda t: t.name):\n",
          "ListPartitionReassignments answers the topics a request names in the order of their names, not as asked (DEC-38)."),
    _edit("reassigning-topic-not-deleted", "REASSIGN-12", impl_topics, "handle_delete_topics",
          "        else:\n            results.append(result(name=name, topic_id=topic.topic_id, error_code=Error.NONE))",
          "        elif any(p.reassigning for p in topic.partitions):\n"
          "            results.append(result(name=name, topic_id=ZERO_UUID, error_code=Error.INVALID_REQUEST))\n"
          "        else:\n            results.append(result(name=name, topic_id=topic.topic_id, error_code=Error.NONE))",
          "Deleting a topic with a reassignment in progress is refused."),
    # topics
    _edit("created-topic-id-withheld", "TOPIC-1", impl_topics, "handle_create_topics",
          "topic_id=topic.topic_id if records else ZERO_UUID", "topic_id=ZERO_UUID",
          "A created topic's result carries the zero topic id."),
    _edit("illegal-topic-name-accepted", "TOPIC-2", impl_topics, "create_topic",
          " and set(name) <= _LEGAL_NAME_CHARS", "",
          "A topic name with characters outside [a-zA-Z0-9._-] is accepted."),
    _edit("assignment-to-unregistered-broker-accepted", "TOPIC-3", impl_topics, "create_topic",
          "or any(b not in brokers for b in replicas)", "or any(b < 0 for b in replicas)",
          "An explicit assignment naming an unregistered broker is accepted."),
    _edit("placement-ignores-fencing", "TOPIC-4", impl_topics, "create_topic",
          "unfenced, fenced = placement_candidates(controller)",
          "unfenced, fenced = sorted(controller.state.cluster.brokers), []",
          "Placement by replication factor goes round robin over every registered broker, fenced ones among them (the rule before DEC-26)."),
    _edit("new-partition-isr-holds-every-replica", "TOPIC-5", impl_topics, "create_topic",
          "isrs = [tuple(b for b in replicas if is_eligible_leader(controller, b)) for replicas in assignment]",
          "isrs = [tuple(replicas) for replicas in assignment]",
          "A new partition's ISR is every replica, eligible or not."),
    _edit("partition-records-in-reverse-order", "TOPIC-6", impl_topics, "create_topic",
          "in enumerate(zip(assignment, isrs, strict=True)):", "in reversed(list(enumerate(zip(assignment, isrs, strict=True)))):",
          "A created topic's PartitionRecords come in reverse index order."),
    _edit("unequal-replica-counts-accepted", "TOPIC-9", impl_topics, "create_topic",
          "if len({len(replicas) for replicas in by_index.values()}) != 1:", "if False:",
          "An explicit assignment whose partitions have different replica counts is accepted."),
    _edit("records-of-earlier-topics-not-counted", "TOPIC-11", impl_topics, "handle_create_topics",
          "room -= len(records)", "room -= 0",
          "The records of a request's earlier topics do not count against its bound: two topics of 5,000 partitions (10,002 records) are created."),
    _edit("delete-resolves-uncommitted-names", "TOPIC-10", impl_topics, "handle_delete_topics",
          "committed_id = replication.committed_topic_id(name)",
          "committed_id = replication.topics_by_name[name].topic_id if name in replication.topics_by_name else None",
          "DeleteTopics resolves names against the in-memory state, uncommitted topics included."),
)
"""Mutants written as small edits of impl's source (applied in memory), one for every rule that
decides something and has no variant above."""

MUTANTS = MUTANTS + EDITS


DECIDING_MODULES = ("registration", "heartbeat", "alter_isr", "reassignment", "topics", "partitions", "log",
                    "controller", "membership")
"""The model's handler modules: where a rule named in a call decides a record or a response."""

NO_MUTANT = {
    "LOG-12": "impl rebuilds from a snapshot only when it opens a log directory (Controller.open), which "
              "neither the corpus nor the stateful tests reach; its failover undoes the journal instead. "
              "tests/test_impl_recovery.py checks snapshot plus log against the model.",
}
"""Rules that decide something but have no mutant, each with the reason."""


def deciding_rules() -> dict[str, list[str]]:
    """Every rule of the spec named as the first argument of a call (``cite``, ``reject``, a local
    ``refuse``) in the model's handler modules, with the places (``model/heartbeat.py:59``)."""
    import ast
    import re

    from kraftspec.spec import rules

    known = rules()
    found: dict[str, list[str]] = {}
    for module in DECIDING_MODULES:
        path = REPOSITORY / "model" / f"{module}.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str) and re.fullmatch(r"[A-Z]+-\d+", node.args[0].value)
                    and node.args[0].value in known):
                found.setdefault(node.args[0].value, []).append(f"model/{module}.py:{node.lineno}")
    return found


def mutant_named(name: str) -> Mutant:
    for mutant in MUTANTS:
        if mutant.name == name:
            return mutant
    raise KeyError(f"no mutant named {name!r}; the mutants are: {', '.join(m.name for m in MUTANTS)}")


# ---- the report ------------------------------------------------------------------------------


@frozen
class MutantResult:
    """What became of one mutant.

    ``corpus_*``: the first trace that diverged (its path or name), the step and the part
    (``replies``, ``records``, ``committed``, ``seq``, or ``crash`` when impl raised).
    ``stateful``: ``killed``, ``survived``, ``timeout``, ``error`` (pytest could not run: exit code
    2 to 5), ``void`` (the unmutated run failed too) or ``not run``; ``stateful_test``: the first
    failing test. A timeout counts as a kill, as mutation tools count it: the tests did not pass,
    and a hanging run is noticed; the table and the JSON say ``timeout``, so it can be told apart.
    """

    name: str
    rule: str
    description: str
    target: str
    corpus_killed: bool
    corpus_trace: str | None
    corpus_step: int | None
    corpus_part: str | None
    corpus_traces_run: int
    corpus_seconds: float
    stateful: str
    stateful_test: str | None
    stateful_detail: str
    stateful_seconds: float

    @property
    def stateful_killed(self) -> bool:
        return self.stateful in ("killed", "timeout")

    @property
    def killed(self) -> bool:
        return self.corpus_killed or self.stateful_killed

    @property
    def seconds(self) -> float:
        return self.corpus_seconds + self.stateful_seconds

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "rule": self.rule, "description": self.description, "target": self.target,
            "killed": self.killed,
            "corpus": {"killed": self.corpus_killed, "trace": self.corpus_trace, "step": self.corpus_step,
                       "part": self.corpus_part, "traces_run": self.corpus_traces_run, "seconds": round(self.corpus_seconds, 3)},
            "stateful": {"result": self.stateful, "killed": self.stateful_killed, "test": self.stateful_test,
                         "detail": self.stateful_detail, "seconds": round(self.stateful_seconds, 3)},
            "seconds": round(self.seconds, 3),
        }


def _rate(killed: int, total: int) -> float | None:
    return killed / total if total else None


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.0f}%"


@frozen
class MutationReport:
    """Every mutant's fate, the kill rates, and what the checks ran on."""

    results: tuple[MutantResult, ...]
    corpus_source: str  # where the traces came from, fallback included
    corpus_fallback: bool
    corpus_traces: int  # traces used (unmutated impl passes them all)
    corpus_excluded: tuple[str, ...]  # traces left out, with why: unreadable, or failing on unmutated impl
    stateful_file: str | None
    stateful_note: str  # which file and why, or why not run
    stateful_baseline: str  # the unmutated run: passed, failed, timeout, error, not run
    stateful_baseline_detail: str  # its summary line, or its first failure
    seconds: float

    @property
    def stateful_counted(self) -> bool:
        return self.stateful_baseline == "passed"

    def rates(self) -> dict[str, float | None]:
        """Kill rates: by the corpus, by the stateful tests (None when they were not run or void), by either."""
        total = len(self.results)
        stateful = sum(r.stateful_killed for r in self.results) if self.stateful_counted else None
        return {
            "corpus": _rate(sum(r.corpus_killed for r in self.results), total),
            "stateful": None if stateful is None else _rate(stateful, total),
            "either": _rate(sum(r.killed for r in self.results), total),
        }

    @property
    def survivors(self) -> tuple[MutantResult, ...]:
        return tuple(r for r in self.results if not r.killed)

    def table(self) -> str:
        """A readable table, one mutant a line, then the kill rates and the survivors."""
        rows = [("mutant", "rule", "corpus", "first divergence", "stateful", "time")]
        for r in self.results:
            where = f"{_short(r.corpus_trace)} step {r.corpus_step} ({r.corpus_part})" if r.corpus_killed else "-"
            stateful = r.stateful + (f": {r.stateful_test.rsplit('::', 1)[-1]}" if r.stateful_test else "")
            rows.append((r.name, r.rule, "killed" if r.corpus_killed else "survived", where, stateful, f"{r.seconds:.1f}s"))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * width for width in widths))
        total = len(self.results)
        rates = self.rates()
        counted = {
            "corpus": sum(r.corpus_killed for r in self.results),
            "stateful": sum(r.stateful_killed for r in self.results),
            "either": sum(r.killed for r in self.results),
        }
        lines += [
            "",
            f"corpus:   {self.corpus_source}"
            + (f"; {len(self.corpus_excluded)} left out: {'; '.join(self.corpus_excluded)}" if self.corpus_excluded else ""),
            f"stateful: {self.stateful_note}; unmutated run {self.stateful_baseline}"
            + (f" ({self.stateful_baseline_detail})" if self.stateful_baseline_detail else ""),
            "",
            "kill rate: "
            + ", ".join(
                f"{kind} {counted[kind]}/{total} ({_percent(rates[kind])})" if rates[kind] is not None else f"{kind} -"
                for kind in ("corpus", "stateful", "either")
            ),
        ]
        survivors = self.survivors
        lines.append("survivors: " + (", ".join(f"{r.name} ({r.rule})" for r in survivors) if survivors else "none"))
        lines.append(f"total time: {self.seconds:.1f}s")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "corpus": {"source": self.corpus_source, "fallback": self.corpus_fallback, "traces": self.corpus_traces,
                       "excluded": list(self.corpus_excluded)},
            "stateful": {"file": self.stateful_file, "note": self.stateful_note, "baseline": self.stateful_baseline,
                         "baseline_detail": self.stateful_baseline_detail},
            "rates": self.rates(),
            "mutants": [r.to_json() for r in self.results],
            "survivors": [r.name for r in self.survivors],
            "seconds": round(self.seconds, 3),
        }

    def junit(self) -> str:
        """JUnit XML: one testcase per mutant, a failure when it survives."""
        suite = ET.Element("testsuite", {
            "name": "kraftspec.mutation", "tests": str(len(self.results)), "failures": str(len(self.survivors)),
            "errors": "0", "skipped": "0", "time": f"{self.seconds:.3f}",
        })
        properties = ET.SubElement(suite, "properties")
        for name, value in (("corpus", self.corpus_source), ("stateful", f"{self.stateful_note}; unmutated run {self.stateful_baseline}")):
            ET.SubElement(properties, "property", {"name": name, "value": value})
        for r in self.results:
            case = ET.SubElement(suite, "testcase", {
                "classname": f"kraftspec.mutation.{r.rule}", "name": r.name, "time": f"{r.seconds:.3f}",
            })
            corpus = (f"killed by the corpus: {r.corpus_trace}, step {r.corpus_step} ({r.corpus_part})"
                      if r.corpus_killed else f"survived the corpus ({r.corpus_traces_run} traces)")
            stateful = f"stateful tests: {r.stateful}" + (f" ({r.stateful_test})" if r.stateful_test else "")
            if r.stateful_detail:
                stateful += f"; {r.stateful_detail}"
            details = f"{r.rule}: {r.description}\nreplaces {r.target}\n{corpus}\n{stateful}"
            if not r.killed:
                failure = ET.SubElement(case, "failure", {"message": f"mutant survived: {r.rule}: {r.description}", "type": "survived"})
                failure.text = details
            ET.SubElement(case, "system-out").text = details
        totals = suite.attrib  # the testsuite's totals, set above
        root = ET.Element("testsuites", {"tests": totals["tests"], "failures": totals["failures"], "time": totals["time"]})
        root.append(suite)
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _short(path: str | None) -> str:
    return Path(path).name if path else "-"


# ---- the check -----------------------------------------------------------------------------


def corpus_traces(corpus: str | Path | None = CORPUS, walks: int | Iterable[int] = DEFAULT_WALKS
                  ) -> tuple[list[tuple[str, Trace]], list[str], str, bool]:
    """The traces to replay, as (path or name, trace); the files that could not be read, with
    why; a description of where the traces came from; and whether that is the fallback. The traces
    are every ``*.jsonl`` under ``corpus``, or ``walk(seed, 200)`` for the ``walks`` seeds (0 to
    walks-1 when a number) when there is none."""
    directory = Path(corpus) if corpus is not None else None
    files = sorted(directory.rglob("*.jsonl")) if directory is not None and directory.is_dir() else []
    if files:
        traces, unreadable = [], []
        for path in files:
            try:
                traces.append((str(path), read(path)))
            except TraceError as problem:
                unreadable.append(f"{path} (unreadable: {problem})")
        return traces, unreadable, f"{len(files)} traces under {directory}", False
    seeds = list(range(walks)) if isinstance(walks, int) else list(walks)
    traces = [(f"walk(seed={seed}, steps={WALK_STEPS})", walk(seed, WALK_STEPS)) for seed in seeds]
    why = "no corpus given" if directory is None else f"{directory} is empty or missing"
    span = f"seeds {seeds[0]}..{seeds[-1]}" if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) else f"seeds {seeds}"
    return traces, [], f"fallback, {why}: {len(traces)} traces walk(seed, {WALK_STEPS}) for {span}", True


def replay_corpus(traces: list[tuple[str, Trace]]) -> tuple[str, int, str] | None:
    """Replay every trace against impl at level ``records``; the first divergence as (trace, step,
    part), or None when every trace passes. impl raising counts as a divergence (part ``crash``)."""
    for where, trace in traces:
        try:
            verdict = replay(trace, ImplAdapter(), "records")
        except Exception as crash:  # a broken impl may raise anywhere; that is a kill, not a failure of the check
            return where, -1, f"crash: {type(crash).__name__}: {crash}"[:200]
        if not verdict.passed:
            # ImplAdapter reports every level and implements every profile (read() refuses an unknown
            # one): a trace it does not pass is one it diverges from, never one it does not support
            assert verdict.divergence is not None, verdict.not_supported
            return where, verdict.divergence.step, verdict.divergence.part
    return None


def stateful_tests(path: str | Path | None = None) -> tuple[Path | None, str]:
    """The stateful test file and a note saying which and why."""
    if path is not None:
        path = Path(path)
        return (path, f"{path}") if path.exists() else (None, f"{path} does not exist: not run")
    if STATEFUL_TESTS.exists():
        return STATEFUL_TESTS, f"{STATEFUL_TESTS.relative_to(REPOSITORY)}"
    if LOCKSTEP_TESTS.exists():
        return LOCKSTEP_TESTS, (f"{STATEFUL_TESTS.relative_to(REPOSITORY)} does not exist yet: "
                                f"{LOCKSTEP_TESTS.relative_to(REPOSITORY)} (model/impl lockstep) instead")
    return None, "no stateful tests found (not an editable checkout?): not run"


def stateful_command(test_file: Path) -> list[str]:
    """The stateful run: pytest in a subprocess, this module loaded as a plugin that applies the mutant."""
    return [sys.executable, "-m", "pytest", str(test_file), "-x", "-q", "-p", "no:warnings", "-p", "no:cacheprovider",
            "-o", "addopts=", "-p", PLUGIN]


def run_stateful(test_file: Path, mutant: Mutant | None, timeout: float) -> tuple[str, str | None, str, float]:
    """Run the stateful tests with ``mutant`` applied in the subprocess (none: unmutated);
    (result, first failing test, detail, seconds)."""
    env = {**os.environ}
    env.pop(MUTANT_ENV, None)
    if mutant is not None:
        env[MUTANT_ENV] = mutant.name
    started = time.perf_counter()
    try:
        done = subprocess.run(stateful_command(test_file), cwd=REPOSITORY, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", None, f"no answer within {timeout:.0f}s", time.perf_counter() - started
    seconds = time.perf_counter() - started
    output = done.stdout + done.stderr
    summary = next((line for line in reversed(output.splitlines()) if line.strip()), "")
    failed = next((line.split()[1] for line in output.splitlines() if line.startswith(("FAILED ", "ERROR "))), None)
    if done.returncode == 0:
        return "passed" if mutant is None else "survived", None, summary, seconds
    if done.returncode == 1:
        return "failed" if mutant is None else "killed", failed, summary, seconds
    return "error", failed, f"pytest exit code {done.returncode}: " + " | ".join(output.strip().splitlines()[-3:])[:400], seconds


def run(
    mutants: Iterable[Mutant | str] | None = None,
    corpus: str | Path | None = CORPUS,
    stateful: bool = True,
    walks: int | Iterable[int] = DEFAULT_WALKS,
    tests: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    progress: Callable[[str], None] | None = None,
) -> MutationReport:
    """Apply each mutant in turn and see which checks kill it.

    ``mutants``: mutants or their names (default: the whole catalogue). ``corpus``: the trace
    directory (default conformance/corpus; None, or a directory without traces, falls back to
    ``walks``). ``stateful``: also run the stateful tests (``tests``, default tests/test_stateful.py
    or, missing that, tests/test_impl_lockstep.py) in a subprocess per mutant, each within
    ``timeout`` seconds. ``progress`` is called with a line per mutant.
    """
    started = time.perf_counter()
    chosen = [m if isinstance(m, Mutant) else mutant_named(m) for m in (MUTANTS if mutants is None else mutants)]
    names = [m.name for m in chosen]
    if len(set(names)) != len(names):
        raise ValueError(f"a mutant is named twice: {names}")
    say = progress or (lambda line: None)

    traces, excluded, source, fallback = corpus_traces(corpus, walks)
    failing = set()
    for where, trace in traces:  # unmutated impl must pass a trace for its divergence to mean anything
        divergence = replay_corpus([(where, trace)])
        if divergence is not None:
            failing.add(where)
            excluded.append(f"{where} (unmutated impl diverges at step {divergence[1]}, {divergence[2]})")
    traces = [(where, trace) for where, trace in traces if where not in failing]
    say(f"corpus: {source}" + (f"; left out: {'; '.join(excluded)}" if excluded else ""))

    test_file, note = stateful_tests(tests) if stateful else (None, "not run (stateful=False)")
    baseline, baseline_detail = "not run", ""
    if test_file is not None:
        baseline, failed, detail, seconds = run_stateful(test_file, None, timeout)
        baseline_detail = f"{failed}: {detail}" if failed else detail
        say(f"stateful: {note}; unmutated run {baseline} in {seconds:.1f}s ({baseline_detail})")

    results = []
    for mutant in chosen:
        clock = time.perf_counter()
        with mutant.applied():
            divergence = replay_corpus(traces)
        corpus_seconds = time.perf_counter() - clock
        outcome: tuple[str, str | None, str, float]  # run_stateful's (result, first failing test, detail, seconds)
        if test_file is None:
            outcome = ("not run", None, "", 0.0)
        elif baseline != "passed":
            outcome = ("void", None, f"the unmutated run {baseline}", 0.0)
        else:
            outcome = run_stateful(test_file, mutant, timeout)
        corpus_trace, corpus_step, corpus_part = divergence or (None, None, None)
        result = MutantResult(
            mutant.name, mutant.rule, mutant.description, mutant.target,
            divergence is not None, corpus_trace, corpus_step, corpus_part, len(traces), corpus_seconds, *outcome,
        )
        results.append(result)
        say(f"{mutant.name} ({mutant.rule}): corpus {'killed' if result.corpus_killed else 'survived'}, "
            f"stateful {result.stateful}, {result.seconds:.1f}s")
    return MutationReport(tuple(results), source, fallback, len(traces), tuple(excluded), str(test_file) if test_file else None,
                          note, baseline, baseline_detail, time.perf_counter() - started)


# ---- the pytest plugin (loaded in the subprocess with -p kraftspec.conformance.mutation) -----------

_applied: list = []


def pytest_configure(config) -> None:
    """Apply the mutant named in KRAFTSPEC_MUTANT for the whole session; make Hypothesis look for a
    failure only (no shrinking, no example database), in whatever profile the tests loaded."""
    from hypothesis import Phase, settings

    current = settings.default
    assert current is not None  # hypothesis loads its default profile when it is imported
    settings.register_profile(
        "kraftspec-mutation", parent=current, database=None,
        phases=tuple(phase for phase in current.phases if phase not in (Phase.shrink, Phase.explain)),
    )
    settings.load_profile("kraftspec-mutation")
    name = os.environ.get(MUTANT_ENV)
    if name:
        try:
            mutant = mutant_named(name)
        except KeyError as unknown:
            import pytest

            raise pytest.UsageError(f"{MUTANT_ENV}: {unknown.args[0]}") from None
        context = mutant.applied()
        context.__enter__()
        _applied.append(context)


def pytest_unconfigure(config) -> None:
    while _applied:
        _applied.pop().__exit__(None, None, None)


def pytest_report_header(config) -> str:
    name = os.environ.get(MUTANT_ENV)
    return f"kraftspec mutant: {name}" if name else "kraftspec mutant: none (unmutated)"


# ---- the command ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kraftspec.conformance.mutation",
        description="Apply deliberate single-rule breakages to impl, one at a time, and report which the "
        "conformance corpus and the stateful tests catch.",
    )
    parser.add_argument("--mutant", action="append", choices=[m.name for m in MUTANTS], metavar="NAME",
                        help="a mutant to apply (repeatable; default: all). --list shows them")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--corpus", default=str(CORPUS), help=f"the trace directory (default {CORPUS})")
    parser.add_argument("--walks", type=int, default=DEFAULT_WALKS,
                        help=f"fallback traces when the corpus is empty: walk(seed, {WALK_STEPS}) for seeds 0..N-1 (default {DEFAULT_WALKS})")
    parser.add_argument("--no-stateful", action="store_true", help="replay the corpus only")
    parser.add_argument("--tests", default=None, help="the stateful test file (default tests/test_stateful.py, else tests/test_impl_lockstep.py)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help=f"seconds per stateful run (default {DEFAULT_TIMEOUT_S:.0f})")
    parser.add_argument("--json", metavar="PATH", help="write the report as JSON")
    parser.add_argument("--junit", metavar="PATH", help="write the report as JUnit XML")
    args = parser.parse_args(argv)
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:45} {m.rule:11} {m.description}")
        return 0
    if args.walks < 1:
        parser.error(f"--walks must be at least 1, got {args.walks}")
    if args.timeout <= 0:
        parser.error(f"--timeout must be positive, got {args.timeout}")
    report = run(args.mutant, args.corpus, not args.no_stateful, args.walks, args.tests, args.timeout,
                 progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(report.table())
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=1) + "\n", encoding="utf-8")
    if args.junit:
        Path(args.junit).write_text(report.junit(), encoding="utf-8")
    return 0 if not report.survivors else 1


if __name__ == "__main__":
    sys.exit(main())
