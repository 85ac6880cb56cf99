"""The web console in headless Chromium shows a share group: its member with its
partitions, and per share-partition the start and end offsets and the in-flight records
by state while a real confluent-kafka ``ShareConsumer`` holds some of them acquired."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import AcknowledgeType
from selenium import webdriver
from selenium.webdriver.common.by import By

from kafkalite.broker.testing.fixtures import BrokerThread

from .share_helpers import create_topic, poll_until, produce, set_group_configs, share_consumer
from .test_console import browser, rows, wait_for  # noqa: F401 (the browser fixture)

TOPIC, GROUP = "console-share", "console-share-group"


def test_console_shows_share_partitions_by_state(
        make_broker: Callable[..., BrokerThread], browser: webdriver.Chrome,  # noqa: F811
) -> None:
    broker = make_broker(admin=True)
    boot = broker.bootstrap
    create_topic(boot, TOPIC, 1)
    set_group_configs(boot, GROUP, {"share.auto.offset.reset": "earliest"})
    produce(boot, TOPIC, (f"v{i}" for i in range(10)))
    c = share_consumer(boot, GROUP, TOPIC, explicit=True, **{"client.id": "console-share"})
    try:
        [got] = poll_until([c], lambda got: len(got[0]) >= 10)
        assert len(got) == 10
        # Offsets 0-3 accepted, 4 rejected; 5-9 stay acquired.
        for i, m in enumerate(got[:5]):
            c.acknowledge(m, AcknowledgeType.REJECT if i == 4 else AcknowledgeType.ACCEPT)
        c.commit_sync(10)
        browser.get(f"{broker.admin_url}/#groups/{GROUP}")

        def shown() -> bool:
            r = rows(browser, "share-partitions")
            return len(r) == 1 and r[0][4:8] == ["0", "5", "0", "0"]

        wait_for(browser, "the share-partition with 5 records acquired", shown)
        [row] = rows(browser, "share-partitions")
        # topic, partition, start offset (past the settled 0-4), end offset, by state, lag
        assert row == [TOPIC, "0", "5", "9", "0", "5", "0", "0", "10", "5"], row
        [member] = rows(browser, "members")
        assert member[1] == "console-share" and member[3] == f"{TOPIC}: 0", member
        summary = browser.find_element(By.ID, "group-summary").text
        assert summary.startswith("Stable · share group"), summary
    finally:
        c.close()
