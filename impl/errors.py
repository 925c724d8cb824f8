"""Error codes, read from spec/schemas/errors.json (RPC-4)."""

from enum import IntEnum

from kraftspec.spec.schemas import error_codes

Error = IntEnum("Error", error_codes())  # type: ignore[misc]
"""Every error code of the specification, by name: ``Error.STALE_BROKER_EPOCH == 77``."""
