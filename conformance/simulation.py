"""A simulated cluster driving the model: brokers that behave like real brokers (MEM-3 to
MEM-5), an operator who creates a topic, moves partitions and restarts brokers, partition
leaders that grow and shrink their ISRs, and the quorum's commits and failovers.

Deterministic: the same seed gives the same story. Each step picks one thing that can
happen now, weighted, and feeds the resulting event to the model.
"""

from __future__ import annotations

import random
from bisect import bisect
from collections.abc import Iterator
from uuid import UUID

from attrs import frozen

from kraftspec.model import Commit, Config, Failover, TakeSnapshot, Tick, initial_state, step
from kraftspec.model import broker as brokers
from kraftspec.model.broker import BrokerProcess, BrokerState
from kraftspec.model.controller import StepResult
from kraftspec.model.events import Event
from kraftspec.model.messages import (
    AlterIsrPartition,
    AlterIsrRequest,
    AlterIsrTopic,
    AlterPartitionReassignmentsRequest,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreatableTopic,
    CreateTopicsRequest,
    Feature,
    ReassignablePartition,
    ReassignableTopic,
    UnregisterBrokerRequest,
)
from kraftspec.model.state import ControllerState, MetadataImage, Partition, Topic

TOPIC = "orders"
# the broker states the simulation asks about at every step, looked up once (an enum member's
# lookup through its class costs more than the rest of the test)
NOT_RUNNING, STARTING, RECOVERY, RUNNING = BrokerState.NOT_RUNNING, BrokerState.STARTING, BrokerState.RECOVERY, BrokerState.RUNNING
PENDING_CONTROLLED_SHUTDOWN, SHUTTING_DOWN = BrokerState.PENDING_CONTROLLED_SHUTDOWN, BrokerState.SHUTTING_DOWN
SHUTDOWN_PATIENCE_HEARTBEATS = 5  # a broker waiting this long for ShouldShutDown stops anyway
FEATURES = (Feature("metadata.format", 1, 1),)
"""What a broker of the default profile's clusters supports: the finalized level, no more."""


def features_of(config) -> tuple[Feature, ...]:
    """What a broker of a cluster configured with ``config`` supports: exactly its finalized
    features (metadata.version 16 in the kafka profile, DEC-23)."""
    return tuple(Feature(f.name, f.min_level, f.max_level) for f in config.finalized_features)


def older_features(config) -> tuple[Feature, ...]:
    """What a broker of an older release supports: one level below each finalized feature."""
    return tuple(Feature(f.name, max(f.min_level - 1, 0), max(f.min_level - 1, 0)) for f in config.finalized_features)


class ImageFacts:
    """What the simulation's weights ask of the controller's metadata image, worked out once per
    image. The model never changes an image in place (a change makes a new one), and most steps (a
    heartbeat that changes no membership, a tick, a commit) leave it as it was, so the facts of the
    step before stand. Those only some steps ask for are worked out when first asked."""

    __slots__ = ("image", "topic", "moving", "topic_moving", "_in_sync", "_led")

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.topic: Topic | None = image.topic_named(TOPIC)  # the operator's topic, if it exists
        moving = [p for p in image.partitions.values() if p.is_reassigning]
        self.moving = bool(moving)  # some partition is being moved
        self.topic_moving = self.topic is not None and any(p.topic_id == self.topic.topic_id for p in moving)  # one of the topic's
        self._in_sync: set[int] | None = None
        self._led: bool | None = None

    @property
    def in_sync(self) -> set[int]:
        """The brokers in some partition's ISR."""
        if self._in_sync is None:
            self._in_sync = {r for p in self.image.partitions.values() for r in p.isr}
        return self._in_sync

    @property
    def led(self) -> bool:
        """Whether some partition's leader is registered."""
        if self._led is None:
            brokers = self.image.brokers
            self._led = any(p.leader in brokers for p in self.image.partitions.values())
        return self._led


@frozen
class Happening:
    """One step of the story: what happened, the event the model got, and what it did."""

    number: int
    note: str
    event: Event
    result: StepResult


