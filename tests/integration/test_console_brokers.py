"""The web console in headless Chromium shows the brokers of a three-node process with
their status, and its buttons stop and start a node through the admin API; a topic's
partitions show their leader, replicas and in-sync replicas, and the leadership moves off
the stopped node."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka.admin import AdminClient, NewTopic
from selenium import webdriver

from kafkalite.broker.testing.fixtures import BrokerThread

from .test_console import browser, rows, wait_for  # noqa: F401 (the browser fixture)

TOPIC = "console-replicated"


def _click(driver: webdriver.Chrome, node: int, action: str) -> None:
    """Found and clicked in one go: the console redraws its tables every second."""
    clicked = driver.execute_script(
        "const b = document.querySelector(arguments[0]); if (b) b.click(); return !!b;",
        f'#brokers button[data-node="{node}"][data-action="{action}"]')
    assert clicked, f"no {action} button for broker {node}"


def test_console_stops_and_starts_a_broker(
        make_broker: Callable[..., BrokerThread], browser: webdriver.Chrome,  # noqa: F811
) -> None:
    broker = make_broker(admin=True, nodes=3)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(30)
    leader, _replicas, _isr = broker.partition_state(TOPIC, 0)
    victim = leader if leader != 1 else 2  # the console is served by node 1's process

    browser.get(f"{broker.admin_url}/#brokers")

    def status(node: int) -> str | None:
        found = [r for r in rows(browser, "brokers") if r and r[0].split()[0] == str(node)]
        return found[0][3] if found else None

    wait_for(browser, "three running brokers",
             lambda: [status(n) for n in (1, 2, 3)] == ["running"] * 3)
    _click(browser, victim, "stop")
    wait_for(browser, f"broker {victim} stopped", lambda: status(victim) == "stopped")
    assert broker.partition_state(TOPIC, 0)[0] != victim

    browser.get(f"{broker.admin_url}/#topics/{TOPIC}")

    def partition_row() -> list[str]:
        found = [r for r in rows(browser, "partitions") if r and r[0] == "0"]
        return found[0] if found else []

    wait_for(browser, "partition 0 led elsewhere, without the stopped node in sync",
             lambda: len(partition_row()) > 3 and partition_row()[1] != str(victim)
             and str(victim) not in partition_row()[3].split(", ")
             and partition_row()[2].split(", ") != [""])

    browser.get(f"{broker.admin_url}/#brokers")
    wait_for(browser, "the stop button drawn", lambda: status(victim) == "stopped")
    _click(browser, victim, "start")
    wait_for(browser, f"broker {victim} running again", lambda: status(victim) == "running")
