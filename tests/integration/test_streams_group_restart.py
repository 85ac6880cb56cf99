"""A streams group (KIP-1071) survives a restart of the real server on its data directory:
the group comes back from its records in ``__consumer_offsets`` with the same epochs,
topology, members, target and current tasks (a member caught mid-revocation included),
and its members go on heartbeating where they were, with no new rebalance. Also on the
real server: the broker default for standby replicas, and reported task offsets
described."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection
from kafkalite.protocol.apis import codec

from ..differential.harness import make
from ..differential.scenarios_streams import topology

HEARTBEAT, DESCRIBE = 88, 89
APP = "restart-app"
Tasks = list[tuple[str, list[int]]]


def _hb(conn: RawConnection, member: str, epoch: int, owned: Tasks | None = None,
        process: int = 1, standby: Tasks | None = None) -> Any:
    fields: dict[str, Any] = dict(group_id=APP, member_id=member, member_epoch=epoch,
                                  endpoint_information_epoch=0, task_offsets=None,
                                  task_end_offsets=None, topology=None)
    if epoch == 0:
        fields.update(rebalance_timeout=datetime.timedelta(milliseconds=30000),
                      process_id=str(uuid.UUID(int=process)), active_tasks=(),
                      standby_tasks=(), warmup_tasks=(), client_tags=(),
                      topology=topology(APP, "restart-lines"))
    else:
        listed = None if owned is None else [dict(subtopology_id=s, partitions=ps)
                                             for s, ps in owned]
        fields.update(active_tasks=listed, standby_tasks=None if owned is None else [
            dict(subtopology_id=s, partitions=ps) for s, ps in standby or []],
                      warmup_tasks=None if owned is None else [], client_tags=None)
    resp = conn.call(make(codec(HEARTBEAT, 0).request_type, fields))
    assert resp.error_code == 0, resp
    return resp


def _tasks(resp: Any) -> Tasks | None:
    if resp.active_tasks is None:
        return None
    return sorted((t.subtopology_id, sorted(t.partitions)) for t in resp.active_tasks)


def _described(conn: RawConnection) -> Any:
    d = conn.call(make(codec(DESCRIBE, 0).request_type,
                       dict(group_ids=[APP], include_authorized_operations=False)))
    (g,) = d.groups
    assert g.error_code == 0
    members = sorted(
        (m.member_id, m.member_epoch, m.process_id,
         sorted((t.subtopology_id, sorted(t.partitions)) for t in m.assignment.active_tasks),
         sorted((t.subtopology_id, sorted(t.partitions))
                for t in m.target_assignment.active_tasks))
        for m in g.members)
    return (g.group_state, g.group_epoch, g.assignment_epoch, g.topology, members)


def _until(cond: Callable[[], Any], what: str) -> Any:
    end = time.monotonic() + 20
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(what)


def test_streams_group_resumes_from_its_records_after_a_restart(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic("restart-lines", 2, 1)]).values():
        f.result(10)
    conn = RawConnection(broker.bootstrap)
    a, b = "member-a", "member-b"
    first = _hb(conn, a, 0)
    epoch = first.member_epoch

    def all_tasks() -> Any:
        nonlocal epoch
        r = _hb(conn, a, epoch, [])
        epoch = r.member_epoch
        return r if _tasks(r) else None

    got = _tasks(_until(all_tasks, "a never got its tasks"))
    assert got == [("0", [0, 1]), ("1", [0, 1])]
    joined = _hb(conn, b, 0, process=2)
    revoking = _hb(conn, a, epoch, got)
    kept = _tasks(revoking)
    assert kept is not None and len([p for _s, ps in kept for p in ps]) == 2
    assert revoking.member_epoch == epoch  # a keeps its epoch until it has revoked
    before = _described(conn)
    assert before[0] == "Reconciling"
    conn.close()

    broker.restart()
    conn = RawConnection(broker.bootstrap)
    try:
        after = _until(lambda: _described(conn), "the group did not come back")
        assert after == before
        # a finishes revoking and b takes the rest, at the epochs from before the restart.
        done = _hb(conn, a, epoch, kept)
        # The tasks it kept, unchanged: not sent again (Kafka sends them when they change).
        assert (done.member_epoch, _tasks(done)) == (joined.member_epoch, None)
        b_tasks = _tasks(_hb(conn, b, joined.member_epoch, []))
        assert b_tasks is not None
        flat = sorted((s, p) for ts in (kept, b_tasks) for s, ps in ts for p in ps)
        assert flat == [("0", 0), ("0", 1), ("1", 0), ("1", 1)]
        state, group_epoch, *_ = _described(conn)
        assert (state, group_epoch) == ("Stable", joined.member_epoch)
    finally:
        conn.close()


def test_broker_default_standby_replicas_gives_members_standby_tasks(
        make_broker: Callable[..., BrokerThread]) -> None:
    """``group.streams.num.standby.replicas`` on the server: two processes each get the
    other's stateful task as a standby, described with the assignment."""
    broker = make_broker({"group.streams.num.standby.replicas": "1"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic("restart-lines", 2, 1)]).values():
        f.result(10)
    conn = RawConnection(broker.bootstrap)
    try:
        epoch = _hb(conn, "a", 0).member_epoch

        def got_tasks() -> Any:
            nonlocal epoch
            r = _hb(conn, "a", epoch, [])
            epoch = r.member_epoch
            return _tasks(r)

        owned_a = _until(got_tasks, "a never got its tasks")
        b = _hb(conn, "b", 0, process=2)
        a = _hb(conn, "a", epoch, owned_a)
        kept = _tasks(a)
        standby_a = sorted((t.subtopology_id, sorted(t.partitions)) for t in a.standby_tasks)
        a = _hb(conn, "a", epoch, kept, standby=standby_a)
        b = _hb(conn, "b", b.member_epoch, [], standby=sorted(
            (t.subtopology_id, sorted(t.partitions)) for t in b.standby_tasks))
        d = conn.call(make(codec(DESCRIBE, 0).request_type,
                           dict(group_ids=[APP], include_authorized_operations=False)))
        (g,) = d.groups
        assert g.group_state == "Stable"
        for m in g.members:
            active = {(t.subtopology_id, p) for t in m.assignment.active_tasks
                      for p in t.partitions}
            standby = {(t.subtopology_id, p) for t in m.assignment.standby_tasks
                       for p in t.partitions}
            # Subtopology 1 (the counts, with a changelog) has state: one standby each.
            assert len(standby) == 1 and standby <= {("1", 0), ("1", 1)}
            assert not active & standby and len(active) == 2
    finally:
        conn.close()


