"""kraftspec's model: the specification in spec/ as an executable state machine.

Start from :func:`initial_state` and feed events to :func:`step`::

    from kraftspec.model import initial_state, step, Tick
    state = initial_state()
    result = step(state, Tick(1000))

The model is the oracle every other implementation is checked against. It is pure: a
step returns a new state and never changes the old one.
"""

from .controller import StepResult, step
from .errors import Error
from .events import Commit, Event, Failover, TakeSnapshot, Tick
from .log import initial_state
from .state import Config, ConfigError, ControllerState, FeatureRange

__all__ = [
    "Commit",
    "Config",
    "ConfigError",
    "ControllerState",
    "Error",
    "Event",
    "Failover",
    "FeatureRange",
    "StepResult",
    "TakeSnapshot",
    "Tick",
    "initial_state",
    "step",
]
