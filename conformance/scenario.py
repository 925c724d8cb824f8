"""Scenarios: model events written by hand, for the traces a random walk reaches too rarely
(conformance/targeted.py) and for regressions (conformance/regressions.py)."""

from __future__ import annotations

from uuid import UUID

from kraftspec.model import Commit, Config, Tick, initial_state, step
from kraftspec.model.messages import (
    AlterIsrPartition,
    AlterIsrRequest,
    AlterIsrTopic,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    CreatableTopic,
    CreateTopicsRequest,
    Feature,
    ReplicaAssignment,
)

from .generate import record
from .simulation import features_of
from .trace import Trace

FEATURES = (Feature("metadata.format", 1, 1),)


def incarnation(broker_id: int, generation: int = 0) -> UUID:
    """A recognisable incarnation id: broker 3's second process is 0...0302."""
    return UUID(int=(broker_id << 8) + generation + 1)


def topic_id(name: str) -> UUID:
    return UUID(int=sum(ord(c) << (8 * i) for i, c in enumerate(name[:15])) + 1)


class Scenario:
    """Model events written by hand. Each event is run on the model as it is added, so that the
    next one can use what the controller decided (an epoch, a partition's leader epoch)."""

    def __init__(self, config: Config | None = None):
        self.config = config or Config()
        self.state = initial_state(self.config)
        self.events: list = []

    def send(self, event) -> "Scenario":
        self.events.append(event)
        self.state = step(self.state, event).state
        return self

    def commit(self) -> "Scenario":
        return self.send(Commit(self.state.log_end_offset))

    def tick(self, now_ms: int) -> "Scenario":
        return self.send(Tick(now_ms))

    def epoch(self, broker_id: int) -> int:
        return self.state.image.brokers[broker_id].epoch

    def register(self, broker_id: int, generation: int = 0, features=None) -> "Scenario":
        """``features``: what the broker supports; by default the cluster's finalized features."""
        features = features_of(self.config) if features is None else features
        request = BrokerRegistrationRequest(broker_id, self.config.cluster_id, incarnation(broker_id, generation), features=features)
        return self.send(request).commit()

    def heartbeat(self, broker_id: int, offset: int | None = None, version: int = 1, want_fence: bool = False,
                  want_shut_down: bool = False) -> "Scenario":
        """A heartbeat, caught up to the committed log unless ``offset`` says otherwise, in the
        profile's unit (DEC-2); committed."""
        if offset is None:
            caught_up = self.state.committed_offset
            offset = caught_up if self.config.params.heartbeat_offset == "next-offset" else caught_up - 1
        return self.send(BrokerHeartbeatRequest(broker_id, self.epoch(broker_id), offset, want_fence, want_shut_down, version)).commit()

    def start_brokers(self, *broker_ids: int) -> "Scenario":
        """Register each broker, then unfence each with a caught-up heartbeat."""
        for b in broker_ids:
            self.register(b)
        for b in broker_ids:
            self.heartbeat(b)
        return self

    def create_topic(self, name: str, assignment: list[list[int]]) -> "Scenario":
        topic = CreatableTopic(name, topic_id(name), assignments=[ReplicaAssignment(i, r) for i, r in enumerate(assignment)])
        return self.send(CreateTopicsRequest([topic])).commit()

    def partition(self, name: str, index: int = 0):
        image = self.state.image
        topic = image.topic_named(name)
        if topic is None:
            raise KeyError(f"no topic named {name!r}")
        return image.partitions[(topic.topic_id, index)]

    def isr_entry(self, name: str, isr, index: int = 0, leader_epoch: int | None = None,
                  partition_epoch: int | None = None) -> AlterIsrPartition:
        """An AlterIsr entry for a partition, with its current epochs unless given."""
        p = self.partition(name, index)
        return AlterIsrPartition(index, p.leader_epoch if leader_epoch is None else leader_epoch, isr,
                                 p.partition_epoch if partition_epoch is None else partition_epoch)

    def alter_isr(self, broker_id: int, name: str, *entries: AlterIsrPartition) -> "Scenario":
        request = AlterIsrRequest(broker_id, self.epoch(broker_id), [AlterIsrTopic(topic_id(name), entries)])
        return self.send(request).commit()


def scripted(name: str, scenario: Scenario, kind: str = "scripted") -> Trace:
    """The trace of a scenario, recorded by the model from the scenario's configuration."""
    return record(scenario.config, scenario.events, {"name": kind, "version": 1, "params": {"scenario": name}})
