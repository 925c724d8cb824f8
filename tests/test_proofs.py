"""The Z3 proofs of the model's invariants (proofs.inductive), the drift check that ties the
encoding to the model (proofs.drift), the guard-removal check (proofs.guards), counterexamples
(proofs.counterexample); ``kraftspec prove`` in tests/test_prove_command.py."""

from uuid import UUID

import attrs
import pytest
import z3

from kraftspec.model.partitions import fence_broker
from kraftspec.model.records import FenceBrokerRecord
from kraftspec.model.state import replace
from kraftspec.proofs import counterexample, drift, guards, inductive, symbolic
from kraftspec.proofs import transitions as T
from kraftspec.proofs.obligations import ALL_PROFILES, FAILED, PROVED
from kraftspec.proofs.symbolic import update
from kraftspec.spec import rules
from kraftspec.spec.profiles import profile, profile_names


@pytest.fixture(scope="module")
def obligations():
    return inductive.obligations()


def test_every_invariant_of_the_spec_is_proved_or_says_why_not(obligations):
    invariants = {r for r in rules() if r.startswith("INV-")}
    assert {o.subject for o in obligations if o.subject.startswith("INV-")} == invariants
    not_encoded = {o.subject for o in obligations if o.result == "not encoded"}
    assert not_encoded == set(inductive.NOT_ENCODED) and all(inductive.NOT_ENCODED[i] for i in not_encoded)
    failed = [o for o in obligations if o.result not in (PROVED, "not encoded")]
    assert not failed, failed


def transitions_of(name: str) -> set[str]:
    """The transitions of profile ``name``: the tick's pieces are its own (DEC-25)."""
    return set(inductive.builders(profile(name)))


def proved_in(obligations, profile: str, subject: str) -> set[str]:
    """The transitions (and "init") for which ``subject`` is proved in ``profile``: for it alone, or
    once for every profile."""
    return {o.transition for o in obligations if o.subject == subject and o.proved and o.profile in (profile, ALL_PROFILES)}


@pytest.mark.parametrize("profile", profile_names())
def test_each_state_invariant_is_proved_for_init_and_every_transition_in_each_profile(obligations, profile):
    transitions = {o.transition for o in obligations if o.subject == "non-vacuous" and o.profile == profile}
    # the tick: the clock, then kip-631's loop over the lapsed leases or kafka's scan (DEC-25)
    ticks = {"kip-631": {"Tick (a lease lapses)", "Tick (done)"}, "kafka": {"Tick (scan)"}}[profile]
    assert transitions == transitions_of(profile) and len(transitions) == 12 + len(ticks)
    assert ticks <= transitions and "Tick (clock)" in transitions
    for inv_id in inductive.CLAUSES:  # the spec's invariants and the proofs' lemmas
        assert proved_in(obligations, profile, inv_id) == transitions | {"init"}, inv_id
    # the step and reply invariants: INV-4 everywhere, INV-11 and INV-12 on heartbeats
    assert proved_in(obligations, profile, "INV-4") == transitions
    assert {o.transition for o in obligations if o.subject in ("INV-11", "INV-12")} == {"BrokerHeartbeat"}
    assert proved_in(obligations, profile, "INV-11") == proved_in(obligations, profile, "INV-12") == {"BrokerHeartbeat"}


def test_an_obligation_is_proved_once_for_all_profiles_only_where_it_is_the_same_in_each(obligations):
    """Transitions that read no profile parameter, and claims that do not either, are proved once;
    the layout (INV-17) and INV-10 are proved per profile: its second clause is about time in kip-631
    and about sessions in kafka (DEC-25), and even the tick's clock, after which kip-631 claims only
    its clause on leases, claims all of it in kafka, where it holds between the tick's pieces."""
    shared = {(o.subject, o.transition) for o in obligations if o.profile == ALL_PROFILES and o.proved}
    assert ("INV-1", "Commit") in shared and ("INV-3", "init") in shared and ("INV-3", "Tick (clock)") in shared
    assert {(subject, transition) for subject, transition in shared if subject in ("INV-10", "INV-17")} == set()
    for name in ("BrokerHeartbeat", "BrokerRegistration", "UnregisterBroker", "AlterIsr",
                 "AlterPartitionReassignments", "Failover", "Tick (a lease lapses)", "Tick (done)", "Tick (scan)"):
        assert not any(transition == name for _, transition in shared), name  # they read the profile
    for o in obligations:  # each (subject, transition) once for all, or once per profile that has the transition
        if o.group == "invariant" and o.subject != "non-vacuous" and o.result != "not encoded":
            mine = [p.profile for p in obligations if (p.subject, p.transition) == (o.subject, o.transition)]
            having = sorted(p for p in profile_names() if o.transition == "init" or o.transition in transitions_of(p))
            assert sorted(mine) in ([ALL_PROFILES], having), (o.subject, o.transition, mine)


