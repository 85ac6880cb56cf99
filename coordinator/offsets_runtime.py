"""Offsets and group administration on top of the coordinator runtime.

``OffsetsService`` turns requests into calls on the pure ``OffsetStore`` with the group's
current state, appends the resulting records through the runtime (which replays them
into the store once they are in the log: the same path as loading at start-up) and only
then answers. It also runs the periodic offset expiration
(``offsets.retention.check.interval.ms``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode

from .core import GroupCoordinatorCore, hb_key
from .group import GroupMetadata
from .offsets import (
    EMPTY,
    CommitRequest,
    OffsetStore,
    Record,
    TopicPartition,
    subscribed_topics_of,
)

log = structlog.get_logger("kafkalite.offsets")


class ClassicGroupView:
    """``GroupView`` over the coordinator's ``GroupMetadata``."""

    __slots__ = ("g",)

    def __init__(self, g: GroupMetadata) -> None:
        self.g = g

    @property
    def state_name(self) -> str:
        return str(self.g.state.value)

    @property
    def generation_id(self) -> int:
        return self.g.generation

    @property
    def protocol_type(self) -> str | None:
        return self.g.protocol_type

    @property
    def state_timestamp(self) -> int:
        return self.g.current_state_timestamp

    def has_member(self, member_id: str) -> bool:
        return member_id in self.g.members

    def static_member_id(self, instance_id: str) -> str | None:
        return self.g.static_members.get(instance_id)

    def subscribed_topics(self) -> set[str] | None:
        g = self.g
        return subscribed_topics_of(g.protocol_type, g.protocol_name,
                                    [m.metadata(g.protocol_name) for m in g.members.values()])


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error: int
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[DescribedMember, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str


class OffsetsReplayHook:
    """What the core calls for every offset commit record it replays (live or loading):
    applies it to the store and, as Kafka does, creates a simple group (Empty, no protocol
    type) for offsets of a group that has no group record."""

    def __init__(self, store: OffsetStore, core: Callable[[], GroupCoordinatorCore]) -> None:
        self.store = store
        self._core = core

    def replay(self, partition: int, key: co.OffsetCommitKey, value: co.Value | None) -> None:
        if isinstance(value, co.GroupMetadataValue):
            return
        self.store.apply(key, value)
        if value is not None:
            ensure_simple_group(self._core(), partition, key.group)


def ensure_simple_group(core: GroupCoordinatorCore, partition: int, group_id: str) -> None:
    ps = core.partitions.get(partition)
    if ps is not None and group_id not in ps.groups:
        ps.groups[group_id] = GroupMetadata(group_id, partition)


class OffsetsService:
    """Glue between the offset handlers and the group coordinator runtime, which the broker
    creates when it starts (``runtime()``)."""

    def __init__(self, runtime: Callable[[], Any], store: OffsetStore,
                 check_interval_ms: int) -> None:
        self.runtime = runtime
        self.store = store
        self.check_interval_ms = check_interval_ms
        self._expiry_task: asyncio.Task[None] | None = None
        self.replay_hook = OffsetsReplayHook(store, lambda: self.core)

    @property
    def rt(self) -> Any:
        return self.runtime()

    @property
    def core(self) -> GroupCoordinatorCore:
        core: GroupCoordinatorCore = self.rt.core
        return core

    # --- runtime access -------------------------------------------------------------

    def _group(self, group_id: str) -> GroupMetadata | None:
        return self.core.group(group_id)

    def _view(self, group_id: str) -> ClassicGroupView | None:
        g = self._group(group_id)
        return None if g is None else ClassicGroupView(g)

    def _coordinator_error(self, group_id: str) -> int:
        if self.runtime() is None:
            return ErrorCode.coordinator_not_available
        return self.core.group_status(group_id)

    async def _append(self, group_id: str, records: list[Record]) -> int:
        if not records:
            return ErrorCode.none
        err: int = await self.rt.append(group_id, records)
        return err

    def _rearm_heartbeat(self, group_id: str, member_id: str) -> None:
        g = self._group(group_id)
        member = None if g is None else g.members.get(member_id)
        if member is not None:
            self.core.timers.schedule(hb_key(group_id, member_id),
                                      self.rt.now() + member.session_timeout_ms)

    # --- OffsetCommit ---------------------------------------------------------------

    async def commit(self, req: CommitRequest) -> dict[TopicPartition, int]:
        out = self.commit_nowait(req)
        if isinstance(out, dict):
            return out
        return await out

    def commit_nowait(self, req: CommitRequest
                      ) -> dict[TopicPartition, int] | asyncio.Future[dict[TopicPartition, int]]:
        """The per-partition errors, at once when the append completed synchronously (the
        usual case: no task switch on the commit path), else a future of them."""
        err = self._coordinator_error(req.group_id)
        if err == ErrorCode.none and not req.group_id:
            err = ErrorCode.invalid_group_id
        if err != ErrorCode.none:
            return {(t, p.partition): err for t, parts in req.topics for p in parts}
        result = self.store.commit(self._view(req.group_id), req, self.rt.now())
        if result.create_simple_group:
            ensure_simple_group(self.core, self.core.partition_for(req.group_id), req.group_id)
        if result.heartbeat_member is not None:
            self._rearm_heartbeat(req.group_id, result.heartbeat_member)
        errors = result.errors
        if not result.records:
            return errors

        def merge(append_err: int) -> dict[TopicPartition, int]:
            if append_err == ErrorCode.none:
                return errors
            return {tp: (append_err if e == ErrorCode.none else e) for tp, e in errors.items()}

        fut: asyncio.Future[ErrorCode] = self.rt.append(req.group_id, result.records)
        if fut.done():
            return merge(fut.result())
        out: asyncio.Future[dict[TopicPartition, int]] = asyncio.get_running_loop(
        ).create_future()
        fut.add_done_callback(lambda f: out.set_result(merge(f.result())))
        return out

    # --- OffsetFetch ----------------------------------------------------------------

    def fetch(self, group_id: str, topics: Sequence[tuple[str, Sequence[int]]] | None,
              require_stable: bool) -> tuple[int, list[tuple[str, list[Any]]]]:
        err = self._coordinator_error(group_id)
        if err != ErrorCode.none:
            rows = [] if topics is None else [
                (t, [(p, -1, -1, "", err) for p in parts]) for t, parts in topics]
            return err, rows
        rows_out: list[tuple[str, list[Any]]] = list(
            self.store.fetch(self._view(group_id), group_id, topics))
        return ErrorCode.none, rows_out

    # --- OffsetDelete ---------------------------------------------------------------

    async def delete_offsets(self, group_id: str, topics: Sequence[tuple[str, Sequence[int]]]
                             ) -> tuple[int, list[tuple[str, list[tuple[int, int]]]]]:
        err = self._coordinator_error(group_id)
        if err != ErrorCode.none:
            return err, []
        group_err, rows, records = self.store.delete_offsets(self._view(group_id), group_id,
                                                             topics)
        if group_err != ErrorCode.none:
            return group_err, []
        append_err = await self._append(group_id, records)
        if append_err != ErrorCode.none:
            return append_err, []
        return ErrorCode.none, rows

    # --- groups ---------------------------------------------------------------------

    def describe(self, group_id: str) -> DescribedGroup:
        err = self._coordinator_error(group_id)
        if err != ErrorCode.none:
            return DescribedGroup(err)
        g = self._group(group_id)
        if g is None:
            # Kafka describes an unknown group as Dead, without error.
            return DescribedGroup(ErrorCode.none, "Dead")
        stable = g.state.value == "Stable"
        members = tuple(
            DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.metadata(g.protocol_name) if stable else b"",
                            m.assignment if stable else b"")
            for m in g.members.values())
        return DescribedGroup(ErrorCode.none, str(g.state.value), g.protocol_type or "",
                              (g.protocol_name or "") if stable else "", members)

    def list_groups(self) -> list[ListedGroup]:
        out: list[ListedGroup] = []
        if self.runtime() is None:
            return out
        for g in self.core.groups():
            if g.state.value == "Dead":
                continue
            out.append(ListedGroup(g.group_id, g.protocol_type or "", str(g.state.value)))
        return out

    async def delete_group(self, group_id: str) -> int:
        err = self._coordinator_error(group_id)
        if err != ErrorCode.none:
            return err
        view = self._view(group_id)
        err = self.store.validate_delete_group(view)
        if err != ErrorCode.none:
            return err
        append_err = await self._append(group_id, self.store.delete_group_records(group_id))
        if append_err == ErrorCode.none:
            log.info("group.deleted", group=group_id)
        return append_err

    # --- retention ------------------------------------------------------------------

    async def expire_once(self, now: int | None = None) -> int:
        """One pass of offset expiration; returns the number of tombstones written."""
        t = self.rt.now() if now is None else now
        written = 0
        if self.runtime() is None:
            return 0
        for g in list(self.core.groups()):
            if self._coordinator_error(g.group_id) != ErrorCode.none:
                continue
            records, remove = self.store.expire(g.group_id, ClassicGroupView(g), t)
            if remove and g.state.value == EMPTY:
                records.append((co.GroupMetadataKey(g.group_id), None))
            if records and await self._append(g.group_id, records) == ErrorCode.none:
                written += len(records)
                log.info("offsets.expired", group=g.group_id, tombstones=len(records),
                         group_removed=remove)
        return written

    async def _expiry_loop(self) -> None:
        while True:
            await asyncio.sleep(self.check_interval_ms / 1000)
            try:
                await self.expire_once()
            except Exception:
                log.exception("offsets.expiry_failed")

    async def start(self) -> None:
        self._expiry_task = asyncio.get_running_loop().create_task(self._expiry_loop())

    async def stop(self) -> None:
        if self._expiry_task is not None:
            self._expiry_task.cancel()
            try:
                await self._expiry_task
            except (asyncio.CancelledError, Exception):
                pass
            self._expiry_task = None


def service_of(broker: Any) -> OffsetsService:
    svc: OffsetsService = broker.offsets_service
    return svc
