"""The lease timing theorems, proved with Z3 over the reals.

The timing model
================

Time is real (milliseconds). There is one broker and one active controller; each has its own
clock, and every timeout is an interval measured on one node's clock, so only the clocks' *rates*
matter, never their offsets.

* **Drift.** A clock may run fast or slow, by at most ``r`` (0 <= r < 1), and its rate may change
  at any moment: over a real interval of length ``T`` a clock advances between ``T(1-r)`` and
  ``T(1+r)``. So a timer set for ``x`` ms on a node's clock expires between ``x/(1+r)`` and
  ``x/(1-r)`` real ms later. (The encodings ask this of every pair of readings of the same clock,
  so every counterexample is a clock that really exists.)
* **Delay.** A message that arrives, arrives within ``d`` of being sent (queueing in the
  controller included). Which messages are lost is part of each case below.
* **The broker** sends a heartbeat at least every ``h`` ms on its clock (it may send more often,
  as Kafka brokers do while starting and shutting down). Its registration counts as the first.
* **The controller** does exactly what the model does (spec/leases.md): an accepted heartbeat
  renews the lease at the controller's clock reading when it *receives* it (LEASE-7); the lease
  covers ``[last_contact, last_contact + s)`` on that clock, and the controller fences the broker
  when its clock reaches ``last_contact + s`` (LEASE-8: at the deadline exactly, so a heartbeat
  arriving at that very moment is too late). The controller answers at once (its processing time
  is part of ``d``).
* **The broker's self-fencing timer** (seed 003, "Broker-Side Heartbeat Timeout"): the broker acts
  as a live member (leads its partitions, accepts requests) at time ``t`` only while its clock at
  ``t`` is before ``c + b``, where ``c`` is its clock's reading when it *sent* the latest heartbeat
  that has been answered successfully by ``t``. At ``c + b`` it fences itself; it goes on sending
  heartbeats, and a later successful answer restarts the timer.

  Why the send time: it is the only moment the broker knows to be *no later* than the controller's
  renewal (the controller renews on receipt, after the send), so it is the only reading from which
  the broker can bound the controller's deadline: theorem (3) needs it. For theorem (2) it is the
  least favourable reading (the timer starts up to ``d`` before the renewal), so proving (2) with
  it proves (2) for any later start, such as the arrival of the answer.
* A heartbeat the controller ignores as a late copy (LEASE-6) was sent before one it had already
  accepted, so the controller's last contact is always at or after the send time of every heartbeat
  it answered: the broker's timer never starts after the controller's renewal. Failover (LEASE-14)
  is outside the model: it restarts every lease, which delays the controller's fencing.

The theorems
============

Each case is a :class:`Theorem`: a property, an exact condition on the settings, a scenario
encoded in Z3 (the schedule variables are free: every schedule the model allows), the property's
violation, and the worst-case schedule that violates it whenever the condition fails.

* ``TIME-1`` a broker whose heartbeats arrive is never fenced by the controller:
  ``s > (1+r)(h/(1-r) + d)``.
* ``TIME-2`` (seed 003) the broker never fences itself before the controller has declared it
  inactive. While its heartbeats are answered: ``b > h + 2d(1+r)``. When its heartbeats stop
  reaching the controller: ``b >= (1+r)(s/(1-r) + d)``. When the network between them fails both
  ways: ``b >= h + (1+r)(s/(1-r) + 2d)`` (the last heartbeats before the failure renew the lease
  but their answers are lost). When only the answers are lost, no ``b`` works.
* ``TIME-3`` the broker stops acting on a lease the controller revoked at most ``M`` after the
  controller fenced it and moved its leaderships: ``b <= (1-r)(s/(1+r) + M)``. With ``M = 0`` this
  contradicts ``TIME-2`` unless ``d = 0`` and ``r = 0``: the old leader may overlap the new one for
  a bounded window, and leader epochs (ISR-4) keep it from changing the ISR during it.
* ``TIME-4`` the defaults satisfy all of them.

Each proof asks Z3 for a counterexample: "unsat" proves the claim. Each first checks that its
hypotheses are satisfiable, so no proof holds vacuously. See proofs/README.md for the argument in
prose and the defaults' figures.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import z3
from attrs import field, frozen

from .obligations import FAILED, PROVED, UNKNOWN, Obligation
from .timing_settings import Timing

GROUP = "timing"
SOLVER_TIMEOUT_MS = 20_000

# ---- the settings (in timing_settings.py, without z3: the command line describes them cheaply) ----

DEFAULT_TIMING = Timing()


@frozen
class Params:
    """h, s, d, r, b, M as numbers of one kind: Z3 terms (symbolic or constant) or Fractions."""

    h: Any
    s: Any
    d: Any
    r: Any
    b: Any
    M: Any

    @staticmethod
    def symbolic() -> Params:
        return Params(*z3.Reals("h s d r b M"))

    @staticmethod
    def fractions(timing: Timing) -> Params:
        return Params(
            Fraction(timing.heartbeat_interval_ms),
            Fraction(timing.session_timeout_ms),
            Fraction(timing.max_message_delay_ms),
            Fraction(timing.clock_drift_ppm, 1_000_000),
            Fraction(timing.self_fence_timeout_ms),
            Fraction(timing.stale_leader_ms),
        )

    def constants(self) -> Params:
        """These Fractions as Z3 constants."""
        return Params(*(z3.RealVal(x) for x in (self.h, self.s, self.d, self.r, self.b, self.M)))


def domain(p: Params) -> list:
    """What every setting must be: positive times, a delay and a window that are not negative, a
    drift below 100%."""
    return [p.h > 0, p.s > 0, p.d >= 0, p.r >= 0, p.r < 1, p.b > 0, p.M >= 0]


def _ite(condition, then, otherwise):
    """``if`` for Fractions, ``z3.If`` for Z3 terms."""
    if isinstance(condition, bool):
        return then if condition else otherwise
    return z3.If(condition, then, otherwise)


def _min(x, y):
    return _ite(x <= y, x, y)


_OPS = {">": operator.gt, ">=": operator.ge, "<=": operator.le}


@frozen
class Condition:
    """``setting op bound(params)``: one setting against a bound made of the others."""

    setting: str  # "s" or "b"
    op: str
    formula: str  # the bound, in words of h, s, d, r, b, M
    bound: Callable[[Params], Any]
    zero_delay_formula: str = ""  # the bound's form when d = 0, if it differs

    def holds(self, p: Params):
        return _OPS[self.op](getattr(p, self.setting), self.bound(p))

    @property
    def text(self) -> str:
        zero = f" (with d = 0: {self.zero_delay_formula})" if self.zero_delay_formula else ""
        return f"{self.setting} {self.op} {self.formula}{zero}"

    def text_for(self, p: Params) -> str:
        """The condition as it applies to these (Fraction) settings."""
        formula = self.zero_delay_formula if self.zero_delay_formula and p.d == 0 else self.formula
        return f"{self.setting} {self.op} {formula}"


# ---- clocks, in Z3 ----------------------------------------------------------------------------


def clock(r, *readings) -> list:
    """One node's clock: for every pair of (real time, reading), the reading advances between
    (1-r) and (1+r) times the real time between them. Pairwise constraints on finitely many points
    are exactly what a clock with a varying rate in [1-r, 1+r] can produce."""
    facts = []
    for i, (t1, c1) in enumerate(readings):
        for t2, c2 in readings[i + 1 :]:
            for (ta, ca), (tb, cb) in (((t1, c1), (t2, c2)), ((t2, c2), (t1, c1))):
                facts.append(z3.Implies(ta <= tb, z3.And((1 - r) * (tb - ta) <= cb - ca, cb - ca <= (1 + r) * (tb - ta))))
    return facts


def within(x, low, high) -> list:
    return [low <= x, x <= high]


# ---- the theorems -----------------------------------------------------------------------------


@frozen
class Theorem:
    """One case of one theorem.

    ``scenario(p, v)`` returns the constraints on the schedule ``v`` (a dict of Z3 terms named by
    ``variables``) and the violation of the property; ``witness(p)`` is the schedule that violates
    it whenever the condition fails; ``story`` tells a schedule as a timeline.
    """

    id: str
    case: str
    claim: str
    condition: Condition
    variables: tuple[str, ...]
    scenario: Callable[[Params, dict], tuple[list, Any]]
    witness: Callable[[Params], dict]
    story: Callable[[Params, dict], list[tuple[Fraction, str]]]
    # for exactness: what the witness is also shown to satisfy, and under which hypotheses
    witness_facts: Callable[[Params, dict], list] = field(default=lambda p, v: [])
    exact_hypotheses: Callable[[Params], list] = field(default=lambda p: [])
    booleans: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.id} {self.case}"


# TIME-1 --------------------------------------------------------------------------------------

C1 = Condition("s", ">", "(1+r)(h/(1-r) + d)", lambda p: (1 + p.r) * (p.h / (1 - p.r) + p.d))


def _time1_scenario(p: Params, v: dict):
    """Heartbeat 0 is sent at t0 and received at a0; heartbeat 1 is sent at most h later on the
    broker's clock and received at a1. The violation: the controller's clock reaches
    a0's reading + s at some F from a0 up to a1 (a heartbeat arriving at the deadline is late).

    Why two heartbeats suffice: let k be the last heartbeat received before a fencing at F. The
    controller's last contact is at or after a_k (a later-received older copy only renews more),
    and heartbeat k+1 arrives at or after F. So a fencing of a broker that heartbeats on time is a
    schedule of this shape."""
    facts = [
        v["t0"] <= v["t1"],
        v["bc1"] - v["bc0"] <= p.h,
        *clock(p.r, (v["t0"], v["bc0"]), (v["t1"], v["bc1"])),
        *within(v["a0"], v["t0"], v["t0"] + p.d),
        *within(v["a1"], v["t1"], v["t1"] + p.d),
        *within(v["F"], v["a0"], v["a1"]),
        *clock(p.r, (v["a0"], v["cc0"]), (v["F"], v["ccF"])),
    ]
    return facts, v["ccF"] - v["cc0"] >= p.s


def _time1_witness(p: Params) -> dict:
    """The broker's clock runs slow (its h lasts h/(1-r)), the first heartbeat arrives at once and
    the next after d, and the controller's clock runs fast (its s lasts s/(1+r))."""
    slow_gap = p.h / (1 - p.r)
    return {"t0": 0, "bc0": 0, "t1": slow_gap, "bc1": p.h, "a0": 0, "a1": slow_gap + p.d, "cc0": 0,
            "F": p.s / (1 + p.r), "ccF": p.s}