def test_reported_task_offsets_are_described(make_broker: Callable[..., BrokerThread]) -> None:
    """A member's task offsets and end offsets, as it last sent them, in
    StreamsGroupDescribe (Kafka keeps them in memory only: gone after a restart)."""
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic("restart-lines", 2, 1)]).values():
        f.result(10)
    conn = RawConnection(broker.bootstrap)
    try:
        epoch = _hb(conn, "a", 0).member_epoch
        fields: dict[str, Any] = dict(
            group_id=APP, member_id="a", member_epoch=epoch, endpoint_information_epoch=0,
            task_offsets=[dict(subtopology_id="1", partition=1, offset=40),
                          dict(subtopology_id="1", partition=0, offset=7)],
            task_end_offsets=[dict(subtopology_id="1", partition=0, offset=9)],
            active_tasks=None, standby_tasks=None, warmup_tasks=None, client_tags=None,
            topology=None)
        assert conn.call(make(codec(HEARTBEAT, 0).request_type, fields)).error_code == 0
        d = conn.call(make(codec(DESCRIBE, 0).request_type,
                           dict(group_ids=[APP], include_authorized_operations=False)))
        (m,) = d.groups[0].members
        assert [(o.subtopology_id, o.partition, o.offset) for o in m.task_offsets] == [
            ("1", 0, 7), ("1", 1, 40)]
        assert [(o.subtopology_id, o.partition, o.offset) for o in m.task_end_offsets] == [
            ("1", 0, 9)]
    finally:
        conn.close()
