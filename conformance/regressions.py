"""Regression scenarios: each defect kraftspec once had, as the scenario that shows it.

Each scenario runs under a profile's configuration; the corpus keeps one trace of it per profile
(conformance/targeted.py, build_corpus), so that every implementation, Apache Kafka included, is
checked against the fixed behaviour in both.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen

from kraftspec.model import Config, Failover
from kraftspec.model.messages import CreatableTopic, CreateTopicsRequest, UnregisterBrokerRequest
from kraftspec.spec.profiles import profile_names

from .scenario import Scenario, scripted, topic_id
from .trace import Trace


def lowest_acknowledged_offset_after_reregistration(config: Config) -> Scenario:
    """Unfenced brokers acknowledge different offsets; broker 2 is unregistered and registers
    again with a new incarnation; then broker 1's version 1 heartbeat asks for
    LowestAcknowledgedOffset (LAO-1), which must be broker 2's current offset. impl once kept the
    heap entries of broker 2's earlier lease with versions that restarted with each lease, so the
    new lease's entry for its unfencing had the same version as the old one's, and the old, lower
    offset passed for a current one (fixed in 274a6d4). Broker 1 stays behind while broker 2 is
    away, so that no heartbeat in between drops the stale entry."""
    s = Scenario(config).register(1).register(2)  # epochs 1 and 2
    s.heartbeat(1, offset=2)  # caught up (past its epoch) and unfenced; acknowledges 2
    s.heartbeat(2, offset=3)  # unfenced; acknowledges 3
    s.heartbeat(2, offset=4)  # moves on: the entry for 3 is stale
    s.send(UnregisterBrokerRequest(2)).commit()
    s.register(2, generation=1)  # a new incarnation: a new epoch and a fresh lease
    s.heartbeat(2)  # caught up and unfenced again, acknowledging the committed offset
    return s.heartbeat(1)  # broker 1 catches up; LowestAcknowledgedOffset is broker 2's offset, not 3


def controlled_shutdown_of_the_sole_leader(config: Config) -> Scenario:
    """DEC-14, SHUT-2, SHUT-3: broker 1 is the only replica and the leader of 'solo'. Asked to shut
    down, it gives the leadership up (Leader -1, still the sole ISR member) and is let go: in the
    kip-631 profile in the heartbeat that asks, in the kafka profile once brokers 2 and 3 have
    caught up with the change. kraftspec once kept a leadership nobody else could take, so such a
    broker was never let go."""
    s = Scenario(config).start_brokers(1, 2, 3).create_topic("solo", [[1]])
    s.heartbeat(1, want_shut_down=True)
    if s.state.image.brokers[1].fenced:
        return s
    s.heartbeat(2).heartbeat(3)
    return s.heartbeat(1, want_shut_down=True)


def unregistered_sole_replica_comes_back(config: Config) -> Scenario:
    """DEC-20, PART-8, PART-7: broker 1, the only replica of 'solo', is unregistered; it stays in
    Replicas and as the sole ISR member, so when it registers again and is unfenced it leads again.
    kraftspec once removed it from every list, leaving the partition with no replica at all."""
    s = Scenario(config).start_brokers(1, 2).create_topic("solo", [[1]])
    s.send(UnregisterBrokerRequest(1)).commit()
    s.register(1, generation=1)
    return s.heartbeat(1)


def placement_avoids_a_fenced_broker(config: Config) -> Scenario:
    """DEC-26, TOPIC-4: with broker 2 of three fenced, a topic of three partitions with replication
    factor 1 is placed on brokers 1 and 3 only. kraftspec once placed round-robin over every
    registered broker, so the partition placed on broker 2 failed the topic."""
    s = Scenario(config).start_brokers(1, 2, 3)
    s.heartbeat(2, want_fence=True)
    topic = CreatableTopic("spread", topic_id("spread"), num_partitions=3, replication_factor=1)
    return s.send(CreateTopicsRequest([topic])).commit()


def clean_shutdown_then_failover_then_restart(config: Config) -> Scenario:
    """DEC-6, REG-4, LEASE-14: broker 1 shuts down cleanly, the controller fails over, and broker 1's
    next process registers at once. kraftspec once gave the fenced registration a fresh claim at the
    failover, refusing the new process DUPLICATE_BROKER_REGISTRATION for a whole session timeout."""
    s = Scenario(config).start_brokers(1, 2)
    s.heartbeat(1, want_shut_down=True)
    s.heartbeat(2)
    s.heartbeat(1, want_shut_down=True)
    s.send(Failover())
    return s.register(1, generation=1)


@frozen
class Regression:
    name: str
    description: str
    scenario: Callable[[Config], Scenario]
    profiles: tuple[str, ...] = profile_names()  # the profiles the corpus records it in


REGRESSIONS = (
    Regression(
        "lowest_acknowledged_offset_after_reregistration",
        "LAO-1 regression: after broker 2 is unregistered and registers again, impl's LowestAcknowledgedOffset "
        "used a stale heap entry of its earlier registration (fixed in 274a6d4)",
        lowest_acknowledged_offset_after_reregistration,
        profiles=("kip-631",),
    ),
    Regression("controlled_shutdown_of_the_sole_leader",
               "DEC-14 regression: the sole in-sync replica and leader of a partition completes its controlled shutdown",
               controlled_shutdown_of_the_sole_leader),
    Regression("unregistered_sole_replica_comes_back",
               "DEC-20 regression: an unregistered sole replica stays in Replicas and leads again when it comes back",
               unregistered_sole_replica_comes_back),
    Regression("placement_avoids_a_fenced_broker",
               "DEC-26 regression: placement by replication factor uses unfenced brokers while there are enough",
               placement_avoids_a_fenced_broker),
    Regression("clean_shutdown_then_failover_then_restart",
               "DEC-6 regression: a broker that shut down cleanly registers again at once after a failover",
               clean_shutdown_then_failover_then_restart),
)
"""Traces for bugs found earlier, each the scenario that shows it, recorded in the profiles named."""


def regression_trace(regression: Regression, config: Config | None = None) -> Trace:
    """The regression's trace, recorded from ``config`` (default: its first profile's)."""
    config = config if config is not None else Config.for_profile(regression.profiles[0])
    return scripted(regression.name, regression.scenario(config), kind="regression")
