"""The kraftspec specification as data: its version and its rules.

The rules are read from the markdown files of this folder (shipped with the package), so
that tools can name a rule by id and title: a rule's heading is ``### ID  Title``.
The message and record definitions are in :mod:`kraftspec.spec.schemas`.
"""

from __future__ import annotations

import functools
import re
from importlib.resources import files

from attrs import frozen

SPEC_VERSION = "1.0"
"""The version of the specification; traces and reports carry it."""

_HEADING = re.compile(r"^### ([A-Z]{2,10}-\d{1,3})\s+(.+?)\s*$", re.M)
_CODE = re.compile(r"```.*?```", re.S)


@frozen
class Rule:
    id: str
    title: str
    file: str


@functools.cache
def rules() -> dict[str, Rule]:
    """Every rule of the specification by id, in document order."""
    found: dict[str, Rule] = {}
    for entry in sorted(files(__name__).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md"):
            text = _CODE.sub("", entry.read_text(encoding="utf-8"))
            for rule_id, title in _HEADING.findall(text):
                found[rule_id] = Rule(rule_id, title, entry.name)
    return found


def title(rule_id: str) -> str:
    """The title of a rule, or an empty string for an id the specification does not define."""
    rule = rules().get(rule_id)
    return rule.title if rule else ""
