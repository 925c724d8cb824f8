"""Random events for Hypothesis tests: well-behaved most of the time, wrong or hostile sometimes.

Shared by the invariant test (model alone) and the lockstep test (model and impl).
"""

from __future__ import annotations

from uuid import UUID

from attrs import evolve
from hypothesis import strategies as st

from cluster import Cluster
from kraftspec.conformance.simulation import features_of
from kraftspec.model import Commit, Failover, TakeSnapshot, Tick
from kraftspec.model.events import Event
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
    ListedTopic,
    ListPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
    ReplicaAssignment,
    UnregisterBrokerRequest,
)

BROKERS = st.integers(min_value=-1, max_value=5)
SHORT_TIMES = st.sampled_from([0, 1, 500, 999, 3000])
LONG_TIMES = st.sampled_from([17_999, 18_000, 25_000])
KINDS = ["register", "heartbeat", "unregister", "alter_isr", "create", "delete", "reassign", "list", "tick", "commit", "failover", "snapshot"]
WEIGHTS = {"heartbeat": 8, "commit": 5, "alter_isr": 5, "register": 3, "reassign": 3, "tick": 3, "create": 2, "delete": 2}


def draw_mix(data: st.DataObject) -> list[str]:
    """Swarm testing: each sequence draws its own mix of event kinds (heartbeats, commits and
    registrations always in), so that rare combinations get whole sequences to themselves."""
    chosen = data.draw(st.sets(st.sampled_from(KINDS), min_size=2))
    kinds = sorted(chosen | {"register", "heartbeat", "commit"})
    return [k for k in kinds for _ in range(WEIGHTS.get(k, 1))]


def sometimes(data: st.DataObject, one_in: int) -> bool:
    return data.draw(st.integers(1, one_in)) == 1