def _time1_story(p: Params, v: dict):
    return [
        (v["t0"], f"the broker sends a heartbeat (its clock reads {fmt(v['bc0'])})"),
        (v["a0"], f"the heartbeat reaches the controller after {fmt(v['a0'] - v['t0'])} ms; the controller's clock "
                  f"reads {fmt(v['cc0'])}: the lease now lasts until {fmt(v['cc0'] + p.s)} on that clock"),
        (v["t1"], f"the broker sends its next heartbeat, {fmt(v['bc1'] - v['bc0'])} ms after the last by its own "
                  f"clock, which {_rate(v['bc1'] - v['bc0'], v['t1'] - v['t0'])}"),
        (v["F"], f"the controller's clock, which {_rate(v['ccF'] - v['cc0'], v['F'] - v['a0'])}, reads "
                 f"{fmt(v['ccF'])}: the lease has lapsed and the controller fences the broker"),
        (v["a1"], f"the heartbeat sent at {fmt(v['t1'])} arrives after {fmt(v['a1'] - v['t1'])} ms: too late, "
                  "a broker that heartbeats on time has been fenced"),
    ]


TIME_1 = Theorem(
    "TIME-1", "healthy broker",
    "a broker whose heartbeats all arrive within d is never fenced by the controller",
    C1, ("t0", "bc0", "t1", "bc1", "a0", "a1", "cc0", "F", "ccF"),
    _time1_scenario, _time1_witness, _time1_story,
)

