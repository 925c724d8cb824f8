"""The mutation check (conformance/mutation.py): every mutant breaks impl somewhere, and only
while it is applied; the catalogue is sound; ``run`` reports in its three forms.

Each mutant has a *witness* here: a small scenario, recorded from the model as a trace, that
unmutated impl replays exactly and the mutated impl does not, diverging at or after the event
the scenario marks as the one its rule decides. The full check (every mutant against the corpus
and the stateful tests) is a command, not a test: see the module's docstring.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from uuid import UUID

import pytest

from cluster import Cluster, topic_id
from kraftspec.conformance.adapters import ImplAdapter
from kraftspec.conformance.generate import record
from kraftspec.conformance.mutation import (
    CORPUS,
    EDITS,
    MUTANTS,
    NO_MUTANT,
    Mutant,
    corpus_traces,
    deciding_rules,
    mutant_named,
    replay_corpus,
    run,
)
from kraftspec.conformance.replay import replay
from kraftspec.conformance.trace import Trace
from kraftspec.model import Config
from kraftspec.model.messages import (
    AlterIsrPartition,
    AlterIsrRequest,
    AlterIsrTopic,
    CreatableTopic,
    CreateTopicsRequest,
    Feature,
    ListedTopic,
    ReplicaAssignment,
    ZERO_UUID,
)
from kraftspec.spec import rules


class Scenario(Cluster):
    """A model-driven cluster that remembers its events, to be recorded as a trace."""

    def __init__(self, config: Config | None = None) -> None:
        super().__init__(config)
        self.events: list = []
        self.decisive = 0

    def send(self, event):
        self.events.append(event)
        return super().send(event)

    def mark(self) -> None:
        """The next event is the one the mutated rule decides: nothing before it may diverge."""
        self.decisive = len(self.events)

    def trace(self, name: str) -> Trace:
        return record(self.state.config, self.events, {"name": "mutation-witness", "version": 1, "params": {"mutant": name}})


def a_topic_on(c: Scenario, *replica_lists, name: str = "t") -> None:
    c.create_topic(name, [list(replicas) for replicas in replica_lists])


# ---- one witness per mutant ----------------------------------------------------------------------


def lease_expiry_off_by_one(c):
    c.start_brokers(1)  # last contact at 0: the deadline is 18,000
    c.mark()
    c.tick(18_000)


def fenced_heartbeat_not_contact(c):
    c.register(1)
    c.tick(10_000)
    c.heartbeat(1, want_fence=True)  # contact at 10,000, fenced all along
    c.tick(20_000)
    c.mark()
    c.register(1, generation=1)  # the old process had contact 10 s ago: DUPLICATE_BROKER_REGISTRATION


def duplicate_check_ignores_fenced(c):
    c.register(1)
    c.mark()
    c.register(1, generation=1)


def lower_offset_ignored(c):
    c.start_brokers(1)
    c.heartbeat(1)
    c.mark()
    c.heartbeat(1, offset=c.state.leases[1].metadata_offset - 1, want_fence=True)  # a lower offset, handled in full: fenced


def stale_epoch_heartbeat_accepted(c):
    c.start_brokers(1)
    c.mark()
    c.heartbeat(1, epoch=c.epoch(1) + 7)


def epoch_from_committed_offset(c):
    c.register(1, commit=False)
    c.mark()
    c.register(2, commit=False)


def epoch_from_next_offset(c):
    c.mark()
    c.register(1)


def retried_registration_writes_record(c):
    c.register(1)
    c.mark()
    c.register(1)


def feature_check_skipped(c):
    c.mark()
    c.register(1, features=())


def fenced_broker_left_in_isr(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.mark()
    c.heartbeat(2, want_fence=True)


def sole_isr_member_removed(c):
    c.start_brokers(1)
    a_topic_on(c, (1,))
    c.mark()
    c.heartbeat(1, want_fence=True)


def fenced_leader_not_replaced(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.mark()
    c.heartbeat(1, want_fence=True)


def unfencing_adds_to_isr(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.heartbeat(2, want_fence=True)
    c.mark()
    c.heartbeat(2)


def unfencing_elects_nobody(c):
    c.start_brokers(1)
    a_topic_on(c, (1,))
    c.heartbeat(1, want_fence=True)  # leaderless, ISR [1]
    c.mark()
    c.heartbeat(1)


def controlled_shutdown_not_sticky(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.heartbeat(1, want_shut_down=True)  # kafka profile: 1 leaves t's ISR and leadership, and stays in controlled shutdown
    c.heartbeat(2)  # 2 has applied the move
    c.mark()
    c.heartbeat(1)  # asking for nothing, still shutting down: 1 leads nothing, so it is let go


controlled_shutdown_not_sticky.profile = "kafka"


def leadership_to_ineligible_broker(c):
    c.start_brokers(1, 2, 3)
    a_topic_on(c, (1, 2, 3))
    c.mark()
    c.heartbeat(1, want_shut_down=True)  # kafka profile: 1 leads t, so it stays in controlled shutdown; SHUT-2: t's leadership and 1's ISR place go


leadership_to_ineligible_broker.profile = "kafka"


def shutdown_granted_at_once(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.mark()
    c.heartbeat(1, want_shut_down=True)  # kafka profile: 1 led t, so it waits for 2 to apply the move


shutdown_granted_at_once.profile = "kafka"


def leader_epoch_check_skipped(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.mark()
    c.alter_isr(1, "t", [1], leader_epoch=3)


def non_leader_isr_change_accepted(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.mark()
    c.alter_isr(2, "t", [1])


def partition_epoch_check_skipped(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.mark()
    c.alter_isr(1, "t", [1], partition_epoch=5)


def fenced_isr_member_accepted(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.heartbeat(2, want_fence=True)
    c.mark()
    c.alter_isr(1, "t", [1, 2])


def change_record_repeats_lists(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.mark()
    c.alter_isr(1, "t", [1])


def unregistered_broker_leaves_replicas(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.mark()
    c.unregister(2)


def reassignment_complete_too_early(c):
    c.start_brokers(1, 2, 3, 4, 5)
    a_topic_on(c, (1, 2, 3))
    c.reassign("t", [3, 4, 5])
    c.mark()
    c.alter_isr(1, "t", [1, 2, 3, 4])  # 5 is not in sync yet


def reassignment_wrong_replica_order(c):
    c.start_brokers(1, 2, 3, 4)
    a_topic_on(c, (1, 2, 3))
    c.mark()
    c.reassign("t", [1, 2, 4])


def delete_writes_partition_changes(c):
    c.start_brokers(1)
    a_topic_on(c, (1,))
    c.mark()
    c.delete_topics("t")


def placement_not_round_robin(c):
    c.start_brokers(1, 2, 3)
    c.mark()
    c.create_topic("t", partitions=3, replication_factor=2)


def responses_before_commit(c):
    c.mark()
    c.register(1, commit=False)


def reads_uncommitted_state(c):
    c.start_brokers(1, 2, 3, 4)
    a_topic_on(c, (1, 2, 3))
    c.reassign("t", [1, 2, 4], commit=False)
    c.mark()
    c.list_reassignments()


def failover_keeps_uncommitted_tail(c):
    c.start_brokers(1)
    c.register(2, commit=False)
    c.mark()
    c.failover()


def lao_counts_fenced_brokers(c):
    c.start_brokers(1)
    c.register(2)
    c.heartbeat(2, offset=0, want_fence=True, version=0)  # fenced, having acknowledged nothing
    c.mark()
    c.heartbeat(1)


WITNESSES = {
    name.replace("_", "-"): scenario for name, scenario in globals().items()
    if callable(scenario) and name.replace("_", "-") in {m.name for m in MUTANTS if m not in EDITS}
}


def scenario_cluster(scenario) -> Scenario:
    """A cluster for the scenario: of its profile (a ``profile`` attribute, for a rule of the kafka
    profile), else of the default configuration."""
    profile = getattr(scenario, "profile", None)
    return Scenario(Config.for_profile(profile) if profile else None)


def witness(name: str) -> tuple[Trace, int]:
    """The mutant's witness trace and the step from which it may diverge."""
    c = scenario_cluster(WITNESSES[name])
    WITNESSES[name](c)
    return c.trace(name), c.decisive


