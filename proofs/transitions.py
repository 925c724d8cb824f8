"""Every event of the model as a Z3 transition: the view after it, built from the view before.

Each builder mirrors one handler of model/ (named in its docstring), for one behaviour profile
(``params``, a :class:`kraftspec.spec.profiles.Profile` whose parameters it reads in Python, as the
model reads ``state.config.params``), and returns a :class:`Transition`: the event's parameters
(Z3 constants and functions, which the drift check pins to a concrete event) and its branches, one
per outcome of the handler, each with the guard that selects it and the view after it. The guards
of a transition's branches are exclusive and cover every case, as the handler's ``if`` chain does.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import z3

from ..spec.profiles import Profile
from .symbolic import PAIR_FIELDS, PART_FIELDS, Broker, Context, Part, View, state, update

B, P = z3.Const("b", Broker), z3.Const("p", Part)

DISABLED: set[str] = set()
"""Guards switched off, by name, for the guard-removal check (:mod:`kraftspec.proofs.guards`)."""


def enabled(name: str) -> bool:
    """Whether the guard ``name`` (a rule id, and a word when the rule has several) is in force."""
    return name not in DISABLED


def guard(name: str, condition: z3.BoolRef) -> z3.BoolRef:
    """A condition the model checks, named so that the guard-removal check can take it away."""
    return condition if enabled(name) else z3.BoolVal(True)


@attrs.frozen
class Branch:
    name: str
    guard: z3.BoolRef
    post: View
    should_shut_down: z3.BoolRef | None = None  # a heartbeat's reply (INV-11)
    lao: z3.ArithRef | None = None  # a version 1 heartbeat's LowestAcknowledgedOffset (INV-12)
    axioms: tuple[z3.BoolRef, ...] = ()  # what pins the fresh functions of this branch's view alone


@attrs.frozen
class Transition:
    name: str
    params: dict
    branches: tuple[Branch, ...]
    axioms: tuple[z3.BoolRef, ...]
    within_tick: bool = False  # a piece of a tick: INV-10's clause on time need not hold before or after (see inductive)
    starts_tick: bool = False  # the tick's first piece: it starts from a state where the whole invariant holds
    ends_tick: bool = False  # a piece that ends the tick: the whole invariant holds after it


# ---- the profile's parameters, as the encoding reads them (spec/profiles.toml) ---------------------


def lapsed_since(contact, now, s, params: Profile, late: bool = False) -> z3.BoolRef:
    """model.state.lapsed (LEASE-8, DEC-7): a lease or session last renewed at ``contact`` has lapsed
    at ``now``: at the deadline (kip-631's ``at-deadline``) or only after it (kafka's
    ``after-deadline``). ``late`` moves the boundary a millisecond on (the guard-removal check of
    LEASE-8)."""
    deadline = contact + s + (1 if late else 0)
    return now >= deadline if params.lease_lapses == "at-deadline" else now > deadline


def lapsed(v: View, b, s, params: Profile, late: bool = False) -> z3.BoolRef:
    """model.state.Lease.lapsed: ``b``'s lease has lapsed (LEASE-8, DEC-7)."""
    return lapsed_since(v.contact(b), v.now, s, params, late)


def scans(params: Profile) -> bool:
    """DEC-25, ``lease_expiry``: the controller finds lapsed leases by Kafka's periodic scan of its
    session table (kafka's ``hash-map-scan``), not by fencing every lapsed lease at each tick
    (kip-631's ``every-lapsed-lease``)."""
    return params.lease_expiry == "hash-map-scan"


def kafka_records(params: Profile) -> bool:
    """DEC-22, ``record_formats``: the profile writes Kafka's records, whose RegisterBrokerRecord
    carries Fenced and InControlledShutdown (kafka), not seed 000's (kip-631). Two things depend on it:
    how many records a step writes, which the encoding counts only where it must (a registration's),
    and whether a registration can say its broker is in controlled shutdown (a
    BrokerRegistrationChangeRecord written when the shutdown begins, until the broker registers
    again), which makes it ineligible (PART-3, ISR-8) but for its own unfencing (PART-7)."""
    return params.record_formats != "seed-000"


SCAN_AFTER_FINDING = 10
"""model.heartbeat.scan_delay_ms (DEC-25): the next scan 10 ms after one that removed a session."""


def scan_period(s) -> z3.ArithRef:
    """model.heartbeat.scan_delay_ms (DEC-25): the next scan a session timeout / 8 later, rounded up
    to a millisecond (at least 1 ms, which a positive timeout gives, CONF-2)."""
    return (s + 7) / 8


def has_applied(recorded, offset, params: Profile) -> z3.BoolRef:
    """model.heartbeat.has_applied (DEC-2): a recorded CurrentMetadataOffset is one more than the
    highest offset applied (kip-631's ``next-offset``) or that offset itself (kafka's ``last-applied``)."""
    return recorded > offset if params.heartbeat_offset == "next-offset" else recorded >= offset


# ---- the partition change builder (model/partitions.py) ------------------------------------


