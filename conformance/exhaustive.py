"""Exhaustive enumeration: every state of a small scope that the model reaches within a bounded
number of events, each checked against every invariant, with a trace to reach it.

**The scope** (:class:`Scope`): broker ids ``0 .. brokers-1`` (up to 3), one topic ``t`` of up to 2
partitions with a fixed explicit assignment (partition ``i`` on brokers ``i`` and ``i+1``), up to 2
incarnations (generations) per broker id, and
a choice of start: *warm* (every broker registered and active and the topic created, all committed)
or *cold* (the freshly formatted cluster; the topic is created, if at all, by an event).

**The alphabet** (:func:`alphabet`) is finite. Each action is a small tuple, turned into the model's
event by :func:`event_for` from the state it applies to (current epochs, the committed offset,
the partition's epochs); an action that does not apply in a state is skipped there:

* ``("register", b, g)``: broker ``b``'s process of generation ``g`` registers (a retry, an
  impostor or a restart, depending on the state);
* ``("heartbeat", b, want_fence, want_shut_down)`` for (F, F), (T, F), (F, T): a registered broker
  with its current epoch, caught up to the committed offset;
* ``("stale-heartbeat", b)``: a registered broker's heartbeat with an epoch one below its own;
* ``("unregister", b)``, any id;
* ``("alter-isr", p, "add" | "drop", b)``: partition ``p``'s leader adds replica ``b`` to the ISR
  or drops follower ``b`` from it, with its current epochs (the partition must have a leader);
* ``("reassign", p, target)`` for two fixed targets per partition (one that moves a replica,
  one that shrinks to the first replica), and ``("cancel", p)`` while ``p`` is reassigning;
* ``("create",)`` the topic while it does not exist, with a new topic id each time as a
  controller's random id would be (``reuse_topic_id`` gives it the same id every time, which
  TOPIC-2 allows once the old topic is gone); ``("delete",)`` while it does; ``("list",)``
  reassignments;
* ``("commit",)`` everything, while something is uncommitted; ``("tick", 1)`` and
  ``("tick", session timeout)``; ``("failover",)``; ``("snapshot",)``.

Whether an action applies depends only on what the key below keeps, so that merged states offer
the same events.

**Deduplication.** Two states are merged when their :func:`state_key` is equal. Behaving alike
means: for every sequence of events, the same outputs (records, replies, committed state, the
neutral form of traces), up to an order-preserving renaming of sequence numbers. The key keeps
everything that behaviour can depend on, and drops only what cannot matter:

* kept: the committed offset and the log end offset; the committed image (the replay of every
  committed record, which is all a commit, a failover or a snapshot reads of the committed log);
  the uncommitted batches with their offsets (what a commit, partial or whole, will apply and
  release, and what a failover drops); each lease as (age, reported offset, in controlled
  shutdown, shutdown granted); the waiting responses in arrival order, each with its release
  offset, its request's api and version, the response it will be released with and the one a
  failover would give it (RPC-3).
* dropped: **absolute time**. Only ``now - last_contact`` matters (deadlines and REG-4 compare
  ``now`` with ``last_contact + session timeout``; ticks in the alphabet are relative), and it is
  clamped at the session timeout: every comparison is ``age >= timeout``, which stays true as time
  passes, and the one ordering by deadline (DEC-25, several leases lapsing at one tick) only
  concerns unfenced brokers, whose age is always below the timeout between events (INV-10).
* dropped: **the sequence numbers**, the counter and those of the waiting responses. The model
  reads them only to label replies. Waiting responses are released in arrival order, which is the
  order of their numbers, and every later request is numbered above all of them; so states that
  differ only in numbering answer alike once numbers are renamed in order (:func:`outputs` names
  a waiting response by its place in the queue). The rest of a waiting request is never read
  again: a reply shows the request's api and version only, and so does a failover's refusal.
* dropped: **the log before the committed offset and the snapshot**. A commit replays only the
  uncommitted batches onto the committed image; a failover rebuilds from snapshot and committed
  records, which give the committed image (INV-8); a snapshot is taken of the committed image at
  the committed offset; the log start offset shows nowhere but in the log end offset of an empty
  log, which the key keeps. So two states with the same committed image and offsets behave alike
  whatever history led there; a snapshot is therefore a self-loop of the enumeration.
* dropped: the in-memory image, which is the committed image with the uncommitted records
  replayed (INV-16), and the configuration, which the scope fixes.

INV-8 and INV-16 are checked on every enumerated state, so the argument holds where it is used;
:func:`differences` checks it on pairs of merged states, one event deep. The key is sound for any
event, not only the alphabet's (a key that replaced the uncommitted batches by the in-memory
image would be sound only while every commit is of the whole log; it merges about 6% more at
depth 4 and is not used). Offsets are kept absolute: they appear in records and responses (broker
epochs are offsets), so states that differ only by a shift of offsets are not merged. As every
write appends records, the reachable space is infinite and the depth bound ends the enumeration.

**Fingerprints.** The key is a tuple of frozen objects; its :func:`fingerprint` (BLAKE2b-128 of
its canonical ``repr``, stable across processes and machines, unlike ``hash``) is what the
driver stores and what a distributed run shuffles on.

**The driver.** :func:`frontier` is a breadth-first search by depth. A :class:`Node` is a
fingerprint and the shortest path (indexes into the alphabet) reaching it; :func:`expand` is pure
(the state is replayed from the path; a per-process memo of the last path makes siblings cheap)
and picklable as ``functools.partial(expand, scope)``, so a level can be spread over processes
(the ``mapper`` argument, ``--workers``) or over Spark executors (issue 6): ``flatMap(expand)``,
``reduceByKey`` keeping the smallest path, ``subtractByKey`` the fingerprints already seen. Among
paths reaching the same new state at one depth the lexicographically smallest is kept, so the
result does not depend on how a level was split.

**Traces.** One trace per leaf of the BFS tree (:func:`leaf_paths`, :func:`traces`): the tree's
parent of a state is the state its shortest path passes through last, so the root-to-leaf paths
pass through every enumerated state and every one of their events is a step some trace checks,
while no interior path is written twice. (Writing a trace per state would repeat every interior
prefix; the leaves are most of the states at these branching factors, so the saving is in steps,
not files.) Each trace is made by :func:`generate.record` and replays against any implementation.

Run ``python -m kraftspec.conformance.exhaustive --brokers 3 --partitions 2 --depth 6`` for the
figures of a scope; ``--traces DIR`` writes the leaf traces.
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import random
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache, partial
from multiprocessing import Pool
from typing import Any
from uuid import UUID

from attrs import field, frozen

from kraftspec.model import Commit, Config, Failover, TakeSnapshot, Tick, initial_state, step
from kraftspec.model.controller import StepResult
from kraftspec.model.errors import Error
from kraftspec.model.events import Event
from kraftspec.model.invariants import violations
from kraftspec.model.messages import (
    AlterIsrPartition,
    AlterIsrRequest,
    AlterIsrTopic,
    AlterPartitionReassignmentsRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    CreatableTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    ListPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
    ReplicaAssignment,
    UnregisterBrokerRequest,
    error_response,
)
from kraftspec.model.state import ControllerState, MetadataImage

from .adapters import outputs_of
from .generate import record
from .simulation import features_of
from .trace import Trace

GENERATOR_VERSION = 1
TOPIC = "t"
REUSED_TOPIC_ID = UUID(int=0x74)
MAX_BROKERS = 3
MAX_PARTITIONS = 2
MAX_GENERATIONS = 2

Action = tuple
"""An action of the alphabet: its kind and arguments, e.g. ``("heartbeat", 1, False, True)``."""

Path = tuple[int, ...]
"""Indexes into the scope's alphabet, from the root state."""