def test_the_profiles_encodings_differ_where_the_model_reads_a_parameter():
    pre, s = symbolic.state("pre"), inductive.session_timeout()
    for name, build in inductive.BUILDERS.items():
        having = [p for p in profile_names() if name in transitions_of(p)]
        if len(having) < len(profile_names()):  # DEC-25: each profile's way of finding lapsed leases
            assert name in ("Tick (a lease lapses)", "Tick (done)", "Tick (scan)") and len(having) == 1, name
            continue
        same = inductive.same_transition([build(pre, s, profile(p)) for p in having])
        assert same == (name in ("CreateTopics", "DeleteTopics", "ListPartitionReassignments", "Tick (clock)",
                                 "Commit", "TakeSnapshot")), name


def test_no_proof_is_vacuous_every_branch_can_be_taken(obligations):
    checks = [o for o in obligations if o.subject == "non-vacuous"]
    assert len(checks) == sum(len(transitions_of(p)) for p in profile_names())
    assert all(o.proved for o in checks), [o for o in checks if not o.proved]


def test_a_branch_that_cannot_be_taken_is_reported():
    def dead(transition):
        branches = tuple(b if b.name != "registered" else T.Branch(b.name, z3.BoolVal(False), b.post)
                         for b in transition.branches)
        return T.Transition(transition.name, transition.params, branches, transition.axioms)

    found = inductive.obligations(("INV-3",), only=("BrokerRegistration",), mutate=dead)
    checks = [o for o in found if o.subject == "non-vacuous"]
    assert {o.profile for o in checks} == set(profile_names())
    assert all(check.result == FAILED and "registered" in check.detail for check in checks)


@pytest.mark.parametrize("profile", profile_names())
def test_the_strengthening_each_invariant_needs_comes_from_the_spec_itself_and_one_lemma(profile):
    needs = inductive.dependencies(profile_name=profile)
    assert needs["INV-1"] == [] and needs["INV-10"] == [] and needs["LEMMA-1"] == []
    assert ("BrokerHeartbeat", "fence on request", ["INV-1"]) in needs["INV-3"]  # fencing touches its ISRs
    assert needs["INV-5"] == [("UnregisterBroker", "unregistered", ["INV-1"])]  # so does unregistering
    if profile == "kip-631":
        # REG-4 lets a new incarnation in once the old lease lapsed or is released: it relies on the
        # lease (INV-10) and on only a fenced broker's lease being released (LEMMA-1), neither enough alone
        assert ("BrokerRegistration", "registered", ["INV-10 and LEMMA-1"]) in needs["INV-3"]
        assert needs["INV-9"] == [("BrokerRegistration", "registered", ["INV-10 and LEMMA-1"])]
    else:
        # DEC-25: a lapsed lease may leave its broker unfenced until a scan, so a new incarnation may
        # replace an unfenced one; REG-9 takes that one out of its ISRs and leaderships first, which,
        # like every fencing, re-elects only where it is in the ISR (INV-1); the scan fences likewise
        assert ("BrokerRegistration", "registered", ["INV-1"]) in needs["INV-3"]
        assert ("Tick (scan)", "fenced", ["INV-1"]) in needs["INV-3"]
        assert needs["INV-9"] == []