def partition_change(ctx: Context, elig: View, cur: View, touched: Callable, params: Profile, *, isr=None, rep=None,
                     rank=None, rem=None, add=None, fewer=None, reorder=None, leaving=None, joining=None) -> View:
    """model.partitions.partition_change, for every partition where ``touched`` holds: complete
    a reassignment when the new lists allow it (REASSIGN-6, the profile's ``reassignment_completes``),
    keep or elect the leader (PART-3, PART-4: the target's replicas before those being removed),
    and bump the epochs as replaying the change record does (PART-5, DEC-17: in the kafka profile a
    change that removes a replica raises the leader epoch too). ``elig`` is the view eligibility is
    judged on; ``cur`` holds the partitions before; ``leaving``, a broker that neither stays leader
    nor is elected (SHUT-2); ``joining``, the broker being unfenced (PART-7), which may be elected
    whatever its registration says of a controlled shutdown (DEC-22); ``fewer``, whether the new
    lists add fewer replicas than they remove (DEC-18: Kafka 4.3's completion compares the counts)."""
    isr = cur.isr if isr is None else isr
    rep = cur.rep if rep is None else rep
    rank = cur.rank if rank is None else rank
    rem = cur.rem if rem is None else rem
    add = cur.add if add is None else add
    fewer = cur.fewer if fewer is None else fewer
    reassigning, _ = ctx.exists_b("reassigning", lambda p, b: z3.Or(add(p, b), rem(p, b)))

    def target_behind(label, in_sync):
        behind, _ = ctx.exists_b(label, lambda p, b: z3.And(rep(p, b), z3.Not(rem(p, b)), z3.Not(in_sync(p, b))))
        return behind

    completion = params.reassignment_completes
    if completion == "adding-in-sync":  # every adding replica in sync, the ISR meets the target
        lagging, _ = ctx.exists_b("adding-out-of-sync", lambda p, b: z3.And(add(p, b), z3.Not(isr(p, b))))
        meets, _ = ctx.exists_b("isr-meets-target", lambda p, b: z3.And(rep(p, b), z3.Not(rem(p, b)), isr(p, b)))

        def completes(p):
            return z3.And(z3.Not(lagging(p)), meets(p))
    elif completion == "target-in-sync":  # every replica of the target in sync (Kafka 4.0 to 4.2)
        behind = target_behind("target-out-of-sync", isr)

        def completes(p):
            return z3.Not(behind(p))
    else:  # adding-in-sync-whole-target-when-shrinking (Kafka 4.3 and later): in the ISR without the
        # removing replicas, which is not empty, every adding one, and every one of the target when
        # fewer are added than removed
        assert completion == "adding-in-sync-whole-target-when-shrinking", completion

        def staying(p, b):
            return z3.And(isr(p, b), z3.Not(rem(p, b)))

        some_staying, _ = ctx.exists_b("isr-without-removing", staying)
        lagging, _ = ctx.exists_b("adding-not-staying", lambda p, b: z3.And(add(p, b), z3.Not(staying(p, b))))
        behind = target_behind("target-not-staying", staying)

        def completes(p):
            return z3.And(some_staying(p), z3.Not(lagging(p)), z3.Or(z3.Not(fewer(p)), z3.Not(behind(p))))

    def complete(p):
        return z3.And(touched(p), reassigning(p), completes(p))

    def isr2(p, b):
        return z3.And(isr(p, b), z3.Not(z3.And(complete(p), rem(p, b))))

    def rep2(p, b):
        return z3.And(rep(p, b), z3.Not(z3.And(complete(p), rem(p, b))))

    def add2(p, b):
        return z3.And(add(p, b), z3.Not(complete(p)))

    def rem2(p, b):
        return z3.And(rem(p, b), z3.Not(complete(p)))

    def fewer2(p):
        return z3.And(fewer(p), z3.Not(complete(p)))

    def not_leaving(b):
        return z3.BoolVal(True) if leaving is None else b != leaving

    def stays(p):
        leader = cur.leader(p)
        return z3.And(cur.led(p), not_leaving(leader), guard("PART-3/in-isr", isr2(p, leader)), elig.reg(leader),
                      z3.Not(elig.fenced(leader)), z3.Not(elig.rshut(leader)))

    def may_lead(b):  # PART-3, or the broker being unfenced whatever its registration says (PART-7, DEC-22)
        return elig.eligible(b) if joining is None else z3.Or(b == joining, elig.eligible(b))

    def preferred(p, a, b):  # model.partitions.preferred_order: a no later than b
        return z3.If(rem2(p, a) == rem2(p, b), rank(p, a) <= rank(p, b), z3.Not(rem2(p, a)))

    has, who = ctx.first("elected", lambda p, b: z3.And(rep2(p, b), isr2(p, b), may_lead(b), not_leaving(b)),
                         before=preferred)

    def led2(p):
        return z3.Or(stays(p), has(p))

    def leader2(p):
        return z3.If(stays(p), cur.leader(p), who(p))

    def leader_changed(p):
        return z3.Or(led2(p) != cur.led(p), z3.And(led2(p), cur.led(p), leader2(p) != cur.leader(p)))

    if params.leader_epoch_on_replica_removal:  # DEC-17, kafka: the record names the leader when a replica goes
        removed, _ = ctx.exists_b("replica-removed", lambda p, b: z3.And(cur.rep(p, b), z3.Not(rep2(p, b))))

        def leader_named(p):
            return z3.Or(leader_changed(p), removed(p))
    else:
        leader_named = leader_changed

    differ, _ = ctx.exists_b("lists-differ", lambda p, b: z3.Or(
        isr2(p, b) != cur.isr(p, b), rep2(p, b) != cur.rep(p, b), add2(p, b) != cur.add(p, b), rem2(p, b) != cur.rem(p, b)))
    reordered = ctx.exists_bb("replicas-reordered", lambda p, a, b: z3.And(
        rep2(p, a), rep2(p, b), cur.rep(p, a), cur.rep(p, b), rank(p, a) < rank(p, b), cur.rank(p, a) > cur.rank(p, b)))

    def changed(p):
        return z3.Or(differ(p), reordered(p), leader_named(p), reorder(p) if reorder is not None else False)

    def pick(new, old):
        return lambda p, *b: z3.If(touched(p), new(p, *b), old(p, *b))

    return cur.with_(
        isr=pick(isr2, cur.isr), rep=pick(rep2, cur.rep), rank=pick(rank, cur.rank), add=pick(add2, cur.add),
        rem=pick(rem2, cur.rem), fewer=pick(fewer2, cur.fewer), led=pick(led2, cur.led), leader=pick(leader2, cur.leader),
        lepoch=lambda p: cur.lepoch(p) + z3.If(z3.And(touched(p), leader_named(p)), 1, 0),
        pepoch=lambda p: cur.pepoch(p) + z3.If(z3.And(touched(p), changed(p)), 1, 0),
    )