# ---- the tests ---------------------------------------------------------------------------------


def test_the_catalogue_has_many_distinct_mutants_of_real_rules():
    names = [m.name for m in MUTANTS]
    assert len(MUTANTS) >= 24
    assert len(set(names)) == len(names)
    assert all(m.rule in rules() for m in MUTANTS), [m.rule for m in MUTANTS if m.rule not in rules()]
    assert all(m.description and "\n" not in m.description for m in MUTANTS)
    areas = {m.rule.split("-")[0] for m in MUTANTS}
    assert {"LEASE", "REG", "PART", "SHUT", "ISR", "REASSIGN", "TOPIC", "LOG", "LAO"} <= areas
    assert mutant_named("lease-expiry-off-by-one").rule == "LEASE-8"
    with pytest.raises(KeyError, match="no mutant named"):
        mutant_named("no-such-mutant")


def test_every_mutant_has_a_witness():
    assert set(WITNESSES) == {m.name for m in MUTANTS if m not in EDITS}


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m not in EDITS], ids=lambda m: m.name)
def test_every_mutant_changes_what_impl_does_and_only_while_applied(mutant: Mutant):
    trace, decisive = witness(mutant.name)
    assert replay(trace, ImplAdapter()).passed, "unmutated impl must replay the witness exactly"
    original = vars(mutant.owner)[mutant.attribute]
    with mutant.applied():
        assert vars(mutant.owner)[mutant.attribute] is not original
        verdict = replay(trace, ImplAdapter())
    assert not verdict.passed, f"{mutant.name} did not change impl's behaviour on its witness"
    assert verdict.divergence.step >= decisive, verdict.report()
    assert vars(mutant.owner)[mutant.attribute] is original
    assert replay(trace, ImplAdapter()).passed, "impl must be itself again once the mutant is removed"


def test_a_mutant_is_removed_even_when_the_check_fails():
    mutant = mutant_named("responses-before-commit")
    original = vars(mutant.owner)[mutant.attribute]
    with pytest.raises(RuntimeError), mutant.applied():
        raise RuntimeError("the check blew up")
    assert vars(mutant.owner)[mutant.attribute] is original


