"""The broker's own state machine: MEM-3 to MEM-5."""

from uuid import UUID

from kraftspec.model import Error
from kraftspec.model import broker as b
from kraftspec.model.broker import BrokerProcess, BrokerState
from kraftspec.model.messages import BrokerHeartbeatResponse, BrokerRegistrationResponse


def test_mem_3_states_and_their_metric_values():
    """MEM-3: the values did not change (seed 000)."""
    assert {s.name: s.value for s in BrokerState} == {
        "NOT_RUNNING": 0, "STARTING": 1, "RECOVERY": 2, "RUNNING": 3, "PENDING_CONTROLLED_SHUTDOWN": 6, "SHUTTING_DOWN": 7}


def process_in(state: BrokerState, **fields) -> BrokerProcess:
    return BrokerProcess(1, state, UUID(int=1), epoch=4, next_offset=9, **fields)


def test_mem_4_what_a_broker_sends_in_each_state():
    """MEM-4: WantFence until log recovery is done; WantShutDown while pending shutdown."""
    flags = {
        state: (r.want_fence, r.want_shut_down, r.current_metadata_offset)
        for state in (BrokerState.STARTING, BrokerState.RECOVERY, BrokerState.RUNNING, BrokerState.PENDING_CONTROLLED_SHUTDOWN)
        for r in [b.heartbeat_request(process_in(state))]
    }
    assert flags == {
        BrokerState.STARTING: (True, False, 9),
        BrokerState.RECOVERY: (True, False, 9),
        BrokerState.RUNNING: (False, False, 9),
        BrokerState.PENDING_CONTROLLED_SHUTDOWN: (False, True, 9),
    }
    assert not b.heartbeat_request(process_in(BrokerState.RECOVERY, log_recovery_done=True)).want_fence


def test_mem_5_what_moves_a_broker():
    """MEM-5: the transition table, and errors change nothing."""
    ok = dict(error_code=Error.NONE)
    assert b.start(BrokerProcess(1), UUID(int=5)).state == BrokerState.STARTING
    assert b.on_heartbeat_response(process_in(BrokerState.STARTING), BrokerHeartbeatResponse(**ok, is_caught_up=True)).state == BrokerState.RECOVERY
    assert b.on_heartbeat_response(process_in(BrokerState.STARTING), BrokerHeartbeatResponse(**ok, is_caught_up=False)).state == BrokerState.STARTING
    assert b.on_heartbeat_response(process_in(BrokerState.RECOVERY), BrokerHeartbeatResponse(**ok, is_fenced=False)).state == BrokerState.RUNNING
    pending = process_in(BrokerState.PENDING_CONTROLLED_SHUTDOWN)
    assert b.on_heartbeat_response(pending, BrokerHeartbeatResponse(**ok, should_shut_down=True)).state == BrokerState.SHUTTING_DOWN
    for state in (BrokerState.STARTING, BrokerState.RECOVERY, BrokerState.RUNNING):
        assert b.sigterm(process_in(state)).state == BrokerState.PENDING_CONTROLLED_SHUTDOWN
    assert b.stop(process_in(BrokerState.RUNNING)) == BrokerProcess(1)
    refused = BrokerHeartbeatResponse(Error.STALE_BROKER_EPOCH)
    assert b.on_heartbeat_response(process_in(BrokerState.STARTING), refused).state == BrokerState.STARTING
    starting = b.start(BrokerProcess(1), UUID(int=5))
    assert b.on_registration_response(starting, BrokerRegistrationResponse(Error.DUPLICATE_BROKER_REGISTRATION)).epoch == -1
    assert b.on_registration_response(starting, BrokerRegistrationResponse(Error.NONE, 12)).epoch == 12
