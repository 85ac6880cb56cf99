"""KIP-848 consumer groups with real clients over TCP: confluent-kafka (librdkafka) with
``group.protocol=consumer``, Kafka's Java client beside it, classic members (aiokafka,
kafka-python) in the same group through Kafka 4.0's migration path, and a broker restart.
After each step every partition is owned by exactly one member; at no moment of the
members' timelines is a partition owned by two."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import ConsumerGroupType, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request

from .group_helpers import create_topic, group_view
from .java_support import java_command, run_java
from .kip848_helpers import (
    FAST_CONSUMER_GROUPS,
    SESSION_S,
    TP,
    TimelineMember,
    assert_never_shared,
    consumer_group_view,
    describe_all,
    stop_all,
    wait_settled,
)


def parts(topic: str, n: int) -> set[TP]:
    return {(topic, p) for p in range(n)}


def sizes(members: list[TimelineMember]) -> list[int]:
    return sorted(len(m.snapshot()) for m in members)


def test_confluent_members_join_leave_die_and_follow_a_partition_increase(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(FAST_CONSUMER_GROUPS)
    topic, group = "kip848-life", "g-kip848-life"
    create_topic(broker, topic, 12)
    members = [TimelineMember.confluent(broker.bootstrap, group, topic, f"c{i}")
               for i in range(3)]
    everyone = list(members)
    try:
        v3 = wait_settled(broker, group, members, parts(topic, 12), what="3 members")
        assert sizes(members) == [4, 4, 4]
        members.append(TimelineMember.confluent(broker.bootstrap, group, topic, "c3"))
        everyone.append(members[-1])
        v4 = wait_settled(broker, group, members, parts(topic, 12), what="4th joined")
        assert v4 is not None and v3 is not None and v4.group_epoch > v3.group_epoch
        assert sizes(members) == [3, 3, 3, 3]
        assert {e for e, _i, _c in v4.members.values()} == {v4.assignment_epoch}

        leaving = members.pop(0)
        leaving.close()
        assert leaving.closed, leaving.describe()
        wait_settled(broker, group, members, parts(topic, 12), what="after a clean leave")
        assert sizes(members) == [4, 4, 4]

        killed = members.pop(0)
        t0 = time.monotonic()
        killed.kill()
        wait_settled(broker, group, members, parts(topic, 12), what="after a SIGKILL")
        # Only the session timeout (from its last heartbeat) removes a silent member.
        assert time.monotonic() - t0 >= SESSION_S - 0.5
        assert sizes(members) == [6, 6]

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_partitions([NewPartitions(topic, 16)])[topic].result(10)
        wait_settled(broker, group, members, parts(topic, 16), what="16 partitions")
        assert sizes(members) == [8, 8]
        assert_never_shared(everyone)
    finally:
        stop_all(everyone)


def test_confluent_static_member_restart_keeps_its_partitions(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({**FAST_CONSUMER_GROUPS, "group.consumer.session.timeout.ms": "10000",
                          "group.consumer.max.session.timeout.ms": "10000"})
    topic, group = "kip848-static", "g-kip848-static"
    create_topic(broker, topic, 12)

    def member(i: int) -> TimelineMember:
        return TimelineMember.confluent(broker.bootstrap, group, topic, f"s{i}",
                                        instance_id=f"static-{i}")

    members = [member(i) for i in range(3)]
    everyone = list(members)
    try:
        view = wait_settled(broker, group, members, parts(topic, 12), what="3 static members")
        assert view is not None
        old = members[1]
        before = old.snapshot()
        others_before = [m.snapshot() for m in (members[0], members[2])]
        old.close()  # a static member leaves with epoch -2: its partitions wait for it
        left = consumer_group_view(broker, group)
        assert left is not None and len(left.members) == 3, left
        assert left.group_epoch == view.group_epoch
        members[1] = member(1)
        everyone.append(members[1])
        final = wait_settled(broker, group, members, parts(topic, 12), what="static restart")
        assert final is not None
        assert members[1].snapshot() == before, describe_all(broker, group, members)
        assert final.group_epoch == view.group_epoch, describe_all(broker, group, members)
        assert [m.snapshot() for m in (members[0], members[2])] == others_before
        assert_never_shared(everyone)
    finally:
        stop_all(everyone)


def test_regex_subscription_picks_up_a_topic_created_later(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(FAST_CONSUMER_GROUPS)
    group = "g-kip848-regex"
    create_topic(broker, "re-a", 4)
    create_topic(broker, "other", 4)
    members = [TimelineMember.confluent(broker.bootstrap, group, "^re-.*", f"r{i}")
               for i in range(2)]
    try:
        wait_settled(broker, group, members, parts("re-a", 4), what="regex, one topic")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("re-b", 4)])["re-b"].result(10)
        wait_settled(broker, group, members, parts("re-a", 4) | parts("re-b", 4),
                     what="regex, topic created later")
        assert sizes(members) == [4, 4]
        assert_never_shared(members)
    finally:
        stop_all(members)


def _java_member(bootstrap: str, group: str, topic: str) -> TimelineMember:
    return TimelineMember(java_command("ConsumerProtocolMember", "member", bootstrap, group,
                                       topic), "java")


def _raw_describe(bootstrap: str, group: str) -> dict[str, int]:
    """Member epochs from ConsumerGroupDescribe itself (the clients' Admin APIs of these
    versions do not show them)."""
    conn = RawConnection(bootstrap, "kip848-test")
    try:
        resp = conn.call(request(69, 1, group_ids=(group,), include_authorized_operations=False))
        [g] = resp.groups
        assert int(g.error_code) == 0, g
        return {m.member_id: int(m.member_epoch) for m in g.members}
    finally:
        conn.close()


@pytest.mark.timeout(240)
def test_java_consumer_shares_a_group_with_confluent_members_and_admins_describe_it(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(FAST_CONSUMER_GROUPS)
    topic, group = "kip848-java", "g-kip848-java"
    create_topic(broker, topic, 12)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(240):
        producer.produce(topic, value=f"m{i}".encode(), partition=i % 12)
    assert producer.flush(10) == 0
    del producer
    java = _java_member(broker.bootstrap, group, topic)
    members = [java] + [TimelineMember.confluent(broker.bootstrap, group, topic, f"c{i}")
                        for i in range(2)]
    try:
        view = wait_settled(broker, group, members, parts(topic, 12), what="java + confluent",
                            timeout=90)
        assert view is not None
        java_parts = java.snapshot()
        assert len(java_parts) == 4
        # The Java member consumes its partitions (20 records each) and commits them.
        deadline = time.monotonic() + 60
        want = {f"{t}-{p}:20" for t, p in java_parts}
        while time.monotonic() < deadline:
            got = set(java.lines.get("committed", "").split(","))
            if want <= got:
                break
            time.sleep(0.1)
        assert want <= set(java.lines.get("committed", "").split(",")), java.describe()

        def committed() -> dict[tuple[str, int], int]:
            assert broker.broker is not None
            return broker.broker.groups.core.committed(group)

        offsets = broker.call(committed)
        assert {tp: offsets.get(tp) for tp in java_parts} == {tp: 20 for tp in java_parts}

        # Java Admin.describeConsumerGroups.
        d = _run_java("describe", broker.bootstrap, group)
        assert (d["type"], d["state"], d["assignor"], d["members"]) == (
            "Consumer", "Stable", "uniform", "3")
        described = {d[f"member.{i}.id"]: d[f"member.{i}.assignment"] for i in range(3)}
        assert set(described) == set(view.members)
        # kafka-clients 4.x shows each member's epoch, and whether it joined with the
        # consumer protocol (upgraded: true) or with the classic one.
        epochs = {d[f"member.{i}.id"]: int(d[f"member.{i}.epoch"]) for i in range(3)}
        assert {d[f"member.{i}.upgraded"] for i in range(3)} == {"true"}
        # confluent-kafka's describe_consumer_groups.
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        cd = admin.describe_consumer_groups([group])[group].result(10)
        assert cd.type == ConsumerGroupType.CONSUMER and cd.partition_assignor == "uniform"
        by_member = {m.member_id: {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions}
                     for m in cd.members}
        assert set(by_member) == set(view.members)
        assert sorted(tp for s in by_member.values() for tp in s) == sorted(parts(topic, 12))
        for m in cd.members:
            assert m.target_assignment is not None
            assert {(tp.topic, tp.partition) for tp in m.target_assignment.topic_partitions} \
                == by_member[m.member_id]
        assert _raw_describe(broker.bootstrap, group) == {
            mid: e for mid, (e, _i, _c) in view.members.items()} == epochs
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(10)
        assert group in {g.group_id for g in listed.valid}
        assert [g.type for g in listed.valid if g.group_id == group] == [
            ConsumerGroupType.CONSUMER]
        for m in members:
            m.close()
        assert_never_shared(members)
    finally:
        stop_all(members)


def _run_java(*args: str) -> dict[str, str]:
    return run_java("ConsumerProtocolMember", *args, timeout=60)


def test_classic_and_consumer_members_share_a_group_through_the_migration_path(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(FAST_CONSUMER_GROUPS)
    topic, group = "kip848-mixed", "g-kip848-mixed"
    create_topic(broker, topic, 12)
    classic = [TimelineMember.classic(c, broker.bootstrap, group, topic, c)
               for c in ("aiokafka", "kafka-python")]
    everyone = list(classic)
    try:
        def classic_stable(n: int) -> Callable[[object], bool]:
            def check(_view: object) -> bool:
                v = group_view(broker, group)
                return v is not None and v.state == "Stable" and v.members == n
            return check

        wait_settled(broker, group, classic, parts(topic, 12), what="classic group",
                     broker_check=classic_stable(2))
        # Consumer-protocol members join: the classic group becomes a consumer group
        # (upgrade) and all four share the partitions.
        consumers = [TimelineMember.confluent(broker.bootstrap, group, topic, f"c{i}")
                     for i in range(2)]
        everyone += consumers
        view = wait_settled(broker, group, classic + consumers, parts(topic, 12),
                            what="mixed group", timeout=90)
        assert view is not None
        assert sorted(c for _e, _i, c in view.members.values()) == [False, False, True, True]
        assert group_view(broker, group) is None  # one group id, now a consumer group
        # The consumer-protocol members leave: back to a classic group (downgrade).
        for c in consumers:
            c.close()
        wait_settled(broker, group, classic, parts(topic, 12), what="downgraded",
                     broker_check=classic_stable(2), timeout=90)
        assert consumer_group_view(broker, group) is None
        assert_never_shared(everyone)
    finally:
        stop_all(everyone)


def test_broker_restart_keeps_consumer_groups(make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(FAST_CONSUMER_GROUPS)
    topic, group = "kip848-restart", "g-kip848-restart"
    create_topic(broker, topic, 6)
    members = [TimelineMember.confluent(broker.bootstrap, group, topic, f"c{i}")
               for i in range(2)]
    try:
        before = wait_settled(broker, group, members, parts(topic, 6), what="before restart")
        owned = [m.snapshot() for m in members]
        broker.restart()
        assert consumer_group_view(broker, group) == before
        # Past a session timeout the members are still there, at their epochs: they kept
        # heartbeating to the restarted broker.
        time.sleep(SESSION_S + 1)
        after = wait_settled(broker, group, members, parts(topic, 6), what="after restart")
        assert after == before, describe_all(broker, group, members)
        assert [m.snapshot() for m in members] == owned
        assert_never_shared(members)
    finally:
        stop_all(members)