def test_run_falls_back_to_walks_and_reports_as_a_table_json_and_junit(tmp_path):
    probe = tmp_path / "test_probe.py"  # stands in for the stateful tests: fails only under a mutant of _release
    probe.write_text(
        "from kraftspec.impl.controller import Controller\n\n\n"
        "def test_release_is_impls_own():\n"
        "    assert Controller._release.__qualname__ == 'Controller._release'\n"
    )
    report = run(["responses-before-commit", "feature-check-skipped"], corpus=tmp_path / "no-corpus", walks=2,
                 tests=probe, timeout=120)

    assert report.corpus_fallback and report.corpus_traces == 2 and "empty or missing" in report.corpus_source
    assert report.stateful_baseline == "passed"
    early, features = report.results
    assert early.corpus_killed and early.corpus_part == "replies" and early.corpus_trace.startswith("walk(seed=")
    assert early.stateful == "killed" and early.stateful_test.endswith("test_release_is_impls_own")
    assert features.stateful == "survived"
    assert report.rates()["stateful"] == 0.5 and report.rates()["either"] == (1.0 if features.corpus_killed else 0.5)

    table = report.table()
    assert "responses-before-commit" in table and "LOG-7" in table and "kill rate: corpus" in table

    data = json.loads(json.dumps(report.to_json()))
    assert [m["name"] for m in data["mutants"]] == ["responses-before-commit", "feature-check-skipped"]
    assert data["corpus"]["fallback"] is True and data["mutants"][0]["corpus"]["killed"] is True

    suite = ET.fromstring(report.junit()).find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["responses-before-commit", "feature-check-skipped"]
    assert cases[0].find("failure") is None
    assert (cases[1].find("failure") is not None) == (not features.killed)
    assert suite.get("failures") == str(len(report.survivors))


def test_the_stateful_column_is_void_when_the_unmutated_run_fails(tmp_path):
    failing = tmp_path / "test_always_fails.py"
    failing.write_text("def test_fails():\n    assert False\n")
    report = run(["epoch-from-next-offset"], corpus=None, walks=1, tests=failing, timeout=120)
    assert report.stateful_baseline == "failed"
    assert report.results[0].stateful == "void" and report.rates()["stateful"] is None
    assert report.results[0].corpus_killed  # the first registration already gets the wrong epoch


def test_run_replays_the_corpus_and_leaves_out_what_unmutated_impl_fails(tmp_path):
    from attrs import evolve

    corpus = tmp_path / "corpus"
    (corpus / "regressions").mkdir(parents=True)
    trace, _ = witness("responses-before-commit")
    good = trace.write(corpus / "regressions")
    last = trace.steps[-1]  # a readable trace whose committed state no implementation gives
    wrong = evolve(trace, steps=trace.steps[:-1] + (evolve(last, committed=()),))
    wrong.write(corpus / "wrong.jsonl")
    (corpus / "torn.jsonl").write_text('{"type": "header"\n')

    report = run(["responses-before-commit"], corpus=corpus, stateful=False)
    assert not report.corpus_fallback and report.corpus_traces == 1
    assert report.stateful_baseline == "not run" and report.rates()["stateful"] is None
    left_out = " ".join(report.corpus_excluded)
    assert "torn.jsonl (unreadable" in left_out and "wrong.jsonl (unmutated impl diverges" in left_out
    [result] = report.results
    assert result.corpus_killed and result.corpus_trace == str(good) and result.stateful == "not run"


# ---- the mutants written as source edits ----------------------------------------------------------
# Most are killed by the regression corpus (checked below); these scenarios witness the others, and
# are in the corpus as regression traces too.


