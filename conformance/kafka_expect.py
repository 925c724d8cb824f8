"""What Apache Kafka's controller does with the regression corpus, recorded: the expectation file
that CI checks, so that a new divergence, or one that disappears, fails the build.

``conformance/kafka-expected.json`` names a Kafka release and a level per profile, and for every corpus trace
its outcome there (``passed``, or ``failed at step N (part)``) and, for a failure, its cause: the
decision (DEC-n) or rule where kraftspec's kip-631 profile and Kafka part, in a sentence.

    python -m kraftspec.conformance.kafka_expect            # check: what CI does
    python -m kraftspec.conformance.kafka_expect --write    # record the outcomes again, keeping the causes

``--write`` keeps the cause of every trace whose outcome is unchanged and marks the others
``UNEXPLAINED``, which the check refuses until someone writes the cause.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .kafka_matrix import outcome
from .replay import replay
from .subprocess_adapter import adapter_from_spec
from .trace import profile_of, read_all

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "kafka-expected.json"
CORPUS = HERE / "corpus"
UNEXPLAINED = "UNEXPLAINED: replay it, find the decision or rule behind it, and write it here"


def level_of(levels: str | dict[str, str], trace) -> str:
    """The level a trace is compared at: one for every trace, or one per profile (the kafka
    profile's records are Kafka's, so its traces compare at ``records``; kip-631's at ``responses``)."""
    return levels if isinstance(levels, str) else levels[profile_of(trace.header.config)]


def observe(version: str, levels: str | dict[str, str], corpus: Path = CORPUS) -> dict[str, str]:
    """Each corpus trace's outcome against Kafka ``version`` at its level, by file name."""
    adapter = adapter_from_spec(f"kafka:{version}")
    try:
        return {path.name: outcome(replay(trace, adapter, level_of(levels, trace), path)).text()
                for path, trace in read_all([corpus])}
    finally:
        getattr(adapter, "shutdown", adapter.close)()


def load(path: Path = EXPECTED) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def compare(expected: dict[str, Any], observed: dict[str, str]) -> list[str]:
    """Every difference between the recorded outcomes and the observed ones, one line each; and
    every recorded failure without a cause."""
    problems = []
    recorded = expected["traces"]
    for name, seen in sorted(observed.items()):
        entry = recorded.get(name)
        if entry is None:
            problems.append(f"{name}: not in the expectation file; against Kafka it {seen}")
        elif entry["outcome"] != seen:
            problems.append(f"{name}: recorded as {entry['outcome']} ({entry.get('cause', 'no cause')}), now {seen}")
        elif seen != "passed" and (not entry.get("cause") or entry["cause"].startswith("UNEXPLAINED")):
            problems.append(f"{name}: {seen}, and no cause is written for it")
    for name in sorted(set(recorded) - set(observed)):
        problems.append(f"{name}: recorded, but no longer in the corpus")
    return problems


def write(observed: dict[str, str], old: dict[str, Any], path: Path = EXPECTED) -> None:
    traces = {}
    for name, seen in sorted(observed.items()):
        before = old.get("traces", {}).get(name, {})
        entry: dict[str, str] = {"outcome": seen}
        if seen != "passed":
            entry["cause"] = before.get("cause", UNEXPLAINED) if before.get("outcome") == seen else UNEXPLAINED
        traces[name] = entry
    document = {**{k: v for k, v in old.items() if k != "traces"}, "traces": traces}
    path.write_text(json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kraftspec.conformance.kafka_expect",
        description="Replay the regression corpus against the Kafka release the expectation file names and "
        "compare each trace's outcome with the recorded one. Needs Java 17 and Maven (the Kafka adapter is "
        "built on first use).")
    parser.add_argument("--write", action="store_true",
                        help="record the observed outcomes in the file, keeping the causes of unchanged ones")
    parser.add_argument("--file", type=Path, default=EXPECTED, help="the expectation file (default: kraftspec's own)")
    args = parser.parse_args(argv)
    expected = load(args.file)
    try:
        observed = observe(expected["kafka"], expected["level"])
    except ValueError as problem:  # no Maven, no Java, a release that does not resolve
        print(f"kraftspec: error: {problem}", file=sys.stderr)
        return 2
    if args.write:
        write(observed, expected, args.file)
    problems = compare(load(args.file), observed)
    passed = sum(1 for seen in observed.values() if seen == "passed")
    levels = expected["level"] if isinstance(expected["level"], str) else ", ".join(
        f"{profile} at {level}" for profile, level in expected["level"].items())
    print(f"Kafka {expected['kafka']} ({levels}): {passed} of {len(observed)} corpus traces pass")
    for line in problems:
        print(f"  {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