# TIME-2, while the heartbeats are answered ------------------------------------------------------

C2_HEALTHY = Condition("b", ">", "h + 2d(1+r)", lambda p: p.h + 2 * p.d * (1 + p.r))


def _time2_healthy_scenario(p: Params, v: dict):
    """Heartbeat 0 (sent at t0) has been answered, so the broker's timer runs from its clock
    reading bc0; heartbeat 1 is sent at most h later by the broker's clock, received at a1, and
    answered at e1. The violation: the broker's clock reaches bc0 + b at X, no later than e1.
    Both the interval and the timeout are measured on the broker's one clock, so drift acts only on
    the round trip."""
    facts = [
        v["t0"] <= v["t1"],
        v["bc1"] - v["bc0"] <= p.h,
        *within(v["a1"], v["t1"], v["t1"] + p.d),
        *within(v["e1"], v["a1"], v["a1"] + p.d),
        v["t0"] <= v["X"],
        v["bcX"] - v["bc0"] == p.b,
        *clock(p.r, (v["t0"], v["bc0"]), (v["t1"], v["bc1"]), (v["X"], v["bcX"])),
    ]
    return facts, v["X"] <= v["e1"]


def _time2_healthy_witness(p: Params) -> dict:
    """The broker's clock runs fast throughout; the next heartbeat and its answer take d each."""
    t1 = p.h / (1 + p.r)
    return {"t0": 0, "bc0": 0, "t1": t1, "bc1": p.h, "a1": t1 + p.d, "e1": t1 + 2 * p.d, "X": p.b / (1 + p.r), "bcX": p.b}


def _time2_healthy_story(p: Params, v: dict):
    return [
        (v["t0"], f"the broker sends a heartbeat (its clock reads {fmt(v['bc0'])}); it is answered in time, so the "
                  f"broker will fence itself when its clock reads {fmt(v['bc0'] + p.b)} unless a newer answer comes"),
        (v["t1"], f"the broker sends its next heartbeat, {fmt(v['bc1'] - v['bc0'])} ms later by its clock"),
        (v["a1"], f"the heartbeat reaches the controller after {fmt(v['a1'] - v['t1'])} ms, which renews the lease "
                  "and answers"),
        (v["X"], f"the broker's clock, which {_rate(v['bcX'] - v['bc0'], v['X'] - v['t0'])}, reads "
                 f"{fmt(v['bcX'])}: no newer answer yet, so the broker fences itself"),
        (v["e1"], f"the answer arrives after {fmt(v['e1'] - v['a1'])} ms: too late, a healthy broker has fenced "
                  "itself"),
    ]


TIME_2_HEALTHY = Theorem(
    "TIME-2", "healthy broker",
    "a broker whose heartbeats are all answered within d never fences itself",
    C2_HEALTHY, ("t0", "bc0", "t1", "bc1", "a1", "e1", "X", "bcX"),
    _time2_healthy_scenario, _time2_healthy_witness, _time2_healthy_story,
)

# TIME-2, when the heartbeats stop reaching the controller ---------------------------------------

C2_LOST = Condition("b", ">=", "(1+r)(s/(1-r) + d)", lambda p: (1 + p.r) * (p.s / (1 - p.r) + p.d))


