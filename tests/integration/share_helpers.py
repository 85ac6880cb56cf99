"""Helpers of the share consumer tests: a topic with records, a share group's configs and
confluent-kafka ``ShareConsumer``s polled in bounded loops."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Message, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=20)


def produce(bootstrap: str, topic: str, values: Iterable[str], partitions: int = 1,
            one_per_batch: bool = False) -> None:
    """``one_per_batch``: every record its own batch (a share consumer acquires whole
    batches)."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "linger.ms": 0}
    if one_per_batch:
        conf["batch.num.messages"] = 1
    p = Producer(conf)
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), partition=i % partitions)
    assert p.flush(20) == 0


def set_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource("group", group, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
        for k, v in configs.items()])
    for f in admin.incremental_alter_configs([res]).values():
        f.result(timeout=20)


def share_consumer(bootstrap: str, group: str, topic: str, explicit: bool = False,
                   **extra: Any) -> ShareConsumer:
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group,
                            "share.acknowledgement.mode": "explicit" if explicit else "implicit",
                            **extra}
    c = ShareConsumer(conf)
    c.subscribe([topic])
    return c


def poll_until(consumers: list[ShareConsumer], done: Callable[[list[list[Message]]], bool],
               timeout: float = 30, each: float = 0.3,
               on_batch: Callable[[int, list[Message]], None] | None = None
               ) -> list[list[Message]]:
    """Poll every consumer in turn until ``done(received)`` or ``timeout`` seconds; what
    each received (errors left out)."""
    got: list[list[Message]] = [[] for _ in consumers]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not done(got):
        for i, c in enumerate(consumers):
            batch = [m for m in c.poll(each) if m.error() is None]
            got[i].extend(batch)
            if on_batch is not None and batch:
                on_batch(i, batch)
    return got


def values(messages: Iterable[Message]) -> list[str]:
    return [bytes(m.value() or b"").decode() for m in messages]
