"""Share-partition state as the share-group offsets APIs read and change it
(``handlers.groups.share_offsets.ShareOffsetsStore``): read from the share coordinator's core,
written through it to ``__share_group_state`` (a reset is a new snapshot at the given
start offset with no in-flight records, as Kafka's ``initializeState`` writes it; a delete
is the share-partition's tombstones), each record in the log before the answer. The
share-partitions the manager holds for the group are then dropped, so the next
ShareFetch makes them again from the new state."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import structlog

from kafkalite.coordinator.results import AFTER_WRITE, Outcome, Write
from kafkalite.coordinator.share.state_core import ShareStateCore
from kafkalite.coordinator.share.state_store import ShareKey, ShareState
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import SHARE_STATE_TOPIC

from .manager import SharePartitionManager

if TYPE_CHECKING:
    from kafkalite.coordinator.share.offsets_admin import Change

log = structlog.get_logger("kafkalite.share")


def _answer(err: ErrorCode, _now: int) -> Outcome:
    return Outcome(err)


class ManagerOffsetsStore:
    def __init__(self, manager: SharePartitionManager,
                 before_forget: Callable[[str], None] = lambda _group: None) -> None:
        self.manager = manager
        #: Told the group whose share-partitions are about to be dropped (their counters).
        self.before_forget = before_forget

    def states(self) -> Mapping[ShareKey, ShareState]:
        return self.manager.state.query(lambda c: c.store.states)

    def high_watermark(self, topic_id: uuid.UUID, partition: int) -> int | None:
        plog = self.manager.plog(topic_id, partition)
        return None if plog is None else plog.high_watermark

    def apply(self, change: Change) -> ErrorCode:
        state = self.manager.state
        keys = [k for k, _start in change.resets] + list(change.deletes)
        for key in keys:
            status: ErrorCode = state.query(lambda c: c.status(key))  # noqa: B023 (called now)
            if status is not NO_ERROR:
                return status
        groups = {k[0] for k in keys}
        for group in groups:
            self.before_forget(group)
            self.manager.forget_group(group)
        epoch = change.state_epoch

        def reset(core: ShareStateCore, now: int, key: ShareKey, start: int) -> Outcome:
            return Outcome(AFTER_WRITE, writes=[Write(
                core.partition_for(key), key[0], list(core.store.initialize(
                    key, epoch, start, now)), _answer, topic=SHARE_STATE_TOPIC)])

        # Each write runs (and is answered) before the next is built: the lambdas are
        # called at once.
        for key, start in change.resets:
            err: ErrorCode = state.write(
                lambda c, now: reset(c, now, key, start))  # noqa: B023
            if err is not NO_ERROR:
                return err
        for key in change.deletes:
            err = state.write(lambda c, _now: c.delete(key, _answer))  # noqa: B023
            if err is not NO_ERROR:
                return err
        for group in groups:
            log.info("share.offsets_changed", group=group, reset=len(change.resets),
                     deleted=len(change.deletes))
        return NO_ERROR
