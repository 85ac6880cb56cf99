"""Fault rules and coordinator scenarios on the share-group APIs, over TCP with a raw
client: a rule selects ShareGroupHeartbeat and ShareGroupDescribe by API and group
(ShareGroupDescribe names its groups in a list of ids), ShareFetch by group, the
share-group offsets APIs by group and by topic name, and the error lands where Kafka keeps
it for that API; the broker's own answer comes back once the rule is spent. The
``expire-member`` scenario ends a share group member's session, ``partition-loading``
holds a share group's coordinator partition."""

from __future__ import annotations

import datetime

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode

SHARE_HEARTBEAT, SHARE_DESCRIBE, SHARE_FETCH = 76, 77, 78
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


def test_share_fetch_rule_by_group(broker: BrokerThread) -> None:
    info = broker.call(lambda: broker.inner.create_topic("t", 1))
    conn = RawConnection(broker.bootstrap, "share-faults")
    try:
        assert ErrorCode(heartbeat(conn, "sg").error_code) is ErrorCode.none
        ft = request_class(SHARE_FETCH, 1, "FetchTopic")
        fp = request_class(SHARE_FETCH, 1, "FetchPartition")
        fetch = request(SHARE_FETCH, 1, group_id="sg", member_id="m1", share_session_epoch=0,
                        max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20,
                        max_records=10, batch_size=10, forgotten_topics_data=(),
                        topics=(ft(topic_id=info.topic_id, partitions=(
                            fp(partition_index=0, acknowledgement_batches=()),)),))
        with broker.faults.injected("ShareFetch", error="SHARE_SESSION_NOT_FOUND",
                                    group_id="sg"):
            resp = conn.call(fetch)
            assert ErrorCode(resp.error_code) is ErrorCode.share_session_not_found
        assert ErrorCode(conn.call(fetch).error_code) is ErrorCode.none
    finally:
        conn.close()


def test_scenarios_expire_a_share_member_and_hold_its_partition(broker: BrokerThread) -> None:
    broker.call(lambda: broker.inner.create_topic("t", 2))
    conn = RawConnection(broker.bootstrap, "share-scenarios")
    try:
        assert ErrorCode(heartbeat(conn, "sg", "m1").error_code) is ErrorCode.none
        assert ErrorCode(heartbeat(conn, "sg", "m2").error_code) is ErrorCode.none
        got = broker.scenario("expire-member", group_id="sg", member_id="m1")
        assert got["error"] == "NONE", got
        [g] = conn.call(request(SHARE_DESCRIBE, 1, group_ids=("sg",),
                                include_authorized_operations=False)).groups
        assert [m.member_id for m in g.members] == ["m2"]
        again = broker.scenario("expire-member", group_id="sg", member_id="m1")
        assert again["error"] == "UNKNOWN_MEMBER_ID", again
        held = broker.scenario("partition-loading", group_id="sg", for_ms=60_000)
        assert held["error"] == "NONE", held
        assert ErrorCode(heartbeat(conn, "sg", "m3").error_code) \
            is ErrorCode.coordinator_load_in_progress
    finally:
        conn.close()
