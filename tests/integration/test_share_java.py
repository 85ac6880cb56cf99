"""Kafka's Java clients (kafka-clients 4.4) with share groups against kafkalite over TCP:
``KafkaShareConsumer`` in implicit and explicit acknowledgement mode (RELEASE redelivers
with delivery count 2, REJECT and ACCEPT end a record), and the Admin client's share-group
APIs: listGroups for share groups, describeShareGroups, listShareGroupOffsets,
alterShareGroupOffsets (refused while the group has a member) and deleteShareGroupOffsets
(tests/integration/java/ShareGroups.java)."""

from __future__ import annotations

from collections.abc import Callable

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_java
from .share_helpers import create_topic, produce


def test_java_share_consumers_and_admin(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot, topic = broker.bootstrap, "java-share"
    create_topic(boot, topic, 2)
    produce(boot, topic, (f"r{i}" for i in range(20)), partitions=2)
    out = run_java("ShareGroups", boot, topic, "20")
    assert out["implicit.count"] == "20", out
    assert (out["implicit.max_delivery"], out["implicit.again"]) == ("1", "0"), out
    assert (out["explicit.count"], out["explicit.commit_errors"]) == ("20", "0"), out
    # The released record comes back to the same consumer, delivered a second time.
    assert out["explicit.redelivered"] == f"{out['explicit.released']}/2", out
    assert out["listed"] == ("{java-share-explicit=Share/Stable, "
                             "java-share-implicit=Share/Empty}"), out
    assert (out["describe.state"], out["describe.members"], out["describe.client"],
            out["describe.partitions"]) == ("Stable", "1", "java-share-explicit", "2"), out
    # Every record of each partition acknowledged or archived: start offsets at the end.
    assert out["offsets.live"] == "{java-share-0=10/0, java-share-1=10/0}", out
    assert out["alter.busy"] == "GroupNotEmptyException", out
    assert out["describe.after_close"] == "Empty", out
    assert out["offsets.altered"] == "{java-share-0=0/10, java-share-1=10/0}", out
    assert out["offsets.deleted"] == "{}", out
