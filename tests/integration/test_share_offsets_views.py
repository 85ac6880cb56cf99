"""The share-group offsets APIs, views and counters over TCP with a real share consumer
(confluent-kafka ``ShareConsumer``): DescribeShareGroupOffsets after records were accepted,
AlterShareGroupOffsets refused while a member is in the group and, once it is empty,
moving the start offset back so the records are delivered again; DeleteShareGroupOffsets;
``kafkalite groups describe``, the admin API's group view and ``/metrics``, whose lock
expiry and redelivery counters move on the manual clock."""

from __future__ import annotations

import datetime
import json
import urllib.request
from collections.abc import Callable
from typing import Any

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode

from .share_helpers import create_topic, poll_until, produce, set_group_configs, share_consumer

GROUP, TOPIC = "so-group", "so-topic"
DESCRIBE, ALTER, DELETE = 90, 91, 92


def describe(conn: RawConnection, group: str = GROUP) -> dict[int, tuple[int, int]]:
    grp = request_class(DESCRIBE, 1, "DescribeShareGroupOffsetsRequestGroup")
    top = request_class(DESCRIBE, 1, "DescribeShareGroupOffsetsRequestTopic")
    [g] = conn.call(request(DESCRIBE, 1, groups=(grp(group_id=group, topics=(
        top(topic_name=TOPIC, partitions=(0, 1)),)),))).groups
    assert ErrorCode(g.error_code) is ErrorCode.none, g
    return {p.partition_index: (p.start_offset, p.lag) for p in g.topics[0].partitions}


def alter(conn: RawConnection, starts: dict[int, int], group: str = GROUP) -> Any:
    top = request_class(ALTER, 0, "AlterShareGroupOffsetsRequestTopic")
    part = request_class(ALTER, 0, "AlterShareGroupOffsetsRequestPartition")
    return conn.call(request(ALTER, 0, group_id=group, topics=(top(
        topic_name=TOPIC, partitions=tuple(part(partition_index=p, start_offset=o)
                                           for p, o in starts.items())),)))


def delete(conn: RawConnection) -> Any:
    top = request_class(DELETE, 0, "DeleteShareGroupOffsetsRequestTopic")
    return conn.call(request(DELETE, 0, group_id=GROUP, topics=(top(topic_name=TOPIC),)))


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def consume_all(boot: str, expect: int) -> list[str]:
    c = share_consumer(boot, GROUP, TOPIC)
    try:
        [got] = poll_until([c], lambda got: len(got[0]) >= expect, timeout=30)
        c.commit_sync(10)  # implicit mode: the last batch is accepted
        return sorted(bytes(m.value() or b"").decode() for m in got)
    finally:
        c.close()