def leave_isrs(ctx: Context, v: View, x, params: Profile, rule: str) -> View:
    """model.partitions.leave_isrs (DEC-8, DEC-14, DEC-20): ``x`` leaves every ISR it shares with
    another broker and every leadership; each lost leadership goes to the first eligible in-sync
    replica, or is given up. ``v`` is the image the changes are decided on; ``rule`` names the
    guard (the rule of the caller: PART-6, PART-8 or SHUT-2)."""
    others, _ = ctx.exists_b("isr-has-another", lambda p, b: z3.And(v.isr(p, b), b != x))
    return partition_change(
        ctx, v, v, lambda p: z3.And(v.live(p), v.isr(p, x)), params,
        isr=lambda p, b: z3.And(v.isr(p, b), z3.Or(z3.Not(others(p)), guard(rule, b != x))), leaving=x,
    )


def fence(ctx: Context, v: View, x, params: Profile) -> View:
    """model.partitions.fence_broker (PART-6, DEC-8): fenced, out of controlled shutdown, out of
    every ISR it shares with another broker, and every leadership it loses re-elected or given up."""
    fenced = v.with_(fenced=update(v.fenced, x, True), shut=update(v.shut, x, False) if enabled("SHUT-1") else v.shut)
    return leave_isrs(ctx, fenced, x, params, "PART-6")


def unfence(ctx: Context, v: View, x, params: Profile) -> View:
    """model.partitions.unfence_broker (PART-7, DEC-19): elections where it is in sync and nobody leads, in
    which the broker may be elected even if its registration says it is in controlled shutdown (DEC-22)."""
    unfenced = v.with_(fenced=update(v.fenced, x, False))
    return partition_change(ctx, unfenced, unfenced, lambda p: z3.And(v.live(p), z3.Not(v.led(p)), v.isr(p, x)), params,
                            joining=x)  # DEC-22: whatever its registration says of a controlled shutdown


def unregister(ctx: Context, v: View, x, params: Profile) -> View:
    """model.partitions.unregister_broker (PART-8, DEC-20): out of every ISR but as its sole member
    and out of every leadership, but still in the replica lists; then the lease goes (UNREG-3)."""
    gone = v.with_(reg=update(v.reg, x, False))
    after = leave_isrs(ctx, gone, x, params, "PART-8")
    return after.with_(lease=update(v.lease, x, False), shut=update(v.shut, x, False),
                       released=update(v.released, x, False))


def enter_controlled_shutdown(ctx: Context, v: View, x, params: Profile) -> View:
    """model.partitions.enter_controlled_shutdown (SHUT-2, DEC-14): ``v`` already shows ``x`` in
    controlled shutdown; it leaves its ISRs (but as a sole member) and its leaderships. In the kafka
    profile's record formats a record says so first (DEC-22), unless the registration already does:
    the registration says so until the broker registers again (the encoding does not count records)."""
    if kafka_records(params):
        v = v.with_(rshut=update(v.rshut, x, True))
    return leave_isrs(ctx, v, x, params, "SHUT-2")


def either(condition, then: View, otherwise: View) -> View:
    """The partitions of ``then`` where ``condition`` holds, else those of ``otherwise`` (the
    brokers' fields and the scalars are ``otherwise``'s)."""
    return otherwise.with_(**{f: (lambda a, b: lambda *args: z3.If(condition, a(*args), b(*args)))(
        getattr(then, f), getattr(otherwise, f)) for f in PART_FIELDS + PAIR_FIELDS})


def appended(ctx: Context, v: View) -> View:
    """Records were appended: the log end moves on by some count (the encoding does not count records)."""
    k = ctx.const("appended", z3.IntSort())
    ctx.axioms.append(k >= 0)
    return v.with_(log_end=v.log_end + k)


def lowest_acknowledged_offset(ctx: Context, v: View) -> z3.ArithRef:
    """model.heartbeat.lowest_acknowledged_offset (LAO-1, DEC-27)."""

    def active(b):
        return z3.And(v.reg(b), z3.Not(v.fenced(b)))

    some, w = ctx.exists_broker("lao-active", active)
    ctx.axioms.append(z3.ForAll([B], z3.Implies(z3.And(some, active(B)), v.offset(w) <= v.offset(B))))
    return z3.If(some, v.offset(w), v.committed)


# ---- the handlers ------------------------------------------------------------------------


