"""kraftspec's impl behind the conformance protocol (spec/protocol.md): an example server.

    python -m kraftspec.conformance.examples.impl_server       (the protocol on stdin and stdout)
    --adapter 'subprocess:python -m kraftspec.conformance.examples.impl_server'   (as kraftspec names it)

It is written as a model for a server in another language: read a line from stdin, decode it,
act, write exactly one line to stdout, flush, repeat. Nothing else may reach stdout (here, stray
prints are sent to stderr); logs go to stderr. The controller is kraftspec's impl, through
``ImplAdapter``, which already speaks the neutral form of spec/traces.md; a server for another
implementation translates that form to and from its own classes instead.

The ``--*-at N`` options misbehave on purpose at the event numbered N of any trace, so that the
subprocess adapter's verdicts can be tested: hang, crash, answer garbage, report an error, answer
out of order, or change one reply.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from kraftspec.conformance.adapters import ImplAdapter
from kraftspec.spec.profiles import profile_names

PROTOCOL = 1
NAME = "kraftspec impl (example server)"
LEVELS = ["responses", "state", "records"]
PROFILES = list(profile_names())  # impl's configuration takes every behaviour profile of spec/profiles.toml
encode = json.JSONEncoder(separators=(",", ":")).encode  # compact: json.dumps with separators, built once


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kraftspec.conformance.examples.impl_server",
        description="kraftspec's impl behind the conformance protocol (spec/protocol.md), on stdin and stdout.",
    )
    faults = parser.add_argument_group("faults, for testing the subprocess adapter (N: the event's n in its trace)")
    for option, what in (
        ("--hang-at", "stop answering (sleep) on event N"),
        ("--crash-at", "exit with code 3 on event N, with a message on stderr"),
        ("--garbage-at", "answer event N with a line that is not JSON"),
        ("--error-at", "answer event N with an error message"),
        ("--misnumber-at", "answer event N as if it were event N+1"),
        ("--alter-reply-at", "add 1 to the first integer of the first reply released at or after event N (once a trace)"),
    ):
        faults.add_argument(option, type=int, metavar="N", help=what)
    lacks = parser.add_argument_group("a server that lacks something, for testing declarations of what it does not support")
    lacks.add_argument("--without-field", action="append", default=[], metavar="MESSAGE.FIELD",
                       help="leave this response field out of every reply (e.g. BrokerHeartbeatResponse.LowestAcknowledgedOffset)")
    lacks.add_argument("--declare", action="store_true", help="declare the --without-field fields unsupported in started")
    lacks.add_argument("--unsupported-request", action="append", default=[], metavar="API",
                       help="declare this request unsupported in started (e.g. AlterIsr)")
    lacks.add_argument("--levels", default=",".join(LEVELS), help="the levels listed in started (default: all three)")
    lacks.add_argument("--profiles", default=",".join(PROFILES),
                       help=f"the behaviour profiles listed in started (default: {','.join(PROFILES)})")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries the protocol only: anything printed goes to stderr
    controller = ImplAdapter()
    answer: dict[str, Any] | str  # a str: a fault's own line (see misbehave)
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
            kind, n = message["type"], message.get("n")
        except (ValueError, KeyError, TypeError, AttributeError) as problem:
            message, kind, n = None, None, None
            answer = {"type": "error", "message": f"cannot read the line: {problem}"}
        if message is not None:
            if kind == "start":
                args.altered = False  # the faults act once in every trace
            if kind == "event":
                crash_or_hang(args, n)
            try:
                answer = handle(controller, message, args)
            except Exception as problem:  # report it and carry on answering: kraftspec ends the trace
                answer = {"type": "error", "message": f"{type(problem).__name__}: {problem}"}
                if n is not None:
                    answer["n"] = n
            if kind == "event":
                answer = misbehave(args, n, answer)
        text = answer if isinstance(answer, str) else encode(answer)  # a str: a fault's own line
        out.write(text.encode() + b"\n")
        out.flush()  # kraftspec may be waiting for this very line: never hold it back
        if kind == "stop":
            return 0
    return 0  # the end of the input: kraftspec is gone


def handle(controller: ImplAdapter, message: dict, args: argparse.Namespace | None = None) -> dict:
    """The answer to one message."""
    kind = message["type"]
    if kind == "start":
        if message.get("protocol") != PROTOCOL:
            return {"type": "error", "message": f"this server speaks protocol {PROTOCOL}, not {message.get('protocol')!r}"}
        controller.start(message["config"])  # a fresh controller, whatever came before
        started = {"type": "started", "protocol": PROTOCOL, "name": NAME, "levels": LEVELS, "profiles": PROFILES}
        if args is not None:
            started["levels"] = args.levels.split(",")
            started["profiles"] = args.profiles.split(",")
            unsupported = {"fields": args.without_field if args.declare else [], "requests": args.unsupported_request}
            started["unsupported"] = {key: value for key, value in unsupported.items() if value}
        return started
    if kind == "event":
        result = controller.step(message["event"])  # {"seq", "records", "replies"}, in the neutral form
        for name in args.without_field if args is not None else ():
            message_name, _, field = name.partition(".")
            for reply in result["replies"]:
                if f"{reply['api']}Response" == message_name:
                    reply["body"].pop(field, None)
        if message.get("committed"):
            result["committed"] = controller.committed()
        return {"type": "result", "n": message["n"], **result}
    if kind == "stop":
        return {"type": "stopped"}
    return {"type": "error", "message": f"unknown message type {kind!r}"}


# ---- faults, on purpose ------------------------------------------------------------------------


def crash_or_hang(args: argparse.Namespace, n: int) -> None:
    if n == args.hang_at:
        time.sleep(3600)
    if n == args.crash_at:
        sys.stderr.write(f"impl_server: crashing at event {n}, as --crash-at asks\n")
        sys.stderr.flush()
        os._exit(3)


def misbehave(args: argparse.Namespace, n: int, answer: dict) -> dict | str:
    """The answer to event ``n``, spoiled as the fault options ask (a str is sent as the line itself)."""
    if n == args.garbage_at:
        return "this is not JSON"
    if n == args.error_at:
        return {"type": "error", "n": n, "message": "simulated failure (--error-at)"}
    if n == args.misnumber_at:
        return {**answer, "n": n + 1}
    if args.alter_reply_at is not None and not args.altered and n >= args.alter_reply_at and answer.get("replies"):
        body = answer["replies"][0]["body"]
        key = next(k for k, v in body.items() if isinstance(v, int) and not isinstance(v, bool))
        body[key] += 1
        args.altered = True
    return answer


if __name__ == "__main__":
    raise SystemExit(main())