def alter_isr_broker_epoch_unchecked(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.mark()
    c.alter_isr(1, "t", [1], broker_epoch=c.epoch(1) + 5)


def isr_without_leader_accepted(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.mark()
    c.alter_isr(1, "t", [2])


def caught_up_one_offset_early(c):
    c.register(1)
    c.mark()
    c.heartbeat(1, offset=c.epoch(1), want_fence=True)  # applied up to its registration, not including it


def unfenced_one_offset_early(c):
    c.register(1)
    c.mark()
    c.heartbeat(1, offset=c.epoch(1))


def clock_lags_the_tick(c):
    c.start_brokers(1)
    c.tick(100)
    c.heartbeat(1)  # contact at 100: the lease lapses at 18,100
    c.mark()
    c.tick(18_099)


def registration_elects_the_new_incarnation(c):
    c.start_brokers(2)
    a_topic_on(c, (2,))
    c.tick(18_000)  # fenced: the sole in-sync replica, leaderless
    c.mark()
    c.register(2, generation=1)


def fenced_broker_eligible(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1,))
    c.heartbeat(1, want_fence=True)  # leaderless, ISR [1]
    c.mark()
    c.reassign("t", [1, 2])  # an election among fenced replicas elects nobody


def election_picks_the_last_replica(c):
    c.start_brokers(1, 2, 3)
    a_topic_on(c, (1, 2, 3))
    c.mark()
    c.heartbeat(1, want_fence=True)  # 2 leads, not 3


def reassignment_to_unregistered_broker_accepted(c):
    c.start_brokers(1)
    a_topic_on(c, (1,))
    c.mark()
    c.reassign("t", [1, 7])


def cancel_keeps_adding_in_isr(c):
    c.start_brokers(1, 2, 3, 4)
    a_topic_on(c, (1, 2))
    c.reassign("t", [1, 3, 4])
    c.alter_isr(1, "t", [1, 2, 3])  # 3 in sync, 4 not yet: still reassigning
    c.mark()
    c.reassign("t", None)


def list_ignores_partition_indexes(c):
    from kraftspec.model.messages import ListedTopic

    c.start_brokers(1, 2, 3)
    c.create_topic("t", [[1], [1]])
    c.reassign("t", [2], index=0)
    c.reassign("t", [3], index=1)
    c.mark()
    c.list_reassignments([ListedTopic("t", [0])])


def two_topics_reassigning(c):
    """Topics b and t, each with one partition on broker 1, both reassigning to [1, 2]."""
    c.start_brokers(1, 2)
    a_topic_on(c, (1,), name="b")
    a_topic_on(c, (1,), name="t")
    c.reassign("b", [1, 2])
    c.reassign("t", [1, 2])


def named_topics_listed_by_name(c):
    two_topics_reassigning(c)
    c.mark()
    c.list_reassignments([ListedTopic("t", [0]), ListedTopic("b", [0])])


def assignment_to_unregistered_broker_accepted(c):
    c.start_brokers(1)
    c.mark()
    c.create_topic("t", [[1, 7]])


def unequal_replica_counts_accepted(c):
    c.start_brokers(1, 2)
    c.mark()
    c.create_topic("t", [[1, 2], [1]])


def delete_resolves_uncommitted_names(c):
    c.start_brokers(1)
    c.create_topic("t", [[1]], commit=False)
    c.mark()
    c.delete_topics("t", commit=False)


def unknown_partition_wrong_error(c):
    c.start_brokers(1)
    a_topic_on(c, (1,))
    c.mark()
    c.request(AlterIsrRequest(1, c.epoch(1), [AlterIsrTopic(topic_id("t"), [AlterIsrPartition(3, 0, [1], 0)])]))  # no partition 3


def shutting_down_broker_eligible(c):
    c.start_brokers(1, 2, 3)
    a_topic_on(c, (1, 2, 3))
    a_topic_on(c, (2,), name="u")
    c.heartbeat(2, want_shut_down=True)  # kafka profile: 2 stays in controlled shutdown, out of t's ISR
    c.mark()
    c.alter_isr(1, "t", [1, 2, 3])  # ISR-8: its registration says it is shutting down, so 2 may not come back


shutting_down_broker_eligible.profile = "kafka"


def shutdown_grant_ignores_lagging_brokers(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.heartbeat(1, want_shut_down=True)  # kafka profile: 1 gives t up and waits
    c.mark()
    c.heartbeat(1)  # 2 has not applied the move yet: 1 is not let go


shutdown_grant_ignores_lagging_brokers.profile = "kafka"


def records_of_earlier_topics_not_counted(c):
    c.start_brokers(1)
    c.mark()
    c.request(CreateTopicsRequest([CreatableTopic(name, topic_id(name), 5000, 1) for name in ("a", "b")]))  # 10,002 records


EDIT_WITNESSES = {
    name.replace("_", "-"): scenario for name, scenario in globals().items()
    if callable(scenario) and name.replace("_", "-") in {m.name for m in EDITS}
}


def edit_witness(name: str) -> tuple[Trace, int]:
    c = scenario_cluster(EDIT_WITNESSES[name])
    EDIT_WITNESSES[name](c)
    return c.trace(name), c.decisive


@pytest.fixture(scope="module")
def corpus_passing():
    """The corpus traces unmutated impl replays exactly."""
    traces, _, _, _ = corpus_traces(CORPUS)
    return [(where, trace) for where, trace in traces if replay(trace, ImplAdapter()).passed]


@pytest.mark.parametrize("mutant", EDITS, ids=lambda m: m.name)
def test_every_edit_mutant_is_caught_by_the_corpus_and_its_witness(mutant: Mutant, corpus_passing):
    """An edit mutant changes impl only while applied; the corpus catches it; so does its scenario, if it has one."""
    original = vars(mutant.owner)[mutant.attribute]
    with mutant.applied():
        assert vars(mutant.owner)[mutant.attribute] is not original
        caught = replay_corpus(corpus_passing)
        if mutant.name in EDIT_WITNESSES:
            trace, decisive = edit_witness(mutant.name)
            verdict = replay(trace, ImplAdapter())
            assert not verdict.passed and verdict.divergence.step >= decisive, f"{mutant.name}: its witness passes"
    assert vars(mutant.owner)[mutant.attribute] is original
    if mutant.name in EDIT_WITNESSES:
        assert replay(edit_witness(mutant.name)[0], ImplAdapter()).passed, "unmutated impl must replay the witness exactly"
    assert caught is not None, f"{mutant.name} ({mutant.rule}) survives the corpus: add its witness to conformance/corpus"


def test_every_rule_that_decides_something_has_a_hand_written_mutant():
    """A rule named where the model decides a record or a response (cite, reject, refuse in the
    handlers) has at least one mutant in the fast check, or a stated reason why impl cannot be
    broken there on the corpus's path."""
    deciding = deciding_rules()
    assert {"REG-4", "ISR-3", "LEASE-8", "TOPIC-7"} <= set(deciding)
    covered = {m.rule for m in MUTANTS} | set(NO_MUTANT)
    missing = sorted(set(deciding) - covered)
    assert not missing, "rules that decide something without a mutant: " + ", ".join(
        f"{rule} ({', '.join(deciding[rule])})" for rule in missing)
    assert all(rule in deciding for rule in NO_MUTANT), "NO_MUTANT names a rule that decides nothing"


# ---- the sweep (conformance/mutation_sweep.py) -------------------------------------------------------


def test_sweep_mutants_are_applied_in_memory_everywhere_and_removed():
    from kraftspec.conformance import mutation_sweep as ms
    from kraftspec.impl import builder
    from kraftspec.impl import partitions as impl_partitions

    found = ms.mutants_of("impl/builder.py", ms.source_of("impl/builder.py"))
    assert {"comparison", "statement", "return", "boolean"} <= {m.operator for m in found}
    assert len({m.id for m in found}) == len(found)
    [m] = [m for m in found if m.qualname == "reassignment_complete" and m.change == "broker_id not in isr -> broker_id in isr"]
    original = builder.reassignment_complete
    assert original((3, 4), (3,), (4,), ()) is False  # 4 is adding and not in sync
    with ms.applied(m):
        assert builder.reassignment_complete is not original
        assert builder.reassignment_complete((3, 4), (3,), (4,), ()) is True
        assert impl_partitions.build_change.__globals__["reassignment_complete"] is builder.reassignment_complete
    assert builder.reassignment_complete is original
    assert "if broker_id not in isr:" in ms.source_of("impl/builder.py")  # the file was never written


def test_every_listed_equivalent_names_a_current_sweep_mutant():
    from kraftspec.conformance import mutation_sweep as ms

    listed = ms.read_equivalents()
    assert listed and all(e.reason.strip() for e in listed)
    current = {m.id: m.change for m in ms.generate({e.id.split(":", 1)[0] for e in listed})}
    stale = [f"{e.id} ({e.change})" for e in listed if current.get(e.id) != e.change]
    assert not stale, "equivalent entries that name no current mutant: " + "; ".join(stale)


def test_a_malformed_equivalents_file_is_refused_naming_the_entry(tmp_path):
    from kraftspec.conformance import mutation_sweep as ms

    bad = tmp_path / "eq.toml"
    bad.write_text('[[equivalent]]\nid = "impl/leases.py:X:1"\nchange = "a -> b"\n')
    with pytest.raises(ValueError, match=r"eq.toml: equivalent entry 1 \(impl/leases.py:X:1\): missing reason"):
        ms.read_equivalents(bad)


def test_sweep_replays_the_corpus_against_impl_with_its_log_on_disk():
    """A mutant of the disk writes, which impl in memory never makes, is killed by the corpus
    replayed with the log on disk and recovered from it at a failover."""
    from kraftspec.conformance import mutation_sweep as ms

    traces, _, _, _ = corpus_traces(CORPUS)
    assert ms.run_corpus(traces, "impl") is None
    [m] = [m for m in ms.mutants_of("impl/controller.py", ms.source_of("impl/controller.py"))
           if m.qualname == "Controller._commit_to" and m.change == "self.disk.write_committed_offset(offset) -> pass"]
    with ms.applied(m):
        where, what = ms.run_corpus(traces, "impl")
    assert "log on disk" in what, what
    assert ms.run_corpus(traces, "impl") is None


def test_a_sweep_of_some_files_judges_only_their_equivalent_entries(tmp_path):
    """An entry of a file left out of the sweep is neither stale nor counted; one of a swept file
    that names no current mutant is stale."""
    from kraftspec.conformance import mutation_sweep as ms

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    first = sorted(CORPUS.glob("*.jsonl"))[0]
    (corpus / first.name).write_bytes(first.read_bytes())
    listed = tmp_path / "equivalents.toml"
    listed.write_text(
        '[[equivalent]]\nid = "impl/leases.py:Lease.__init__:9"\nchange = "self.version = 0 -> pass"\nreason = "elsewhere"\n\n'
        '[[equivalent]]\nid = "impl/state.py:MetadataState.replay:0"\nchange = "no such change"\nreason = "stale"\n')
    report = ms.sweep(["impl/state.py"], corpus=corpus, examples=2, jobs=1, results_path=tmp_path / "results.jsonl",
                      equivalents_path=listed)
    assert [e.id for e in report.stale_equivalents] == ["impl/state.py:MetadataState.replay:0"]
    assert report.equivalents == ()


def test_sweep_keeps_the_stateful_column_when_only_the_corpus_changed(tmp_path):
    """A second sweep after a trace was added runs the corpus check again and reuses the stateful one."""
    from kraftspec.conformance import mutation_sweep as ms

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    first_trace, second_trace = sorted(CORPUS.glob("*.jsonl"))[:2]
    (corpus / first_trace.name).write_bytes(first_trace.read_bytes())
    results, said = tmp_path / "results.jsonl", []

    def sweep():
        return ms.sweep(["impl/state.py"], corpus=corpus, examples=2, jobs=1, results_path=results,
                        equivalents_path=tmp_path / "none.toml", progress=said.append)

    before = {r.mutant.id: r for r in sweep().results}
    (corpus / second_trace.name).write_bytes(second_trace.read_bytes())
    said.clear()
    after = {r.mutant.id: r for r in sweep().results}

    assert before.keys() == after.keys()
    run = [i for i, r in before.items() if r.outcome.stateful not in ("unreached", "error")]
    assert run, "some mutant of impl/state.py runs"
    assert any(f"({len(run)} against the changed corpus only)" in line for line in said), said
    for i in run:
        assert after[i].fingerprint != before[i].fingerprint
        assert after[i].outcome.stateful == before[i].outcome.stateful
        assert after[i].outcome.stateful_detail == before[i].outcome.stateful_detail


# ---- the sweep's survivors that a corpus trace now kills ---------------------------------------------
# Each scenario is in the corpus as a hand-added trace (generator mutation-witness); the sweep
# mutants it kills are named by file, function and change, as `kraftspec mutate --sweep` prints them.


def registration_offset_minus_two(c):
    c.register(1, current_metadata_offset=-2)  # -1 is the lowest a registration may claim


def registration_feature_below_zero(c):
    c.register(1, features=(Feature("metadata.format", -1, 1),))  # a negative minimum alone is invalid


def registration_retry_is_contact(c):
    c.start_brokers(1)
    c.tick(17_000)
    c.register(1)  # the same incarnation again: a retry, and contact at 17,000
    c.tick(18_000)  # the first contact's deadline: the lease holds until 35,000


def heartbeat_offset_zero(c):
    c.register(1)
    c.heartbeat(1, offset=0)  # the lowest valid offset: answered, still fenced


def alter_isr_after_a_completed_reassignment(c):
    c.start_brokers(1, 2, 3)
    c.create_topic("t", [[1, 2], [1, 2]])
    c.reassign("t", [2, 3])  # partition 0: 3 joins, 1 leaves once 3 is in sync
    p0, p1 = c.partition("t", 0), c.partition("t", 1)
    c.request(AlterIsrRequest(1, c.epoch(1), [AlterIsrTopic(topic_id("t"), [
        AlterIsrPartition(0, p0.leader_epoch, [1, 2, 3], p0.partition_epoch),  # completes it: 1 no longer leads
        AlterIsrPartition(1, p1.leader_epoch, [1], p1.partition_epoch),  # the next partition is still handled
    ])]))


def another_cluster_and_session(c):
    c.start_brokers(1)
    c.tick(9_000)  # this cluster's session timeout: broker 1 is fenced



def alter_isr_leader_epoch_ahead(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1, 2))
    c.alter_isr(1, "t", [1], leader_epoch=c.partition("t").leader_epoch + 1)  # ahead of the controller's: NOT_CONTROLLER


def alter_isr_names_a_broker_outside_the_replicas(c):
    c.start_brokers(1, 2, 3)
    a_topic_on(c, (1, 2))
    c.alter_isr(1, "t", [1, 2, 3])  # 3 is registered and unfenced, but no replica


def create_topics_at_the_name_limits(c):
    c.start_brokers(1)
    legal = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
    c.request(CreateTopicsRequest([
        CreatableTopic("n" * 249, topic_id("long"), 1, 1),  # the longest name allowed
        CreatableTopic(legal, topic_id("legal"), 1, 1),  # every legal character at once
    ]))


def create_topics_refusals_one_cause_each(c):
    c.start_brokers(1)
    c.request(CreateTopicsRequest([
        CreatableTopic("zero", ZERO_UUID, 1, 1),  # only its id is wrong
        CreatableTopic("both", topic_id("both"), 1, -1, [ReplicaAssignment(0, [1])]),  # a count and assignments
        CreatableTopic("twice", topic_id("twice"), -1, -1, [ReplicaAssignment(0, [1]), ReplicaAssignment(0, [1])]),
        CreatableTopic("a", topic_id("same"), 1, 1),
        CreatableTopic("b", topic_id("same"), 1, 1),  # the id of the topic before it, in the same request
    ]))


def refusals_reached_by_no_other_trace(c):
    c.start_brokers(1, 2, 3)
    a_topic_on(c, (1,))
    c.request(CreateTopicsRequest([
        CreatableTopic("u", topic_id("t"), 1, 1),  # the id of an existing topic
        CreatableTopic("v", topic_id("v"), 0, 1),  # no partitions
    ]))
    c.reassign("t", [2, 3])  # 2 and 3 join, 1 leaves
    c.alter_isr(1, "t", [1, 2])  # 2 in sync, 3 not yet
    c.heartbeat(1, want_fence=True)  # 1 fenced: the ISR is [2], adding replicas only
    c.reassign("t", None)  # cancelling would leave no replica in sync
    c.delete_topics("t", commit=False)
    c.delete_topics("t")  # committed, but removed by an uncommitted record


def reassignment_listed_through_snapshot_delete_and_failover(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1,))
    c.reassign("t", [1, 2])  # 2 joins, nobody leaves
    c.list_reassignments()
    c.snapshot()
    c.failover()  # on disk, the new controller reads it back from the snapshot
    c.list_reassignments()
    c.delete_topics("t", commit=False)
    c.list_reassignments()  # the committed state still has it
    c.failover()  # the deletion is undone
    c.list_reassignments()