def _within(name: str, high: int):
    def check(instance, attribute, value) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
            raise ValueError(f"{name} must be an integer from 1 to {high}, got {value!r}")

    return check


@frozen
class Scope:
    """What is enumerated: broker ids ``0 .. brokers-1``, a topic of ``partitions`` partitions,
    ``generations`` incarnations per broker id, a warm or cold start, the controller's config."""

    brokers: int = field(default=3, validator=_within("brokers", MAX_BROKERS))
    partitions: int = field(default=2, validator=_within("partitions", MAX_PARTITIONS))
    generations: int = field(default=2, validator=_within("generations", MAX_GENERATIONS))
    warm: bool = True
    reuse_topic_id: bool = False
    config: Config = field(factory=Config)

    def assignment(self) -> tuple[tuple[int, ...], ...]:
        """The topic's replicas: partition ``i`` on brokers ``i`` and ``i+1`` (modulo the brokers)."""
        width = min(2, self.brokers)
        return tuple(tuple((i + j) % self.brokers for j in range(width)) for i in range(self.partitions))

    def targets(self, partition: int) -> tuple[tuple[int, ...], ...]:
        """Two reassignment targets: every replica moved to the next broker id, and the first replica alone."""
        replicas = self.assignment()[partition]
        moved = tuple((r + 1) % self.brokers for r in replicas)
        return tuple(dict.fromkeys([moved, replicas[:1]]))

    def params(self) -> dict[str, Any]:
        params = {"brokers": self.brokers, "partitions": self.partitions, "generations": self.generations, "warm": self.warm}
        return {**params, "reuse_topic_id": True} if self.reuse_topic_id else params


