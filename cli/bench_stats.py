"""What the benchmarks share to stay honest on a machine shared with other work.

The legs of a comparison are measured interleaved: in each round every leg runs once, on the same
workload, in an order rotated from round to round, so that a change in the machine's load falls on
every leg alike instead of on whichever ran last. A figure is the median of the rounds, shown with
its range; a ratio between two legs is the median of the rounds' ratios (each round's two figures
were measured minutes apart at most, under about the same load). The load average is read at the
start and at the end, and a warning says, in plain words, when the rounds spread too widely for a
figure to mean anything, or when a round gave a ratio the machine's cores cannot produce.

The load average says how much other work ran inside this machine. It does not see a virtual
machine's host: other guests on the same cores slow every process here while the load stays low.
So the benchmarks also time a fixed piece of plain Python, the same from one kraftspec version to the
next, at the start, after every round and at the end (:func:`machine_speed`): its rate says how fast
this machine ran plain Python at that moment, and a warning says when it moved during the run. Its
readings also make figures measured on different days or machines comparable: the documents that
quote a benchmark's figures quote it beside them.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence

NOISY = 0.25
"""A relative spread ((max - min) / median) of the rounds beyond which a figure or a ratio means little."""


def say(out, text: str) -> None:
    out.write(text + "\n")
    out.flush()


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def load_average() -> tuple[float, float, float]:
    """The system's load average over 1, 5 and 15 minutes."""
    one, five, fifteen = os.getloadavg()
    return round(one, 2), round(five, 2), round(fifteen, 2)


def show_load(load: Sequence[float]) -> str:
    return f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"


def load_line(when: str) -> tuple[str, tuple[float, float, float]]:
    """A line telling the load average ``when`` (``at the start``, ``at the end``), and the load."""
    load = load_average()
    busy = load[0] > cores()
    note = f" (more than the {cores()} cores: other work competes with the measurement)" if busy else ""
    return f"load average {show_load(load)} (1, 5, 15 minutes) {when}, on {cores()} cores{note}", load


class _Cell:
    __slots__ = ("key", "value")

    def __init__(self, key: int, value: int) -> None:
        self.key, self.value = key, value


def _reference_loop() -> int:
    """One loop of the reference work: small objects made, indexed, sorted and formatted."""
    cells = [_Cell(i, i * 7 % 13) for i in range(100)]
    index = {cell.key: cell for cell in cells}
    total = 0
    for cell in sorted(cells, key=lambda c: (c.value, c.key)):
        total += index[cell.key].value + len(f"{cell.key}:{cell.value}")
    return total


def machine_speed(seconds: float = 0.2) -> float:
    """How fast this machine runs plain Python now: thousands of loops a second of a fixed piece of
    work (:func:`_reference_loop`: calls, attribute and dict access, small objects, a sort, string
    formatting) that does not change with kraftspec's code, run for about ``seconds``."""
    loops, started = 0, time.perf_counter()
    deadline = started + seconds
    while True:
        for _ in range(20):
            _reference_loop()
        loops += 20
        now = time.perf_counter()
        if now >= deadline:
            return round(loops / (now - started) / 1000, 2)


def speed_line(speed: float, when: str) -> str:
    return f"machine speed {speed:.2f} thousand reference loops/s {when} (a fixed piece of plain Python; see bench --help)"


def speed_warning(speeds: Sequence[float], limit: float = NOISY) -> str | None:
    """A warning when the machine's own speed (:func:`machine_speed`, read at the start, after each
    round and at the end) moved by more than ``limit`` during the run, else None."""
    figure = summary(speeds)
    if not noisy(figure, limit):
        return None
    return (f"the machine's own speed, a fixed piece of plain Python timed between the rounds, moved from "
            f"{figure['min']:.2f} to {figure['max']:.2f} thousand loops/s during the run (spread {figure['spread']:.0%}): "
            "something this machine's load average does not show (other virtual machines on the same host, say) "
            "changed its speed, so rounds measured at different moments are not comparable; run it again later")


def summary(values: Sequence[float]) -> dict:
    """The median of ``values``, their range and their relative spread ((max - min) / median)."""
    values = list(values)
    median = statistics.median(values)
    return {"median": median, "min": min(values), "max": max(values),
            "spread": (max(values) - min(values)) / median if median else float("inf"), "runs": values}


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Each round's ratio."""
    return [n / d for n, d in zip(numerators, denominators, strict=True)]


def rotated(names: Sequence[str], round_: int) -> list[str]:
    """The order of the legs in round ``round_`` (from 0): each round starts one leg further on."""
    shift = round_ % len(names) if names else 0
    return list(names[shift:]) + list(names[:shift])


