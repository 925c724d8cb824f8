"""Kafka's session table (DEC-25, the ``hash-map-scan`` choice of ``lease_expiry``): the contact
times Kafka's controller keeps per (broker id, broker epoch), and the order in which its periodic
scan finds a lapsed one.

Kafka 4 keeps them in a ``java.util.concurrent.ConcurrentHashMap<BrokerIdAndEpoch, Long>``
(``BrokerHeartbeatTracker``), and its scan takes the first lapsed entry in the map's iteration
order. To predict which broker Kafka fences, this module keeps the entries where that map keeps
them: in bins, a bin per slot of the map's table, each bin a chain in the order the entries came.
It follows the JDK's ``ConcurrentHashMap`` (JDK 17 to 25, single-threaded use):

* the hash of a key is ``31 * id + (int) (epoch ^ (epoch >>> 32))`` (the hash code of the record
  ``BrokerIdAndEpoch`` from Kafka 4.2.0; 4.0 and 4.1 add 961, see :data:`KEY_HASH_OFFSET`), spread
  as ``(h ^ (h >>> 16)) & 0x7fffffff``; its bin is ``spread & (table size - 1)``;
* the table has 16 slots from the first entry on; a new key is appended at the end of its bin's
  chain; contact with a key already there changes its time and not its place; a removal unlinks
  the entry and never shrinks the table;
* when a new key makes the count reach three quarters of the table, the table doubles: each bin
  splits into the entries that stay at slot i and those that move to slot i + n; the longest tail
  of the chain bound for one side keeps its order and the entries before it are put, one by one,
  at the head of their side (so they come out reversed) (``ConcurrentHashMap.transfer``);
* a put that walks 8 or more entries of a chain (to append a new key, or to find a known one
  from the 8th place on) in a table of fewer than 64 slots resizes the table instead of making the
  bin a tree (``treeifyBin``, ``tryPresize``), which doubles it until its threshold reaches 64.

Not followed: a bin of 9 or more entries in a table of 64 slots or more, which Java makes a tree
(the model keeps the chain's order). Nine sessions in one bin of such a table is far beyond any
trace: each broker id and epoch that heartbeats makes one entry, and the scan removes lapsed
ones.
"""

from __future__ import annotations

from attrs import frozen

INITIAL_SLOTS = 16  # ConcurrentHashMap.DEFAULT_CAPACITY
TREEIFY_THRESHOLD = 8
MIN_TREEIFY_CAPACITY = 64

KEY_HASH_OFFSET = 0
"""The constant in the key's hash: 0 for the record ``BrokerIdAndEpoch`` (Kafka 4.2.0 to 4.4.0),
961 (``Objects.hash(id, epoch)``) for the class of 4.0 and 4.1. The kafka profile follows 4.4."""


def key_hash(broker_id: int, epoch: int) -> int:
    """``ConcurrentHashMap.spread(key.hashCode())`` for the key (broker id, epoch), as Java computes
    it in 32-bit arithmetic."""
    epoch &= (1 << 64) - 1
    h = (KEY_HASH_OFFSET + 31 * broker_id + ((epoch ^ (epoch >> 32)) & 0xFFFFFFFF)) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 0x7FFFFFFF


@frozen
class Session:
    """One entry of the table: the last heartbeat from ``broker_id`` that named ``epoch``."""

    broker_id: int
    epoch: int
    last_contact_ms: int

    @property
    def hash(self) -> int:
        return key_hash(self.broker_id, self.epoch)


Bin = tuple[Session, ...]