def _time2_lost_scenario(p: Params, v: dict):
    """Heartbeat j, sent at tj, is the last the controller receives (at aj); its answer gets back.
    The broker fences itself at X, when its clock reaches bcj + b; the controller fences it at F,
    when its clock reaches ccj + s. The violation: X < F. (If the answer to j came after X, the
    broker fenced itself even earlier, on an older timer: the healthy case already forbids that.)"""
    facts = [
        *within(v["aj"], v["tj"], v["tj"] + p.d),
        v["tj"] <= v["X"],
        v["bcX"] - v["bcj"] == p.b,
        *clock(p.r, (v["tj"], v["bcj"]), (v["X"], v["bcX"])),
        v["aj"] <= v["F"],
        v["ccF"] - v["ccj"] == p.s,
        *clock(p.r, (v["aj"], v["ccj"]), (v["F"], v["ccF"])),
    ]
    return facts, v["X"] < v["F"]


def _time2_lost_witness(p: Params) -> dict:
    """The last heartbeat takes d; the broker's clock runs fast, the controller's slow."""
    return {"tj": 0, "bcj": 0, "aj": p.d, "ccj": 0, "X": p.b / (1 + p.r), "bcX": p.b,
            "F": p.d + p.s / (1 - p.r), "ccF": p.s}


def _time2_lost_story(p: Params, v: dict):
    return [
        (v["tj"], f"the broker sends the last heartbeat that will get through (its clock reads {fmt(v['bcj'])}); "
                  f"its answer comes back, so the broker will fence itself when its clock reads {fmt(v['bcj'] + p.b)}"),
        (v["aj"], f"the heartbeat reaches the controller after {fmt(v['aj'] - v['tj'])} ms; the controller's clock "
                  f"reads {fmt(v['ccj'])}: the lease lasts until {fmt(v['ccj'] + p.s)} on that clock; from now on no "
                  "heartbeat reaches the controller"),
        (v["X"], f"the broker's clock, which {_rate(v['bcX'] - v['bcj'], v['X'] - v['tj'])}, reads {fmt(v['bcX'])}: "
                 "the broker fences itself"),
        (v["F"], f"the controller's clock, which {_rate(v['ccF'] - v['ccj'], v['F'] - v['aj'])}, reads "
                 f"{fmt(v['ccF'])}: only now does the controller fence the broker, {fmt(v['F'] - v['X'])} ms after "
                 "the broker stopped; meanwhile the controller kept it active and leading, and it refused to act"),
    ]


TIME_2_LOST = Theorem(
    "TIME-2", "heartbeats lost",
    "when the broker's heartbeats stop reaching the controller, the broker fences itself no earlier "
    "than the controller fences it",
    C2_LOST, ("tj", "bcj", "aj", "ccj", "X", "bcX", "F", "ccF"),
    _time2_lost_scenario, _time2_lost_witness, _time2_lost_story,
)

# TIME-2, when the network between them fails both ways ------------------------------------------

C2_PARTITION = Condition(
    "b", ">=", "h + (1+r)(s/(1-r) + 2d)",
    lambda p: _ite(p.d > 0, p.h + (1 + p.r) * (p.s / (1 - p.r) + 2 * p.d), (1 + p.r) * p.s / (1 - p.r)),
    "(1+r)s/(1-r)",
)


def _time2_partition_scenario(p: Params, v: dict):
    """The network fails at P: a message sent before P arrives within d, one sent at P or later
    never does (both ways). Heartbeat j (sent at tj, received at aj < P, so its answer was sent
    before P and gets back) is the last the broker hears about; heartbeat n, the next, is sent at
    most h later by the broker's clock. If n is sent before P ("inflight") it reaches the
    controller at or after P, and so does every later heartbeat sent before P (an earlier arrival
    would have been answered); the controller's last contact L is then the latest of those
    arrivals, ak, else aj. Heartbeats between n and k need not be named: the broker may send as
    often as it likes. The violation: the broker fences itself (clock bcj + b, at X) before the
    controller does (clock ccL + s, at F)."""
    inflight = v["inflight"]
    facts = [
        *within(v["aj"], v["tj"], v["tj"] + p.d),
        v["aj"] < v["P"],
        v["tj"] <= v["tn"],
        v["bcn"] - v["bcj"] <= p.h,
        inflight == (v["tn"] < v["P"]),
        z3.Implies(inflight, z3.And(*within(v["an"], v["tn"], v["tn"] + p.d), v["an"] >= v["P"])),
        z3.Implies(inflight, z3.And(v["tn"] <= v["tk"], v["tk"] < v["P"], *within(v["ak"], v["tk"], v["tk"] + p.d),
                                    v["ak"] >= v["an"], v["L"] == v["ak"])),
        z3.Implies(z3.Not(inflight), v["L"] == v["aj"]),
        v["tj"] <= v["X"],
        v["bcX"] - v["bcj"] == p.b,
        *clock(p.r, (v["tj"], v["bcj"]), (v["tn"], v["bcn"]), (v["X"], v["bcX"])),
        v["L"] <= v["F"],
        v["ccF"] - v["ccL"] == p.s,
        *clock(p.r, (v["L"], v["ccL"]), (v["F"], v["ccF"])),
    ]
    return facts, v["X"] < v["F"]


