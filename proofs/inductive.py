"""The model's invariants, proved inductive with Z3 for any number of brokers and partitions.

For every behaviour profile (spec/profiles.toml), every invariant of spec/invariants.md that the
encoding can state (and the proofs' own lemmas, :data:`LEMMAS`) and every transition of
:mod:`kraftspec.proofs.transitions` built for that profile, two obligations: ``init => Inv`` and,
branch by branch, ``Inv and guard and Transition => Inv'``, where ``Inv`` is the conjunction of all
the encoded invariants of the profile (each proved inductive relative to the others: together they
are one inductive invariant). An obligation is proved when Z3 finds the negation unsatisfiable.
One whose transition and claim are the same formulas in every profile is proved once for all of
them, from the clauses of ``Inv`` the profiles share (:func:`obligations`).

Four details a reviewer should know:

- **A tick is a loop** in the kip-631 profile. The model's tick moves the clock and then fences
  lapsed leases one at a time. Between those pieces INV-10 (an unfenced broker's lease has not
  lapsed) is broken on purpose; the pieces are proved against the invariant without INV-10's clause
  on time, and the end of the loop ("no unfenced lease has lapsed") restores it. So INV-10 is proved
  for the whole tick, and every request starts from a state where it holds. In the kafka profile
  (DEC-25) the tick moves the clock and then runs at most one scan; INV-10's clause there is about
  sessions, not time, and holds between the two pieces too.
- **The committed image** is not a separate state in the encoding. By INV-16 and INV-8 (checked
  on every step of every test, not here) the committed image is the in-memory image as it was
  when the log ended at the committed offset, and those images are exactly what this induction
  covers. So a failover may assume the committed image satisfies the state invariants, with the
  committed offset as its log end (:func:`committed_image_ok`).
- **Non-vacuity.** For every branch and profile, ``Inv and guard`` is checked satisfiable, so no
  proof is true merely because a branch can never be taken.
- **LEMMA-1** (an unfenced broker's lease is not released) is not in spec/invariants.md: REG-4 lets
  a new incarnation replace a registration whose lease is released, so INV-3 and INV-9 need it.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import attrs
import z3

from ..spec.profiles import DEFAULT_PROFILE, Profile, profile, profile_names
from . import transitions as T
from .obligations import ALL_PROFILES, FAILED, PROVED, UNKNOWN, Obligation
from .symbolic import BROKER_FIELDS, PAIR_FIELDS, PART_FIELDS, SCALARS, Broker, Part, View, state

B, P = z3.Const("b", Broker), z3.Const("p", Part)
A = z3.Const("a", Broker)


# ---- the invariants (spec/invariants.md), as formulas over a view -----------------------------


def inv_1(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-1: a leader is in the ISR."""
    return z3.ForAll([P], z3.Implies(z3.And(v.live(P), v.led(P)), v.isr(P, v.leader(P))))


