"""spec/profiles.md, written from profiles.toml: the behaviour profiles as a document for reviewers.

The document is generated whole, so that it cannot drift from the data the model and impl read
(tests/test_profiles.py compares it with :func:`markdown`):

    python -m kraftspec.spec.profiles_doc            # print the document
    python -m kraftspec.spec.profiles_doc --check    # exit status 1 if spec/profiles.md is stale
    python -m kraftspec.spec.profiles_doc --write    # rewrite spec/profiles.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from . import rules
from .profiles import DEFAULT_PROFILE, Parameter, parameters, profile, profile_names

PATH = Path(__file__).resolve().parent / "profiles.md"
COMMAND = "python -m kraftspec.spec.profiles_doc --write"

_INTRO = f"""\
# Behaviour profiles

<!-- Generated from profiles.toml by spec/profiles_doc.py; do not edit by hand.
     After changing profiles.toml, run: {COMMAND} -->

A *profile* is one complete behaviour of the specified controller. kraftspec has one set of rules,
and a small number of points on which two readings of the controller differ; each such point is one
*parameter* in [profiles.toml](profiles.toml), which names the question, the values it may take,
the decision that argues it and the rules whose outcome it changes. A profile gives every parameter
a value. Nothing else differs between profiles: the model and impl read the values through
`kraftspec.spec.profiles` and cite the parameter's decision where they act on it.

The principle:

* **kip-631** follows the seeds where they speak, and Apache Kafka's shipped behaviour where they
  are silent (the principle of [decisions.md](decisions.md)). It is the default profile.
* **kafka** follows Apache Kafka as shipped, including where Kafka departs from what seed 000 (or
  seed 001) says.

So every parameter below is a point where a seed speaks and Kafka ships something else; where the
seeds are silent the two profiles already agree. The differences that remain between the `kafka`
profile and Kafka itself are listed in [kafka.md](kafka.md).

This file is generated from profiles.toml by `spec/profiles_doc.py`; `tests/test_profiles.py`
fails when the two disagree. To change a profile, edit profiles.toml and run `{COMMAND}`.
"""


def _value(value: Any) -> str:
    """A parameter's value as profiles.toml writes it, in code style."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, tuple):
        text = "[" + ", ".join(_value(v).strip("`") for v in value) + "]"
    else:
        text = str(value)
    return f"`{text}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _rule(rule_id: str) -> str:
    """A rule or decision id as a link to the file that defines it."""
    rule = rules().get(rule_id)
    return f"[{rule_id}]({rule.file})" if rule else f"{rule_id} (not defined)"


def _rule_order() -> list[str]:
    """Every rule a parameter names, by area and then number (CONF-1, ..., LEASE-5, LEASE-8, ...)."""
    named = {rule_id for p in parameters() for rule_id in p.rules}
    return sorted(named, key=lambda rule_id: (rule_id.rsplit("-", 1)[0], int(rule_id.rsplit("-", 1)[1])))


def _profiles_section() -> list[str]:
    lines = ["## The profiles", "", "| profile | title | what it is |", "|---|---|---|"]
    for name in profile_names():
        p = profile(name)
        default = " (the default)" if name == DEFAULT_PROFILE else ""
        lines.append(f"| `{name}`{default} | {_cell(p.title)} | {_cell(p.about)} |")
    return lines + [""]


def _by_rule_section() -> list[str]:
    names = profile_names()
    lines = [
        "## By rule",
        "",
        "Every rule whose outcome a parameter changes, by id, with the parameter, the decision that argues",
        "it and its value in each profile; each id links to the file that defines it. A rule that several",
        "parameters change has a row for each.",
        "",
        "| rule | parameter | decision | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for rule_id in _rule_order():
        first = True
        for p in parameters():
            if rule_id not in p.rules:
                continue
            rule_cell = _rule(rule_id) if first else ""
            values = " | ".join(_value(p.values[name]) for name in names)
            lines.append(f"| {rule_cell} | [`{p.name}`](#{p.name}) | {_rule(p.decision)} | {values} |")
            first = False
    return lines + [""]


def _parameter_section(p: Parameter) -> list[str]:
    names = profile_names()
    lines = [
        f"### `{p.name}`",
        "",
        f"*Question.* {p.question}",
        "",
        f"*Decision.* {_rule(p.decision)}.",
        "",
        "*Rules.* " + ", ".join(_rule(r) for r in p.rules) + ".",
        "",
        "*Choices.* " + ", ".join(_value(c) for c in p.choices) + ".",
        "",
        "| " + " | ".join(names) + " |",
        "|" + "---|" * len(names),
        "| " + " | ".join(_value(p.values[name]) for name in names) + " |",
        "",
        f"*Why.* {p.why}",
        "",
    ]
    return lines


def markdown() -> str:
    """The text of spec/profiles.md, from profiles.toml as it is now."""
    lines = [_INTRO]
    lines += _profiles_section()
    lines += _by_rule_section()
    lines += ["## By parameter", "", "In the order of profiles.toml.", ""]
    for p in parameters():
        lines += _parameter_section(p)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kraftspec.spec.profiles_doc",
        description="Print spec/profiles.md as generated from spec/profiles.toml, check it, or rewrite it.",
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"rewrite {PATH}")
    action.add_argument("--check", action="store_true", help=f"exit with status 1 if {PATH} is not the generated text")
    args = parser.parse_args(argv)
    text = markdown()
    if args.write:
        PATH.write_text(text, encoding="utf-8")
        print(f"wrote {PATH}")
        return 0
    if args.check:
        current = PATH.read_text(encoding="utf-8") if PATH.exists() else ""
        if current != text:
            print(f"{PATH} is stale; run: {COMMAND}", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
