"""Exhaustive enumeration (conformance.exhaustive): small scopes finish, the search does not depend on
how a level is split, the deduplication key merges only states that answer alike, every enumerated
state keeps every invariant, and the traces of the BFS tree's leaves replay cleanly against impl."""

from __future__ import annotations

import multiprocessing
import pickle
from functools import lru_cache, partial

import pytest

from kraftspec.conformance import exhaustive
from kraftspec.conformance.adapters import ImplAdapter
from kraftspec.conformance.exhaustive import (
    Node,
    Scope,
    alphabet,
    describe,
    differences,
    event_for,
    expand,
    fingerprint,
    frontier,
    leaf_paths,
    main,
    setup,
    state_at,
    state_key,
    trace_of,
    traces,
)
from kraftspec.conformance.replay import replay
from kraftspec.model import step
from kraftspec.model.records import FenceBrokerRecord

WARM = Scope()  # 3 brokers, 2 partitions, 2 generations, every broker active and the topic created
COLD = Scope(warm=False)
TINY = Scope(brokers=1, partitions=1, generations=1)


@lru_cache(maxsize=None)
def explored(scope: Scope, depth: int):
    """One enumeration per scope and depth, shared by the tests (the search is deterministic)."""
    return frontier(scope, depth, keep_merges=120)


def path_of(scope: Scope, *descriptions: str) -> tuple[int, ...]:
    names = [describe(a) for a in alphabet(scope)]
    return tuple(names.index(d) for d in descriptions)


def described(scope: Scope, path: tuple[int, ...]) -> list[str]:
    return [describe(alphabet(scope)[i]) for i in path]


def key_after(scope: Scope, *descriptions: str) -> tuple:
    return state_key(state_at(scope, path_of(scope, *descriptions)))


# ---- the search ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scope", "depth"), [(TINY, 4), (COLD, 4), (WARM, 3)], ids=["tiny", "cold", "warm"])
def test_small_scopes_finish_with_every_level_counted(scope, depth):
    exploration = explored(scope, depth)
    assert exploration.depth_reached == depth  # offsets grow with every write: no scope runs dry
    assert [level.depth for level in exploration.levels] == list(range(depth + 1))
    by_length = [sum(1 for p in exploration.paths.values() if len(p) == d) for d in range(depth + 1)]
    assert by_length == [level.states for level in exploration.levels]
    assert exploration.states == len(set(exploration.paths.values()))
    assert exploration.transitions >= exploration.states - 1


def test_every_path_leads_to_the_state_it_names():
    exploration = explored(TINY, 4)
    for fp, path in exploration.paths.items():
        assert fingerprint(state_key(state_at(TINY, path))) == fp


def test_the_search_does_not_depend_on_how_a_level_is_split():
    """expand is pure and picklable: processes (or Spark executors) give the same tree as one loop."""
    alone = explored(WARM, 2)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        spread = frontier(WARM, 2, mapper=partial(pool.imap, chunksize=3))
    assert spread.paths == alone.paths
    assert [(lv.states, lv.transitions) for lv in spread.levels] == [(lv.states, lv.transitions) for lv in alone.levels]
    expand_one = pickle.loads(pickle.dumps(partial(expand, WARM)))
    node = pickle.loads(pickle.dumps(Node(fingerprint(state_key(setup(WARM)[1])), ())))
    assert expand_one(node) == expand(WARM, node)


def test_the_alphabet_is_finite_and_applies_where_it_should():
    actions = alphabet(WARM)
    assert len(actions) == len(set(actions)) == 47
    root = setup(WARM)[1]
    assert event_for(WARM, root, ("create",)) is None  # the topic exists
    assert event_for(WARM, root, ("commit",)) is None  # nothing to commit
    assert event_for(WARM, root, ("cancel", 0)) is None  # nothing reassigning
    assert event_for(WARM, root, ("alter-isr", 0, "drop", 0)) is None  # the leader cannot drop itself
    request = event_for(WARM, root, ("alter-isr", 0, "drop", 1))
    assert (request.broker_id, request.topics[0].partitions[0].new_isr) == (0, (0,))
    assert event_for(COLD, setup(COLD)[1], ("heartbeat", 0, False, False)) is None  # not registered


# ---- the key ---------------------------------------------------------------------------------------------


def test_the_key_merges_states_that_differ_only_in_what_cannot_matter():
    root = state_key(setup(WARM)[1])
    assert key_after(WARM, "list") == root  # the sequence counter
    assert key_after(WARM, "stale-heartbeat 0") == root  # refused and answered at once
    assert key_after(WARM, "snapshot") == root  # the log before the committed offset
    timeout = WARM.config.session_timeout_ms
    assert key_after(WARM, f"tick +{timeout}", f"tick +{timeout}") == key_after(WARM, f"tick +{timeout}")  # lapsed is lapsed
    waiting = key_after(WARM, "heartbeat 0 WantFence")
    assert key_after(WARM, "heartbeat 0 WantFence", "list") == waiting  # numbering of the waiting responses
    refused = [key_after(WARM, "heartbeat 0 WantFence", f"stale-heartbeat {b}") for b in (1, 2)]
    assert refused[0] == refused[1]  # what a refused request asked for, beyond its api and version


