"""What CrossHair is given besides the functions themselves (see proofs/contracts.py).

**A predicate CrossHair can reason about.** CrossHair makes up a ``Callable`` argument as a list
of answers handed out in call order, whatever the argument. When a postcondition asks
``eligible(b)`` again, it can get a different answer than the function got, and CrossHair then
reports a counterexample that is not one. The model's predicates are pure (eligibility is read
from the image), so the contracts are about pure predicates: :class:`Predicate`, true exactly for
a set of brokers, is how CrossHair is given one.

**Typed twins.** :func:`typed` gives a function with some parameters annotated otherwise. It is
the same code object, docstring (so the same contract), defaults and module globals, so
CrossHair checks the model's own code and names the model's file and line.

**Counterparts.** ``crosshair diffbehavior`` compares two functions on the inputs of one
signature. Here, the model's and impl's versions of one pure function are given the same
signature and the same domain (the ``model_*`` and ``impl_*`` functions below). Where the model's
function reads a profile parameter and impl's does not yet (``reassignment_complete``, whose
``completes`` impl's builder lacks), the model's is compared in the kip-631 profile, whose
behaviour impl's has.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

from attrs import frozen

from kraftspec.impl import builder, codec
from kraftspec.model import framing, partitions
from kraftspec.spec.profiles import DEFAULT_PROFILE, profile

U32 = 1 << 32
"""Unsigned varints both codecs take: 0 to ``U32 - 1`` (impl refuses more, as Kafka's int)."""


@frozen
class Predicate:
    """A pure predicate on broker ids: true exactly for ``members``."""

    members: frozenset[int]

    def __call__(self, broker_id: int) -> bool:
        return broker_id in self.members


def typed(fn: Callable, **annotations: Any) -> Callable:
    """``fn`` with the named parameters annotated as given, and nothing else changed."""
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    twin.__kwdefaults__ = fn.__kwdefaults__
    twin.__qualname__ = fn.__qualname__
    twin.__doc__ = fn.__doc__
    twin.__annotations__ = {**fn.__annotations__, **annotations}
    return twin


# ---- contracts checked on a typed twin ----------------------------------------------------

elect_leader = typed(partitions.elect_leader, eligible=Predicate)


# ---- counterparts: the model's and impl's version in one signature --------------------------

Brokers = tuple[int, ...]
_ELECTION = {"replicas": Brokers, "isr": Brokers, "eligible": Predicate, "return": int}

model_elect_leader = typed(partitions.elect_leader, **_ELECTION)
impl_elect = typed(builder.elect, **_ELECTION)

KIP_631_COMPLETES = profile(DEFAULT_PROFILE).reassignment_completes
"""The kip-631 profile's ``reassignment_completes`` (DEC-18), the one the comparison is in."""

_IMPL_TAKES_COMPLETES = "completes" in inspect.signature(builder.reassignment_complete).parameters


def model_reassignment_complete(replicas: Brokers, isr: Brokers, adding: Brokers, removing: Brokers) -> bool:
    """The model's REASSIGN-6 in the kip-631 profile."""
    return partitions.reassignment_complete(replicas, isr, adding, removing, KIP_631_COMPLETES)


def impl_reassignment_complete(replicas: Brokers, isr: Brokers, adding: Brokers, removing: Brokers) -> bool:
    """impl's REASSIGN-6, in the kip-631 profile should it take the parameter."""
    if _IMPL_TAKES_COMPLETES:
        return builder.reassignment_complete(replicas, isr, adding, removing, completes=KIP_631_COMPLETES)
    return builder.reassignment_complete(replicas, isr, adding, removing)


def model_write_uvarint(value: int) -> bytes:
    """The model's encoder on ``value`` modulo 2**32, so that every input is one both take."""
    return framing.uvarint(value % U32)


def impl_write_uvarint(value: int) -> bytes:
    """impl's encoder on ``value`` modulo 2**32."""
    return codec.write_uvarint(value % U32)


def model_read_uvarint(data: bytes) -> tuple[int, int] | None:
    """The model's reader at the start of ``data``: the value and the position after it, or None
    where it refuses (a value above 2**32 - 1 too, DEC-32)."""
    reader = framing._Reader(data)
    try:
        value = reader.uvarint("varint")
    except framing.FrameError:
        return None
    return value, reader.pos


def impl_read_uvarint(data: bytes) -> tuple[int, int] | None:
    """impl's reader at the start of ``data``: the value and the position after it, or None where
    it refuses."""
    try:
        return codec.read_uvarint(data, 0)
    except codec.CodecError:
        return None
