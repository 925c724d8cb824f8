"""The controller as a Hypothesis state machine: one rule per event kind (two for heartbeats),
model and impl in lockstep.

Every rule builds one event from the current state (mostly well-behaved: registered brokers with
their current epochs, caught-up offsets, partition leaders with their current epochs, existing
topics; sometimes wrong: stale epochs, unknown ids, malformed ISRs, invalid targets), sends it to
the model and to impl through ``conformance.lockstep.Lockstep``, and keeps what went wrong. The
``@invariant``s then check, after every rule:

* every invariant of spec/invariants.md on the model's step (``model.invariants.violations``);
* that impl's outputs agree with the model's (the lockstep's differences: sequence numbers,
  records, replies, committed state);
* that impl's soft state and in-memory image agree with the model's (a white-box check that
  catches a divergence before it shows in an output);
* that impl's metrics equal the model's definitions (METRIC-1 to METRIC-6).

Broker ids stay in 0..5 so that registrations collide. Examples and randomness follow the loaded
Hypothesis profile (``ci`` by default; ``HYPOTHESIS_PROFILE=thorough`` for the long run); each
example runs at most 50 steps.
"""

from __future__ import annotations

import itertools
from uuid import UUID

import pytest
from attrs import evolve
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from cluster import incarnation
from kraftspec.conformance.jsonform import qualified, to_json
from kraftspec.conformance.simulation import features_of
from kraftspec.conformance.lockstep import Lockstep, response_version
from kraftspec.impl import alter_isr as impl_alter_isr
from kraftspec.impl.controller import Controller
from kraftspec.impl.leases import LeaseManager
from kraftspec.model import Commit, Config, Failover, TakeSnapshot, Tick, step
from kraftspec.model.invariants import violations
from kraftspec.model.metrics import CommitClock, metrics_of, observe
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
    Feature,
    ListedTopic,
    ListPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
    ReplicaAssignment,
    UnregisterBrokerRequest,
)

BROKER_IDS = st.integers(0, 5)
TOPIC_NAMES = ("a", "b", "c")
STEPS = 50
WANTS = [(False, False)] * 4 + [(True, False), (False, True), (False, True), (True, True)]  # (WantFence, WantShutDown)


def sometimes(data, one_in: int) -> bool:
    return data.draw(st.integers(1, one_in)) == 1


