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
    PartitionChangeRecord,
    Record,
    UnregisterBrokerRecord,
)
from kraftspec.spec.profiles import Profile

from .formats import formats_of
from .replay import replay, replay_all
from .rules import cite
from .state import Lease, MetadataImage, Partition, replace

Leases = dict[int, Lease]


# ---- who may lead -----------------------------------------------------------------


def is_eligible_leader(image: MetadataImage, leases: Leases, broker_id: int) -> bool:
    """PART-3: registered, unfenced, and not in controlled shutdown: neither by the active
    controller's memory (SHUT-1) nor by its registration, where Kafka's records keep it (DEC-22)."""
    cite("PART-3")
    registration = image.brokers.get(broker_id)
    if registration is None or registration.fenced or registration.in_controlled_shutdown:
        return False
    lease = leases.get(broker_id)
    return lease is None or not lease.in_controlled_shutdown


def shutting_down(leases: Leases, broker_id: int) -> bool:
    """SHUT-1: the active controller knows the broker to be in controlled shutdown."""
    lease = leases.get(broker_id)
    return lease is not None and lease.in_controlled_shutdown


def stays_leader(image: MetadataImage, leader: int, isr: Iterable[int]) -> bool:
    """PART-3: a leader keeps leading while it is in the ISR, registered and unfenced, and its
    registration does not say it is in controlled shutdown (only Kafka's records say so, DEC-22)."""
    registration = image.brokers.get(leader)
    return (leader in isr and registration is not None and not registration.fenced
            and not registration.in_controlled_shutdown)


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
    params: Profile,
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

    if leader != partition.leader:
        leader_field = leader
    elif params.leader_epoch_on_replica_removal and not set(partition.replicas) <= set(replicas):
        leader_field = leader  # DEC-17, kafka profile: removing a replica raises the leader epoch too
    else:
        leader_field = NO_LEADER_CHANGE  # DEC-17: the leader epoch counts leader changes
    record = PartitionChangeRecord(
        partition_id=partition.partition_id,
        topic_id=partition.topic_id,
        isr=changed(isr, partition.isr),
        leader=leader_field,
        replicas=changed(replicas, partition.replicas),
        removing_replicas=changed(removing_replicas, partition.removing_replicas),
        adding_replicas=changed(adding_replicas, partition.adding_replicas),
    )
    nothing = PartitionChangeRecord(partition.partition_id, partition.topic_id)
    return None if record == nothing else record


def reassignment_complete(
    replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...], completes: str
) -> bool:
    """REASSIGN-6: the ISR completes the reassignment (DEC-18). ``completes`` is the profile's
    ``reassignment_completes``: with ``adding-in-sync``, every adding replica is in sync and the ISR
    meets the target; with ``target-in-sync`` (Kafka 4.0 to 4.2), every replica of the target is in
    sync; with ``adding-in-sync-whole-target-when-shrinking`` (Kafka 4.3 and later), every adding
    replica is in the ISR without the removing ones, which is not empty, and, when fewer replicas
    are added than removed, so is every replica of the target.

    post: completes != "target-in-sync" or __return__ == (set(replicas) - set(removing) <= set(isr))
    post: completes != "adding-in-sync" or __return__ == (set(adding) <= set(isr) and not set(isr).isdisjoint(set(replicas) - set(removing)))
    post: completes != "adding-in-sync-whole-target-when-shrinking" or __return__ == (bool(set(isr) - set(removing)) and set(adding) <= set(isr) - set(removing) and (len(adding) >= len(removing) or set(replicas) - set(removing) <= set(isr) - set(removing)))
    """
    target = [r for r in replicas if r not in removing]
    if completes == "target-in-sync":
        return all(t in isr for t in target)
    if completes == "adding-in-sync-whole-target-when-shrinking":  # Kafka 4.3 and later
        staying = [r for r in isr if r not in removing]
        return (bool(staying) and all(a in staying for a in adding)
                and (len(adding) >= len(removing) or all(t in staying for t in target)))
    return all(a in isr for a in adding) and any(t in isr for t in target)


def preferred_order(replicas: tuple[int, ...], removing: tuple[int, ...]) -> tuple[int, ...]:
    """PART-4: the order in which replicas are preferred as leader: the replicas in their order,
    except that during a reassignment those being removed come after the target's (DEC-18).

    post: sorted(__return__) == sorted(replicas)
    """
    if not removing:
        return replicas
    return tuple(r for r in replicas if r not in removing) + tuple(r for r in replicas if r in removing)