# ---- the alphabet ------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def alphabet(scope: Scope) -> tuple[Action, ...]:
    """Every action of the scope, in a fixed order (paths index into it)."""
    brokers = range(scope.brokers)
    actions: list[Action] = []
    actions += [("register", b, g) for b in brokers for g in range(scope.generations)]
    actions += [("heartbeat", b, fence, shut) for b in brokers for fence, shut in ((False, False), (True, False), (False, True))]
    actions += [("stale-heartbeat", b) for b in brokers]
    actions += [("unregister", b) for b in brokers]
    actions += [("alter-isr", p, change, b) for p in range(scope.partitions) for change in ("add", "drop") for b in brokers]
    actions += [("reassign", p, target) for p in range(scope.partitions) for target in scope.targets(p)]
    actions += [("cancel", p) for p in range(scope.partitions)]
    actions += [("create",), ("delete",), ("list",), ("commit",)]
    actions += [("tick", 1), ("tick", scope.config.session_timeout_ms), ("failover",), ("snapshot",)]
    return tuple(actions)


def describe(action: Action) -> str:
    """An action in words: ``heartbeat 1 WantShutDown``."""
    kind, *args = action
    if kind == "heartbeat":
        b, fence, shut = args
        return f"heartbeat {b}" + (" WantFence" if fence else "") + (" WantShutDown" if shut else "")
    if kind == "reassign":
        return f"reassign {args[0]} to {list(args[1])}"
    if kind == "tick":
        return f"tick +{args[0]}"
    return " ".join(str(a) for a in [kind, *args])


def incarnation(broker_id: int, generation: int) -> UUID:
    """Broker ``broker_id``'s process of ``generation``: 0...0<id><generation + 1>."""
    return UUID(int=(broker_id << 8) + generation + 1)


def event_for(scope: Scope, state: ControllerState, action: Action) -> Event | None:
    """The model event ``action`` stands for in ``state``, or None where it does not apply."""
    kind, *args = action
    image = state.image
    if kind == "register":
        b, generation = args
        return BrokerRegistrationRequest(b, state.config.cluster_id, incarnation(b, generation), features=features_of(state.config))
    if kind in ("heartbeat", "stale-heartbeat"):
        b = args[0]
        if b not in image.brokers:
            return None
        if kind == "stale-heartbeat":
            return BrokerHeartbeatRequest(b, image.brokers[b].epoch - 1, state.committed_offset, False, False)
        return BrokerHeartbeatRequest(b, image.brokers[b].epoch, state.committed_offset, args[1], args[2])
    if kind == "unregister":
        return UnregisterBrokerRequest(args[0])
    if kind == "alter-isr":
        return _alter_isr(image, *args)
    if kind in ("reassign", "cancel"):
        partition = _partition(image, args[0])
        if partition is None or (kind == "cancel" and not partition.is_reassigning):
            return None
        target = args[1] if kind == "reassign" else None
        return AlterPartitionReassignmentsRequest([ReassignableTopic(TOPIC, [ReassignablePartition(args[0], target)])])
    if kind == "create":
        if image.topic_named(TOPIC) is not None:
            return None
        assignments = [ReplicaAssignment(i, replicas) for i, replicas in enumerate(scope.assignment())]
        return CreateTopicsRequest([CreatableTopic(TOPIC, topic_id(scope, state), assignments=assignments)])
    if kind == "delete":
        return DeleteTopicsRequest([TOPIC]) if image.topic_named(TOPIC) is not None else None
    if kind == "list":
        return ListPartitionReassignmentsRequest(None)
    if kind == "commit":
        return Commit(state.log_end_offset) if state.committed_offset < state.log_end_offset else None
    if kind == "tick":
        return Tick(state.now_ms + args[0])
    if kind == "failover":
        return Failover()
    if kind == "snapshot":
        return TakeSnapshot()
    raise ValueError(f"not an action of the alphabet: {action!r}")


