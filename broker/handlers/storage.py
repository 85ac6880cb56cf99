"""Partition logs: creates ``broker.logs`` (a LogManager), keeps it in step with the
topic catalogue and runs its start, maintenance and stop with the broker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalite.storage.catalog import TopicInfo
from kafkalite.storage.manager import LogManager

if TYPE_CHECKING:
    from ..server import Broker


def install(broker: Broker) -> None:
    cfg = broker.config
    manager = LogManager(
        broker.data_dir,
        broker.topic_config,
        durable=cfg.bool("log.durable"),
        retention_check_interval_ms=cfg.int("log.retention.check.interval.ms"),
    )
    broker.logs = manager

    def on_topic(event: str, info: TopicInfo) -> None:
        if event == "deleted":
            manager.delete_topic(info.name)
            return
        for p in range(info.partitions):
            manager.get_or_create(info.name, p)
        # Also on creation: a log opened before its topic existed took the defaults.
        manager.reconfigure(info.name)

    broker.topics.listeners.append(on_topic)

    async def start() -> None:
        manager.load({t.name: t.partitions for t in broker.topics})
        await manager.start()

    async def stop() -> None:
        await manager.stop()

    broker.add_service(start, stop)
