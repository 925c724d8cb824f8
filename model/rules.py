"""Rule citations: which rules of the spec fired while the model handled an event.

Every branch of the model that decides something calls :func:`cite` with the rule id
(``cite("LEASE-8")``); a branch that refuses a request, or a part of one, calls :func:`reject`
instead, which also records the rule as the one that refused. Outside a :func:`collecting`
block both do nothing, so the model's functions stay pure; inside one, the ids are gathered in
the order they first fired. ``controller.step`` opens the block, and its result lists the rules.
"""

from __future__ import annotations

from contextvars import ContextVar

from attrs import define, field


@define
class RuleLog:
    """The rules that fired in one step, and those among them that refused something, each in the
    order it first did (the keys of a dict keep that order, and a second citation leaves it)."""

    fired: dict[str, None] = field(factory=dict)
    rejected: dict[str, None] = field(factory=dict)


_log: ContextVar[RuleLog | None] = ContextVar("kraftspec_rule_log", default=None)


def cite(rule_id: str) -> None:
    """Record that rule ``rule_id`` decided something in the step being handled."""
    log = _log.get()
    if log is not None:
        log.fired[rule_id] = None


def reject(rule_id: str) -> None:
    """Record that rule ``rule_id`` refused a request, or a topic or partition of one."""
    cite(rule_id)
    log = _log.get()
    if log is not None:
        log.rejected[rule_id] = None


class collecting:
    """Gather the rules cited inside the block: ``with collecting() as log: ...``."""

    __slots__ = ("log", "token")

    def __enter__(self) -> RuleLog:
        self.log = RuleLog()
        self.token = _log.set(self.log)
        return self.log

    def __exit__(self, *exc) -> None:
        _log.reset(self.token)
