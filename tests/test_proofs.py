"""The Z3 proofs of the model's invariants (proofs.inductive), the drift check that ties the
encoding to the model (proofs.drift), the guard-removal check (proofs.guards), counterexamples
(proofs.counterexample) and ``kraftspec prove``."""

import json
from uuid import UUID

import pytest
import z3

from kraftspec.cli import main
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


def proved_in(obligations, profile: str, subject: str) -> set[str]:
    """The transitions (and "init") for which ``subject`` is proved in ``profile``: for it alone, or
    once for every profile."""
    return {o.transition for o in obligations if o.subject == subject and o.proved and o.profile in (profile, ALL_PROFILES)}


@pytest.mark.parametrize("profile", profile_names())
def test_each_state_invariant_is_proved_for_init_and_every_transition_in_each_profile(obligations, profile):
    transitions = {o.transition for o in obligations if o.subject == "non-vacuous" and o.profile == profile}
    assert len(transitions) == len(inductive.BUILDERS) == 14
    for inv_id in inductive.CLAUSES:  # the spec's invariants and the proofs' lemmas
        assert proved_in(obligations, profile, inv_id) == transitions | {"init"}, inv_id
    # the step and reply invariants: INV-4 everywhere, INV-11 and INV-12 on heartbeats
    assert proved_in(obligations, profile, "INV-4") == transitions
    assert {o.transition for o in obligations if o.subject in ("INV-11", "INV-12")} == {"BrokerHeartbeat"}
    assert proved_in(obligations, profile, "INV-11") == proved_in(obligations, profile, "INV-12") == {"BrokerHeartbeat"}


def test_an_obligation_is_proved_once_for_all_profiles_only_where_it_is_the_same_in_each(obligations):
    """Transitions that read no profile parameter, and claims that do not either, are proved once;
    the layout (INV-17) and the lease boundary (INV-10) are proved per profile, but where a piece of
    the tick claims only INV-10's clause on leases."""
    shared = {(o.subject, o.transition) for o in obligations if o.profile == ALL_PROFILES and o.proved}
    assert ("INV-1", "Commit") in shared and ("INV-3", "init") in shared
    assert {(subject, transition) for subject, transition in shared if subject in ("INV-10", "INV-17")} == {
        ("INV-10", "Tick (clock)")}
    for name in ("BrokerHeartbeat", "BrokerRegistration", "UnregisterBroker", "AlterIsr",
                 "AlterPartitionReassignments", "Failover", "Tick (a lease lapses)", "Tick (done)"):
        assert not any(transition == name for _, transition in shared), name  # they read the profile
    for o in obligations:  # each (subject, transition) once for all, or once per profile
        if o.group == "invariant" and o.subject != "non-vacuous" and o.result != "not encoded":
            mine = [p.profile for p in obligations if (p.subject, p.transition) == (o.subject, o.transition)]
            assert sorted(mine) in ([ALL_PROFILES], sorted(profile_names())), (o.subject, o.transition, mine)


def test_the_profiles_encodings_differ_where_the_model_reads_a_parameter():
    pre, s = symbolic.state("pre"), inductive.session_timeout()
    for name, build in inductive.BUILDERS.items():
        same = inductive.same_transition([build(pre, s, profile(p)) for p in profile_names()])
        assert same == (name in ("CreateTopics", "DeleteTopics", "ListPartitionReassignments", "Tick (clock)",
                                 "Commit", "TakeSnapshot")), name


def test_no_proof_is_vacuous_every_branch_can_be_taken(obligations):
    checks = [o for o in obligations if o.subject == "non-vacuous"]
    assert len(checks) == 14 * len(profile_names()) and all(o.proved for o in checks), [o for o in checks if not o.proved]


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
    # REG-4 lets a new incarnation in once the old lease lapsed or is released: it relies on the lease
    # (INV-10) and on only a fenced broker's lease being released (LEMMA-1), neither enough alone
    assert ("BrokerRegistration", "registered", ["INV-10 and LEMMA-1"]) in needs["INV-3"]
    assert ("BrokerHeartbeat", "fence on request", ["INV-1"]) in needs["INV-3"]  # fencing touches its ISRs
    assert needs["INV-5"] == [("UnregisterBroker", "unregistered", ["INV-1"])]  # so does unregistering
    assert needs["INV-9"] == [("BrokerRegistration", "registered", ["INV-10 and LEMMA-1"])]