def draw_event(data: st.DataObject, state, mix: list[str] = KINDS) -> Event:
    """A random event of a kind in ``mix``: a well-behaved one most of the time, a wrong or
    hostile one sometimes."""
    image = state.image
    partitions = image.partitions_in_order()
    registered = sorted(image.brokers)
    kind = data.draw(st.sampled_from(mix))
    if kind == "register":
        broker = data.draw(BROKERS)
        generation = data.draw(st.integers(0, 2))
        cluster = "other" if sometimes(data, 10) else state.config.cluster_id
        features = () if sometimes(data, 10) else features_of(state.config)
        return BrokerRegistrationRequest(broker, cluster, UUID(int=(max(broker, 0) << 8) + generation + 1), features=features)
    if kind == "heartbeat":
        if registered and not sometimes(data, 5):  # a well-behaved broker
            broker = data.draw(st.sampled_from(registered))
            lease = state.leases[broker]
            offset = max(lease.metadata_offset, state.committed_offset) + data.draw(st.integers(0, 1))
            return BrokerHeartbeatRequest(
                broker, image.brokers[broker].epoch, offset, sometimes(data, 6), sometimes(data, 12), data.draw(st.sampled_from([0, 1]))
            )
        broker = data.draw(BROKERS)
        epoch = data.draw(st.integers(-1, 20))
        offset = data.draw(st.integers(-1, state.log_end_offset + 1))
        return BrokerHeartbeatRequest(broker, epoch, offset, data.draw(st.booleans()), data.draw(st.booleans()), data.draw(st.sampled_from([0, 1, 2])))
    if kind == "unregister":
        return UnregisterBrokerRequest(data.draw(BROKERS))
    if kind == "alter_isr" and partitions:
        p = data.draw(st.sampled_from(partitions))
        if p.leader not in image.brokers:
            requester = data.draw(BROKERS)
            return AlterIsrRequest(requester, 0, [AlterIsrTopic(p.topic_id, [AlterIsrPartition(p.partition_id, 0, [requester], 0)])])
        live = [r for r in p.replicas if r in image.brokers and not image.brokers[r].fenced] or [p.leader]
        isr = [p.leader] + data.draw(st.lists(st.sampled_from(live), unique=True, max_size=4))
        entry = AlterIsrPartition(p.partition_id, p.leader_epoch, list(dict.fromkeys(isr)), p.partition_epoch)
        requester, broker_epoch, entries = p.leader, image.brokers[p.leader].epoch, [entry]
        if sometimes(data, 3):  # one thing wrong with it
            flaw = data.draw(st.sampled_from(["broker-epoch", "partition", "leader-epoch", "partition-epoch", "not-leader", "isr", "twice"]))
            if flaw == "broker-epoch":
                broker_epoch += data.draw(st.sampled_from([-1, 1]))
            elif flaw == "partition":
                entries = [evolve(entry, partition_index=entry.partition_index + 5)]
            elif flaw == "leader-epoch":
                entries = [evolve(entry, leader_epoch=entry.leader_epoch + data.draw(st.sampled_from([-1, 1])))]
            elif flaw == "partition-epoch":
                entries = [evolve(entry, partition_epoch=entry.partition_epoch - 1)]
            elif flaw == "not-leader" and registered:
                requester = data.draw(st.sampled_from(registered))
                broker_epoch = image.brokers[requester].epoch
            elif flaw == "isr":
                entries = [evolve(entry, new_isr=data.draw(st.lists(st.sampled_from([*p.replicas, 5, -1]), max_size=5)))]
            else:
                entries = [entry, entry]
        return AlterIsrRequest(requester, broker_epoch, [AlterIsrTopic(p.topic_id, entries)])
    if kind == "create":
        name = data.draw(st.sampled_from(["a", "b", "c", "d", ""]))
        fresh = UUID(int=1000 + state.next_seq)
        if registered and not sometimes(data, 5):
            return CreateTopicsRequest([CreatableTopic(name, fresh, data.draw(st.integers(1, 3)), data.draw(st.integers(1, len(registered))))])
        if sometimes(data, 2):
            return CreateTopicsRequest([CreatableTopic(name, fresh, data.draw(st.integers(-1, 3)), data.draw(st.integers(-1, 4)))])
        lists = data.draw(st.lists(st.lists(st.integers(-1, 5), max_size=4), min_size=1, max_size=3))
        return CreateTopicsRequest([CreatableTopic(name, fresh, assignments=[ReplicaAssignment(i, r) for i, r in enumerate(lists)])])
    if kind == "delete":
        names = sorted(t.name for t in image.topics.values()) + ["zz"]
        return DeleteTopicsRequest(data.draw(st.lists(st.sampled_from(names), max_size=2)))
    if kind == "reassign" and partitions:
        p = data.draw(st.sampled_from(partitions))
        name = image.topics[p.topic_id].name
        if sometimes(data, 5):
            target = None
        elif registered and not sometimes(data, 5):
            live = [b for b in registered if not image.brokers[b].fenced] or registered
            target = data.draw(st.lists(st.sampled_from(live), min_size=1, max_size=4, unique=True))
        else:
            target = data.draw(st.lists(st.integers(-1, 5), max_size=4))
        return AlterPartitionReassignmentsRequest([ReassignableTopic(name, [ReassignablePartition(p.partition_id, target)])])
    if kind == "list":
        return ListPartitionReassignmentsRequest(data.draw(st.sampled_from([None, [ListedTopic("a", [0, 1])]])))
    if kind == "tick":
        return Tick(state.now_ms + data.draw(LONG_TIMES if sometimes(data, 8) else SHORT_TIMES))
    if kind == "failover":
        return Failover()
    if kind == "snapshot":
        return TakeSnapshot()
    if sometimes(data, 4):
        return Commit(data.draw(st.integers(state.committed_offset, state.log_end_offset + 1)))
    return Commit(state.log_end_offset)


def warm_cluster() -> Cluster:
    """Four active brokers and two topics: a state random walks rarely build on their own."""
    c = Cluster(check_invariants=False)
    c.start_brokers(0, 1, 2, 3)
    c.create_topic("a", partitions=2, replication_factor=3)
    c.create_topic("b", partitions=1, replication_factor=2)
    return c
