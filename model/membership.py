"""Membership as the controller sees it (MEM-1, MEM-2).

The transitions of MEM-2 are carried by the handlers (REG-6, LEASE-8, LEASE-10, LEASE-12,
SHUT-1, SHUT-3, UNREG-2); these functions only read the state.
"""

from __future__ import annotations

from enum import Enum

from .rules import cite
from .state import ControllerState, MetadataImage


class Membership(Enum):
    """MEM-1: the membership states; CONTROLLED_SHUTDOWN is a phase of ACTIVE."""

    UNREGISTERED = "unregistered"
    FENCED = "registered+fenced"
    ACTIVE = "registered+active"
    CONTROLLED_SHUTDOWN = "in controlled shutdown"


def membership(state: ControllerState, broker_id: int) -> Membership:
    """MEM-1: the state of ``broker_id`` in the active controller's in-memory state."""
    cite("MEM-1")
    registration = state.image.brokers.get(broker_id)
    if registration is None:
        return Membership.UNREGISTERED
    if registration.fenced:
        return Membership.FENCED
    if state.leases[broker_id].in_controlled_shutdown:
        return Membership.CONTROLLED_SHUTDOWN
    return Membership.ACTIVE


def visible_brokers(image: MetadataImage) -> list[int]:
    """MEM-1: the brokers a MetadataResponse lists: registered and unfenced, by id."""
    cite("MEM-1")
    return sorted(b for b, registration in image.brokers.items() if not registration.fenced)
