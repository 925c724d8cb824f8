"""Every event of the model as a Z3 transition: the view after it, built from the view before.

Each builder mirrors one handler of model/ (named in its docstring) and returns a
:class:`Transition`: the event's parameters (Z3 constants and functions, which the drift check
pins to a concrete event) and its branches, one per outcome of the handler, each with the guard
that selects it and the view after it. The guards of a transition's branches are exclusive and
cover every case, as the handler's ``if`` chain does.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import z3

from .symbolic import Broker, Context, Part, View, state, update

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
    within_tick: bool = False  # a piece of a tick: INV-10 need not hold before or after (see inductive)


# ---- the partition change builder (model/partitions.py) ------------------------------------


def partition_change(ctx: Context, elig: View, cur: View, touched: Callable, *, isr=None, rep=None, rank=None,
                     rem=None, add=None, reorder=None) -> View:
    """model.partitions.partition_change, for every partition where ``touched`` holds: complete
    a reassignment when the new lists allow it (REASSIGN-6), keep or elect the leader (PART-3,
    PART-4), and bump the epochs as replaying the change record does (PART-5, DEC-17).
    ``elig`` is the view eligibility is judged on; ``cur`` holds the partitions before."""
    isr = cur.isr if isr is None else isr
    rep = cur.rep if rep is None else rep
    rank = cur.rank if rank is None else rank
    rem = cur.rem if rem is None else rem
    add = cur.add if add is None else add
    reassigning, _ = ctx.exists_b("reassigning", lambda p, b: z3.Or(add(p, b), rem(p, b)))
    lagging, _ = ctx.exists_b("adding-out-of-sync", lambda p, b: z3.And(add(p, b), z3.Not(isr(p, b))))
    meets, _ = ctx.exists_b("isr-meets-target", lambda p, b: z3.And(rep(p, b), z3.Not(rem(p, b)), isr(p, b)))

    def complete(p):
        return z3.And(touched(p), reassigning(p), z3.Not(lagging(p)), meets(p))

    def isr2(p, b):
        return z3.And(isr(p, b), z3.Not(z3.And(complete(p), rem(p, b))))

    def rep2(p, b):
        return z3.And(rep(p, b), z3.Not(z3.And(complete(p), rem(p, b))))

    def add2(p, b):
        return z3.And(add(p, b), z3.Not(complete(p)))

    def rem2(p, b):
        return z3.And(rem(p, b), z3.Not(complete(p)))

    def stays(p):
        leader = cur.leader(p)
        return z3.And(cur.led(p), guard("PART-3/in-isr", isr2(p, leader)), elig.reg(leader), z3.Not(elig.fenced(leader)))

    has, who = ctx.first("elected", lambda p, b: z3.And(rep2(p, b), isr2(p, b), elig.eligible(b)), rank)

    def led2(p):
        return z3.Or(stays(p), has(p))

    def leader2(p):
        return z3.If(stays(p), cur.leader(p), who(p))

    def leader_changed(p):
        return z3.Or(led2(p) != cur.led(p), z3.And(led2(p), cur.led(p), leader2(p) != cur.leader(p)))

    differ, _ = ctx.exists_b("lists-differ", lambda p, b: z3.Or(
        isr2(p, b) != cur.isr(p, b), rep2(p, b) != cur.rep(p, b), add2(p, b) != cur.add(p, b), rem2(p, b) != cur.rem(p, b)))
    reordered = ctx.exists_bb("replicas-reordered", lambda p, a, b: z3.And(
        rep2(p, a), rep2(p, b), cur.rep(p, a), cur.rep(p, b), rank(p, a) < rank(p, b), cur.rank(p, a) > cur.rank(p, b)))

    def changed(p):
        return z3.Or(differ(p), reordered(p), leader_changed(p), reorder(p) if reorder is not None else False)

    def pick(new, old):
        return lambda p, *b: z3.If(touched(p), new(p, *b), old(p, *b))

    return cur.with_(
        isr=pick(isr2, cur.isr), rep=pick(rep2, cur.rep), rank=pick(rank, cur.rank), add=pick(add2, cur.add),
        rem=pick(rem2, cur.rem), led=pick(led2, cur.led), leader=pick(leader2, cur.leader),
        lepoch=lambda p: cur.lepoch(p) + z3.If(z3.And(touched(p), leader_changed(p)), 1, 0),
        pepoch=lambda p: cur.pepoch(p) + z3.If(z3.And(touched(p), changed(p)), 1, 0),
    )


def fence(ctx: Context, v: View, x) -> View:
    """model.partitions.fence_broker (PART-6, DEC-8): fenced, out of controlled shutdown, out of
    every ISR it shares with another broker, and every leadership it loses re-elected."""
    fenced = v.with_(fenced=update(v.fenced, x, True), shut=update(v.shut, x, False) if enabled("SHUT-1") else v.shut)
    others, _ = ctx.exists_b("isr-has-another", lambda p, b: z3.And(v.isr(p, b), b != x))
    return partition_change(
        ctx, fenced, fenced, lambda p: z3.And(v.live(p), v.isr(p, x)),
        isr=lambda p, b: z3.And(v.isr(p, b), z3.Or(z3.Not(others(p)), guard("PART-6", b != x))),
    )


def unfence(ctx: Context, v: View, x) -> View:
    """model.partitions.unfence_broker (PART-7, DEC-19): elections where it is in sync and nobody leads."""
    unfenced = v.with_(fenced=update(v.fenced, x, False))
    return partition_change(ctx, unfenced, unfenced, lambda p: z3.And(v.live(p), z3.Not(v.led(p)), v.isr(p, x)))


def unregister(ctx: Context, v: View, x) -> View:
    """model.partitions.unregister_broker (PART-8, DEC-20), then the lease goes (UNREG-3)."""
    gone = v.with_(reg=update(v.reg, x, False))

    def without(f):
        return lambda p, b: z3.And(f(p, b), guard("PART-8", b != x))

    after = partition_change(
        ctx, gone, gone, lambda p: z3.And(v.live(p), v.names(p, x)),
        isr=without(v.isr), rep=without(v.rep), rem=without(v.rem), add=without(v.add),
    )
    return after.with_(lease=update(v.lease, x, False), shut=update(v.shut, x, False), granted=update(v.granted, x, False))


def move_leaderships(ctx: Context, v: View, x) -> View:
    """model.partitions.move_leaderships (SHUT-2, DEC-14): ``v`` already shows ``x`` in
    controlled shutdown; each leadership goes to the first eligible in-sync replica, if any."""
    has, who = ctx.first("successor", lambda p, b: z3.And(v.rep(p, b), v.isr(p, b), v.eligible(b)), v.rank)

    def moved(p):
        return z3.And(v.leads(p, x), has(p))

    return v.with_(
        leader=lambda p: z3.If(moved(p), who(p), v.leader(p)),
        lepoch=lambda p: v.lepoch(p) + z3.If(moved(p), 1, 0),
        pepoch=lambda p: v.pepoch(p) + z3.If(moved(p), 1, 0),
    )


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


def heartbeat(pre: View, s) -> Transition:
    """model.heartbeat.handle_broker_heartbeat and _transition (LEASE-2 to LEASE-13, SHUT-1 to SHUT-6)."""
    ctx = Context("heartbeat")
    x, epoch, offset = ctx.const("broker", Broker), ctx.const("epoch", z3.IntSort()), ctx.const("offset", z3.IntSort())
    want_fence, want_shut_down = ctx.const("want_fence", z3.BoolSort()), ctx.const("want_shut_down", z3.BoolSort())
    version_ok = ctx.const("version_ok", z3.BoolSort())
    params = dict(broker=x, epoch=epoch, offset=offset, want_fence=want_fence, want_shut_down=want_shut_down,
                  version_ok=version_ok)

    known = z3.And(version_ok, pre.reg(x), epoch == pre.epoch(x), offset >= 0)  # RPC-2, LEASE-3 to LEASE-5
    late = z3.And(known, offset < pre.offset(x))  # LEASE-6
    accepted = z3.And(known, offset >= pre.offset(x))
    renewed = pre.with_(contact=update(pre.contact, x, pre.now) if enabled("LEASE-7") else pre.contact,
                        offset=update(pre.offset, x, offset))  # LEASE-7
    fenced = pre.fenced(x)
    wants_shutdown = z3.Or(want_shut_down, pre.shut(x))  # SHUT-1: sticky
    caught_up = offset > pre.epoch(x)  # LEASE-9

    shutting = renewed.with_(shut=update(renewed.shut, x, True))
    moved = move_leaderships(ctx, shutting, x)
    still_leads = ctx.exists_part("still-leads", lambda p: moved.leads(p, x))

    def granted(post: View, ssd) -> View:
        return post.with_(granted=update(post.granted, x, ssd))

    def answered(name, guard, build, ssd) -> Branch:
        """An accepted heartbeat's branch, its view built in a context of its own (its axioms
        are needed only when the branch is taken)."""
        own = Context(f"heartbeat[{name}]")
        post = granted(appended(own, build(own)), ssd)
        lao = lowest_acknowledged_offset(own, post if enabled("LAO-1") else pre)  # LAO-1: after the step
        return Branch(name, z3.And(accepted, guard), post, ssd, lao, tuple(own.axioms))

    late_ctx = Context("heartbeat[late offset]")
    late_lao = lowest_acknowledged_offset(late_ctx, pre)
    active = z3.Not(fenced)
    branches = (
        Branch("refused", z3.Not(known), pre, z3.BoolVal(False), None),
        Branch("late offset", late, pre, z3.BoolVal(False), late_lao, tuple(late_ctx.axioms)),
        answered("fence on request", z3.And(active, want_fence), lambda c: fence(c, renewed, x), wants_shutdown),
        answered("shutdown, still leading", z3.And(active, z3.Not(want_fence), wants_shutdown, still_leads),
                 lambda c: moved, z3.BoolVal(not enabled("SHUT-3"))),  # SHUT-3: not while it still leads
        answered("shutdown, done", z3.And(active, z3.Not(want_fence), wants_shutdown, z3.Not(still_leads)),
                 lambda c: fence(c, moved, x), z3.BoolVal(True)),
        answered("stays active", z3.And(active, z3.Not(want_fence), z3.Not(wants_shutdown)),
                 lambda c: renewed, z3.BoolVal(False)),
        answered("fenced, shutting down", z3.And(fenced, want_shut_down), lambda c: renewed, z3.BoolVal(True)),
        answered("unfence", z3.And(fenced, z3.Not(want_shut_down), z3.Not(want_fence), caught_up),
                 lambda c: unfence(c, renewed, x), z3.BoolVal(False)),
        answered("stays fenced", z3.And(fenced, z3.Not(want_shut_down), z3.Or(want_fence, z3.Not(caught_up))),
                 lambda c: renewed, z3.BoolVal(False)),
    )
    return Transition("BrokerHeartbeat", params, branches, tuple(ctx.axioms))


def registration(pre: View, s) -> Transition:
    """model.registration.handle_broker_registration (REG-1 to REG-7, LEASE-7)."""
    ctx = Context("registration")
    x, incarnation = ctx.const("broker", Broker), ctx.const("incarnation", z3.IntSort())
    well_formed, supported = ctx.const("well_formed", z3.BoolSort()), ctx.const("features_ok", z3.BoolSort())
    params = dict(broker=x, incarnation=incarnation, well_formed=well_formed, features_ok=supported)

    retry = z3.And(pre.reg(x), pre.inc(x) == incarnation)  # REG-3
    given_up = z3.And(pre.granted(x), pre.fenced(x))
    held = z3.And(pre.reg(x), z3.Not(retry), pre.now < pre.lease_deadline(x, s), z3.Not(given_up))  # REG-4
    epoch = pre.log_end if enabled("REG-6") else pre.log_end - 1  # REG-6, DEC-4: the record's own offset
    epoch = epoch if enabled("REG-7") else z3.IntVal(0)  # REG-7: above every earlier epoch of the id
    registered = pre.with_(
        reg=update(pre.reg, x, True), fenced=update(pre.fenced, x, True), epoch=update(pre.epoch, x, epoch),
        inc=update(pre.inc, x, incarnation), lease=update(pre.lease, x, True), contact=update(pre.contact, x, pre.now),
        offset=update(pre.offset, x, -1), shut=update(pre.shut, x, False), granted=update(pre.granted, x, False),
        log_end=pre.log_end + 1,
    )
    branches = (
        Branch("refused", z3.Or(z3.Not(well_formed), z3.And(z3.Not(retry), z3.Or(held, z3.Not(supported)))), pre),
        Branch("retry", z3.And(well_formed, retry), pre.with_(contact=update(pre.contact, x, pre.now))),
        Branch("registered", z3.And(well_formed, z3.Not(retry), guard("REG-4", z3.Not(held)), supported), registered),
    )
    return Transition("BrokerRegistration", params, branches, tuple(ctx.axioms))


def unregistration(pre: View, s) -> Transition:
    """model.registration.handle_unregister_broker (UNREG-1, UNREG-2)."""
    ctx = Context("unregister")
    x = ctx.const("broker", Broker)
    branches = (
        Branch("not registered", z3.Not(pre.reg(x)), pre),
        Branch("unregistered", pre.reg(x), appended(ctx, unregister(ctx, pre, x))),
    )
    return Transition("UnregisterBroker", dict(broker=x), branches, tuple(ctx.axioms))


def alter_isr(pre: View, s) -> Transition:
    """model.alter_isr.handle_alter_isr (ISR-1 to ISR-11): each partition named once, decided on
    the state before the request."""
    ctx = Context("alter_isr")
    x, epoch = ctx.const("broker", Broker), ctx.const("epoch", z3.IntSort())
    named = ctx.fresh("named", Part, z3.BoolSort())  # named exactly once, with no member twice (ISR-11, ISR-7)
    leader_epoch = ctx.fresh("leader_epoch", Part, z3.IntSort())
    partition_epoch = ctx.fresh("partition_epoch", Part, z3.IntSort())
    new_isr = ctx.fresh("new_isr", Part, Broker, z3.BoolSort())
    reordered = ctx.fresh("isr_reordered", Part, z3.BoolSort())  # the new ISR's order differs from the old
    params = dict(broker=x, epoch=epoch, named=named, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                  new_isr=new_isr, isr_reordered=reordered)

    outside, _ = ctx.exists_b("outside-replicas", lambda p, b: z3.And(new_isr(p, b), z3.Not(pre.rep(p, b))))
    ineligible, _ = ctx.exists_b("ineligible", lambda p, b: z3.And(new_isr(p, b), z3.Or(z3.Not(pre.reg(b)), pre.fenced(b))))

    def applies(p):
        return z3.And(
            named(p), pre.live(p), leader_epoch(p) == pre.lepoch(p), pre.leads(p, x),  # ISR-3, ISR-4, ISR-5
            partition_epoch(p) == pre.pepoch(p), new_isr(p, pre.leader(p)), guard("ISR-7", z3.Not(outside(p))),
            guard("ISR-8", z3.Not(ineligible(p))),
        )

    after = partition_change(ctx, pre, pre, applies, isr=new_isr, reorder=reordered)  # ISR-9, ISR-10
    current = z3.And(pre.reg(x), pre.epoch(x) == epoch)  # ISR-2
    branches = (
        Branch("stale broker epoch", z3.Not(current), pre),
        Branch("applied", current, appended(ctx, after)),
    )
    return Transition("AlterIsr", params, branches, tuple(ctx.axioms))


def create_topics(pre: View, s) -> Transition:
    """model.topics.handle_create_topics (TOPIC-1 to TOPIC-6): the proposed partitions of topics
    that pass the name, id and assignment checks, each topic created whole or not at all
    (TOPIC-5: every partition needs an eligible replica)."""
    ctx = Context("create_topics")
    proposed = ctx.fresh("proposed", Part, z3.BoolSort())
    group = ctx.fresh("topic", Part, z3.IntSort())
    replicas = ctx.fresh("replicas", Part, Broker, z3.BoolSort())
    rank = ctx.fresh("rank", Part, Broker, z3.IntSort())
    params = dict(proposed=proposed, topic=group, replicas=replicas, rank=rank)
    a = z3.Const("a", Broker)
    ctx.axioms += [  # what the assignment checks guarantee (TOPIC-3, TOPIC-4): new, registered, no duplicates
        z3.ForAll([P], z3.Implies(proposed(P), z3.Not(pre.live(P)))),
        z3.ForAll([P, B], z3.Implies(z3.And(proposed(P), replicas(P, B)), pre.reg(B))),
        z3.ForAll([P, a, B], z3.Implies(z3.And(proposed(P), replicas(P, a), replicas(P, B), a != B), rank(P, a) != rank(P, B))),
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
        led=new(lambda p: True, pre.led), leader=new(first, pre.leader),
        lepoch=new(lambda p: 0, pre.lepoch), pepoch=new(lambda p: 0, pre.pepoch),
    )
    return Transition("CreateTopics", params, (Branch("created", z3.BoolVal(True), appended(ctx, post)),), tuple(ctx.axioms))


def delete_topics(pre: View, s) -> Transition:
    """model.topics.handle_delete_topics (TOPIC-7, TOPIC-8): the partitions of the deleted topics go."""
    ctx = Context("delete_topics")
    deleted = ctx.fresh("deleted", Part, z3.BoolSort())
    ctx.axioms.append(z3.ForAll([P], z3.Implies(deleted(P), pre.live(P))))
    post = pre.with_(live=lambda p: z3.And(pre.live(p), z3.Not(deleted(p))))
    return Transition("DeleteTopics", dict(deleted=deleted), (Branch("deleted", z3.BoolVal(True), appended(ctx, post)),),
                      tuple(ctx.axioms))


def reassign(pre: View, s) -> Transition:
    """model.reassignment.handle_alter_partition_reassignments (REASSIGN-1 to REASSIGN-9): per
    partition named once, start a reassignment to a target or cancel one."""
    ctx = Context("reassign")
    start = ctx.fresh("start", Part, z3.BoolSort())
    cancel = ctx.fresh("cancel", Part, z3.BoolSort())
    target = ctx.fresh("target", Part, Broker, z3.BoolSort())
    trank = ctx.fresh("target_rank", Part, Broker, z3.IntSort())
    above = ctx.fresh("above_every_rank", Part, z3.IntSort())  # the removing replicas come first (REASSIGN-4)
    params = dict(start=start, cancel=cancel, target=target, target_rank=trank)
    a = z3.Const("a", Broker)
    some_target, _ = ctx.exists_b("target-nonempty", target)
    ctx.axioms += [
        z3.ForAll([P], z3.Implies(z3.Or(start(P), cancel(P)), z3.And(pre.live(P), z3.Not(z3.And(start(P), cancel(P)))))),
        z3.ForAll([P], z3.Implies(start(P), some_target(P))),  # REASSIGN-3: non-empty, no duplicates
        z3.ForAll([P, a, B], z3.Implies(z3.And(start(P), target(P, a), target(P, B), a != B), trank(P, a) != trank(P, B))),
        z3.ForAll([P, B], z3.Implies(z3.And(start(P), target(P, B)), trank(P, B) >= 0)),
        z3.ForAll([P, B], z3.Implies(pre.rep(P, B), pre.rank(P, B) < above(P))),
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

    no = lambda p, b: False  # noqa: E731
    after = partition_change(
        ctx, pre, pre, lambda p: z3.Or(starts(p), cancels(p)),
        rep=pick(target, lambda p, b: z3.Or(pre.rep(p, b), target(p, b)),
                 lambda p, b: z3.And(pre.rep(p, b), z3.Not(pre.add(p, b))), pre.rep),
        rank=lambda p, b: z3.If(reorders(p), trank(p, b), z3.If(
            z3.And(starts(p), z3.Not(removing(p, b))), (above(p) if enabled("REASSIGN-4") else 0) + trank(p, b),
            pre.rank(p, b))),
        rem=pick(no, removing, no, pre.rem),
        add=pick(no, adding, no, pre.add),
        isr=lambda p, b: z3.If(cancels(p), z3.And(pre.isr(p, b), z3.Not(pre.add(p, b))), pre.isr(p, b)),
    )
    return Transition("AlterPartitionReassignments", params, (Branch("applied", z3.BoolVal(True), appended(ctx, after)),),
                      tuple(ctx.axioms))


def list_reassignments(pre: View, s) -> Transition:
    """model.reassignment.handle_list_partition_reassignments: a read (LOG-8), nothing changes."""
    return Transition("ListPartitionReassignments", {}, (Branch("read", z3.BoolVal(True), pre),), ())


def tick_advance(pre: View, s) -> Transition:
    """model.controller._tick, first part: the clock moves on (LOG-15); leases lapse."""
    ctx = Context("tick")
    t = ctx.const("now", z3.IntSort())
    branches = (
        Branch("time does not go back", t <= pre.now, pre),
        Branch("advanced", t > pre.now, pre.with_(now=t)),
    )
    return Transition("Tick (clock)", dict(now=t), branches, (), within_tick=True)


def tick_expire(pre: View, s) -> Transition:
    """model.heartbeat.expire_lease: one lapsed lease fenced (LEASE-8), a step of the tick's loop."""
    ctx = Context("expire")
    x = ctx.const("broker", Broker)
    lapsed = z3.And(pre.reg(x), z3.Not(pre.fenced(x)), pre.now >= pre.lease_deadline(x, s))
    return Transition("Tick (a lease lapses)", dict(broker=x), (Branch("fenced", lapsed, appended(ctx, fence(ctx, pre, x))),),
                      tuple(ctx.axioms), within_tick=True)


