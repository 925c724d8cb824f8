"""The random walks of ``kraftspec conform`` reach every runtime rule an event can reach: a few
hundred seeds at conform's default length fire all of them, and each fault on its own fires the
rules it is there for. The rules no event can reach are those of
conformance/coverage.py's NOT_REACHABLE_BY_EVENTS, and the walks fire none of them."""

import pytest

from kraftspec.conformance.coverage import NOT_REACHABLE_BY_EVENTS, coverage, rule_key
from kraftspec.conformance.generate import walk

CONFORM_STEPS = 50  # events per trace in `kraftspec conform` by default
SEEDS = range(500)


def test_a_few_hundred_walks_reach_every_rule_an_event_can_reach():
    report = coverage(walk(seed, CONFORM_STEPS) for seed in SEEDS)
    missed = sorted(report.missed, key=rule_key)
    assert not missed, f"walks of seeds {SEEDS.start}..{SEEDS.stop - 1} ({CONFORM_STEPS} steps) never fire {', '.join(missed)}"
    assert set(report.never_reached) == set(NOT_REACHABLE_BY_EVENTS)


@pytest.mark.parametrize(
    "fault, rules",
    [
        ("faulty-leader", {"ISR-2", "ISR-3", "ISR-4", "ISR-5", "ISR-6", "ISR-7", "ISR-8", "ISR-11", "ISR-12"}),
        ("malformed", {"REG-1", "REG-2", "REG-5", "LEASE-3", "LEASE-5", "RPC-2"}),
        ("operator-mistakes", {"UNREG-1", "UNREG-2", "REASSIGN-3", "TOPIC-2"}),
    ],
)
def test_each_fault_on_its_own_fires_the_rules_it_is_there_for(fault, rules):
    report = coverage(walk(seed, CONFORM_STEPS, faults=[fault]) for seed in range(150))
    unfired = sorted(rules - set(report.traces), key=rule_key)
    assert not unfired, f"walks with only {fault!r} never fire {', '.join(unfired)}"
