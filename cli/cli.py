"""The ``kraftspec`` command line."""

from __future__ import annotations

import argparse
import sys

from kraftspec import __version__
from kraftspec.spec import SPEC_VERSION


def bounded(name: str, low: int, high: int):
    """An argparse type: an integer in [low, high], with an error naming the option and value."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{name} must be between {low} and {high}, got {value}")
        return value

    return parse


def add_profile_option(parser, what: str = "the behaviour profile to run the model under") -> None:
    """``--profile NAME``, one of the profiles of spec/profiles.toml, default kip-631; ``what`` says
    what the option chooses, for the help."""
    from kraftspec.spec.profiles import DEFAULT_PROFILE, profile, profile_names

    names = profile_names()
    listed = [f"{name} ({profile(name).title}{', the default' if name == DEFAULT_PROFILE else ''})" for name in names]
    parser.add_argument("--profile", choices=names, default=DEFAULT_PROFILE, metavar="NAME",
                        help=f"{what}: {', '.join(listed[:-1])} or {listed[-1]}; see spec/profiles.md")


def profile_timing(setting: str) -> str:
    """A timing's default in each profile, for the help: ``3000 in kip-631, 2000 in kafka``."""
    from kraftspec.spec.profiles import profile, profile_names

    index = {"heartbeat": 0, "session": 1}[setting]
    return ", ".join(f"{profile(name).default_timings[index]} in {name}" for name in profile_names())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kraftspec",
        description="kraftspec: the KRaft controller's broker lifecycle (KIP-631) as a specification, "
        "an executable model, and the tools to check other implementations against it.",
    )
    parser.add_argument("--version", action="version", version=f"kraftspec {__version__} (spec {SPEC_VERSION})")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    explain = commands.add_parser(
        "explain",
        help="tell the story of a random scenario, rule by rule",
        description="Run the model on a seeded random scenario (brokers that start, register, catch up, "
        "heartbeat, shut down and crash; an operator who creates a topic and moves partitions; commits "
        "and failovers of the quorum) and print, step by step, the event, the records it appended, the "
        "responses released, the rules of spec/ that fired, and the brokers and partitions after it. "
        "The same seed always tells the same story.",
    )
    explain.add_argument("--seed", type=bounded("--seed", 0, 2**63 - 1), default=1, help="random seed (default 1)")
    explain.add_argument("--brokers", type=bounded("--brokers", 1, 20), default=3, help="number of brokers (default 3)")
    explain.add_argument(
        "--partitions", type=bounded("--partitions", 1, 100), default=3, help="partitions of the topic the operator creates (default 3)"
    )
    explain.add_argument("--steps", type=bounded("--steps", 1, 100_000), default=40, help="number of steps (default 40)")
    add_profile_option(explain, "the behaviour profile of the controller")
    explain.add_argument(
        "--heartbeat-interval-ms", type=bounded("--heartbeat-interval-ms", 1, 10**9), default=None,
        help=f"broker.heartbeat.interval.ms (default: the profile's, {profile_timing('heartbeat')})",
    )
    explain.add_argument(
        "--session-timeout-ms", type=bounded("--session-timeout-ms", 1, 10**9), default=None,
        help=f"broker.session.timeout.ms (default: the profile's, {profile_timing('session')})",
    )
    explain.add_argument("--no-legend", action="store_true", help="leave out the closing list of the rules that fired")

    from kraftspec.bench import add_parser as add_bench
    from kraftspec.check_config import add_parser as add_check_config
    from kraftspec.conform import add_parser as add_conform
    from kraftspec.kafka_matrix import add_causes_parser as add_kafka_causes
    from kraftspec.kafka_matrix import add_parser as add_kafka_matrix
    from kraftspec.metadata_shell import add_parser as add_metadata_shell
    from kraftspec.metrics import add_parser as add_metrics
    from kraftspec.prove import add_parser as add_prove
    from kraftspec.storage import add_parsers as add_storage_commands
    from kraftspec.traces import add_parsers as add_trace_commands

    add_conform(commands)
    add_trace_commands(commands)
    add_bench(commands)
    add_prove(commands)
    add_check_config(commands)
    add_kafka_matrix(commands)
    add_kafka_causes(commands)
    add_storage_commands(commands)
    from kraftspec.log_tools import add_parsers as add_log_commands

    add_log_commands(commands)
    add_metadata_shell(commands)
    add_metrics(commands)
    from kraftspec.site import add_parser as add_site

    add_site(commands)
    from kraftspec.compiled import add_parser as add_compile

    add_compile(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        if args.command == "explain":
            from kraftspec.explain import explain

            return explain(args, parser)
        if args.command == "bench":
            from kraftspec.bench import run

            return run(args)
        if args.command == "conform":
            from kraftspec.conform import run as conform

            return conform(args)
        if args.command == "prove":
            from kraftspec.prove import run as prove

            return prove(args)
        if args.command == "check-config":
            from kraftspec.check_config import run as check_config

            return check_config(args)
        if args.command == "kafka-matrix":
            from kraftspec.kafka_matrix import run as kafka_matrix

            return kafka_matrix(args)
        if args.command == "kafka-causes":
            from kraftspec.kafka_matrix import run_causes

            return run_causes(args)
        if args.command in ("storage", "cluster"):
            from kraftspec.storage import run as storage

            return storage(args)
        from kraftspec.log_tools import COMMANDS as LOG_COMMANDS

        if args.command in LOG_COMMANDS:
            return LOG_COMMANDS[args.command](args)
        if args.command == "metadata-shell":
            from kraftspec.metadata_shell import run as metadata_shell

            return metadata_shell(args)
        if args.command == "metrics":
            from kraftspec.metrics import run as metrics

            return metrics(args)
        if args.command == "site":
            from kraftspec.site import run as site

            return site(args)
        if args.command == "compile":
            from kraftspec.compiled import run as compile_modules

            return compile_modules(args)
        from kraftspec.traces import COMMANDS

        if args.command in COMMANDS:
            return COMMANDS[args.command](args)
    except BrokenPipeError:  # e.g. `kraftspec explain | head`
        sys.stderr.close()
        return 0
    parser.error(f"unknown command {args.command!r}")
    return 2
