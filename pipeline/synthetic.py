"""Writing ``__consumer_offsets`` logs as a group coordinator would, for fixtures and benchmarks.

Each call appends one record batch in Kafka's record schemas (via
``protocol.consumer_offsets``) to the partition that owns the group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import NewRecord

from .logwriter import PartitionWriter


@dataclass(frozen=True)
class Member:
    member_id: str
    topics: Sequence[str]
    assignment: Mapping[str, Sequence[int]] = field(default_factory=dict)
    instance_id: str | None = None
    client_id: str = "client"
    host: str = "/127.0.0.1"
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = 30_000


class OffsetsLogWriter:
    def __init__(self, log_dir: str | Path, partitions: int = 1) -> None:
        self.partitions = partitions
        self.writers = [PartitionWriter(log_dir, OFFSETS_TOPIC, p) for p in range(partitions)]

    def _append(self, group: str, key: bytes, value: bytes | None, ts: int) -> None:
        w = self.writers[co.group_partition(group, self.partitions)]
        w.append([NewRecord(key, value, ts)], timestamp=ts)

    def group(self, ts: int, group: str, generation: int, members: Sequence[Member],
              leader: str | None = None, protocol: str | None = "range") -> None:
        metas = tuple(
            co.MemberMetadata(
                member_id=m.member_id,
                client_id=m.client_id,
                client_host=m.host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=co.encode_subscription(
                    co.ConsumerProtocolSubscription(tuple(m.topics))),
                assignment=co.encode_assignment(co.ConsumerProtocolAssignment(tuple(
                    co.TopicPartitions(t, tuple(ps)) for t, ps in m.assignment.items()))),
                group_instance_id=m.instance_id,
            )
            for m in members
        )
        value = co.GroupMetadataValue(
            protocol_type="consumer",
            generation=generation,
            protocol=protocol if members else None,
            leader=(leader or members[0].member_id) if members else None,
            current_state_timestamp=ts,
            members=metas,
        )
        self._append(group, co.encode_key(co.GroupMetadataKey(group)),
                     co.encode_group_value(value), ts)

    def commit(self, ts: int, group: str, topic: str, partition: int, offset: int) -> None:
        key = co.encode_key(co.OffsetCommitKey(group, topic, partition))
        value = co.encode_offset_value(co.OffsetCommitValue(offset, "", ts))
        self._append(group, key, value, ts)

    def delete_group(self, ts: int, group: str) -> None:
        self._append(group, co.encode_key(co.GroupMetadataKey(group)), None, ts)

    def close(self) -> None:
        for w in self.writers:
            w.close()
