"""The feature levels (KIP-584) this broker runs at: what ApiVersions v3+ reports as
supported and finalized, what DescribeFeatures shows and what UpdateFeatures checks.

A level says which behaviour is in force, so each one here is the level kafkalite
implements, and its supported range is exactly that level: a broker cannot be switched
to behaviour it lacks, and UpdateFeatures answers a change with Kafka's
INVALID_UPDATE_VERSION. When work lands that implements a new level, change the entry:

- ``group.version``: 1: KIP-848 consumer groups (ConsumerGroupHeartbeat) are served
  (``group.coordinator.rebalance.protocols`` can still turn the protocol off, as in Kafka).
- ``transaction.version``: 2, KIP-890's transactions: EndTxn v5 bumps the epoch at every
  completion, Produce v12+ and TxnOffsetCommit v5 add their partition to the transaction
  themselves, and ``__transaction_state`` records are TransactionLogValue v1. Java
  producers from 4.0 use that protocol only when this is 2.
- ``streams.version``: 1: KIP-1071 streams groups (StreamsGroupHeartbeat) are served.

A feature at level 0 is left out of the finalized list, and one whose supported range
starts at 0 out of ApiVersions below v4, as Kafka does (KAFKA-17492).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    #: The level in force.
    level: int
    #: The levels this broker could run at (min, max).
    supported: tuple[int, int]


#: Kafka 4.0's metadata.version 4.0-IV3: the record formats of a 4.0 cluster.
METADATA_VERSION = Feature("metadata.version", 25, (25, 25))
#: A static voter set (controller.quorum.voters); see DescribeQuorum.
KRAFT_VERSION = Feature("kraft.version", 0, (0, 0))
#: 1: the consumer rebalance protocol (KIP-848) beside the classic one.
GROUP_VERSION = Feature("group.version", 1, (1, 1))
#: 2: KIP-890 part 2 (the level of a new Kafka 4.x cluster).
TRANSACTION_VERSION = Feature("transaction.version", 2, (2, 2))

#: 1: the streams rebalance protocol (KIP-1071): StreamsGroupHeartbeat and Describe.
STREAMS_VERSION = Feature("streams.version", 1, (1, 1))

FEATURES: tuple[Feature, ...] = (METADATA_VERSION, KRAFT_VERSION, GROUP_VERSION,
                                 TRANSACTION_VERSION, STREAMS_VERSION)
BY_NAME: dict[str, Feature] = {f.name: f for f in FEATURES}

#: The metadata offset at which the levels were finalized (ApiVersions'
#: finalized_features_epoch): they are set when the cluster is formatted and never change.
FINALIZED_EPOCH = 0


def level(name: str) -> int:
    """The finalized level of ``name`` (0, as in Kafka, for a feature not known)."""
    found = BY_NAME.get(name)
    return found.level if found is not None else 0


def for_release(levels: Mapping[str, int]) -> tuple[Feature, ...]:
    """The features as a broker presenting a Kafka release reports them: that release's
    metadata.version, and of the features kafkalite implements the release's level
    capped at kafkalite's own (a release without a feature finalizes it at 0)."""
    out = []
    for f in FEATURES:
        if f.name == METADATA_VERSION.name:
            lvl = levels.get(f.name, f.level)
        elif f.name == KRAFT_VERSION.name:
            lvl = f.level
        else:
            lvl = min(levels.get(f.name, 0), f.supported[1])
        out.append(Feature(f.name, lvl, (lvl, lvl)))
    return tuple(out)
