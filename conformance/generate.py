"""Trace generators: what the model does with a sequence of events, recorded as a trace.

* :func:`walk`: a random walk of the simulated cluster (brokers that behave like real brokers,
  an operator, the quorum's commits and failovers) with faults; swarm style, each seed draws its
  own cluster size, event mix and faults (lost responses and retries, a second process with the
  same broker id, stale epochs, late heartbeats, commit delays, failovers, malformed requests).
* :func:`record`: turn any sequence of model events into a trace.

The same seed and parameters always give the same trace.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from attrs import evolve

from kraftspec.model import Config
from kraftspec.model.messages import (
    AlterIsrPartition,
    AlterIsrRequest,
    AlterIsrTopic,
    AlterPartitionReassignmentsRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    CreatableTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    ListPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
    ReplicaAssignment,
    UnregisterBrokerRequest,
)

from kraftspec.model import Failover

from .adapters import ModelAdapter, committed_of, config_json, event_json, outputs_of
from .simulation import FEATURES, TOPIC, Simulation
from .trace import Header, Step, Trace

GENERATOR_VERSION = 1
FAULTS = ("lost-response", "duplicate-broker", "stale-epoch", "late-heartbeat", "commit-delay", "failover", "malformed")


def record(config: Config, events: Iterable, generator: dict[str, Any], seed: int | None = None, description: str = "") -> Trace:
    """Run the model over ``events`` and write down what it did, step by step."""
    adapter = ModelAdapter()
    adapter.start(config_json(config))

    def stepped():
        for event in events:
            yield event, adapter.run(event)[1]

    return record_results(config, stepped(), generator, seed, description)


def record_results(config: Config, results: Iterable, generator: dict[str, Any], seed: int | None = None,
                   description: str = "") -> Trace:
    """A trace from (event, StepResult) pairs of a model run that started from ``config``'s
    initial state. The committed state is written at the first step and wherever it changes."""
    steps = []
    previous = None
    last_offset = None
    for n, (event, result) in enumerate(results):
        committed = None
        if n == 0 or result.state.committed_offset != last_offset or isinstance(event, Failover):
            current = committed_of(result.state)
            if current != previous:
                committed = tuple(current)
                previous = current
        last_offset = result.state.committed_offset
        outputs = outputs_of(result)
        steps.append(Step(n, event_json(event), outputs["seq"], tuple(outputs["records"]), tuple(outputs["replies"]),
                          committed, result.rules, result.rejected_by))
    return Trace(Header(config_json(config), generator, seed, description), tuple(steps))


class FaultySimulation(Simulation):
    """The simulated cluster with faults, each enabled or not by the swarm draw."""

    def __init__(self, seed: int, broker_count: int, partition_count: int, faults: frozenset[str], config: Config):
        super().__init__(seed, broker_count, partition_count, config)
        self.faults = faults
        self.sent_heartbeats: list[BrokerHeartbeatRequest] = []
        self.old_epochs: dict[int, int] = {}

    def actions(self):
        options = super().actions()
        faults = self.faults
        if "duplicate-broker" in faults and self.state.image.brokers:
            options.append((0.4, self.impostor))
        if "stale-epoch" in faults and self.old_epochs:
            options.append((0.5, self.stale_heartbeat))
        if "late-heartbeat" in faults and self.sent_heartbeats:
            options.append((0.5, self.late_heartbeat))
        if "failover" in faults:
            options.append((0.6, self.failover))
        if "malformed" in faults:
            options.append((0.6, self.malformed))
        if self.state.image.topic_named(TOPIC) is not None:
            options.append((0.2, self.delete_and_recreate))
            options.append((0.3, self.list_reassignments))
        return options

    def commit(self):
        if "commit-delay" in self.faults and self.rng.random() < 0.6:
            return self.tick("commits are slow; time passes")
        return super().commit()

    def heartbeat(self):
        note, request = super().heartbeat()
        self.sent_heartbeats = (self.sent_heartbeats + [request])[-20:]
        return note, request

    def deliver(self, result) -> None:
        if "lost-response" in self.faults:
            kept = tuple(r for r in result.replies if self.rng.random() >= 0.15)
            for reply in result.replies:
                if reply not in kept:
                    sender = self.asked.pop(reply.seq, None)
                    if sender is not None:  # the broker never hears back: it retries
                        self.waiting_registration.discard(sender[0])
            result = evolve(result, replies=kept)
        for reply in result.replies:
            sender = self.asked.get(reply.seq)
            if sender is not None and hasattr(reply.response, "broker_epoch") and reply.response.broker_epoch >= 0:
                old = self.processes[sender[0]].epoch
                if old >= 0 and old != reply.response.broker_epoch:
                    self.old_epochs[sender[0]] = old
        super().deliver(result)

    # ---- the faults ----------------------------------------------------------------------

    def impostor(self):
        b = self.rng.choice(sorted(self.state.image.brokers))
        request = BrokerRegistrationRequest(b, self.state.config.cluster_id, UUID(int=self.rng.getrandbits(128)), features=FEATURES)
        return f"a second process configured with broker id {b} tries to register", request

    def stale_heartbeat(self):
        b, epoch = self.rng.choice(sorted(self.old_epochs.items()))
        request = BrokerHeartbeatRequest(b, epoch, self.state.committed_offset, False, False)
        return f"broker {b}'s previous incarnation heartbeats with its old epoch {epoch}", request

    def late_heartbeat(self):
        request = self.rng.choice(self.sent_heartbeats)
        return f"a late copy of an earlier heartbeat of broker {request.broker_id} arrives", request

    def malformed(self):
        rng, image = self.rng, self.state.image
        choice = rng.randrange(7)
        if choice == 0:
            return "a broker with a negative id registers", BrokerRegistrationRequest(-1, self.state.config.cluster_id, UUID(int=5), features=FEATURES)
        if choice == 1:
            return "a broker of another cluster registers", BrokerRegistrationRequest(9, "another-cluster", UUID(int=6), features=FEATURES)
        if choice == 2:
            return "a heartbeat from an unknown broker id", BrokerHeartbeatRequest(rng.randrange(40, 50), 3, 0, False, False)
        if choice == 3:
            return "a heartbeat at an unsupported version", BrokerHeartbeatRequest(1, 1, 0, False, False, version=9)
        if choice == 4 and image.partitions:
            p = rng.choice(image.partitions_in_order())
            isr = rng.choice([[], [p.leader, p.leader], [p.leader, 77]])
            entry = AlterIsrPartition(p.partition_id, p.leader_epoch, isr, p.partition_epoch)
            epoch = image.brokers[p.leader].epoch if p.leader in image.brokers else 0
            return f"leader {p.leader} sends a malformed ISR {isr}", AlterIsrRequest(p.leader, epoch, [AlterIsrTopic(p.topic_id, [entry])])
        if choice == 5:
            topic = CreatableTopic(rng.choice(["", "bad name", "x" * 250, TOPIC]), UUID(int=rng.getrandbits(128)), 1, 1)
            return "the operator asks for an impossible topic", CreateTopicsRequest([topic])
        target = rng.choice([[], [1, 1], [99]])
        request = AlterPartitionReassignmentsRequest([ReassignableTopic(rng.choice([TOPIC, "missing"]), [ReassignablePartition(0, target)])])
        return f"the operator asks for an impossible reassignment to {target}", request

    def delete_and_recreate(self):
        if self.rng.random() < 0.5:
            return f"the operator deletes topic {TOPIC!r}", DeleteTopicsRequest([TOPIC])
        registered = sorted(self.state.image.brokers)
        assignment = [ReplicaAssignment(i, self.rng.sample(registered, min(2, len(registered)))) for i in range(2)]
        topic = CreatableTopic("audit", UUID(int=self.rng.getrandbits(128)), assignments=assignment)
        return "the operator creates topic 'audit' with an explicit assignment", CreateTopicsRequest([topic])

    def list_reassignments(self):
        return "the operator lists reassignments", ListPartitionReassignmentsRequest(None)

    def unregister(self):
        if self.rng.random() < 0.3 and self.state.image.brokers:  # an unsafe decommission now and then
            b = self.rng.choice(sorted(self.state.image.brokers))
            return f"the operator unregisters broker {b} while it still holds data", UnregisterBrokerRequest(b)
        return super().unregister()


def swarm(seed: int) -> dict[str, Any]:
    """What a walk with this seed looks like: cluster size and the faults it switches on."""
    rng = random.Random(f"swarm-{seed}")
    faults = sorted(f for f in FAULTS if rng.random() < 0.5)
    return {"brokers": rng.randint(2, 5), "partitions": rng.randint(1, 4), "faults": faults}


def walk(seed: int, steps: int = 50, brokers: int | None = None, partitions: int | None = None,
         faults: Iterable[str] | None = None, config: Config | None = None) -> Trace:
    """A random walk of ``steps`` events, deterministic by seed (swarm draws whatever is not given)."""
    mix = swarm(seed)
    brokers = brokers or mix["brokers"]
    partitions = partitions or mix["partitions"]
    faults = frozenset(mix["faults"] if faults is None else faults)
    unknown = faults - set(FAULTS)
    if unknown:
        raise ValueError(f"unknown faults {sorted(unknown)}; expected some of {', '.join(FAULTS)}")
    config = config or Config()
    simulation = FaultySimulation(seed, brokers, partitions, faults, config)
    results = ((happening.event, happening.result) for happening in simulation.run(steps))
    generator = {"name": "walk", "version": GENERATOR_VERSION,
                 "params": {"steps": steps, "brokers": brokers, "partitions": partitions, "faults": sorted(faults)}}
    return record_results(config, results, generator, seed)