class Simulation:
    """The world around the controller. ``run`` yields one :class:`Happening` per step."""

    __slots__ = ("rng", "state", "processes", "heartbeat_due", "waiting_registration", "registration_due",
                 "shutdown_asked_at", "incarnations", "own_request", "asked", "partition_count", "_facts")

    def __init__(self, seed: int, broker_count: int, partition_count: int, config: Config | None = None):
        self.rng = random.Random(seed)
        self.state: ControllerState = initial_state(config)
        self.processes = {b: BrokerProcess(b) for b in range(1, broker_count + 1)}
        self.heartbeat_due: dict[int, int] = {}
        self.waiting_registration: set[int] = set()
        self.registration_due: dict[int, int] = {}  # a refused registration is retried after a pause
        self.shutdown_asked_at: dict[int, int] = {}
        self.incarnations: dict[int, int] = {}  # how many processes each broker id has had
        self.own_request: BrokerRegistrationRequest | BrokerHeartbeatRequest | None = None  # what a simulated broker process sends this step
        self.asked: dict[int, tuple[int, UUID | None]] = {}  # request number -> (broker, incarnation)
        self.partition_count = partition_count
        self._facts = ImageFacts(self.state.image)

    # ---- the loop ---------------------------------------------------------------------

    def run(self, steps: int) -> Iterator[Happening]:
        for number, (note, event, result) in enumerate(self.steps(steps), 1):
            yield Happening(number, note, event, result)

    def steps(self, steps: int) -> Iterator[tuple[str, Event, StepResult]]:
        """What ``run`` yields, as plain tuples: (what happened, the event, what the model did)."""
        for _ in range(steps):
            note, event = self.choose()
            result = step(self.state, event)
            self.state = result.state
            if event is self.own_request:  # a simulated broker's own request: its reply goes back to it
                assert result.seq is not None, "a request always gets a sequence number (RPC-6)"
                self.asked[result.seq] = (event.broker_id, self.processes[event.broker_id].incarnation_id)
            self.own_request = None
            self.deliver(result)
            yield note, event, result

    def choose(self) -> tuple[str, Event]:
        """One of the possible actions, drawn by weight, and done. The draw is
        ``rng.choices(actions, weights)[0]`` written out (the same call to the generator and the
        same arithmetic, so the same choice), without building the lists it needs twice. Actions
        are named by their methods, and only the chosen one is looked up."""
        cumulative: list[float] = []
        possible = []
        total = 0
        for weight, action in self.actions():
            if weight > 0:
                total += weight
                cumulative.append(total)
                possible.append(action)
        return getattr(self, possible[bisect(cumulative, self.rng.random() * (total + 0.0), 0, len(possible) - 1)])()

    def facts(self) -> ImageFacts:
        """The facts of the controller's metadata image as it stands (ImageFacts)."""
        facts = self._facts
        if facts.image is not self.state.image:
            facts = self._facts = ImageFacts(self.state.image)
        return facts

    def actions(self):
        """(weight, the name of the method that does it) for everything that can happen now; one
        pass over the brokers."""
        state = self.state
        now = state.now_ms
        image = state.image
        facts = self.facts()
        running, stopped, never_started, starters, due, recovering, impatient = [], [], [], [], [], [], []
        patience = SHUTDOWN_PATIENCE_HEARTBEATS * state.config.heartbeat_interval_ms
        for b, p in self.processes.items():
            kind = p.state
            if kind is NOT_RUNNING:
                stopped.append(b)
                if b not in self.incarnations:
                    never_started.append(b)
                continue
            if kind is RUNNING:
                running.append(b)
            elif kind is RECOVERY and not p.log_recovery_done:
                recovering.append(b)
            elif kind is PENDING_CONTROLLED_SHUTDOWN and now - self.shutdown_asked_at[b] >= patience:
                impatient.append(b)
            if p.registered:
                if self.heartbeat_due.get(b, 0) <= now:
                    due.append(b)
            elif kind is STARTING and b not in self.waiting_registration and self.registration_due.get(b, 0) <= now:
                starters.append(b)
        topic = facts.topic
        moving = topic is not None and facts.moving
        return [
            (5 if starters else 0, "register"),
            (6 if due else 0, "heartbeat"),
            (4 if state.log_end_offset > state.committed_offset else 0, "commit"),
            (10 if never_started else 1 if stopped else 0, "start"),
            (2 if recovering else 0, "finish_recovery"),
            (self.topic_weight(topic, len(running)), "create_topic"),
            (0 if topic is None else 4 if moving else 2, "alter_isr"),  # followers of a move catch up
            (1.5 if topic is not None and len(image.brokers) > 1 else 0, "reassign"),
            (0.3 if running else 0, "sigterm"),
            (0.2 if running else 0, "crash"),
            (0.3 if stopped and self.decommissionable() else 0, "unregister"),
            (4 if impatient else 0, "give_up_shutdown"),
            (0.2, "failover"),
            (0.3, "snapshot"),
            (3, "tick"),
        ]

    # ---- who can do what --------------------------------------------------------------

    def topic_weight(self, topic, running: int) -> float:
        """The operator creates the topic once enough brokers run, and now and then as soon as
        enough have registered, without waiting for them to be unfenced (TOPIC-4 allows it)."""
        if topic is not None:
            return 0
        enough = min(3, len(self.processes))
        return 4 if running >= enough else 1 if len(self.state.image.brokers) >= enough else 0

    def unregistered_starters(self) -> list[int]:
        return [
            b for b, p in self.processes.items()
            if p.state is STARTING
            and not p.registered
            and b not in self.waiting_registration
            and self.registration_due.get(b, 0) <= self.state.now_ms
        ]

    def due_heartbeats(self) -> list[int]:
        return [b for b, p in self.processes.items() if p.sends_heartbeats and self.heartbeat_due.get(b, 0) <= self.state.now_ms]

    def stopped(self) -> list[int]:
        return [b for b, p in self.processes.items() if p.state is NOT_RUNNING]

    def recovering(self) -> list[int]:
        return [b for b, p in self.processes.items() if p.state is RECOVERY and not p.log_recovery_done]

    def decommissionable(self) -> list[int]:
        """Stopped, fenced brokers in no ISR: an operator moves data away before unregistering (DEC-20)."""
        image, in_sync = self.state.image, self.facts().in_sync
        return [b for b in self.stopped() if b in image.brokers and image.brokers[b].fenced and b not in in_sync]

    def impatient(self) -> list[int]:
        patience = SHUTDOWN_PATIENCE_HEARTBEATS * self.state.config.heartbeat_interval_ms
        return [
            b for b, p in self.processes.items()
            if p.state is PENDING_CONTROLLED_SHUTDOWN and self.state.now_ms - self.shutdown_asked_at[b] >= patience
        ]

    # ---- actions: each returns (what happened, the event) --------------------------------

    def start(self):
        never_started = [b for b in self.stopped() if b not in self.incarnations]
        b = min(never_started) if never_started else self.rng.choice(self.stopped())
        self.incarnations[b] = self.incarnations.get(b, 0) + 1
        incarnation = UUID(int=self.rng.getrandbits(128))
        self.processes[b] = brokers.start(self.processes[b], incarnation)
        return self.register_as(b, f"broker {b} starts as a new process and registers")

    def register(self):
        b = self.rng.choice(self.unregistered_starters())
        return self.register_as(b, f"broker {b} retries its registration")

    def register_as(self, b: int, note: str):
        self.waiting_registration.add(b)
        request = brokers.registration_request(self.processes[b], self.state.config.cluster_id, features_of(self.state.config))
        self.own_request = request
        return note, request

    def heartbeat(self):
        b = min(self.due_heartbeats(), key=lambda x: (self.heartbeat_due.get(x, 0), x))
        process = brokers.catch_up(self.processes[b], self.state.committed_offset)
        self.processes[b] = process
        self.heartbeat_due[b] = self.state.now_ms + self.state.config.heartbeat_interval_ms
        self.own_request = brokers.heartbeat_request(process, offset_unit=self.state.config.params.heartbeat_offset)
        # _name_ is the member's name as Enum keeps it; .name reaches it through a property
        return f"broker {b} ({process.state._name_}) sends its heartbeat", self.own_request

    def commit(self):
        state = self.state
        if self.rng.random() < 0.2 and len(state.uncommitted_batches()) > 1:
            target = state.uncommitted_batches()[0].end_offset
            return "the quorum commits the oldest pending batch", Commit(target)
        return "the quorum commits everything written so far", Commit(state.log_end_offset)

    def finish_recovery(self):
        b = self.rng.choice(self.recovering())
        self.processes[b] = brokers.finish_log_recovery(self.processes[b])
        self.heartbeat_due[b] = self.state.now_ms  # it asks to be unfenced right away
        return self.heartbeat_now(b, f"broker {b} finishes log recovery and asks to be unfenced")

    def heartbeat_now(self, b: int, note: str):
        process = brokers.catch_up(self.processes[b], self.state.committed_offset)
        self.processes[b] = process
        self.heartbeat_due[b] = self.state.now_ms + self.state.config.heartbeat_interval_ms
        self.own_request = brokers.heartbeat_request(process, offset_unit=self.state.config.params.heartbeat_offset)
        return note, self.own_request

    def create_topic(self):
        registered = len(self.state.image.brokers)
        factor = min(3, registered)
        topic = CreatableTopic(TOPIC, UUID(int=self.rng.getrandbits(128)), self.partition_count, factor)
        return f"the operator creates topic {TOPIC!r} ({self.partition_count} partitions, replication factor {factor})", CreateTopicsRequest([topic])

    def led_partitions(self) -> list[Partition]:
        image = self.state.image
        return [
            p for p in image.partitions_in_order()
            if p.leader in self.processes and self.processes[p.leader].sends_heartbeats
        ]

    def alter_isr(self):
        candidates = self.led_partitions()
        if not candidates:
            return self.tick()
        p = self.rng.choice(candidates)
        change = self.isr_change(p, self.fetching(p))
        if change is None:
            return self.tick()
        new_isr, note = change
        return note, self.isr_request(p.leader, self.state.image.brokers[p.leader].epoch, p, new_isr)

    def fetching(self, p: Partition) -> list[int]:
        """The replicas of ``p`` its leader sees keeping up: running, and unfenced as far as the
        controller knows (this leader learns of every fencing at once)."""
        image = self.state.image
        return [r for r in p.replicas if r in image.brokers and not image.brokers[r].fenced and self.processes[r].sends_heartbeats]

    def isr_change(self, p: Partition, fetching: list[int]) -> tuple[list[int], str] | None:
        """The ISR the leader of ``p`` asks for: the first replica of ``fetching`` outside the ISR
        joins it, or else a random follower leaves it; None if there is no follower to drop."""
        behind = [r for r in fetching if r not in p.isr]
        if behind:
            return [*p.isr, behind[0]], f"leader {p.leader} of {self.partition_name(p)} sees broker {behind[0]} catch up"
        followers = [r for r in p.isr if r != p.leader]
        if not followers:
            return None
        dropped = self.rng.choice(followers)
        return [r for r in p.isr if r != dropped], f"leader {p.leader} of {self.partition_name(p)} drops lagging follower {dropped}"

    def partition_name(self, p: Partition) -> str:
        topic = self.state.image.topics.get(p.topic_id)
        return f"{topic.name if topic else 'a deleted topic'}-{p.partition_id}"

    @staticmethod
    def isr_request(sender: int, broker_epoch: int, p: Partition, *isrs: list[int]) -> AlterIsrRequest:
        """An AlterIsr from ``sender`` naming ``p`` at the epochs given in ``p``, once per ISR of ``isrs``."""
        entries = [AlterIsrPartition(p.partition_id, p.leader_epoch, isr, p.partition_epoch) for isr in isrs]
        return AlterIsrRequest(sender, broker_epoch, [AlterIsrTopic(p.topic_id, entries)])

    def reassign(self):
        image = self.state.image
        p = self.rng.choice(image.partitions_in_order())
        name, topic = self.partition_name(p), image.topics[p.topic_id].name
        current = p.target_replicas if p.is_reassigning else p.replicas
        if p.is_reassigning and self.rng.random() < 0.4:
            target, note = None, f"the operator cancels the reassignment of {name}"
        elif len(current) > 1 and self.rng.random() < 0.3:
            dropped = self.rng.choice(current)
            target = [r for r in current if r != dropped]
            note = f"the operator takes broker {dropped} off {name}: {target}"
        else:
            size = max(1, len(current))
            target = self.rng.sample(sorted(image.brokers), min(size, len(image.brokers)))
            note = f"the operator moves {name} to {target}"
        request = AlterPartitionReassignmentsRequest([ReassignableTopic(topic, [ReassignablePartition(p.partition_id, target)])])
        return note, request

    def sigterm(self):
        b = self.rng.choice([b for b, p in self.processes.items() if p.state is RUNNING])
        self.processes[b] = brokers.sigterm(self.processes[b])
        self.shutdown_asked_at[b] = self.state.now_ms
        return self.heartbeat_now(b, f"broker {b} gets SIGTERM and asks to shut down")

    def crash(self):
        b = self.rng.choice([b for b, p in self.processes.items() if p.state is RUNNING])
        self.processes[b] = brokers.stop(self.processes[b])
        self.waiting_registration.discard(b)
        return self.tick(f"broker {b} crashes; time passes")

    def give_up_shutdown(self):
        b = self.rng.choice(self.impatient())
        self.processes[b] = brokers.stop(self.processes[b])
        return self.tick(f"broker {b} gives up waiting for ShouldShutDown and stops; time passes")

    def unregister(self):
        b = self.rng.choice(self.decommissionable())
        return f"the operator decommissions broker {b} (kafka-cluster unregister --id {b})", UnregisterBrokerRequest(b)

    def failover(self):
        return "the active controller fails; a standby takes over", Failover()

    def snapshot(self):
        return "the controller writes a snapshot", TakeSnapshot()

    def tick(self, note: str | None = None):
        now = self.state.now_ms
        due = [t for b, t in self.heartbeat_due.items() if self.processes[b].sends_heartbeats and t > now]
        due += [t for b, t in self.registration_due.items() if t > now and not self.processes[b].registered]
        later = min(due) if due and self.rng.random() < 0.7 else now + self.rng.choice([250, 1000, 2500, 6000])
        return note or f"time passes to {later / 1000:.3f}s", Tick(later)

    # ---- responses reach the brokers --------------------------------------------------

    def deliver(self, result: StepResult) -> None:
        """Released responses reach the process that asked, if it is still the same incarnation.

        A registration answered NOT_CONTROLLER (after a failover) leaves the broker STARTING
        without an epoch, so ``register`` retries it.
        """
        for reply in result.replies:
            sender = self.asked.pop(reply.seq, None)
            if sender is None:
                continue
            b, incarnation = sender
            process = self.processes[b]
            if process.incarnation_id != incarnation:
                continue  # the process that asked has crashed since
            if isinstance(reply.response, BrokerRegistrationResponse):
                self.waiting_registration.discard(b)
                process = brokers.on_registration_response(process, reply.response)
                if process.registered:
                    self.heartbeat_due[b] = self.state.now_ms
                else:
                    self.registration_due[b] = self.state.now_ms + self.state.config.heartbeat_interval_ms
            elif isinstance(reply.response, BrokerHeartbeatResponse):
                process = brokers.on_heartbeat_response(process, reply.response)
                if process.state is SHUTTING_DOWN:
                    process = brokers.stop(process)
            self.processes[b] = process