class ControllerLockstep(RuleBasedStateMachine):
    """The controller's events, one rule each, sent to the model and to impl together."""

    registrations = Bundle("registrations")  # (broker id, epoch): every epoch granted, current or replaced since
    created_topics = Bundle("created_topics")  # (name, topic id): every topic created, existing or deleted since
    alter_isr_requests = Bundle("alter_isr_requests")  # every AlterIsr sent, for late copies

    profile = "kip-631"  # the behaviour profile both sides follow (spec/profiles.toml)

    def __init__(self) -> None:
        super().__init__()
        self.lockstep = Lockstep(Config.for_profile(self.profile))
        self.fresh_ids = itertools.count(1000)
        self.broken: list[str] = []  # model invariants violated, with the event
        self.differences: list[str] = []  # where impl departed from the model, with the event
        self.clock = CommitClock()  # the model's commit history, for METRIC-2 and METRIC-3

    @property
    def model(self):
        return self.lockstep.model

    def send(self, event):
        """``event`` to both sides; keep the first violations and differences for the invariants."""
        before = self.model
        result = step(before, event)
        differences = self.lockstep.send(event)
        self.clock = observe(self.clock, before, result)
        if not self.broken:
            self.broken = [f"{event!r}: {v}" for v in violations(before, event, result)]
        if not self.differences:
            self.differences = [f"{event!r}: {d}" for d in differences]
        return result

    # ---- what the state offers --------------------------------------------------------------

    def registered(self) -> list[int]:
        return sorted(self.model.image.brokers)

    def epoch(self, broker_id: int) -> int:
        return self.model.image.brokers[broker_id].epoch

    def partitions(self):
        return self.model.image.partitions_in_order()

    def led_partitions(self):
        image = self.model.image
        return [p for p in image.partitions_in_order() if p.leader in image.brokers]

    def topic_name(self, partition) -> str:
        return self.model.image.topics[partition.topic_id].name

    def granted(self, broker_id: int, before):
        """The registration a step granted ``broker_id``, for the bundle; nothing if none."""
        after = self.model.image.brokers.get(broker_id)
        old = before.image.brokers.get(broker_id)
        if after is not None and (old is None or old.epoch != after.epoch):
            return (broker_id, after.epoch)
        return multiple()

    # ---- a warm start, sometimes ------------------------------------------------------------

    @initialize(target=registrations, data=st.data())
    def start_cluster(self, data):
        """Start some brokers (register, commit, heartbeat, commit) and maybe two topics: states a
        random walk of 50 steps rarely builds on its own. Zero brokers is the cold start."""
        count = data.draw(st.sampled_from([0, 1, 2, 3, 3, 4]), label="brokers started")
        for b in range(count):
            self.send(self.registration(b, 0))
        self.send(Commit(self.model.log_end_offset))
        for b in range(count):
            self.send(BrokerHeartbeatRequest(b, self.epoch(b), self.model.committed_offset, False, False))
        self.send(Commit(self.model.log_end_offset))
        if count and not sometimes(data, 4):
            replication = data.draw(st.integers(1, count), label="replication factor")
            a = CreatableTopic("a", UUID(int=next(self.fresh_ids)), 2, replication)
            b = CreatableTopic("b", UUID(int=next(self.fresh_ids)), 1, 1)
            self.send(CreateTopicsRequest([a, b]))
            self.send(Commit(self.model.log_end_offset))
        return multiple(*((b, self.epoch(b)) for b in range(count)))

    # ---- the rules: one per event kind ----------------------------------------------------------

    def registration(self, broker_id: int, generation: int, **fields) -> BrokerRegistrationRequest:
        fields.setdefault("features", features_of(self.model.config))
        return BrokerRegistrationRequest(broker_id, self.model.config.cluster_id, incarnation(broker_id, generation), **fields)

    @rule(target=registrations, data=st.data())
    def register(self, data):
        """A broker process registers: a new one, a retry of the current one (REG-3), an impostor
        with a live id (REG-4); sometimes malformed (REG-1), of another cluster (REG-2), or without
        the finalized features (REG-5)."""
        state = self.model
        timeout = state.config.session_timeout_ms
        gone = [b for b, l in state.leases.items() if l.deadline(timeout) <= state.now_ms or l.released]
        if gone and not sometimes(data, 3):  # a broker told to shut down, or whose lease lapsed, restarts
            broker = data.draw(st.sampled_from(sorted(gone)), label="broker")
            restarted = UUID(int=state.image.brokers[broker].incarnation_id.int + 1)
            request = evolve(self.registration(broker, 0), incarnation_id=restarted)
        else:
            broker = data.draw(BROKER_IDS, label="broker")
            current = state.image.brokers.get(broker)
            if current is not None and sometimes(data, 2):  # a retry of the registered process
                request = evolve(self.registration(broker, 0), incarnation_id=current.incarnation_id)
            else:  # a new process, or an impostor while the id is held
                request = self.registration(broker, data.draw(st.integers(0, 3), label="generation"))
        if sometimes(data, 6):
            flaws = ["negative id", "other cluster", "no features", "newer features", "zero incarnation"]
            flaw = data.draw(st.sampled_from(flaws), label="flaw")
            if flaw == "negative id":
                request = evolve(request, broker_id=-1)
            elif flaw == "other cluster":
                request = evolve(request, cluster_id="another-cluster")
            elif flaw == "no features":
                request = evolve(request, features=())
            elif flaw == "newer features":
                newer = tuple(Feature(f.name, f.max_level + 1, f.max_level + 2) for f in state.config.finalized_features)
                request = evolve(request, features=newer)
            else:
                request = evolve(request, incarnation_id=UUID(int=0))
        before = self.model
        self.send(request)
        return self.granted(request.broker_id, before)

    @rule(data=st.data(), earlier=st.one_of(st.none(), registrations))
    def heartbeat(self, data, earlier):
        """A heartbeat: mostly a registered broker with its current epoch, caught up (or just short
        of its own registration record, LEASE-9), asking for nothing, to be fenced, or to shut down;
        sometimes an earlier epoch (LEASE-4), an unknown id (LEASE-3), a negative (LEASE-5) or late
        (LEASE-6) offset, an unsupported version (RPC-2)."""
        registered = self.registered()
        state = self.model
        shutting_down = sorted(b for b, lease in state.leases.items() if lease.in_controlled_shutdown)
        if shutting_down and sometimes(data, 2):  # a broker in controlled shutdown (SHUT-1: it stays in it)
            broker = data.draw(st.sampled_from(shutting_down), label="broker")
            epoch = self.epoch(broker)
        elif registered and not sometimes(data, 5):
            starting = [b for b in registered if state.image.brokers[b].fenced]  # fenced: on its way in, or out
            broker = data.draw(st.sampled_from(starting if starting and sometimes(data, 2) else registered), label="broker")
            epoch = self.epoch(broker)
        elif earlier is not None and sometimes(data, 2):
            broker, epoch = earlier  # the epoch it was granted, which may have been replaced since
        else:
            broker = data.draw(BROKER_IDS, label="broker")
            epoch = data.draw(st.integers(-1, state.log_end_offset), label="epoch")
        offsets = [state.committed_offset] * 4 + [state.log_end_offset, -1]
        if broker in state.image.brokers:  # just before and just after its own registration record (LEASE-9)
            offsets += [state.image.brokers[broker].epoch, state.image.brokers[broker].epoch + 1]
        offset = data.draw(st.sampled_from(offsets), label="offset")
        lease = state.leases.get(broker)
        if lease is not None and lease.metadata_offset > 0 and sometimes(data, 8):
            offset = lease.metadata_offset - 1  # a late copy of an earlier heartbeat
        wants = data.draw(st.sampled_from(WANTS), label="want fence, shut down")
        version = data.draw(st.sampled_from([1, 1, 1, 0, 2]), label="version")
        self.send(BrokerHeartbeatRequest(broker, epoch, offset, *wants, version))

    @precondition(lambda self: any(not r.fenced for r in self.model.image.brokers.values()))
    @rule(data=st.data())
    def controlled_shutdown(self, data):
        """An active broker asks to shut down (SHUT-1), caught up. A second rule for heartbeats, so
        that brokers in controlled shutdown are common, and so are brokers stuck in it while they
        lead what no other replica can (SHUT-2, SHUT-3): the states where a shutdown that is not
        sticky, or a leadership moved to another broker shutting down, would show."""
        image = self.model.image
        active = sorted(b for b, r in image.brokers.items() if not r.fenced)
        leaders = sorted({p.leader for p in image.partitions.values()} & set(active))
        # mostly a leader: its leaderships have to move, which is where SHUT-2 decides anything
        broker = data.draw(st.sampled_from(leaders if leaders and not sometimes(data, 4) else active), label="broker")
        self.send(BrokerHeartbeatRequest(broker, self.epoch(broker), self.model.committed_offset, False, True))

    @rule(data=st.data())
    def unregister(self, data):
        """The operator unregisters a broker: mostly a registered one (UNREG-2), sometimes any id (UNREG-1)."""
        registered = self.registered()
        if registered and not sometimes(data, 4):
            broker = data.draw(st.sampled_from(registered), label="broker")
        else:
            broker = data.draw(BROKER_IDS, label="broker")
        self.send(UnregisterBrokerRequest(broker))

    @rule(target=alter_isr_requests, data=st.data(), earlier=st.one_of(st.none(), registrations),
          sent=st.one_of(st.none(), alter_isr_requests))
    def alter_isr(self, data, earlier, sent):
        """A partition leader asks to add or drop in-sync replicas, with its current epochs; sometimes
        with one thing wrong: a stale broker epoch (ISR-2), an unknown partition (ISR-3), a stale or
        future leader epoch (ISR-4), a requester that does not lead (ISR-5), a stale partition epoch
        (ISR-6), a malformed ISR (ISR-7), a fenced replica added (ISR-8), the partition twice (ISR-11);
        sometimes a late copy of a request sent before, whose epochs may have gone stale since."""
        if sent is not None and sometimes(data, 4):
            self.send(sent)
            return sent
        image = self.model.image
        led = self.led_partitions()
        partitions = led if led and not sometimes(data, 5) else self.partitions()
        if not partitions:  # a request about a partition that does not exist (ISR-3)
            broker = data.draw(BROKER_IDS, label="broker")
            epoch = image.brokers[broker].epoch if broker in image.brokers else 0
            entry = AlterIsrPartition(0, 0, [broker], 0)
            return self.send_alter_isr(AlterIsrRequest(broker, epoch, [AlterIsrTopic(UUID(int=77), [entry])]))
        p = data.draw(st.sampled_from(partitions), label="partition")
        catching_up = [r for r in p.adding_replicas if r not in p.isr]  # a reassignment's new replicas
        outside = catching_up if catching_up and sometimes(data, 2) else [r for r in p.replicas if r not in p.isr]
        followers = [r for r in p.isr if r != p.leader]
        change = data.draw(st.sampled_from(["add"] * bool(outside) + ["drop"] * bool(followers) + ["same"]), label="change")
        isr = list(p.isr)
        if change == "add":
            isr.append(data.draw(st.sampled_from(outside), label="added"))
        elif change == "drop":
            isr.remove(data.draw(st.sampled_from(followers), label="dropped"))
        entry = AlterIsrPartition(p.partition_id, p.leader_epoch, isr, p.partition_epoch)
        if p.leader in image.brokers:
            requester = p.leader
        else:  # nobody leads it: a former leader, or any registered broker, asks (ISR-5)
            requester = data.draw(st.sampled_from(self.registered() or [0]), label="requester")
        broker_epoch = image.brokers[requester].epoch if requester in image.brokers else 0
        topic_id, entries = p.topic_id, [entry]
        if sometimes(data, 3):
            flaws = ["broker epoch", "partition", "topic", "leader epoch", "leader epoch", "partition epoch", "not leader"]
            flaw = data.draw(st.sampled_from([*flaws, "isr", "fenced", "twice"]), label="flaw")
            if flaw == "broker epoch":
                broker_epoch = earlier[1] if earlier is not None and earlier[0] == requester else broker_epoch - 1
            elif flaw == "partition":
                entries = [evolve(entry, partition_index=data.draw(st.sampled_from([2, 3, 7, -1])))]
            elif flaw == "topic":
                topic_id = UUID(int=77)
            elif flaw == "leader epoch":
                entries = [evolve(entry, leader_epoch=p.leader_epoch + data.draw(st.sampled_from([-1, 1])))]
            elif flaw == "partition epoch":
                entries = [evolve(entry, partition_epoch=p.partition_epoch + data.draw(st.sampled_from([-1, 1])))]
            elif flaw == "not leader":
                requester = data.draw(st.sampled_from([b for b in self.registered() if b != p.leader] or [requester]))
                broker_epoch = image.brokers[requester].epoch if requester in image.brokers else 0
            elif flaw == "isr":
                malformed = [[], [requester, requester], [r for r in isr if r != requester] or [5], [*isr, 5], [*isr, -1]]
                entries = [evolve(entry, new_isr=data.draw(st.sampled_from(malformed)))]
            elif flaw == "fenced":
                fenced = [r for r in p.replicas if r not in isr and r in image.brokers and image.brokers[r].fenced]
                entries = [evolve(entry, new_isr=[*isr, *fenced[:1]])]
            else:
                entries = [entry, entry]
        return self.send_alter_isr(AlterIsrRequest(requester, broker_epoch, [AlterIsrTopic(topic_id, entries)]))

    def send_alter_isr(self, request: AlterIsrRequest) -> AlterIsrRequest:
        self.send(request)
        return request

    @rule(target=created_topics, data=st.data(), earlier=st.one_of(st.none(), created_topics))
    def create_topics(self, data, earlier):
        """The operator creates a topic: by count and replication factor over the registered brokers
        (TOPIC-4) or by an explicit assignment (TOPIC-3); sometimes a name in use or illegal, a
        topic id in use (DEC-24), an impossible count, a malformed assignment, both or neither."""
        registered = self.registered()
        name = data.draw(st.sampled_from(TOPIC_NAMES), label="name")
        topic_id = UUID(int=next(self.fresh_ids))
        if registered and not sometimes(data, 4):
            if data.draw(st.booleans(), label="explicit"):
                replicas = st.lists(st.sampled_from(registered), min_size=1, max_size=3, unique=True)
                lists = data.draw(st.lists(replicas, min_size=1, max_size=3), label="assignment")
                topic = CreatableTopic(name, topic_id, assignments=[ReplicaAssignment(i, r) for i, r in enumerate(lists)])
            else:
                topic = CreatableTopic(name, topic_id, data.draw(st.integers(1, 3)), data.draw(st.integers(1, len(registered))))
        else:
            flaw = data.draw(st.sampled_from(["name", "id", "count", "assignment", "both", "neither"]), label="flaw")
            if flaw == "name":
                topic = CreatableTopic(data.draw(st.sampled_from(["", ".", "bad name", "x" * 250])), topic_id, 1, 1)
            elif flaw == "id":
                topic = CreatableTopic(name, earlier[1] if earlier is not None else UUID(int=0), 1, 1)
            elif flaw == "count":
                topic = CreatableTopic(name, topic_id, data.draw(st.integers(-1, 3)), data.draw(st.integers(-1, 7)))
            elif flaw == "assignment":
                lists = data.draw(st.lists(st.lists(st.integers(-1, 5), max_size=3), min_size=1, max_size=3))
                indexes = data.draw(st.sampled_from(["in order", "shifted"]))
                shift = 0 if indexes == "in order" else 1
                topic = CreatableTopic(name, topic_id, assignments=[ReplicaAssignment(i + shift, r) for i, r in enumerate(lists)])
            elif flaw == "both":
                topic = CreatableTopic(name, topic_id, 1, 1, [ReplicaAssignment(0, [0])])
            else:
                topic = CreatableTopic(name, topic_id)
        topics = [topic, topic] if sometimes(data, 12) else [topic]
        self.send(CreateTopicsRequest(topics))
        created = self.model.image.topic_named(topic.name)
        return (topic.name, topic.topic_id) if created is not None and created.topic_id == topic.topic_id else multiple()

    @rule(data=st.data(), earlier=st.one_of(st.none(), created_topics))
    def delete_topics(self, data, earlier):
        """The operator deletes topics: mostly existing ones (TOPIC-7), sometimes one deleted
        already or never created, a name twice, or none."""
        current = sorted(t.name for t in self.model.image.topics.values())
        known = current + ([earlier[0]] if earlier is not None else []) + ["zz"]
        names = data.draw(st.lists(st.sampled_from(known), max_size=2), label="names")
        self.send(DeleteTopicsRequest(names))

    @rule(data=st.data())
    def alter_reassignments(self, data):
        """The operator reassigns a partition to registered brokers (REASSIGN-4), reorders its
        replicas, or cancels (REASSIGN-8); sometimes to an invalid target (REASSIGN-3), an unknown
        partition (REASSIGN-2), or the same partition twice."""
        registered = self.registered()
        partitions = self.partitions()
        reassigning = [p for p in partitions if p.is_reassigning]
        p = None
        if reassigning and sometimes(data, 2):
            p = data.draw(st.sampled_from(reassigning), label="partition")
        elif partitions and not sometimes(data, 8):
            p = data.draw(st.sampled_from(partitions), label="partition")
        if p is not None:
            name, index = self.topic_name(p), p.partition_id
        else:
            name = data.draw(st.sampled_from([*TOPIC_NAMES, "zz"]), label="topic")
            index = data.draw(st.integers(0, 3), label="index")
        choice = data.draw(st.sampled_from(["target"] * 3 + ["reorder", "cancel", "invalid"]), label="kind")
        if choice == "target" and registered:
            target = data.draw(st.lists(st.sampled_from(registered), min_size=1, max_size=4, unique=True), label="target")
        elif choice == "reorder" and p is not None:
            target = data.draw(st.permutations(p.target_replicas), label="target")
        elif choice == "cancel":
            target = None
        else:
            target = data.draw(st.sampled_from([[], [0, 0], [5, 4], [-1]]), label="target")
        entries = [ReassignablePartition(index, target)]
        if sometimes(data, 12):
            entries = entries * 2
        self.send(AlterPartitionReassignmentsRequest([ReassignableTopic(name, entries)]))

    @rule(data=st.data())
    def list_reassignments(self, data):
        """The operator lists reassignments: all of them, or those of some topics and partitions (REASSIGN-10)."""
        if sometimes(data, 2):
            self.send(ListPartitionReassignmentsRequest(None))
            return
        names = data.draw(st.lists(st.sampled_from([*TOPIC_NAMES, "zz"]), min_size=1, max_size=2), label="topics")
        topics = [ListedTopic(n, data.draw(st.lists(st.integers(0, 2), max_size=2), label="indexes")) for n in names]
        self.send(ListPartitionReassignmentsRequest(topics))

    @rule(data=st.data())
    def tick(self, data):
        """Time passes: a little, a heartbeat interval, a session, or exactly to a lease's deadline
        (in the kafka profile also a session's, or the next scan, DEC-25) and one millisecond either
        side of it (LEASE-8, REG-4); sometimes not at all."""
        state = self.model
        timeout = state.config.session_timeout_ms
        steps = [1, 10, 500, state.config.heartbeat_interval_ms, timeout, 0]
        deadlines = {lease.deadline(timeout) for lease in state.leases.values()}
        if state.config.params.lease_expiry == "hash-map-scan":  # DEC-25: and when the next scan is due
            deadlines |= {state.next_scan_ms} | {s.last_contact_ms + timeout for s in state.sessions.in_order()}
        deadlines = sorted(d for d in deadlines if d > state.now_ms)
        if deadlines and not sometimes(data, 3):
            deadline = data.draw(st.sampled_from(deadlines), label="deadline")
            now = deadline + data.draw(st.sampled_from([0, 0, -1, 1]), label="off by")
        else:
            now = state.now_ms + data.draw(st.sampled_from(steps), label="advance")
        self.send(Tick(now))

    @precondition(lambda self: self.model.log_end_offset > self.model.committed_offset)
    @rule(data=st.data())
    def commit(self, data):
        """The quorum commits, when there is something to commit: mostly everything, sometimes up to
        an offset that may fall inside a batch or past the log end (LOG-6)."""
        state = self.model
        if sometimes(data, 4):
            offset = data.draw(st.integers(state.committed_offset, state.log_end_offset + 1), label="offset")
        else:
            offset = state.log_end_offset
        self.send(Commit(offset))

    @rule()
    def failover(self):
        """Another controller becomes active (LOG-10)."""
        self.send(Failover())

    @precondition(lambda self: self.model.committed_offset > self.model.log_start_offset)
    @rule()
    def snapshot(self):
        """The controller snapshots its committed state, when it has grown since the last snapshot (LOG-11)."""
        self.send(TakeSnapshot())

    # ---- the invariants ------------------------------------------------------------------------

    @invariant()
    def model_invariants_hold(self):
        """Every invariant of spec/invariants.md, on every step the model took."""
        assert not self.broken, "\n".join(self.broken)

    @invariant()
    def impl_outputs_agree(self):
        """impl produced the model's sequence numbers, records, replies and committed state."""
        assert not self.differences, "\n".join(self.differences)

    @invariant()
    def impl_soft_state_agrees(self):
        """impl's clock, offsets, uncommitted batches, waiting responses, leases and in-memory image are the model's."""
        assert soft_state_of_impl(self.lockstep.impl) == soft_state_of_model(self.model)

    @invariant()
    def impl_metrics_agree(self):
        """impl's metrics are the model's (METRIC-1 to METRIC-6)."""
        impl = self.lockstep.impl
        assert impl.metrics.values(impl) == metrics_of(self.model, self.clock).as_dict()


