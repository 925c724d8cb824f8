"""Exhaustive enumeration on Spark (``kraftspec conform --exhaustive``): the breadth-first search
of :mod:`.exhaustive` with each level's states expanded on the executors, and then every leaf
trace of the search tree replayed against a system under test, also on the executors.

**The search.** :func:`explore` runs :func:`exhaustive.frontier` unchanged, with a mapper
(:class:`SparkMapper`) that cuts a level's nodes into contiguous slices,
``sc.parallelize(nodes, slices).mapPartitions(...)`` expands each node there
(``functools.partial(expand, scope, key=..., check=...)``, which pickles by reference: the scope,
a node and a successor are small frozen values), and ``collect()`` brings the successors back in
the nodes' order. The driver then does what it does for the plain ``map``: it keeps the first path
to each new fingerprint and gathers the invariant violations. As the order is kept, the result
(states per level, paths, violations) is the same as ``frontier(scope, depth)`` in one process,
whatever the number of slices or executors. Contiguous slices keep siblings together, so the
per-process memo of :func:`exhaustive.state_at` replays one event per sibling, as it does in one
process; Python workers are reused across tasks (Spark's default), so the memo outlives a task.
Successors travel as plain tuples: pickled and unpickled in 7 ms per 9,600 against 47 ms as attrs
objects (rebuilding them on the driver costs 5 ms).

**The replay.** With an adapter, the leaf paths of the search tree (:func:`exhaustive.leaf_paths`)
are cut into contiguous slices in the same way; each task makes one adapter
(:func:`subprocess_adapter.adapter_from_spec`, inside ``mapPartitions``: a subprocess adapter
starts its server once per task), records each path's trace from the model
(:func:`exhaustive.trace_of`) and replays it (:func:`replay.replay`). An adapter that fails to
answer (:class:`adapters.AdapterFailure`, e.g. a server that exits at start) fails that trace, with
the failure as its report, and the task carries on. Only counts and the failing traces' names,
paths and reports come back to the driver.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from attrs import frozen

from .exhaustive import (
    Exploration,
    Level,
    Node,
    Path,
    Scope,
    Successor,
    alphabet,
    describe,
    frontier,
    leaf_paths,
    trace_of,
)
from .trace import LEVELS

SLICES_PER_CORE = 4
"""Slices per default-parallelism unit of Spark: enough to balance uneven slices, few enough that
each task expands many siblings (the memo) and a level is not mostly task overhead."""

KEEP_FAILURES = 1000
"""Failing traces whose name, path and report are kept (all are counted)."""


# ---- the mapper ------------------------------------------------------------------------------------


def slice_count(items: int, parallelism: int, per_core: int = SLICES_PER_CORE) -> int:
    """How many slices to cut ``items`` into: ``per_core`` per unit of parallelism, at most one per item."""
    return max(1, min(items, parallelism * per_core))


def _expand_slice(function: Callable[[Node], list[Successor]], nodes: Iterable[Node]) -> Iterator[list[tuple]]:
    """Runs on an executor: each node's successors, as plain tuples."""
    for node in nodes:
        yield [(s.fingerprint, s.path, s.violations) for s in function(node)]


class SparkMapper:
    """A mapper for :func:`exhaustive.frontier` that expands a level on Spark, keeping the order.
    ``jobs`` counts the Spark jobs it ran (one per level with nodes)."""

    def __init__(self, sc, slices: int | None = None):
        self.sc = sc
        self.slices = slices
        self.jobs = 0

    def __call__(self, function: Callable[[Node], list[Successor]], nodes: Iterable[Node]) -> list[list[Successor]]:
        nodes = list(nodes)
        if not nodes:
            return []
        count = min(len(nodes), self.slices) if self.slices else slice_count(len(nodes), self.sc.defaultParallelism)
        self.sc.setJobDescription(f"kraftspec exhaustive: expanding {len(nodes):,} states")
        expanded = self.sc.parallelize(nodes, count).mapPartitions(partial(_expand_slice, function)).collect()
        self.jobs += 1
        return [[Successor(fingerprint, path, broken) for fingerprint, path, broken in successors]
                for successors in expanded]


# ---- the replay of the leaves ---------------------------------------------------------------------------


def _replay_slice(scope: Scope, adapter_spec: str, level: str, keep: int, paths: Iterable[Path]) -> Iterator[tuple]:
    """Runs on an executor: replay each path's trace against one adapter made here; gives one
    ``(replayed, passed, failures)`` for the slice, failures as ``(name, path, report)``."""
    from .adapters import AdapterFailure
    from .replay import replay
    from .subprocess_adapter import adapter_from_spec

    actions = alphabet(scope)
    adapter = adapter_from_spec(adapter_spec)
    replayed = passed = 0
    failures: list[tuple[str, tuple[str, ...], str]] = []
    try:
        for path in paths:
            trace = trace_of(scope, path)
            try:
                verdict = replay(trace, adapter, level)
                report = None if verdict.passed else verdict.report(adapter_spec)
            except AdapterFailure as failure:
                report = f"FAIL {trace.name}: the adapter {adapter_spec!r} failed: {failure}"
            replayed += 1
            if report is None:
                passed += 1
            elif len(failures) < keep:
                failures.append((trace.name, tuple(describe(actions[i]) for i in path), report))
    finally:
        getattr(adapter, "shutdown", adapter.close)()
    yield replayed, passed, failures


