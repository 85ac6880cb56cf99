"""The broker's storage: the topic catalogue, the partition logs kept in step with it, and
topic config resolution (topic override, then broker property, then Kafka's default)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Callable, Generator, Iterator

import structlog

from kafkalite.protocol.names import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TRANSACTION_STATE_TOPIC
from kafkalite.storage.catalog import InvalidTopicName, TopicCatalog, TopicInfo, validate_topic_name
from kafkalite.storage.log import PartitionLog
from kafkalite.storage.manager import LogManager
from kafkalite.storage.topic_config import BrokerLevels, ResolvedConfig, resolve

from .config.properties import Config
from .metadata_cache import EncodedTopics

log = structlog.get_logger("kafkalite.broker")

#: After start, when the background pass begins opening the logs no request opened, and
#: how many it opens at a time (each 1-2 ms: a request waits at most that long behind it).
OPEN_REST_AFTER_S = 1.0
OPEN_PER_TURN = 1
#: The pause after each log the background opens or creates. A timer, not a bare turn of
#: the loop: the loop serves the sockets ready before its timers, so a request that
#: arrives meanwhile goes first rather than after the next log; and the background takes
#: at most about half the loop.
BACKGROUND_PAUSE_S = 0.001


class TopicConfigs:
    """Effective topic configs; the log manager reads them through ``value``."""

    __slots__ = ("catalog", "config")

    def __init__(self, config: Config, catalog: TopicCatalog) -> None:
        self.config = config
        self.catalog = catalog

    def levels(self) -> BrokerLevels:
        """The broker levels topic configs fall back to (dynamic, static, defaults)."""
        return self.config.levels()

    def overrides(self, topic: str) -> dict[str, str]:
        info = self.catalog.get(topic)
        return info.configs if info else {}

    def resolved(self, topic: str, name: str) -> ResolvedConfig:
        return resolve(self.overrides(topic), self.config.levels(), name)

    def value(self, topic: str, name: str) -> str:
        return self.resolved(topic, name).value


class Storage:
    """Topics and their logs, as the handlers and the coordinator use them."""

    def __init__(self, config: Config, catalog: TopicCatalog, topic_configs: TopicConfigs,
                 logs: LogManager) -> None:
        self.config = config
        self.catalog = catalog
        self.topic_configs = topic_configs
        self.logs = logs
        #: Checks a client's batch for a topic before it is appended (raising the log's
        #: record errors): the Schema Registry's broker-side validation, when it is on.
        self.schema_check: Callable[[str, bytes], None] | None = None
        #: Each topic's encoded Metadata entry, forgotten when the topic or a log of it
        #: changes (a log opened takes its leader epoch).
        self.metadata_entries = EncodedTopics()
        self._opener: asyncio.Task[None] | None = None
        #: The topic whose catalogue change is being made by ``commit_*`` or
        #: ``delete_topic_steps`` (its logs are theirs to create or remove, not the
        #: catalogue listener's).
        self._stepping: str | None = None
        #: Log creations of committed topics still to run (``_create_later``), and the
        #: task running them.
        self._backlog: collections.deque[Generator[None, None, None]] = collections.deque()
        self._builder: asyncio.Task[None] | None = None
        logs.epoch_set.append(self.metadata_entries.forget)

    # --- topics ---------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int | None = None, configs: dict[str, str] | None = None,
        internal: bool = False, replicas: list[list[int]] | None = None,
    ) -> TopicInfo:
        """Create a topic in the catalogue; its logs follow on the catalogue event.
        ``replicas``: each partition's (several nodes; placed by the catalogue's placer
        when None)."""
        n = self.config.int("num.partitions") if partitions is None else partitions
        info = self.catalog.create(name, n, configs, internal=internal, replicas=replicas)
        log.info("topic.created", topic=name, partitions=n, topic_id=str(info.topic_id))
        return info

    # --- topics committed now, their logs created afterwards ----------------------------
    # CreateTopics and CreatePartitions answer once the catalogue has the change, as
    # Kafka's controller answers once the topic is committed and its brokers create the
    # logs afterwards: each new partition is expected (``LogManager.expect``) and a
    # background task creates the logs, one at a time. A request for a
    # partition not created yet creates it at once; a stop leaves the rest to the next
    # start. With several nodes the replica manager still opens the partitions of more
    # than one replica on the catalogue's event (leader and followers together).
    #
    # DeleteTopics runs in slices (``handlers/topics/create_delete._sliced``): the topic
    # and its logs leave at once, each partition's files in a step of its own (a ``yield``
    # before each); a new log of a deleted partition not removed yet removes the old files
    # first.

    def commit_topic(
        self, name: str, partitions: int, configs: dict[str, str] | None = None,
        internal: bool = False, replicas: list[list[int]] | None = None,
    ) -> TopicInfo:
        """``create_topic`` whose logs follow in the background."""
        if self._stepping is not None:
            return self.create_topic(name, partitions, configs, internal, replicas)
        with self._in_steps(name):
            info = self.create_topic(name, partitions, configs, internal, replicas)
        self._create_later(info, 0)
        return info

    def commit_partitions(self, name: str, count: int,
                          replicas: list[list[int]] | None = None) -> TopicInfo:
        """The topic's partition count raised to ``count``; the new logs follow in the
        background."""
        if self._stepping is not None:
            return self.catalog.set_partitions(name, count, replicas)
        found = self.catalog.get(name)
        before = found.partitions if found is not None else 0
        with self._in_steps(name):
            info = self.catalog.set_partitions(name, count, replicas)
        self._create_later(info, before)
        return info

    def delete_topic_steps(self, name: str) -> Generator[None, None, TopicInfo]:
        # With several nodes the replica manager deletes every replica on the event.
        if self.logs.place is not None or self._stepping is not None:
            return self.catalog.delete(name)
        with self._in_steps(name):
            info = self.catalog.delete(name)
        for key in self.logs.detach_topic(name):
            yield
            self.logs.drop_detached(key)
        log.info("log.topic_deleted", topic=name)
        return info

    @contextlib.contextmanager
    def _in_steps(self, name: str) -> Iterator[None]:
        self._stepping = name
        try:
            yield
        finally:
            self._stepping = None

    def _create_later(self, info: TopicInfo, start: int) -> None:
        self.logs.expect(info.name, range(start, info.partitions))
        steps = self._create_logs(info, start)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a tool, a test): at once
            for _ in steps:
                pass
            return
        self._backlog.append(steps)
        if self._builder is None or self._builder.done():
            self._builder = loop.create_task(self._build())

    def _create_logs(self, info: TopicInfo, start: int) -> Generator[None, None, None]:
        for p in range(start, info.partitions):
            yield
            if self.catalog.get(info.name) is not info:
                return  # deleted meanwhile (and perhaps created again)
            # The topic's configs as they are now: they may have changed meanwhile.
            self.logs.get_or_create(info.name, p)

    async def _build(self) -> None:
        """Runs the backlog of log creations, one log at a time, BACKGROUND_PAUSE_S
        between them."""
        backlog = self._backlog
        while backlog:
            try:
                next(backlog[0])
            except StopIteration:
                backlog.popleft()
                continue
            await asyncio.sleep(BACKGROUND_PAUSE_S)

    def auto_create(self, name: str) -> TopicInfo:
        """Create a topic a client asked for, as Kafka's AutoTopicCreationManager."""
        if name == OFFSETS_TOPIC:
            cfg = self.config
            return self.create_topic(
                name,
                cfg.int("offsets.topic.num.partitions"),
                {"cleanup.policy": "compact", "compression.type": "producer",
                 "segment.bytes": cfg.raw("offsets.topic.segment.bytes")},
                internal=True,
            )
        if name == TRANSACTION_STATE_TOPIC:
            self.ensure_transaction_topic(self.config.int("transaction.state.log.num.partitions"))
            found = self.catalog.get(name)
            assert found is not None
            return found
        # Inside a Metadata or Produce answer, which is not run in slices, and
        # ``num.partitions`` may be thousands: the logs follow in the background.
        info = self.commit_topic(name, self.config.int("num.partitions"))
        log.info("topic.auto_created", topic=name, partitions=info.partitions)
        return info

    def ensure_offsets_topic(self, partitions: int) -> None:
        """Like Kafka, ``__consumer_offsets`` is created on first use (FindCoordinator for
        a group, or the coordinator's first write)."""
        if self.catalog.get(OFFSETS_TOPIC) is None:
            self.create_topic(
                OFFSETS_TOPIC,
                partitions,
                {"cleanup.policy": "compact",
                 "segment.bytes": str(self.config.int("offsets.topic.segment.bytes"))},
                internal=True,
            )

    def ensure_transaction_topic(self, partitions: int) -> None:
        """``__transaction_state`` on first use (FindCoordinator for a transactional id,
        or the transaction coordinator's first write), with the configs Kafka's
        TransactionStateManager gives it."""
        if self.catalog.get(TRANSACTION_STATE_TOPIC) is None:
            self.create_topic(
                TRANSACTION_STATE_TOPIC,
                partitions,
                {"cleanup.policy": "compact", "compression.type": "uncompressed",
                 "segment.bytes": str(self.config.int("transaction.state.log.segment.bytes"))},
                internal=True,
            )

    def ensure_share_state_topic(self, partitions: int) -> None:
        """``__share_group_state`` on first use (a share group's first share-partition, or
        FindCoordinator for a share key). Compacted, where Kafka's deletes by DeleteRecords:
        kafkalite writes a share-partition's whole state in each record, so the last one
        of each key is enough (docs/compatibility.md)."""
        if self.catalog.get(SHARE_STATE_TOPIC) is None:
            self.create_topic(
                SHARE_STATE_TOPIC,
                partitions,
                {"cleanup.policy": "compact",
                 "segment.bytes": str(self.config.int(
                     "share.coordinator.state.topic.segment.bytes"))},
                internal=True,
            )

    def name_collision(self, name: str) -> str | None:
        """An existing topic whose name differs from ``name`` only in '.' versus '_'."""
        if "." not in name and "_" not in name:
            return None
        key = name.replace(".", "_")
        for t in self.catalog:
            if t.name != name and t.name.replace(".", "_") == key:
                return t.name
        return None

    def resolve_topic(self, name: str, allow_create: bool) -> TopicInfo | InvalidTopicName | None:
        """The topic to write to or read from, auto-created where the broker allows it:
        None when it does not exist, ``InvalidTopicName`` when it could not."""
        info = self.catalog.get(name)
        if info is not None:
            return info
        if not allow_create or not self.config.bool("auto.create.topics.enable"):
            return None
        try:
            validate_topic_name(name)
        except InvalidTopicName as e:
            return e
        return self.auto_create(name)

    # --- logs -----------------------------------------------------------------------

    def on_topic_event(self, event: str, info: TopicInfo) -> None:
        """Catalogue listener: creates, reconfigures and deletes the topic's logs (those
        of a topic changed in steps, the steps do)."""
        self.metadata_entries.forget(info.name)
        if info.name == self._stepping:
            return
        if event == "deleted":
            self.logs.delete_topic(info.name)
            return
        if event == "changed":
            # Open logs take the new configs; unopened ones take them when opened.
            self.logs.reconfigure(info.name)
        cfg = self.logs.config_for(info.name)
        for p in range(info.partitions):
            if event == "changed" and self.logs.known(info.name, p):
                continue
            # Also on creation: a log opened before its topic existed took the defaults.
            self.logs.get_or_create(info.name, p, config=cfg).config = cfg

    def compacted_logs(self) -> list[tuple[PartitionLog, int]]:
        """(log, delete.retention.ms) of every compacted log, ``__consumer_offsets`` first."""
        logs = [plog for plog in self.logs if "compact" in plog.config.cleanup_policy]
        logs.sort(key=lambda lg: (lg.topic != OFFSETS_TOPIC, lg.topic, lg.partition))
        return [(plog, int(self.topic_configs.value(plog.topic, "delete.retention.ms")))
                for plog in logs]

    async def start(self) -> None:
        # With several nodes, the replica manager opens the partitions of more than one
        # replica when it starts (leader and followers together); the others open on use.
        self.logs.load({t.name: t.partitions for t in self.catalog})
        if self.logs.unopened:
            self._opener = asyncio.create_task(self._open_rest())

    async def _open_rest(self) -> None:
        """Open the logs no request has opened yet, a few per turn of the loop once the
        broker listens, so retention, compaction and producer expiry reach them all."""
        await asyncio.sleep(OPEN_REST_AFTER_S)
        while self.logs.open_some(OPEN_PER_TURN):
            await asyncio.sleep(BACKGROUND_PAUSE_S)
        log.info("log.all_opened", partitions=len(self.logs.logs))

    async def stop(self) -> None:
        # Logs still to create stay expected: the next start creates them (no directory).
        if self._builder is not None:
            self._builder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._builder
            self._builder = None
        self._backlog.clear()
        if self._opener is not None:
            self._opener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._opener
            self._opener = None
        self.logs.close()
