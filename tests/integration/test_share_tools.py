"""Apache Kafka 4.4's kafka-share-groups (``ShareGroupCommand``) against kafkalite, run as
bin/kafka-share-groups.sh runs it: list with states, describe (offsets with lag, state,
members), reset offsets to the earliest, delete offsets, delete the group. A share group
whose consumer (confluent-kafka ``ShareConsumer``) accepted every record is its subject."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_tool, tools_log_config
from .share_helpers import create_topic, poll_until, produce, set_group_configs, share_consumer

SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
GROUP, TOPIC = "tools-share", "tools-share-t"


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def test_kafka_share_groups_tool(make_broker: Callable[..., BrokerThread],
                                 tmp_path: Path) -> None:
    b = make_broker().bootstrap
    log = tools_log_config(tmp_path)

    def tool(*args: str) -> str:
        return run_tool(SHARE_GROUPS, "--bootstrap-server", b, *args, log_config=log).stdout

    create_topic(b, TOPIC, 2)
    set_group_configs(b, GROUP, {"share.auto.offset.reset": "earliest"})
    produce(b, TOPIC, (f"v{i}" for i in range(10)), partitions=2)
    c = share_consumer(b, GROUP, TOPIC)
    try:
        [got] = poll_until([c], lambda got: len(got[0]) >= 10)
        assert len(got) == 10
        c.commit_sync(10)
    finally:
        c.close()

    assert rows(tool("--list", "--state")) == [["GROUP", "STATE"], [GROUP, "Empty"]]
    offsets = [["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"],
               [GROUP, TOPIC, "0", "5", "0"], [GROUP, TOPIC, "1", "5", "0"]]
    assert rows(tool("--describe", "--group", GROUP)) == offsets
    state = rows(tool("--describe", "--group", GROUP, "--state"))
    assert state[0] == ["GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"], state
    assert (state[1][0], state[1][-2:]) == (GROUP, ["Empty", "0"]), state
    reset = rows(tool("--reset-offsets", "--to-earliest", "--group", GROUP, "--topic", TOPIC,
                      "--execute"))
    assert reset[0] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert sorted(reset[1:]) == [[GROUP, TOPIC, "0", "0"], [GROUP, TOPIC, "1", "0"]]
    assert rows(tool("--describe", "--group", GROUP)) == [
        offsets[0], [GROUP, TOPIC, "0", "0", "5"], [GROUP, TOPIC, "1", "0", "5"]]
    assert rows(tool("--delete-offsets", "--group", GROUP, "--topic", TOPIC)) == [
        ["TOPIC", "STATUS"], [TOPIC, "Successful"]]
    assert tool("--describe", "--group", GROUP).strip() == (
        f"Share group '{GROUP}' has no offset information.")
    assert tool("--delete", "--group", GROUP).strip() == (
        f"Deletion of requested share groups ('{GROUP}') was successful.")
    assert tool("--list").strip() == ""