def heartbeat(pre: View, s, params: Profile) -> Transition:
    """model.heartbeat.handle_broker_heartbeat and _transition (LEASE-2 to LEASE-13, SHUT-1 to SHUT-6)."""
    ctx = Context("heartbeat")
    x, epoch, offset = ctx.const("broker", Broker), ctx.const("epoch", z3.IntSort()), ctx.const("offset", z3.IntSort())
    want_fence, want_shut_down = ctx.const("want_fence", z3.BoolSort()), ctx.const("want_shut_down", z3.BoolSort())
    version_ok = ctx.const("version_ok", z3.BoolSort())
    params_ = dict(broker=x, epoch=epoch, offset=offset, want_fence=want_fence, want_shut_down=want_shut_down,
                   version_ok=version_ok)

    known = z3.And(version_ok, pre.reg(x), epoch == pre.epoch(x))  # RPC-2, LEASE-3, LEASE-4
    if params.heartbeat_offset == "next-offset":
        known = z3.And(known, offset >= 0)  # LEASE-5, kip-631 only (DEC-2)
    # LEASE-7; DEC-13: a lower offset than recorded is recorded as sent, like any other (LEASE-6)
    renewed = pre.with_(contact=update(pre.contact, x, pre.now) if enabled("LEASE-7") else pre.contact,
                        offset=update(pre.offset, x, offset))
    if scans(params):
        # DEC-25, kafka profile: every heartbeat of a supported version is recorded in Kafka's session
        # table under the broker id and epoch it names, whatever its outcome; an accepted one names the
        # current epoch, whose session the encoding keeps (a refused one names an epoch it does not)
        renewed = renewed.with_(sess=update(pre.sess, x, True), scontact=update(pre.scontact, x, pre.now))
    active = z3.Not(pre.fenced(x))
    in_shutdown = pre.shut(x)  # SHUT-1: sticky, whatever the flags
    caught_up = has_applied(offset, pre.roff(x), params)  # LEASE-9: its own RegisterBrokerRecord applied
    leads = ctx.exists_part("leads", lambda p: pre.leads(p, x))
    # SHUT-3, DEC-14: every active broker (unfenced, not in controlled shutdown) has applied the records
    # that began the shutdown, by its offset as recorded before this heartbeat
    behind, _ = ctx.exists_broker("behind", lambda b: z3.And(
        pre.reg(b), z3.Not(pre.fenced(b)), z3.Not(pre.shut(b)), z3.Not(has_applied(pre.offset(b), pre.soff(x), params))))
    shutting = renewed.with_(shut=update(renewed.shut, x, True))

    def released(post: View, ssd) -> View:
        """REG-4, DEC-6: a broker answered ShouldShutDown gives its id up; any other answer is contact
        that claims it."""
        return post.with_(released=update(post.released, x, ssd))

    def answered(name, guard, build, ssd) -> Branch:
        """An accepted heartbeat's branch, its view built in a context of its own (its axioms
        are needed only when the branch is taken)."""
        own = Context(f"heartbeat[{name}]")
        post = released(build(own), ssd)
        lao = lowest_acknowledged_offset(own, post if enabled("LAO-1") else pre)  # LAO-1: after the step
        return Branch(name, z3.And(known, guard), post, ssd, lao, tuple(own.axioms))

    def written(build):
        return lambda c: appended(c, build(c))

    def shutdown_begins(c):  # kafka: the records that begin the shutdown; let go once every active broker has them
        post = appended(c, enter_controlled_shutdown(c, shutting, x, params))
        return post.with_(soff=update(post.soff, x, post.log_end - 1))

    asks = z3.And(active, z3.Not(in_shutdown), z3.Not(want_fence), want_shut_down)
    shutdown: tuple[Branch, ...]  # one branch, or two when the grant waits for leadership to move
    if params.shutdown_grant == "when-leading-nothing":
        shutdown = (  # every leadership moved or given up, then fenced in the same batch
            answered("shutdown", asks,
                     written(lambda c: fence(c, enter_controlled_shutdown(c, shutting, x, params), x, params)),
                     z3.BoolVal(True)),
        )
    else:
        shutdown = (
            answered("shutdown, leads nothing", z3.And(asks, z3.Not(leads)), written(lambda c: fence(c, renewed, x, params)),
                     z3.BoolVal(True)),
            answered("shutdown begins", z3.And(asks, leads), shutdown_begins, z3.BoolVal(False)),
        )
    waiting = z3.Or(leads, behind)
    branches = (
        Branch("refused", z3.Not(known), pre, z3.BoolVal(False), None),
        answered("shutdown, waiting", z3.And(active, in_shutdown, waiting), written(lambda c: renewed),
                 z3.BoolVal(not enabled("SHUT-3"))),  # SHUT-3: not while it leads, nor before the others catch up
        answered("shutdown, let go", z3.And(active, in_shutdown, z3.Not(waiting)),
                 written(lambda c: fence(c, renewed, x, params)), z3.BoolVal(True)),
        answered("fence on request", z3.And(active, z3.Not(in_shutdown), want_fence),
                 written(lambda c: fence(c, renewed, x, params)), want_shut_down),
        *shutdown,
        answered("stays active", z3.And(active, z3.Not(in_shutdown), z3.Not(want_fence), z3.Not(want_shut_down)),
                 written(lambda c: renewed), z3.BoolVal(False)),
        # SHUT-4; DEC-14: the fencing batch again, as Kafka writes it
        answered("fenced, shutting down", z3.And(pre.fenced(x), want_shut_down),
                 written(lambda c: fence(c, renewed, x, params)), z3.BoolVal(True)),
        answered("unfence", z3.And(pre.fenced(x), z3.Not(want_shut_down), z3.Not(want_fence), caught_up),
                 written(lambda c: unfence(c, renewed, x, params)), z3.BoolVal(False)),
        answered("stays fenced", z3.And(pre.fenced(x), z3.Not(want_shut_down), z3.Or(want_fence, z3.Not(caught_up))),
                 written(lambda c: renewed), z3.BoolVal(False)),
    )
    return Transition("BrokerHeartbeat", params_, branches, tuple(ctx.axioms))


