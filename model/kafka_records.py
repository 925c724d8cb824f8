"""The records the ``kafka`` profile writes where Apache Kafka's differ from seed 000's (DEC-22).

Kafka, at metadata.version 3.7-IV1, keeps a registration's fencing and controlled-shutdown state
in the registration itself: RegisterBrokerRecord version 2 carries ``Fenced`` and
``InControlledShutdown``, and a BrokerRegistrationChangeRecord changes them. Its FeatureLevelRecord
finalizes one level, and its TopicRecord calls the name ``Name``. Every other record type is seed
000's (model/records.py), which Kafka's matches field for field. The definitions are in
spec/schemas/kafka-records/; ``tests/test_model_schemas.py`` keeps these classes to them.
"""

from __future__ import annotations

from typing import ClassVar
from uuid import UUID

from attrs import field, frozen

from .records import BrokerEndpoint, as_tuple

FORMATS = "kafka-3.7-IV1"

FENCE = 1
"""``Fenced`` of a BrokerRegistrationChangeRecord that fences the broker."""

UNFENCE = -1
"""``Fenced`` of a BrokerRegistrationChangeRecord that unfences the broker."""

NO_CHANGE = 0
"""``Fenced`` or ``InControlledShutdown`` of a BrokerRegistrationChangeRecord that leaves it as it is."""

IN_CONTROLLED_SHUTDOWN = 1
"""``InControlledShutdown`` of a BrokerRegistrationChangeRecord for a broker entering controlled shutdown."""


@frozen
class BrokerFeature:
    """A feature a broker supports, as Kafka's RegisterBrokerRecord names its fields."""

    FORMATS: ClassVar[str] = FORMATS
    name: str
    min_supported_version: int
    max_supported_version: int


@frozen
class RegisterBrokerRecord:
    """A registration, fenced or not as ``fenced`` says (REG-8 in the kafka profile)."""

    API_KEY: ClassVar[int] = 0
    FORMATS: ClassVar[str] = FORMATS
    record_version: ClassVar[int] = 2  # what metadata.version 3.7-IV1 writes
    broker_id: int
    is_migrating_zk_broker: bool = field(default=False, kw_only=True)  # never true here: no ZooKeeper
    incarnation_id: UUID
    broker_epoch: int
    end_points: tuple[BrokerEndpoint, ...] = field(default=(), converter=as_tuple)
    features: tuple[BrokerFeature, ...] = field(default=(), converter=as_tuple)
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False


@frozen
class BrokerRegistrationChangeRecord:
    """A change to a registration's fencing (``fenced``: FENCE, UNFENCE or NO_CHANGE) or to its
    controlled shutdown (``in_controlled_shutdown``: IN_CONTROLLED_SHUTDOWN or NO_CHANGE)."""

    API_KEY: ClassVar[int] = 17
    FORMATS: ClassVar[str] = FORMATS
    broker_id: int
    broker_epoch: int
    fenced: int = NO_CHANGE
    in_controlled_shutdown: int = NO_CHANGE

    @property
    def record_version(self) -> int:
        """Kafka writes fencing changes at version 0 and the start of a controlled shutdown at 1."""
        return 0 if self.in_controlled_shutdown == NO_CHANGE else 1


@frozen
class FeatureLevelRecord:
    API_KEY: ClassVar[int] = 12
    FORMATS: ClassVar[str] = FORMATS
    name: str
    feature_level: int


@frozen
class TopicRecord:
    API_KEY: ClassVar[int] = 2
    FORMATS: ClassVar[str] = FORMATS
    name: str
    topic_id: UUID


KAFKA_TYPES = (RegisterBrokerRecord, BrokerRegistrationChangeRecord, FeatureLevelRecord, TopicRecord)
KAFKA_STRUCTS = (BrokerFeature,)