@pytest.mark.parametrize(("removal", "profile"), guards.cases(), ids=lambda c: c if isinstance(c, str) else c.guard)
def test_removing_a_guard_makes_its_invariant_fail_with_a_counterexample(removal, profile):
    obligation = guards.check(removal, profile=profile)
    assert obligation.result == FAILED, (removal, obligation)
    assert obligation.profile == profile
    detail = obligation.detail
    assert detail.startswith(f"{removal.breaks} fails after {removal.transition}") and f"in profile {profile}" in detail
    assert "clock " in detail  # the concrete state
    if removal.transition not in ("CreateTopics", "AlterPartitionReassignments"):
        # replayed in the (unbroken) model, which has the guard: the encoding is what lacks it
        assert "\ndrift: the model keeps" in detail, detail
    assert not T.DISABLED  # the guard is back


def test_in_kafka_inv_3_rests_on_the_cleanup_of_reg_9_not_on_reg_4():
    """DEC-25: in kafka a lapsed lease can leave its broker unfenced until a scan, and a new incarnation
    may then replace it; REG-9 takes the old one out of its ISRs and leaderships first. So without
    REG-4 INV-3 still holds there (REG-4's removal is checked in kip-631 only), and it fails only
    once REG-9's cleanup is gone too (REG-9's removal is checked in kafka)."""
    [reg_4] = [r for r in guards.REMOVALS if r.guard == "REG-4"]
    [reg_9] = [r for r in guards.REMOVALS if r.guard == "REG-9"]
    assert reg_4.profiles == ("kip-631",) and reg_9.profiles == ("kafka",)
    assert guards.check(reg_4, explain=False, profile="kafka").result == PROVED
    with guards.removed("REG-9"):
        assert guards.check(reg_4, explain=False, profile="kafka").result == FAILED
    assert not T.DISABLED


def test_a_counterexample_the_model_also_fails_is_reported_reachable_or_as_a_cti(monkeypatch, tmp_path):
    """With the model itself broken (fencing leaves the broker in every ISR), the counterexample of
    the encoding without PART-6's guard is replayed, fails in the model too, and a bounded search
    finds a sequence of events that gets there: a trace for the corpus. With no room to search,
    the same state is reported as a counterexample to induction."""

    def sloppy_fence(image, leases, broker_id, params):
        record = FenceBrokerRecord(broker_id, image.brokers[broker_id].epoch)
        return [record], {**leases, broker_id: replace(leases[broker_id], in_controlled_shutdown=False)}

    monkeypatch.setattr("kraftspec.model.heartbeat.fence_broker", sloppy_fence)
    monkeypatch.setattr(counterexample, "TRACES_TO", tmp_path)
    [removal] = [r for r in guards.REMOVALS if r.guard == "PART-6" and r.applies("kip-631")]
    detail = guards.check(removal).detail
    assert "\nreachable: the model breaks INV-9" in detail and "trace written to" in detail
    [written] = list(tmp_path.glob("*.jsonl"))
    assert written.name in detail

    monkeypatch.setattr(counterexample, "reachable", lambda *args, **kwargs: None)
    assert "\ncounterexample to induction: the model breaks INV-9" in guards.check(removal).detail
    monkeypatch.setattr("kraftspec.model.heartbeat.fence_broker", fence_broker)


def test_the_encodings_known_gaps_still_part_from_the_model():
    """Each trace drift.KNOWN_GAPS leaves out still has a step where the encoding and the model part;
    once the encoding is fixed, this fails, and the trace goes back into the check."""
    import itertools

    from kraftspec.conformance.mutation import CORPUS

    for name in drift.KNOWN_GAPS:
        assert (CORPUS / name).exists(), name
        steps = drift.corpus_samples(only=name)
        gap = list(itertools.filterfalse(lambda s: s is None, (
            drift.check(before, event, result) or None for before, event, result in steps)))
        assert gap, f"{name} now agrees with the encoding: remove it from drift.KNOWN_GAPS"