def registration(pre: View, s, params: Profile) -> Transition:
    """model.registration.handle_broker_registration (REG-1 to REG-9, LEASE-7)."""
    ctx = Context("registration")
    x, incarnation = ctx.const("broker", Broker), ctx.const("incarnation", z3.IntSort())
    well_formed, supported = ctx.const("well_formed", z3.BoolSort()), ctx.const("features_ok", z3.BoolSort())
    params_ = dict(broker=x, incarnation=incarnation, well_formed=well_formed, features_ok=supported)

    retry = z3.And(pre.reg(x), pre.inc(x) == incarnation)  # REG-3
    # REG-4, DEC-6: the old incarnation claims the id, fenced or not, until its lease lapses (DEC-7),
    # unless its lease is released (no contact with this controller since a failover, or, in the
    # kafka profile, since it registered)
    held = z3.And(pre.reg(x), z3.Not(retry), z3.Not(lapsed(pre, x, s, params)), z3.Not(pre.released(x)))
    before, own = pre, pre.log_end  # the state the registration replays on, and its record's offset
    if scans(params) and enabled("REG-9"):
        # REG-9, DEC-25, kafka profile: a lapsed lease waits for the scan, so the incarnation replaced
        # may still be unfenced: its fencing's partition changes come first (PART-6, without the
        # fence record), some number of records. (The model writes them in any profile; in kip-631
        # REG-4 leaves no unfenced incarnation to replace: INV-10 and LEMMA-1.)
        replaces_unfenced = z3.And(pre.reg(x), z3.Not(pre.fenced(x)))
        cleanup = ctx.const("cleanup", z3.IntSort())
        ctx.axioms += [cleanup >= 0, z3.Implies(z3.Not(replaces_unfenced), cleanup == 0)]
        before, own = either(replaces_unfenced, fence(ctx, pre, x, params), pre), pre.log_end + cleanup
    epoch = pre.log_end if enabled("REG-6") else pre.log_end - 1  # REG-6, DEC-4: where the batch begins
    epoch = epoch if enabled("REG-7") else z3.IntVal(0)  # REG-7: above every earlier epoch of the id
    registered = before.with_(
        reg=update(pre.reg, x, True), fenced=update(pre.fenced, x, True), epoch=update(pre.epoch, x, epoch),
        roff=update(pre.roff, x, own),  # LEASE-9: the record, after the cleanup
        inc=update(pre.inc, x, incarnation), rshut=update(pre.rshut, x, False), lease=update(pre.lease, x, True), contact=update(pre.contact, x, pre.now),
        offset=update(pre.offset, x, -1), shut=update(pre.shut, x, False),
        released=update(pre.released, x, z3.BoolVal(not params.registration_is_contact)),  # DEC-6
        soff=update(pre.soff, x, -1), log_end=own + 1,
    )
    if scans(params):
        # DEC-25: the session table is not touched; it may hold a session of the new epoch already (a
        # heartbeat may have named that epoch before), given with the event
        session, session_contact = ctx.const("session", z3.BoolSort()), ctx.const("session_contact", z3.IntSort())
        params_.update(session=session, session_contact=session_contact)
        registered = registered.with_(sess=update(pre.sess, x, session), scontact=update(pre.scontact, x, session_contact))
    # REG-3, DEC-6: a retry is contact in kip-631 (LEASE-7), not in kafka
    retried = pre.with_(contact=update(pre.contact, x, pre.now), released=update(pre.released, x, False)) \
        if params.registration_is_contact else pre
    # DEC-5: kip-631 changes nothing else; kafka checks the features again (REG-5) and amends the
    # registration with the same epoch, so that only the log grows: by Kafka's RegisterBrokerRecord,
    # which keeps Fenced and InControlledShutdown (DEC-22), one record (seed 000's replays as fenced,
    # REG-8, so an unfenced broker's amend would add an UnfenceBrokerRecord)
    amends = params.retry_registration == "amend"
    if amends:
        retried = retried.with_(log_end=pre.log_end + (1 if kafka_records(params) else z3.If(pre.fenced(x), 1, 2)),
                                roff=update(pre.roff, x, pre.log_end))  # LEASE-9: the amend's record, first in its batch
    retry_refused = z3.And(retry, z3.Not(supported)) if amends else z3.BoolVal(False)
    branches = (
        Branch("refused", z3.Or(z3.Not(well_formed), z3.And(z3.Not(retry), z3.Or(held, z3.Not(supported))),
                                retry_refused), pre),
        Branch("retry", z3.And(well_formed, retry, z3.Not(retry_refused)), retried),
        Branch("registered", z3.And(well_formed, z3.Not(retry), guard("REG-4", z3.Not(held)), supported), registered),
    )
    return Transition("BrokerRegistration", params_, branches, tuple(ctx.axioms))


def unregistration(pre: View, s, params: Profile) -> Transition:
    """model.registration.handle_unregister_broker (UNREG-1, UNREG-2): an unknown id changes nothing
    in either profile (only the error differs, DEC-35)."""
    ctx = Context("unregister")
    x = ctx.const("broker", Broker)
    branches = (
        Branch("not registered", z3.Not(pre.reg(x)), pre),
        Branch("unregistered", pre.reg(x), appended(ctx, unregister(ctx, pre, x, params))),
    )
    return Transition("UnregisterBroker", dict(broker=x), branches, tuple(ctx.axioms))


def alter_isr(pre: View, s, params: Profile) -> Transition:
    """model.alter_isr.handle_alter_isr (ISR-1 to ISR-11): each partition named once, decided on
    the state before the request."""
    ctx = Context("alter_isr")
    x, epoch = ctx.const("broker", Broker), ctx.const("epoch", z3.IntSort())
    named = ctx.fresh("named", Part, z3.BoolSort())  # named exactly once, with no member twice (ISR-11, ISR-7)
    leader_epoch = ctx.fresh("leader_epoch", Part, z3.IntSort())
    partition_epoch = ctx.fresh("partition_epoch", Part, z3.IntSort())
    new_isr = ctx.fresh("new_isr", Part, Broker, z3.BoolSort())
    reordered = ctx.fresh("isr_reordered", Part, z3.BoolSort())  # the new ISR's order differs from the old
    params_ = dict(broker=x, epoch=epoch, named=named, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                   new_isr=new_isr, isr_reordered=reordered)

    outside, _ = ctx.exists_b("outside-replicas", lambda p, b: z3.And(new_isr(p, b), z3.Not(pre.rep(p, b))))
    # ISR-8: unregistered, fenced, or (DEC-22, Kafka's records) registered as in controlled shutdown
    ineligible, _ = ctx.exists_b("ineligible", lambda p, b: z3.And(new_isr(p, b), z3.Or(
        z3.Not(pre.reg(b)), pre.fenced(b), pre.rshut(b))))

    def applies(p):
        return z3.And(
            named(p), pre.live(p), leader_epoch(p) == pre.lepoch(p), pre.leads(p, x),  # ISR-3, ISR-4, ISR-5
            partition_epoch(p) == pre.pepoch(p), new_isr(p, pre.leader(p)), guard("ISR-7", z3.Not(outside(p))),
            guard("ISR-8", z3.Not(ineligible(p))),
        )

    after = partition_change(ctx, pre, pre, applies, params, isr=new_isr, reorder=reordered)  # ISR-9, ISR-10
    current = z3.And(pre.reg(x), pre.epoch(x) == epoch)  # ISR-2
    branches = (
        Branch("stale broker epoch", z3.Not(current), pre),
        Branch("applied", current, appended(ctx, after)),
    )
    return Transition("AlterIsr", params_, branches, tuple(ctx.axioms))


