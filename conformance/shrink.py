"""Shrinking a failing trace: the shortest, simplest sequence of events that still fails the same way.

A trace fails when a predicate says so. The predicate takes a trace and answers ``None`` when the
trace passes, or a *signature* of how it fails; a candidate fails *the same way* when its
signature equals the original's. Two predicates come with this module:

* :func:`failing_against`: replaying the trace against a system under test diverges. The
  default signature, :func:`how_it_diverges`, is the tuple ``(part, kind, api, rules)``: the
  part of the step that differed (``seq``, ``replies``, ``records``, ``committed``, ``adapter``,
  or ``crash`` when the system under test raised), the event's kind and, for a request, its api
  at the divergent step, and the sorted rule ids the model fired at that step. Pass another
  ``signature`` (a function of the :class:`~kraftspec.conformance.replay.Divergence`) for a
  looser or stricter notion of "the same way".
* :func:`fires`: the model fires a given rule somewhere in the trace (targeted generation).

Shrinking works on the trace's list of model events, never on its expected outputs: every
candidate is re-recorded from the model (:func:`~kraftspec.conformance.generate.record`), so what
it expects is what the model does with exactly those events, and a candidate that makes the model
raise is not valid and is dropped. The passes, repeated while one of them helps:

1. the shortest failing prefix (a bisection);
2. delta debugging: remove chunks of events, halving the chunk size down to single events;
3. simplification of single events: ticks move back in time (shorter jumps, down to the exact
   moment that still fails, such as a lease deadline), commits name the log end instead of a
   larger offset, requests lose list entries (topics, partitions, replicas) and ask for one
   partition or one replica instead of several.

Every candidate costs one recording, and ``budget`` bounds their number; a candidate already
tried is not recorded again. The order of the passes and of the candidates is fixed, so the same
trace and predicate always shrink to the same result.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kraftspec.model import Commit, Tick, initial_state, step

from .adapters import Adapter, event_json, model_config, model_event
from .generate import record
from .replay import Divergence, record_difference, replay
from .trace import LEVELS, Trace, canonical

SHRINK_VERSION = 1
DEFAULT_BUDGET = 2000
"""Re-recordings one shrink may spend."""

Failing = Callable[[Trace], object | None]
"""A predicate: None when the trace passes, otherwise a signature of how it fails."""

Progress = Callable[[int, int, int], None]
"""Told after each recording: ``(recordings spent, budget, events of the smallest failing trace so far)``."""


# ---- predicates --------------------------------------------------------------------------------


def how_it_diverges(divergence: Divergence) -> tuple:
    """The default signature of a divergence: ``(part, kind, api, rules)``, where ``api`` is None
    for events other than requests and ``rules`` are the sorted ids the step fired."""
    event = divergence.event
    return (divergence.part, event["kind"], event.get("api"), tuple(sorted(divergence.rules)))


class _Watched:
    """An adapter that remembers which step it is answering, so that a crash can be placed."""

    def __init__(self, adapter: Adapter):
        self.adapter = adapter
        self.name = adapter.name
        self.current: int | None = None
        prepare = getattr(adapter, "prepare", None)
        if prepare is not None:
            self.prepare = prepare

    @property
    def levels(self) -> tuple[str, ...]:  # a server says what it reports when it starts
        return self.adapter.levels

    @property
    def unsupported(self):  # and what it does not support
        return getattr(self.adapter, "unsupported", None) or {}

    def start(self, config):
        self.adapter.start(config)

    def step(self, event):
        self.current = -1 if self.current is None else self.current
        self.current += 1
        return self.adapter.step(event)

    def committed(self):
        return self.adapter.committed()

    def close(self):
        self.adapter.close()


def failing_against(
    adapter_factory: Callable[[], Adapter],
    level: str = "records",
    signature: Callable[[Divergence], object] = how_it_diverges,
) -> Failing:
    """The predicate "a fresh adapter from ``adapter_factory`` diverges from the trace at
    ``level``", answering ``signature(divergence)``. An adapter that raises while answering a step
    fails at that step with part ``crash`` (its exception's type and message as the actual value).
    Every step goes through the adapter's ``step``: an in-process fast path (``replay_native``) is
    not used, so that a wrapper around an adapter sees every event."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")

    def failing(trace: Trace) -> object | None:
        adapter = _Watched(adapter_factory())
        try:
            verdict = replay(trace, adapter, level)
        except Exception as crash:  # the system under test raised: a failure like any other
            if adapter.current is None:
                raise  # before the first step: a problem of the setup, not of the trace
            s = trace.steps[adapter.current]
            divergence = Divergence(s.n, s.event, "crash", "an answer", f"{type(crash).__name__}: {crash}", s.rules, s.rejected_by)
            return signature(divergence)
        if verdict.passed:
            return None
        if verdict.divergence is None:  # not supported by the adapter: not a divergence to shrink
            return ("not supported", verdict.not_supported)
        found = signature(verdict.divergence)
        if verdict.first_records is not None and signature is how_it_diverges:  # keep the first cause too
            first = verdict.first_records
            found = (found, ("records first differ at", first.event["kind"], first.event.get("api"),
                             record_difference(first.expected, first.actual).split(" at offset")[0]))
        return found

    failing.__qualname__ = f"failing_against({getattr(adapter_factory, '__name__', adapter_factory)!s}, {level!r})"
    return failing