@pytest.mark.parametrize("profile", profile_names())
def test_partitions_of_topic_ids_that_share_a_prefix_are_apart_in_the_world(profile):
    """The five sweep witnesses once in KNOWN_GAPS parted because their topic ids (0...01, 0...02)
    share their first six hex digits, which named the world's partition constants: two partitions
    were one constant, and no branch could hold. Two such topics created in one request agree now."""
    from kraftspec.model.controller import step
    from kraftspec.model.messages import CreatableTopic, CreateTopicsRequest, ReplicaAssignment

    keys = [(UUID(int=1), 0), (UUID(int=2), 0), (UUID(int=2), 1)]
    world = drift.World({1}, keys)
    assert len({str(c) for c in world.partitions.values()}) == 3
    assert z3.Solver().check(*world.axioms) == z3.sat
    state = next(before for before, _, _ in drift.scripted_samples(profile)
                 if before.image.brokers.get(2) and not before.image.brokers[2].fenced)
    request = CreateTopicsRequest(tuple(CreatableTopic(name, UUID(int=n), assignments=(ReplicaAssignment(0, (2,)),))
                                        for name, n in (("x", 101), ("y", 102))))
    result = step(state, request)
    assert {t.name for t in result.state.image.topics.values()} >= {"x", "y"}
    assert drift.check(state, request, result) == []


@pytest.mark.parametrize("profile", profile_names())
def test_a_topic_refused_for_want_of_an_eligible_replica_leaves_its_id_to_a_later_topic(profile):
    """TOPIC-5 refuses topic 'a' (its only replica is fenced), so 'b' with the same id is created:
    the drift check's proposals must follow the model there."""
    from kraftspec.model.controller import step
    from kraftspec.model.messages import CreatableTopic, CreateTopicsRequest, ReplicaAssignment

    state = next(before for before, _, _ in drift.scripted_samples(profile)
                 if before.image.brokers.get(1) and before.image.brokers[1].fenced
                 and before.image.brokers.get(2) and not before.image.brokers[2].fenced)
    request = CreateTopicsRequest((CreatableTopic("a", UUID(int=77), assignments=(ReplicaAssignment(0, (1,)),)),
                                   CreatableTopic("b", UUID(int=77), assignments=(ReplicaAssignment(0, (2,)),))))
    result = step(state, request)
    assert result.state.image.topics[UUID(int=77)].name == "b"
    assert drift.check(state, request, result) == []


@pytest.mark.parametrize("profile", profile_names())
def test_the_encoding_gives_the_models_successors_on_the_corpus_scripts_and_random_walks(profile):
    report = drift.run(300, seed=7, profile=profile)
    assert report.passed, "\n".join(map(str, report.mismatches[:5]))
    corpus_steps = sum(1 for _ in drift.corpus_samples(profile=profile))
    scripted = sum(1 for _ in drift.scripted_samples(profile))
    assert report.checked == corpus_steps + scripted + 300 and report.profile == profile
    assert {"AlterIsrRequest", "AlterPartitionReassignmentsRequest", "CreateTopicsRequest", "DeleteTopicsRequest",
            "UnregisterBrokerRequest", "Failover", "Tick", "Commit", "BrokerHeartbeatRequest",
            "BrokerRegistrationRequest", "TakeSnapshot", "ListPartitionReassignmentsRequest"} <= set(report.kinds)
    assert corpus_steps > 1000  # each profile's traces
    # in kip-631 the heartbeat that begins a controlled shutdown ends it: no heartbeat finds it begun
    assert report.untaken() == UNREACHABLE[profile]


UNREACHABLE = {"kip-631": [("BrokerHeartbeat", "shutdown, waiting"), ("BrokerHeartbeat", "shutdown, let go")],
               "kafka": []}
"""The branches of each profile's encoding that the model never takes."""


@pytest.mark.parametrize("profile", profile_names())
def test_the_scripted_run_takes_every_branch_of_the_profile_the_model_can_take(profile):
    """Kafka walks seldom let a broker in controlled shutdown go: the scripted run takes every branch
    by itself, whatever the corpus holds (in kip-631, but a fenced broker asking to shut down, which
    the corpus has), and agrees with the encoding."""
    from collections import Counter

    from kraftspec.model.invariants import violations

    branches: Counter = Counter()
    steps = list(drift.scripted_samples(profile))
    assert {s.config.profile for s, _, _ in steps} == {profile}
    for before, event, result in steps:
        assert not violations(before, event, result), event
        assert not drift.check(before, event, result, branches), event
    report = drift.DriftReport(len(steps), (), {}, 0.0, dict(branches), profile)
    extra = [("BrokerHeartbeat", "fenced, shutting down")] if profile == "kip-631" else []
    assert report.untaken() == UNREACHABLE[profile] + extra