def _time2_partition_witness(p: Params) -> dict:
    """The broker's clock runs fast. With d > 0: the network fails d after heartbeat n is sent,
    just as n arrives (so n renews the lease but its answer is lost); heartbeat k, sent a moment
    eta before the failure, arrives d later; the controller's clock runs slow. eta is half the
    smaller of d and the margin by which the condition fails. With d = 0 nothing is in flight:
    n is sent at the failure and lost."""
    n_sent = p.h / (1 + p.r)
    margin = 2 * p.d + p.s / (1 - p.r) - (p.b - p.h) / (1 + p.r)
    eta = _min(p.d, margin) / 2
    fails_at = _ite(p.d > 0, n_sent + p.d, n_sent)
    k_sent = fails_at - eta
    last_contact = _ite(p.d > 0, k_sent + p.d, 0)
    return {"tj": 0, "bcj": 0, "aj": 0, "tn": n_sent, "bcn": p.h, "P": fails_at, "inflight": p.d > 0,
            "an": fails_at, "tk": k_sent, "ak": k_sent + p.d, "L": last_contact, "ccL": 0,
            "F": last_contact + p.s / (1 - p.r), "ccF": p.s, "X": p.b / (1 + p.r), "bcX": p.b}


def _time2_partition_facts(p: Params, v: dict) -> list:
    """In the witness the controller's lease does not lapse before L: with a slow controller clock,
    the arrivals aj, an, ak are less than s apart on it (given TIME-1's condition)."""
    slow = 1 - p.r
    return [z3.Implies(v["inflight"], z3.And(slow * (v["an"] - v["aj"]) < p.s, slow * (v["ak"] - v["an"]) < p.s))]


def _time2_partition_story(p: Params, v: dict):
    events = [
        (v["tj"], f"the broker sends heartbeat A (its clock reads {fmt(v['bcj'])})"),
        (v["aj"], f"A reaches the controller after {fmt(v['aj'] - v['tj'])} ms and is answered; the answer gets back, "
                  f"so the broker will fence itself when its clock reads {fmt(v['bcj'] + p.b)}"),
    ]
    if v["inflight"]:
        events += [
            (v["tn"], f"the broker sends heartbeat B, {fmt(v['bcn'] - v['bcj'])} ms after A by its clock"),
            (v["P"], "the network between the broker and the controller fails: nothing sent from now on arrives"),
            (v["an"], f"B, sent before the failure, reaches the controller after {fmt(v['an'] - v['tn'])} ms and renews "
                      "the lease; its answer is lost"),
        ]
        if v["tk"] != v["tn"]:
            events.append((v["tk"], f"the broker sends heartbeat C, {fmt(v['tk'] - v['tn'])} ms after B and "
                                    f"{fmt(v['P'] - v['tk'])} ms before the failure"))
        events.append((v["ak"], f"{'C' if v['tk'] != v['tn'] else 'B'} reaches the controller and renews the lease: the "
                                f"controller's clock reads {fmt(v['ccL'])}, the lease lasts until {fmt(v['ccL'] + p.s)}; "
                                "the answer is lost"))
    else:
        events.append((v["P"], "the network between the broker and the controller fails: the next heartbeat, sent "
                               f"at {fmt(v['tn'])}, is lost"))
    events += [
        (v["X"], f"the broker's clock, which {_rate(v['bcX'] - v['bcj'], v['X'] - v['tj'])}, reads {fmt(v['bcX'])}: "
                 "the broker fences itself"),
        (v["F"], f"the controller's clock, which {_rate(v['ccF'] - v['ccL'], v['F'] - v['L'])}, reads "
                 f"{fmt(v['ccF'])}: only now does the controller fence the broker, {fmt(v['F'] - v['X'])} ms after "
                 "the broker stopped"),
    ]
    return events


TIME_2_PARTITION = Theorem(
    "TIME-2", "partition",
    "when the network between the broker and the controller fails both ways, the broker fences "
    "itself no earlier than the controller fences it",
    C2_PARTITION,
    ("tj", "bcj", "aj", "tn", "bcn", "P", "inflight", "an", "tk", "ak", "L", "ccL", "F", "ccF", "X", "bcX"),
    _time2_partition_scenario, _time2_partition_witness, _time2_partition_story,
    witness_facts=_time2_partition_facts,
    exact_hypotheses=lambda p: [C1.holds(p)],
    booleans=("inflight",),
)

# TIME-3: the deposed leader ----------------------------------------------------------------------

C3 = Condition("b", "<=", "(1-r)(s/(1+r) + M)", lambda p: (1 - p.r) * (p.s / (1 + p.r) + p.M))


def _time3_scenario(p: Params, v: dict):
    """Heartbeat k, sent at tk, is received at ak (before the fencing) and answered at ek. The
    controller's last contact L is at or after ak, and it fences the broker (moving its
    leaderships) at F, when its clock has advanced s since L. The broker acts on k's answer at
    tau: its clock then is before bck + b. The violation: tau >= F + M. Delays do not matter: the
    timer starts at the send, before the renewal, whatever the delays."""
    facts = [
        *within(v["ak"], v["tk"], v["tk"] + p.d),
        *within(v["ek"], v["ak"], v["ak"] + p.d),
        v["ak"] <= v["L"],
        v["L"] <= v["F"],
        v["ccF"] - v["ccL"] >= p.s,
        *clock(p.r, (v["L"], v["ccL"]), (v["F"], v["ccF"])),
        v["ek"] <= v["tau"],
        v["bctau"] - v["bck"] < p.b,
        *clock(p.r, (v["tk"], v["bck"]), (v["tau"], v["bctau"])),
    ]
    return facts, v["tau"] >= v["F"] + p.M