def fires(rule_id: str) -> Failing:
    """The predicate "some step of the trace fires ``rule_id``" (signature: True)."""

    def failing(trace: Trace) -> object | None:
        return True if any(rule_id in s.rules for s in trace.steps) else None

    failing.__qualname__ = f"fires({rule_id!r})"
    return failing


# ---- shrinking ---------------------------------------------------------------------------------


class BudgetSpent(Exception):
    """Raised inside a pass when the recordings are used up; the shrinker keeps the best so far."""


class Shrinker:
    """One shrink: the events of the smallest failing candidate so far, and the budget left."""

    def __init__(self, trace: Trace, failing: Failing, budget: int, progress: Progress | None = None):
        self.failing = failing
        self.progress = progress
        self.target = failing(trace)
        if self.target is None:
            raise ValueError(f"trace {trace.name} does not fail the given predicate: nothing to shrink")
        self.config = model_config(trace.header.config)
        self.generator = {
            "name": "shrink",
            "version": SHRINK_VERSION,
            "params": {"original": trace.header.generator, "original_name": trace.name, "original_steps": len(trace.steps)},
        }
        self.seed = trace.header.seed
        self.description = trace.header.description
        self.budget = budget
        self.spent = 0
        self.tried: dict[tuple[str, ...], Trace | None] = {}  # each candidate: its recording if it failed the same way
        self.events = [model_event(s.event, self.config.params.rpc_formats) for s in trace.steps]
        self.best = trace

    def attempt(self, events: list) -> bool:
        """Record ``events`` from the model; keep them if they fail the same way."""
        key = tuple(canonical(event_json(e)) for e in events)
        if key not in self.tried:
            if self.spent >= self.budget:
                raise BudgetSpent
            self.spent += 1
            try:
                candidate = record(self.config, events, self.generator, self.seed, self.description)
            except Exception:  # the model raises on these events: not a valid trace
                candidate = None
            if candidate is not None and self.failing(candidate) != self.target:
                candidate = None
            self.tried[key] = candidate
        kept = self.tried[key]
        if kept is not None:
            self.events, self.best = list(events), kept
        if self.progress is not None:
            self.progress(self.spent, self.budget, len(self.events))
        return kept is not None

    def run(self) -> Trace:
        try:
            self.shortest_prefix()
            self.delta_debug()
            while self.simplify():  # a simpler event may make others unnecessary
                self.delta_debug()
        except BudgetSpent:
            pass
        if self.best.header.generator != self.generator:  # nothing was accepted: record the events as shrunk
            self.best = record(self.config, self.events, self.generator, self.seed, self.description)
        return self.best

    def shortest_prefix(self) -> None:
        """Bisect for the shortest prefix that fails the same way (steps depend only on earlier
        events, so a failure at step k is usually kept by every prefix longer than k)."""
        low, high = 0, len(self.events)
        events = self.events
        while high - low > 1:
            middle = (low + high) // 2
            if self.attempt(events[:middle]):
                high = middle
            else:
                low = middle

    def delta_debug(self) -> None:
        """Delta debugging by complements: remove chunks of half the events, then of a quarter,
        and so on down to single events; the passes of single events repeat until none can go,
        so that the result is 1-minimal (no one event can be removed)."""
        size = max(len(self.events) // 2, 1)
        while True:
            removed = self.remove_chunks(size)
            if size == 1 and not removed:
                return
            size = max(size // 2, 1)

    def remove_chunks(self, size: int) -> bool:
        """One pass over the events, removing each chunk of ``size`` that can go; True if any did."""
        removed, start = False, 0
        while start < len(self.events) and len(self.events) > 1:
            events = self.events
            candidate = events[:start] + events[start + size:]
            if candidate and self.attempt(candidate):
                removed = True  # the next chunk now starts where this one did
            else:
                start += size
        return removed

    def simplify(self) -> bool:
        """Try simpler versions of each event, one event at a time; True if any was kept."""
        changed = False
        i = 0
        while i < len(self.events):
            states = _states_before(self.config, self.events)  # the kept events always record
            for variant in _simpler(self.events[i], states[i]):
                if self.attempt(self.events[:i] + [variant] + self.events[i + 1:]):
                    changed = True
                    break
            else:
                i += 1
        return changed


def shrink(trace: Trace, failing: Failing, budget: int = DEFAULT_BUDGET, progress: Progress | None = None) -> Trace:
    """The shortest, simplest trace found that fails ``failing`` the same way as ``trace``
    (see the module's docstring); ``budget`` bounds the recordings, and ``progress`` is told after
    each one. The result is recorded from the model, so it replays cleanly against the model; its
    header names what it was shrunk from. Raises ValueError when ``trace`` does not fail."""
    return Shrinker(trace, failing, budget, progress).run()


# ---- simpler events ----------------------------------------------------------------------------


def _states_before(config, events: list) -> list:
    """The model's state before each event (and after the last)."""
    state = initial_state(config)
    states = [state]
    for event in events:
        state = step(state, event).state
        states.append(state)
    return states


def _simpler(event, state) -> Iterator:
    """Simpler versions of ``event``, simplest first, given the state the events before it left."""
    if isinstance(event, Tick):
        yield from _earlier_ticks(event, state.now_ms)
    elif isinstance(event, Commit):
        if event.offset > state.log_end_offset:
            yield Commit(state.log_end_offset)
    else:
        formats = state.config.params.rpc_formats  # DEC-9
        neutral = event_json(event, formats)
        if neutral["kind"] == "request":
            for body in _smaller_bodies(neutral["body"]):
                try:
                    yield model_event({**neutral, "body": body}, formats)
                except Exception:  # a smaller body the model's classes refuse: not a candidate
                    continue


def _earlier_ticks(tick: Tick, now_ms: int) -> Iterator[Tick]:
    """Shorter jumps from the time before the tick: half the jump, then three quarters, seven
    eighths, ..., one millisecond less. Each accepted candidate is simplified again, so a chain of
    them converges on the earliest time that still fails (a lease deadline, say)."""
    jump = tick.now_ms - now_ms
    cut = jump // 2
    while cut >= 1:
        yield Tick(tick.now_ms - cut)
        cut //= 2


COUNT_FIELDS = ("NumPartitions", "ReplicationFactor")


def _smaller_bodies(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The body with one list entry left out (at any depth, in key order), or one count set to 1."""
    for path, value in _walk(body):
        if isinstance(value, list):
            for index in range(len(value)):
                smaller = copy.deepcopy(body)
                _at(smaller, path).pop(index)
                yield smaller
        elif path and path[-1] in COUNT_FIELDS and isinstance(value, int) and value > 1:
            smaller = copy.deepcopy(body)
            _at(smaller, path[:-1])[path[-1]] = 1
            yield smaller


def _walk(value, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _walk(value[key], path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, path + (index,))


def _at(value, path: tuple):
    for key in path:
        value = value[key]
    return value


# ---- the corpus --------------------------------------------------------------------------------


def write_to_corpus(trace: Trace, description: str, corpus_dir: str | Path) -> Path:
    """Write ``trace`` into the corpus as ``<name>.jsonl`` with a one-line ``description`` in its
    header, and rewrite the corpus index (README.md). Returns the file's path."""
    description = description.strip()
    if not description or "\n" in description:
        raise ValueError("a corpus trace needs a one-line description")
    from .coverage import write_index

    corpus_dir = Path(corpus_dir)
    corpus_dir.mkdir(parents=True, exist_ok=True)
    path = trace.with_description(description).write(corpus_dir)
    write_index(corpus_dir)
    return path
