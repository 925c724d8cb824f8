"""impl and the model in lockstep: on every event they agree on sequence numbers, records,
replies and committed state (conformance.lockstep)."""

from hypothesis import given
from hypothesis import strategies as st

from events import draw_event, draw_mix
from kraftspec.conformance.lockstep import Lockstep
from kraftspec.conformance.simulation import Simulation
from kraftspec.model import Config
from kraftspec.spec.profiles import profile_names


@given(st.data())
def test_random_sequences_agree_step_by_step(data):
    """In either profile (drawn)."""
    lockstep = Lockstep(Config.for_profile(data.draw(st.sampled_from(profile_names()), label="profile")))
    mix = draw_mix(data)
    for number in range(50):
        event = draw_event(data, lockstep.model, mix)
        differences = lockstep.send(event)
        assert not differences, f"step {number}, {event!r}: {differences}"


def test_simulated_stories_agree_step_by_step():
    """Ten stories in each profile."""
    for seed in range(20):
        lockstep = Lockstep(Config.for_profile(profile_names()[seed % 2]))
        simulation = Simulation(seed, broker_count=4, partition_count=3)
        simulation.state = lockstep.model
        for happening in simulation.run(200):
            differences = lockstep.send(happening.event)
            assert not differences, f"seed {seed} step {happening.number} ({happening.note}): {differences}"
            simulation.state = lockstep.model
