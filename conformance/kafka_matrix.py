"""The same traces against several Apache Kafka releases: passed and failed per release and level,
and the traces whose outcome changes from one release to the next (where to look for the Kafka
change behind a divergence)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from attrs import frozen

from .generate import walk
from .replay import replay
from .subprocess_adapter import adapter_from_spec
from .kafka import DEFAULT_VERSIONS
from .trace import Trace, read_all

__all__ = ["DEFAULT_VERSIONS", "changes", "matrix_traces", "run_matrix", "table", "to_json"]


@frozen
class Outcome:
    """One trace against one release at one level: ``passed``, ``not supported``, or where it failed."""

    status: str  # "passed", "failed", "not supported"
    where: str = ""  # for a failure: "step 4 (replies)"

    def text(self) -> str:
        return self.status if not self.where else f"{self.status} at {self.where}"


def outcome(verdict) -> Outcome:
    if verdict.passed:
        return Outcome("passed")
    if getattr(verdict, "not_supported", None):
        return Outcome("not supported", verdict.not_supported)
    d = verdict.divergence
    return Outcome("failed", f"step {d.step} ({d.part})")


def matrix_traces(corpus: Path | None, seeds: range, steps: int) -> list[tuple[str, Trace]]:
    """The corpus's traces, then one walk per seed."""
    traces = [(f"corpus/{path.name}", trace) for path, trace in (read_all([corpus]) if corpus else [])]
    traces += [(f"walk {seed}", walk(seed, steps)) for seed in seeds]
    return traces


def run_matrix(versions: Iterable[str], traces: list[tuple[str, Trace]], levels: Iterable[str],
               progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Every trace against every release at every level: ``{"versions": {v: {level: {name: outcome}}}}``."""
    results: dict[str, dict[str, dict[str, Outcome]]] = {}
    seconds: dict[str, float] = {}
    names: dict[str, str] = {}
    for version in versions:
        progress(f"Kafka {version}: building or starting the adapter")
        adapter = adapter_from_spec(f"kafka:{version}")
        started = time.perf_counter()
        try:
            results[version] = {}
            for level in levels:
                progress(f"Kafka {version}: {len(traces)} traces at level {level}")
                results[version][level] = {name: outcome(replay(trace, adapter, level)) for name, trace in traces}
            names[version] = adapter.name
        finally:
            getattr(adapter, "shutdown", adapter.close)()
        seconds[version] = time.perf_counter() - started
    return {"results": results, "seconds": seconds, "names": names}


def counts(outcomes: dict[str, Outcome]) -> dict[str, int]:
    tally = {"passed": 0, "failed": 0, "not supported": 0}
    for o in outcomes.values():
        tally[o.status] += 1
    return tally


def table(matrix: dict[str, Any], corpus_size: int, walks: int) -> str:
    """The matrix as a Markdown table: one row per release, passed/total per level and source."""
    results = matrix["results"]
    levels = list(next(iter(results.values())).keys()) if results else []
    head = ["Kafka"] + [f"{level}: corpus ({corpus_size})" for level in levels] + [f"{level}: walks ({walks})" for level in levels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for version, by_level in results.items():
        cells = [version]
        for source in ("corpus/", "walk "):
            for level in levels:
                picked = {n: o for n, o in by_level[level].items() if n.startswith(source)}
                c = counts(picked)
                cell = f"{c['passed']}/{len(picked)}"
                if c["not supported"]:
                    cell += f" ({c['not supported']} n/s)"
                cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def changes(matrix: dict[str, Any]) -> list[str]:
    """The traces whose outcome differs between consecutive releases, one line each."""
    results = matrix["results"]
    versions = list(results)
    lines = []
    for older, newer in zip(versions, versions[1:], strict=False):
        for level, before in results[older].items():
            after = results[newer][level]
            for name, o in before.items():
                if o != after[name]:
                    lines.append(f"{older} -> {newer}, {level}, {name}: {o.text()} -> {after[name].text()}")
    return lines


def to_json(matrix: dict[str, Any]) -> dict[str, Any]:
    return {
        "versions": {
            version: {
                "adapter": matrix["names"].get(version),
                "seconds": round(matrix["seconds"][version], 1),
                "levels": {level: {"counts": counts(outcomes), "traces": {n: o.text() for n, o in outcomes.items()}}
                           for level, outcomes in by_level.items()},
            }
            for version, by_level in matrix["results"].items()
        },
        "changes": changes(matrix),
    }
