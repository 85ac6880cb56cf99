"""Record 15 of ``__consumer_offsets`` (ShareGroupStatePartitionMetadata) with a real
share consumer over TCP: the share-partitions it fetched are named initialized, as
Kafka's coordinator names them, after a restart too, and ``kafkalite offsets dump``
decodes the record."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

from confluent_kafka.admin import AdminClient

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode

from .share_helpers import create_topic, poll_until, produce, set_group_configs, share_consumer


def _initialized(broker: BrokerThread) -> dict[str, set[int]]:
    group = broker.call(lambda: broker.inner.groups.core.share_group("meta"))
    assert group is not None
    return {name: set(parts) for name, parts in group.initialized.values()}


def test_fetched_share_partitions_are_recorded_initialized_and_reload(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, "meta-t", 2)
    set_group_configs(boot, "meta", {"share.auto.offset.reset": "earliest"})
    produce(boot, "meta-t", (f"v{i}" for i in range(6)), partitions=2)
    c = share_consumer(boot, "meta", "meta-t")
    try:
        got = poll_until([c], lambda got: len(got[0]) >= 6)
        assert len(got[0]) == 6
        c.commit_sync(10)
    finally:
        c.close()
    assert _initialized(broker) == {"meta-t": {0, 1}}
    broker.restart()
    assert _initialized(broker) == {"meta-t": {0, 1}}
    out = subprocess.run(
        [sys.executable, "-m", "kafkalite", "offsets", "dump", "--data-dir",
         str(broker.data_dir)],
        check=True, capture_output=True, text=True, timeout=60).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    meta = [r for r in rows if r["key"]["type"] == "15"]
    assert meta and meta[-1]["key"]["data"] == {"groupId": "meta"}
    last = meta[-1]["value"]["data"]
    assert [(t["topicName"], t["partitions"]) for t in last["initializedTopics"]] == [
        ("meta-t", [0, 1])]
    assert last["initializingTopics"] == [] and last["deletingTopics"] == []

    # DeleteShareGroupOffsets of the topic (the group is empty): the record leaves it out.
    conn = RawConnection(broker.bootstrap, "meta-admin")
    try:
        top = request_class(92, 0, "DeleteShareGroupOffsetsRequestTopic")
        resp = conn.call(request(92, 0, group_id="meta", topics=(top(topic_name="meta-t"),)))
        assert resp.error_code == ErrorCode.none
        assert [t.error_code for t in resp.responses] == [ErrorCode.none]
    finally:
        conn.close()
    assert _initialized(broker) == {}
    broker.restart()
    assert _initialized(broker) == {}
    # Fetched again, the share-partitions are initialized again; deleting the topic
    # takes them out.
    c = share_consumer(broker.bootstrap, "meta", "meta-t")
    try:
        poll_until([c], lambda got: len(got[0]) >= 6)
    finally:
        c.close()
    assert _initialized(broker) == {"meta-t": {0, 1}}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics(["meta-t"])["meta-t"].result(10)
    assert _initialized(broker) == {}
