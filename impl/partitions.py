"""Partitions: who may lead, and the partition changes of fencing, unfencing, unregistering and
controlled shutdown (PART-3 to PART-8, SHUT-2). model/partitions.py's counterpart.

Every change goes through :func:`partition_change`, which hands it to the one builder
(builder.py: completion of a reassignment, election, the record) and adds the record to the
request's batch. A change walks only the broker's own partitions, from the replication index,
in partition order (PART-5).

Like every handler module, these functions take the active controller (controller.py) and act on
its state, leases and open batch.
"""

from __future__ import annotations

from types import MethodType
from typing import TYPE_CHECKING

from .builder import UNSET, build_change, leave_changes
from .messages import UnregisterBrokerRecord
from .replication import NO_LEADER, Partition

if TYPE_CHECKING:
    from .controller import Controller


# ---- who may lead --------------------------------------------------------------------------


def stays_leader(controller: Controller, broker_id: int) -> bool:
    """PART-3: a leader stays while registered, unfenced, and not in controlled shutdown by its
    registration (only Kafka's records say so, DEC-22)."""
    return controller.state.cluster.is_eligible(broker_id)


def is_eligible_leader(controller: Controller, broker_id: int) -> bool:
    """PART-3: registered, unfenced, not in controlled shutdown (by the lease, or by the registration
    where Kafka's records keep it, DEC-22)."""
    if not controller.state.cluster.is_eligible(broker_id):
        return False
    lease = controller.leases.leases.get(broker_id)
    return lease is None or not lease.in_controlled_shutdown


def partition_change(
    controller: Controller, partition: Partition, stays=None, eligible=None,
    isr=UNSET, replicas=UNSET, removing=UNSET, adding=UNSET, leader=UNSET,
) -> None:
    """Build a partition change with the one builder and add it to the batch, if anything changes:
    the lists and the leader given, the others as they are (``build_change``). ``stays`` and
    ``eligible`` default to PART-3's predicates on the controller (bound, as methods are: the
    builder calls them with a broker id alone). The profile says when a reassignment completes and
    whether removing a replica raises the leader epoch (DEC-18, DEC-17)."""
    params = controller.config.params
    record = build_change(
        partition, stays or MethodType(stays_leader, controller), eligible or MethodType(is_eligible_leader, controller),
        isr=isr, replicas=replicas, removing=removing, adding=adding, leader=leader,
        completes=params.reassignment_completes, bump_on_removal=params.leader_epoch_on_replica_removal,
    )
    if record is not None:
        controller._add(record)


def predicates_without(controller: Controller, broker_id: int):
    """The predicates of PART-3 for changes that take ``broker_id`` out (fencing, unregistering)."""
    return (
        (lambda b: b != broker_id and stays_leader(controller, b)),
        (lambda b: b != broker_id and is_eligible_leader(controller, b)),
    )


# ---- fencing, unfencing, unregistering, controlled shutdown ----------------------------------


def leave_isrs(controller: Controller, broker_id: int) -> None:
    """The broker leaves every ISR it is in, but a sole place (DEC-8), and every leadership, which
    goes to another eligible in-sync replica or nobody (PART-6, PART-8, SHUT-2)."""
    stays, eligible = predicates_without(controller, broker_id)
    params = controller.config.params
    records = leave_changes(
        controller.state.replication.partitions_of(broker_id), broker_id, stays, eligible,
        completes=params.reassignment_completes, bump_on_removal=params.leader_epoch_on_replica_removal,
    )
    # the changes are independent (each partition changes once, and none changes what the others
    # decide from), so they are replayed and added together
    controller._add_all(records)


def fence_broker(controller: Controller, broker_id: int) -> None:
    """PART-6: out of every ISR but a sole place, out of leadership; then the record that fences it
    (FenceBrokerRecord, or Kafka's BrokerRegistrationChangeRecord: DEC-22)."""
    epoch = controller.state.cluster.brokers[broker_id].epoch
    leave_isrs(controller, broker_id)
    controller._add(controller.formats.fence(broker_id, epoch))


def unfence_broker(controller: Controller, broker_id: int) -> None:
    """LEASE-10 and PART-7: the record that unfences it (UnfenceBrokerRecord, or Kafka's
    BrokerRegistrationChangeRecord: DEC-22), then elections where it is in sync and nobody leads."""
    controller._add(controller.formats.unfence(broker_id, controller.state.cluster.brokers[broker_id].epoch))
    stays = MethodType(stays_leader, controller)
    eligible = (lambda b: b == broker_id or is_eligible_leader(controller, b))  # DEC-22: whatever its registration says
    for partition in controller.state.replication.partitions_of(broker_id):
        if partition.leader == NO_LEADER and broker_id in partition.isr:
            partition_change(controller, partition, stays, eligible)


def unregister_broker(controller: Controller, broker_id: int) -> None:
    """PART-8 and UNREG-2: the broker leaves ISRs and leaderships as when fenced, staying in the
    replica lists (DEC-20); then the UnregisterBrokerRecord."""
    epoch = controller.state.cluster.brokers[broker_id].epoch
    leave_isrs(controller, broker_id)
    controller._add(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=epoch))


def enter_controlled_shutdown(controller: Controller, broker_id: int) -> None:
    """SHUT-1, SHUT-2: the broker is in controlled shutdown (so not eligible, SHUT-5) and leaves
    its ISRs and leaderships, a leadership nobody else can take given up (DEC-14). In Kafka's
    records the registration says so first, unless it already does (DEC-22)."""
    controller.leases.leases[broker_id].in_controlled_shutdown = True
    registration = controller.state.cluster.brokers[broker_id]
    for record in controller.formats.shutdown_begins(broker_id, registration.epoch, registration.in_controlled_shutdown):
        controller._add(record)
    leave_isrs(controller, broker_id)
