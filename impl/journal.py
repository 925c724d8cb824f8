"""The journal: what each uncommitted batch changed, so that a failover can undo it and a read
can see the committed state (LOG-8, LOG-10) without a second copy of the metadata.

For every batch not yet committed it keeps, per entity the batch changed, the entity's value
*before* the batch (its before-image; None when the batch created it). Committing drops the
images of committed batches; a failover restores the images, newest batch first, in the reverse
order they were taken. The committed value of an entity is the before-image in the oldest
uncommitted batch that touched it, or its live value if none did.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

# ("broker", id), ("feature", name), ("topic", id), ("partition", the topic id's int, index): a
# partition's key holds its topic's id as UUID.int, whose hash is computed in C (a UUID's own hash
# runs in Python, and replay hashes a partition's key once per record)
Key = tuple[Any, ...]


class Journal:
    __slots__ = ("batches", "current")

    def __init__(self) -> None:
        self.batches: deque[tuple[int, dict[Key, Any]]] = deque()  # (end offset, before-images)
        self.current: dict[Key, Any] | None = None

    def open_batch(self) -> None:
        self.current = {}

    def close_batch(self, end_offset: int) -> None:
        if self.current:
            self.batches.append((end_offset, self.current))
        self.current = None

    def remember(self, key: Key, before: Callable[[], Any]) -> None:
        """Take the before-image of ``key`` unless this batch already has it (or no batch is open)."""
        current = self.current
        if current is not None and key not in current:
            current[key] = before()

    def commit(self, committed_offset: int) -> None:
        batches = self.batches
        while batches and batches[0][0] <= committed_offset:
            batches.popleft()

    def undo_order(self):
        """(key, before-image) pairs in the order a failover restores them: newest first."""
        for _, images in reversed(self.batches):
            yield from reversed(list(images.items()))

    def committed_image(self, key: Key, missing: Any = None) -> Any:
        """The before-image of ``key`` in the oldest uncommitted batch that touched it, else ``missing``."""
        for _, images in self.batches:
            if key in images:
                return images[key]
        return missing

    def touched(self) -> set[Key]:
        return {key for _, images in self.batches for key in images}

    def clear(self) -> None:
        self.batches.clear()
        self.current = None