def create_topics(pre: View, s, params: Profile) -> Transition:
    """model.topics.handle_create_topics (TOPIC-1 to TOPIC-6): the proposed partitions of topics
    that pass the name, id and assignment checks, each topic created whole or not at all
    (TOPIC-5: every partition needs an eligible replica; its ISR is its eligible replicas, its
    leader the first of them). A partition placed by replication factor (TOPIC-4, DEC-26) is on
    brokers the active controller does not know to be in controlled shutdown, at least one of them
    unfenced, the unfenced ones first, and on a fenced one only when every unfenced one already holds
    a replica; the registration's word on a controlled shutdown (DEC-22) does not count there, but
    does for the ISR (TOPIC-5: eligible, PART-3), which may then be empty."""
    ctx = Context("create_topics")
    proposed = ctx.fresh("proposed", Part, z3.BoolSort())
    group = ctx.fresh("topic", Part, z3.IntSort())
    replicas = ctx.fresh("replicas", Part, Broker, z3.BoolSort())
    rank = ctx.fresh("rank", Part, Broker, z3.IntSort())
    by_factor = ctx.fresh("by_factor", Part, z3.BoolSort())
    params_ = dict(proposed=proposed, topic=group, replicas=replicas, rank=rank, by_factor=by_factor)
    a = z3.Const("a", Broker)
    placed = ctx.fresh("placed-eligible", Part, Broker)

    def placed_by_factor(p):
        return z3.And(proposed(p), by_factor(p))

    ctx.axioms += [  # what the assignment checks guarantee (TOPIC-3, TOPIC-4): new, registered, no duplicates
        z3.ForAll([P], z3.Implies(proposed(P), z3.Not(pre.live(P)))),
        z3.ForAll([P, B], z3.Implies(z3.And(proposed(P), replicas(P, B)), pre.reg(B))),
        z3.ForAll([P, a, B], z3.Implies(z3.And(proposed(P), replicas(P, a), replicas(P, B), a != B), rank(P, a) != rank(P, B))),
        # DEC-26: placement by replication factor
        z3.ForAll([P, B], z3.Implies(z3.And(placed_by_factor(P), replicas(P, B)), z3.Not(pre.shut(B)))),
        z3.ForAll([P], z3.Implies(placed_by_factor(P), z3.And(replicas(P, placed(P)), pre.placeable(placed(P))))),
        z3.ForAll([P, a, B], z3.Implies(z3.And(placed_by_factor(P), replicas(P, a), pre.fenced(a), pre.placeable(B)),
                                        replicas(P, B))),
        z3.ForAll([P, a, B], z3.Implies(z3.And(placed_by_factor(P), replicas(P, a), replicas(P, B), pre.placeable(a),
                                               pre.fenced(B)), rank(P, a) < rank(P, B))),
    ]

    def in_sync(p, b):
        return z3.And(replicas(p, b), guard("TOPIC-5", pre.eligible(b)))

    has_isr, _ = ctx.exists_b("has-eligible", in_sync)
    refused, _ = ctx.exists_p("topic-refused", lambda p, q: z3.And(proposed(q), group(q) == group(p), z3.Not(has_isr(q))))
    has, first = ctx.first("first-in-sync", in_sync, rank)

    def created(p):
        return z3.And(proposed(p), z3.Not(refused(p)))

    def new(value, old):
        return lambda p, *b: z3.If(created(p), value(p, *b), old(p, *b))

    post = pre.with_(
        live=lambda p: z3.Or(pre.live(p), created(p)), rep=new(replicas, pre.rep), rank=new(rank, pre.rank),
        isr=new(in_sync, pre.isr), add=new(lambda p, b: False, pre.add), rem=new(lambda p, b: False, pre.rem),
        fewer=lambda p: z3.If(created(p), False, pre.fewer(p)),
        led=new(lambda p: True, pre.led), leader=new(first, pre.leader),
        lepoch=new(lambda p: 0, pre.lepoch), pepoch=new(lambda p: 0, pre.pepoch),
    )
    return Transition("CreateTopics", params_, (Branch("created", z3.BoolVal(True), appended(ctx, post)),), tuple(ctx.axioms))


def delete_topics(pre: View, s, params: Profile) -> Transition:
    """model.topics.handle_delete_topics (TOPIC-7, TOPIC-8): the partitions of the deleted topics go."""
    ctx = Context("delete_topics")
    deleted = ctx.fresh("deleted", Part, z3.BoolSort())
    ctx.axioms.append(z3.ForAll([P], z3.Implies(deleted(P), pre.live(P))))
    post = pre.with_(live=lambda p: z3.And(pre.live(p), z3.Not(deleted(p))))
    return Transition("DeleteTopics", dict(deleted=deleted), (Branch("deleted", z3.BoolVal(True), appended(ctx, post)),),
                      tuple(ctx.axioms))


