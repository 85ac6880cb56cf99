"""The console's clients view (``#clients``) in headless Chromium: a librdkafka producer
pushing its metrics (KIP-714, subscribed to everything) and a consumer of a group that
pushes none are both listed with their software, address, listener, principal and the
group; the producer's own page charts each series it pushed. ``CONSOLE_SCREENSHOTS=DIR``
keeps the page's screenshot there (docs/console-clients.png is one)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer
from selenium import webdriver

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested

from .group_helpers import create_topic
from .test_console import assert_not_blank, browser, rows, wait_for  # noqa: F401

TOPIC, GROUP = "console-clients-t", "console-clients-group"


def subscribe_everything(bootstrap: str) -> None:
    """IncrementalAlterConfigs of a client-metrics resource, as kafka-client-metrics
    sends it (no JVM in this test)."""
    req_t = codecs.codec(44, 1).request_type
    op_t = nested(req_t, "AlterableConfig")
    res_t = nested(req_t, "AlterConfigsResource")
    conn = RawConnection(bootstrap, "console-test")
    try:
        resp = conn.call(build(req_t, validate_only=False, resources=(build(
            res_t, resource_type=16, resource_name="everything", configs=(
                build(op_t, name="metrics", config_operation=0, value="*"),
                build(op_t, name="interval.ms", config_operation=0, value="500"))),)))
    finally:
        conn.close()
    assert int(resp.responses[0].error_code) == 0


def test_console_lists_clients_and_charts_pushed_metrics(
        make_broker: Callable[..., BrokerThread], browser: webdriver.Chrome,  # noqa: F811
        tmp_path: Path) -> None:
    broker = make_broker(admin=True)
    subscribe_everything(broker.bootstrap)
    create_topic(broker, TOPIC, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "console-producer",
                  "linger.ms": 5})
    c = Consumer({"bootstrap.servers": broker.bootstrap, "client.id": "console-consumer",
                  "group.id": GROUP, "enable.metrics.push": False,
                  "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    try:
        browser.get(f"{broker.admin_url}/#clients")

        def busy(until: Callable[[], bool]) -> Callable[[], bool]:
            def step() -> bool:
                p.produce(TOPIC, b"x")
                p.poll(0)
                c.poll(0.05)
                return until()
            return step

        def both_listed() -> bool:
            shown = {r[0]: r for r in rows(browser, "clients")}
            prod, cons = shown.get("console-producer"), shown.get("console-consumer")
            return (prod is not None and cons is not None and int(prod[8]) > 0
                    and cons[5] == GROUP)

        wait_for(browser, "both clients, the producer with metrics, the consumer in its "
                 "group", busy(both_listed), timeout=60)
        shown = {r[0]: r for r in rows(browser, "clients")}
        prod, cons = shown["console-producer"], shown["console-consumer"]
        assert prod[1].startswith("confluent-kafka-python ")
        assert prod[2].startswith("127.0.0.1:") and prod[3] == "PLAINTEXT"
        assert prod[4] == "User:ANONYMOUS" and len(prod[7]) == 22
        assert cons[7] == "—" and cons[8] == "0"

        # The producer's page: every series, a line over the values kept of each.
        browser.get(f"{broker.admin_url}/#clients/{prod[7]}")

        def charted() -> bool:
            lines: int = browser.execute_script(
                "return [...document.querySelectorAll('#client-metrics polyline')]"
                ".filter(l => l.getAttribute('points').split(' ').length >= 2).length;")
            return lines > 0

        wait_for(browser, "a chart of a pushed series", busy(charted), timeout=60)
        metrics = rows(browser, "client-metrics")
        assert any(r[0].startswith("org.apache.kafka.producer.") for r in metrics)
        png = browser.get_screenshot_as_png()
        assert_not_blank(png, tmp_path / "clients.png")
        keep = os.environ.get("CONSOLE_SCREENSHOTS")
        if keep:
            Path(keep, "console-clients.png").write_bytes(png)
    finally:
        c.close()
        p.flush(5)
