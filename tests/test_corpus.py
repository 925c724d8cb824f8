"""The regression corpus (conformance/corpus/): every trace replays cleanly against impl and the
model, the corpus reaches every runtime rule an event can reach, every file is named after its
content and described; and targeted generation (conformance/targeted.py) that builds it."""

import heapq
from pathlib import Path

import pytest

import kraftspec.conformance
from kraftspec.conformance.adapters import ImplAdapter, ModelAdapter
from kraftspec.conformance.coverage import NOT_REACHABLE_BY_EVENTS, coverage, runtime_rules
from kraftspec.conformance.generate import walk
from kraftspec.conformance.replay import replay
from kraftspec.conformance.targeted import (
    CORPUS_WALKS,
    REGRESSIONS,
    SCENARIOS,
    build_corpus,
    regression_trace,
    rerecorded,
    scripted,
    targeted,
)
from kraftspec.conformance.shrink import fires, shrink, write_to_corpus
from kraftspec.conformance.trace import read, read_all
from kraftspec.model import Config
from kraftspec.spec.profiles import profile_names
from kraftspec.impl import controller as impl_controller
from kraftspec.impl.leases import Lease, LeaseManager

CORPUS = Path(kraftspec.conformance.__file__).parent / "corpus"
ENTRIES = list(read_all([CORPUS]))
REBUILD = "the corpus is out of date: rebuild it with  python -m kraftspec.conformance.targeted conformance/corpus"


def test_the_corpus_is_there_and_small():
    assert 10 <= len(ENTRIES) <= 200  # per profile one shortest trace per rule, walks and regressions; the witnesses of the mutation sweep
    assert sum(len(t.steps) for _, t in ENTRIES) <= 3500


@pytest.mark.parametrize("path, trace", ENTRIES, ids=[p.stem for p, _ in ENTRIES])
def test_every_corpus_trace_replays_cleanly_against_impl_and_the_model(path, trace):
    for adapter in (ImplAdapter(), ModelAdapter()):
        verdict = replay(trace, adapter, "records", path)
        assert verdict.passed, verdict.report()


def test_every_corpus_trace_is_named_after_its_content_and_described():
    for path, trace in ENTRIES:
        assert path.name == f"{trace.name}.jsonl"
        description = trace.header.description
        assert description.strip() and "\n" not in description, f"{path.name}: needs a one-line description"


def test_every_corpus_trace_is_what_the_model_does_now():
    """Recorded again from its events, each trace is the same, rules fired included."""
    for path, trace in ENTRIES:
        assert rerecorded(trace).lines() == trace.lines(), f"{path.name}: {REBUILD}"


def test_the_corpus_reaches_every_runtime_rule_an_event_can_reach():
    report = coverage(t for _, t in ENTRIES)
    assert report.missed == (), f"{REBUILD}\n{report.table(test_only=False)}"
    assert set(report.never_reached) == set(NOT_REACHABLE_BY_EVENTS)
    targeted_only = coverage(t for _, t in ENTRIES if t.header.generator["name"] == "targeted")
    assert targeted_only.missed == ()  # the targeted traces reach them on their own


def test_the_index_lists_every_trace_and_its_description():
    index = (CORPUS / "README.md").read_text()
    listed = {line.split("](")[1].split(")")[0] for line in index.splitlines() if line.startswith("| [")}
    assert listed == {p.name for p, _ in ENTRIES}
    for _, trace in ENTRIES:
        assert trace.header.description.replace("|", "\\|") in index


@pytest.mark.parametrize("profile", profile_names())
def test_the_corpus_holds_realistic_walks_and_the_regressions_as_built_now_in_each_profile(profile):
    lines = {tuple(t.lines()[1:]) for _, t in ENTRIES}
    config = Config.for_profile(profile)
    for seed, steps in CORPUS_WALKS:
        assert 100 <= steps <= 300
        assert tuple(walk(seed, steps, config=config).lines()[1:]) in lines, f"walk {seed}: {REBUILD}"
    for regression in REGRESSIONS:
        if profile in regression.profiles:
            trace = regression_trace(regression, config)
            assert tuple(trace.lines()[1:]) in lines, f"{regression.name} ({profile}): {REBUILD}"


@pytest.mark.parametrize("profile", profile_names())
def test_the_targeted_traces_of_each_profile_reach_every_rule_that_profile_can_reach(profile):
    """The corpus holds traces for both profiles; each profile's targeted traces reach, on their
    own, every runtime rule its walks reach."""
    own = [t for _, t in ENTRIES if t.header.config.get("profile", "kip-631") == profile]
    targeted_only = coverage(t for t in own if t.header.generator["name"] == "targeted")
    assert targeted_only.never_reached == coverage(own).never_reached, REBUILD


# ---- the LowestAcknowledgedOffset regression -----------------------------------------------------