def test_the_kafka_scan_may_remove_any_lapsed_session_as_the_hash_maps_order_is_not_encoded():
    """DEC-25: the model's scan fences the broker of the first lapsed session in Kafka's hash map
    order; the encoding lets it fence the broker of any lapsed session (an over-approximation, which
    the drift check shows holds the model's choice). The scripted run has a tick at which several
    leases lapsed and the scan fenced one of them."""
    from kraftspec.model.events import Tick

    [(before, event, result)] = [
        (b, e, r) for b, e, r in drift.scripted_samples("kafka")
        if isinstance(e, Tick) and r.batches and sum(not reg.fenced for reg in r.state.image.brokers.values()) >= 2]
    advanced = before.evolve(now_ms=event.now_ms)
    lapsed = sorted(s.broker_id for s in advanced.sessions.in_order()
                    if s.last_contact_ms + advanced.config.session_timeout_ms < advanced.now_ms)
    fenced = [b for b, reg in result.state.image.brokers.items() if reg.fenced and not before.image.brokers[b].fenced]
    assert len(lapsed) >= 3 and len(fenced) == 1 and fenced[0] in lapsed
    world = drift.World(set(advanced.image.brokers), set(advanced.image.partitions))
    scan = drift.built(T.tick_scan, advanced.config.params)
    [branch] = [b for b in scan.branches if b.name == "fenced"]
    solver = z3.Solver()
    solver.add(inductive.session_timeout() == advanced.config.session_timeout_ms, *world.axioms,
               *map(world.ground, scan.axioms), *drift.state_facts(world, symbolic.state("pre"), advanced))
    for b in lapsed:  # any of them, not only the model's
        pinned = [scan.params["removes"], scan.params["current"], scan.params["broker"] == world.brokers[b]]
        assert solver.check(branch.guard, *pinned) == z3.sat, b


def test_the_kafka_scripted_run_replaces_an_unfenced_broker_and_amends_an_unfenced_ones_registration():
    """The steps no corpus trace or walk of the kafka profile took when the encoding followed DEC-22
    and DEC-25: a new incarnation replacing an unfenced broker whose lease lapsed (REG-9: the
    fencing's partition changes first: the new epoch is where the batch begins, and the record the
    broker must apply to be caught up, LEASE-9, is past them), a retry of an unfenced
    broker's registration (one RegisterBrokerRecord, DEC-22), and a registration whose epoch a
    refused heartbeat already named (its session exists). The drift check checks each."""
    from kraftspec.model.messages import BrokerRegistrationRequest

    seen = set()
    for before, event, result in drift.scripted_samples("kafka"):
        if not isinstance(event, BrokerRegistrationRequest):
            continue
        old, new = before.image.brokers.get(event.broker_id), result.state.image.brokers.get(event.broker_id)
        if old is not None and not old.fenced and new.incarnation_id != old.incarnation_id:
            assert new.epoch == before.log_end_offset and len(result.batches[0].records) > 1  # partition changes first
            assert result.state.registration_offset(event.broker_id) == result.state.log_end_offset - 1  # the record last
            seen.add("replaces an unfenced broker")
        if old is not None and not old.fenced and new.incarnation_id == old.incarnation_id == event.incarnation_id:
            assert result.state.log_end_offset == before.log_end_offset + 1
            assert result.state.registration_offset(event.broker_id) == before.log_end_offset > new.epoch  # LEASE-9
            seen.add("amends an unfenced broker")
        if (old is None or old.epoch != new.epoch) and result.state.sessions.get(event.broker_id, new.epoch):
            seen.add("its epoch has a session")
    assert seen == {"replaces an unfenced broker", "amends an unfenced broker", "its epoch has a session"}