def inv_2(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-2: ISR, adding and removing within the replicas, adding and removing disjoint; no
    replica twice (distinct replicas have distinct places in the preferred order)."""
    return z3.And(
        z3.ForAll([P, B], z3.Implies(v.live(P), z3.And(
            z3.Implies(v.isr(P, B), v.rep(P, B)), z3.Implies(v.add(P, B), v.rep(P, B)),
            z3.Implies(v.rem(P, B), v.rep(P, B)), z3.Not(z3.And(v.add(P, B), v.rem(P, B)))))),
        z3.ForAll([P, A, B], z3.Implies(z3.And(v.live(P), v.rep(P, A), v.rep(P, B), A != B), v.rank(P, A) != v.rank(P, B))),
    )


def inv_3(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-3: a leader is registered and unfenced."""
    return z3.ForAll([P], z3.Implies(z3.And(v.live(P), v.led(P)), z3.And(v.reg(v.leader(P)), z3.Not(v.fenced(v.leader(P))))))


def inv_5(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-5: an unregistered broker leads nothing and is in no ISR but as its sole member (DEC-20);
    it may still be named in the replica lists."""
    return z3.And(
        z3.ForAll([P, B], z3.Implies(z3.And(v.live(P), z3.Not(v.reg(B))), z3.Not(z3.And(v.led(P), v.leader(P) == B)))),
        z3.ForAll([P, A, B], z3.Implies(z3.And(v.live(P), v.isr(P, B), z3.Not(v.reg(B)), A != B), z3.Not(v.isr(P, A)))),
    )


def inv_6(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-6: broker epochs are distinct and below the log end offset."""
    return z3.And(
        z3.ForAll([A, B], z3.Implies(z3.And(v.reg(A), v.reg(B), A != B), v.epoch(A) != v.epoch(B))),
        z3.ForAll([B], z3.Implies(v.reg(B), v.epoch(B) < v.log_end)),
    )


def inv_9(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-9: in an ISR of more than one member, every member is registered and unfenced."""
    return z3.ForAll([P, A, B], z3.Implies(
        z3.And(v.live(P), v.isr(P, A), v.isr(P, B), A != B), z3.And(v.reg(A), z3.Not(v.fenced(A)))))


def inv_10_leases(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-10, first clause: exactly the registered brokers hold a lease."""
    return z3.ForAll([B], v.lease(B) == v.reg(B))


def inv_10_time(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-10, second clause in the kip-631 profile, where every tick fences every lapsed lease
    (DEC-25): an unfenced broker's lease has not lapsed (the profile's boundary, DEC-7)."""
    return z3.ForAll([B], z3.Implies(z3.And(v.reg(B), z3.Not(v.fenced(B))), z3.Not(T.lapsed(v, B, s, params))))


def inv_10_sessions(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-10, second clause in the kafka profile, where a lapsed lease waits for a scan (DEC-25): an
    unfenced broker has a session of its current epoch, renewed at its lease's last contact."""
    return z3.ForAll([B], z3.Implies(z3.And(v.reg(B), z3.Not(v.fenced(B))),
                                     z3.And(v.sess(B), v.scontact(B) == v.contact(B))))


def inv_10_unfenced(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-10, second clause: what an unfenced broker holds, as the profile's ``lease_expiry`` says."""
    return inv_10_sessions(v, s, params) if T.scans(params) else inv_10_time(v, s, params)


def inv_10(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-10: every registered broker, and no other, holds a lease; an unfenced one's has not lapsed
    (kip-631) or has a session of its epoch renewed when it was (kafka)."""
    return z3.And(inv_10_leases(v, s, params), inv_10_unfenced(v, s, params))


def inv_10_mid_tick(v: View, s, params: Profile) -> z3.BoolRef:
    """What holds of INV-10 between the pieces of a tick: all of it but its clause on time (kip-631)."""
    return inv_10_leases(v, s, params) if not T.scans(params) else inv_10(v, s, params)


def inv_13(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-13: a broker in controlled shutdown is registered and unfenced."""
    return z3.ForAll([B], z3.Implies(v.shut(B), z3.And(v.reg(B), z3.Not(v.fenced(B)))))


def inv_17(v: View, s, params: Profile) -> z3.BoolRef:
    """INV-17: removing replicas come before every other replica in the replica list (kip-631's
    layout), or after every other one (kafka's, DEC-18)."""
    if params.reassignment_layout == "target-then-removing":
        return z3.ForAll([P, A, B], z3.Implies(
            z3.And(v.live(P), v.rem(P, A), v.rep(P, B), z3.Not(v.rem(P, B))), v.rank(P, B) < v.rank(P, A)))
    return z3.ForAll([P, A, B], z3.Implies(
        z3.And(v.live(P), v.rem(P, A), v.rep(P, B), z3.Not(v.rem(P, B))), v.rank(P, A) < v.rank(P, B)))


STATE_INVARIANTS: dict[str, Callable[[View, z3.ArithRef, Profile], z3.BoolRef]] = {
    "INV-1": inv_1, "INV-2": inv_2, "INV-3": inv_3, "INV-5": inv_5, "INV-6": inv_6,
    "INV-9": inv_9, "INV-10": inv_10, "INV-13": inv_13, "INV-17": inv_17,
}


def lemma_1(v: View, s, params: Profile) -> z3.BoolRef:
    """LEMMA-1: an unfenced broker's lease is not released (REG-4, DEC-6). Only a heartbeat answered
    ShouldShutDown (whose broker is fenced in the same batch), a failover (for a fenced broker) and,
    in the kafka profile, a registration (whose broker is fenced) release a lease; every other
    accepted heartbeat, and so every unfencing, claims it again."""
    return z3.ForAll([B], z3.Implies(z3.And(v.reg(B), z3.Not(v.fenced(B))), z3.Not(v.released(B))))


LEMMAS: dict[str, Callable[[View, z3.ArithRef, Profile], z3.BoolRef]] = {"LEMMA-1": lemma_1}
"""Invariants of the encoding that spec/invariants.md does not state, proved inductive with the
others and part of the inductive invariant: REG-4 lets a new incarnation replace a registration
whose lease is released, so INV-3 and INV-9 need to know that only a fenced broker's can be."""

CLAUSES = {**STATE_INVARIANTS, **LEMMAS}
"""Every state invariant the proofs carry: the spec's, then the lemmas."""

IMAGE_INVARIANTS = ("INV-1", "INV-2", "INV-3", "INV-5", "INV-6", "INV-9", "INV-17")
"""The invariants of the metadata image alone: what the committed image satisfies too."""


def inv_4(pre: View, post: View, failover: bool) -> z3.BoolRef:
    """INV-4: epochs, the clock and the committed offset never go back (a failover compares the
    in-memory state with the committed one, which the encoding does not keep: clock and offset only)."""
    clock = z3.And(post.now >= pre.now, post.committed >= pre.committed)
    if failover:
        return clock
    return z3.And(
        clock,
        z3.ForAll([B], z3.Implies(z3.And(pre.reg(B), post.reg(B)), post.epoch(B) >= pre.epoch(B))),
        z3.ForAll([P], z3.Implies(z3.And(pre.live(P), post.live(P)),
                                  z3.And(post.lepoch(P) >= pre.lepoch(P), post.pepoch(P) >= pre.pepoch(P)))),
    )


def inv_11(branch: T.Branch, x) -> z3.BoolRef:
    """INV-11: ShouldShutDown only for a broker that leads nothing after the step."""
    return z3.Implies(branch.should_shut_down, z3.ForAll([P], z3.Not(branch.post.leads(P, x))))


def inv_12(branch: T.Branch) -> z3.BoolRef:
    """INV-12: LowestAcknowledgedOffset is at most every unfenced broker's recorded offset."""
    v = branch.post
    return z3.ForAll([B], z3.Implies(z3.And(v.reg(B), z3.Not(v.fenced(B))), branch.lao <= v.offset(B)))


NOT_ENCODED = {
    "INV-7": "about the records in the log (a RegisterBrokerRecord's BrokerEpoch is its own offset); the encoding "
             "keeps the log only as its end offset. Its consequence for the state, epochs below the log end and "
             "distinct, is INV-6, proved here; INV-7 itself is checked on every step by model/invariants.py",
    "INV-8": "about replaying the committed records (replay is a fold over a list of records, which the encoding "
             "does not represent); checked on every step by model/invariants.py and by the snapshot tests",
    "INV-14": "about topic names, ids and partition numbers, which the encoding abstracts away (a topic is a set "
              "of partitions created or deleted together); checked on every step by model/invariants.py",
    "INV-15": "about the log's batches, snapshot and waiting responses, which the encoding keeps only as the log "
              "end and committed offsets; checked on every step by model/invariants.py",
    "INV-16": "about replaying the uncommitted records onto the committed image (a fold, as INV-8); checked on every "
              "step by model/invariants.py. The proof of failover leans on it: see this module's docstring",
}


# ---- the system: initial states, transitions ---------------------------------------------------


def session_timeout() -> z3.ArithRef:
    return z3.Int("broker.session.timeout.ms")


def config_ok(s) -> z3.BoolRef:
    """CONF-2 as far as the proofs need it: the session timeout is positive."""
    return s > 0


def initial(v: View) -> z3.BoolRef:
    """model.log.initial_state: no broker, no lease, no partition; the bootstrap batch committed."""
    return z3.And(
        z3.ForAll([B], z3.And(z3.Not(v.reg(B)), z3.Not(v.lease(B)), z3.Not(v.shut(B)), z3.Not(v.released(B)))),
        z3.ForAll([P], z3.Not(v.live(P))),
        v.now >= 0, v.committed >= 0, v.log_end == v.committed,
    )


def natural(v: View, s) -> z3.BoolRef:
    """Ranges every reachable state has (times, epochs and offsets are not negative), asked of a
    countermodel only to make it readable; the proofs never assume them."""
    return z3.And(
        s >= 2, v.now >= 0, v.committed >= 0, v.log_end >= v.committed,
        z3.ForAll([B], z3.And(v.epoch(B) >= 0, v.contact(B) >= 0, v.contact(B) <= v.now, v.offset(B) >= -1, v.inc(B) >= 0,
                              v.soff(B) >= -1, v.scontact(B) >= 0, v.scontact(B) <= v.now)),
        v.next_scan >= 0,
        z3.ForAll([P], z3.And(v.lepoch(P) >= 0, v.pepoch(P) >= v.lepoch(P))),
        z3.ForAll([P, B], z3.And(v.rank(P, B) >= 0, v.rank(P, B) < 16)),
    )


def _clauses(v: View, s, params: Profile, mid_tick: bool = False) -> dict[str, z3.BoolRef]:
    """The invariant's clauses by name (INV-10 in its two clauses); ``mid_tick``: as it holds between
    the pieces of a tick (kip-631: without INV-10's clause on time)."""
    parts = {inv_id: f(v, s, params) for inv_id, f in CLAUSES.items() if f is not inv_10}
    parts["INV-10 leases"] = inv_10_leases(v, s, params)
    if not mid_tick or T.scans(params):
        parts["INV-10 unfenced"] = inv_10_unfenced(v, s, params)
    return parts


def invariant(v: View, s, params: Profile, mid_tick: bool = False) -> z3.BoolRef:
    return z3.And(*_clauses(v, s, params, mid_tick).values())


def common_invariant(v: View, s, profiles: list[Profile], mid_tick: bool = False) -> z3.BoolRef:
    """The clauses of the invariant that are the same formula in every one of ``profiles``: every
    clause but INV-10's second (on time in kip-631, DEC-7; on sessions in kafka, DEC-25) and INV-17
    (the layout, DEC-18)."""
    each = [_clauses(v, s, params, mid_tick) for params in profiles]
    return z3.And(*(f for name, f in each[0].items()
                    if all(name in other and _same([f, other[name]]) for other in each[1:])))


def committed_image_ok(image: View, params: Profile) -> z3.BoolRef:
    """What a failover may assume of the committed image: the image invariants (see the docstring)."""
    return z3.And(*(STATE_INVARIANTS[i](image, None, params) for i in IMAGE_INVARIANTS))


BUILDERS = {
    "BrokerRegistration": T.registration, "BrokerHeartbeat": T.heartbeat, "UnregisterBroker": T.unregistration,
    "AlterIsr": T.alter_isr, "CreateTopics": T.create_topics, "DeleteTopics": T.delete_topics,
    "AlterPartitionReassignments": T.reassign, "ListPartitionReassignments": T.list_reassignments,
    "Tick (clock)": T.tick_advance, "Tick (a lease lapses)": T.tick_expire, "Tick (done)": T.tick_done,
    "Tick (scan)": T.tick_scan,
    "Commit": T.commit, "Failover": lambda pre, s, params: T.failover(pre, s, params, committed_image_ok),
    "TakeSnapshot": T.take_snapshot,
}
"""Each transition's builder, by the name the transition carries. A builder takes the state before,
the session timeout and the profile (spec.profiles.Profile), whose parameters it reads in Python.
Which of the tick's pieces a profile has depends on it (:data:`TICK_PIECES`)."""

TICK_PIECES = {
    "every-lapsed-lease": ("Tick (a lease lapses)", "Tick (done)"),  # kip-631: a loop over the lapsed leases
    "hash-map-scan": ("Tick (scan)",),  # kafka: at most one scan (DEC-25)
}
"""The pieces after the clock of a tick, by the profile's ``lease_expiry`` (DEC-25)."""


def builders(params: Profile) -> dict:
    """The builders of the transitions of profile ``params``: every one but the tick pieces of the
    other way of finding lapsed leases (:data:`TICK_PIECES`)."""
    others = {name for pieces in TICK_PIECES.values() for name in pieces} - set(TICK_PIECES[params.lease_expiry])
    return {name: build for name, build in BUILDERS.items() if name not in others}


def transitions(pre: View, s, params: Profile, only: tuple[str, ...] | None = None) -> list[T.Transition]:
    """The transitions named in ``only`` (default: all) of profile ``params``, built over ``pre``."""
    return [build(pre, s, params) for name, build in builders(params).items() if not only or name in only]


def profiles(names: tuple[str, ...] | None = None) -> list[Profile]:
    """The profiles named (default: every profile of spec/profiles.toml, the default first)."""
    return [profile(n) for n in (names or profile_names())]


# ---- the same formula in every profile -----------------------------------------------------------


def _same(exprs) -> bool:
    """The terms are one and the same formula (Z3 shares structurally equal terms, so their ids agree)."""
    ids = {e.get_id() if z3.is_expr(e) else repr(e) for e in exprs}
    return len(ids) == 1


def _terms(transition: T.Transition) -> list:
    """Every term of a transition: its axioms, and each branch's guard, reply and view, field by field."""
    out: list = [*transition.axioms]
    for branch in transition.branches:
        v = branch.post
        out += [branch.guard, *branch.axioms, branch.should_shut_down, branch.lao]
        out += [getattr(v, f)(B) for f in BROKER_FIELDS] + [getattr(v, f)(P) for f in PART_FIELDS]
        out += [getattr(v, f)(P, B) for f in PAIR_FIELDS] + [getattr(v, f) for f in SCALARS]
    return out


def same_transition(built: list[T.Transition]) -> bool:
    """The transitions built for each profile are the same formulas: it does not read the profile."""
    first = built[0]
    for other in built[1:]:
        if [b.name for b in other.branches] != [b.name for b in first.branches]:
            return False
        a, b = _terms(first), _terms(other)
        if len(a) != len(b) or not all(_same([x, y]) for x, y in zip(a, b, strict=True)):
            return False
    return True


# ---- the obligations ---------------------------------------------------------------------------


@attrs.frozen
class Outcome:
    result: str
    seconds: float
    detail: str = ""
    model: z3.ModelRef | None = None
    branch: str = ""

    @property
    def proved(self) -> bool:
        return self.result == PROVED


def _check(solver: z3.Solver, goal: z3.BoolRef, timeout_ms: int) -> tuple[z3.CheckSatResult, float, z3.ModelRef | None]:
    solver.push()
    solver.add(goal)
    solver.set("timeout", timeout_ms)
    started = time.perf_counter()
    answer = solver.check()
    seconds = time.perf_counter() - started
    model = solver.model() if answer == z3.sat else None
    solver.pop()
    return answer, seconds, model


def prove(assumptions: list[z3.BoolRef], claim: z3.BoolRef, timeout_ms: int = 20_000) -> Outcome:
    """``assumptions => claim``: PROVED when the negation is unsatisfiable."""
    solver = z3.Solver()
    solver.add(*assumptions)
    answer, seconds, model = _check(solver, z3.Not(claim), timeout_ms)
    if answer == z3.unsat:
        return Outcome(PROVED, seconds)
    if answer == z3.sat:
        return Outcome(FAILED, seconds, model=model)
    return Outcome(UNKNOWN, seconds, f"Z3 gave up: {solver.reason_unknown()}")


def _prove_branches(base: list[z3.BoolRef], claims, pre: View, s, timeout_ms: int) -> Outcome:
    """Each (branch, claim) from ``base``: PROVED, or the first branch that is not, with its countermodel."""
    total = 0.0
    for branch, claim in claims:
        outcome = prove([*base, *branch.axioms, branch.guard], claim, timeout_ms)
        total += outcome.seconds
        if outcome.result == FAILED:  # a readable countermodel, if there is one
            nicer = prove([*base, *branch.axioms, branch.guard, natural(pre, s)], claim, timeout_ms)
            total += nicer.seconds
            outcome = nicer if nicer.result == FAILED else outcome
        if outcome.result != PROVED:
            return attrs.evolve(outcome, branch=branch.name, seconds=total)
    return Outcome(PROVED, total)


def obligations(invariant_ids: tuple[str, ...] | None = None, timeout_ms: int = 20_000,
                mutate: Callable[[T.Transition], T.Transition] | None = None,
                only: tuple[str, ...] | None = None, explain: bool = True,
                profile_names: tuple[str, ...] | None = None) -> list[Obligation]:
    """Every obligation, for each behaviour profile (default: all of them): ``init => Inv`` and
    ``Inv and T => Inv'`` for each invariant and transition, the step and reply invariants, and a
    non-vacuity check per transition and profile. ``only`` limits the transitions by name;
    ``mutate`` rewrites each transition first. A failed obligation's detail is its counterexample,
    replayed in the model and classified when ``explain``.

    An obligation whose transition and claim are the same formulas in every profile is first tried
    once for all of them (profile :data:`ALL_PROFILES`), from the clauses of the invariant that are
    the same in every profile (:func:`common_invariant`), which each profile's invariant implies;
    where that is not enough, it is proved for each profile from that profile's invariant."""
    from functools import partial

    from .counterexample import explain as explain_failure

    describe = partial(explain_failure, classify_it=explain)  # a failed obligation's detail

    chosen = profiles(profile_names)
    s = session_timeout()
    pre = state("pre")
    ids = invariant_ids or tuple(CLAUSES) + ("INV-4", "INV-11", "INV-12")
    out: list[Obligation] = []

    init = state("init")
    for inv_id in ids:
        if inv_id in CLAUSES and not only:
            claims = [CLAUSES[inv_id](init, s, params) for params in chosen]
            if len(chosen) > 1 and _same(claims):
                outcome = prove([config_ok(s), initial(init)], claims[0], timeout_ms)
                out.append(_obligation(inv_id, "init", outcome, describe, init, None, "", chosen[0], ALL_PROFILES))
                continue
            for params, claim in zip(chosen, claims, strict=True):
                outcome = prove([config_ok(s), initial(init)], claim, timeout_ms)
                out.append(_obligation(inv_id, "init", outcome, describe, init, None, "", params, params.name))

    for name, build in BUILDERS.items():
        having = [params for params in chosen if name in builders(params)]  # the profiles with this transition
        if (only and name not in only) or not having:
            continue
        built = [build(pre, s, params) for params in having]
        if mutate is not None:
            built = [mutate(transition) for transition in built]
        shared = len(having) > 1 and len(having) == len(chosen) and same_transition(built)
        mid_tick = built[0].within_tick and not built[0].starts_tick  # a later piece of a tick starts mid-tick
        for inv_id in ids:
            each = [_claims(inv_id, transition, pre, s, params) for transition, params in zip(built, having, strict=True)]
            if not each[0]:
                continue
            if shared and all(_same([c for _, c in claims]) for claims in zip(*each, strict=True)):
                base = [config_ok(s), common_invariant(pre, s, having, mid_tick), *built[0].axioms]
                outcome = _prove_branches(base, each[0], pre, s, timeout_ms)
                if outcome.proved:
                    out.append(_obligation(inv_id, name, outcome, describe, pre, built[0], "", having[0], ALL_PROFILES))
                    continue
            for transition, params, claims in zip(built, having, each, strict=True):
                base = [config_ok(s), invariant(pre, s, params, mid_tick), *transition.axioms]
                outcome = _prove_branches(base, claims, pre, s, timeout_ms)
                out.append(_obligation(inv_id, name, outcome, describe, pre, transition, outcome.branch, params,
                                       params.name))
        for transition, params in zip(built, having, strict=True):
            base = [config_ok(s), invariant(pre, s, params, mid_tick), *transition.axioms]
            out.append(_non_vacuous(transition, base, timeout_ms, params.name))
    for inv_id, reason in NOT_ENCODED.items():
        if invariant_ids is None:
            out.append(Obligation("invariant", inv_id, "-", "not encoded", 0.0, reason, profile=ALL_PROFILES))
    return out


def _claims(inv_id: str, transition: T.Transition, pre: View, s, params: Profile) -> list[tuple[T.Branch, z3.BoolRef]]:
    x = transition.params.get("broker")
    claims = []
    for branch in transition.branches:
        claim = _claim(inv_id, branch, pre, s, x, transition, params)
        if claim is not None:
            claims.append((branch, claim))
    return claims


def _claim(inv_id: str, branch: T.Branch, pre: View, s, x, transition: T.Transition,
           params: Profile) -> z3.BoolRef | None:
    post = branch.post
    if inv_id == "INV-4":
        return inv_4(pre, post, failover=transition.name == "Failover")
    if inv_id == "INV-11":
        return inv_11(branch, x) if branch.should_shut_down is not None else None
    if inv_id == "INV-12":
        return inv_12(branch) if branch.lao is not None else None
    if inv_id == "INV-10" and transition.within_tick and not transition.ends_tick:
        return inv_10_mid_tick(post, s, params)  # mid-tick: all but the clause on time; the loop's end restores it
    return CLAUSES[inv_id](post, s, params)


def _non_vacuous(transition: T.Transition, base: list[z3.BoolRef], timeout_ms: int, profile_name: str) -> Obligation:
    """Every branch can be taken from some state satisfying the invariant."""
    solver = z3.Solver()
    solver.add(*base)
    started = time.perf_counter()
    dead, unsure = [], []
    for branch in transition.branches:
        answer, _, _ = _check(solver, z3.And(branch.guard, *branch.axioms), timeout_ms)
        if answer == z3.unsat:
            dead.append(branch.name)
        elif answer != z3.sat:
            unsure.append(branch.name)
    seconds = time.perf_counter() - started
    if dead:
        return Obligation("invariant", "non-vacuous", transition.name, FAILED, seconds,
                          f"branches that no state satisfying the invariant can take: {', '.join(dead)}",
                          profile=profile_name)
    if unsure:
        return Obligation("invariant", "non-vacuous", transition.name, UNKNOWN, seconds,
                          f"Z3 could not show these branches can be taken: {', '.join(unsure)}", profile=profile_name)
    return Obligation("invariant", "non-vacuous", transition.name, PROVED, seconds, profile=profile_name)


def _obligation(inv_id, transition_name, outcome: Outcome, explain, pre, transition, branch, params: Profile,
                profile_name: str) -> Obligation:
    detail = outcome.detail
    if outcome.result == FAILED and outcome.model is not None:
        detail = explain(outcome.model, inv_id, pre, transition, branch, params=params)
    return Obligation("invariant", inv_id, transition_name, outcome.result, outcome.seconds, detail,
                      profile=profile_name)


# ---- which invariants need which ------------------------------------------------------------------


def dependencies(timeout_ms: int = 5_000, profile_name: str = DEFAULT_PROFILE) -> dict[str, list[tuple[str, str, list[str]]]]:
    """For each state invariant, the transitions (and branch) where it is not inductive on its own
    in profile ``profile_name``, with the other invariants each of which, added alone, makes it so
    (or, where none does, the pairs that do, as "A and B"): the strengthening each one needs. Empty
    for an invariant inductive on its own. (The kip-631 tick's pieces are left out: they are proved
    piecewise against the invariant without INV-10's clause on time, see the docstring. The kafka
    tick's are in: INV-10 holds between them.)"""
    params = profile(profile_name)
    s = session_timeout()
    pre = state("pre")
    out: dict[str, list[tuple[str, str, list[str]]]] = {}
    for inv_id, holds in CLAUSES.items():
        out[inv_id] = []
        for transition in transitions(pre, s, params):
            if transition.within_tick and not T.scans(params):
                continue
            for branch in transition.branches:
                base = [config_ok(s), holds(pre, s, params), *transition.axioms, *branch.axioms, branch.guard]
                if prove(base, holds(branch.post, s, params), timeout_ms).proved:
                    continue
                others = [(other, f(pre, s, params)) for other, f in CLAUSES.items() if other != inv_id]
                claim = holds(branch.post, s, params)
                helpers = [other for other, f in others if prove([*base, f], claim, timeout_ms).proved]
                if not helpers:  # no one invariant is enough: the pairs that are
                    helpers = [f"{a} and {b}" for (a, f), (b, g) in itertools.combinations(others, 2)
                               if prove([*base, f, g], claim, timeout_ms).proved]
                out[inv_id].append((transition.name, branch.name, helpers))
                break
    return out
