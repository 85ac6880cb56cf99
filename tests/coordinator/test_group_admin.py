"""Offsets and group administration through the runtime, on the manual clock: the exact
records each operation writes before its answer, what a reload gives back, and offset
retention run by the scheduler as the clock advances."""

from __future__ import annotations

from kafkalite.coordinator.classic.states import DEAD, EMPTY
from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.coordinator.partitions import hb_key
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode as E

from .harness import SESSION, Harness, check_replay

DAY = 86_400_000
CHECK = 60_000


def simple_commit(group: str, offset: int, metadata: str = "", partition: int = 0
                  ) -> CommitRequest:
    return CommitRequest(group_id=group, generation_id=-1,
                         topics=[("t", [PartitionCommit(partition, offset, -1, metadata)])])


def commit(h: Harness, req: CommitRequest) -> object:
    return h.run(h.core.commit_offsets(h.now, req))


def test_commit_is_written_then_answered_reloaded_and_expired() -> None:
    h = Harness.make(offsets_retention_ms=DAY, retention_check_ms=CHECK)
    assert commit(h, simple_commit("g", 5, "md")) == {("t", 0): E.none}
    t0 = h.now
    assert h.written == [[(co.OffsetCommitKey("g", "t", 0), co.OffsetCommitValue(5, "md", t0))]]
    # The simple group came from replaying the record.
    assert h.core.describe_group("g").state == "Empty"
    assert [g.group_id for g in h.core.list_groups()] == ["g"]
    check_replay(h)

    r = h.reload()
    assert r.run(r.core.fetch_offsets("g", None)) == (E.none, [("t", [(0, 5, -1, "md", E.none)])])
    # Nothing expires before the retention time has passed since the commit.
    r.advance(DAY - CHECK)
    assert r.written == []
    r.advance(CHECK)  # the next retention check is past commit time + retention
    assert r.written == [[(co.OffsetCommitKey("g", "t", 0), None),
                          (co.GroupMetadataKey("g"), None)]]
    assert r.run(r.core.fetch_offsets("g", None)) == (E.none, [])
    assert r.core.describe_group("g").state == DEAD.value
    assert r.core.list_groups() == []
    check_replay(r)


def test_failed_commit_answers_the_mapped_error_and_changes_nothing() -> None:
    h = Harness.make()
    h.fail_with = E.not_coordinator
    assert commit(h, simple_commit("g", 5)) == {("t", 0): E.not_coordinator}
    h.fail_with = E.coordinator_not_available
    assert commit(h, simple_commit("g", 5)) == {("t", 0): E.coordinator_not_available}
    h.fail_with = None
    assert h.written == [] and h.core.group("g") is None
    assert h.run(h.core.fetch_offsets("g", [("t", [0])])) == (
        E.none, [("t", [(0, -1, -1, "", E.none)])])


def test_delete_group_and_offset_delete() -> None:
    h = Harness.make()
    assert h.run(h.core.delete_group(h.now, "nope")) is E.group_id_not_found
    commit(h, simple_commit("g", 1))
    commit(h, simple_commit("g", 2, partition=1))
    assert h.run(h.core.delete_offsets(h.now, "g", [("t", [0, 5])])) == (
        E.none, [("t", [(0, E.none), (5, E.none)])])
    assert h.written[-1] == [(co.OffsetCommitKey("g", "t", 0), None)]
    assert h.run(h.core.delete_group(h.now, "g")) is E.none
    assert h.written[-1] == [(co.OffsetCommitKey("g", "t", 1), None),
                             (co.GroupMetadataKey("g"), None)]
    assert h.core.describe_group("g").state == "Dead"
    assert h.run(h.core.delete_group(h.now, "g")) is E.group_id_not_found
    assert commit(h, CommitRequest(group_id="", generation_id=-1,
                                   topics=[("t", [PartitionCommit(0, 1)])])) == {
        ("t", 0): E.invalid_group_id}
    check_replay(h)


def test_a_non_empty_group_is_not_deleted() -> None:
    h = Harness.make()
    [m] = h.stable_group(1)
    assert h.run(h.core.delete_group(h.now, "g")) is E.non_empty_group
    h.leave((m, None))
    assert h.group().state is EMPTY
    assert h.run(h.core.delete_group(h.now, "g")) is E.none


def test_member_commit_rearms_the_member_session() -> None:
    h = Harness.make()
    leader, follower = h.stable_group(2)
    h.now += SESSION - 100
    h.heartbeat(leader, 1)
    member_commit = CommitRequest(group_id="g", member_id=follower, generation_id=1,
                                  topics=[("t", [PartitionCommit(0, 1)])])
    assert commit(h, member_commit) == {("t", 0): E.none}
    assert h.core.timers.deadline(hb_key("g", follower)) == h.now + SESSION
    h.advance(500)  # past the follower's first deadline, within the re-armed one
    assert follower in h.group().members
    stale = CommitRequest(group_id="g", member_id=follower, generation_id=0,
                          topics=[("t", [PartitionCommit(0, 2)])])
    assert commit(h, stale) == {("t", 0): E.illegal_generation}
    h.advance(SESSION)
    assert follower not in h.group().members


def test_commits_of_a_partition_still_loading_are_refused() -> None:
    h = Harness.make()
    p = h.core.partition_for("g")
    h.core.begin_load(p)
    assert commit(h, simple_commit("g", 1)) == {("t", 0): E.coordinator_load_in_progress}
    assert h.run(h.core.fetch_offsets("g", [("t", [0])]))[0] is E.coordinator_load_in_progress
    h.core.finish_load(p, h.now)
    assert commit(h, simple_commit("g", 1)) == {("t", 0): E.none}
