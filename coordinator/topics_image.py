"""The broker's topics as the group coordinator sees them (Kafka's ``MetadataImage`` topics).

Consumer groups assign partitions by topic id, resolve regular expressions against every
topic name and recompute their target assignment when a subscribed topic grows, is
deleted or (for a regex) is created. The composition root turns each topic catalogue
event into a :class:`TopicChange` and hands it to the runtime, which passes it to the
core; the core keeps this image and tells the groups concerned.

``version`` plays the part of the metadata offset Kafka stamps on a resolved regular
expression: it moves on every change, never backwards, also across restarts (it is at
least the wall-clock time of the change), so a resolution written before a restart is
older than any topic created since.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A subscribed topic as the group saw it (Kafka's ``modern.TopicMetadata``)."""

    topic_id: uuid.UUID
    name: str
    num_partitions: int


class TopicEvent(enum.Enum):
    CREATED = "created"
    #: The partition count (or a config) changed.
    CHANGED = "changed"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class TopicChange:
    """One catalogue event, as the coordinator needs it."""

    event: TopicEvent
    name: str
    topic_id: uuid.UUID
    partitions: int


class TopicsImage:
    __slots__ = ("by_id", "by_name", "last_created_version", "version")

    def __init__(self, topics: Iterable[TopicMetadata] = (), version: int = 0) -> None:
        self.by_name: dict[str, TopicMetadata] = {t.name: t for t in topics}
        self.by_id: dict[uuid.UUID, TopicMetadata] = {t.topic_id: t for t in self.by_name.values()}
        self.version = version
        #: The version of the last change that created a topic (Kafka's
        #: ``lastMetadataImageWithNewTopics``): regexes resolved before it are refreshed.
        self.last_created_version = version

    def apply(self, change: TopicChange, now: int) -> bool:
        """Apply ``change``; whether the image changed."""
        old = self.by_name.get(change.name)
        if change.event is TopicEvent.DELETED:
            if old is None or old.topic_id != change.topic_id:
                return False
            del self.by_name[change.name]
            self.by_id.pop(old.topic_id, None)
        else:
            new = TopicMetadata(change.topic_id, change.name, change.partitions)
            if old == new:
                return False
            if old is not None:
                self.by_id.pop(old.topic_id, None)
            self.by_name[change.name] = new
            self.by_id[new.topic_id] = new
        self.version = max(self.version + 1, now)
        if change.event is TopicEvent.CREATED:
            self.last_created_version = self.version
        return True

    def load(self, changes: Iterable[TopicChange], now: int) -> None:
        """The topics at start-up (before any partition is loaded)."""
        for c in changes:
            self.apply(TopicChange(TopicEvent.CREATED, c.name, c.topic_id, c.partitions), now)
        self.last_created_version = self.version

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        t = self.by_id.get(topic_id)
        return None if t is None else t.name