def test_the_drift_check_finds_an_encoding_that_parts_from_the_model(monkeypatch):
    def fence_keeps_the_broker(ctx, v, x, params):  # the encoding forgets to take a fenced broker out of ISRs
        fenced = v.with_(fenced=update(v.fenced, x, True), shut=update(v.shut, x, False))
        return T.partition_change(ctx, fenced, fenced, lambda p: z3.And(v.live(p), v.isr(p, x)), params)

    monkeypatch.setattr(T, "fence", fence_keeps_the_broker)
    monkeypatch.setattr(drift, "_BUILT", {})
    mismatch = next(m for sample in drift.corpus_samples() for m in drift.check(*sample))
    assert mismatch.check == "admits"
    assert "ISR" in mismatch.detail or "partition epoch" in mismatch.detail


def _kafka_4_4_steps():
    """A kafka run through what the encoding follows of Kafka 4.4 (e20c9a5): a reassignment whose
    removing replicas are listed in ascending broker id, not their current order; one that adds fewer
    than it removes, which an ISR holding the adding replica does not complete while a replica of the
    target is out of it (Kafka 4.3's completion); a controlled shutdown whose registration record
    (DEC-22) makes its broker ineligible (ISR-8) after it is let go and unfenced again, and that
    unfencing electing it where it is the sole ISR member (PART-7)."""
    from kraftspec.model.controller import step
    from kraftspec.model.events import Commit
    from kraftspec.model.log import initial_state
    from kraftspec.model.messages import (
        AlterIsrPartition,
        AlterIsrRequest,
        AlterIsrTopic,
        AlterPartitionReassignmentsRequest,
        BrokerHeartbeatRequest,
        BrokerRegistrationRequest,
        CreatableTopic,
        CreateTopicsRequest,
        Feature,
        ReassignablePartition,
        ReassignableTopic,
        ReplicaAssignment,
    )
    from kraftspec.model.state import Config

    config = Config.for_profile("kafka")
    current = initial_state(config)
    features = tuple(Feature(f.name, f.min_level, f.max_level) for f in config.finalized_features)

    def heartbeat(b, want_shut_down=False):
        return BrokerHeartbeatRequest(b, current.image.brokers[b].epoch, current.committed_offset - 1, False,
                                      want_shut_down)

    def partition(name):
        return current.image.partitions[current.image.topic_named(name).topic_id, 0]

    def alter_isr(name, isr):
        p = partition(name)
        entry = AlterIsrPartition(0, p.leader_epoch, isr, p.partition_epoch)
        return AlterIsrRequest(p.leader, current.image.brokers[p.leader].epoch, (AlterIsrTopic(p.topic_id, (entry,)),))

    def topic(name, n, replicas):
        return CreateTopicsRequest((CreatableTopic(name, UUID(int=n), assignments=(ReplicaAssignment(0, replicas),)),))

    script = [
        *[lambda b=b: BrokerRegistrationRequest(b, config.cluster_id, UUID(int=b), features=features) for b in range(1, 6)],
        lambda: Commit(current.log_end_offset), *[lambda b=b: heartbeat(b) for b in range(1, 6)],
        lambda: Commit(current.log_end_offset),
        lambda: topic("r", 11, (4, 3, 1, 2)), lambda: topic("s", 12, (5,)), lambda: topic("u", 13, (1, 5)),
        lambda: Commit(current.log_end_offset),
        lambda: AlterPartitionReassignmentsRequest((ReassignableTopic("r", (ReassignablePartition(0, (1, 2, 5)),)),)),
        lambda: alter_isr("r", (4, 3, 1, 5)),  # 5 in sync, but 2 of the target is not: not complete
        lambda: alter_isr("r", (4, 3, 1, 5, 2)),  # the whole target in sync: complete
        lambda: alter_isr("u", (1,)),
        lambda: heartbeat(5, want_shut_down=True),  # leads 's': the shutdown begins, and its record
        lambda: Commit(current.log_end_offset), *[lambda b=b: heartbeat(b) for b in range(1, 5)],
        lambda: heartbeat(5),  # let go: fenced
        lambda: Commit(current.log_end_offset),
        lambda: heartbeat(5),  # unfenced, and elected in 's' whatever its registration says
        lambda: alter_isr("u", (1, 5)),  # ISR-8: its registration says it is in controlled shutdown
    ]
    steps = []
    for next_event in script:
        event = next_event()
        result = step(current, event)
        steps.append((current, event, result))
        current = result.state
    return steps