def interleaved(legs: dict[str, Callable[[], float]], rounds: int,
                after_round: Callable[[int, list[str], dict[str, float]], None] | None = None) -> dict[str, list[float]]:
    """Run every leg once per round, ``rounds`` rounds, the order rotated each round (with two legs:
    AB BA AB ...). Each leg returns its figure for the round; the figures, leg by leg, in round
    order. ``after_round(round, order, figures)`` is told each round's figures as it ends."""
    names = list(legs)
    figures: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        order = rotated(names, round_)
        this_round = {}
        for name in order:
            this_round[name] = legs[name]()
            figures[name].append(this_round[name])
        if after_round is not None:
            after_round(round_, order, this_round)
    return figures


def noisy(figure: dict, limit: float = NOISY) -> bool:
    return figure["spread"] > limit


def noise_warning(what: str, figure: dict, load: str, limit: float = NOISY, form: str = "{:,.2f}") -> str | None:
    """A warning in plain words when ``figure``'s rounds spread more than ``limit``, else None;
    ``load`` tells the load average seen, ``form`` formats the figures."""
    if not noisy(figure, limit):
        return None
    return (f"the rounds of {what} range from {form.format(figure['min'])} to {form.format(figure['max'])} (spread "
            f"{figure['spread']:.0%}, more than {limit:.0%}): the machine's load changed too much during the run "
            f"(load average {load}) for this figure to mean anything; run it again on a quieter machine")


def loads_seen(start: Sequence[float], end: Sequence[float], rounds: Sequence[float] = ()) -> str:
    """The 1-minute load averages at the start, the highest at the end of a round, and at the end, in words."""
    during = f", up to {max(rounds):.2f} during the rounds" if rounds else ""
    return f"{start[0]:.2f} at the start{during}, {end[0]:.2f} at the end"


def impossible_rounds(round_ratios: Sequence[float], bound: float) -> list[int]:
    """The rounds (from 1) whose ratio exceeds ``bound``, the most the machine can physically give
    (a speedup of two workers over one cannot exceed 2, nor the number of cores)."""
    return [i + 1 for i, ratio in enumerate(round_ratios) if ratio > bound]


def impossible_warning(what: str, round_ratios: Sequence[float], bound: float, why: str,
                       form: str = "{:.2f}") -> str | None:
    """A warning naming the rounds whose ratio no machine like this one can give: noise, not speed."""
    rounds = impossible_rounds(round_ratios, bound)
    if not rounds:
        return None
    shown = ", ".join(f"round {r}: {form.format(round_ratios[r - 1])}" for r in rounds)
    return (f"{what} above {form.format(bound)} cannot be true ({why}); {shown}: the load changed within the "
            "round, so that figure is noise, not speed")


def met(value: float, goal: float, higher_is_better: bool) -> bool:
    return value >= goal if higher_is_better else value <= goal


def close_call(value: float, goal: float, higher_is_better: bool) -> str:
    """For a figure within 1% of its goal, but not on it, by how much it meets or misses it: the
    digits a figure is shown with may hide that (a median of 1.6996 times against a goal of 1.70 is
    shown as 1.70x, and not met). Otherwise nothing."""
    if not goal or value == goal or abs(value - goal) >= 0.01 * abs(goal):
        return ""
    beyond = (value - goal) / abs(goal) * (1 if higher_is_better else -1)
    return f" ({'ahead' if beyond > 0 else 'short'} by {abs(beyond):.2%}: {_digits(value)} against {_digits(goal)})"


def _digits(value: float) -> str:
    """``value`` to five significant digits, or to the unit if it has more, never in exponent form
    (99,465 against 100,000; 1.6996 against 1.7)."""
    whole = len(str(int(abs(value))))
    return f"{value:,.{max(5, whole)}g}"


def value_verdict(value: float, goal: float, higher_is_better: bool = True) -> str:
    """``met`` or ``NOT met`` for one figure, by how much where it is a close call."""
    return ("met" if met(value, goal, higher_is_better) else "NOT met") + close_call(value, goal, higher_is_better)


def verdict(figure: dict, goal: float, higher_is_better: bool = True) -> str:
    """``met`` or ``NOT met`` for the median, by how much where it is a close call, and whether the
    rounds fall on both sides of the goal."""
    text = value_verdict(figure["median"], goal, higher_is_better)
    if figure["min"] < goal < figure["max"]:
        text += ", but the rounds fall on both sides of it"
    return text


def show(figure: dict, unit: str = "", digits: int = 0) -> str:
    """``median unit (min-max, spread N%)``."""
    form = f",.{digits}f"
    unit = f" {unit}" if unit else ""
    return (f"{figure['median']:{form}}{unit} (rounds {figure['min']:{form}} to {figure['max']:{form}}, "
            f"spread {figure['spread']:.0%})")


def busy_warning(loads: Sequence[float], consequence: str) -> str | None:
    """A warning when a 1-minute load average seen during the run (at the start, after a round, at
    the end) was above the number of cores: other work took CPU time from the measurement, however
    steady the rounds were. ``consequence`` says what that does to this benchmark's figures."""
    highest = max(loads)
    if highest <= cores():
        return None
    return (f"the load average reached {highest:.2f} on {cores()} cores: other work ran beside the measurement; "
            f"{consequence}")
