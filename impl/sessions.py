"""Kafka's session table (DEC-25, kafka profile, ``lease_expiry = "hash-map-scan"``):
model/sessions.py's counterpart, mutable.

The table keeps a session per (broker id, epoch) named by a heartbeat, where Java's
``ConcurrentHashMap`` keeps it (Kafka's ``BrokerHeartbeatTracker``), so that the scan finds the
lapsed session Kafka finds first: slots of chains, 16 slots at first, doubled when a new key
brings the count to three quarters of them (the entries before a chain's last single-sided run
reversed onto their side) or when a put walks 8 entries of a chain in a table of fewer than 64
slots. Bins that Java would make trees are kept as chains (out of reach of any trace).
"""

from __future__ import annotations

_MASK64 = (1 << 64) - 1
_FIBONACCI = 0x9E3779B97F4A7C15


def key_hash(broker_id: int, epoch: int) -> int:
    """``spread(new BrokerIdAndEpoch(id, epoch).hashCode())``, Kafka 4.2 on (a record)."""
    epoch &= _MASK64
    h = (31 * broker_id + ((epoch ^ (epoch >> 32)) & 0xFFFFFFFF)) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 0x7FFFFFFF


class SessionTable:
    __slots__ = ("slots", "size")

    def __init__(self) -> None:
        self.slots: list[list[list[int]]] = []  # each entry [hash, broker_id, epoch, last_contact_ms]
        self.size = 0

    def touch(self, broker_id: int, epoch: int, now_ms: int) -> None:
        if not self.slots:
            self.slots = [[] for _ in range(16)]
        h = key_hash(broker_id, epoch)
        chain = self.slots[h & (len(self.slots) - 1)]
        for walked, entry in enumerate(chain, start=1):
            if entry[1] == broker_id and entry[2] == epoch:
                entry[3] = now_ms
                self._check_chain(walked)
                return
        chain.append([h, broker_id, epoch, now_ms])
        self._check_chain(len(chain) - 1)
        self.size += 1
        while self.size >= len(self.slots) - (len(self.slots) >> 2):
            self._double()

    def pop_first_lapsed(self, last_contact_before: int) -> tuple[int, int] | None:
        """Remove and return (broker id, epoch) of the first session, in the map's order, last
        renewed before ``last_contact_before``; None if there is none."""
        for chain in self.slots:
            for i, entry in enumerate(chain):
                if entry[3] < last_contact_before:
                    del chain[i]
                    self.size -= 1
                    return entry[1], entry[2]
        return None

    def last_contact(self, broker_id: int, epoch: int) -> int | None:
        if not self.slots:
            return None
        for entry in self.slots[key_hash(broker_id, epoch) & (len(self.slots) - 1)]:
            if entry[1] == broker_id and entry[2] == epoch:
                return entry[3]
        return None

    def _check_chain(self, walked: int) -> None:
        """treeifyBin on a small table: tryPresize(2n) doubles it until its threshold reaches
        tableSizeFor(3n + 1)."""
        n = len(self.slots)
        if walked >= 8 and n < 64:
            target = 1 << (3 * n).bit_length()
            while len(self.slots) - (len(self.slots) >> 2) < target:
                self._double()

    def _double(self) -> None:
        n = len(self.slots)
        low, high = [], []
        for chain in self.slots:
            run = len(chain) - 1
            while run > 0 and (chain[run - 1][0] & n) == (chain[run][0] & n):
                run -= 1
            lo: list[list[int]] = []
            hi: list[list[int]] = []
            if chain:
                (lo if (chain[run][0] & n) == 0 else hi).extend(chain[run:])
            for entry in chain[:run]:
                (lo if (entry[0] & n) == 0 else hi).insert(0, entry)
            low.append(lo)
            high.append(hi)
        self.slots = low + high


def registration_order(broker_ids: list[int]) -> list[int]:
    """Kafka's iteration order of its registrations (``TimelineHashMap`` by broker id): the slot of
    the Fibonacci hash in a table sized for ``len(broker_ids)`` entries, then the broker id."""
    slots = 2
    while (len(broker_ids) + 1) * 3 > slots * 4:
        slots *= 2
    shift = 64 - (slots.bit_length() - 1)
    return sorted(broker_ids, key=lambda b: (((b * _FIBONACCI) & _MASK64) >> shift, b))
