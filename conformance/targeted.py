"""Targeted generation: a short trace that fires each runtime rule, and the regression corpus.

:func:`targeted` takes the runtime rules (conformance/coverage.py) not yet reached and, for each in
turn, searches random walks (conformance/generate.py) in a fixed order: lengths short to long,
seeds upward, each seed once with its swarm draw of faults and once with every fault on. The
first walk that fires the rule is cut after that step and shrunk (conformance/shrink.py) to the
shortest trace that still fires it; every rule the shrunk trace fires counts as reached. The walks'
faults reach every rule an event can reach (tests/test_walk_reach.py), so a full rebuild needs
nothing else; a rule no walk of a narrower search fires is tried with a small scripted scenario of
:data:`SCENARIOS` (model events written by hand: a partition named twice in an AlterIsr, a
heartbeat with a negative offset, ...), recorded and shrunk the same way. What neither reaches is
reported with the reason (for LOG-13 and LOG-16, the reason of coverage.NOT_REACHABLE_BY_EVENTS).

Rules the model fires while starting a controller (LOG-14, the bootstrap batch) are reached by
every trace and need none of their own.

:func:`build_corpus` makes conformance/corpus/ again: the targeted traces, a few realistic walks
with faults, and the regression traces of :data:`REGRESSIONS`, each with a one-line description,
and the index (README.md), for each behaviour profile; traces added by hand are kept, recorded
again from their events.
Everything is deterministic: the same model gives the same files. Run
``python -m kraftspec.conformance.targeted conformance/corpus`` to rebuild it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from attrs import frozen

from kraftspec.model import Commit, Config, initial_state, step
from kraftspec.model.messages import AlterIsrPartition, AlterIsrRequest, Feature, UnregisterBrokerRequest
from kraftspec.spec import title
from kraftspec.spec.profiles import profile_names

from .adapters import config_json, model_config, model_event
from .coverage import NOT_REACHABLE_BY_EVENTS, rule_key, runtime_rules, start_rules, write_index
from .generate import FAULTS, record, walk
from .regressions import REGRESSIONS, Regression, regression_trace
from .scenario import FEATURES, Scenario, incarnation, scripted, topic_id
from .shrink import DEFAULT_BUDGET, fires, shrink
from .trace import Trace, read_all

__all__ = ["FEATURES", "REGRESSIONS", "Regression", "Scenario", "incarnation", "regression_trace", "scripted", "topic_id"]

WALK_LENGTHS = (40, 120, 300)
WALK_SEEDS = range(100)


# ---- scripted scenarios ------------------------------------------------------------------------


def unknown_partition(config: Config | None = None) -> Scenario:
    """ISR-3: the leader of orders-0 asks to change orders-5, which does not exist."""
    s = Scenario(config).start_brokers(1, 2).create_topic("orders", [[1, 2]])
    entry = s.isr_entry("orders", [1])
    return s.alter_isr(1, "orders", AlterIsrPartition(5, entry.leader_epoch, [1], entry.partition_epoch))


def stale_leader_epoch(config: Config | None = None) -> Scenario:
    """ISR-4: the leader sends a leader epoch other than the partition's."""
    s = Scenario(config).start_brokers(1, 2).create_topic("orders", [[1, 2]])
    return s.alter_isr(1, "orders", s.isr_entry("orders", [1], leader_epoch=s.partition("orders").leader_epoch + 1))


def not_the_leader(config: Config | None = None) -> Scenario:
    """ISR-5: a follower asks to change the ISR of a partition it does not lead."""
    s = Scenario(config).start_brokers(1, 2).create_topic("orders", [[1, 2]])
    return s.alter_isr(2, "orders", s.isr_entry("orders", [1, 2]))


def stale_partition_epoch(config: Config | None = None) -> Scenario:
    """ISR-6: the leader shrinks the ISR, then sends a change based on the partition epoch before it."""
    s = Scenario(config).start_brokers(1, 2).create_topic("orders", [[1, 2]])
    before = s.isr_entry("orders", [1])
    s.alter_isr(1, "orders", before)
    return s.alter_isr(1, "orders", AlterIsrPartition(0, before.leader_epoch, [1, 2], before.partition_epoch))


def fenced_replica_in_isr(config: Config | None = None) -> Scenario:
    """ISR-8: the leader names a replica that is registered but fenced."""
    s = Scenario(config).start_brokers(1, 2).register(3).create_topic("orders", [[1, 2, 3]])
    return s.alter_isr(1, "orders", s.isr_entry("orders", [1, 2, 3]))


def partition_named_twice(config: Config | None = None) -> Scenario:
    """ISR-11: one request names the same partition twice."""
    s = Scenario(config).start_brokers(1, 2).create_topic("orders", [[1, 2]])
    return s.alter_isr(1, "orders", s.isr_entry("orders", [1]), s.isr_entry("orders", [1, 2]))