def topic_id(scope: Scope, state: ControllerState) -> UUID:
    """The id a creation of the topic gets: a new one each time, as a controller's random id would
    be (the offset its TopicRecord is written at); or always the same with ``reuse_topic_id``."""
    return REUSED_TOPIC_ID if scope.reuse_topic_id else UUID(int=(0x74 << 64) + state.log_end_offset)


def _partition(image: MetadataImage, index: int):
    topic = image.topic_named(TOPIC)
    return None if topic is None else image.partitions.get((topic.topic_id, index))


def _alter_isr(image: MetadataImage, index: int, change: str, broker_id: int) -> AlterIsrRequest | None:
    partition = _partition(image, index)
    if partition is None or partition.leader not in image.brokers:
        return None
    if change == "add" and broker_id in partition.replicas and broker_id not in partition.isr:
        isr = (*partition.isr, broker_id)
    elif change == "drop" and broker_id in partition.isr and broker_id != partition.leader:
        isr = tuple(b for b in partition.isr if b != broker_id)
    else:
        return None
    entry = AlterIsrPartition(index, partition.leader_epoch, isr, partition.partition_epoch)
    leader = partition.leader
    return AlterIsrRequest(leader, image.brokers[leader].epoch, [AlterIsrTopic(partition.topic_id, [entry])])


# ---- the root and the states along a path ------------------------------------------------------


@lru_cache(maxsize=None)
def setup(scope: Scope) -> tuple[tuple[Event, ...], ControllerState]:
    """The events before the enumeration starts, and the root state they lead to. A warm start
    registers every broker, commits, heartbeats each one active, commits, creates the topic and
    commits; a cold start is the freshly formatted cluster."""
    state = initial_state(scope.config)
    events: list[Event] = []

    def send(event: Event) -> None:
        nonlocal state
        result = step(state, event)
        broken = violations(state, event, result)
        if broken:
            raise AssertionError(f"the scope's setup breaks invariants at {event!r}: {broken}")
        events.append(event)
        state = result.state

    def act(action: Action) -> None:
        event = event_for(scope, state, action)
        if event is None:
            raise AssertionError(f"the scope's setup takes {describe(action)}, which does not apply to the state the setup reached")
        send(event)

    if scope.warm:
        for b in range(scope.brokers):
            act(("register", b, 0))
        send(Commit(state.log_end_offset))
        for b in range(scope.brokers):
            act(("heartbeat", b, False, False))
        send(Commit(state.log_end_offset))
        act(("create",))
        send(Commit(state.log_end_offset))
    return tuple(events), state


_memo: dict[Scope, tuple[Path, list[ControllerState]]] = {}


def state_at(scope: Scope, path: Path) -> ControllerState:
    """The state ``path`` leads to from the root. Remembers the states along the last path asked
    for (one per process), so that expanding siblings in path order replays one event each."""
    actions = alphabet(scope)
    last, states = _memo.get(scope, ((), [setup(scope)[1]]))
    common = 0
    while common < min(len(last), len(path)) and last[common] == path[common]:
        common += 1
    states = states[: common + 1]
    for n in range(common, len(path)):
        event = event_for(scope, states[-1], actions[path[n]])
        if event is None:
            raise ValueError(f"{describe(actions[path[n]])} does not apply after {[describe(actions[i]) for i in path[:n]]}")
        states.append(step(states[-1], event).state)
    _memo[scope] = (path, states)
    return states[-1]