@frozen
class SessionTable:
    """The sessions in the order Kafka's map iterates them: slot by slot, each chain from its head."""

    bins: tuple[Bin, ...] = ()  # empty until the first entry (the map allocates its table then)
    size: int = 0

    def in_order(self) -> list[Session]:
        return [s for chain in self.bins for s in chain]

    def get(self, broker_id: int, epoch: int) -> Session | None:
        if not self.bins:
            return None
        for s in self.bins[key_hash(broker_id, epoch) & (len(self.bins) - 1)]:
            if s.broker_id == broker_id and s.epoch == epoch:
                return s
        return None

    def touched(self, broker_id: int, epoch: int, now_ms: int) -> SessionTable:
        """The table after a heartbeat from ``broker_id`` naming ``epoch`` at ``now_ms`` (``put``)."""
        bins = self.bins or ((),) * INITIAL_SLOTS
        h = key_hash(broker_id, epoch)
        slot = h & (len(bins) - 1)
        chain = bins[slot]
        for i, s in enumerate(chain):
            if s.broker_id == broker_id and s.epoch == epoch:  # known: the time changes, not the place
                chain = (*chain[:i], Session(broker_id, epoch, now_ms), *chain[i + 1 :])
                bins = (*bins[:slot], chain, *bins[slot + 1 :])
                return SessionTable(_long_chain_checked(bins, i + 1), self.size)
        bins = (*bins[:slot], (*chain, Session(broker_id, epoch, now_ms)), *bins[slot + 1 :])
        bins = _long_chain_checked(bins, len(chain))
        size = self.size + 1
        while size >= _threshold(len(bins)):  # addCount
            bins = _doubled(bins)
        return SessionTable(bins, size)

    def without(self, session: Session) -> SessionTable:
        """The table with ``session`` removed (the scan's ``Iterator.remove``)."""
        slot = session.hash & (len(self.bins) - 1)
        chain = tuple(s for s in self.bins[slot] if s != session)
        return SessionTable((*self.bins[:slot], chain, *self.bins[slot + 1 :]), self.size - 1)


def _threshold(slots: int) -> int:
    """``sizeCtl`` of a table of ``slots`` slots: three quarters of it."""
    return slots - (slots >> 2)


def _doubled(bins: tuple[Bin, ...]) -> tuple[Bin, ...]:
    """``ConcurrentHashMap.transfer`` from n to 2n slots."""
    n = len(bins)
    low: list[Bin] = []
    high: list[Bin] = []
    for chain in bins:
        if not chain:
            low.append(())
            high.append(())
            continue
        # the last run: the longest tail whose entries all go the same way keeps its order
        last_run = len(chain) - 1
        while last_run > 0 and (chain[last_run - 1].hash & n) == (chain[last_run].hash & n):
            last_run -= 1
        tail = chain[last_run:]
        lo, hi = (tail, ()) if (tail[0].hash & n) == 0 else ((), tail)
        for s in chain[:last_run]:  # each put at the head of its side
            if (s.hash & n) == 0:
                lo = (s, *lo)
            else:
                hi = (s, *hi)
        low.append(lo)
        high.append(hi)
    return (*low, *high)


def _long_chain_checked(bins: tuple[Bin, ...], walked: int) -> tuple[Bin, ...]:
    """``putVal`` after it walked ``walked`` entries of a chain (up to the key it found, or past the
    whole chain to append a new one): from 8 on, ``treeifyBin``, which on a table of fewer than 64
    slots resizes it (:func:`_presized`) instead of making the bin a tree."""
    if walked >= TREEIFY_THRESHOLD and len(bins) < MIN_TREEIFY_CAPACITY:
        return _presized(bins)
    return bins


def _presized(bins: tuple[Bin, ...]) -> tuple[Bin, ...]:
    """``tryPresize(n << 1)``: doubled until the threshold reaches the size it asks for."""
    asked = 2 * len(bins)
    target = 1 << (asked + (asked >> 1) + 1 - 1).bit_length()  # tableSizeFor
    while target > _threshold(len(bins)):
        bins = _doubled(bins)
    return bins


FIBONACCI = 0x9E3779B97F4A7C15  # -7046029254386353131 as an unsigned long


def registration_order(broker_ids: list[int]) -> list[int]:
    """The order in which Kafka's controller iterates its registrations (a ``TimelineHashMap`` keyed
    by broker id, ``BaseHashTable``): by slot, the top bits of ``id * FIBONACCI``, in a table of the
    slots that ``len(broker_ids)`` registrations need (it starts at 2 and doubles while
    ``(size + 1) * 0.75`` exceeds it). Within a slot Kafka keeps the order of insertion, which
    depends on the table's history; the model takes the broker id there. Kafka's table never
    shrinks, so after an unregistration it can be larger than this one (spec/kafka.md, B31)."""
    slots = 2
    while (len(broker_ids) + 1) * 3 > slots * 4:
        slots *= 2
    bits = slots.bit_length() - 1
    return sorted(broker_ids, key=lambda b: ((((b * FIBONACCI) % (1 << 64)) >> (64 - bits)), b))
