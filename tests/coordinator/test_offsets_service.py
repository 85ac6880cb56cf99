"""Offsets over the coordinator runtime with in-memory logs and a fake clock: records go
to the group's partition before the answer, a reload gives the same state, retention
writes tombstones and removes the emptied group."""

from __future__ import annotations

import asyncio

from kafkalite.coordinator.core import CoreConfig
from kafkalite.coordinator.memlog import MemoryLogs
from kafkalite.coordinator.offsets import CommitRequest, OffsetStore, PartitionCommit
from kafkalite.coordinator.offsets_runtime import OffsetsService
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import iter_records

DAY = 86_400_000


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> float:
        return self.ms / 1000


def make(logs: MemoryLogs, clock: Clock, retention_ms: int = DAY
         ) -> tuple[CoordinatorRuntime, OffsetsService]:
    rt = CoordinatorRuntime(CoreConfig(num_partitions=4), logs, clock=clock)
    svc = OffsetsService(lambda: rt, OffsetStore(retention_ms=retention_ms), 1000)
    rt.offsets = svc.replay_hook
    return rt, svc


def records_of(logs: MemoryLogs, partition: int) -> list[tuple[co.Key, co.Value | None]]:
    out = []
    for b in logs.get_or_create(OFFSETS_TOPIC, partition).batches:
        for _h, r in iter_records(b):
            assert r.key is not None
            k = co.decode_key(r.key)
            out.append((k, co.decode_value(k, r.value)))
    return out


def simple_commit(group: str, offset: int, metadata: str = "") -> CommitRequest:
    return CommitRequest(group_id=group, generation_id=-1,
                         topics=[("t", [PartitionCommit(0, offset, -1, metadata)])])


def test_commit_is_logged_reloaded_expired_and_group_removed() -> None:
    async def run() -> None:
        logs, clock = MemoryLogs(), Clock()
        rt, svc = make(logs, clock)
        await rt.load_all()
        assert await svc.commit(simple_commit("g", 5, "md")) == {("t", 0): E.none}
        p = rt.core.partition_for("g")
        assert records_of(logs, p) == [(co.OffsetCommitKey("g", "t", 0),
                                        co.OffsetCommitValue(5, "md", clock.ms))]
        assert svc.describe("g").state == "Empty"
        assert [g.group_id for g in svc.list_groups()] == ["g"]
        await rt.stop()

        clock.ms += 1000
        rt2, svc2 = make(logs, clock)
        await rt2.load_all()
        assert svc2.fetch("g", None, False) == (E.none, [("t", [(0, 5, -1, "md", E.none)])])
        assert svc2.describe("g").state == "Empty"
        clock.ms += DAY - 1000 - 1
        assert await svc2.expire_once() == 0
        clock.ms += 1
        assert await svc2.expire_once() == 2
        assert records_of(logs, p)[-2:] == [(co.OffsetCommitKey("g", "t", 0), None),
                                            (co.GroupMetadataKey("g"), None)]
        assert svc2.fetch("g", None, False) == (E.none, [])
        assert svc2.describe("g").state == "Dead"
        assert svc2.list_groups() == []
        await rt2.stop()

    asyncio.run(run())


def test_delete_group_and_offset_delete() -> None:
    async def run() -> None:
        logs, clock = MemoryLogs(), Clock()
        rt, svc = make(logs, clock)
        await rt.load_all()
        assert await svc.delete_group("nope") == E.group_id_not_found
        await svc.commit(simple_commit("g", 1))
        err, rows = await svc.delete_offsets("g", [("t", [0, 1])])
        assert (err, rows) == (E.none, [("t", [(0, E.none), (1, E.none)])])
        assert records_of(logs, rt.core.partition_for("g"))[-1] == (
            co.OffsetCommitKey("g", "t", 0), None)
        assert await svc.delete_group("g") == E.none
        assert svc.describe("g").state == "Dead"
        assert await svc.delete_group("g") == E.group_id_not_found
        assert (await svc.commit(CommitRequest(group_id="", generation_id=-1,
                                               topics=[("t", [PartitionCommit(0, 1)])]))
                == {("t", 0): E.invalid_group_id})
        await rt.stop()

    asyncio.run(run())


def test_member_commit_rearms_the_member_session() -> None:
    from kafkalite.coordinator.core import hb_key
    from kafkalite.coordinator.group import GroupMetadata, GroupState, MemberMetadata

    async def run() -> None:
        logs, clock = MemoryLogs(), Clock()
        rt, svc = make(logs, clock)
        await rt.load_all()
        p = rt.core.partition_for("g")
        group = GroupMetadata("g", p, state=GroupState.STABLE, generation=2,
                              protocol_type="consumer", protocol_name="range")
        group.add(MemberMetadata("m", None, "c", "/h", 5000, 1000, "consumer",
                                 [("range", b"")]))
        rt.core.partitions[p].groups["g"] = group
        rt.core.timers.schedule(hb_key("g", "m"), clock.ms + 1000)
        clock.ms += 900
        member_commit = CommitRequest(group_id="g", member_id="m", generation_id=2,
                                      topics=[("t", [PartitionCommit(0, 1)])])
        assert await svc.commit(member_commit) == {("t", 0): E.none}
        assert rt.core.timers.deadline(hb_key("g", "m")) == clock.ms + 1000
        clock.ms += 500  # past the first deadline, within the re-armed one
        rt.process(rt.core.expire(clock.ms))
        assert "m" in group.members
        stale = CommitRequest(group_id="g", member_id="m", generation_id=1,
                              topics=[("t", [PartitionCommit(0, 2)])])
        assert await svc.commit(stale) == {("t", 0): E.illegal_generation}
        clock.ms += 600
        rt.process(rt.core.expire(clock.ms))
        assert "m" not in group.members
        await rt.stop()

    asyncio.run(run())
