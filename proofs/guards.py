"""The guard-removal check: each guard an invariant depends on, taken away, must make that
invariant's obligation fail with a counterexample.

A proof that still passes without the guard it is supposed to need proves less than it claims
(the invariant holds for another reason, or the encoding does not use the guard at all). Each
:class:`GuardRemoval` names a guard of :mod:`kraftspec.proofs.transitions` (by the rule it
implements), the transition it sits in and the invariant that must then fail, in the behaviour
profiles where that invariant rests on it (all of them unless it says otherwise).
"""

from __future__ import annotations

import contextlib

import attrs

from ..spec.profiles import DEFAULT_PROFILE, profile_names
from . import transitions as T
from .obligations import FAILED, Obligation


@attrs.frozen
class GuardRemoval:
    guard: str  # the name given to transitions.guard / transitions.enabled
    transition: str
    breaks: str  # the invariant whose obligation must fail
    description: str
    profiles: tuple[str, ...] | None = None  # the profiles where it must (None: every one)

    def applies(self, profile: str) -> bool:
        return self.profiles is None or profile in self.profiles


REMOVALS = (
    GuardRemoval("REG-4", "BrokerRegistration", "INV-3",
                 "a new incarnation registers while the old one holds its lease (and may lead)", ("kip-631",)),
    GuardRemoval("REG-9", "BrokerRegistration", "INV-3",
                 "a new incarnation replacing an unfenced one, whose lease lapsed and waits for the scan, leaves it "
                 "in its ISRs and leaderships (DEC-25)", ("kafka",)),
    GuardRemoval("REG-6", "BrokerRegistration", "INV-6", "the epoch is the offset before the batch's first"),
    GuardRemoval("REG-7", "BrokerRegistration", "INV-4", "the epoch does not come from the log"),
    GuardRemoval("PART-3/unfenced", "AlterPartitionReassignments", "INV-3",
                 "elections ignore fencing (a reassignment elects the fenced sole member of an ISR)"),
    GuardRemoval("PART-3/in-isr", "AlterPartitionReassignments", "INV-1",
                 "a leader stays leader after leaving the ISR (a completed reassignment removes it)"),
    GuardRemoval("PART-6", "Tick (a lease lapses)", "INV-9", "a fenced broker stays in ISRs it shares", ("kip-631",)),
    GuardRemoval("PART-6", "Tick (scan)", "INV-9", "a fenced broker stays in ISRs it shares", ("kafka",)),
    GuardRemoval("PART-8", "UnregisterBroker", "INV-5", "an unregistered broker stays in the ISRs it shares"),
    GuardRemoval("ISR-7", "AlterIsr", "INV-2", "AlterIsr accepts members outside the replicas"),
    GuardRemoval("ISR-8", "AlterIsr", "INV-9", "AlterIsr accepts fenced or unregistered members"),
    GuardRemoval("REASSIGN-4", "AlterPartitionReassignments", "INV-17",
                 "the target and the removing replicas are not kept apart (the profile's layout, DEC-18)"),
    GuardRemoval("TOPIC-5", "CreateTopics", "INV-3", "a new partition's ISR and leader may be fenced brokers"),
    GuardRemoval("SHUT-1", "BrokerHeartbeat", "INV-13", "fencing does not end a controlled shutdown"),
    GuardRemoval("SHUT-3", "BrokerHeartbeat", "INV-11",
                 "ShouldShutDown to a broker in controlled shutdown that may still lead"),
    GuardRemoval("LEASE-7", "BrokerHeartbeat", "INV-10", "a heartbeat does not renew the lease"),
    GuardRemoval("LEASE-8", "Tick (done)", "INV-10", "a lease lapses a millisecond later than the profile says (DEC-7)",
                 ("kip-631",)),
    GuardRemoval("LEASE-8", "Tick (scan)", "INV-10",
                 "the scan removes the lapsed session of a current registration without fencing its broker (DEC-25)",
                 ("kafka",)),
    GuardRemoval("LEASE-14", "Failover", "INV-10", "a new active controller keeps the old leases' times"),
    GuardRemoval("LAO-1", "BrokerHeartbeat", "INV-12", "LowestAcknowledgedOffset from the state before the step"),
)
"""REASSIGN-3 (a reassignment's target is registered brokers) is a guard of the encoding but not in
this list: since DEC-20 an unregistered broker may stay in replica lists, so INV-5 no longer needs
it, and no other encoded invariant does (an unregistered broker is never in sync, so never elected
and never completes a reassignment).

Where the profiles differ (DEC-25): in kip-631 an unfenced broker's lease has not lapsed (INV-10), so
REG-4 keeps a new incarnation from replacing it, and INV-3 rests on REG-4; in kafka a lapsed lease
can leave its broker unfenced until a scan, a new incarnation may then replace it, and INV-3 rests on
REG-9's cleanup instead (without REG-4 the cleanup still keeps INV-3; the kip-631 encoding has no
cleanup, see transitions.registration). LEASE-8 is the tick's boundary in kip-631 and the scan's
fencing in kafka, whose INV-10 is about sessions, not time; PART-6 is checked where each profile's
tick fences."""


@contextlib.contextmanager
def removed(guard: str):
    """The encoding without ``guard`` while the block runs."""
    T.DISABLED.add(guard)
    try:
        yield
    finally:
        T.DISABLED.discard(guard)


def check(removal: GuardRemoval, explain: bool = True, profile: str = DEFAULT_PROFILE) -> Obligation:
    """The obligation of ``removal.breaks`` for ``removal.transition`` in behaviour ``profile``,
    with the guard removed: it must be FAILED, with a counterexample in its detail."""
    from .inductive import obligations

    with removed(removal.guard):
        found = obligations((removal.breaks,), only=(removal.transition,), explain=explain, profile_names=(profile,))
    [obligation] = [o for o in found if o.subject == removal.breaks and o.transition == removal.transition]
    return obligation


def cases(profiles: tuple[str, ...] | None = None) -> list[tuple[GuardRemoval, str]]:
    """Every removal with every profile (default: all of spec/profiles.toml) where it applies."""
    return [(removal, name) for name in (profiles or profile_names()) for removal in REMOVALS if removal.applies(name)]


def run(explain: bool = True, profiles: tuple[str, ...] | None = None) -> list[tuple[GuardRemoval, Obligation]]:
    """Every removal in every profile where it applies (:func:`cases`); each obligation names its profile."""
    return [(removal, check(removal, explain, name)) for removal, name in cases(profiles)]


def killed(obligation: Obligation) -> bool:
    return obligation.result == FAILED