@pytest.mark.parametrize("profile", profile_names())
@pytest.mark.parametrize("removal", guards.REMOVALS, ids=lambda r: r.guard)
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
    [removal] = [r for r in guards.REMOVALS if r.guard == "PART-6"]
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


def test_the_drift_check_finds_an_encoding_that_parts_from_the_model(monkeypatch):
    def fence_keeps_the_broker(ctx, v, x, params):  # the encoding forgets to take a fenced broker out of ISRs
        fenced = v.with_(fenced=update(v.fenced, x, True), shut=update(v.shut, x, False))
        return T.partition_change(ctx, fenced, fenced, lambda p: z3.And(v.live(p), v.isr(p, x)), params)

    monkeypatch.setattr(T, "fence", fence_keeps_the_broker)
    monkeypatch.setattr(drift, "_BUILT", {})
    mismatch = next(m for sample in drift.corpus_samples() for m in drift.check(*sample))
    assert mismatch.check == "admits"
    assert "ISR" in mismatch.detail or "partition epoch" in mismatch.detail


def test_kraftspec_prove_prints_the_table_and_writes_json_and_junit(tmp_path, capsys):
    report, xml = tmp_path / "prove.json", tmp_path / "prove.xml"
    assert main(["prove", "--json", str(report), "--junit", str(xml)]) == 0
    out = capsys.readouterr().out
    assert "INV-3" in out and "BrokerHeartbeat" in out and "TIME-1" in out
    removals = len(guards.REMOVALS) * len(profile_names())
    assert f"{removals} of {removals} guard removals make their obligation fail" in out and "all checks passed" in out
    data = json.loads(report.read_text())
    assert data["passed"] and {o["group"] for o in data["obligations"]} == {"invariant", "timing"}
    assert all(g["caught"] for g in data["guards"]) and data["dependencies"]["INV-9"]
    assert 'failures="0"' in xml.read_text()


def test_kraftspec_prove_refuses_an_unknown_invariant_id(capsys):
    assert main(["prove", "--only", "INV-99"]) == 2
    assert "INV-99 is not an invariant id" in capsys.readouterr().err


def test_kraftspec_prove_only_some_invariants_with_a_small_drift_check(capsys):
    assert main(["prove", "--only", "INV-3", "--drift", "20", "--no-guards"]) == 0
    out = capsys.readouterr().out
    assert "INV-3" in out and "INV-9 " not in out and "0 mismatches" in out


def test_kraftspec_prove_under_another_profile_samples_it_and_proves_every_profile(tmp_path, capsys):
    """The drift check's corpus traces, scripted run and walks are of the profile, and the encoding of
    that profile agrees with them; the invariant proofs cover every profile whatever --profile says."""
    samples = list(drift.samples(3, seed=1, profile="kafka"))
    assert {(s.config.profile, s.config.session_timeout_ms) for s, _, _ in samples} == {("kafka", 9000)}
    report = tmp_path / "prove.json"
    assert main(["prove", "--only", "INV-3", "--drift", "5", "--no-guards", "--profile", "kafka",
                 "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "profile kafka: the drift check (--drift) samples the model under it" in out
    scripted = sum(1 for _ in drift.scripted_samples("kafka"))
    corpus = sum(1 for _ in drift.corpus_samples(profile="kafka"))
    assert (f"drift check: {corpus + scripted + 5} steps ({corpus} from the corpus, {scripted} scripted, 5 from "
            f"random walks, seed 0, profile kafka)") in out and "0 mismatches" in out
    data = json.loads(report.read_text())
    assert data["profile"] == "kafka"
    assert {o["profile"] for o in data["obligations"] if o["subject"] == "INV-3"} == {ALL_PROFILES, *profile_names()}
