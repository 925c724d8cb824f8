"""CrossHair contracts (issue 5, proofs/contracts.py).

Each function in ``contracts.TARGETS`` carries PEP 316 ``pre:``/``post:`` lines. CI asks
``crosshair check`` for a counterexample and expects none, then asks the same of the target's
planted twin (proofs/planted.py) and expects one: finding nothing proves nothing unless the same
search is seen to find a bug it should. ``crosshair diffbehavior`` compares the model's and
impl's versions of the same pure function (``contracts.PAIRS``) and expects no difference, and
finds a planted one in each pair.

Settings, as CI runs them (``contracts.check_command`` and ``contracts.diff_command``):
``crosshair check --analysis_kind PEP316 --per_condition_timeout 5 --report_all TARGET`` and
``crosshair diffbehavior --per_condition_timeout 5 F1 F2``, one process per run, two at once.

Time budget: 5 minutes for this module on 2 cores. Measured on the 2-core development machine
with the 35 runs of the profiles' values: 165 s wall (294 s CPU) at load average about 1.5; with 34
runs, 378 s wall (242 s CPU) at load average 5 to 7 from other work (proofs/README.md has the
figures per target). The runs are CPU-time bound, so a busy machine makes them slower but does
not change what they find. A contract that reads a profile parameter has a planted twin for each
of its values.
All runs start together in the ``found`` fixture, so that two go at a time throughout.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from kraftspec.model import partitions
from kraftspec.proofs import contracts, targets
from kraftspec.proofs.contracts import PAIRS, TARGETS, Target
from kraftspec.proofs.obligations import FAILED, NO_COUNTEREXAMPLE, UNKNOWN, Obligation


@pytest.fixture(scope="module")
def found() -> dict[str, Obligation]:
    """Every run of this module, by subject: the contracts and pairs first (the longer runs), then
    the planted twins and differences."""
    runs = [
        *contracts.check_runs(),
        *contracts.compare_runs(),
        *contracts.check_runs(planted=True),
        *contracts.compare_runs(planted=True),
    ]
    return {obligation.subject: obligation for obligation in contracts.execute(runs)}


def resolve(name: str):
    """The function (or method) a qualified name names."""
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            thing = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[split:]:
            thing = getattr(thing, attribute)
        return thing
    raise LookupError(name)


def contract_lines(function) -> list[tuple[int, str]]:
    """The contract lines of ``function``'s docstring, with their line numbers in its file."""
    source, first = inspect.getsourcelines(function)
    return [
        (first + offset, line.strip())
        for offset, line in enumerate(source)
        if line.strip().startswith(("pre:", "post:", "raises:"))
    ]


def short(target: Target) -> str:
    return target.name.removeprefix("kraftspec.")


TWINS = [(target, twin) for target in TARGETS for twin in target.twins]
"""Every planted twin with its target (some targets have one per value of a profile parameter)."""

_PLANTED_PREFIX = "kraftspec.proofs.planted."


# ---- the contracts and their planted twins -----------------------------------------------------


@pytest.mark.parametrize("target, twin", TWINS, ids=lambda value: value.removeprefix(_PLANTED_PREFIX)
                         if isinstance(value, str) else short(value))
def test_planted_twin_carries_the_same_contract(target: Target, twin: str):
    contract = [line for _, line in contract_lines(resolve(target.name))]
    assert any(line.startswith("post:") for line in contract), f"{target.name} has no postcondition"
    assert [line for _, line in contract_lines(resolve(twin))] == contract


def test_every_profile_value_of_a_contract_has_a_planted_bug():
    """A contract that reads a profile parameter is seen to catch a bug under each of its values."""
    by_name = {target.name: target for target in TARGETS}
    assert len(by_name["kraftspec.model.reassignment.reassignment_lists"].twins) == 2  # one per layout
    assert len(by_name["kraftspec.model.partitions.reassignment_complete"].twins) == 3  # one per completion
    assert "kraftspec.model.partitions.preferred_order" in by_name
    assert len(set(twin for _, twin in TWINS)) == len(TWINS)


def test_impl_counterparts_are_compared_in_the_kip_631_profile():
    assert targets.KIP_631_COMPLETES == "adding-in-sync"
    # replicas (1, 2) to (2, 3): adding 3 in sync, the ISR meets the target, but 2 (kept) is out of it
    assert targets.model_reassignment_complete((1, 2, 3), (1, 3), (3,), (1,)) is True
    assert targets.impl_reassignment_complete((1, 2, 3), (1, 3), (3,), (1,)) is True
    assert partitions.reassignment_complete((1, 2, 3), (1, 3), (3,), (1,), "target-in-sync") is False


def test_typed_twin_is_the_model_function_itself():
    twin = targets.elect_leader
    assert twin.__code__ is partitions.elect_leader.__code__
    assert twin.__doc__ == partitions.elect_leader.__doc__
    assert twin.__globals__ is partitions.elect_leader.__globals__
    assert twin([3, 1, 2], [1, 2], targets.Predicate(frozenset({2}))) == 2


@pytest.mark.parametrize("target", TARGETS, ids=short)
def test_crosshair_finds_no_counterexample(found, target: Target):
    obligation = found[target.name]
    assert obligation.result == NO_COUNTEREXAMPLE, obligation.detail
    assert (obligation.group, obligation.transition) == ("contract", "-")
    assert "postcondition(s) searched, none refuted" in obligation.detail
    assert obligation.bound == f"{contracts.PER_CONDITION_TIMEOUT:g} s per condition"


@pytest.mark.parametrize("target, twin", TWINS, ids=lambda value: value.removeprefix(_PLANTED_PREFIX)
                         if isinstance(value, str) else short(value))
def test_crosshair_finds_the_planted_bug(found, target: Target, twin: str):
    obligation = found[twin]
    assert obligation.result == FAILED, obligation.detail
    function = resolve(twin)
    conditions = {f"proofs/planted.py:{number}: " for number, line in contract_lines(function)}
    refuted = [line for line in obligation.detail.splitlines() if line.startswith(tuple(conditions))]
    assert refuted, f"no condition of {target.planted} refuted:\n{obligation.detail}"
    assert all(f"when calling {function.__name__}(" in line for line in refuted)


def test_a_function_without_contract_is_not_reported_as_holding():
    [obligation] = contracts.check([Target("kraftspec.model.partitions.stays_leader", planted="")])
    assert obligation.result == UNKNOWN
    assert obligation.detail == "no postcondition found to check"


# ---- model against impl --------------------------------------------------------------------------


@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: pair.model.rsplit(".", 1)[1])
def test_model_and_impl_behave_alike(found, pair: contracts.Pair):
    obligation = found[pair.name]
    assert obligation.result == NO_COUNTEREXAMPLE, obligation.detail
    assert obligation.group == "equivalence"
    assert obligation.detail.startswith("No differences found")


@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: pair.planted.rsplit(".", 1)[1])
def test_diffbehavior_finds_the_planted_difference(found, pair: contracts.Pair):
    obligation = found[" vs ".join(pair.arguments(planted=True))]
    assert obligation.result == FAILED, obligation.detail
    assert obligation.detail.startswith("Given: (")
    assert f"{pair.model} : " in obligation.detail and f"{pair.planted} : " in obligation.detail