def soft_state_of_model(state) -> dict:
    image = state.image
    return {
        "clock": state.now_ms,
        "next seq": state.next_seq,
        "log start": state.log_start_offset,
        "log end": state.log_end_offset,
        "committed": state.committed_offset,
        "uncommitted batches": [(b.base_offset, len(b.records)) for b in state.uncommitted_batches()],
        "waiting": [
            (p.release_offset, p.seq,
             to_json(p.response, response_version(p.request), qualified(type(p.response).__name__, state.config.params.rpc_formats)))
            for p in state.pending
        ],
        "leases": {
            b: (lease.last_contact_ms, lease.metadata_offset, lease.in_controlled_shutdown, lease.released)
            for b, lease in state.leases.items()
        },
        "brokers": {b: (r.incarnation_id, r.epoch, r.fenced) for b, r in image.brokers.items()},
        # DEC-25, kafka profile: Kafka's sessions in its map's order, and the next scan
        "sessions": [(s.broker_id, s.epoch, s.last_contact_ms) for s in state.sessions.in_order()],
        "next scan": state.next_scan_ms if state.config.params.lease_expiry == "hash-map-scan" else None,
        "partitions": {
            (image.topics[p.topic_id].name, p.partition_id): (
                p.replicas, p.isr, p.removing_replicas, p.adding_replicas, p.leader, p.leader_epoch, p.partition_epoch
            )
            for p in image.partitions.values()
        },
    }