def listing_skips_topics_created_uncommitted(c):
    c.start_brokers(1, 2)
    a_topic_on(c, (1,))
    c.reassign("t", [1, 2])
    c.create_topic("u", [[1], [1]], commit=False)  # partitions with no committed image yet
    c.list_reassignments()


def topic_created_uncommitted_then_failover(c):
    c.start_brokers(1)
    c.create_topic("t", [[1]], commit=False)
    c.failover()  # the topic is gone, and its id is free again
    c.create_topic("t", [[1]])


def committed_topics_in_name_order(c):
    c.start_brokers(1)
    c.request(CreateTopicsRequest([  # ids in the other order than names
        CreatableTopic("a", UUID(int=2), -1, -1, [ReplicaAssignment(0, [1])]),
        CreatableTopic("b", UUID(int=1), -1, -1, [ReplicaAssignment(0, [1])]),
    ]))


def reassignments_listed_in_partition_order(c):
    # one topic: Kafka lists several reassigning topics in an order that differs from one run of its
    # controller to the next (seen 2026-12-07, Kafka 4.4.0), and a topic's partitions in order
    c.start_brokers(1, 2, 3)
    c.request(CreateTopicsRequest([  # with this id, a set of the reassigning (topic id, partition)
        # pairs holds a-1 before a-0
        CreatableTopic("a", UUID(int=3), -1, -1, [ReplicaAssignment(0, [1]), ReplicaAssignment(1, [1])]),
    ]))
    c.reassign("a", [1, 3], index=0)  # a-0's replicas sort after a-1's
    c.reassign("a", [1, 2], index=1)
    c.list_reassignments()


