"""Error codes, as spec/schemas/errors.json gives them (RPC-4).

Written out so that readers and type checkers see every name; checked against the schema at
import, so the two cannot drift apart.
"""

from enum import IntEnum

from kraftspec.spec.schemas import error_codes


class Error(IntEnum):
    """Every error code of the specification, by name: ``Error.STALE_BROKER_EPOCH == 77``."""

    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    NOT_LEADER_OR_FOLLOWER = 6
    INVALID_TOPIC_EXCEPTION = 17
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    FENCED_LEADER_EPOCH = 74
    STALE_BROKER_EPOCH = 77
    NO_REASSIGNMENT_IN_PROGRESS = 85
    INVALID_UPDATE_VERSION = 95
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INVALID_CLUSTER_ID = 104
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    INVALID_REGISTRATION = 119


if {e.name: e.value for e in Error} != error_codes():
    raise ImportError(
        "impl/errors.py and spec/schemas/errors.json list different error codes: "
        f"{sorted(set(Error.__members__.items()) ^ set(error_codes().items()))}"
    )


class Refused:
    """A handler's answer that refuses the whole request by ``rule``: the profile says whether it is
    answered at once or waits for the log like any write (DEC-21)."""

    __slots__ = ("rule", "response")

    def __init__(self, rule: str, response) -> None:
        self.rule = rule
        self.response = response
