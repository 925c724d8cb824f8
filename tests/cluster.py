"""A test cluster driven through the model, for tests that read like the spec.

Every event goes through ``step``; after each one every invariant of spec/invariants.md is
checked, so every test also checks the invariants along its way.
"""

from __future__ import annotations

from uuid import UUID

from kraftspec.conformance.simulation import features_of
from kraftspec.model import Commit, Config, Failover, TakeSnapshot, Tick, initial_state, step
from kraftspec.model.controller import StepResult
from kraftspec.model.formats import formats_of as formats_of_profile
from kraftspec.model.invariants import violations
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
    ListPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
    ReplicaAssignment,
    UnregisterBrokerRequest,
)
from kraftspec.model.records import Record
from kraftspec.model.state import Partition

FEATURES = (Feature("metadata.format", 1, 1),)


def incarnation(broker_id: int, generation: int = 0) -> UUID:
    """A recognisable incarnation id: broker 3's second process is 0...0302."""
    return UUID(int=(broker_id << 8) + generation + 1)


def topic_id(name: str) -> UUID:
    return UUID(int=sum(ord(c) << (8 * i) for i, c in enumerate(name[:15])) + 1)


class Cluster:
    """A cluster of the given configuration, or of ``profile``'s defaults (``Cluster(profile="kafka")``
    is ``Cluster(Config.for_profile("kafka"))``)."""

    def __init__(
        self,
        config: Config | None = None,
        now_ms: int = 0,
        check_invariants: bool = True,
        *,
        profile: str | None = None,
    ):
        if profile is not None:
            assert config is None or config.profile == profile, "a config and another profile"
            config = config if config is not None else Config.for_profile(profile)
        self.state = initial_state(config, now_ms)
        self.replies: dict[int, object] = {}
        self.results: list[StepResult] = []
        self.check_invariants = check_invariants

    # ---- the event loop -------------------------------------------------------------

    def send(self, event) -> StepResult:
        before = self.state
        result = step(before, event)
        if self.check_invariants:
            broken = violations(before, event, result)
            assert not broken, f"after {event!r}: {broken}"
        self.state = result.state
        self.results.append(result)
        for reply in result.replies:
            self.replies[reply.seq] = reply.response
        return result

    def request(self, request, commit: bool = True):
        """Send ``request``; commit the log if asked; return its response, or None while it waits."""
        result = self.send(request)
        if commit:
            self.commit()
        return self.replies.get(result.seq)

    def commit(self) -> StepResult:
        return self.send(Commit(self.state.log_end_offset))

    def tick(self, now_ms: int) -> StepResult:
        return self.send(Tick(now_ms))

    def advance(self, ms: int) -> StepResult:
        return self.tick(self.state.now_ms + ms)

    def failover(self) -> StepResult:
        return self.send(Failover())

    def snapshot(self) -> StepResult:
        return self.send(TakeSnapshot())

    # ---- brokers --------------------------------------------------------------------

    def register(self, broker_id: int, generation: int = 0, commit: bool = True, **fields):
        fields.setdefault("features", features_of(self.state.config))
        fields.setdefault("cluster_id", self.state.config.cluster_id)
        request = BrokerRegistrationRequest(broker_id, incarnation_id=incarnation(broker_id, generation), **fields)
        return self.request(request, commit)

    def epoch(self, broker_id: int) -> int:
        return self.state.image.brokers[broker_id].epoch

    def fence_record(self, broker_id: int):
        """The record that fences ``broker_id`` at its epoch, in the profile's record formats (DEC-22)."""
        return formats_of_profile(self.state.config.params).fence(broker_id, self.epoch(broker_id))

    def unfence_record(self, broker_id: int):
        return formats_of_profile(self.state.config.params).unfence(broker_id, self.epoch(broker_id))

    def shutdown_records(self, broker_id: int) -> list:
        """The records that say ``broker_id`` begins a controlled shutdown: none in seed 000's formats."""
        return list(formats_of_profile(self.state.config.params).shutdown_begins(broker_id, self.epoch(broker_id), False))

    def caught_up_offset(self, log_end: int | None = None) -> int:
        """The CurrentMetadataOffset of a broker that has applied the log up to ``log_end``
        (default: the committed offset), in the profile's unit (DEC-2): the log end itself in
        kip-631 (one more than the highest offset applied), the log end - 1 in kafka (the highest
        offset applied)."""
        log_end = self.state.committed_offset if log_end is None else log_end
        return log_end if self.state.config.params.heartbeat_offset == "next-offset" else log_end - 1

    def heartbeat(
        self,
        broker_id: int,
        *,
        offset: int | None = None,
        want_fence: bool = False,
        want_shut_down: bool = False,
        epoch: int | None = None,
        version: int = 1,
        commit: bool = True,
    ):
        """A heartbeat; by default caught up to the committed log (in the profile's unit, DEC-2)
        and asking to be unfenced."""
        request = BrokerHeartbeatRequest(
            broker_id,
            self.epoch(broker_id) if epoch is None else epoch,
            self.caught_up_offset() if offset is None else offset,
            want_fence,
            want_shut_down,
            version,
        )
        return self.request(request, commit)

    def start_brokers(self, *broker_ids: int) -> None:
        """Register each broker and unfence it."""
        for b in broker_ids:
            self.register(b)
        for b in broker_ids:
            self.heartbeat(b)
        assert all(not self.state.image.brokers[b].fenced for b in broker_ids)

    def unregister(self, broker_id: int, commit: bool = True):
        return self.request(UnregisterBrokerRequest(broker_id), commit)

    # ---- topics and partitions --------------------------------------------------------

    def create_topic(self, name: str, assignment=None, partitions: int = -1, replication_factor: int = -1, commit=True):
        assignments = [ReplicaAssignment(i, r) for i, r in enumerate(assignment or [])]
        topic = CreatableTopic(name, topic_id(name), partitions, replication_factor, assignments)
        return self.request(CreateTopicsRequest([topic]), commit)

    def delete_topics(self, *names: str, commit: bool = True):
        return self.request(DeleteTopicsRequest(names), commit)

    def partition(self, name: str, index: int = 0, committed: bool = False) -> Partition:
        image = self.state.committed_image if committed else self.state.image
        return image.partitions[(image.topic_named(name).topic_id, index)]

    def alter_isr(self, broker_id: int, name: str, isr, index: int = 0, leader_epoch=None, partition_epoch=None, commit=True, broker_epoch=None):
        p = self.partition(name, index)
        entry = AlterIsrPartition(
            index,
            p.leader_epoch if leader_epoch is None else leader_epoch,
            isr,
            p.partition_epoch if partition_epoch is None else partition_epoch,
        )
        request = AlterIsrRequest(
            broker_id,
            self.epoch(broker_id) if broker_epoch is None else broker_epoch,
            [AlterIsrTopic(topic_id(name), [entry])],
        )
        return self.request(request, commit)

    def reassign(self, name: str, target, index: int = 0, commit: bool = True):
        request = AlterPartitionReassignmentsRequest([ReassignableTopic(name, [ReassignablePartition(index, target)])])
        return self.request(request, commit)

    def list_reassignments(self, topics=None):
        return self.request(ListPartitionReassignmentsRequest(topics), commit=False)

    # ---- what happened --------------------------------------------------------------

    def records(self, result: StepResult | None = None) -> list[Record]:
        """The records the last request (or ``result``) appended."""
        result = result or next(r for r in reversed(self.results) if r.seq is not None)
        return [record for batch in result.batches for record in batch.records]

    def leads(self, broker_id: int) -> bool:
        return self.state.image.leads_any(broker_id)