# ---- the report ------------------------------------------------------------------------------------------


@frozen
class Violation:
    """An event of the enumeration that broke invariants: the path to it, described, and what broke."""

    path: tuple[str, ...]
    broke: tuple[str, ...]


@frozen
class ReplayFailure:
    """A leaf trace the system under test departed from."""

    name: str
    path: tuple[str, ...]
    report: str


@frozen
class ExhaustiveReport:
    """What :func:`explore` found: the enumeration's figures, the invariant violations, and the
    replay of the leaf traces (``adapter`` None when nothing was replayed)."""

    scope: Scope
    depth: int
    states: int
    transitions: int
    depth_reached: int
    levels: tuple[Level, ...]
    violations: tuple[Violation, ...]
    leaves: int  # leaf traces of the search tree
    adapter: str | None
    level: str
    replayed: int
    passed: int
    failures: tuple[ReplayFailure, ...]  # the first KEEP_FAILURES, in path order
    explore_seconds: float
    replay_seconds: float
    master: str = ""

    @property
    def failed(self) -> int:
        return self.replayed - self.passed

    @property
    def seconds(self) -> float:
        return self.explore_seconds + self.replay_seconds

    @property
    def ok(self) -> bool:
        return not self.violations and self.failed == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": "exhaustive",
            "scope": self.scope.params(),
            "depth": self.depth,
            "depth_reached": self.depth_reached,
            "states": self.states,
            "transitions": self.transitions,
            "levels": [{"depth": l.depth, "states": l.states, "transitions": l.transitions,
                        "seconds": round(l.seconds, 3)} for l in self.levels],
            "violations": [{"path": list(v.path), "broke": list(v.broke)} for v in self.violations],
            "leaves": self.leaves,
            "adapter": self.adapter,
            "level": self.level,
            "replayed": self.replayed,
            "passed": self.passed,
            "failed": self.failed,
            "failures": [{"name": f.name, "path": list(f.path), "report": f.report} for f in self.failures],
            "explore_seconds": round(self.explore_seconds, 2),
            "replay_seconds": round(self.replay_seconds, 2),
            "seconds": round(self.seconds, 2),
            "master": self.master,
        }


# ---- the job -----------------------------------------------------------------------------------------------


def explore(
    spark,
    scope: Scope,
    depth: int,
    adapter_spec: str | None = None,
    level: str = "records",
    progress: Callable[[Level], None] | None = None,
    slices: int | None = None,
    keep_failures: int = KEEP_FAILURES,
) -> ExhaustiveReport:
    """Enumerate ``scope`` to ``depth`` events with each level expanded on ``spark``'s executors;
    then, if ``adapter_spec`` is given (``impl``, ``model``, ``subprocess:CMD``), replay every leaf
    trace against it at ``level``, also on the executors. ``progress(level)`` is called after each
    level of the search; ``slices`` fixes the number of slices per Spark job (default
    :data:`SLICES_PER_CORE` per core)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    if adapter_spec is not None:  # a bad spec is refused here, before any work
        from .subprocess_adapter import adapter_from_spec

        adapter = adapter_from_spec(adapter_spec)
        getattr(adapter, "shutdown", adapter.close)()
    sc = spark.sparkContext
    started = time.perf_counter()
    exploration: Exploration = frontier(scope, depth, mapper=SparkMapper(sc, slices), progress=progress)
    leaves = leaf_paths(exploration)
    explored = time.perf_counter()
    actions = alphabet(scope)
    violations = tuple(Violation(tuple(describe(actions[i]) for i in path), tuple(broke))
                       for path, broke in exploration.violations)

    replayed = passed = 0
    failures: list[ReplayFailure] = []
    if adapter_spec is not None and leaves:
        count = min(len(leaves), slices) if slices else slice_count(len(leaves), sc.defaultParallelism)
        sc.setJobDescription(f"kraftspec exhaustive: replaying {len(leaves):,} leaf traces against {adapter_spec}")
        task = partial(_replay_slice, scope, adapter_spec, level, keep_failures)
        for done, ok, failed in sc.parallelize(leaves, count).mapPartitions(task).collect():
            replayed += done
            passed += ok
            failures.extend(ReplayFailure(name, path, report) for name, path, report in failed)
    finished = time.perf_counter()
    return ExhaustiveReport(
        scope, depth, exploration.states, exploration.transitions, exploration.depth_reached, exploration.levels,
        violations, len(leaves), adapter_spec, level, replayed, passed, tuple(failures[:keep_failures]),
        explored - started, finished - explored, sc.master,
    )