def reassign(pre: View, s, params: Profile) -> Transition:
    """model.reassignment.handle_alter_partition_reassignments (REASSIGN-1 to REASSIGN-9): per
    partition named once, start a reassignment to a target or cancel one. The profile's
    ``reassignment_layout`` (DEC-18) puts the removing replicas before the target in their current
    order (kip-631) or after it in ascending broker id (kafka; the encoding has no broker ids, so that
    order is given with the event, ``removing_rank``, and the drift check pins it to the model's).
    Whether a reassignment started adds fewer replicas than it removes (``fewer``, a count, which the
    encoding cannot take of a set) is given with the event too, and kept with the partition for
    Kafka 4.3's completion (DEC-18)."""
    ctx = Context("reassign")
    start = ctx.fresh("start", Part, z3.BoolSort())
    cancel = ctx.fresh("cancel", Part, z3.BoolSort())
    target = ctx.fresh("target", Part, Broker, z3.BoolSort())
    trank = ctx.fresh("target_rank", Part, Broker, z3.IntSort())
    # ranks that put one part of the new list after the other (REASSIGN-4): the target after every
    # current replica (kip-631), or the removing replicas after the whole target (kafka)
    shift = ctx.fresh("shift", Part, z3.IntSort())
    fewer = ctx.fresh("fewer", Part, z3.BoolSort())
    params_ = dict(start=start, cancel=cancel, target=target, target_rank=trank, fewer=fewer)
    a = z3.Const("a", Broker)
    some_target, _ = ctx.exists_b("target-nonempty", target)
    target_first = params.reassignment_layout == "target-then-removing"
    if target_first:  # the removing replicas' order after the target: ascending broker id (DEC-18)
        rrank = ctx.fresh("removing_rank", Part, Broker, z3.IntSort())
        params_.update(removing_rank=rrank)
    ctx.axioms += [
        z3.ForAll([P], z3.Implies(z3.Or(start(P), cancel(P)), z3.And(pre.live(P), z3.Not(z3.And(start(P), cancel(P)))))),
        z3.ForAll([P], z3.Implies(start(P), some_target(P))),  # REASSIGN-3: non-empty, no duplicates
        z3.ForAll([P, a, B], z3.Implies(z3.And(start(P), target(P, a), target(P, B), a != B), trank(P, a) != trank(P, B))),
        z3.ForAll([P, B], z3.Implies(z3.And(start(P), target(P, B)), trank(P, B) >= 0)),
    ]
    if not target_first:
        ctx.axioms.append(z3.ForAll([P, B], z3.Implies(pre.rep(P, B), pre.rank(P, B) < shift(P))))
    else:  # the removing replicas (current replicas not in the target) in an order of their own, after the target
        ctx.axioms += [
            z3.ForAll([P, a, B], z3.Implies(z3.And(start(P), pre.rep(P, a), z3.Not(target(P, a)), pre.rep(P, B),
                                                   z3.Not(target(P, B)), a != B), rrank(P, a) != rrank(P, B))),
            z3.ForAll([P, a, B], z3.Implies(z3.And(start(P), target(P, a), pre.rep(P, B), z3.Not(target(P, B))),
                                            trank(P, a) < shift(P) + rrank(P, B))),
        ]
    unregistered, _ = ctx.exists_b("target-unregistered", lambda p, b: z3.And(target(p, b), z3.Not(pre.reg(b))))
    reassigning, _ = ctx.exists_b("reassigning", lambda p, b: z3.Or(pre.add(p, b), pre.rem(p, b)))
    keeps_isr, _ = ctx.exists_b("isr-without-adding", lambda p, b: z3.And(pre.isr(p, b), z3.Not(pre.add(p, b))))

    def removing(p, b):
        return z3.And(pre.rep(p, b), z3.Not(target(p, b)))

    def adding(p, b):
        return z3.And(target(p, b), z3.Not(pre.rep(p, b)))

    any_removing, _ = ctx.exists_b("any-removing", removing)
    any_adding, _ = ctx.exists_b("any-adding", adding)

    def starts(p):
        return z3.And(start(p), guard("REASSIGN-3", z3.Not(unregistered(p))))

    def reorders(p):
        return z3.And(starts(p), z3.Not(any_removing(p)), z3.Not(any_adding(p)))

    def cancels(p):
        return z3.And(cancel(p), reassigning(p), keeps_isr(p))  # REASSIGN-8

    def pick(on_reorder, on_start, on_cancel, otherwise):
        return lambda p, b: z3.If(reorders(p), on_reorder(p, b), z3.If(starts(p), on_start(p, b),
                                  z3.If(cancels(p), on_cancel(p, b), otherwise(p, b))))

    apart = (lambda p: shift(p)) if enabled("REASSIGN-4") else (lambda p: 0)

    def started_rank(p, b):
        if target_first:  # the target in its order, then the removing replicas in ascending broker id
            return z3.If(removing(p, b), apart(p) + rrank(p, b), trank(p, b))
        return z3.If(removing(p, b), pre.rank(p, b), apart(p) + trank(p, b))  # the removing ones, then the target

    no = lambda p, b: False  # noqa: E731
    after = partition_change(
        ctx, pre, pre, lambda p: z3.Or(starts(p), cancels(p)), params,
        rep=pick(target, lambda p, b: z3.Or(pre.rep(p, b), target(p, b)),
                 lambda p, b: z3.And(pre.rep(p, b), z3.Not(pre.add(p, b))), pre.rep),
        rank=lambda p, b: z3.If(reorders(p), trank(p, b), z3.If(starts(p), started_rank(p, b), pre.rank(p, b))),
        rem=pick(no, removing, no, pre.rem),
        add=pick(no, adding, no, pre.add),
        fewer=lambda p: z3.If(reorders(p), False, z3.If(starts(p), fewer(p), z3.If(cancels(p), False, pre.fewer(p)))),
        isr=lambda p, b: z3.If(cancels(p), z3.And(pre.isr(p, b), z3.Not(pre.add(p, b))), pre.isr(p, b)),
    )
    return Transition("AlterPartitionReassignments", params_, (Branch("applied", z3.BoolVal(True), appended(ctx, after)),),
                      tuple(ctx.axioms))


def list_reassignments(pre: View, s, params: Profile) -> Transition:
    """model.reassignment.handle_list_partition_reassignments: a read (LOG-8), nothing changes."""
    return Transition("ListPartitionReassignments", {}, (Branch("read", z3.BoolVal(True), pre),), ())


def tick_advance(pre: View, s, params: Profile) -> Transition:
    """model.controller._tick, first part: the clock moves on (LOG-15); leases lapse. Then, in kip-631,
    the lapsed leases are fenced one by one (:func:`tick_expire`, :func:`tick_done`); in kafka, one
    scan runs if it is due (:func:`tick_scan`). A tick whose time does not move ends here."""
    ctx = Context("tick")
    t = ctx.const("now", z3.IntSort())
    branches = (
        Branch("time does not go back", t <= pre.now, pre),
        Branch("advanced", t > pre.now, pre.with_(now=t)),
    )
    return Transition("Tick (clock)", dict(now=t), branches, (), within_tick=True, starts_tick=True)


