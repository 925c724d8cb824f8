"""CrossHair contracts: which functions carry ``pre:``/``post:`` contracts that CrossHair checks,
which model and impl functions ``crosshair diffbehavior`` compares, and the calls that run both
(``kraftspec prove --crosshair``, tests/test_crosshair.py).

The contracts are PEP 316 docstring lines, in the function's own docstring, read beside its code:
``pre:`` what a caller guarantees, ``post:`` what the function then guarantees (``__return__`` is
its result, ``__old__`` the arguments before the call), ``raises:`` the exceptions that are part
of the contract.

CrossHair searches for inputs that break a contract, for a bounded time. Finding none is **not** a
proof, so each result is :data:`~kraftspec.proofs.obligations.NO_COUNTEREXAMPLE`, never PROVED,
and each target has a planted twin (proofs/planted.py) that the same settings must refute.
Every run is its own ``crosshair`` process; :data:`WORKERS` run at once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from attrs import frozen

from .obligations import FAILED, NO_COUNTEREXAMPLE, UNKNOWN, Obligation

PER_CONDITION_TIMEOUT = 5.0
"""CPU seconds CrossHair searches each postcondition (and each diffbehavior pair): CI's setting.
A run that finds nothing takes about this times the number of postconditions."""

WORKERS = 2
"""CrossHair processes run at once (each uses one core)."""

RUN_LIMIT_SECONDS = 600.0
"""Wall time after which a run is given up as UNKNOWN. CrossHair's own limits are CPU time, so a
run on a busy machine takes longer than its budget; this only guards against a hang."""

_PLANTED = "kraftspec.proofs.planted."
_TYPED = "kraftspec.proofs.targets."


@frozen
class Target:
    """A function with a contract. ``name``: its qualified name; ``planted``: its planted twin;
    ``given``: what CrossHair is given instead of the function itself, when that is a typed twin
    (proofs/targets.py), else ""; ``also_planted``: more planted twins, where one bug cannot show
    every case the contract covers (a profile parameter's values, say)."""

    name: str
    planted: str
    given: str = ""
    also_planted: tuple[str, ...] = ()

    def argument(self, planted: bool = False) -> str:
        """What ``crosshair check`` is given: the function (or its typed twin), or the planted twin."""
        return self.planted if planted else self.given or self.name

    @property
    def twins(self) -> tuple[str, ...]:
        """Every planted twin, the first one first."""
        return (self.planted, *self.also_planted)


TARGETS: tuple[Target, ...] = (
    Target(
        "kraftspec.model.partitions.elect_leader",
        _PLANTED + "elect_leader_ignoring_eligibility",
        given=_TYPED + "elect_leader",
    ),
    Target(
        "kraftspec.model.partitions.reassignment_complete",
        _PLANTED + "reassignment_complete_on_one_adding_replica",
        also_planted=(_PLANTED + "reassignment_complete_target_in_sync_on_adding",
                      _PLANTED + "reassignment_complete_shrinking_on_adding"),
    ),
    Target("kraftspec.model.partitions.preferred_order", _PLANTED + "preferred_order_without_removing"),
    Target("kraftspec.model.partitions.isr_after_fencing", _PLANTED + "isr_after_fencing_dropping_sole_member"),
    Target("kraftspec.model.reassignment.is_valid_target", _PLANTED + "is_valid_target_allowing_duplicates"),
    Target(
        "kraftspec.model.reassignment.reassignment_lists",
        _PLANTED + "reassignment_lists_in_current_order",
        also_planted=(_PLANTED + "reassignment_lists_staying_twice",),
    ),
    Target("kraftspec.model.reassignment.lists_after_cancel", _PLANTED + "lists_after_cancel_keeping_isr"),
    Target("kraftspec.model.state.next_offset", _PLANTED + "next_offset_at_last_batch_start"),
    Target("kraftspec.model.framing.uvarint", _PLANTED + "uvarint_in_eight_bit_groups"),
    Target("kraftspec.model.framing._Reader.uvarint", _PLANTED + "SixByteReader.uvarint"),
    Target("kraftspec.impl.codec.write_uvarint", _PLANTED + "write_uvarint_stopping_early"),
    Target("kraftspec.impl.codec.read_uvarint", _PLANTED + "read_uvarint_six_bytes"),
)


@frozen
class Pair:
    """The model's and impl's version of one pure function. ``name`` says which two; ``model`` and
    ``impl`` are their counterparts in one signature (proofs/targets.py); ``planted`` is a
    counterpart that differs from the model's (proofs/planted.py)."""

    name: str
    model: str
    impl: str
    planted: str

    def arguments(self, planted: bool = False) -> tuple[str, str]:
        """What ``crosshair diffbehavior`` is given: the model's and impl's (or the planted) counterpart."""
        return self.model, self.planted if planted else self.impl


PAIRS: tuple[Pair, ...] = (
    Pair(
        "kraftspec.model.framing.uvarint vs kraftspec.impl.codec.write_uvarint",
        _TYPED + "model_write_uvarint",
        _TYPED + "impl_write_uvarint",
        _PLANTED + "planted_write_uvarint",
    ),
    Pair(
        "kraftspec.model.framing._Reader.uvarint vs kraftspec.impl.codec.read_uvarint",
        _TYPED + "model_read_uvarint",
        _TYPED + "impl_read_uvarint",
        _PLANTED + "planted_read_uvarint",
    ),
    Pair(
        "kraftspec.model.partitions.elect_leader vs kraftspec.impl.builder.elect",
        _TYPED + "model_elect_leader",
        _TYPED + "impl_elect",
        _PLANTED + "planted_elect",
    ),
    Pair(  # kip-631's completion only: impl's builder takes no profile parameter (targets.py)
        "kraftspec.model.partitions.reassignment_complete vs kraftspec.impl.builder.reassignment_complete",
        _TYPED + "model_reassignment_complete",
        _TYPED + "impl_reassignment_complete",
        _PLANTED + "planted_reassignment_complete",
    ),
)


# ---- the commands ---------------------------------------------------------------------------------


def check_command(argument: str, per_condition_timeout: float = PER_CONDITION_TIMEOUT) -> list[str]:
    """``crosshair check`` on one function, as CI runs it."""
    return [
        *_crosshair(),
        "check",
        "--analysis_kind",
        "PEP316",
        "--per_condition_timeout",
        f"{per_condition_timeout:g}",
        "--report_all",  # a line for every postcondition, so that a missing contract shows
        argument,
    ]


def diff_command(first: str, second: str, per_condition_timeout: float = PER_CONDITION_TIMEOUT) -> list[str]:
    """``crosshair diffbehavior`` on two functions, as CI runs it."""
    return [*_crosshair(), "diffbehavior", "--per_condition_timeout", f"{per_condition_timeout:g}", first, second]


def _crosshair() -> list[str]:
    return [sys.executable, "-m", "crosshair"]


# ---- running them ---------------------------------------------------------------------------------


@frozen
class Run:
    """One CrossHair process to run, and how to read what it prints."""

    group: str
    subject: str
    command: tuple[str, ...]
    read: Callable[[int, str, str], tuple[str, str]]  # (exit code, stdout, stderr) -> (result, detail)
    bound: str


def check_runs(
    targets: Iterable[Target] | None = None,
    per_condition_timeout: float = PER_CONDITION_TIMEOUT,
    *,
    planted: bool = False,
) -> list[Run]:
    """The runs that check ``targets`` (default: all), or all their planted twins."""
    chosen = TARGETS if targets is None else tuple(targets)
    arguments = [twin for target in chosen for twin in target.twins] if planted else \
        [target.argument() for target in chosen]
    subjects = arguments if planted else [target.name for target in chosen]
    return [
        Run(
            group="contract",
            subject=subject,
            command=tuple(check_command(argument, per_condition_timeout)),
            read=_read_check,
            bound=f"{per_condition_timeout:g} s per condition",
        )
        for subject, argument in zip(subjects, arguments, strict=True)
    ]


def compare_runs(
    pairs: Iterable[Pair] | None = None,
    per_condition_timeout: float = PER_CONDITION_TIMEOUT,
    *,
    planted: bool = False,
) -> list[Run]:
    """The runs that compare each of ``pairs`` (default: all), or the model's against the planted counterpart."""
    chosen = PAIRS if pairs is None else tuple(pairs)
    return [
        Run(
            group="equivalence",
            subject=" vs ".join(pair.arguments(planted)) if planted else pair.name,
            command=tuple(diff_command(*pair.arguments(planted), per_condition_timeout)),
            read=_read_diff,
            bound=f"{per_condition_timeout:g} s",
        )
        for pair in chosen
    ]


def execute(runs: Sequence[Run], workers: int = WORKERS) -> list[Obligation]:
    """Run each of ``runs``, ``workers`` at a time, and say what each found, in the order given."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(_execute_one, runs))


def check(
    targets: Iterable[Target] | None = None,
    per_condition_timeout: float = PER_CONDITION_TIMEOUT,
    *,
    planted: bool = False,
    workers: int = WORKERS,
) -> list[Obligation]:
    """``crosshair check`` on ``targets`` (default: :data:`TARGETS`), or on all their planted twins:
    one obligation each, NO_COUNTEREXAMPLE or FAILED with the counterexample (UNKNOWN if CrossHair
    could not run, or found no postcondition to check)."""
    return execute(check_runs(targets, per_condition_timeout, planted=planted), workers)


def compare(
    pairs: Iterable[Pair] | None = None,
    per_condition_timeout: float = PER_CONDITION_TIMEOUT,
    *,
    planted: bool = False,
    workers: int = WORKERS,
) -> list[Obligation]:
    """``crosshair diffbehavior`` on ``pairs`` (default: :data:`PAIRS`), model against impl, or
    model against the planted counterpart: NO_COUNTEREXAMPLE, or FAILED with the inputs on which
    they differ."""
    return execute(compare_runs(pairs, per_condition_timeout, planted=planted), workers)


def _execute_one(run: Run) -> Obligation:
    start = time.perf_counter()
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # CrossHair's search order is seeded; keep the rest fixed too
    try:
        done = subprocess.run(run.command, capture_output=True, text=True, timeout=RUN_LIMIT_SECONDS, env=env)
    except subprocess.TimeoutExpired:
        result, detail = UNKNOWN, f"CrossHair did not finish in {RUN_LIMIT_SECONDS:g} s"
    else:
        result, detail = run.read(done.returncode, done.stdout, done.stderr)
    seconds = time.perf_counter() - start
    return Obligation(run.group, run.subject, "-", result, seconds, detail, run.bound)


# ---- reading what CrossHair prints ----------------------------------------------------------------

_MESSAGE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<level>error|warning|info): (?P<text>.*)$")
_SEARCHED = ("Not confirmed.", "Confirmed over all paths.")
_ROOT = Path(__file__).resolve().parent.parent


def _read_check(returncode: int, stdout: str, stderr: str) -> tuple[str, str]:
    messages = [m for m in map(_MESSAGE.match, stdout.splitlines()) if m]
    errors = [m for m in messages if m["level"] == "error"]
    if returncode == 1 and errors:
        return FAILED, "\n".join(_where(m) + m["text"] for m in errors)
    searched = [m for m in messages if m["level"] == "info" and m["text"] in _SEARCHED]
    if returncode != 0 or len(searched) != len(messages):
        return UNKNOWN, _tail(stdout + stderr) or f"crosshair exited with {returncode}"
    if not searched:
        return UNKNOWN, "no postcondition found to check"
    confirmed = sum(m["text"] == _SEARCHED[1] for m in searched)
    detail = f"{len(searched)} postcondition(s) searched, none refuted"
    return NO_COUNTEREXAMPLE, detail + (f"; {confirmed} confirmed over all paths" if confirmed else "")


def _read_diff(returncode: int, stdout: str, stderr: str) -> tuple[str, str]:
    if returncode == 1 and "Given:" in stdout:
        return FAILED, stdout.strip()
    if returncode == 0 and stdout.startswith("No differences found"):
        return NO_COUNTEREXAMPLE, stdout.splitlines()[0]
    return UNKNOWN, _tail(stdout + stderr) or f"crosshair exited with {returncode}"


def _where(message: re.Match) -> str:
    path = Path(message["path"])
    shown = path.relative_to(_ROOT) if path.is_relative_to(_ROOT) else path
    return f"{shown}:{message['line']}: "


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
