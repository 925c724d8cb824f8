"""What a handler decides: the records to append and the response (LOG-5, LOG-7)."""

from __future__ import annotations

from attrs import frozen

from .messages import Response
from .records import Record
from .sessions import SessionTable
from .state import Lease


@frozen
class Decision:
    """A handler's verdict on one request.

    ``records`` are appended as one batch (LOG-4); ``response`` is released when they
    commit (LOG-7); ``leases`` is the controller's soft state after the request, or None
    when the request did not touch it; ``sessions`` likewise for Kafka's session table (DEC-25, the
    kafka profile). ``refused_by`` names the rule that refused the request as a whole, if one did, or
    that answered it as a whole without looking further (ISR-12): the profile says which such
    answers are given at once (DEC-21).
    """

    records: tuple[Record, ...] = ()
    response: Response | None = None
    leases: dict[int, Lease] | None = None
    sessions: SessionTable | None = None
    refused_by: str | None = None
