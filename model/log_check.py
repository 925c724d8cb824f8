"""Checking a metadata log as written (TOOL-6): replay its batches in order and check, after each
batch, the invariants that a log alone can show.

Pure: the caller reads the files and hands over the batches, each as its records with their
offsets; a record of a type the model does not replay (a control record, a Kafka record outside
the broker lifecycle, whatever the caller could not decode) is counted, not failed (LOG-16).

Soft state (leases, sessions, waiting replies) is not in a log, so the invariants about it (INV-10,
INV-11, INV-12) are not checked, and INV-8 (the committed state is the replay of the committed
records) holds by construction here. Every other state invariant is checked on the replayed
image after each batch; INV-4 compares each batch's image with the one before it, and INV-7 each
registration record with its own offset.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from attrs import frozen

from .invariants import STATE_INVARIANTS, epochs_went_back, registration_epoch_problem
from .log import REGISTRATION_RECORDS
from .records import RemoveTopicRecord
from .replay import _REPLAY, replay
from .rules import cite
from .state import Config, ControllerState, MetadataImage, Snapshot, replace

UNCHECKED = ("INV-8", "INV-10")
"""State invariants a log alone cannot show: INV-8 is the replay itself; INV-10 is about leases."""

CHECKED = tuple(name for name in STATE_INVARIANTS if name not in UNCHECKED) + ("INV-4",)
"""The invariants TOOL-6 checks after every batch (INV-7 on each registration record as well)."""


@frozen
class Violation:
    """An invariant that does not hold after the batch starting at ``offset``."""

    offset: int
    invariant: str
    message: str


@frozen
class LogCheck:
    """What replaying a log gave: the image at its end, the invariants broken after each batch,
    and how many records were replayed (``lifecycle``) and counted only (``other``), by type name."""

    image: MetadataImage
    violations: tuple[Violation, ...]
    lifecycle: dict[str, int]
    other: dict[str, int]
    batches: int
    end_offset: int


def replays(record: Any) -> bool:
    """The model replays ``record`` (a broker-lifecycle record of either record formats)."""
    return type(record) in _REPLAY


def _as_state(image: MetadataImage, end_offset: int, config: Config) -> ControllerState:
    """The image as a controller state whose log is all committed up to ``end_offset``."""
    return ControllerState(
        config=config, now_ms=0, image=image, committed_image=image, batches=(), committed_offset=end_offset,
        snapshot=Snapshot(end_offset, ()), leases={},
    )


def image_violations(image: MetadataImage, end_offset: int, config: Config) -> list[tuple[str, str]]:
    """TOOL-6: the state invariants a replayed image must keep, as (id, message)."""
    cite("TOOL-6")
    state = _as_state(image, end_offset, config)
    return [(name, message) for name, check in STATE_INVARIANTS.items() if name not in UNCHECKED for message in check(state)]


def check_log(
    batches: Iterable[Sequence[tuple[int, Any]]],
    config: Config,
    image: MetadataImage | None = None,
    snapshot_end: int | None = None,
) -> LogCheck:
    """TOOL-6: replay ``batches`` (each a sequence of (offset, record)) onto ``image`` (empty by
    default) and check the invariants after each batch. The records of a snapshot whose end offset
    is ``snapshot_end`` are checked once, at their end, as the state they describe at that offset;
    their offsets count records within the snapshot, so they are no epochs."""
    cite("TOOL-6")
    image = image if image is not None else MetadataImage()
    is_snapshot = snapshot_end is not None
    amends = config.params.retry_registration == "amend"
    violations: list[Violation] = []
    lifecycle: dict[str, int] = {}
    other: dict[str, int] = {}
    count, end = 0, 0
    for batch in batches:
        if not batch:
            continue
        count += 1
        before = image
        removed = set()
        for i, (offset, record) in enumerate(batch):
            name = getattr(record, "type_name", None) or type(record).__name__
            if replays(record):
                lifecycle[name] = lifecycle.get(name, 0) + 1
            else:
                cite("LOG-16")  # outside the broker lifecycle: counted, never failed
                other[name] = other.get(name, 0) + 1
            if isinstance(record, RemoveTopicRecord):
                removed.add(record.topic_id)
            if not is_snapshot and isinstance(record, REGISTRATION_RECORDS) and (
                    problem := registration_epoch_problem(batch, i, amends)) is not None:
                violations.append(Violation(batch[0][0], "INV-7", problem))
            image = replay(image, record)
            end = offset + 1
        if is_snapshot:
            continue
        at = batch[0][0]
        violations += [Violation(at, "INV-4", m) for m in epochs_went_back(before, image, frozenset(removed))]
        violations += [Violation(at, name, m) for name, m in image_violations(image, end, config)]
    if snapshot_end is not None:
        end = snapshot_end
        violations += [Violation(snapshot_end, name, m) for name, m in image_violations(image, end, config)]
    return LogCheck(image, tuple(violations), lifecycle, other, count, end)


def _keyed(image: MetadataImage) -> MetadataImage:
    """``image`` with each registration's listeners and features in name order: Kafka keeps them in
    a map keyed by name (``mapKey`` in its schema), so a snapshot may list them in another order
    than the registration record did."""
    brokers = {
        b: replace(r, end_points=None if r.end_points is None else tuple(sorted(r.end_points, key=lambda e: e.name)),
                   features=None if r.features is None else tuple(sorted(r.features, key=lambda f: f.name)))
        for b, r in image.brokers.items()
    }
    return replace(image, brokers=brokers)


def snapshot_differences(snapshot: MetadataImage, log: MetadataImage) -> list[str]:
    """LOG-12: how the state a snapshot holds differs from the log replayed to its end offset
    (empty when they agree), by broker, feature, topic and partition."""
    cite("LOG-12")
    a, b = _keyed(snapshot), _keyed(log)
    out: list[str] = []
    pairs: tuple[tuple[str, dict[Any, Any], dict[Any, Any]], ...] = (
        ("feature", a.features, b.features), ("broker", a.brokers, b.brokers),
        ("topic", a.topics, b.topics), ("partition", a.partitions, b.partitions))
    for what, left, right in pairs:
        for key in sorted(set(left) | set(right), key=str):
            if left.get(key) != right.get(key):
                out.append(f"{what} {key}: the snapshot has {left.get(key)}, the log {right.get(key)}")
    return out