def partition_change(
    image: MetadataImage,
    leases: Leases,
    partition: Partition,
    params: Profile,
    *,
    isr: tuple[int, ...] | None = None,
    replicas: tuple[int, ...] | None = None,
    removing_replicas: tuple[int, ...] | None = None,
    adding_replicas: tuple[int, ...] | None = None,
    leaving: int | None = None,
    joining: int | None = None,
) -> PartitionChangeRecord | None:
    """The change that takes ``partition`` to the given lists (None: unchanged), or None.

    A reassigning partition whose new lists complete it is completed (REASSIGN-6); the
    leader is kept if it stays leader, otherwise elected (PART-4); the record names only
    what changed (PART-5). Eligibility is judged on ``image`` and ``leases``; ``leaving``, a
    broker that must give up the leadership (SHUT-2), neither stays leader nor is elected;
    ``joining``, the broker being unfenced (PART-7), may be elected whatever its registration
    says of a controlled shutdown (DEC-22: Kafka's records keep that until it registers again).
    """
    isr = partition.isr if isr is None else isr
    replicas = partition.replicas if replicas is None else replicas
    removing = partition.removing_replicas if removing_replicas is None else removing_replicas
    adding = partition.adding_replicas if adding_replicas is None else adding_replicas
    if (adding or removing) and reassignment_complete(replicas, isr, adding, removing, params.reassignment_completes):
        cite("REASSIGN-6")
        isr = tuple(r for r in isr if r not in removing)
        replicas = tuple(r for r in replicas if r not in removing)
        adding = removing = ()
    if partition.leader != leaving and stays_leader(image, partition.leader, isr):
        leader = partition.leader
    else:
        leader = elect_leader(
            preferred_order(replicas, removing),
            isr,
            lambda b: b != leaving and (b == joining or is_eligible_leader(image, leases, b)),
        )
    return change_record(
        partition, params, isr=isr, leader=leader, replicas=replicas, removing_replicas=removing, adding_replicas=adding
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


def fence_broker(image: MetadataImage, leases: Leases, broker_id: int, params: Profile) -> tuple[list[Record], Leases]:
    """PART-6: the fencing batch of a registered broker, and the leases after it.

    The partition changes come first and the FenceBrokerRecord last (seed 000's dump
    example, DEC-8); they are decided on the image in which the broker is already fenced,
    so that no election picks it. Fencing ends a controlled shutdown (SHUT-1).
    """
    cite("PART-6")
    fence = formats_of(params).fence(broker_id, image.brokers[broker_id].epoch)
    fenced = replay(image, fence)
    lease = leases[broker_id]
    leases = {**leases, broker_id: replace(lease, in_controlled_shutdown=False)}
    return [*leave_isrs(fenced, leases, broker_id, params), fence], leases


def leave_isrs(image: MetadataImage, leases: Leases, broker_id: int, params: Profile) -> list[Record]:
    """The changes that take ``broker_id`` out of every ISR it is in, except as the sole member
    (DEC-8), and out of every leadership, electing another leader where one is eligible (PART-4)
    and leaving the partition leaderless otherwise. Fencing (PART-6), unregistering (PART-8) and
    the start of a controlled shutdown (SHUT-2) all make these changes."""
    changes: list[Record] = []
    for partition in image.partitions_in_order():
        if broker_id not in partition.isr:
            continue  # a replica out of sync is left alone; a leader is always in sync
        record = partition_change(
            image, leases, partition, params, isr=isr_after_fencing(partition.isr, broker_id), leaving=broker_id
        )
        if record is not None:
            changes.append(record)
    return changes


def unfence_broker(image: MetadataImage, leases: Leases, broker_id: int, params: Profile) -> list[Record]:
    """LEASE-10 and PART-7: the UnfenceBrokerRecord, then elections where the broker is in sync."""
    cite("PART-7")
    unfence = formats_of(params).unfence(broker_id, image.brokers[broker_id].epoch)
    unfenced = replay(image, unfence)
    elections: list[Record] = []
    for partition in unfenced.partitions_in_order():
        # DEC-19: elect where it is in sync and nobody leads; never add it to an ISR
        if partition.leader == NO_LEADER and broker_id in partition.isr:
            record = partition_change(unfenced, leases, partition, params, joining=broker_id)
            if record is not None:
                elections.append(record)
    return [unfence, *elections]


def unregister_broker(image: MetadataImage, leases: Leases, broker_id: int, params: Profile) -> list[Record]:
    """PART-8 and UNREG-2: the broker leaves every ISR (but as a sole member) and every
    leadership, then its registration goes. It stays in ``Replicas`` and the reassignment lists
    (DEC-20), so that the same id registering again recovers its partitions (PART-7)."""
    cite("PART-8")
    unregister = UnregisterBrokerRecord(broker_id, image.brokers[broker_id].epoch)
    gone = replay(image, unregister)
    return [*leave_isrs(gone, leases, broker_id, params), unregister]


def enter_controlled_shutdown(image: MetadataImage, leases: Leases, broker_id: int, params: Profile) -> list[Record]:
    """SHUT-2: a broker entering controlled shutdown leaves every ISR it is in (but as a sole
    member) and every leadership: each moves to the first eligible in-sync replica in preferred
    order, and a leadership nobody else can take is given up, leaving the partition leaderless
    (DEC-14). ``leases`` must already show the broker in controlled shutdown."""
    cite("SHUT-2")
    cite("SHUT-5")  # the broker itself is not eligible any more
    registration = image.brokers[broker_id]
    # DEC-22: the kafka profile's records say so first, unless the registration already does
    begins = formats_of(params).shutdown_begins(broker_id, registration.epoch, registration.in_controlled_shutdown)
    return [*begins, *leave_isrs(replay_all(image, begins), leases, broker_id, params)]
