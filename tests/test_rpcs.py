"""What all requests share: RPC-1 to RPC-6."""

from kraftspec.model import Error
from kraftspec.model.messages import (
    REQUEST_TYPES,
    BrokerHeartbeatRequest,
    RESPONSE_TYPES,
    UnregisterBrokerRequest,
)
from kraftspec.model.messages import api_key
from kraftspec.spec.schemas import error_codes, rpc_schemas

from cluster import Cluster


def test_rpc_1_api_keys_follow_seed_000():
    """RPC-1, DEC-9: in the kip-631 profile 57, 58, 59 (not Kafka's 62, 63, 64), and each request
    matches its schema."""
    keys = {cls.__name__: api_key(cls) for cls in REQUEST_TYPES}
    assert (keys["BrokerRegistrationRequest"], keys["BrokerHeartbeatRequest"], keys["UnregisterBrokerRequest"]) == (57, 58, 59)
    assert keys["AlterIsrRequest"] == 56
    schemas = rpc_schemas()
    assert all(schemas[name]["apiKey"] == key for name, key in keys.items())
    assert schemas["BrokerHeartbeatResponse"]["validVersions"] == "0-1"


def test_rpc_2_an_unsupported_version_is_refused():
    """RPC-2: UNSUPPORTED_VERSION in a version 0 response; nothing changes."""
    c = Cluster()
    c.start_brokers(1)
    response = c.request(BrokerHeartbeatRequest(1, c.epoch(1), 5, True, False, version=2))
    assert response.error_code == Error.UNSUPPORTED_VERSION and response.lowest_acknowledged_offset is None
    assert not c.state.image.brokers[1].fenced


def test_rpc_3_only_the_active_controller_answers():
    """RPC-3: a response still waiting at a failover becomes NOT_CONTROLLER."""
    c = Cluster()
    c.start_brokers(1)
    waiting = c.send(UnregisterBrokerRequest(1))
    [reply] = c.failover().replies
    assert (reply.seq, reply.response.error_code) == (waiting.seq, Error.NOT_CONTROLLER)


def test_rpc_4_error_codes_are_kafkas_numbers_and_match_the_schema():
    """RPC-4, DEC-15."""
    assert {e.name: e.value for e in Error} == error_codes()


def test_rpc_5_no_throttling():
    """RPC-5: ThrottleTimeMs is always 0, so no model response carries a field for it."""
    for response_type in RESPONSE_TYPES:
        assert not any(a.name == "throttle_time_ms" for a in response_type.__attrs_attrs__), response_type


def test_rpc_6_requests_are_numbered_and_replies_name_them_across_failovers():
    """RPC-6."""
    c = Cluster()
    seqs = [c.send(UnregisterBrokerRequest(b)).seq for b in (1, 2)]
    c.failover()
    seqs.append(c.send(UnregisterBrokerRequest(3)).seq)
    assert seqs == [0, 1, 2]
    assert sorted(c.replies) == [0, 1, 2]