def _time3_witness(p: Params) -> dict:
    """No delay; the controller's clock runs fast, the broker's slow; tau halfway between F + M
    and the moment the broker's timer would expire."""
    fence = p.s / (1 + p.r)
    tau = (fence + p.M + p.b / (1 - p.r)) / 2
    return {"tk": 0, "bck": 0, "ak": 0, "ek": 0, "L": 0, "ccL": 0, "F": fence, "ccF": p.s, "tau": tau,
            "bctau": (1 - p.r) * tau}


def _time3_story(p: Params, v: dict):
    rate = Fraction(v["bctau"] - v["bck"]) / Fraction(v["tau"] - v["tk"]) if v["tau"] != v["tk"] else Fraction(1)
    expiry = v["tk"] + p.b / rate
    events = [
        (v["tk"], f"the leader sends a heartbeat (its clock reads {fmt(v['bck'])})"),
        (v["ak"], f"the heartbeat reaches the controller after {fmt(v['ak'] - v['tk'])} ms and renews the lease"),
        (v["ek"], f"the answer reaches the broker: it may act as leader until its clock reads {fmt(v['bck'] + p.b)}; "
                  "none of its later heartbeats reaches the controller"),
    ]
    if v["L"] != v["ak"]:
        events.append((v["L"], "a later heartbeat reaches the controller (its answer is lost)"))
    events += [
        (v["F"], f"the controller's clock, which {_rate(v['ccF'] - v['ccL'], v['F'] - v['L'])}, reads "
                 f"{fmt(v['ccF'])}: the lease has lapsed; the controller fences the broker and moves its leaderships "
                 "to other in-sync replicas"),
        (v["F"] + p.M, f"the allowed window of {fmt(p.M)} ms after the move ends"),
        (v["tau"], f"the broker's clock, which {_rate(v['bctau'] - v['bck'], v['tau'] - v['tk'])}, reads "
                   f"{fmt(v['bctau'])}, before {fmt(v['bck'] + p.b)}: it still acts as leader, "
                   f"{fmt(v['tau'] - v['F'])} ms after its leaderships moved; at that rate its timer runs out at "
                   f"{fmt(expiry)}, {fmt(expiry - v['F'])} ms after the move"),
    ]
    return events


TIME_3 = Theorem(
    "TIME-3", "deposed leader",
    "a broker whose lease lapsed stops acting as leader at most M after the controller fenced it "
    "and moved its leaderships",
    C3, ("tk", "bck", "ak", "ek", "L", "ccL", "F", "ccF", "tau", "bctau"),
    _time3_scenario, _time3_witness, _time3_story,
)

THEOREMS = (TIME_1, TIME_2_HEALTHY, TIME_2_LOST, TIME_2_PARTITION, TIME_3)


def stale_leader_window(p: Params):
    """How long after the move the deposed leader may still act: b/(1-r) - s/(1+r) (the smallest M
    for which TIME-3 holds, when positive)."""
    return p.b / (1 - p.r) - p.s / (1 + p.r)


def smallest_window_given_lost_case(p: Params):
    """The smallest window TIME-3 can promise when TIME-2's weakest case holds: its least b,
    (1+r)(s/(1-r) + d), run on a slow clock, less the controller's fastest s."""
    return C2_LOST.bound(p) / (1 - p.r) - p.s / (1 + p.r)


# ---- running Z3 ---------------------------------------------------------------------------------


@frozen
class Outcome:
    result: str  # PROVED, FAILED or UNKNOWN
    seconds: float
    detail: str = ""
    values: dict = field(factory=dict)  # a counterexample's schedule, as Fractions and bools


def _check(facts) -> tuple[z3.CheckSatResult, z3.ModelRef | None, str]:
    solver = z3.Solver()
    solver.set("timeout", SOLVER_TIMEOUT_MS)
    solver.add(*facts)
    answer = solver.check()
    if answer == z3.sat:
        return answer, solver.model(), ""
    return answer, None, solver.reason_unknown() if answer == z3.unknown else ""


def _fresh(theorem: Theorem) -> dict:
    return {n: z3.Bool(n) if n in theorem.booleans else z3.Real(n) for n in theorem.variables}


def _value(term) -> Fraction | bool:
    if z3.is_true(term) or z3.is_false(term):
        return z3.is_true(term)
    if z3.is_rational_value(term):
        return Fraction(term.numerator_as_long(), term.denominator_as_long())
    return Fraction(term.approx(9).as_fraction()) if z3.is_algebraic_value(term) else Fraction(str(term))


def _values(model: z3.ModelRef, terms: dict) -> dict:
    return {n: _value(model.eval(t if isinstance(t, z3.ExprRef) else z3.RealVal(t), model_completion=True))
            for n, t in terms.items()}


