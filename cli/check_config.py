"""``kraftspec check-config FILE``: are a configuration's lease timings safe?

Reads a server.properties-style file, takes the two timing settings Kafka has
(``broker.heartbeat.interval.ms``, ``broker.session.timeout.ms``) and kraftspec's own timing
assumptions (the ``kraftspec.*`` keys, or the command-line options, with documented defaults),
checks CONF-2 with the model's own :class:`~kraftspec.model.state.Config`, and runs the lease timing
theorems of ``kraftspec.proofs.timing`` on the numbers with Z3. A theorem that fails comes with
its counterexample as a timeline in milliseconds.

The file is read by :class:`kraftspec.server_config.ServerConfig`, which refuses what is not a
properties file and any setting of seed 000's configuration that is invalid.
A key kraftspec does not know is reported with the nearest known key; one that looks like a
misspelling of a timing setting the file leaves unset is bad input, so that a typo never leaves a
default in force unnoticed.

Exit status: 0 every theorem holds, 1 one fails, 2 bad input (the message names the file, the
line, the key and the value, or the offending text).
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path

from attrs import frozen

from kraftspec.properties import NEAR_MISS, BadInput, nearest
from kraftspec.server_config import ServerConfig, parse_int

MAX_INT = 2**31 - 1  # Kafka's int settings
PPM = 1_000_000


@frozen
class Setting:
    """One timing setting: its key in the file, its option (kraftspec's own only), its symbol in
    the theorems, its default, its range."""

    key: str
    option: str | None
    attribute: str  # of kraftspec.proofs.timing.Timing
    symbol: str
    default: int | None  # None: computed (the session timeout)
    minimum: int
    maximum: int
    unit: str
    meaning: str


def _settings():
    from kraftspec.proofs import timing_settings as timing

    return (
        Setting("broker.heartbeat.interval.ms", None, "heartbeat_interval_ms", "h", timing.DEFAULT_HEARTBEAT_INTERVAL_MS,
                1, MAX_INT, "ms", "how often a broker sends a heartbeat (Kafka's setting, LEASE-1)"),
        Setting("broker.session.timeout.ms", None, "session_timeout_ms", "s", timing.DEFAULT_SESSION_TIMEOUT_MS,
                1, MAX_INT, "ms", "how long the controller's lease lasts without contact (Kafka's setting, LEASE-1)"),
        Setting("kraftspec.max.message.delay.ms", "--max-message-delay-ms", "max_message_delay_ms", "d",
                timing.DEFAULT_MAX_MESSAGE_DELAY_MS, 0, MAX_INT, "ms",
                "the longest a message that arrives takes, the controller's queue included"),
        Setting("kraftspec.clock.drift.ppm", "--clock-drift-ppm", "clock_drift_ppm", "r", timing.DEFAULT_CLOCK_DRIFT_PPM,
                0, PPM - 1, "parts per million", "how much faster or slower than real time a node's clock may run"),
        Setting("kraftspec.broker.self.fence.timeout.ms", "--self-fence-timeout-ms", "self_fence_timeout_ms", "b",
                timing.DEFAULT_SELF_FENCE_TIMEOUT_MS, 1, MAX_INT, "ms",
                "the broker-side timeout of seed 003: the broker fences itself this long after sending the last "
                "heartbeat that was answered"),
        Setting("kraftspec.max.stale.leader.ms", "--max-stale-leader-ms", "max_stale_leader_ms", "M", None, 0, MAX_INT,
                "ms", "how long a deposed leader may go on acting after the controller moved its leaderships"),
    )


# ---- the settings ----------------------------------------------------------------------------------


def parse_value(setting: Setting, text: str) -> int:
    """An integer in the setting's range; else ValueError saying what is wrong with it."""
    return parse_int(text, setting.minimum, setting.maximum, setting.unit)


def resolve(path: Path, options: dict[str, int | None]) -> tuple[dict[str, int], dict[str, str], int, list]:
    """The value of every setting and where it came from (a command-line option, the file, or the
    default), how many other known keys the file holds, and the unknown or retired keys
    (kraftspec.properties.Unknown)."""
    settings = _settings()
    known = tuple(s.key for s in settings)
    config, unknown = ServerConfig.read(path, also=known, timings_together=False)  # CONF-2 is a check here
    found = config.settings
    for key, setting in found.items():
        if key.startswith("kraftspec.") and key not in known:
            own = ", ".join(k for k in known if k.startswith("kraftspec."))
            close = nearest(key, known)
            hint = f"; did you mean {close}?" if close else ""
            raise BadInput(f"{path}, line {setting.line}: {key} = {setting.value!r} is not a kraftspec setting "
                           f"(they are: {own}){hint}", file=str(path), line=setting.line, key=key, value=setting.value)
    values: dict[str, int] = {}
    sources: dict[str, str] = {}
    for setting in settings:
        if setting.option and (given := options.get(setting.attribute)) is not None:
            values[setting.attribute] = given
            sources[setting.key] = f"command line {setting.option}"
        elif setting.key in found:
            text, line, earlier = found[setting.key].value, found[setting.key].line, found[setting.key].earlier
            try:
                values[setting.attribute] = parse_value(setting, text)
            except ValueError as reason:
                raise BadInput(f"{path}, line {line}: {setting.key} = {text!r} {reason}", file=str(path), line=line,
                               key=setting.key, value=text) from None
            overrides = f" (overrides line{'s' if len(earlier) > 1 else ''} {', '.join(map(str, earlier))})" if earlier else ""
            sources[setting.key] = f"{path.name} line {line}{overrides}"
        elif setting.default is None:
            values[setting.attribute] = values["session_timeout_ms"]
            sources[setting.key] = "default: broker.session.timeout.ms"
        else:
            values[setting.attribute] = setting.default
            sources[setting.key] = "default: not in the file"
    for entry in unknown:
        misspelt = nearest(entry.key, known, cutoff=NEAR_MISS)
        if misspelt in sources and sources[misspelt].startswith("default"):
            value = found[entry.key].value
            default = next(s for s in settings if s.key == misspelt)
            in_force = "the session timeout" if default.default is None else f"{default.default} {default.unit}"
            raise BadInput(f"{path}, line {entry.line}: {entry.key} = {value!r} is not a setting; it looks like a "
                           f"misspelling of {misspelt}, which the file does not set, so its default ({in_force}) "
                           "would be checked instead", file=str(path), line=entry.line, key=entry.key, value=value)
    return values, sources, len(set(found) - set(known)) - len(unknown), unknown


# ---- checking --------------------------------------------------------------------------------------


@frozen
class Row:
    theorem: str
    case: str
    claim: str
    holds: bool
    result: str
    seconds: float
    condition: str
    setting: Fraction
    op: str
    bound: Fraction
    hint: str = ""
    timeline: tuple = ()
    schedule: tuple = ()


def conf2_row(values: dict[str, int]) -> Row:
    """CONF-2, as the model's Config decides it."""
    from kraftspec.model.state import Config, ConfigError

    try:
        Config(heartbeat_interval_ms=values["heartbeat_interval_ms"], session_timeout_ms=values["session_timeout_ms"])
        holds, hint = True, ""
    except ConfigError as error:
        holds, hint = False, str(error)
    return Row("CONF-2", "session > interval", "the session timeout is longer than the heartbeat interval", holds,
               "proved" if holds else "failed", 0.0, "s > h", Fraction(values["session_timeout_ms"]), ">",
               Fraction(values["heartbeat_interval_ms"]), hint)


def theorem_rows(timing) -> list[Row]:
    from kraftspec.proofs.timing import check_all

    rows = []
    for verdict in check_all(timing):
        condition = verdict.theorem.condition
        rows.append(Row(
            verdict.theorem.id, verdict.theorem.case, verdict.theorem.claim, verdict.holds, verdict.outcome.result,
            verdict.outcome.seconds, condition.text_for(verdict.params), verdict.setting, condition.op, verdict.bound,
            "" if verdict.holds else _hint(condition.setting, condition.op, verdict.bound) or verdict.outcome.detail,
            tuple(verdict.timeline()), tuple(sorted(verdict.outcome.values.items())),
        ))
    return rows


_KEYS = {"s": "broker.session.timeout.ms", "b": "kraftspec.broker.self.fence.timeout.ms"}


def _whole(op: str, bound: Fraction) -> int:
    """The whole number nearest the bound that meets ``x op bound``."""
    if op == ">":
        return bound.numerator // bound.denominator + 1
    if op == ">=":
        return -((-bound.numerator) // bound.denominator)
    return bound.numerator // bound.denominator


def _hint(symbol: str, op: str, bound: Fraction) -> str:
    """The nearest whole value of the setting that meets this condition alone."""
    value = _whole(op, bound)
    return f"{_KEYS[symbol]} = {value} would meet this condition" if value >= 1 else ""


def self_fence_range(rows: list[Row]) -> tuple[int, int]:
    """The whole values of b that meet every condition on b (TIME-2 from below, TIME-3 from above);
    empty when low > high."""
    on_b = [row for row in rows if row.condition.startswith("b ")]
    low = max([1, *(_whole(row.op, row.bound) for row in on_b if row.op != "<=")])
    high = min([MAX_INT, *(_whole(row.op, row.bound) for row in on_b if row.op == "<=")])
    return low, high


def _range_text(rows: list[Row], values: dict[str, int]) -> str:
    from kraftspec.proofs.timing import fmt

    low, high = self_fence_range(rows)
    if low <= high:
        return (f"kraftspec.broker.self.fence.timeout.ms: any whole value from {low} to {high} meets TIME-2 and "
                "TIME-3 with the other settings as they are.")
    r = Fraction(values["clock_drift_ppm"], PPM)
    needed = Fraction(low) / (1 - r) - Fraction(values["session_timeout_ms"]) / (1 + r)
    return (f"No value of kraftspec.broker.self.fence.timeout.ms meets both TIME-2 (at least {low}) and TIME-3 "
            f"(at most {high}): TIME-3 would need kraftspec.max.stale.leader.ms >= {fmt(needed)}.")


# ---- output ----------------------------------------------------------------------------------------


def _number(x: Fraction) -> float | int:
    return int(x) if x.denominator == 1 else round(float(x), 6)


def report_json(path: Path, values, sources, unknown: list, rows: list[Row], window: Fraction) -> dict:
    settings = {s.key: {"symbol": s.symbol, "value": values[s.attribute], "unit": s.unit, "source": sources[s.key]}
                for s in _settings()}
    return {
        "file": str(path),
        "safe": all(row.holds for row in rows),
        "settings": settings,
        "warnings": [{"line": u.line, "key": u.key, "nearest": u.nearest, "message": u.message} for u in unknown],
        "checks": [
            {
                "theorem": row.theorem, "case": row.case, "property": row.claim, "holds": row.holds,
                "result": row.result, "seconds": round(row.seconds, 4), "condition": row.condition,
                "value": _number(row.setting), "bound": _number(row.bound), "bound_exact": str(row.bound),
                "hint": row.hint,
                "counterexample": None if row.holds or not row.timeline else {
                    "schedule": {name: x if isinstance(x, bool) else _number(Fraction(x)) for name, x in row.schedule},
                    "timeline": [{"ms": _number(Fraction(t)), "event": text} for t, text in row.timeline],
                },
            }
            for row in rows
        ],
        "stale_leader_window_ms": _number(max(window, Fraction(0))),
        "self_fence_timeout_range_ms": _range_json(rows),
    }


def _range_json(rows: list[Row]) -> list[int] | None:
    low, high = self_fence_range(rows)
    return [low, high] if low <= high else None


def report_text(path: Path, values, sources, others: int, unknown: list, rows: list[Row], window: Fraction) -> str:
    from kraftspec.proofs.timing import fmt

    out = [f"kraftspec check-config: {path}", ""]
    settings = _settings()
    width = max(len(f"{s.key} ({s.symbol})") for s in settings)
    out.append(f"  {'setting':<{width}}  {'value':>10}  from")
    for s in settings:
        note = f"  (r = {fmt(Fraction(values[s.attribute], PPM))})" if s.symbol == "r" else ""
        out.append(f"  {s.key + ' (' + s.symbol + ')':<{width}}  {values[s.attribute]:>10}  {sources[s.key]}{note}")
    if others:
        out.append(f"  ({others} other key{'s' if others != 1 else ''} in the file: not about lease timing, ignored)")
    if unknown:
        out += ["", "warnings:"] + [f"  {entry.message}" for entry in unknown]
    case_width = max(len(row.case) for row in rows)
    condition_width = max(len(row.condition) for row in rows)
    out += ["", f"  {'theorem':<7}  {'case':<{case_width}}  {'result':<6}  {'condition':<{condition_width}}  in numbers"]
    for row in rows:
        numbers = f"{fmt(row.setting)} {row.op} {fmt(row.bound)}"
        result = "holds" if row.holds else "FAILS"
        out.append(f"  {row.theorem:<7}  {row.case:<{case_width}}  {result:<6}  {row.condition:<{condition_width}}  {numbers}")
    out += ["", f"  A deposed leader may act for up to {fmt(max(window, Fraction(0)))} ms after the controller moves its "
            "leaderships (TIME-3);", "  its stale leader epoch keeps it from changing any ISR meanwhile (ISR-4).",
            f"  {_range_text(rows, values)}"]
    for row in rows:
        if row.holds:
            continue
        out += ["", f"{row.theorem} ({row.case}) fails: {row.claim}.",
                f"  the condition {row.condition} does not hold: {fmt(row.setting)} {row.op} {fmt(row.bound)} is false"]
        if row.hint:
            out.append(f"  {row.hint}")
        if row.timeline:
            out.append("  counterexample (real time in ms; each clock reads from its own zero, only its rate matters):")
            stamps = [fmt(t) for t, _ in row.timeline]
            pad = max(len(s) for s in stamps)
            out += [f"    {stamp:>{pad}}  {text}" for stamp, (_, text) in zip(stamps, row.timeline, strict=True)]
    failed = [f"{row.theorem} ({row.case})" for row in rows if not row.holds]
    out.append("")
    if failed:
        out.append(f"UNSAFE: {', '.join(failed)} fail{'s' if len(failed) == 1 else ''} for these settings.")
    else:
        out.append("SAFE: CONF-2 and every timing theorem hold for these settings.")
    return "\n".join(out)


# ---- the command -----------------------------------------------------------------------------------


def _integer_option(setting: Setting):
    def parse(text: str) -> int:
        try:
            return parse_value(setting, text)
        except ValueError as reason:
            raise argparse.ArgumentTypeError(f"{text!r} {reason}") from None

    return parse


def add_parser(commands) -> None:
    settings = _settings()
    table = "\n".join(
        f"  {s.key:<40} {s.symbol}  default {'the session timeout' if s.default is None else f'{s.default} {s.unit}'}: "
        f"{s.meaning}"
        for s in settings
    )
    parser = commands.add_parser(
        "check-config",
        help="check a configuration's lease timings against the timing theorems",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Read a Kafka server.properties file and check its lease timings:\n"
            "  CONF-2  the session timeout is longer than the heartbeat interval (the model's own check)\n"
            "  TIME-1  a broker whose heartbeats arrive is never fenced by the controller\n"
            "  TIME-2  the broker never fences itself before the controller has declared it inactive (seed 003): "
            "while healthy,\n"
            "          when its heartbeats stop arriving, and when the network between them fails both ways\n"
            "  TIME-3  a deposed leader stops acting at most M after the controller moved its leaderships\n"
            "Each is proved with Z3 for these numbers; a failure prints the counterexample as a timeline in ms.\n\n"
            f"Settings (a command-line option beats the file, which beats the default):\n{table}\n\n"
            "The kraftspec.* keys are kraftspec's own assumptions, not Kafka settings; put them in the file or give "
            "the options.\nThe timing model and the theorems: proofs/README.md.\n\n"
            "The file is read as Kafka reads it (Java properties: key=value, key: value or key value; # and ! start "
            "comments;\na backslash at the end of a line continues it; \\uXXXX escapes), as UTF-8 or else "
            "ISO-8859-1 text. What is not a\nproperties file is refused: binary or UTF-16 text, a control character, a "
            "line that is not a setting or a\ncomment, or no Kafka setting at all. So is an invalid value of any setting of a KRaft configuration\n(an unknown role, a malformed voter or listener, a node.id that is not a non-negative 32-bit integer, a negative\ntimeout), and a KRaft configuration that lacks what its roles need (node.id, listeners, controller.quorum.voters,\nand for a controller controller.listener.names).\nA key that looks like a misspelling "
            "of a timing setting the file leaves unset\nis refused too, naming that setting, since its default "
            "would be checked instead. Other keys kraftspec does\nnot know, and keys KIP-631 retires "
            "(zookeeper.*, control.plane.listener.name, broker.id.generation.enable),\nare listed as warnings "
            "with the nearest known key.\n\n"
            "Exit status: 0 safe, 1 a check fails, 2 bad input (the message names the file and line, and the key and "
            "value\nor the offending text)."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="the properties file (e.g. config/server.properties)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on standard output")
    for s in settings:
        if s.option:
            default = "the session timeout" if s.default is None else f"{s.default}"
            parser.add_argument(s.option, dest=s.attribute, metavar="N", type=_integer_option(s), default=None,
                                help=f"{s.symbol}: {s.meaning} (key {s.key}; default {default})")


def run(args, out=None, err=None) -> int:
    from kraftspec.proofs.timing import Params, Timing, stale_leader_window

    out, err = out or sys.stdout, err or sys.stderr
    path = Path(args.file)
    options = {s.attribute: getattr(args, s.attribute, None) for s in _settings() if s.option}
    try:
        values, sources, others, unknown = resolve(path, options)
    except BadInput as error:
        err.write(f"kraftspec check-config: {error}\n")
        if args.json:
            out.write(json.dumps({"file": str(path), "safe": False, "error": {"message": str(error), **error.where}}) + "\n")
        return 2
    timing = Timing(**values)
    rows = [conf2_row(values), *theorem_rows(timing)]
    window = stale_leader_window(Params.fractions(timing))
    if args.json:
        out.write(json.dumps(report_json(path, values, sources, unknown, rows, window), indent=2) + "\n")
    else:
        out.write(report_text(path, values, sources, others, unknown, rows, window) + "\n")
    return 0 if all(row.holds for row in rows) else 1