def soft_state_of_impl(controller: Controller) -> dict:
    sessions = controller.leases.sessions
    return {
        "clock": controller.now_ms,
        "next seq": controller.next_seq,
        "log start": controller.log_start_offset,
        "log end": controller.log_end_offset,
        "committed": controller.committed_offset,
        "uncommitted batches": [(base, len(records)) for base, records in controller.batches],
        "waiting": [(release, seq, to_json(response, version, qualified(type(response).__name__, controller.config.params.rpc_formats)))
                    for release, seq, _, version, response in controller.pending],
        "leases": {
            b: (lease.last_contact_ms, lease.metadata_offset, lease.in_controlled_shutdown, lease.released)
            for b, lease in controller.leases.leases.items()
        },
        "brokers": {b: (r.incarnation_id, r.epoch, r.fenced) for b, r in controller.state.cluster.brokers.items()},
        "sessions": [(e[1], e[2], e[3]) for chain in sessions.slots for e in chain] if sessions is not None else [],
        "next scan": controller.leases.next_scan_ms if sessions is not None else None,
        "partitions": {
            (topic.name, p.partition_id): tuple(tuple(x) if isinstance(x, (list, tuple)) else x for x in p.fields())
            for topic in controller.state.replication.topics.values()
            for p in topic.partitions
        },
    }