def tick_expire(pre: View, s, params: Profile) -> Transition:
    """model.heartbeat.expire_lease: one lapsed lease fenced (LEASE-8, DEC-7), a step of the tick's
    loop (kip-631's ``every-lapsed-lease``, DEC-25)."""
    ctx = Context("expire")
    x = ctx.const("broker", Broker)
    expired = z3.And(pre.reg(x), z3.Not(pre.fenced(x)), lapsed(pre, x, s, params))
    return Transition("Tick (a lease lapses)", dict(broker=x),
                      (Branch("fenced", expired, appended(ctx, fence(ctx, pre, x, params))),),
                      tuple(ctx.axioms), within_tick=True)


def tick_done(pre: View, s, params: Profile) -> Transition:
    """model.controller._tick, end of the loop (kip-631's ``every-lapsed-lease``, DEC-25): no unfenced
    broker's lease has lapsed."""
    ctx = Context("tick_done")

    def expired(b):  # LEASE-8, DEC-7: at the deadline or just after it, as the profile says
        return z3.And(pre.reg(b), z3.Not(pre.fenced(b)), lapsed(pre, b, s, params, late=not enabled("LEASE-8")))

    any_lapsed, _ = ctx.exists_broker("lapsed", expired)
    return Transition("Tick (done)", {}, (Branch("no lease lapsed", z3.Not(any_lapsed), pre),), tuple(ctx.axioms),
                      within_tick=True, ends_tick=True)


def tick_scan(pre: View, s, params: Profile) -> Transition:
    """model.controller._scan and model.heartbeat.scan_sessions (LEASE-8, DEC-25, kafka's
    ``hash-map-scan``): once the clock has moved, the periodic scan runs if it is due, and removes the
    first lapsed session (DEC-7) in the order of Kafka's hash map. If the session is of its broker's
    current registration, the broker is fenced (PART-6), fenced already or not; a session of another
    epoch, or of an id not registered, goes with nothing written. The next scan is 10 ms later if it
    removed a session, else a session timeout / 8 later.

    The encoding keeps only each broker's session of its current epoch, not the hash map's order: the
    session removed is given with the event (``removes``, ``current``, ``broker``), and may be any
    lapsed session of a current registration, or some session the encoding does not keep (one it
    cannot tell lapsed or not). So the encoding allows every order of the map; the drift check pins
    these to the session the model removed."""
    ctx = Context("scan")
    removes, current = ctx.const("removes", z3.BoolSort()), ctx.const("current", z3.BoolSort())
    w = ctx.const("broker", Broker)

    def session_lapsed(b):
        return z3.And(pre.reg(b), pre.sess(b), lapsed_since(pre.scontact(b), pre.now, s, params))

    any_lapsed, _ = ctx.exists_broker("session-lapsed", session_lapsed)
    due = pre.now >= pre.next_scan
    fenced = fence(ctx, pre, w, params) if enabled("LEASE-8") else pre  # LEASE-8: the scan fences the broker
    fenced = appended(ctx, fenced).with_(sess=update(pre.sess, w, False), next_scan=pre.now + SCAN_AFTER_FINDING)
    branches = (
        Branch("not due", z3.Not(due), pre),
        Branch("nothing lapsed", z3.And(due, z3.Not(removes), z3.Not(any_lapsed)),
               pre.with_(next_scan=pre.now + scan_period(s))),
        Branch("another epoch's session goes", z3.And(due, removes, z3.Not(current)),
               pre.with_(next_scan=pre.now + SCAN_AFTER_FINDING)),
        Branch("fenced", z3.And(due, removes, current, session_lapsed(w)), fenced),
    )
    return Transition("Tick (scan)", dict(removes=removes, current=current, broker=w), branches, tuple(ctx.axioms),
                      within_tick=True, ends_tick=True)


def commit(pre: View, s, params: Profile) -> Transition:
    """model.log.commit (LOG-6): the committed offset moves forward, within the log; the
    in-memory state does not change."""
    ctx = Context("commit")
    c = ctx.const("committed", z3.IntSort())
    ctx.axioms += [c >= pre.committed, c <= pre.log_end]
    return Transition("Commit", dict(committed=c), (Branch("committed", z3.BoolVal(True), pre.with_(committed=c)),),
                      tuple(ctx.axioms))


def failover(pre: View, s, params: Profile, committed_image_ok: Callable[[View, Profile], z3.BoolRef]) -> Transition:
    """model.log.failover (LOG-10, LEASE-14): the in-memory state becomes the committed image,
    the log ends at the committed offset, and every registered broker gets a fresh lease, which a
    fenced broker holds released (DEC-6: the new controller has not heard from it). In the kafka
    profile (DEC-25) the session table starts anew, with a session at this time for each unfenced
    broker's epoch, and the first scan is a period away.
    ``committed_image_ok`` states what is known of the committed image (see inductive)."""
    image = state("failover.committed_image")
    post = pre.with_(
        reg=image.reg, fenced=image.fenced, epoch=image.epoch, inc=image.inc, rshut=image.rshut,
        live=image.live, led=image.led, leader=image.leader, lepoch=image.lepoch, pepoch=image.pepoch, fewer=image.fewer,
        rep=image.rep, rank=image.rank, isr=image.isr, add=image.add, rem=image.rem,
        lease=image.reg, contact=(lambda b: pre.now) if enabled("LEASE-14") else pre.contact, offset=lambda b: z3.IntVal(-1),
        shut=lambda b: z3.BoolVal(False), released=lambda b: z3.And(image.reg(b), image.fenced(b)),
        soff=lambda b: z3.IntVal(-1), log_end=pre.committed, roff=image.roff,
    )
    if scans(params):
        post = post.with_(sess=lambda b: z3.And(image.reg(b), z3.Not(image.fenced(b))), scontact=lambda b: pre.now,
                          next_scan=pre.now + scan_period(s))
    known = committed_image_ok(image.with_(log_end=pre.committed, now=pre.now, committed=pre.committed), params)
    return Transition("Failover", dict(committed_image=image), (Branch("rebuilt", known, post),), ())


def take_snapshot(pre: View, s, params: Profile) -> Transition:
    """model.log.take_snapshot (LOG-11): the log before the committed offset goes; the state stays."""
    return Transition("TakeSnapshot", {}, (Branch("taken", z3.BoolVal(True), pre),), ())