class LeaseManagerBefore274a6d4(LeaseManager):
    """impl's leases before commit 274a6d4, broken as they were: a lease's version restarted with
    each lease, so an entry left by a broker's earlier registration could pass for the new one's."""

    def start(self, broker_id, now_ms, fenced):
        lease = Lease(now_ms)
        old = self.leases.get(broker_id)
        lease.version = old.version + 1 if old is not None else 0
        self.leases[broker_id] = lease
        self.deadlines.append((now_ms + self.session_timeout_ms, broker_id))
        self.set_fenced(broker_id, fenced)
        return lease

    def remove(self, broker_id):
        lease = self.leases.pop(broker_id, None)
        if lease is not None:
            lease.version += 1
        self.unfenced.discard(broker_id)

    def touch(self, broker_id, now_ms, metadata_offset=None):
        lease = self.leases[broker_id]
        lease.last_contact_ms = now_ms
        self.deadlines.append((now_ms + self.session_timeout_ms, broker_id))
        if metadata_offset is not None and metadata_offset != lease.metadata_offset:
            lease.metadata_offset = metadata_offset
            lease.version += 1
            if broker_id in self.unfenced:
                heapq.heappush(self.acknowledged, (metadata_offset, broker_id, lease.version))
        return lease

    def set_fenced(self, broker_id, fenced):
        lease = self.leases.get(broker_id)
        if lease is None:
            return
        if fenced:
            self.unfenced.discard(broker_id)
            lease.version += 1
            lease.in_controlled_shutdown = False
        elif broker_id not in self.unfenced:
            self.unfenced.add(broker_id)
            lease.version += 1
            heapq.heappush(self.acknowledged, (lease.metadata_offset, broker_id, lease.version))


def test_the_lowest_acknowledged_offset_regression_trace_catches_the_old_bug(monkeypatch):
    """LAO-1: the corpus trace passes against impl as it is, and fails against impl with the
    leases it had before 274a6d4, at the last heartbeat's LowestAcknowledgedOffset."""
    (regression,) = [r for r in REGRESSIONS if r.name == "lowest_acknowledged_offset_after_reregistration"]
    trace = regression_trace(regression)
    assert trace.name in {t.name for _, t in ENTRIES}
    events = [s.event for s in trace.steps]
    assert [e["body"]["BrokerId"] for e in events if e.get("api") == "UnregisterBroker"] == [2]
    registrations = [e["body"]["IncarnationId"] for e in events if e.get("api") == "BrokerRegistration" and e["body"]["BrokerId"] == 2]
    assert len(set(registrations)) == 2  # a new incarnation
    assert replay(trace, ImplAdapter(), "records").passed

    monkeypatch.setattr(impl_controller, "LeaseManager", LeaseManagerBefore274a6d4)
    verdict = replay(trace, ImplAdapter(), "records")
    assert not verdict.passed and verdict.divergence.part == "replies"
    last_heartbeat = max(s.n for s in trace.steps if s.event.get("api") == "BrokerHeartbeat")
    assert verdict.divergence.step == last_heartbeat and "LAO-1" in verdict.divergence.rules
    expected, actual = verdict.divergence.expected[0]["body"], verdict.divergence.actual[0]["body"]
    assert expected["LowestAcknowledgedOffset"] > actual["LowestAcknowledgedOffset"]
    assert {**expected, "LowestAcknowledgedOffset": 0} == {**actual, "LowestAcknowledgedOffset": 0}


# ---- targeted generation ---------------------------------------------------------------------------


@pytest.mark.parametrize("rule", sorted(SCENARIOS))
def test_every_scripted_scenario_fires_its_rule(rule):
    trace = scripted(SCENARIOS[rule].__name__, SCENARIOS[rule]())
    assert rule in trace.rules()
    assert replay(trace, ImplAdapter(), "records").passed


def test_targeted_generation_shrinks_a_walk_or_scripts_a_scenario_for_each_rule():
    result = targeted(["LEASE-8", "ISR-4", "LOG-16"], seeds=range(3), lengths=(40,))  # these walks miss ISR-4
    by_rule = {t.rule: t for t in result.targets}
    assert set(by_rule) == {"LEASE-8", "ISR-4"}
    assert "walk seed" in by_rule["LEASE-8"].source and result.scripted == ("ISR-4",)
    for rule, target in by_rule.items():
        assert rule in target.trace.rules() and len(target.trace.steps) <= 6
        assert target.description.startswith(rule) and target.trace.header.generator["name"] == "targeted"
        assert result.reached[rule] == target.trace.name
    assert result.reached["LOG-14"] == "start"  # the bootstrap batch: every controller starts with it
    assert result.unreached == {"LOG-16": NOT_REACHABLE_BY_EVENTS["LOG-16"]}
    assert set(runtime_rules()) >= set(result.reached) - {"start"}


def test_a_rebuild_makes_the_built_traces_again_and_keeps_those_added_by_hand(tmp_path):
    by_hand = write_to_corpus(shrink(walk(2, 200), fires("LEASE-8")), "added by hand", tmp_path)
    old_targeted = next(p for p, t in ENTRIES if t.header.generator["name"] == "targeted")
    (tmp_path / old_targeted.name).write_text(old_targeted.read_text())

    written = build_corpus(tmp_path, rule_ids=["LEASE-8"], profiles=["kip-631"])
    names = {p.name for p in tmp_path.glob("*.jsonl")}
    assert names == {p.name for p in written} and by_hand.name in names  # the model has not changed: same name
    assert old_targeted.name not in names
    made = {read(p).header.generator["name"] for p in written}
    assert made == {"shrink", "walk", "regression", "targeted"}
    assert len(written) == 1 + len(CORPUS_WALKS) + len(REGRESSIONS) + 1  # each regression in kip-631
    assert read(by_hand).header.description == "added by hand"
    assert build_corpus(tmp_path, rule_ids=["LEASE-8"], profiles=["kip-631"]) == written  # deterministic
    assert "added by hand" in (tmp_path / "README.md").read_text()
