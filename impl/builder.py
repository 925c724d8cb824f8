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


def reassignment_complete(replicas, isr, adding, removing, completes: str = "adding-in-sync") -> bool:
    """REASSIGN-6 (DEC-18, the profile's ``reassignment_completes``): with ``adding-in-sync``, every
    adding replica is in the ISR and the ISR holds a target replica; with ``target-in-sync``, every
    target replica is in the ISR; with ``adding-in-sync-whole-target-when-shrinking`` (Kafka 4.3 and
    later), every adding replica is in the ISR without the removing ones, which is not empty, and
    when fewer replicas are added than removed, every target replica is too."""
    if completes == "target-in-sync":
        return all(b in isr for b in replicas if b not in removing)
    if completes == "adding-in-sync-whole-target-when-shrinking":
        staying = [b for b in isr if b not in removing]
        if not staying or any(b not in staying for b in adding):
            return False
        return len(adding) >= len(removing) or all(b in staying for b in replicas if b not in removing)
    for broker_id in adding:
        if broker_id not in isr:
            return False
    for broker_id in isr:
        if broker_id in replicas and broker_id not in removing:
            return True
    return False


def preferred_order(replicas, removing):
    """PART-4: replicas in order, those being removed after the others (DEC-18)."""
    if not removing:
        return replicas
    return tuple([b for b in replicas if b not in removing] + [b for b in replicas if b in removing])


def build_change(
    partition: Partition,
    stays: Callable[[int], bool],
    eligible: Callable[[int], bool],
    isr=UNSET,
    replicas=UNSET,
    removing=UNSET,
    adding=UNSET,
    leader=UNSET,
    completes: str = "adding-in-sync",
    bump_on_removal: bool = False,
):
    """The PartitionChangeRecord taking ``partition`` to the given lists, or None if nothing changes.

    ``stays(b)``: may the current leader keep leading (PART-3); ``eligible(b)``: may an election
    pick b. A reassigning partition whose new lists complete it is completed (REASSIGN-6, by the
    profile's ``completes``). The leader is kept if it stays in the ISR and ``stays``, else elected,
    unless ``leader`` is given. ``bump_on_removal`` (DEC-17, kafka profile): a change that removes
    a replica writes the unchanged leader, so that the leader epoch rises.
    """
    isr = partition.isr if isr is UNSET else isr
    replicas = partition.replicas if replicas is UNSET else replicas
    removing = partition.removing_replicas if removing is UNSET else removing
    adding = partition.adding_replicas if adding is UNSET else adding
    if (adding or removing) and reassignment_complete(replicas, isr, adding, removing, completes):
        isr = tuple([b for b in isr if b not in removing])
        replicas = tuple([b for b in replicas if b not in removing])
        adding = removing = ()
    if leader is UNSET:
        current = partition.leader
        if current != NO_LEADER and current in isr and stays(current):
            leader = current
        else:
            leader = elect(preferred_order(replicas, removing), isr, eligible)
    changed_isr = None if isr == partition.isr else isr
    changed_replicas = None if replicas == partition.replicas else replicas
    changed_removing = None if removing == partition.removing_replicas else removing
    changed_adding = None if adding == partition.adding_replicas else adding
    if leader != partition.leader:
        changed_leader = leader
    elif bump_on_removal and changed_replicas is not None and not set(partition.replicas) <= set(replicas):
        changed_leader = leader
    else:
        changed_leader = NO_LEADER_CHANGE
    if (
        changed_isr is None
        and changed_replicas is None
        and changed_removing is None
        and changed_adding is None
        and changed_leader == NO_LEADER_CHANGE
    ):
        return None
    return PartitionChangeRecord.make(
        partition_id=partition.partition_id,
        topic_id=partition.topic.topic_id,
        isr=changed_isr,
        leader=changed_leader,
        replicas=changed_replicas,
        removing_replicas=changed_removing,
        adding_replicas=changed_adding,
    )


def leave_changes(
    partitions,
    broker_id: int,
    stays: Callable[[int], bool],
    eligible: Callable[[int], bool],
    completes: str = "adding-in-sync",
    bump_on_removal: bool = False,
) -> list:
    """The records taking ``broker_id`` out of the ISRs of ``partitions`` (in their order), as
    :func:`build_change` with ``isr`` the ISR without it (a sole place kept, DEC-8) gives them one
    by one: for a fencing, an unregistration or a controlled shutdown (PART-6, PART-8, SHUT-2).

    The predicates ask about brokers, whose registrations and leases these changes leave alone, so
    each is asked once per broker; and the changes are independent (each partition changes once),
    so they may all be decided before any is replayed. The common case is decided here: a partition
    that is not being reassigned (so nothing completes and its replica lists stand) and whose leader
    stays, being another broker, in sync and allowed to stay (PART-3), changes its ISR only. Every
    other partition, a leadership to elect above all, goes through :func:`build_change`."""
    records = []
    stays = _Answers(stays).__getitem__
    eligible = _Answers(eligible).__getitem__
    without: dict[tuple, tuple] = {}  # each ISR without the broker (ISRs repeat across partitions)
    for partition in partitions:
        isr = partition.isr
        if broker_id not in isr:
            continue
        new_isr = without.get(isr)
        if new_isr is None:
            new_isr = without[isr] = isr if len(isr) == 1 else tuple([b for b in isr if b != broker_id])
        leader = partition.leader
        if (
            leader != NO_LEADER and leader in new_isr and stays(leader)
            and not partition.adding_replicas and not partition.removing_replicas
        ):
            if new_isr is not isr:  # else nothing changes
                records.append(PartitionChangeRecord.make(
                    partition_id=partition.partition_id, topic_id=partition.topic.topic_id, isr=new_isr,
                ))
            continue
        record = build_change(partition, stays, eligible, isr=new_isr, completes=completes, bump_on_removal=bump_on_removal)
        if record is not None:
            records.append(record)
    return records


class _Answers(dict):
    """A predicate's answers, by broker: each asked of the predicate once, when first wanted. Its
    ``__getitem__`` is a dict lookup, and one is made in a fraction of the time functools.cache
    takes to wrap a function (which was most of what leaving a few ISRs cost)."""

    __slots__ = ("question",)

    def __init__(self, question: Callable[[int], bool]) -> None:
        super().__init__()
        self.question = question

    def __missing__(self, broker_id: int) -> bool:
        answer = self[broker_id] = self.question(broker_id)
        return answer