def empty_alter_isr(config: Config | None = None) -> Scenario:
    """ISR-12: a leader sends an AlterIsr with no topics while a batch is in flight, then a broker id
    that is not registered sends one."""
    s = Scenario(config).start_brokers(1)
    s.send(UnregisterBrokerRequest(7))  # a write of nothing, whose answer waits for the log as it stood
    s.send(AlterIsrRequest(1, s.epoch(1), []))
    return s.send(AlterIsrRequest(7, 0, [])).commit()


def negative_metadata_offset(config: Config | None = None) -> Scenario:
    """LEASE-5: a registered broker heartbeats with CurrentMetadataOffset -1."""
    return Scenario(config).register(1).heartbeat(1, offset=-1)


def unsupported_features(config: Config | None = None) -> Scenario:
    """REG-5: a broker that does not support the finalized features' levels registers."""
    config = config if config is not None else Config()
    above = tuple(Feature(f.name, f.max_level + 1, f.max_level + 2) for f in config.finalized_features)
    return Scenario(config).register(1, features=above)


def unknown_broker_unregistered(config: Config | None = None) -> Scenario:
    """UNREG-1: the operator unregisters a broker id that was never registered."""
    s = Scenario(config).start_brokers(1)
    return s.send(UnregisterBrokerRequest(7)).commit()


SCENARIOS: dict[str, Callable[[Config | None], Scenario]] = {
    "ISR-3": unknown_partition,
    "ISR-4": stale_leader_epoch,
    "ISR-5": not_the_leader,
    "ISR-6": stale_partition_epoch,
    "ISR-8": fenced_replica_in_isr,
    "ISR-11": partition_named_twice,
    "ISR-12": empty_alter_isr,
    "LEASE-5": negative_metadata_offset,
    "REG-5": unsupported_features,
    "UNREG-1": unknown_broker_unregistered,
}
"""For the rules the walks reach least often: a scripted scenario that fires each, used when a
search of few or short walks finds none that does; each takes the configuration to start from
(default: the default profile's)."""


# ---- targeted generation -----------------------------------------------------------------------


@frozen
class Target:
    """A short trace made to fire ``rule``, and where it came from."""

    rule: str
    trace: Trace
    source: str

    @property
    def description(self) -> str:
        return f"{self.rule} {title(self.rule)}: shortest trace found that fires it, shrunk from {self.source}"


@frozen
class TargetedResult:
    targets: tuple[Target, ...]
    reached: dict[str, str]  # rule -> the name of a trace that reaches it ("start" for starting the controller)
    unreached: dict[str, str]  # rule -> why no trace was made for it
    scripted: tuple[str, ...]  # rules that needed a scripted scenario

    @property
    def traces(self) -> tuple[Trace, ...]:
        return tuple(t.trace for t in self.targets)


def walks(seeds: Iterable[int] = WALK_SEEDS, lengths: Iterable[int] = WALK_LENGTHS,
          config: Config | None = None) -> Iterator[tuple[Trace, str]]:
    """Random walks from ``config`` (default: the default profile's) in search order, each with a
    note of how it was drawn."""
    seeds = list(seeds)
    for length in lengths:
        for seed in seeds:
            for faults in (None, FAULTS):
                drawn = "its swarm's faults" if faults is None else "every fault"
                yield walk(seed, length, faults=faults, config=config), f"walk seed {seed} ({length} steps, {drawn})"


def targeted(
    rule_ids: Iterable[str] | None = None,
    seeds: Iterable[int] = WALK_SEEDS,
    lengths: Iterable[int] = WALK_LENGTHS,
    budget: int = DEFAULT_BUDGET,
    reached: Iterable[Trace] = (),
    log: Callable[[str], None] | None = None,
    config: Config | None = None,
) -> TargetedResult:
    """A short trace for each rule of ``rule_ids`` (the runtime rules by default) that neither the
    traces of ``reached`` nor starting the controller reach; see the module's docstring. Every
    trace starts from ``config`` (default: the default profile's, ``Config.for_profile(name)`` for
    another profile's)."""
    wanted = sorted(runtime_rules() if rule_ids is None else rule_ids, key=rule_key)
    seeds, lengths = tuple(seeds), tuple(lengths)
    say = log or (lambda message: None)
    config = config or Config()
    covered: dict[str, str] = {r: "start" for r in start_rules(config_json(config))}
    for trace in reached:
        for r in trace.rules():
            covered.setdefault(r, trace.name)

    found: dict[str, tuple[Trace, int, str]] = {}  # rule -> (walk, first step firing it, note)
    search = walks(seeds, lengths, config)

    def first_walk_firing(rule: str) -> tuple[Trace, int, str] | None:
        while rule not in found:
            drawn = next(search, None)
            if drawn is None:
                return None
            trace, note = drawn
            for s in trace.steps:
                for r in s.rules:
                    found.setdefault(r, (trace, s.n, note))
        return found[rule]

    targets: list[Target] = []
    unreached: dict[str, str] = {}
    needed_script: list[str] = []
    for rule in wanted:
        if rule in covered:
            continue
        started = time.perf_counter()
        hit = first_walk_firing(rule)
        if hit is not None:
            trace, n, note = hit
            candidate, source = Trace(trace.header, trace.steps[: n + 1]), note
        elif rule in SCENARIOS:
            candidate, source = scripted(SCENARIOS[rule].__name__, SCENARIOS[rule](config)), f"scripted scenario {SCENARIOS[rule].__name__}"
            needed_script.append(rule)
            if fires(rule)(candidate) is None:
                unreached[rule] = f"its scripted scenario {SCENARIOS[rule].__name__} no longer fires it"
                continue
        else:
            unreached[rule] = NOT_REACHABLE_BY_EVENTS.get(
                rule, f"no walk of lengths {list(lengths)} and seeds {_span(seeds)} fires it, and no scripted scenario does")
            continue
        short = shrink(candidate, fires(rule), budget)
        generator = {"name": "targeted", "version": 1, "params": {"rule": rule, "from": source}}
        short = record(model_config(short.header.config), released(short), generator, short.header.seed)
        target = Target(rule, short, source)
        targets.append(target)
        for r in short.rules():
            covered.setdefault(r, short.name)
        say(f"{rule}: {len(candidate.steps)} -> {len(short.steps)} steps ({time.perf_counter() - started:.1f} s), from {source}")
    return TargetedResult(tuple(targets), covered, unreached, tuple(needed_script))


