"""The persistent topic catalogue: name, topic id, partition count, per-topic configs."""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .fsutil import atomic_write

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


class InvalidTopicName(ValueError):
    pass


def validate_topic_name(name: str) -> None:
    """Kafka's rules (``org.apache.kafka.common.internals.Topic.validate``)."""
    if not name:
        raise InvalidTopicName("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicName("Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicName(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters"
        )
    if not _LEGAL.match(name):
        raise InvalidTopicName(
            f"Topic name {name} is illegal, it contains a character other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)
    internal: bool = False
    #: Each partition's replicas, preferred leader first, when the cluster placed them
    #: (several nodes); None: the one node holds every partition.
    replicas: list[list[int]] | None = None


class TopicCatalog:
    """Topics of this broker, kept in ``<data_dir>/topics.json`` (rewritten atomically)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "topics.json"
        self._topics: dict[str, TopicInfo] = {}
        self._by_id: dict[uuid.UUID, TopicInfo] = {}
        #: Called after a topic is created, changed or deleted: (event, topic).
        self.listeners: list[Callable[[str, TopicInfo], None]] = []
        #: Places the replicas of new partitions (several nodes): (topic, first partition,
        #: count, replication factor or None for the default) -> replicas per partition.
        self.placer: Callable[[str, int, int, int | None], list[list[int]]] | None = None
        #: Inside ``batch()``: saving waits for its end (None: saves at once).
        self._deferred: bool | None = None
        if self.path.exists():
            for t in json.loads(self.path.read_text())["topics"]:
                info = TopicInfo(
                    t["name"],
                    uuid.UUID(t["id"]),
                    int(t["partitions"]),
                    dict(t.get("configs", {})),
                    bool(t.get("internal", False)),
                    t.get("replicas"),
                )
                self._topics[info.name] = info
                self._by_id[info.topic_id] = info

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Changes made inside are saved once, at the end (a CreateTopics of many topics
        writes the file once rather than once per topic). Listeners still hear of each
        change as it is made."""
        if self._deferred is not None:
            yield
            return
        self._deferred = False
        try:
            yield
        finally:
            dirty, self._deferred = self._deferred, None
            if dirty:
                self._save()

    def _save(self) -> None:
        if self._deferred is not None:
            self._deferred = True
            return
        doc = {
            "topics": [
                {
                    "name": t.name,
                    "id": str(t.topic_id),
                    "partitions": t.partitions,
                    "configs": t.configs,
                    "internal": t.internal,
                    **({"replicas": t.replicas} if t.replicas is not None else {}),
                }
                for t in self._topics.values()
            ]
        }
        # Compact: an indented dump takes the pure-Python encoder, several times slower,
        # and the whole catalogue is written at every topic change.
        atomic_write(self.path, json.dumps(doc, separators=(",", ":"), sort_keys=True).encode())

    def _notify(self, event: str, info: TopicInfo) -> None:
        for fn in self.listeners:
            fn(event, info)

    def __contains__(self, name: object) -> bool:
        return name in self._topics

    def __iter__(self) -> Iterator[TopicInfo]:
        return iter(list(self._topics.values()))

    def __len__(self) -> int:
        return len(self._topics)

    def names(self) -> list[str]:
        return list(self._topics)

    def get(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def create(
        self,
        name: str,
        partitions: int,
        configs: dict[str, str] | None = None,
        internal: bool = False,
        replicas: list[list[int]] | None = None,
    ) -> TopicInfo:
        validate_topic_name(name)
        if name in self._topics:
            raise KeyError(name)
        if partitions < 1:
            raise ValueError("partitions must be at least 1")
        if self.placer is not None and replicas is None:
            replicas = self.placer(name, 0, partitions, None)
        info = TopicInfo(name, uuid.uuid4(), partitions, dict(configs or {}), internal,
                         replicas)
        self._topics[name] = info
        self._by_id[info.topic_id] = info
        self._save()
        self._notify("created", info)
        return info

    def delete(self, name: str) -> TopicInfo:
        info = self._topics.pop(name)
        self._by_id.pop(info.topic_id, None)
        self._save()
        self._notify("deleted", info)
        return info

    def set_partitions(self, name: str, partitions: int,
                       replicas: list[list[int]] | None = None) -> TopicInfo:
        info = self._topics[name]
        if partitions <= info.partitions:
            raise ValueError("partition count can only grow")
        if info.replicas is not None:
            if replicas is None and self.placer is not None:
                rf = len(info.replicas[0]) if info.replicas else 1
                replicas = self.placer(name, info.partitions, partitions - info.partitions, rf)
            info.replicas = info.replicas + (replicas or [])
        info.partitions = partitions
        self._save()
        self._notify("changed", info)
        return info

    def set_replicas(self, name: str, partition: int, replicas: list[int]) -> None:
        """A partition's replicas after a reassignment (no event: the logs are the
        replica manager's to change)."""
        info = self._topics[name]
        if info.replicas is not None and partition < len(info.replicas):
            info.replicas[partition] = list(replicas)
            self._save()

    def set_configs(self, name: str, configs: dict[str, str]) -> TopicInfo:
        info = self._topics[name]
        info.configs = dict(configs)
        self._save()
        self._notify("changed", info)
        return info