def listing_some_topics_skips_the_others(c):
    two_topics_reassigning(c)
    c.list_reassignments([ListedTopic("a", [0]), ListedTopic("t", [0])])  # a does not exist, b is not asked for


def no_finalized_features(c):
    c.register(1, features=())
    c.heartbeat(1)


SWEEP_WITNESSES = {
    registration_offset_minus_two: (None, [("impl/registration.py:handle_broker_registration:14", "1 -> 2")]),
    registration_feature_below_zero: (None, [(
        "impl/registration.py:handle_broker_registration:18",
        "f.min_supported_version < 0 or f.min_supported_version > f.max_supported_version -> "
        "f.min_supported_version < 0 and f.min_supported_version > f.max_supported_version")]),
    registration_retry_is_contact: (None, [("impl/registration.py:_retried:1", "controller.leases.touch(broker_id, controller.now_ms).released = False -> pass")]),
    heartbeat_offset_zero: (None, [("impl/heartbeat.py:handle_broker_heartbeat:20", "offset < 0 -> offset <= 0"),
                                   ("impl/heartbeat.py:handle_broker_heartbeat:22", "0 -> 1")]),
    alter_isr_after_a_completed_reassignment: (None, [("impl/alter_isr.py:handle_alter_isr:36", "continue -> break")]),
    another_cluster_and_session: (Config(cluster_id="AnotherClusterIdAAAAAA", session_timeout_ms=9_000),
                                  [("impl/controller.py:Controller.__init__:1", "config or ControllerConfig() -> config and ControllerConfig()")]),
    alter_isr_leader_epoch_ahead: (None, [("impl/alter_isr.py:_alter_partition:18", "return Error.NOT_CONTROLLER -> return None")]),
    alter_isr_names_a_broker_outside_the_replicas: (None, [(
        "impl/alter_isr.py:_alter_partition:40", "return Error.INVALID_REQUEST -> return None")]),
    create_topics_at_the_name_limits: (None, [
        ("impl/topics.py:create_topic:6", "0 < len(name) <= MAX_TOPIC_NAME -> 0 < len(name) < MAX_TOPIC_NAME"),
        ("impl/topics.py:create_topic:10", "set(name) <= _LEGAL_NAME_CHARS -> set(name) < _LEGAL_NAME_CHARS")]),
    create_topics_refusals_one_cause_each: (None, [
        ("impl/topics.py:create_topic:21", "topic.topic_id == ZERO_UUID or topic.topic_id in replication.topics or topic.topic_id in taken -> "
                                      "topic.topic_id == ZERO_UUID and topic.topic_id in replication.topics and (topic.topic_id in taken)"),
        ("impl/topics.py:create_topic:27", "topic.num_partitions != -1 or topic.replication_factor != -1 -> "
                                      "topic.num_partitions != -1 and topic.replication_factor != -1"),
        ("impl/topics.py:create_topic:38", "len(by_index) != len(topic.assignments) or sorted(by_index) != list(range(len(by_index))) -> "
                                      "len(by_index) != len(topic.assignments) and sorted(by_index) != list(range(len(by_index)))"),
        ("impl/topics.py:handle_create_topics:25", "taken.add(topic.topic_id) -> pass")]),
    refusals_reached_by_no_other_trace: (None, [
        ("model/topics.py:create_topic:13", "return (Error.INVALID_REQUEST, []) -> return None"),
        ("model/topics.py:placement_error:4", "return Error.INVALID_PARTITIONS -> return None"),
        ("model/topics.py:topic_to_delete:9", "return (Error.UNKNOWN_TOPIC_ID, committed.topic_id) -> return None"),
        ("model/reassignment.py:cancel_reassignment:6", "return (Error.INVALID_REPLICA_ASSIGNMENT, None) -> return None"),
        ("impl/topics.py:create_topic:25", "return (Error.INVALID_REQUEST, []) -> return None"),
        ("impl/topics.py:create_topic:58", "return (Error.INVALID_PARTITIONS, []) -> return None"),
        ("impl/topics.py:handle_delete_topics:18",
         "results.append(result(name=name, topic_id=committed_id, error_code=Error.UNKNOWN_TOPIC_ID)) -> pass"),
        ("impl/reassignment.py:cancel_reassignment:8", "return Error.INVALID_REPLICA_ASSIGNMENT -> return None")]),
    reassignment_listed_through_snapshot_delete_and_failover: (None, [
        ("impl/replication.py:ReplicationControl._index:7", "if partition.reassigning: ... -> if not partition.reassigning: ..."),
        ("impl/replication.py:ReplicationControl._index:8", "self.reassigning.add(partition) -> pass"),
        ("impl/replication.py:ReplicationControl._assign:30", "removing or adding -> removing and adding"),
        ("impl/replication.py:ReplicationControl.committed_partitions:17", "key[0] == 'topic' -> key[0] != 'topic'"),
        ("impl/replication.py:ReplicationControl.committed_partitions:18", "0 -> 1")]),
    listing_skips_topics_created_uncommitted: (None, [
        ("impl/replication.py:ReplicationControl.committed_partitions:27", "continue -> break")]),
    topic_created_uncommitted_then_failover: (None, [("impl/replication.py:ReplicationControl.restore:9", "del self.topics[topic_id] -> pass")]),
    committed_topics_in_name_order: (None, [("impl/replication.py:ReplicationControl._all_committed_partitions:5", "topics.sort() -> pass")]),
    reassignments_listed_in_partition_order: (None, [
        ("impl/replication.py:ReplicationControl.committed_partitions:38", "result.sort(key=lambda item: (item[0], item[2])) -> pass"),
        ("impl/replication.py:ReplicationControl.committed_partitions:40", "2 -> 3")]),
    listing_some_topics_skips_the_others: (None, [
        ("model/reassignment.py:handle_list_partition_reassignments:10", "continue -> break")]),
    no_finalized_features: (Config(finalized_features=()), [("impl/controller.py:Controller.__init__:17", "0 -> 1"),
                                                            ("impl/controller.py:Controller.__init__:16", "self.committed_offset = 0 -> pass")]),
}
"""scenario: (its cluster's configuration, or None for the default; the sweep mutants it kills, by
id (file:function:index) and change)"""


