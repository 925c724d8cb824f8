"""The model's state and transitions as Z3 formulas, for any number of brokers and partitions.

Brokers and partitions are uninterpreted sorts, so a proof over them holds for every cluster
size. A state is a :class:`View`: one function per field of the model's state, returning Z3
terms. A transition builds the view after the event from the view before it, field by field,
following the model's handler line by line (each function below names the model function it
mirrors); what cannot be written as a plain term (an election: "the first eligible replica in
preferred order") is a fresh function pinned by axioms, collected in a :class:`Context`.

What the encoding keeps of the model's state (model/state.py):

- per broker: registered, fenced, epoch, incarnation id, whether the registration says it is in
  controlled shutdown (DEC-22: set only by Kafka's records, cleared by a new registration); its lease: held, last contact, recorded
  metadata offset, in controlled shutdown, released (REG-4, DEC-6), shutdown offset (SHUT-3,
  DEC-14); in the kafka profile (DEC-25) whether Kafka's session table holds a session of the
  broker's current epoch, and that session's last contact;
- per partition: exists, the replica list (membership and a rank giving the preferred order),
  ISR, adding and removing replicas, leader (present or -1), leader epoch and partition epoch, and
  whether its reassignment adds fewer replicas than it removes (DEC-18: Kafka 4.3's completion
  compares the two counts, which membership alone cannot give);
- the clock, the log end offset, the committed offset and, in the kafka profile, the time of the
  next scan for lapsed sessions (DEC-25).

What it leaves out, and why that is sound: topic names and ids (the encoding treats a created
topic as a set of new partitions and a deleted one as a set of partitions that go); the order of
an ISR (only whether a request changed it, given with the event, matters to the epochs); the log's
records and the committed image (see :mod:`kraftspec.proofs.inductive` for the lemma that the
committed image is an earlier in-memory image); features, end points and racks (only the
registration's accept-or-refuse depends on them, given with the event as ``ok``); of Kafka's
session table (DEC-25), the sessions of other epochs than their broker's current one (of earlier
incarnations, or named by refused heartbeats) and the table's order: a scan may remove any lapsed
session (see :func:`kraftspec.proofs.transitions.tick_scan`).

:mod:`kraftspec.proofs.drift` checks on concrete states that these transitions give exactly the
model's successors.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import attrs
import z3

Broker = z3.DeclareSort("Broker")
Part = z3.DeclareSort("Partition")

BROKER_FIELDS = ("reg", "fenced", "epoch", "inc", "rshut", "lease", "contact", "offset", "shut", "released", "soff",
                 "sess", "scontact", "roff")
PART_FIELDS = ("live", "led", "leader", "lepoch", "pepoch", "fewer")
PAIR_FIELDS = ("rep", "rank", "isr", "add", "rem")
SCALARS = ("now", "log_end", "committed", "next_scan")

_RANGES = {
    "reg": z3.BoolSort(), "fenced": z3.BoolSort(), "epoch": z3.IntSort(), "inc": z3.IntSort(), "rshut": z3.BoolSort(),
    "lease": z3.BoolSort(), "contact": z3.IntSort(), "offset": z3.IntSort(), "shut": z3.BoolSort(),
    "released": z3.BoolSort(), "soff": z3.IntSort(), "sess": z3.BoolSort(), "scontact": z3.IntSort(),
    "roff": z3.IntSort(),
    "live": z3.BoolSort(), "led": z3.BoolSort(), "leader": Broker,
    "lepoch": z3.IntSort(), "pepoch": z3.IntSort(), "fewer": z3.BoolSort(), "rep": z3.BoolSort(), "rank": z3.IntSort(),
    "isr": z3.BoolSort(), "add": z3.BoolSort(), "rem": z3.BoolSort(),
}


@attrs.frozen
class View:
    """A state of the model, as functions from brokers and partitions to terms.

    Broker fields take a broker, partition fields a partition, pair fields a partition and a
    broker. ``leader`` means something only where ``led`` holds (the model's -1 is ``led`` false).
    """

    reg: Callable; fenced: Callable; epoch: Callable; inc: Callable  # noqa: E702
    rshut: Callable  # DEC-22: the registration says the broker is in controlled shutdown (only Kafka's records do)
    lease: Callable; contact: Callable; offset: Callable; shut: Callable; released: Callable  # noqa: E702
    soff: Callable  # the lease's shutdown offset (SHUT-3, DEC-14)
    sess: Callable  # DEC-25, kafka profile: Kafka's session table holds a session of the broker's current epoch
    scontact: Callable  # ... and that session's last contact
    roff: Callable  # LEASE-9, DEC-3: the offset of the registration's RegisterBrokerRecord, which it must apply
    live: Callable; led: Callable; leader: Callable; lepoch: Callable; pepoch: Callable  # noqa: E702
    fewer: Callable  # DEC-18: a reassignment adds fewer replicas than it removes (a count the encoding cannot take)
    rep: Callable; rank: Callable; isr: Callable; add: Callable; rem: Callable  # noqa: E702
    now: Any; log_end: Any; committed: Any  # noqa: E702
    next_scan: Any  # DEC-25, kafka profile: the time of the next scan for a lapsed session

    def with_(self, **changes) -> "View":
        return attrs.evolve(self, **changes)

    def eligible(self, b) -> z3.BoolRef:
        """PART-3: registered, unfenced, and not in controlled shutdown, neither by the lease (SHUT-1)
        nor by the registration (DEC-22: only Kafka's records say so)."""
        return z3.And(self.placeable(b), z3.Not(self.rshut(b)))

    def placeable(self, b) -> z3.BoolRef:
        """TOPIC-4, DEC-26 (model.topics.placement_candidates, the first list): registered, unfenced,
        and not known to the active controller to be in controlled shutdown; the registration's word
        does not count here."""
        from .transitions import guard

        return z3.And(self.reg(b), guard("PART-3/unfenced", z3.Not(self.fenced(b))), z3.Not(self.shut(b)))

    def leads(self, p, b) -> z3.BoolRef:
        return z3.And(self.live(p), self.led(p), self.leader(p) == b)

    def names(self, p, b) -> z3.BoolRef:
        """The partition mentions ``b`` in a list or as its leader (model: Partition.names)."""
        return z3.Or(self.rep(p, b), self.isr(p, b), self.add(p, b), self.rem(p, b), z3.And(self.led(p), self.leader(p) == b))

    def lease_deadline(self, b, session_timeout) -> z3.ArithRef:
        return self.contact(b) + session_timeout


def state(name: str) -> View:
    """A state whose every field is a fresh uninterpreted function (or constant) named after ``name``."""
    functions = {}
    for f in BROKER_FIELDS:
        functions[f] = z3.Function(f"{name}.{f}", Broker, _RANGES[f])
    for f in PART_FIELDS:
        functions[f] = z3.Function(f"{name}.{f}", Part, _RANGES[f])
    for f in PAIR_FIELDS:
        functions[f] = z3.Function(f"{name}.{f}", Part, Broker, _RANGES[f])
    for f in SCALARS:
        functions[f] = z3.Int(f"{name}.{f}")
    return View(**functions)


def update(f: Callable, at, value) -> Callable:
    """``f`` with its value at ``at`` replaced (a one-argument field)."""
    return lambda b: z3.If(b == at, value, f(b))


class Context:
    """Fresh names and the axioms that pin the fresh functions of one transition."""

    def __init__(self, name: str):
        self.name = name
        self.axioms: list[z3.BoolRef] = []
        self._counter = itertools.count()

    def fresh(self, label: str, *sorts) -> z3.FuncDeclRef:
        return z3.Function(f"{self.name}.{label}{next(self._counter)}", *sorts)

    def const(self, label: str, sort) -> z3.ExprRef:
        return z3.Const(f"{self.name}.{label}{next(self._counter)}", sort)

    def exists_b(self, label: str, body: Callable) -> tuple[Callable, Callable]:
        """For a predicate ``body(p, b)``: ``(E, W)`` with ``E(p)`` true exactly when some broker
        satisfies it and ``W(p)`` such a broker when there is one (a Skolem witness), so that
        formulas stay free of existential quantifiers."""
        return self._per_partition(label, Broker, body)

    def exists_p(self, label: str, body: Callable) -> tuple[Callable, Callable]:
        """Like :meth:`exists_b`, over partitions, for a predicate ``body(p, q)``."""
        return self._per_partition(label, Part, body)

    def _per_partition(self, label: str, sort, body: Callable) -> tuple[Callable, Callable]:
        e = self.fresh(f"{label}?", Part, z3.BoolSort())
        w = self.fresh(f"{label}!", Part, sort)
        p, y = z3.Const("p", Part), z3.Const("y", sort)
        self.axioms.append(z3.ForAll([p, y], z3.Implies(body(p, y), e(p))))
        self.axioms.append(z3.ForAll([p], z3.Implies(e(p), body(p, w(p)))))
        return e, w

    def exists_bb(self, label: str, body: Callable) -> Callable:
        """``E(p)``: some pair of brokers satisfies ``body(p, a, b)``."""
        e = self.fresh(f"{label}?", Part, z3.BoolSort())
        wa = self.fresh(f"{label}!a", Part, Broker)
        wb = self.fresh(f"{label}!b", Part, Broker)
        p, a, b = z3.Const("p", Part), z3.Const("a", Broker), z3.Const("b", Broker)
        self.axioms.append(z3.ForAll([p, a, b], z3.Implies(body(p, a, b), e(p))))
        self.axioms.append(z3.ForAll([p], z3.Implies(e(p), body(p, wa(p), wb(p)))))
        return e

    def exists_broker(self, label: str, body: Callable) -> tuple[z3.BoolRef, z3.ExprRef]:
        """A broker-level existential: ``(E, w)`` with E true exactly when some ``b`` has ``body(b)``."""
        e = self.const(f"{label}?", z3.BoolSort())
        w = self.const(f"{label}!", Broker)
        b = z3.Const("b", Broker)
        self.axioms.append(z3.ForAll([b], z3.Implies(body(b), e)))
        self.axioms.append(z3.Implies(e, body(w)))
        return e, w

    def exists_part(self, label: str, body: Callable) -> z3.BoolRef:
        e = self.const(f"{label}?", z3.BoolSort())
        w = self.const(f"{label}!", Part)
        p = z3.Const("p", Part)
        self.axioms.append(z3.ForAll([p], z3.Implies(body(p), e)))
        self.axioms.append(z3.Implies(e, body(w)))
        return e

    def first(self, label: str, candidate: Callable, rank: Callable | None = None,
              before: Callable | None = None) -> tuple[Callable, Callable]:
        """PART-4's election: ``(has, who)`` where ``who(p)`` is the first candidate in preferred
        order and ``has(p)`` says whether there is a candidate. The order is ``before(p, a, b)``
        ("a comes no later than b"), or else the lowest ``rank``."""
        if before is None:
            assert rank is not None
            before = lambda p, a, b: rank(p, a) <= rank(p, b)  # noqa: E731
        has, who = self.exists_b(label, candidate)
        p, b = z3.Const("p", Part), z3.Const("b", Broker)
        self.axioms.append(z3.ForAll([p, b], z3.Implies(z3.And(has(p), candidate(p, b)), before(p, who(p), b))))
        return has, who
