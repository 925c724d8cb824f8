"""Rule citations: which rules of the spec fired while the model handled an event.

Every branch of the model that decides something calls :func:`cite` with the rule id
(``cite("LEASE-8")``). Outside a :func:`collecting` block a citation does nothing, so
the model's functions stay pure; inside one, the ids are gathered in the order they
first fired. ``controller.step`` opens the block, and its result lists the rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_fired: ContextVar[list[str] | None] = ContextVar("kraftspec_fired_rules", default=None)


def cite(rule_id: str) -> None:
    """Record that rule ``rule_id`` decided something in the step being handled."""
    fired = _fired.get()
    if fired is not None and rule_id not in fired:
        fired.append(rule_id)


@contextmanager
def collecting() -> Iterator[list[str]]:
    """Gather the rule ids cited inside the block, in the order they first fired."""
    fired: list[str] = []
    token = _fired.set(fired)
    try:
        yield fired
    finally:
        _fired.reset(token)
