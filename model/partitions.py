"""Partitions: who may lead, leader election, and the one place that builds a partition
change (PART-3 to PART-8, REASSIGN-6).

Every partition change the controller makes goes through :func:`partition_change`, which
completes a reassignment when it can (REASSIGN-6), keeps or elects the leader (PART-4),
and writes only what changed (PART-5).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence


from .records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    FenceBrokerRecord,
    PartitionChangeRecord,
    Record,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from .replay import replay
from .rules import cite
from .state import Lease, MetadataImage, Partition, replace

Leases = dict[int, Lease]


# ---- who may lead -----------------------------------------------------------------


def is_eligible_leader(image: MetadataImage, leases: Leases, broker_id: int) -> bool:
    """PART-3: registered, unfenced, and not in controlled shutdown."""
    cite("PART-3")
    registration = image.brokers.get(broker_id)
    if registration is None or registration.fenced:
        return False
    lease = leases.get(broker_id)
    return lease is None or not lease.in_controlled_shutdown


def stays_leader(image: MetadataImage, leader: int, isr: Iterable[int]) -> bool:
    """PART-3: a leader keeps leading while it is in the ISR, registered and unfenced."""
    registration = image.brokers.get(leader)
    return leader in isr and registration is not None and not registration.fenced


def elect_leader(replicas: Sequence[int], isr: Sequence[int], eligible: Callable[[int], bool]) -> int:
    """PART-4: the first replica in preferred order that is in the ISR and eligible, else -1.

    pre: all(b >= 0 for b in replicas)
    post: __return__ == NO_LEADER or (__return__ in replicas and __return__ in isr and eligible(__return__))
    post: __return__ != NO_LEADER or not any(r in isr and eligible(r) for r in replicas)
    post: __return__ == NO_LEADER or not any(r in isr and eligible(r) for r in replicas[: replicas.index(__return__)])
    """
    cite("PART-4")
    in_sync = set(isr)
    for replica in replicas:
        if replica in in_sync and eligible(replica):
            return replica
    return NO_LEADER


# ---- the partition change builder ---------------------------------------------------


def change_record(
    partition: Partition,
    *,
    isr: tuple[int, ...],
    leader: int,
    replicas: tuple[int, ...],
    removing_replicas: tuple[int, ...],
    adding_replicas: tuple[int, ...],
) -> PartitionChangeRecord | None:
    """PART-5: a record naming exactly the fields that change, or None."""
    cite("PART-5")

    def changed(new: tuple[int, ...], old: tuple[int, ...]) -> tuple[int, ...] | None:
        return None if new == old else new

    record = PartitionChangeRecord(
        partition_id=partition.partition_id,
        topic_id=partition.topic_id,
        isr=changed(isr, partition.isr),
        leader=NO_LEADER_CHANGE if leader == partition.leader else leader,  # DEC-17
        replicas=changed(replicas, partition.replicas),
        removing_replicas=changed(removing_replicas, partition.removing_replicas),
        adding_replicas=changed(adding_replicas, partition.adding_replicas),
    )
    nothing = PartitionChangeRecord(partition.partition_id, partition.topic_id)
    return None if record == nothing else record


def reassignment_complete(
    replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...]
) -> bool:
    """REASSIGN-6: every adding replica is in sync, and the ISR meets the target (DEC-18).

    post: __return__ == (set(adding) <= set(isr) and not set(isr).isdisjoint(set(replicas) - set(removing)))
    """
    target = [r for r in replicas if r not in removing]
    return all(a in isr for a in adding) and any(t in isr for t in target)


def partition_change(
    image: MetadataImage,
    leases: Leases,
    partition: Partition,
    *,
    isr: tuple[int, ...] | None = None,
    replicas: tuple[int, ...] | None = None,
    removing_replicas: tuple[int, ...] | None = None,
    adding_replicas: tuple[int, ...] | None = None,
) -> PartitionChangeRecord | None:
    """The change that takes ``partition`` to the given lists (None: unchanged), or None.

    A reassigning partition whose new lists complete it is completed (REASSIGN-6); the
    leader is kept if it stays leader, otherwise elected (PART-4); the record names only
    what changed (PART-5). Eligibility is judged on ``image`` and ``leases``.
    """
    isr = partition.isr if isr is None else isr
    replicas = partition.replicas if replicas is None else replicas
    removing = partition.removing_replicas if removing_replicas is None else removing_replicas
    adding = partition.adding_replicas if adding_replicas is None else adding_replicas
    if (adding or removing) and reassignment_complete(replicas, isr, adding, removing):
        cite("REASSIGN-6")
        isr = tuple(r for r in isr if r not in removing)
        replicas = tuple(r for r in replicas if r not in removing)
        adding = removing = ()
    if stays_leader(image, partition.leader, isr):
        leader = partition.leader
    else:
        leader = elect_leader(replicas, isr, lambda b: is_eligible_leader(image, leases, b))
    return change_record(
        partition, isr=isr, leader=leader, replicas=replicas, removing_replicas=removing, adding_replicas=adding
    )


def _without(broker_id: int, brokers: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(b for b in brokers if b != broker_id)


def isr_after_fencing(isr: tuple[int, ...], broker_id: int) -> tuple[int, ...]:
    """PART-6: the ISR once ``broker_id`` is fenced: without it, unless it is the sole member
    (DEC-8), so that the controller still knows who holds every committed message.

    pre: len(set(isr)) == len(isr)
    post: broker_id not in __return__ or __return__ == (broker_id,)
    post: [b for b in __return__ if b != broker_id] == [b for b in isr if b != broker_id]
    post: bool(__return__) == bool(isr)
    """
    return isr if isr == (broker_id,) else _without(broker_id, isr)


# ---- fencing, unfencing, unregistering, controlled shutdown --------------------------


def fence_broker(image: MetadataImage, leases: Leases, broker_id: int) -> tuple[list[Record], Leases]:
    """PART-6: the fencing batch of a registered broker, and the leases after it.

    The partition changes come first and the FenceBrokerRecord last (seed 000's dump
    example, DEC-8); they are decided on the image in which the broker is already fenced,
    so that no election picks it. Fencing ends a controlled shutdown (SHUT-1).
    """
    cite("PART-6")
    fence = FenceBrokerRecord(broker_id, image.brokers[broker_id].epoch)
    fenced = replay(image, fence)
    lease = leases[broker_id]
    leases = {**leases, broker_id: replace(lease, in_controlled_shutdown=False)}
    changes: list[Record] = []
    for partition in fenced.partitions_in_order():
        if broker_id not in partition.isr:
            continue  # a replica out of sync is left alone
        record = partition_change(fenced, leases, partition, isr=isr_after_fencing(partition.isr, broker_id))
        if record is not None:
            changes.append(record)
    return [*changes, fence], leases


def unfence_broker(image: MetadataImage, leases: Leases, broker_id: int) -> list[Record]:
    """LEASE-10 and PART-7: the UnfenceBrokerRecord, then elections where the broker is in sync."""
    cite("PART-7")
    unfence = UnfenceBrokerRecord(broker_id, image.brokers[broker_id].epoch)
    unfenced = replay(image, unfence)
    elections: list[Record] = []
    for partition in unfenced.partitions_in_order():
        # DEC-19: elect where it is in sync and nobody leads; never add it to an ISR
        if partition.leader == NO_LEADER and broker_id in partition.isr:
            record = partition_change(unfenced, leases, partition)
            if record is not None:
                elections.append(record)
    return [unfence, *elections]


def unregister_broker(image: MetadataImage, leases: Leases, broker_id: int) -> list[Record]:
    """PART-8 and UNREG-2: the broker leaves every partition, then its registration goes."""
    cite("PART-8")
    unregister = UnregisterBrokerRecord(broker_id, image.brokers[broker_id].epoch)
    gone = replay(image, unregister)
    changes: list[Record] = []
    for partition in gone.partitions_in_order():
        if not partition.names(broker_id):
            continue
        record = partition_change(  # DEC-20: out of every list; the ISR may become empty
            gone,
            leases,
            partition,
            isr=_without(broker_id, partition.isr),
            replicas=_without(broker_id, partition.replicas),
            removing_replicas=_without(broker_id, partition.removing_replicas),
            adding_replicas=_without(broker_id, partition.adding_replicas),
        )
        if record is not None:
            changes.append(record)
    return [*changes, unregister]


def move_leaderships(image: MetadataImage, leases: Leases, broker_id: int) -> list[Record]:
    """SHUT-2: move each leadership of a broker in controlled shutdown to another eligible
    in-sync replica; keep it where there is none (DEC-14). ``leases`` must already show the
    broker in controlled shutdown, so that it is not eligible itself."""
    cite("SHUT-2")
    cite("SHUT-5")  # the broker itself is not eligible any more
    moves: list[Record] = []
    for partition in image.partitions_in_order():
        if partition.leader != broker_id:
            continue
        new_leader = elect_leader(partition.replicas, partition.isr, lambda b: is_eligible_leader(image, leases, b))
        if new_leader == NO_LEADER:
            continue  # nobody else can lead: the broker keeps it and a later heartbeat retries
        record = change_record(
            partition,
            isr=partition.isr,
            leader=new_leader,
            replicas=partition.replicas,
            removing_replicas=partition.removing_replicas,
            adding_replicas=partition.adding_replicas,
        )
        if record is not None:
            moves.append(record)
    return moves