def test_offsets_apis_views_and_counters(
        kafkalite_factory: Callable[..., BrokerThread], capsys: Any) -> None:
    broker = kafkalite_factory(admin=True)
    boot = broker.bootstrap
    create_topic(boot, TOPIC, 2)
    set_group_configs(boot, GROUP, {"share.auto.offset.reset": "earliest"})
    produce(boot, TOPIC, (f"v{i}" for i in range(10)), partitions=2)
    conn = RawConnection(boot, "share-offsets")
    try:
        assert {DESCRIBE, ALTER, DELETE} <= set(conn.versions)
        assert describe(conn) == {0: (-1, -1), 1: (-1, -1)}  # no state yet
        # A group id naming no group: the alter makes an empty share group, as Kafka 4.4.
        made = alter(conn, {0: 0}, group="so-made")
        assert [(p.partition_index, ErrorCode(p.error_code))
                for p in made.responses[0].partitions] == [(0, ErrorCode.none)]
        assert describe(conn, "so-made") == {0: (0, 5), 1: (-1, -1)}

        c = share_consumer(boot, GROUP, TOPIC)
        try:
            [got] = poll_until([c], lambda got: len(got[0]) >= 10, timeout=30)
            c.commit_sync(10)
            assert len(got) == 10
            # Every record accepted: each partition's start offset at its end, no lag.
            assert describe(conn) == {0: (5, 0), 1: (5, 0)}
            busy = alter(conn, {0: 0})
            assert (ErrorCode(busy.error_code), busy.error_message) == (
                ErrorCode.non_empty_group, "The group is not empty.")
            view = get_json(f"{broker.admin_url}/api/v1/groups/{GROUP}")
            assert view["type"] == "share" and view["state"] == "Stable"
            [member] = view["members"]
            assert member["assignment"] == [{"topic": TOPIC, "partitions": [0, 1]}]
            assert [(p["partition"], p["start_offset"], p["log_end_offset"], p["lag"])
                    for p in view["share_partitions"]] == [(0, 5, 5, 0), (1, 5, 5, 0)]
            listed = get_json(f"{broker.admin_url}/api/v1/groups")["groups"]
            assert [(g["group_id"], g["type"], g["state"]) for g in listed] == [
                (GROUP, "share", "Stable"), ("so-made", "share", "Empty")]
        finally:
            c.close()

        # Empty now (the consumer left): partition 0 goes back to the start.
        moved = alter(conn, {0: 0, 7: 0})
        assert ErrorCode(moved.error_code) is ErrorCode.none
        [t] = moved.responses
        assert [(p.partition_index, ErrorCode(p.error_code)) for p in t.partitions] == [
            (0, ErrorCode.none), (7, ErrorCode.unknown_topic_or_partition)]
        assert describe(conn) == {0: (0, 5), 1: (5, 0)}
        assert consume_all(boot, 5) == ["v0", "v2", "v4", "v6", "v8"]
        assert describe(conn)[0] == (5, 0)

        from kafkalite.broker.cli.main import main as cli
        assert cli(["groups", "describe", GROUP, "--bootstrap", boot]) == 0
        out = capsys.readouterr().out
        assert "START-OFFSET" in out and "Share" in out, out
        assert cli(["groups", "describe", GROUP, "--bootstrap", boot, "--json"]) == 0
        described = json.loads(capsys.readouterr().out)
        assert described["type"] == "share" and described["state"] == "Empty"
        assert [(p["partition"], p["start_offset"], p["log_end_offset"], p["lag"])
                for p in described["partitions"]] == [(0, 5, 5, 0), (1, 5, 5, 0)]
        assert cli(["groups", "list", "--bootstrap", boot, "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert {(g["group_id"], g["group_type"], g["state"]) for g in listed} == {
            (GROUP, "share", "Empty"), ("so-made", "share", "Empty")}

        metrics = urllib.request.urlopen(f"{broker.admin_url}/metrics", timeout=10).read()
        text = metrics.decode()
        assert "kafkalite_share_records_acquired_total 15.0" in text, text
        assert ('kafka_server_sharegroupmetrics_recordacknowledgements_total{ackType="Accept"}'
                ' 15.0') in text

        gone = delete(conn)
        assert ErrorCode(gone.error_code) is ErrorCode.none
        assert [(x.topic_name, ErrorCode(x.error_code)) for x in gone.responses] == [
            (TOPIC, ErrorCode.none)]
        assert describe(conn) == {0: (-1, -1), 1: (-1, -1)}
        again = delete(conn)
        assert [(ErrorCode(x.error_code), x.error_message) for x in again.responses] == [
            (ErrorCode.unknown_topic_or_partition, "There is no offset information to delete.")]
    finally:
        conn.close()


def test_lock_expiry_and_redelivery_counted_on_the_manual_clock(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory(admin=True, manual_clock=True)
    boot = broker.bootstrap
    info = broker.call(lambda: broker.inner.create_topic("locks", 1))
    set_group_configs(boot, "locks-g", {"share.auto.offset.reset": "earliest"})
    produce(boot, "locks", ["a", "b"])
    conn = RawConnection(boot, "share-locks")
    ft = request_class(78, 1, "FetchTopic")
    fp = request_class(78, 1, "FetchPartition")

    def fetch(epoch: int) -> list[tuple[int, int, int]]:
        topics = (ft(topic_id=info.topic_id, partitions=(
            fp(partition_index=0, acknowledgement_batches=()),)),) if epoch == 0 else ()
        resp = conn.call(request(78, 1, group_id="locks-g", member_id="m1",
                                 share_session_epoch=epoch, max_wait=datetime.timedelta(0),
                                 min_bytes=1, max_bytes=1 << 20, max_records=10,
                                 batch_size=10, topics=topics, forgotten_topics_data=()))
        assert ErrorCode(resp.error_code) is ErrorCode.none, resp
        return [(int(a.first_offset), int(a.last_offset), int(a.delivery_count))
                for t in resp.responses for p in t.partitions for a in p.acquired_records]

    try:
        hb = conn.call(request(76, 1, group_id="locks-g", member_id="m1", member_epoch=0,
                               rack_id=None, subscribed_topic_names=("locks",)))
        assert ErrorCode(hb.error_code) is ErrorCode.none
        assert fetch(0) == [(0, 1, 1)]
        broker.advance(30_001)  # share.record.lock.duration.ms: both locks expire
        assert fetch(1) == [(0, 1, 2)]
        text = urllib.request.urlopen(f"{broker.admin_url}/metrics", timeout=10).read().decode()
        for line in ("kafkalite_share_records_acquired_total 4.0",
                     "kafkalite_share_records_redelivered_total 2.0",
                     "kafkalite_share_records_lock_expiries_total 2.0"):
            assert line in text, text
    finally:
        conn.close()


def test_altered_offsets_survive_a_restart_and_go_with_the_group(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, TOPIC, 2)
    produce(boot, TOPIC, (f"v{i}" for i in range(10)), partitions=2)
    conn = RawConnection(boot, "share-offsets")
    assert ErrorCode(alter(conn, {0: 2, 1: 4}).error_code) is ErrorCode.none
    conn.close()
    broker.restart()
    conn = RawConnection(broker.bootstrap, "share-offsets")
    try:
        # The group and its share-partition state were reloaded from the logs.
        assert describe(conn) == {0: (2, 3), 1: (4, 1)}
        [g] = conn.call(request(77, 1, group_ids=(GROUP,),
                                include_authorized_operations=False)).groups
        assert (ErrorCode(g.error_code), g.group_state, g.group_epoch) == (
            ErrorCode.none, "Empty", 1)
        # DeleteGroups takes the share-partition state with the group, as Kafka does.
        [r] = conn.call(request(42, 2, groups_names=(GROUP,))).results
        assert ErrorCode(r.error_code) is ErrorCode.none
        assert describe(conn) == {0: (-1, -1), 1: (-1, -1)}
        [g] = conn.call(request(77, 1, group_ids=(GROUP,),
                                include_authorized_operations=False)).groups
        assert ErrorCode(g.error_code) is ErrorCode.group_id_not_found
        # A consumer of a group made again with that id starts afresh (from the earliest
        # record, not from the deleted start offsets).
        set_group_configs(broker.bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
        assert len(consume_all(broker.bootstrap, 10)) == 10
    finally:
        conn.close()