def tick_done(pre: View, s) -> Transition:
    """model.controller._tick, end of the loop: no unfenced broker's lease has lapsed."""
    ctx = Context("tick_done")
    def lapsed(b):  # LEASE-8: at the deadline exactly
        deadline = pre.lease_deadline(b, s)
        return z3.And(pre.reg(b), z3.Not(pre.fenced(b)), pre.now >= deadline if enabled("LEASE-8") else pre.now > deadline)

    any_lapsed, _ = ctx.exists_broker("lapsed", lapsed)
    return Transition("Tick (done)", {}, (Branch("no lease lapsed", z3.Not(any_lapsed), pre),), tuple(ctx.axioms),
                      within_tick=True)


def commit(pre: View, s) -> Transition:
    """model.log.commit (LOG-6): the committed offset moves forward, within the log; the
    in-memory state does not change."""
    ctx = Context("commit")
    c = ctx.const("committed", z3.IntSort())
    ctx.axioms += [c >= pre.committed, c <= pre.log_end]
    return Transition("Commit", dict(committed=c), (Branch("committed", z3.BoolVal(True), pre.with_(committed=c)),),
                      tuple(ctx.axioms))


def failover(pre: View, s, committed_image_ok: Callable[[View], z3.BoolRef]) -> Transition:
    """model.log.failover (LOG-10, LEASE-14): the in-memory state becomes the committed image,
    the log ends at the committed offset, and every registered broker gets a fresh lease.
    ``committed_image_ok`` states what is known of the committed image (see inductive)."""
    image = state("failover.committed_image")
    post = pre.with_(
        reg=image.reg, fenced=image.fenced, epoch=image.epoch, inc=image.inc,
        live=image.live, led=image.led, leader=image.leader, lepoch=image.lepoch, pepoch=image.pepoch,
        rep=image.rep, rank=image.rank, isr=image.isr, add=image.add, rem=image.rem,
        lease=image.reg, contact=(lambda b: pre.now) if enabled("LEASE-14") else pre.contact, offset=lambda b: z3.IntVal(-1),
        shut=lambda b: z3.BoolVal(False), granted=lambda b: z3.BoolVal(False), log_end=pre.committed,
    )
    known = committed_image_ok(image.with_(log_end=pre.committed, now=pre.now, committed=pre.committed))
    return Transition("Failover", dict(committed_image=image), (Branch("rebuilt", known, post),), ())


def take_snapshot(pre: View, s) -> Transition:
    """model.log.take_snapshot (LOG-11): the log before the committed offset goes; the state stays."""
    return Transition("TakeSnapshot", {}, (Branch("taken", z3.BoolVal(True), pre),), ())
