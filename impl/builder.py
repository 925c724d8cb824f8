"""The partition-change builder: the one place that computes a partition's new leader, ISR
and reassignment lists for any change, and the record that says so (PART-4, PART-5,
REASSIGN-6).

Epochs are not computed here: replay derives them from the record (PART-2).
"""

from __future__ import annotations

from collections.abc import Callable

from .messages import PartitionChangeRecord
from .replication import NO_LEADER, NO_LEADER_CHANGE, Partition

UNSET = object()


def elect(replicas, isr, eligible: Callable[[int], bool]) -> int:
    """PART-4: the first replica in preferred order that is in the ISR and eligible; -1 if none."""
    for broker_id in replicas:
        if broker_id in isr and eligible(broker_id):
            return broker_id
    return NO_LEADER


def reassignment_complete(replicas, isr, adding, removing) -> bool:
    """REASSIGN-6: every adding replica is in the ISR, and the ISR holds a target replica."""
    for broker_id in adding:
        if broker_id not in isr:
            return False
    for broker_id in isr:
        if broker_id in replicas and broker_id not in removing:
            return True
    return False


def build_change(
    partition: Partition,
    stays: Callable[[int], bool],
    eligible: Callable[[int], bool],
    isr=UNSET,
    replicas=UNSET,
    removing=UNSET,
    adding=UNSET,
    leader=UNSET,
):
    """The PartitionChangeRecord taking ``partition`` to the given lists, or None if nothing changes.

    ``stays(b)``: may the current leader keep leading (PART-3); ``eligible(b)``: may an election
    pick b. A reassigning partition whose new lists complete it is completed (REASSIGN-6). The
    leader is kept if it stays in the ISR and ``stays``, else elected, unless ``leader`` is given.
    """
    isr = partition.isr if isr is UNSET else isr
    replicas = partition.replicas if replicas is UNSET else replicas
    removing = partition.removing_replicas if removing is UNSET else removing
    adding = partition.adding_replicas if adding is UNSET else adding
    if (adding or removing) and reassignment_complete(replicas, isr, adding, removing):
        isr = tuple(b for b in isr if b not in removing)
        replicas = tuple(b for b in replicas if b not in removing)
        adding = removing = ()
    if leader is UNSET:
        current = partition.leader
        leader = current if current != NO_LEADER and current in isr and stays(current) else elect(replicas, isr, eligible)
    changed_isr = None if isr == partition.isr else isr
    changed_replicas = None if replicas == partition.replicas else replicas
    changed_removing = None if removing == partition.removing_replicas else removing
    changed_adding = None if adding == partition.adding_replicas else adding
    changed_leader = NO_LEADER_CHANGE if leader == partition.leader else leader
    if (
        changed_isr is None
        and changed_replicas is None
        and changed_removing is None
        and changed_adding is None
        and changed_leader == NO_LEADER_CHANGE
    ):
        return None
    return PartitionChangeRecord(
        partition_id=partition.partition_id,
        topic_id=partition.topic.topic_id,
        isr=changed_isr,
        leader=changed_leader,
        replicas=changed_replicas,
        removing_replicas=changed_removing,
        adding_replicas=changed_adding,
    )