def test_the_key_keeps_apart_states_that_can_answer_differently():
    root = state_key(setup(WARM)[1])
    assert key_after(WARM, "tick +1") != root  # every lease one millisecond older
    assert key_after(WARM, "tick +1", "heartbeat 0") != key_after(WARM, "heartbeat 0", "tick +1")  # whose lease lapses first
    one_way = key_after(WARM, "heartbeat 0 WantFence", "heartbeat 1 WantFence")
    assert one_way != key_after(WARM, "heartbeat 1 WantFence", "heartbeat 0 WantFence")  # the records, in another order


@pytest.mark.parametrize(("scope", "depth"), [(WARM, 3), (COLD, 4), (TINY, 4)], ids=["warm", "cold", "tiny"])
def test_merged_states_answer_every_event_alike(scope, depth):
    """Random pairs of states the key merged: the same outputs for every alphabet event, and
    successors that the key merges again."""
    exploration = explored(scope, depth)
    assert len(exploration.merges) == 120
    for kept, merged in exploration.merges:
        found = differences(scope, kept, merged)
        assert not found, f"{described(scope, kept)} and {described(scope, merged)}: {found}"


def without_waiting_responses(state) -> tuple:
    return state_key(state)[:5]


def without_lease_ages(state) -> tuple:
    key = state_key(state)
    return (*key[:4], tuple((b, *rest) for b, _, *rest in key[4]), key[5])


@pytest.mark.parametrize("coarse", [without_waiting_responses, without_lease_ages])
def test_a_key_that_forgets_something_is_caught(coarse):
    """The check of merged pairs can fail: a key that forgets something that matters merges
    states that answer some event differently."""
    exploration = frontier(WARM, 3, key=coarse, check=False, keep_merges=400)
    assert any(differences(WARM, kept, merged, key=coarse) for kept, merged in exploration.merges)


# ---- invariants and traces ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scope", "depth"), [(WARM, 3), (COLD, 4), (TINY, 4)], ids=["warm", "cold", "tiny"])
def test_every_enumerated_state_keeps_every_invariant(scope, depth):
    assert explored(scope, depth).violations == ()


def test_a_broken_invariant_is_reported_with_its_path(monkeypatch):
    def nobody_fenced(before, event, result):
        fenced = [r.broker_id for b in result.batches for r in b.records if isinstance(r, FenceBrokerRecord)]
        return [f"broker {b} fenced" for b in fenced]

    monkeypatch.setattr(exhaustive, "violations", nobody_fenced)
    exploration = frontier(Scope(brokers=2, partitions=1, generations=1), 2)
    assert exploration.violations
    for path, broken in exploration.violations:
        b = int(broken[0].split()[1])
        assert state_at(exploration.scope, path).image.brokers[b].fenced


def test_leaf_traces_pass_through_every_state():
    exploration = explored(WARM, 3)
    leaves = leaf_paths(exploration)
    on_the_way = {path[:n] for path in leaves for n in range(len(path) + 1)}
    assert on_the_way == set(exploration.paths.values())
    assert len(leaves) < exploration.states


REUSED_ID = Scope(brokers=2, partitions=2, reuse_topic_id=True)


@pytest.mark.parametrize(("scope", "depth"), [(WARM, 2), (COLD, 3), (REUSED_ID, 2)], ids=["warm", "cold", "reused id"])
def test_leaf_traces_replay_cleanly_against_impl(scope, depth):
    exploration = frontier(scope, depth, check=False)
    count = 0
    for trace in traces(exploration):
        verdict = replay(trace, ImplAdapter(), "records")
        assert verdict.passed, verdict.report()
        count += 1
    assert count == len(leaf_paths(exploration))


def test_a_trace_is_the_setup_then_the_path():
    path = path_of(WARM, "heartbeat 1 WantShutDown", "commit")
    trace = trace_of(WARM, path)
    assert len(trace.steps) == len(setup(WARM)[0]) + 2
    assert trace.header.generator["params"]["path"] == ["heartbeat 1 WantShutDown", "commit"]
    assert trace.steps[-2].event["body"]["WantShutDown"] is True
    assert "SHUT-1" in trace.steps[-2].rules


def test_a_step_of_the_path_is_the_models_step():
    state = setup(WARM)[1]
    path = path_of(WARM, "reassign 0 to [1, 2]", "alter-isr 0 add 2", "commit")
    for index in path:
        state = step(state, event_for(WARM, state, alphabet(WARM)[index])).state
    assert state_key(state) == state_key(state_at(WARM, path))
    partition = next(p for p in state.committed_image.partitions.values() if p.partition_id == 0)
    assert partition.replicas == (1, 2) and not partition.is_reassigning  # REASSIGN-6 completed it


# ---- the command ---------------------------------------------------------------------------------------------


def test_the_command_prints_the_figures_and_writes_the_traces(capsys, tmp_path):
    assert main(["--brokers", "1", "--partitions", "1", "--generations", "1", "--depth", "2", "--traces", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    exploration = explored(TINY, 2)
    assert f"{exploration.states} states, {exploration.transitions} transitions, depth reached 2" in out
    assert len(list(tmp_path.glob("*.jsonl"))) == len(leaf_paths(exploration))


@pytest.mark.parametrize(("option", "value"), [("--brokers", "4"), ("--partitions", "0"), ("--depth", "-1"), ("--workers", "0")])
def test_the_command_names_a_bad_option(capsys, option, value):
    with pytest.raises(SystemExit) as exit:
        main([option, value])
    assert exit.value.code == 2
    assert option in capsys.readouterr().err