def events_of(scope: Scope, path: Path) -> list[Event]:
    """The model events of ``path``, after the scope's setup events."""
    actions = alphabet(scope)
    events, state = setup(scope)
    out = list(events)
    for index in path:
        event = event_for(scope, state, actions[index])
        if event is None:
            raise ValueError(f"{describe(actions[index])} does not apply on this path")
        out.append(event)
        state = step(state, event).state
    return out


# ---- the key ---------------------------------------------------------------------------------------


def image_key(image: MetadataImage) -> tuple:
    """A metadata image as sorted tuples."""
    return (
        tuple(sorted(image.features.items())),
        tuple(sorted(image.brokers.items())),
        tuple(sorted(image.topics.items())),
        tuple(sorted(image.partitions.items())),
    )


def state_key(state: ControllerState) -> tuple:
    """What of ``state`` its future behaviour depends on (the module's docstring says why)."""
    now, timeout = state.now_ms, state.config.session_timeout_ms
    # the time since contact matters up to the moment a lease lapses: the timeout, or one past it (DEC-7)
    lapse = timeout if state.config.params.lease_lapses == "at-deadline" else timeout + 1
    leases = tuple(
        (b, min(now - l.last_contact_ms, lapse), l.metadata_offset, l.in_controlled_shutdown, l.released, l.shutdown_offset)
        for b, l in sorted(state.leases.items())
    )
    waiting = tuple((p.release_offset, *_answers(p.request, p.response)) for p in state.pending)
    uncommitted = tuple((batch.base_offset, batch.records) for batch in state.uncommitted_batches())
    return (state.committed_offset, state.log_end_offset, image_key(state.committed_image), uncommitted, leases, waiting)


def _answers(request, response) -> tuple:
    """What a waiting response can still show: its api and version, and the response it is
    released with or the one a failover gives it (RPC-3)."""
    return (type(request).__name__, getattr(request, "version", 0), response, error_response(request, Error.NOT_CONTROLLER))


def fingerprint(key: tuple) -> bytes:
    """A key's 128-bit digest, the same in every process (``repr`` of frozen attrs classes, tuples,
    UUIDs and enums is canonical; ``hash`` of strings is salted per process)."""
    return hashlib.blake2b(repr(key).encode(), digest_size=16).digest()


def outputs(state: ControllerState, result: StepResult) -> dict[str, Any]:
    """What an observer sees of a step from ``state`` (the neutral form of traces), with sequence
    numbers renamed in order: a response that was waiting is named by its place among the waiting
    ones, the step's own request is ``"this"``. States the key merges give equal outputs."""
    seen = outputs_of(result)
    places = {p.seq: n for n, p in enumerate(state.pending)}

    def name(seq: int | None):
        return None if seq is None else places.get(seq, "this" if seq == result.seq else f"unknown {seq}")

    return {
        "seq": name(seen["seq"]),
        "records": seen["records"],
        "replies": [{**reply, "seq": name(reply["seq"])} for reply in seen["replies"]],
    }


def differences(scope: Scope, path: Path, other: Path, key: Callable[[ControllerState], tuple] = state_key) -> list[str]:
    """Where the states of two paths that ``key`` merges part: a different key, an alphabet event
    that applies to one only, different outputs, or successors with different keys. Empty for a
    sound key."""
    actions = alphabet(scope)
    first, second = state_at(scope, path), state_at(scope, other)
    if key(first) != key(second):
        return ["the keys differ"]
    found = []
    for action in actions:
        event, other_event = event_for(scope, first, action), event_for(scope, second, action)
        if (event is None) != (other_event is None):
            found.append(f"{describe(action)} applies to one state only")
            continue
        if event is None or other_event is None:  # neither applies (one alone is caught above)
            continue
        result, other_result = step(first, event), step(second, other_event)
        if outputs(first, result) != outputs(second, other_result):
            found.append(f"{describe(action)}: {outputs(first, result)} against {outputs(second, other_result)}")
        elif key(result.state) != key(other_result.state):
            found.append(f"{describe(action)} leads to states with different keys")
    return found


# ---- the search -------------------------------------------------------------------------------------


