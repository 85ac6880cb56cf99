"""A streams group member speaking StreamsGroupHeartbeat v1 itself over TCP, with word
count's topology (a source topic, a repartition topic, a store with a changelog): the
streams-group tests drive a group with it where a Kafka Streams JVM would be slow."""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

from kafkalite.client.kafka import RawConnection
from kafkalite.protocol.apis import codec

from ..differential.harness import make

APP, SOURCE = "wc", "words"
UNKNOWN_MEMBER_ID = 25


def _topology() -> dict[str, Any]:
    info: dict[str, Any] = dict(replication_factor=0, topic_configs=[])
    return dict(epoch=1, subtopologies=[
        dict(subtopology_id="0", source_topics=[SOURCE], source_topic_regex=[],
             state_changelog_topics=[], repartition_sink_topics=[f"{APP}-rep"],
             repartition_source_topics=[], copartition_groups=[]),
        dict(subtopology_id="1", source_topics=[], source_topic_regex=[],
             state_changelog_topics=[dict(name=f"{APP}-counts-changelog", partitions=0,
                                          **info)],
             repartition_sink_topics=[],
             repartition_source_topics=[dict(name=f"{APP}-rep", partitions=0, **info)],
             copartition_groups=[])])


class StreamsMember:
    """One streams group member speaking StreamsGroupHeartbeat v1 itself."""

    def __init__(self, bootstrap: str, client_id: str = "streams-member") -> None:
        self.conn = RawConnection(bootstrap, client_id)
        self.member_id, self.epoch = str(uuid.uuid4()), 0
        #: The active tasks last given (the coordinator sends them only when they change).
        self.owned: list[tuple[str, list[int]]] = []
        #: A static member's group.instance.id, sent with every heartbeat as Kafka's
        #: client sends it.
        self.instance_id: str | None = None

    def call(self, api_key: int, version: int, **fields: Any) -> Any:
        return self.conn.call(make(codec(api_key, version).request_type, fields))

    def heartbeat(self, epoch: int | None = None, expect: int = 0, **fields: Any) -> Any:
        fields.setdefault("instance_id", self.instance_id)
        resp = self.call(88, 1, group_id=APP, member_id=self.member_id,
                         member_epoch=self.epoch if epoch is None else epoch,
                         endpoint_information_epoch=0, task_offsets=None,
                         task_end_offsets=None, **fields)
        assert int(resp.error_code) == expect, resp
        if expect == 0:
            self.epoch = int(resp.member_epoch)
        return resp

    def close(self) -> None:
        self.conn.close()

    def join_only(self, instance_id: str | None = None) -> None:
        """The joining heartbeat alone (epoch 0, with the topology; static with
        ``instance_id``)."""
        self.instance_id = instance_id
        self.heartbeat(0, topology=_topology(), process_id=str(uuid.uuid4()),
                       rebalance_timeout=datetime.timedelta(seconds=30), active_tasks=[],
                       standby_tasks=[], warmup_tasks=[], client_tags=[])

    def join(self, instance_id: str | None = None, joined: bool = False) -> list[Any]:
        """Join (unless ``joined``), then heartbeat until the coordinator has created the
        internal topics and assigned tasks to this member (the group's initial rebalance
        delay passed); its tasks, acknowledged as owned."""
        if not joined:
            self.join_only(instance_id)
        deadline = time.monotonic() + 20
        while True:
            resp = self.heartbeat()
            if resp.active_tasks:
                tasks = [dict(subtopology_id=t.subtopology_id, partitions=list(t.partitions))
                         for t in resp.active_tasks]
                self.heartbeat(active_tasks=tasks, standby_tasks=[], warmup_tasks=[])
                self.owned = sorted((t.subtopology_id, sorted(t.partitions))
                                    for t in resp.active_tasks)
                return tasks
            assert time.monotonic() < deadline, "no tasks assigned"
            time.sleep(0.1)
