"""The Z3 proofs of the model's invariants (proofs.inductive), the drift check that ties the
encoding to the model (proofs.drift), the guard-removal check (proofs.guards), counterexamples
(proofs.counterexample) and ``kraftspec prove``."""

import json

import pytest
import z3

from kraftspec.cli import main
from kraftspec.model.partitions import fence_broker
from kraftspec.model.records import FenceBrokerRecord
from kraftspec.model.state import replace
from kraftspec.proofs import counterexample, drift, guards, inductive
from kraftspec.proofs import transitions as T
from kraftspec.proofs.obligations import FAILED, PROVED
from kraftspec.proofs.symbolic import update
from kraftspec.spec import rules


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


def test_each_state_invariant_is_proved_for_init_and_every_transition(obligations):
    transitions = {o.transition for o in obligations if o.subject == "non-vacuous"}
    assert len(transitions) == len(inductive.BUILDERS) == 14
    for inv_id in inductive.STATE_INVARIANTS:
        proved = {o.transition for o in obligations if o.subject == inv_id and o.proved}
        assert proved == transitions | {"init"}, inv_id
    # the step and reply invariants: INV-4 everywhere, INV-11 and INV-12 on heartbeats
    assert {o.transition for o in obligations if o.subject == "INV-4" and o.proved} == transitions
    assert {o.transition for o in obligations if o.subject in ("INV-11", "INV-12")} == {"BrokerHeartbeat"}


def test_no_proof_is_vacuous_every_branch_can_be_taken(obligations):
    checks = [o for o in obligations if o.subject == "non-vacuous"]
    assert checks and all(o.proved for o in checks), [o for o in checks if not o.proved]


def test_a_branch_that_cannot_be_taken_is_reported():
    def dead(transition):
        branches = tuple(b if b.name != "registered" else T.Branch(b.name, z3.BoolVal(False), b.post)
                         for b in transition.branches)
        return T.Transition(transition.name, transition.params, branches, transition.axioms)

    found = inductive.obligations(("INV-3",), only=("BrokerRegistration",), mutate=dead)
    [check] = [o for o in found if o.subject == "non-vacuous"]
    assert check.result == FAILED and "registered" in check.detail


def test_the_strengthening_each_invariant_needs_comes_from_the_spec_itself():
    needs = inductive.dependencies()
    assert needs["INV-1"] == [] and needs["INV-10"] == []
    assert ("BrokerRegistration", "registered", ["INV-10"]) in needs["INV-3"]  # REG-4 relies on the lease
    assert ("BrokerHeartbeat", "fence on request", ["INV-1"]) in needs["INV-3"]  # fencing touches its ISRs
    assert needs["INV-9"] == [("BrokerRegistration", "registered", ["INV-10"])]


@pytest.mark.parametrize("removal", guards.REMOVALS, ids=lambda r: r.guard)
def test_removing_a_guard_makes_its_invariant_fail_with_a_counterexample(removal):
    obligation = guards.check(removal)
    assert obligation.result == FAILED, (removal, obligation)
    detail = obligation.detail
    assert detail.startswith(f"{removal.breaks} fails after {removal.transition}")
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

    def sloppy_fence(image, leases, broker_id):
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


def test_the_encoding_gives_the_models_successors_on_the_corpus_and_random_walks():
    report = drift.run(300, seed=7)
    assert report.passed, "\n".join(map(str, report.mismatches[:5]))
    corpus_steps = sum(1 for _ in drift.corpus_samples())
    assert report.checked == corpus_steps + 300 and corpus_steps > 1000
    assert {"AlterIsrRequest", "AlterPartitionReassignmentsRequest", "CreateTopicsRequest", "DeleteTopicsRequest",
            "UnregisterBrokerRequest", "Failover", "Tick", "Commit", "BrokerHeartbeatRequest",
            "BrokerRegistrationRequest", "TakeSnapshot", "ListPartitionReassignmentsRequest"} <= set(report.kinds)


def test_the_drift_check_finds_an_encoding_that_parts_from_the_model(monkeypatch):
    def fence_keeps_the_broker(ctx, v, x):  # the encoding forgets to take a fenced broker out of ISRs
        fenced = v.with_(fenced=update(v.fenced, x, True), shut=update(v.shut, x, False))
        return T.partition_change(ctx, fenced, fenced, lambda p: z3.And(v.live(p), v.isr(p, x)))

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
    assert "18 of 18 guard removals make their obligation fail" in out and "all checks passed" in out
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