@frozen
class Node:
    """A state of the enumeration: its fingerprint and the shortest path that reaches it."""

    fingerprint: bytes
    path: Path


@frozen
class Successor:
    """One event from a node: the state it leads to, the path, and the invariants it broke."""

    fingerprint: bytes
    path: Path
    violations: tuple[str, ...] = ()


def expand(scope: Scope, node: Node, key: Callable[[ControllerState], tuple] = state_key, check: bool = True) -> list[Successor]:
    """Every event of the alphabet from ``node``'s state, in alphabet order. Pure: the same node
    gives the same successors in any process."""
    state = state_at(scope, node.path)
    successors = []
    for index, action in enumerate(alphabet(scope)):
        event = event_for(scope, state, action)
        if event is None:
            continue
        result = step(state, event)
        broken = tuple(violations(state, event, result)) if check else ()
        successors.append(Successor(fingerprint(key(result.state)), (*node.path, index), broken))
    return successors


@frozen
class Level:
    depth: int
    states: int  # states first reached at this depth
    transitions: int  # events handled from the states of the depth before
    seconds: float


@frozen
class Exploration:
    """What :func:`frontier` found."""

    scope: Scope
    bound: int
    levels: tuple[Level, ...]
    paths: dict[bytes, Path]  # every state's shortest path: the BFS tree
    violations: tuple[tuple[Path, tuple[str, ...]], ...]  # (path of the event, what it broke)
    merges: tuple[tuple[Path, Path], ...]  # a sample of (kept path, merged path) pairs

    @property
    def states(self) -> int:
        return len(self.paths)

    @property
    def transitions(self) -> int:
        return sum(level.transitions for level in self.levels)

    @property
    def depth_reached(self) -> int:
        """The deepest level with new states (the bound, unless the space was exhausted first)."""
        return max(level.depth for level in self.levels if level.states)

    @property
    def seconds(self) -> float:
        return sum(level.seconds for level in self.levels)


Mapper = Callable[[Callable[[Node], list[Successor]], Iterable[Node]], Iterable[list[Successor]]]


def frontier(
    scope: Scope,
    depth: int,
    mapper: Mapper = map,
    key: Callable[[ControllerState], tuple] = state_key,
    check: bool = True,
    keep_merges: int = 0,
    progress: Callable[[Level], None] | None = None,
) -> Exploration:
    """Breadth-first search from the scope's root to ``depth`` events.

    ``mapper(function, nodes)`` expands a level (``map``; ``Pool.imap`` to use processes; it must
    keep the order). ``check`` runs every invariant on every event. ``keep_merges`` keeps a
    sample of that many pairs of paths whose states the key merged, for checking the key.
    """
    if not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
    started = time.perf_counter()
    root = Node(fingerprint(key(setup(scope)[1])), ())
    paths: dict[bytes, Path] = {root.fingerprint: ()}
    levels = [Level(0, 1, 0, time.perf_counter() - started)]
    broken: list[tuple[Path, tuple[str, ...]]] = []
    merges: list[tuple[Path, Path]] = []
    merged = 0
    sampler = random.Random(0)
    nodes = [root]
    expand_one = partial(expand, scope, key=key, check=check)
    for d in range(1, depth + 1):
        started = time.perf_counter()
        fresh: list[Node] = []
        transitions = 0
        for successors in mapper(expand_one, nodes):
            for successor in successors:
                transitions += 1
                if successor.violations:
                    broken.append((successor.path, successor.violations))
                kept = paths.get(successor.fingerprint)
                if kept is None:
                    paths[successor.fingerprint] = successor.path
                    fresh.append(Node(successor.fingerprint, successor.path))
                elif keep_merges:
                    merged += 1  # reservoir sampling: every merge equally likely to be kept
                    if len(merges) < keep_merges:
                        merges.append((kept, successor.path))
                    elif (slot := sampler.randrange(merged)) < keep_merges:
                        merges[slot] = (kept, successor.path)
        level = Level(d, len(fresh), transitions, time.perf_counter() - started)
        levels.append(level)
        if progress is not None:
            progress(level)
        nodes = fresh
        if not nodes:
            break
    return Exploration(scope, depth, tuple(levels), paths, tuple(broken), tuple(merges))


