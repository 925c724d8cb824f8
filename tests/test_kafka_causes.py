"""The signatures of ``kraftspec kafka-causes`` for ListPartitionReassignments answers, without
Kafka: each kind of difference in a listing is named by its own ledger row (spec/kafka.md, part B)
and by no other, so that the counts over thousands of walks mean what they say; a difference no row
explains stays unexplained. (The ledger traces
themselves are classified against Kafka in tests/test_kafka_ledger.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftspec.conformance.kafka_causes import cause
from kraftspec.conformance.replay import Divergence
from kraftspec.conformance.trace import read

LEDGER = Path(__file__).resolve().parent.parent / "conformance" / "kafka-ledger"
TRACE = read(LEDGER / "b29_reassignments_listed_in_kafkas_order.jsonl")  # ends with a listing of every topic


def partition(index: int, replicas=(1, 2), adding=(2,), removing=()) -> dict:
    return {"PartitionIndex": index, "Replicas": list(replicas), "AddingReplicas": list(adding),
            "RemovingReplicas": list(removing)}


def answer(*topics: tuple[str, list[dict]]) -> list[dict]:
    body = {"ErrorCode": 0, "ThrottleTimeMs": 0, "Topics": [{"Name": name, "Partitions": parts} for name, parts in topics]}
    return [{"api": "ListPartitionReassignments", "body": body, "seq": 7, "version": 0}]


def explained(expected, actual, topics_asked=None) -> str | None:
    last = TRACE.steps[-1]
    event = {**last.event, "body": {"Topics": topics_asked}}
    return cause(TRACE, Divergence(last.n, event, "replies", expected, actual, last.rules, last.rejected_by))


KRAFTSPEC = answer(("a", [partition(0), partition(1)]), ("b", [partition(0)]))


@pytest.mark.parametrize("kafka, row", [
    (answer(("a", [partition(1), partition(0)]), ("b", [partition(0)])), "B29"),  # a's partitions as they began
    (answer(("b", [partition(0)]), ("a", [partition(0), partition(1)])), "B29"),  # topics in another order
    (answer(("a", [partition(0), partition(1)]), ("b", [partition(0)]), ("b", [partition(0)])), "B30"),  # b twice
    (answer(("a", [partition(0), partition(1)])), None),  # b left out, which B13 does not explain here
    (answer(("a", [partition(0), partition(1, replicas=(1, 2, 3))]), ("b", [partition(0)])), None),
    (answer(("a", [partition(0), partition(1)]), ("b", [partition(0), partition(1, adding=(2,), removing=(2,))])),
     "B12"),  # a broker both adding and removing
])
def test_a_listing_difference_is_named_by_its_own_row(kafka, row):
    assert explained(KRAFTSPEC, kafka) == row


def test_b13_is_the_listing_of_the_committed_topics_read_from_the_uncommitted_state():
    """The trace's topic is deleted, not yet committed, when it lists: Kafka, reading the topic from
    the uncommitted state, lists nothing; an answer that lists something else is not B13."""
    trace = read(LEDGER / "b13_list_reassignments_reads_uncommitted_partitions.jsonl")
    last = trace.steps[-1]

    def explained_there(actual):
        return cause(trace, Divergence(last.n, last.event, "replies", last.replies, actual, last.rules, last.rejected_by))

    assert explained_there(answer()) == "B13"
    assert explained_there(answer(("t", [partition(0, replicas=(1, 2, 3))]))) is None


def test_a_topic_listed_twice_is_the_failover_bug_only_in_an_answer_for_every_topic():
    asked = [{"Name": "b", "PartitionIndexes": [0]}, {"Name": "b", "PartitionIndexes": [0]}]
    assert explained(answer(("b", [partition(0)])), answer(("b", [partition(0)]), ("b", [partition(0)])), asked) == "B29"
