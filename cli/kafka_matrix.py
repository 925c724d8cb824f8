"""``kraftspec kafka-matrix``: the same traces against several Apache Kafka releases."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kraftspec.traces import _seeds


def add_parser(commands) -> None:
    from kraftspec.conformance.kafka import DEFAULT_VERSIONS

    matrix = commands.add_parser(
        "kafka-matrix",
        help="replay the same traces against several Apache Kafka releases, side by side",
        description="Replay the regression corpus and a fixed range of random walks against Apache Kafka's "
        "own controller, one release after another (each built with Maven on first use, then cached), and "
        "print how many traces pass per release and level, then every trace whose outcome changes from "
        "one release to the next: the place to look for the Kafka change behind a divergence. Needs Java "
        "17 and Maven.",
    )
    matrix.add_argument("--versions", default=",".join(DEFAULT_VERSIONS),
                        help=f"Kafka releases, comma-separated, oldest first (default {','.join(DEFAULT_VERSIONS)})")
    matrix.add_argument("--corpus", metavar="DIR", default=None,
                        help="the traces to replay besides the walks (default: kraftspec's regression corpus)")
    matrix.add_argument("--seeds", type=_seeds, default=range(0, 300),
                        help="the random walks: a seed N or a range FIRST:END (default 0:300)")
    matrix.add_argument("--steps", type=int, default=50, help="events per walk (default 50)")
    matrix.add_argument("--levels", default="responses,state,records",
                        help="comparison levels, comma-separated (default responses,state,records)")
    matrix.add_argument("--json", metavar="FILE", help="also write the results, trace by trace, as JSON")


def run(args) -> int:
    from kraftspec.conformance.kafka_matrix import changes, matrix_traces, run_matrix, table, to_json
    from kraftspec.conformance.trace import LEVELS, TraceError

    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    levels = [level.strip() for level in args.levels.split(",") if level.strip()]
    unknown = [level for level in levels if level not in LEVELS]
    if unknown or not levels or not versions:
        print(f"kraftspec: error: --levels takes {', '.join(LEVELS)}; --versions at least one release", file=sys.stderr)
        return 2
    corpus = Path(args.corpus) if args.corpus else Path(__file__).resolve().parents[1] / "conformance" / "corpus"
    if not corpus.is_dir():
        from kraftspec.conformance import mutation

        corpus = mutation.CORPUS
    try:
        traces = matrix_traces(corpus, args.seeds, args.steps)
        result = run_matrix(versions, traces, levels, progress=lambda text: print(text, file=sys.stderr, flush=True))
    except (ValueError, TraceError) as problem:  # a release that does not resolve, no Maven, a bad trace
        print(f"kraftspec: error: {problem}", file=sys.stderr)
        return 2
    corpus_size = sum(1 for name, _ in traces if name.startswith("corpus/"))
    print(table(result, corpus_size, len(args.seeds)))
    moved = changes(result)
    print(f"\n{len(moved)} outcomes change from one release to the next" + (":" if moved else "."))
    for line in moved:
        print(f"  {line}")
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(result), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


def add_causes_parser(commands) -> None:
    causes = commands.add_parser(
        "kafka-causes",
        help="replay traces against Apache Kafka and name the known difference behind each failure",
        description="Replay traces against Apache Kafka's own controller and say, for each trace that fails, "
        "which known difference of the divergence ledger (spec/kafka.md, part B) explains where it parts from "
        "Kafka, with the count per difference; list the failures no known difference explains. Needs Java 17 "
        "and Maven. Exit status 1 if a failure is unexplained, 2 for bad input.",
    )
    causes.add_argument("traces", nargs="+", help="trace files, or directories of *.jsonl")
    causes.add_argument("--adapter", default="kafka:4.4.0", help="the Kafka release, kafka:VERSION (default kafka:4.4.0)")
    causes.add_argument("--level", choices=("responses", "state", "records"), default="records",
                        help="what to compare (default records)")
    causes.add_argument("--json", metavar="FILE", help="also write each trace's outcome and cause as JSON")


def run_causes(args) -> int:
    from kraftspec.conformance.kafka_causes import main

    argv = [*args.traces, "--adapter", args.adapter, "--level", args.level]
    if args.json:
        argv += ["--json", args.json]
    return main(argv)