def test_the_kafka_encoding_follows_kafka_4_4s_registrations_and_reassignment_lists():
    from kraftspec.model.messages import AlterIsrRequest, AlterPartitionReassignmentsRequest, BrokerHeartbeatRequest

    steps = _kafka_4_4_steps()
    for before, event, result in steps:
        assert drift.check(before, event, result) == [], event

    def partition(state, n):
        return state.image.partitions[UUID(int=n), 0]

    reassigned = next(r.state for _, e, r in steps if isinstance(e, AlterPartitionReassignmentsRequest))
    r = partition(reassigned, 11)
    assert (r.replicas, r.removing_replicas, r.adding_replicas) == ((1, 2, 5, 3, 4), (3, 4), (5,))
    isr_steps = [(b, e, r) for b, e, r in steps if isinstance(e, AlterIsrRequest)]
    assert partition(isr_steps[0][2].state, 11).removing_replicas == (3, 4)  # 2 out of the ISR: waits
    assert partition(isr_steps[1][2].state, 11).replicas == (1, 2, 5)  # then completes
    assert isr_steps[-1][2].state.image.brokers[5].in_controlled_shutdown
    assert 5 not in partition(isr_steps[-1][2].state, 13).isr  # refused, ISR-8
    *_, unfenced = (r.state for b, e, r in steps if isinstance(e, BrokerHeartbeatRequest)
                    and b.image.brokers[5].fenced and not r.state.image.brokers[5].fenced)
    assert partition(unfenced, 12).leader == 5 and unfenced.image.brokers[5].in_controlled_shutdown


@pytest.mark.parametrize("change", ["no registration flag", "no joining", "completes when adding is in sync",
                                    "removing in current order"])
def test_the_drift_check_parts_from_an_encoding_that_misses_kafka_4_4(monkeypatch, change):
    """Each thing the encoding follows of e20c9a5, taken out again, parts from the model on the steps
    of :func:`_kafka_4_4_steps`."""
    if change == "no registration flag":
        monkeypatch.setattr(symbolic.View, "eligible", symbolic.View.placeable)
        original_alter_isr = T.alter_isr
        monkeypatch.setattr(T, "alter_isr", lambda pre, s, params: original_alter_isr(
            pre.with_(rshut=lambda b: z3.BoolVal(False)), s, params))
        monkeypatch.setitem(drift._REQUESTS, drift.AlterIsrRequest, T.alter_isr)
    elif change == "no joining":
        original = T.partition_change
        monkeypatch.setattr(T, "partition_change", lambda *a, joining=None, **k: original(*a, **k))
    elif change == "completes when adding is in sync":
        kip_631 = profile("kip-631").reassignment_completes
        original = T.partition_change
        monkeypatch.setattr(T, "partition_change", lambda ctx, elig, cur, touched, params, **k: original(
            ctx, elig, cur, touched, attrs.evolve(params, reassignment_completes=kip_631), **k))
    else:
        original_reassign = T.reassign

        def in_current_order(pre, s, params):
            transition = original_reassign(pre, s, params)
            rrank = transition.params["removing_rank"]
            p, b = z3.Const("p", symbolic.Part), z3.Const("b", symbolic.Broker)
            return attrs.evolve(transition, axioms=(*transition.axioms, z3.ForAll([p, b], rrank(p, b) == pre.rank(p, b))))
        monkeypatch.setattr(T, "reassign", in_current_order)
        monkeypatch.setitem(drift._REQUESTS, drift.AlterPartitionReassignmentsRequest, T.reassign)
    monkeypatch.setattr(drift, "_BUILT", {})
    mismatches = [m for sample in _kafka_4_4_steps() for m in drift.check(*sample)]
    assert mismatches, change
