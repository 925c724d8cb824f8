"""Trace generators: what the model does with a sequence of events, recorded as a trace.

* :func:`walk`: a random walk of the simulated cluster (brokers that behave like real brokers,
  an operator, the quorum's commits and failovers) with faults; swarm style, each seed draws its
  own cluster size, event mix and faults (lost responses and retries, a second process with the
  same broker id, stale epochs, late heartbeats, commit delays, failovers, malformed requests,
  partition leaders that lag behind the controller or send wrong AlterIsr requests, an operator's
  mistakes).
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
    AlterIsrRequest,
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
from kraftspec.model.state import Partition

from .adapters import CommittedForms, ModelAdapter, config_json, event_json, outputs_of
from .simulation import TOPIC, Simulation, features_of, older_features
from .trace import Header, Step, Trace

GENERATOR_VERSION = 4  # 4: a faulty leader may send an AlterIsr with no topics (ISR-12)
FAULTS = ("lost-response", "duplicate-broker", "stale-epoch", "late-heartbeat", "commit-delay", "failover", "malformed",
          "faulty-leader", "operator-mistakes")
VIEWS_KEPT = 3  # earlier versions of each partition a lagging leader may still act on


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
    committed_forms = CommittedForms()  # forms shared by the steps that hold them
    last_image = None  # the committed image ``previous`` was written from
    for n, (event, result) in enumerate(results):
        committed = None
        state = result.state
        if (n == 0 or state.committed_offset != last_offset or isinstance(event, Failover)) and state.committed_image is not last_image:
            current = committed_forms.of(state)
            if current != previous:
                committed = tuple(current)
                previous = current
            last_image = state.committed_image
        last_offset = state.committed_offset
        outputs = outputs_of(result)
        steps.append(Step(n, event_json(event, config.params.rpc_formats), outputs["seq"], tuple(outputs["records"]), tuple(outputs["replies"]),
                          committed, result.rules, result.rejected_by))
    return Trace(Header(config_json(config), generator, seed, description), tuple(steps))


class FaultySimulation(Simulation):
    """The simulated cluster with faults, each enabled or not by the swarm draw."""

    __slots__ = ("faults", "sent_heartbeats", "old_epochs", "views", "seen", "unregistered")  # generate.pxd declares them too

    def __init__(self, seed: int, broker_count: int, partition_count: int, faults: frozenset[str], config: Config):
        super().__init__(seed, broker_count, partition_count, config)
        self.faults = faults
        self.sent_heartbeats: list[BrokerHeartbeatRequest] = []
        self.old_epochs: dict[int, int] = {}
        self.views: dict[tuple[UUID, int], list[tuple[Partition, int]]] = {}  # earlier versions, with the leader's epoch then
        self.seen = self.state.image
        self.unregistered: set[int] = set()  # broker ids the operator has unregistered

    def actions(self):
        options = super().actions()
        faults, image, facts = self.faults, self.state.image, self.facts()
        if "duplicate-broker" in faults and image.brokers:
            options.append((0.4, "impostor"))
        if "stale-epoch" in faults and self.old_epochs:
            options.append((0.5, "stale_heartbeat"))
        if "late-heartbeat" in faults and self.sent_heartbeats:
            options.append((0.5, "late_heartbeat"))
        if "failover" in faults:
            options.append((0.6, "failover"))
        if "malformed" in faults:
            options.append((0.6, "malformed"))
        if "faulty-leader" in faults and (self.views or facts.led):
            options.append((0.8, "faulty_alter_isr"))
        if "operator-mistakes" in faults:
            options.append((0.5, "operator_mistake"))
        if facts.topic is not None:
            options.append((0.6 if facts.topic_moving else 0.2, "delete_and_recreate"))
            options.append((0.3, "list_reassignments"))
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
        if "lost-response" in self.faults and result.replies:
            arrives = [(reply, self.rng.random() >= 0.15) for reply in result.replies]
            if not all(arrived for _, arrived in arrives):
                for reply, arrived in arrives:
                    if not arrived:
                        sender = self.asked.pop(reply.seq, None)
                        if sender is not None:  # the broker never hears back: it retries
                            self.waiting_registration.discard(sender[0])
                result = evolve(result, replies=tuple(reply for reply, arrived in arrives if arrived))
        for reply in result.replies:
            sender = self.asked.get(reply.seq)
            if sender is not None and hasattr(reply.response, "broker_epoch") and reply.response.broker_epoch >= 0:
                old = self.processes[sender[0]].epoch
                if old >= 0 and old != reply.response.broker_epoch:
                    self.old_epochs[sender[0]] = old
        super().deliver(result)
        self.remember()

    def remember(self) -> None:
        """Keep the last few versions of every partition the controller has since changed or
        removed (a leader may still act on one), and the broker ids unregistered."""
        image, seen = self.state.image, self.seen
        if image.partitions is not seen.partitions:
            kept = {id(p) for p in image.partitions.values()}  # a partition the controller left as it was is the same object
            for key, old in seen.partitions.items():
                if id(old) not in kept and old.leader in seen.brokers:
                    views = self.views.setdefault(key, [])
                    views.append((old, seen.brokers[old.leader].epoch))
                    del views[:-VIEWS_KEPT]
        if image.brokers is not seen.brokers:
            self.unregistered |= set(seen.brokers) - set(image.brokers)
        self.seen = image

    def fetching(self, p: Partition) -> list[int]:
        """A faulty leader, half the time, has not yet learned that the controller fenced a
        follower: every running replica it sees fetching may join the ISR (ISR-8)."""
        if "faulty-leader" in self.faults and self.rng.random() < 0.5:
            return [r for r in p.replicas if r in self.processes and self.processes[r].sends_heartbeats]
        return super().fetching(p)

    def led(self) -> list[Partition]:
        """Partitions whose leader is registered."""
        image = self.state.image
        return [p for p in image.partitions_in_order() if p.leader in image.brokers]

    # ---- the faults ----------------------------------------------------------------------

    def impostor(self):
        b = self.rng.choice(sorted(self.state.image.brokers))
        request = BrokerRegistrationRequest(b, self.state.config.cluster_id, UUID(int=self.rng.getrandbits(128)), features=features_of(self.state.config))
        return f"a second process configured with broker id {b} tries to register", request

    def stale_heartbeat(self):
        b, epoch = self.rng.choice(sorted(self.old_epochs.items()))
        request = BrokerHeartbeatRequest(b, epoch, self.state.committed_offset, False, False)
        return f"broker {b}'s previous incarnation heartbeats with its old epoch {epoch}", request

    def late_heartbeat(self):
        request = self.rng.choice(self.sent_heartbeats)
        return f"a late copy of an earlier heartbeat of broker {request.broker_id} arrives", request

    def faulty_alter_isr(self):
        """A partition leader's AlterIsr gone wrong: decided on an earlier version of its
        partition and arriving late, from a previous process, from a follower, naming the
        partition twice, with a malformed ISR, or with no topics at all."""
        rng, image = self.rng, self.state.image
        led = self.led()
        followed = [p for p in led if any(r != p.leader and r in image.brokers for r in p.replicas)]
        demoted, lagging = self.demoted(), self.lagging()
        kinds = ["delayed"] * 2 * bool(self.views) + ["demoted"] * 4 * bool(demoted) + ["lagging"] * 2 * bool(lagging)
        kind = rng.choice(kinds + ["old process", "named twice", "bad isr"] * bool(led) + ["not the leader"] * bool(followed))
        if kind == "delayed":
            return self.delayed_alter_isr()
        if kind == "demoted":  # the leader decided before an election moved its partition on
            return self.late_alter_isr(*rng.choice(demoted))
        if kind == "lagging":
            return self.late_alter_isr(*rng.choice(lagging), "a leader acts on the committed metadata it has applied")
        if kind == "not the leader":
            p = rng.choice(followed)
            b = rng.choice([r for r in p.replicas if r != p.leader and r in image.brokers])
            return (f"follower {b} of {self.partition_name(p)} asks to change its ISR as if it led it",
                    self.isr_request(b, image.brokers[b].epoch, p, list(p.isr)))
        p = rng.choice(led)
        epoch = image.brokers[p.leader].epoch
        if kind == "old process":
            old = self.old_epochs.get(p.leader, epoch - 1)
            return (f"an AlterIsr of a previous process of leader {p.leader} (broker epoch {old}) arrives",
                    self.isr_request(p.leader, old, p, list(p.isr)))
        if kind == "named twice":
            return (f"leader {p.leader} sends two ISR changes for {self.partition_name(p)} in one request",
                    self.isr_request(p.leader, epoch, p, [p.leader], list(p.isr)))
        isr = rng.choice([[], [p.leader, p.leader], [p.leader, 77], [r for r in p.isr if r != p.leader] or [77], None])
        if isr is None:
            return f"leader {p.leader} sends an AlterIsr that names no topic", AlterIsrRequest(p.leader, epoch, [])
        return f"leader {p.leader} sends a malformed ISR {isr}", self.isr_request(p.leader, epoch, p, isr)

    def delayed_alter_isr(self):
        """An AlterIsr a leader decided on an earlier version of its partition, arriving late: the
        partition has moved on (ISR-4, ISR-6), its topic is gone (ISR-3), or the leader has
        registered again since (ISR-2)."""
        rng, partitions = self.rng, self.state.image.partitions
        keys = sorted(self.views)
        live = [k for k in keys if k in partitions]
        old, epoch = rng.choice(self.views[rng.choice(live if live and (len(live) == len(keys) or rng.random() < 0.75) else keys)])
        return self.late_alter_isr(old, epoch)

    def demoted(self) -> list[tuple[Partition, int]]:
        """Earlier versions of partitions that have had a leader election since."""
        partitions = self.state.image.partitions
        return [(v, e) for k in sorted(self.views) if k in partitions for v, e in self.views[k]
                if partitions[k].leader_epoch != v.leader_epoch]

    def lagging(self) -> list[tuple[Partition, int]]:
        """Partitions as the committed metadata has them, where the controller has changed them
        since, each with its leader's committed broker epoch."""
        state = self.state
        committed, partitions = state.committed_image, state.image.partitions
        return [(p, committed.brokers[p.leader].epoch) for k, p in sorted(committed.partitions.items())
                if partitions.get(k) is not p and p.leader in committed.brokers]

    def late_alter_isr(self, old: Partition, epoch: int, why: str = "a delayed AlterIsr arrives"):
        """The AlterIsr the leader of ``old`` decides on it (with broker epoch ``epoch``)."""
        fetching = [r for r in old.replicas if r in self.processes and self.processes[r].sends_heartbeats]
        new_isr, what = self.isr_change(old, fetching) or (list(old.isr), f"leader {old.leader} of {self.partition_name(old)} repeats its ISR")
        note = f"{why}: {what}, at leader epoch {old.leader_epoch}, partition epoch {old.partition_epoch}, broker epoch {epoch}"
        return note, self.isr_request(old.leader, epoch, old, new_isr)

    def operator_mistake(self):
        rng, image = self.rng, self.state.image
        gone = sorted(self.unregistered - set(image.brokers))
        kind = rng.choice(["impossible topic", "impossible reassignment", "mistyped id"] + ["again"] * bool(gone)
                          + ["unsafe unregister"] * bool(image.brokers))
        if kind == "impossible topic":
            name = rng.choice(["", "bad name", "x" * 250, TOPIC, None])
            if name is None:  # a typo in the partition count: more records than one request may append
                topic = CreatableTopic("typo", UUID(int=rng.getrandbits(128)), 10_001, 1)
                return "the operator asks for 10001 partitions", CreateTopicsRequest([topic])
            topic = CreatableTopic(name, UUID(int=rng.getrandbits(128)), 1, 1)
            return "the operator asks for an impossible topic", CreateTopicsRequest([topic])
        if kind == "impossible reassignment":
            target = rng.choice([[], [1, 1], [99]])
            request = AlterPartitionReassignmentsRequest([ReassignableTopic(rng.choice([TOPIC, "missing"]), [ReassignablePartition(0, target)])])
            return f"the operator asks for an impossible reassignment to {target}", request
        if kind == "mistyped id":
            b = rng.randrange(30, 40)
            return f"the operator mistypes a broker id and unregisters broker {b}", UnregisterBrokerRequest(b)
        if kind == "again":
            b = rng.choice(gone)
            return f"the operator runs the unregister command for broker {b} again", UnregisterBrokerRequest(b)
        b = rng.choice(sorted(image.brokers))
        return f"the operator unregisters broker {b} while it still holds data", UnregisterBrokerRequest(b)

    def malformed(self):
        rng, image, cluster = self.rng, self.state.image, self.state.config.cluster_id
        registered = sorted(image.brokers)
        kind = rng.choice(["negative id", "other cluster", "unknown id", "version", "older release"] + ["negative offset"] * bool(registered))
        if kind == "negative id":
            return "a broker with a negative id registers", BrokerRegistrationRequest(-1, cluster, UUID(int=5), features=features_of(self.state.config))
        if kind == "other cluster":
            return "a broker of another cluster registers", BrokerRegistrationRequest(9, "another-cluster", UUID(int=6), features=features_of(self.state.config))
        if kind == "unknown id":
            return "a heartbeat from an unknown broker id", BrokerHeartbeatRequest(rng.randrange(40, 50), 3, 0, False, False)
        if kind == "version":
            return "a heartbeat at an unsupported version", BrokerHeartbeatRequest(1, 1, 0, False, False, version=9)
        if kind == "older release":
            b = rng.randrange(20, 25)
            features = older_features(self.state.config)
            request = BrokerRegistrationRequest(b, cluster, UUID(int=rng.getrandbits(128)), features=features)
            known = ", ".join(f"{f.name} {f.min_supported_version}" for f in features)
            return f"broker {b}, of an older release that knows only {known}, tries to join", request
        b = rng.choice(registered)
        return f"broker {b} heartbeats with a negative metadata offset", BrokerHeartbeatRequest(b, image.brokers[b].epoch, -1, False, False)

    def delete_and_recreate(self):
        image = self.state.image
        existing = image.topic_named(TOPIC)
        assert existing is not None, "the operator deletes the topic only while it exists (actions)"
        moving = any(p.is_reassigning for p in image.partitions_of(existing.topic_id))
        if moving and self.rng.random() < 0.7:
            return f"the operator gives up moving topic {TOPIC!r} and deletes it", DeleteTopicsRequest([TOPIC])
        if self.rng.random() < 0.5:
            return f"the operator deletes topic {TOPIC!r}", DeleteTopicsRequest([TOPIC])
        registered = sorted(self.state.image.brokers)
        assignment = [ReplicaAssignment(i, self.rng.sample(registered, min(2, len(registered)))) for i in range(2)]
        topic = CreatableTopic("audit", UUID(int=self.rng.getrandbits(128)), assignments=assignment)
        return "the operator creates topic 'audit' with an explicit assignment", CreateTopicsRequest([topic])

    def list_reassignments(self):
        return "the operator lists reassignments", ListPartitionReassignmentsRequest(None)


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
    results = ((event, result) for _, event, result in simulation.steps(steps))
    generator = {"name": "walk", "version": GENERATOR_VERSION,
                 "params": {"steps": steps, "brokers": brokers, "partitions": partitions, "faults": sorted(faults)}}
    return record_results(config, results, generator, seed)