def sweep_witness(scenario) -> Trace:
    config, _ = SWEEP_WITNESSES[scenario]
    c = Scenario(config)
    scenario(c)
    return c.trace(scenario.__name__.replace("_", "-"))


@pytest.mark.parametrize("scenario", list(SWEEP_WITNESSES), ids=lambda s: s.__name__)
def test_sweep_survivors_are_killed_by_their_corpus_witness(scenario):
    """The witness replays exactly on impl; under each mutant it names, in memory or on disk, it does not;
    and the corpus holds it."""
    from kraftspec.conformance import mutation_sweep as ms

    trace = sweep_witness(scenario)
    for package in ("impl", "model"):
        assert ms.run_corpus([("witness", trace)], package) is None, f"unmutated {package} must replay the witness exactly"
    named = SWEEP_WITNESSES[scenario][1]
    by_id = {m.id: m for m in ms.generate({mutant_id.split(":", 1)[0] for mutant_id, _ in named})}
    for mutant_id, change in named:
        mutant = by_id.get(mutant_id)
        assert mutant is not None and mutant.change == change, f"{mutant_id} is no longer {change}"
        with ms.applied(mutant):
            assert ms.run_corpus([("witness", trace)], mutant.package) is not None, f"{mutant.describe()} survives its witness"
    assert any(t.steps == trace.steps for _, t in corpus_traces(CORPUS)[0]), (
        f"{scenario.__name__} is not in {CORPUS}: add it with write_to_corpus")


