"""impl and the model in lockstep: on every event they agree on sequence numbers, records,
replies and committed state (conformance.lockstep)."""

from hypothesis import given
from hypothesis import strategies as st

from events import draw_event, draw_mix
from kraftspec.conformance.lockstep import Lockstep
from kraftspec.conformance.simulation import Simulation


@given(st.data())
def test_random_sequences_agree_step_by_step(data):
    lockstep = Lockstep()
    mix = draw_mix(data)
    for number in range(50):
        event = draw_event(data, lockstep.model, mix)
        differences = lockstep.send(event)
        assert not differences, f"step {number}, {event!r}: {differences}"


def test_simulated_stories_agree_step_by_step():
    for seed in range(20):
        lockstep = Lockstep()
        simulation = Simulation(seed, broker_count=4, partition_count=3)
        simulation.state = lockstep.model
        for happening in simulation.run(200):
            differences = lockstep.send(happening.event)
            assert not differences, f"seed {seed} step {happening.number} ({happening.note}): {differences}"
            simulation.state = lockstep.model