def prove(hypotheses: list, claim) -> Outcome:
    """Prove ``hypotheses => claim`` for all values of their variables: first the hypotheses must be
    satisfiable (or the proof would be vacuous), then ``hypotheses and not claim`` unsatisfiable."""
    started = time.perf_counter()
    answer, _, reason = _check(hypotheses)
    if answer != z3.sat:
        elapsed = time.perf_counter() - started
        if answer == z3.unsat:
            return Outcome(FAILED, elapsed, "vacuous: the hypotheses cannot all hold")
        return Outcome(UNKNOWN, elapsed, f"Z3 gave up on the hypotheses: {reason}")
    answer, model, reason = _check([*hypotheses, z3.Not(claim)])
    elapsed = time.perf_counter() - started
    if answer == z3.unsat:
        return Outcome(PROVED, elapsed)
    if answer == z3.unknown:
        return Outcome(UNKNOWN, elapsed, f"Z3 gave up: {reason}")
    return Outcome(FAILED, elapsed, "counterexample", _model_dict(model))


def _model_dict(model: z3.ModelRef) -> dict:
    """The model's constants (Z3 also lists how it chose to read a division by zero: left out)."""
    return {d.name(): _value(model[d]) for d in model.decls() if d.arity() == 0}


def prove_condition(theorem: Theorem) -> Outcome:
    """For all settings meeting the condition and every schedule, the property holds."""
    p, v = Params.symbolic(), _fresh(theorem)
    facts, violation = theorem.scenario(p, v)
    return prove([*domain(p), theorem.condition.holds(p), *facts], z3.Not(violation))


def prove_exact(theorem: Theorem) -> Outcome:
    """For all settings that break the condition, the witness schedule is a schedule of the
    scenario and violates the property."""
    p = Params.symbolic()
    w = theorem.witness(p)
    facts, violation = theorem.scenario(p, w)
    hypotheses = [*domain(p), *theorem.exact_hypotheses(p), z3.Not(theorem.condition.holds(p))]
    return prove(hypotheses, z3.And(*facts, violation, *theorem.witness_facts(p, w)))


@frozen
class Verdict:
    """One theorem checked on one configuration."""

    theorem: Theorem
    outcome: Outcome
    params: Params  # the settings, as Fractions
    setting: Fraction  # the value of the condition's setting
    bound: Fraction  # the condition's bound, in numbers
    condition_holds: bool  # the closed-form condition, in exact arithmetic

    @property
    def holds(self) -> bool:
        return self.outcome.result == PROVED

    def timeline(self) -> list[tuple[Fraction, str]]:
        """The counterexample as events in real time (ms), or [] when the theorem holds."""
        if not self.outcome.values:
            return []
        return sorted(self.theorem.story(self.params, self.outcome.values), key=lambda event: event[0])

    def obligation(self, subject: str | None = None, prefix: str = "") -> Obligation:
        detail = self.outcome.detail
        if self.outcome.result == FAILED and self.outcome.values:
            detail = "; ".join(f"at {fmt(t)} ms {text}" for t, text in self.timeline())
        return Obligation(GROUP, subject or self.theorem.id, f"{prefix}{self.theorem.case}",
                          self.outcome.result, self.outcome.seconds, detail)


def search(theorem: Theorem, numbers: Params) -> Outcome:
    """Z3 looks for a schedule that violates the theorem with the settings fixed. A counterexample
    is the theorem's worst-case schedule when that one violates the property (it always does when
    the condition fails; Z3 confirms it here), else whatever Z3 found."""
    started = time.perf_counter()
    p, v = numbers.constants(), _fresh(theorem)
    facts, violation = theorem.scenario(p, v)
    answer, model, reason = _check([*facts, violation])
    if answer == z3.unsat:
        return Outcome(PROVED, time.perf_counter() - started)
    if answer == z3.unknown:
        return Outcome(UNKNOWN, time.perf_counter() - started, f"Z3 gave up: {reason}")
    w = theorem.witness(p)
    pinned, pinned_model, _ = _check([*facts, violation, *(v[n] == w[n] for n in theorem.variables)])
    values = _values(pinned_model, v) if pinned == z3.sat else _values(model, v)
    return Outcome(FAILED, time.perf_counter() - started, "counterexample", values)


def check(theorem: Theorem, timing: Timing) -> Verdict:
    """The theorem on one configuration, by Z3, beside its closed-form condition in exact
    arithmetic; should the two ever disagree, the verdict is UNKNOWN."""
    numbers = Params.fractions(timing)
    outcome = search(theorem, numbers)
    condition = theorem.condition
    holds = bool(condition.holds(numbers))
    if outcome.result != UNKNOWN and holds != (outcome.result == PROVED):
        outcome = Outcome(UNKNOWN, outcome.seconds, "Z3 and the closed-form condition disagree", outcome.values)
    return Verdict(theorem, outcome, numbers, getattr(numbers, condition.setting), Fraction(condition.bound(numbers)), holds)


def check_all(timing: Timing) -> list[Verdict]:
    return [check(theorem, timing) for theorem in THEOREMS]


# ---- the obligations ----------------------------------------------------------------------------


