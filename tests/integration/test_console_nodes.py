"""The Brokers view of ``--nodes 3`` in headless Chromium: each broker's request rate and
latency charted from its own series, a stop, start and isolation of one node marked on
that node's charts only. With CONSOLE_SCREENSHOTS=DIR the view is kept there as PNG."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Callable
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import create_topic
from .series_traffic import get, lagging_traffic
from .test_console import _chart_points, assert_not_blank, browser, wait_for

__all__ = ["browser"]


def _post(broker: BrokerThread, path: str) -> None:
    req = urllib.request.Request(f"{broker.admin_url}/api/v1{path}", data=b"{}",
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200


def _marks(driver: webdriver.Chrome, chart: str) -> list[str]:
    found: list[str] = driver.execute_script(
        "return [...document.querySelectorAll(`#${arguments[0]} line.chart-mark title`)]"
        ".map(t => t.textContent);", chart)
    return found


def test_each_broker_charts_its_requests_with_its_stops_marked(
        make_broker: Callable[..., BrokerThread], browser: webdriver.Chrome,
        tmp_path: Path) -> None:
    broker = make_broker(admin=True, nodes=3)
    create_topic(broker, "console-nodes", 3)
    lagging_traffic(broker, "console-nodes", "console-nodes-group", seconds=5)
    _post(broker, "/brokers/2/stop")
    wait_for(browser, "node 2 stopped", lambda: any(
        m["kind"] == "stopped" for m in get(broker, "/nodes/series")["nodes"]["2"]["marks"]))
    _post(broker, "/brokers/2/start")
    _post(broker, "/brokers/3/isolate")
    lagging_traffic(broker, "console-nodes", "console-nodes-group", seconds=4)
    _post(broker, "/brokers/3/heal")

    browser.get(f"{broker.admin_url}/#brokers")
    for node in ("1", "2", "3"):
        wait_for(browser, f"node {node}'s charts", lambda n=node: _chart_points(
            browser, f"node-{n}-requests-chart") >= 3
            and _chart_points(browser, f"node-{n}-latency-chart") >= 3)
    wait_for(browser, "node 2's stop and start marked", lambda: _marks(
        browser, "node-2-requests-chart") == ["running → stopped", "stopped → running"])
    wait_for(browser, "node 3's isolation marked", lambda: _marks(
        browser, "node-3-latency-chart")[:1] == ["running → isolated"])
    assert _marks(browser, "node-1-requests-chart") == []
    assert "node 2: requests/s" in browser.find_element(By.ID, "node-2-requests-chart").text
    shots = Path(os.environ.get("CONSOLE_SCREENSHOTS") or tmp_path)
    browser.execute_script("document.getElementById('node-charts').scrollIntoView();")
    assert_not_blank(browser.get_screenshot_as_png(), shots / "console-brokers.png")