def released(trace: Trace) -> list:
    """The trace's events, and a commit of everything at the end if some reply still waits for
    one, so that the trace also shows the responses to the requests that fired its rule."""
    config = model_config(trace.header.config)
    events = [model_event(s.event, config.params.rpc_formats) for s in trace.steps]
    state = initial_state(config)
    for event in events:
        state = step(state, event).state
    return events + [Commit(state.log_end_offset)] if state.pending else events


def _span(seeds: tuple[int, ...]) -> str:
    return f"{seeds[0]}..{seeds[-1]}" if seeds else "(none)"


CORPUS_WALKS = ((3, 200), (7, 150), (11, 300), (21, 250), (42, 120))
"""(seed, steps) of the realistic walks kept in the corpus; each seed's swarm draws its faults."""


BUILT = ("walk", "targeted", "regression")
"""The generators of the traces build_corpus makes; a corpus trace of another generator was added
by hand (conformance/shrink.py write_to_corpus) and a rebuild keeps it."""


def rerecorded(trace: Trace) -> Trace:
    """A trace recorded again from its events, so that it expects what the model does now. A commit
    beyond the log end the model now reaches (it writes fewer records than when the trace was made)
    commits to that log end instead, so that the trace stays one a controller can produce."""
    config = model_config(trace.header.config)
    state = initial_state(config)
    events = []
    for s in trace.steps:
        event = model_event(s.event, config.params.rpc_formats)
        if isinstance(event, Commit) and event.offset > state.log_end_offset:
            event = Commit(state.log_end_offset)
        state = step(state, event).state
        events.append(event)
    return record(config, events, trace.header.generator, trace.header.seed, trace.header.description)


def build_corpus(directory: str | Path, log: Callable[[str], None] | None = None,
                 rule_ids: Iterable[str] | None = None, profiles: Iterable[str] | None = None) -> list[Path]:
    """Write the corpus into ``directory`` and its index; the paths written. For each profile (all
    of them by default), the traces of :data:`BUILT` generators are made again from scratch (the
    targeted traces for ``rule_ids``, by default every runtime rule; the walks of
    :data:`CORPUS_WALKS`; the regressions of :data:`REGRESSIONS` recorded in that profile) and the old
    ones removed; a trace added by hand is recorded again from its events, under its own profile and
    under its new name if the model now does something else. Deterministic: the same model gives
    the same files."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    entries: list[tuple[Trace, str]] = []
    for _, trace in read_all([directory]):
        if trace.header.generator.get("name") not in BUILT:
            entries.append((rerecorded(trace), trace.header.description))
    for profile in profile_names() if profiles is None else profiles:
        config = Config.for_profile(profile)
        note = "" if profile == profile_names()[0] else f" ({profile} profile)"
        for seed, steps in CORPUS_WALKS:
            trace = walk(seed, steps, config=config)
            params = trace.header.generator["params"]
            entries.append((trace, f"realistic walk, seed {seed}: {steps} steps, {params['brokers']} brokers, "
                                   f"{params['partitions']} partitions, faults: {', '.join(params['faults']) or 'none'}{note}"))
        for regression in REGRESSIONS:
            if profile in regression.profiles:
                entries.append((regression_trace(regression, config), regression.description + note))
        result = targeted(rule_ids, log=log, config=config)  # on their own, the targeted traces reach every rule they can
        if log:
            for rule, why in result.unreached.items():
                log(f"not reached{note}: {rule}: {why}")
        entries += [(target.trace, target.description + note) for target in result.targets]

    written = [trace.with_description(description).write(directory) for trace, description in entries]
    for stale in sorted(directory.glob("*.jsonl")):
        if stale not in written:
            stale.unlink()
    write_index(directory)
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m kraftspec.conformance.targeted <corpus directory>", file=sys.stderr)
        return 2
    started = time.perf_counter()
    written = build_corpus(args[0], log=print)
    print(f"{len(written)} traces written to {args[0]} in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
