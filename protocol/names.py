"""Facts of the Kafka protocol that many modules share: internal topic names and the
constants every response carries."""

from __future__ import annotations

import datetime
import uuid
from enum import IntEnum

#: Group metadata and committed offsets (compacted).
OFFSETS_TOPIC = "__consumer_offsets"
#: Transaction coordinator state (compacted).
TRANSACTION_STATE_TOPIC = "__transaction_state"
#: Share-partition state of KIP-932 share groups (compacted).
SHARE_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_STATE_TOPIC})

#: ``throttle_time`` of every response: kafkalite applies no quotas.
NO_THROTTLE = datetime.timedelta(0)
#: Kafka's authorized-operations value when the request did not ask for them.
OPS_OMITTED = -2147483648
#: Kafka's ``Uuid.ZERO_UUID``: no topic id, no directory id (all zero bits).
ZERO_UUID = uuid.UUID(int=0)


class CoordinatorType(IntEnum):
    """FindCoordinator's key types (Kafka's ``FindCoordinatorRequest.CoordinatorType``)."""

    GROUP = 0
    TRANSACTION = 1
    SHARE = 2


class ConfigResourceType(IntEnum):
    """Kafka's ``ConfigResource.Type`` codes."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32