TestControllerLockstep = ControllerLockstep.TestCase
TestControllerLockstep.settings = settings(stateful_step_count=STEPS)  # the loaded profile's examples and randomness


class KafkaProfileLockstep(ControllerLockstep):
    """The same machine under the kafka behaviour profile."""

    profile = "kafka"


TestKafkaProfileLockstep = KafkaProfileLockstep.TestCase
TestKafkaProfileLockstep.settings = settings(stateful_step_count=STEPS)


# ---- the machine catches a broken impl --------------------------------------------------------------


def expiry_one_millisecond_late(original):
    def expired(self, now_ms):
        return original(self, now_ms - 1)

    return expired


def leader_epoch_unchecked(original):
    def alter_partition_isr(self, requester, topic_id, entry, counts):
        partition = self.state.replication.partition(topic_id, entry.partition_index)
        if partition is not None:
            entry.leader_epoch = partition.leader_epoch  # impl's own decoded copy of the request
        return original(self, requester, topic_id, entry, counts)

    return alter_partition_isr


def committed_batches_kept(original):
    def commit_to(self, offset):
        batches = list(self.batches)
        original(self, offset)
        self.batches.extendleft(reversed(batches[: len(batches) - len(self.batches)]))  # nothing visible yet

    return commit_to


@pytest.mark.parametrize(
    ("owner", "name", "breakage"),
    [
        (LeaseManager, "expired", expiry_one_millisecond_late),
        (impl_alter_isr, "_alter_partition", leader_epoch_unchecked),
        (Controller, "_commit_to", committed_batches_kept),
    ],
    ids=["lease expiry one millisecond late", "AlterIsr leader epoch unchecked", "committed batches kept as uncommitted"],
)
def test_the_machine_catches_a_broken_impl(monkeypatch, owner, name, breakage):
    """Break impl in one small way; the machine finds it (without shrinking, to stay quick)."""
    monkeypatch.setattr(owner, name, breakage(getattr(owner, name)))
    quick = settings(
        max_examples=200, stateful_step_count=STEPS, derandomize=True, database=None,
        phases=[Phase.generate], report_multiple_bugs=False, deadline=None,
    )
    with pytest.raises(AssertionError):
        run_state_machine_as_test(ControllerLockstep, settings=quick)