def test_sweep_mutant_meets_impls_cache_empty():
    """A mutant of the function that fills impl's shared broker lists is killed even after earlier
    runs filled them (the sweep runs every mutant in a long-lived worker)."""
    from kraftspec.conformance import mutation_sweep as ms

    traces, _, _, _ = corpus_traces(CORPUS)
    assert ms.run_corpus(traces, "impl") is None  # fills the cache with every list the corpus uses
    [m] = [m for m in ms.mutants_of("impl/replication.py", ms.source_of("impl/replication.py"))
           if m.qualname == "shared" and m.change.startswith("if found is not None:")]
    outcome = ms.check_mutant(m, ms.source_of(m.path), traces, 1, 120, stateful=False)
    assert outcome.corpus == "killed", outcome


def test_sweep_corpus_check_of_the_model_compares_the_rules_fired():
    """As CI's corpus test does, a model mutant that changes only which rules fire is killed."""
    from kraftspec.conformance import mutation_sweep as ms

    traces, _, _, _ = corpus_traces(CORPUS)
    assert ms.run_corpus(traces, "model") is None
    [m] = [m for m in ms.mutants_of("model/reassignment.py", ms.source_of("model/reassignment.py"))
           if m.qualname == "start_reassignment" and m.change.startswith("if partition.is_reassigning:")]
    with ms.applied(m):  # the branch only names REASSIGN-9
        where, what = ms.run_corpus(traces, "model")
    assert "recorded again differs" in what, what


def test_sweep_records_the_lines_that_fill_impls_cache_as_reached():
    from kraftspec.conformance import mutation_sweep as ms

    traces, _, _, _ = corpus_traces(CORPUS)
    assert ms.run_corpus(traces, "impl") is None  # fills the cache, as the sweep's unmutated runs do
    reached = ms.reached_lines(["impl/replication.py"], traces, 1, stateful=False)["impl/replication.py"]
    source = ms.source_of("impl/replication.py").splitlines()
    store = next(n for n, line in enumerate(source, 1) if line.strip() == "_BROKER_LISTS[brokers] = brokers")
    assert store in reached