def _obligation(subject: str, transition: str, outcome: Outcome) -> Obligation:
    detail = outcome.detail
    if outcome.result == FAILED and outcome.values:
        detail = "counterexample: " + ", ".join(f"{n} = {fmt(x) if not isinstance(x, bool) else x}"
                                                for n, x in sorted(outcome.values.items()))
    return Obligation(GROUP, subject, transition, outcome.result, outcome.seconds, detail)


def theorem_obligations() -> list[Obligation]:
    """TIME-1 to TIME-3 for all settings: each condition suffices, and each is exact."""
    result = []
    for theorem in THEOREMS:
        cond = theorem.condition.text
        result.append(_obligation(theorem.id, f"{theorem.case}: holds when {cond}", prove_condition(theorem)))
        hypotheses = " (given TIME-1's condition)" if theorem is TIME_2_PARTITION else ""
        result.append(_obligation(theorem.id, f"{theorem.case}: fails whenever {cond} fails{hypotheses}",
                                  prove_exact(theorem)))
    result.append(_obligation("TIME-2", "answers lost: no b works", answers_lost_for_every_b()))
    result += [
        _obligation("TIME-3", "with TIME-2 (heartbeats lost), M >= (1+r)(s/(1-r) + d)/(1-r) - s/(1+r)",
                    window_forced_by_time2()),
        _obligation("TIME-3", "that least window is > 0 unless d = 0 and r = 0", window_positive()),
    ]
    return result


def _answers_lost_scenario(p: Params, v: dict):
    """Heartbeat j (sent at tj, received at aj) was answered at ej; every later answer is lost,
    while heartbeats go on arriving (the broker keeps heartbeating while fenced). The broker fences
    itself at X, when its clock reaches bcj + b; heartbeat m reached the controller at am, no later
    than X. The violation: at X the controller's lease still holds (its clock has advanced less than
    s since am)."""
    facts = [
        *within(v["aj"], v["tj"], v["tj"] + p.d),
        *within(v["ej"], v["aj"], v["aj"] + p.d),
        v["ej"] <= v["X"],
        v["bcX"] - v["bcj"] == p.b,
        *clock(p.r, (v["tj"], v["bcj"]), (v["X"], v["bcX"])),
        *within(v["am"], v["tm"], v["tm"] + p.d),
        v["tj"] <= v["tm"],
        v["am"] <= v["X"],
        *clock(p.r, (v["am"], v["ccm"]), (v["X"], v["ccX"])),
    ]
    return facts, v["ccX"] - v["ccm"] < p.s


def answers_lost_for_every_b() -> Outcome:
    """When heartbeats reach the controller but its answers are lost, the broker fences itself
    while the controller holds its lease, whatever b is. The witness, for every setting: no delay,
    the broker's clock runs fast, and the heartbeat it sends as its timer expires reaches the
    controller at once."""
    p = Params.symbolic()
    x = p.b / (1 + p.r)
    w = {"tj": 0, "bcj": 0, "aj": 0, "ej": 0, "X": x, "bcX": p.b, "tm": x, "am": x, "ccm": 0, "ccX": 0}
    facts, violation = _answers_lost_scenario(p, {n: z3.RealVal(t) if isinstance(t, int) else t for n, t in w.items()})
    return prove(domain(p), z3.And(*facts, violation))


def window_forced_by_time2() -> Outcome:
    """TIME-2 (heartbeats lost) and TIME-3 with window M hold together only if M is at least
    (1+r)(s/(1-r) + d)/(1-r) - s/(1+r)."""
    p = Params.symbolic()
    return prove([*domain(p), C2_LOST.holds(p), C3.holds(p)], p.M >= smallest_window_given_lost_case(p))


def window_positive() -> Outcome:
    """The least window is positive when messages take any time or clocks drift at all."""
    p = Params.symbolic()
    return prove([*domain(p), z3.Or(p.d > 0, p.r > 0)], smallest_window_given_lost_case(p) > 0)


def default_obligations() -> list[Obligation]:
    """TIME-4: the defaults (h 3000, s 18000, d 1500, r 0.001, b 25000, M = s) satisfy every case."""
    return [verdict.obligation("TIME-4", prefix=f"defaults: {verdict.theorem.id} ") for verdict in check_all(DEFAULT_TIMING)]


def obligations() -> list[Obligation]:
    """Every timing obligation: the theorems for all settings, then the defaults."""
    return [*theorem_obligations(), *default_obligations()]


# ---- plain numbers -------------------------------------------------------------------------------


def fmt(x) -> str:
    """A number of ms in plain decimals: exact when it has at most 3 decimals, else rounded to 3."""
    x = Fraction(x)
    rounded = round(x, 3)
    whole, rest = divmod(abs(rounded), 1)
    sign = "-" if rounded < 0 else ""
    if rest == 0:
        return f"{sign}{whole}"
    digits = f"{int(rest * 1000):03d}".rstrip("0")
    return f"{sign}{whole}.{digits}"


def _rate(clock_advance, real_elapsed) -> str:
    if real_elapsed == 0:
        return "stands still for this instant"
    rate = Fraction(clock_advance) / Fraction(real_elapsed)
    if rate == 1:
        return "keeps true time"
    return f"runs {fmt(abs(rate - 1) * 100)}% {'fast' if rate > 1 else 'slow'}"
