"""Fault rules on the share-group APIs, over TCP with a raw client: a rule selects
ShareGroupHeartbeat and ShareGroupDescribe by API and group (ShareGroupDescribe names its
groups in a list of ids), the share-group offsets APIs by group and by topic name, and the
error lands where Kafka keeps it for that API. The broker's own answer comes back once the
rule is spent."""

from __future__ import annotations

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode

SHARE_HEARTBEAT, SHARE_DESCRIBE = 76, 77
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92


def heartbeat(conn: RawConnection, group: str, member: str = "m1") -> object:
    return conn.call(request(SHARE_HEARTBEAT, 1, group_id=group, member_id=member,
                             member_epoch=0, rack_id=None, subscribed_topic_names=("t",)))


def describe(conn: RawConnection, *groups: str) -> dict[str, ErrorCode]:
    resp = conn.call(request(SHARE_DESCRIBE, 1, group_ids=groups,
                             include_authorized_operations=False))
    return {g.group_id: ErrorCode(g.error_code) for g in resp.groups}


def test_share_heartbeat_and_describe_rules_by_group(broker: BrokerThread) -> None:
    broker.call(lambda: broker.inner.create_topic("t", 2))
    conn = RawConnection(broker.bootstrap, "share-faults")
    try:
        rule = broker.faults.add("ShareGroupHeartbeat", error="COORDINATOR_NOT_AVAILABLE",
                                 group_id="sg", count=1)
        hit = heartbeat(conn, "sg")
        assert ErrorCode(hit.error_code) is ErrorCode.coordinator_not_available
        assert rule.fired == 1
        assert ErrorCode(heartbeat(conn, "other").error_code) is ErrorCode.none
        ok = heartbeat(conn, "sg")  # the rule is spent: the broker's own answer
        assert (ErrorCode(ok.error_code), ok.member_epoch) == (ErrorCode.none, 1)

        with broker.faults.injected("ShareGroupDescribe",
                                    error="GROUP_AUTHORIZATION_FAILED", group_id="sg"):
            assert describe(conn, "sg", "other") == {
                "sg": ErrorCode.group_authorization_failed,
                "other": ErrorCode.group_authorization_failed}
            # Only a request naming the rule's group is hit.
            assert describe(conn, "other") == {"other": ErrorCode.none}
        assert describe(conn, "sg") == {"sg": ErrorCode.none}
    finally:
        conn.close()


def test_share_offsets_rules_by_group_and_topic(broker: BrokerThread) -> None:
    broker.call(lambda: broker.inner.create_topic("t", 2))
    conn = RawConnection(broker.bootstrap, "share-faults")
    try:
        grp_t = request_class(DESCRIBE_OFFSETS, 1, "DescribeShareGroupOffsetsRequestGroup")
        top_t = request_class(DESCRIBE_OFFSETS, 1, "DescribeShareGroupOffsetsRequestTopic")
        ask = request(DESCRIBE_OFFSETS, 1, groups=(grp_t(group_id="sg", topics=(
            top_t(topic_name="t", partitions=(0, 1)),)),))
        with broker.faults.injected("DescribeShareGroupOffsets",
                                    error="COORDINATOR_LOAD_IN_PROGRESS", group_id="sg"):
            [g] = conn.call(ask).groups
            assert ErrorCode(g.error_code) is ErrorCode.coordinator_load_in_progress
        [g] = conn.call(ask).groups
        assert ErrorCode(g.error_code) is ErrorCode.none
        assert [(p.partition_index, p.start_offset) for p in g.topics[0].partitions] == [
            (0, -1), (1, -1)]

        del_t = request_class(DELETE_OFFSETS, 0, "DeleteShareGroupOffsetsRequestTopic")
        delete = request(DELETE_OFFSETS, 0, group_id="sg",
                         topics=(del_t(topic_name="t"),))
        with broker.faults.injected("DeleteShareGroupOffsets",
                                    error="TOPIC_AUTHORIZATION_FAILED", topic="t"):
            resp = conn.call(delete)
            assert [(x.topic_name, ErrorCode(x.error_code)) for x in resp.responses] == [
                ("t", ErrorCode.topic_authorization_failed)]
        # The broker's own answer: there is no share group "sg".
        assert ErrorCode(conn.call(delete).error_code) is ErrorCode.group_id_not_found

        alt_t = request_class(ALTER_OFFSETS, 0, "AlterShareGroupOffsetsRequestTopic")
        alt_p = request_class(ALTER_OFFSETS, 0, "AlterShareGroupOffsetsRequestPartition")
        alter = request(ALTER_OFFSETS, 0, group_id="sg", topics=(alt_t(
            topic_name="t", partitions=(alt_p(partition_index=0, start_offset=0),)),))
        with broker.faults.injected("AlterShareGroupOffsets", error="NOT_COORDINATOR",
                                    group_id="sg"):
            assert ErrorCode(conn.call(alter).error_code) is ErrorCode.not_coordinator
    finally:
        conn.close()
