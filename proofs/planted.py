"""Planted bugs: for each function whose contract CrossHair checks (``contracts.TARGETS``), a copy
with one small deliberate breakage and the same contract, word for word.

CrossHair finding nothing is not a proof. CI therefore asks it, with the settings it uses on the
real functions, to find each of these bugs (tests/test_crosshair.py, which also checks that each
copy carries its target's contract lines unchanged). The name of each copy says what is broken.
The ``planted_*`` counterparts at the end are differences that ``crosshair diffbehavior`` must
find against the model (``contracts.PAIRS``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kraftspec.impl.codec import (
    _ONE_BYTE_UVARINTS,
    MAX_UVARINT,
    MAX_UVARINT_BYTES,
    Buffer,
    CodecError,
    EncodeError,
    read_uvarint,  # noqa: F401  (named by write_uvarint_stopping_early's contract, which CrossHair evaluates here)
)
from kraftspec.model.framing import MAX_VARINT_BYTES, FrameError, _Reader
from kraftspec.model.records import NO_LEADER
from kraftspec.model.state import Batch

from .targets import U32, Predicate

# ---- the model: partitions ------------------------------------------------------------------


def elect_leader_ignoring_eligibility(replicas: Sequence[int], isr: Sequence[int], eligible: Predicate) -> int:
    """Elects the first in-sync replica, eligible or not (a fenced one, say).

    pre: all(b >= 0 for b in replicas)
    post: __return__ == NO_LEADER or (__return__ in replicas and __return__ in isr and eligible(__return__))
    post: __return__ != NO_LEADER or not any(r in isr and eligible(r) for r in replicas)
    post: __return__ == NO_LEADER or not any(r in isr and eligible(r) for r in replicas[: replicas.index(__return__)])
    """
    in_sync = set(isr)
    for replica in replicas:
        if replica in in_sync:
            return replica
    return NO_LEADER


def _complete(replicas, isr, adding, removing, completes: str) -> bool:
    """model.partitions.reassignment_complete's rule for ``completes``, for the twins' other values."""
    target = [r for r in replicas if r not in removing]
    if completes == "target-in-sync":
        return all(t in isr for t in target)
    if completes == "adding-in-sync-whole-target-when-shrinking":
        staying = [r for r in isr if r not in removing]
        return (bool(staying) and all(a in staying for a in adding)
                and (len(adding) >= len(removing) or all(t in staying for t in target)))
    return all(a in isr for a in adding) and any(t in isr for t in target)


def reassignment_complete_on_one_adding_replica(
    replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...], completes: str
) -> bool:
    """Completes when any adding replica is in sync, not all (conformance's mutant of the same idea),
    with kip-631's ``adding-in-sync``.

    post: completes != "target-in-sync" or __return__ == (set(replicas) - set(removing) <= set(isr))
    post: completes != "adding-in-sync" or __return__ == (set(adding) <= set(isr) and not set(isr).isdisjoint(set(replicas) - set(removing)))
    post: completes != "adding-in-sync-whole-target-when-shrinking" or __return__ == (bool(set(isr) - set(removing)) and set(adding) <= set(isr) - set(removing) and (len(adding) >= len(removing) or set(replicas) - set(removing) <= set(isr) - set(removing)))
    """
    if completes != "adding-in-sync":
        return _complete(replicas, isr, adding, removing, completes)
    target = [r for r in replicas if r not in removing]
    return any(a in isr for a in adding) and any(t in isr for t in target)


def reassignment_complete_target_in_sync_on_adding(
    replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...], completes: str
) -> bool:
    """With Kafka 4.0's ``target-in-sync``, waits only for the adding replicas of the target, not for
    the replicas it keeps (which may have left the ISR).

    post: completes != "target-in-sync" or __return__ == (set(replicas) - set(removing) <= set(isr))
    post: completes != "adding-in-sync" or __return__ == (set(adding) <= set(isr) and not set(isr).isdisjoint(set(replicas) - set(removing)))
    post: completes != "adding-in-sync-whole-target-when-shrinking" or __return__ == (bool(set(isr) - set(removing)) and set(adding) <= set(isr) - set(removing) and (len(adding) >= len(removing) or set(replicas) - set(removing) <= set(isr) - set(removing)))
    """
    if completes != "target-in-sync":
        return _complete(replicas, isr, adding, removing, completes)
    return all(a in isr for a in adding)


def reassignment_complete_shrinking_on_adding(
    replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...], completes: str
) -> bool:
    """With kafka's ``adding-in-sync-whole-target-when-shrinking`` (Kafka 4.3), forgets the whole
    target when fewer replicas are added than removed: (4, 1, 2, 3) adding 4 and removing 2 and 3,
    with ISR (4, 2, 3), completes although 1, which stays, is out of sync.

    post: completes != "target-in-sync" or __return__ == (set(replicas) - set(removing) <= set(isr))
    post: completes != "adding-in-sync" or __return__ == (set(adding) <= set(isr) and not set(isr).isdisjoint(set(replicas) - set(removing)))
    post: completes != "adding-in-sync-whole-target-when-shrinking" or __return__ == (bool(set(isr) - set(removing)) and set(adding) <= set(isr) - set(removing) and (len(adding) >= len(removing) or set(replicas) - set(removing) <= set(isr) - set(removing)))
    """
    if completes != "adding-in-sync-whole-target-when-shrinking":
        return _complete(replicas, isr, adding, removing, completes)
    staying = [r for r in isr if r not in removing]
    return bool(staying) and all(a in staying for a in adding)


def preferred_order_without_removing(replicas: tuple[int, ...], removing: tuple[int, ...]) -> tuple[int, ...]:
    """Leaves the replicas being removed out of the order altogether, so none of them can be
    elected even when no replica of the target is in sync.

    post: sorted(__return__) == sorted(replicas)
    """
    if not removing:
        return replicas
    return tuple(r for r in replicas if r not in removing)


def isr_after_fencing_dropping_sole_member(isr: tuple[int, ...], broker_id: int) -> tuple[int, ...]:
    """Takes the broker out even when it is the sole member (conformance's mutant of the same name).

    pre: len(set(isr)) == len(isr)
    post: broker_id not in __return__ or __return__ == (broker_id,)
    post: [b for b in __return__ if b != broker_id] == [b for b in isr if b != broker_id]
    post: bool(__return__) == bool(isr)
    """
    return tuple(b for b in isr if b != broker_id)


# ---- the model: reassignment ------------------------------------------------------------------


def is_valid_target_allowing_duplicates(target: tuple[int, ...], registered: Collection[int]) -> bool:
    """Forgets the duplicates check.

    post: __return__ == (len(target) > 0 and len(set(target)) == len(target) and set(target) <= set(registered))
    """
    return bool(target) and all(b in registered for b in target)


def reassignment_lists_in_current_order(
    current: tuple[int, ...], target: tuple[int, ...], layout: str
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """In kip-631's layout (``removing-then-target``), keeps the current replicas in their order and
    appends the adding ones, so the target's own order is lost (current (1, 2, 3), target (3, 2)
    gives (1, 2, 3), not (1, 3, 2)).

    pre: len(set(current)) == len(current) and len(set(target)) == len(target)
    post: __return__[0] == (target + __return__[1] if layout == "target-then-removing" else __return__[1] + target)
    post: set(__return__[1]) == set(current) - set(target) and set(__return__[2]) == set(target) - set(current)
    """
    removing = tuple(r for r in current if r not in target)
    adding = tuple(t for t in target if t not in current)
    replicas = target + removing if layout == "target-then-removing" else current + adding
    return replicas, removing, adding


def reassignment_lists_staying_twice(
    current: tuple[int, ...], target: tuple[int, ...], layout: str
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """In kafka's layout (``target-then-removing``), appends every current replica after the target
    instead of only those leaving, so a replica that stays is listed twice.

    pre: len(set(current)) == len(current) and len(set(target)) == len(target)
    post: __return__[0] == (target + __return__[1] if layout == "target-then-removing" else __return__[1] + target)
    post: set(__return__[1]) == set(current) - set(target) and set(__return__[2]) == set(target) - set(current)
    """
    removing = tuple(r for r in current if r not in target)
    adding = tuple(t for t in target if t not in current)
    replicas = target + current if layout == "target-then-removing" else removing + target
    return replicas, removing, adding


def lists_after_cancel_keeping_isr(
    replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Leaves the adding replicas in the ISR.

    post: (set(__return__[0]), set(__return__[1])) == (set(replicas) - set(adding), set(isr) - set(adding))
    """
    return tuple(r for r in replicas if r not in adding), isr


# ---- the model: the log -----------------------------------------------------------------------


def next_offset_at_last_batch_start(log_start_offset: int, batches: tuple[Batch, ...]) -> int:
    """The start of the last batch, not its end: the offset of a record already written.

    pre: all(b.base_offset == (batches[i - 1].end_offset if i else log_start_offset) for i, b in enumerate(batches))
    post: __return__ >= log_start_offset
    post: all(b.end_offset <= __return__ for b in batches)
    """
    return batches[-1].base_offset if batches else log_start_offset


# ---- the model: framing -----------------------------------------------------------------------


def uvarint_in_eight_bit_groups(value: int) -> bytes:
    """Shifts by eight bits a byte instead of seven.

    pre: 0 <= value <= MAX_UVARINT
    post: (reader := _Reader(__return__)).uvarint("value") == value and reader.remaining() == 0
    post: len(__return__) == 1 or __return__[-1] != 0
    """
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 8
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class SixByteReader(_Reader):
    def uvarint(self, what: str) -> int:
        """Reads a sixth byte (and has lost DEC-32's 32-bit check).

        pre: 0 <= self.pos <= self.end <= len(self.data)
        post: __old__.self.pos < self.pos <= __old__.self.pos + MAX_VARINT_BYTES
        post: __return__ < 1 << 7 * (self.pos - __old__.self.pos)
        post: __return__ <= MAX_UVARINT
        raises: FrameError
        """
        start, value = self.pos, 0
        for i in range(MAX_VARINT_BYTES + 1):
            if self.pos >= self.end:
                raise FrameError(start, f"{what}: varint runs past the end")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                return value  # and no 32-bit check (DEC-32): either breaks a postcondition
        raise FrameError(start, f"{what}: varint longer than {MAX_VARINT_BYTES} bytes")


# ---- impl: the codec --------------------------------------------------------------------------


def write_uvarint_stopping_early(value: int) -> bytes:
    """Stops one group early when the rest is exactly 0x80, which then ends the varint with its
    high bit set.

    pre: 0 <= value <= 0xFFFFFFFF
    post: 1 <= len(__return__) <= 5
    post: read_uvarint(__return__, 0) == (value, len(__return__))
    """
    if 0 <= value < 0x80:
        return _ONE_BYTE_UVARINTS[value]
    if not 0 <= value <= MAX_UVARINT:
        raise EncodeError("varint", f"{value} is outside 0..{MAX_UVARINT}")
    out = bytearray()
    while value > 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint_six_bytes(data: Buffer, pos: int, end: int | None = None, what: str = "varint") -> tuple[int, int]:
    """Reads a sixth byte.

    pre: 0 <= pos
    post: pos < __return__[1] <= pos + 5
    post: 0 <= __return__[0] <= 0xFFFFFFFF
    raises: CodecError
    """
    if end is None or end > len(data):
        end = len(data)
    if pos < 0:
        raise CodecError(pos, f"{what}: negative position")
    value = 0
    for index in range(MAX_UVARINT_BYTES + 1):
        at = pos + index
        if at >= end:
            raise CodecError(pos, f"{what}: varint runs past the end")
        byte = data[at]
        value |= (byte & 0x7F) << (7 * index)
        if byte < 0x80:
            if value > MAX_UVARINT:
                raise CodecError(pos, f"{what}: varint value {value} does not fit 32 bits")
            return value, at + 1
    raise CodecError(pos, f"{what}: varint longer than {MAX_UVARINT_BYTES} bytes")


# ---- counterparts that differ from the model's (for crosshair diffbehavior) ----------------------


def planted_elect(replicas: tuple[int, ...], isr: tuple[int, ...], eligible: Predicate) -> int:
    """An unclean election: the first eligible replica, in sync or not."""
    for replica in replicas:
        if eligible(replica):
            return replica
    return NO_LEADER


def planted_reassignment_complete(
    replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...]
) -> bool:
    """Takes the target to be all the replicas, the removing ones included (kip-631's completion,
    as targets.model_reassignment_complete)."""
    return all(a in isr for a in adding) and any(r in isr for r in replicas)


def planted_write_uvarint(value: int) -> bytes:
    return write_uvarint_stopping_early(value % U32)


def planted_read_uvarint(data: bytes) -> tuple[int, int] | None:
    try:
        return read_uvarint_six_bytes(data, 0)
    except CodecError:
        return None

