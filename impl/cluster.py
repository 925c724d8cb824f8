"""Registrations and finalized features: the cluster's membership (hard state).

Changed only by replaying records (REG-8, UNREG-3, LEASE-15, LOG-17); a record that does
not apply changes nothing (LOG-13). Both record formats replay here (DEC-22): seed 000's
RegisterBrokerRecord, FenceBrokerRecord and UnfenceBrokerRecord, and Kafka's RegisterBrokerRecord
and BrokerRegistrationChangeRecord, which also record whether a registration is in controlled
shutdown.
"""

from __future__ import annotations

from uuid import UUID

from .formats import FENCE, IN_CONTROLLED_SHUTDOWN, UNFENCE
from .journal import Journal


class Registration:
    """A registered broker (MEM-1)."""

    __slots__ = ("broker_id", "incarnation_id", "epoch", "end_points", "features", "rack", "fenced", "in_controlled_shutdown")

    def __init__(
        self, broker_id: int, incarnation_id: UUID, epoch: int, end_points, features, rack, fenced: bool = True,
        in_controlled_shutdown: bool = False,
    ):
        self.broker_id = broker_id
        self.incarnation_id = incarnation_id
        self.epoch = epoch
        self.end_points = end_points
        self.features = features  # the record formats' BrokerFeature structs (DEC-22)
        self.rack = rack
        self.fenced = fenced
        self.in_controlled_shutdown = in_controlled_shutdown  # DEC-22: recorded by Kafka's records only

    def fields(self) -> tuple:
        return (
            self.broker_id, self.incarnation_id, self.epoch, self.end_points, self.features, self.rack, self.fenced,
            self.in_controlled_shutdown,
        )


class ClusterControl:
    """Registrations by broker id and finalized feature ranges by name."""

    __slots__ = ("brokers", "features", "record_offsets", "journal")

    def __init__(self, journal: Journal) -> None:
        self.brokers: dict[int, Registration] = {}
        self.features: dict[str, tuple[int, int]] = {}
        # LEASE-9: the offset of each broker's latest RegisterBrokerRecord, where this controller saw it
        # written (REG-6: after the records its batch begins with, the epoch being the batch's start)
        self.record_offsets: dict[int, int] = {}
        self.journal = journal

    def _remember_broker(self, broker_id: int) -> None:
        current = self.brokers.get(broker_id)
        self.journal.remember(("broker", broker_id), lambda: None if current is None else current.fields())

    # ---- replay ----------------------------------------------------------------------

    def replay_register(self, record) -> bool:
        """REG-8: replaces any registration of the id; a new registration is fenced."""
        self._remember_broker(record.broker_id)
        self.brokers[record.broker_id] = Registration(
            record.broker_id, record.incarnation_id, record.broker_epoch, record.end_points, record.features, record.rack
        )
        return True

    def replay_kafka_register(self, record) -> bool:
        """REG-8, DEC-22 (Kafka's records): replaces any registration of the id, fenced and in
        controlled shutdown as the record says."""
        self._remember_broker(record.broker_id)
        self.brokers[record.broker_id] = Registration(
            record.broker_id, record.incarnation_id, record.broker_epoch, record.end_points, record.features, record.rack,
            record.fenced, record.in_controlled_shutdown,
        )
        return True

    def replay_registration_change(self, record) -> bool:
        """LEASE-15, DEC-22 (Kafka's records): ``Fenced`` 1 fences, -1 unfences, 0 leaves it;
        ``InControlledShutdown`` 1 records a controlled shutdown, which only a new registration
        ends. Returns whether the record applied (the registration's epoch)."""
        current = self.brokers.get(record.broker_id)
        if current is None or current.epoch != record.broker_epoch:
            return False
        self._remember_broker(record.broker_id)
        if record.fenced == FENCE:
            current.fenced = True
        elif record.fenced == UNFENCE:
            current.fenced = False
        if record.in_controlled_shutdown == IN_CONTROLLED_SHUTDOWN:
            current.in_controlled_shutdown = True
        return True

    def replay_unregister(self, record) -> bool:
        """UNREG-3. Returns whether the record applied."""
        current = self.brokers.get(record.broker_id)
        if current is None or current.epoch != record.broker_epoch:
            return False
        self._remember_broker(record.broker_id)
        del self.brokers[record.broker_id]
        return True

    def replay_fenced(self, broker_id: int, epoch: int, fenced: bool) -> bool:
        """LEASE-15: only the flag. Returns whether the record applied."""
        current = self.brokers.get(broker_id)
        if current is None or current.epoch != epoch:
            return False
        self._remember_broker(broker_id)
        current.fenced = fenced
        return True

    def replay_feature_level(self, record) -> bool:
        """LOG-17."""
        self.journal.remember(("feature", record.name), lambda: self.features.get(record.name))
        self.features[record.name] = (record.min_feature_level, record.max_feature_level)
        return True

    def replay_kafka_feature_level(self, record) -> bool:
        """LOG-17, DEC-22 (Kafka's records): one finalized level."""
        self.journal.remember(("feature", record.name), lambda: self.features.get(record.name))
        self.features[record.name] = (record.feature_level, record.feature_level)
        return True

    def registered_at(self, broker_id: int, offset: int) -> None:
        """LEASE-9: ``broker_id``'s RegisterBrokerRecord was written at ``offset`` (undone by a failover)."""
        self.journal.remember(("record_offset", broker_id), lambda: self.record_offsets.get(broker_id))
        self.record_offsets[broker_id] = offset

    def record_offset(self, registration: Registration) -> int:
        """LEASE-9: the offset of ``registration``'s RegisterBrokerRecord; its epoch where this
        controller did not see the record written (one loaded at start-up)."""
        return self.record_offsets.get(registration.broker_id, registration.epoch)

    def restore(self, key, before) -> None:
        """Put a registration, the offset of its record or a feature back to its before-image (LOG-10)."""
        kind, name = key
        if kind == "record_offset":
            if before is None:
                self.record_offsets.pop(name, None)
            else:
                self.record_offsets[name] = before
            return
        table = self.brokers if kind == "broker" else self.features
        if before is None:
            table.pop(name, None)
        elif kind == "broker":
            self.brokers[name] = Registration(*before)
        else:
            self.features[name] = before

    # ---- queries ------------------------------------------------------------------------

    def is_active(self, broker_id: int) -> bool:
        """Registered and not fenced: may stay leader (PART-3)."""
        registration = self.brokers.get(broker_id)
        return registration is not None and not registration.fenced

    def is_eligible(self, broker_id: int) -> bool:
        """Registered, not fenced, and not in controlled shutdown by its registration (which only
        Kafka's records say, DEC-22): may be in an ISR (ISR-8) and be elected (PART-3)."""
        registration = self.brokers.get(broker_id)
        return registration is not None and not registration.fenced and not registration.in_controlled_shutdown