# ---- traces --------------------------------------------------------------------------------------------


def leaf_paths(exploration: Exploration) -> list[Path]:
    """The paths of the BFS tree's leaves (states that are no other state's parent), in order."""
    paths = set(exploration.paths.values())
    parents = {path[:-1] for path in paths if path}
    return sorted(paths - parents)


def trace_of(scope: Scope, path: Path) -> Trace:
    """The trace of the setup events and ``path``, recorded from the model."""
    actions = alphabet(scope)
    generator = {
        "name": "exhaustive",
        "version": GENERATOR_VERSION,
        "params": {**scope.params(), "path": [describe(actions[i]) for i in path]},
    }
    return record(scope.config, events_of(scope, path), generator)


def traces(exploration: Exploration) -> Iterator[Trace]:
    """One trace per leaf of the BFS tree: together they pass through every enumerated state."""
    for path in leaf_paths(exploration):
        yield trace_of(exploration.scope, path)


# ---- the command ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kraftspec.conformance.exhaustive",
        description="Enumerate every model state of a small scope within a depth; print the figures per depth.",
    )
    parser.add_argument("--brokers", type=int, default=3, help=f"broker ids 0..N-1 (1 to {MAX_BROKERS}; default 3)")
    parser.add_argument("--partitions", type=int, default=2, help=f"partitions of the topic (1 to {MAX_PARTITIONS}; default 2)")
    parser.add_argument("--generations", type=int, default=2,
                        help=f"incarnations per broker id (1 to {MAX_GENERATIONS}; default 2)")
    parser.add_argument("--cold", action="store_true", help="start from the formatted cluster, not the warm one")
    parser.add_argument("--reuse-topic-id", action="store_true",
                        help="re-create the topic under its old id (TOPIC-2 allows it)")
    parser.add_argument("--depth", type=int, default=4, help="events after the setup (default 4)")
    parser.add_argument("--workers", type=int, default=1, help="processes expanding each level (default 1)")
    parser.add_argument("--no-check", action="store_true", help="skip the invariants (faster)")
    parser.add_argument("--traces", metavar="DIR", help="write one trace per leaf of the BFS tree into DIR")
    args = parser.parse_args(argv)
    try:
        scope = Scope(args.brokers, args.partitions, args.generations, not args.cold, args.reuse_topic_id)
    except ValueError as problem:
        parser.error(f"--{problem}")
    if args.depth < 0:
        parser.error(f"--depth must be 0 or more, got {args.depth}")
    if args.workers < 1:
        parser.error(f"--workers must be 1 or more, got {args.workers}")

    out = sys.stdout
    print(f"scope: {scope.params()}, alphabet of {len(alphabet(scope))} actions, depth {args.depth}", file=out)
    print(f"{'depth':>5} {'new states':>11} {'states':>10} {'transitions':>12} {'seconds':>9}", file=out)
    total = [1]

    def show(level: Level) -> None:
        total[0] += level.states
        figures = f"{level.depth:>5} {level.states:>11} {total[0]:>10} {level.transitions:>12} {level.seconds:>9.2f}"
        print(figures, file=out, flush=True)

    if args.workers > 1:
        with Pool(args.workers) as pool:
            exploration = frontier(scope, args.depth, partial(pool.imap, chunksize=256), check=not args.no_check, progress=show)
    else:
        exploration = frontier(scope, args.depth, check=not args.no_check, progress=show)
    print(
        f"{exploration.states} states, {exploration.transitions} transitions, depth reached {exploration.depth_reached}, "
        f"{exploration.seconds:.1f} s; invariant violations: {len(exploration.violations)}",
        file=out,
    )
    for path, broken in exploration.violations[:5]:
        print(f"  after {[describe(alphabet(scope)[i]) for i in path]}: {list(broken)}", file=out)
    if args.traces:
        directory = pathlib.Path(args.traces)
        directory.mkdir(parents=True, exist_ok=True)
        count = 0
        for trace in traces(exploration):
            trace.write(directory)
            count += 1
        print(f"{count} traces written to {directory}", file=out)
    return 1 if exploration.violations else 0


if __name__ == "__main__":
    sys.exit(main())
