"""What every proof in proofs/ reports: one :class:`Obligation` per thing it set out to show.

``kraftspec prove`` prints them as a table, one line each, and as JSON; a reviewer reads the
subject (an invariant or theorem id), the transition or setting it is about, the result, the
time, and, when it failed, a counterexample in plain words.
"""

from __future__ import annotations

from attrs import frozen

PROVED = "proved"
FAILED = "failed"  # a counterexample was found; ``detail`` says what it is
UNKNOWN = "unknown"  # the solver gave up (timeout or incompleteness); ``detail`` says why
NO_COUNTEREXAMPLE = "no counterexample"  # a bounded search (CrossHair) found none: not a proof

ALL_PROFILES = "all"
"""An invariant obligation proved once for every behaviour profile (spec/profiles.toml): its
transition and claim are the same formulas in each, and it holds from the invariant's clauses that
are the same in each (see proofs/inductive.py)."""


@frozen
class Obligation:
    group: str  # "invariant" (Z3), "timing" (lease theorems), "contract" / "equivalence" (CrossHair)
    subject: str  # the invariant or theorem id, e.g. "INV-3" or "TIME-2"
    transition: str  # the transition or case it is about ("init", "BrokerHeartbeat", ...), or "-"
    result: str  # PROVED, FAILED or UNKNOWN
    seconds: float
    detail: str = ""  # the counterexample or the reason, in plain words; "" when proved
    bound: str = ""  # a bound the proof needs ("" when it holds for any number of brokers and partitions)
    profile: str = ""  # the behaviour profile it is about, ALL_PROFILES when proved once for every one, "" if none


    @property
    def proved(self) -> bool:
        return self.result == PROVED

    def to_json(self) -> dict:
        return {
            "group": self.group,
            "subject": self.subject,
            "transition": self.transition,
            "result": self.result,
            "seconds": round(self.seconds, 4),
            "detail": self.detail,
            "bound": self.bound,
            "profile": self.profile,
        }
