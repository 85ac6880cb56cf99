"""The web console in headless Chromium, driven by Selenium: a group of three real
consumers shows three members with their assignments and session deadlines, two after
one leaves (without a reload), the message browser shows a produced JSON value, the
Schemas view lists a subject's versions with their schemas, the topic and group pages
chart rates and lag over time, a message searched by key shows its Avro value decoded, a
message produced from the page is found, and a reset from the group page moves the
group's committed offset."""

from __future__ import annotations

import io
import json
import os
import shutil
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from PIL import Image
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import Member, create_topic, stop_all, wait_stable
from .series_traffic import lagging_traffic

TOPIC, GROUP, PARTITIONS = "console-orders", "console-group", 6


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, "needs chromium and chromium-driver (apt-get install)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--window-size=1400,1000",
                f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def rows(driver: webdriver.Chrome, table: str) -> list[list[str]]:
    """The cells' text, read in one go: the console redraws its tables every second."""
    found: list[list[str]] = driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])]"
        ".map(tr => [...tr.cells].map(td => td.innerText.trim()));", f"#{table} tbody tr")
    return found


def click_row(driver: webdriver.Chrome, table: str, first_cell: str) -> None:
    """Click the row whose first cell reads ``first_cell`` (found again if a redraw
    replaced it meanwhile)."""
    for _ in range(20):
        try:
            for tr in driver.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr"):
                if tr.find_element(By.TAG_NAME, "td").text == first_cell:
                    tr.click()
                    return
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"no row {first_cell!r} to click in #{table}")


def wait_for(driver: webdriver.Chrome, what: str, check: Callable[[], bool],
             timeout: float = 30) -> None:
    WebDriverWait(driver, timeout, poll_frequency=0.2).until(
        lambda _d: check(), message=f"console did not show {what}")


def assert_not_blank(png: bytes, path: Path) -> None:
    path.write_bytes(png)  # kept with the test's tmp_path for a look after a failure
    img = Image.open(io.BytesIO(png)).convert("RGB")
    colours = img.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50, f"{path}: too few colours"
    background = max(colours)[0]
    assert background < 0.97 * img.size[0] * img.size[1], f"{path}: mostly one colour"


def test_console_shows_the_group_live_and_the_messages(
        make_broker: Callable[..., BrokerThread], browser: webdriver.Chrome,
        tmp_path: Path) -> None:
    broker = make_broker(admin=True)
    create_topic(broker, TOPIC, PARTITIONS)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce(TOPIC, key=b"order-1", partition=0, headers=[("source", b"test")],
              value=json.dumps({"order": 1, "item": "widget", "qty": 3}).encode())
    assert p.flush(10) == 0
    members = [Member("confluent", broker.bootstrap, GROUP, TOPIC, session_ms=6000,
                      client_id=f"console-{i}", name=f"console-{i}") for i in range(3)]
    try:
        wait_stable(broker, GROUP, members, partitions=PARTITIONS, what="3 members")
        browser.get(f"{broker.admin_url}/#groups/{GROUP}")
        # Marks this page load: a reload would lose it.
        browser.execute_script("window.loadedOnce = true;")

        def three_members() -> bool:
            shown = rows(browser, "members")
            return len(shown) == 3 and all(
                f"{TOPIC}:" in r[3] and "(in " in r[5] for r in shown)

        wait_for(browser, "3 members with assignments and deadlines", three_members)
        shown = rows(browser, "members")
        assert sorted(r[1] for r in shown) == ["console-0", "console-1", "console-2"]
        assigned = sorted(int(p) for r in shown for p in r[3].split(":")[1].split(","))
        assert assigned == list(range(PARTITIONS))
        assert browser.find_element(By.ID, "group-summary").text.startswith("Stable")
        assert_not_blank(browser.get_screenshot_as_png(), tmp_path / "group-3.png")

        members.pop(0).close()  # LeaveGroup
        wait_for(browser, "2 members after one left", lambda: len(rows(browser, "members"))
                 == 2 and all(f"{TOPIC}:" in r[3] for r in rows(browser, "members"))
                 and browser.find_element(By.ID, "group-summary").text.startswith("Stable"))
        assert browser.execute_script("return window.loadedOnce === true;")
        # The rebalance history read from __consumer_offsets has every generation.
        generations = [int(r[2]) for r in rows(browser, "history")]
        assert len(generations) >= 2 and generations == sorted(generations, reverse=True)
        assert_not_blank(browser.get_screenshot_as_png(), tmp_path / "group-2.png")

        browser.find_element(By.CSS_SELECTOR, 'nav a[data-view="topics"]').click()
        wait_for(browser, "the topic list",
                 lambda: any(r and r[0] == TOPIC for r in rows(browser, "topics")))
        click_row(browser, "topics", TOPIC)
        wait_for(browser, "the partitions", lambda: len(rows(browser, "partitions"))
                 == PARTITIONS)
        # Partition 0: led by node 1, its only replica and in sync; log start 0, end 1.
        assert rows(browser, "partitions")[0][:6] == ["0", "1", "1", "1", "0", "1"]
        Select(browser.find_element(By.ID, "browse-format")).select_by_value("json")
        wait_for(browser, "the JSON value", lambda: any(
            '"item": "widget"' in r[3] for r in rows(browser, "messages")))
        message = rows(browser, "messages")[0]
        assert message[0] == "0" and message[2] == "order-1" and message[4] == "source=test"
        assert json.loads(message[3]) == {"order": 1, "item": "widget", "qty": 3}
        assert browser.execute_script("return window.loadedOnce === true;")
        assert_not_blank(browser.get_screenshot_as_png(), tmp_path / "messages.png")
    finally:
        stop_all(members)


def _register(url: str, subject: str, schema: dict[str, object]) -> int:
    body = json.dumps({"schema": json.dumps(schema)}).encode()
    req = urllib.request.Request(f"{url}/subjects/{subject}/versions", data=body,
                                 headers={"Content-Type":
                                          "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        answer: dict[str, int] = json.loads(resp.read())
    return answer["id"]


def test_console_lists_subjects_versions_and_schemas(
        make_broker: Callable[..., BrokerThread], browser: webdriver.Chrome,
        tmp_path: Path) -> None:
    broker = make_broker(admin=True, schema_registry=True)
    url = broker.schema_registry_url
    subject = "console-orders-value"
    v1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    v2 = {"type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": "string", "default": "none"}]}
    ids = [_register(url, subject, v1), _register(url, subject, v2)]
    _register(url, "console-other-value", {"type": "string"})

    browser.get(f"{broker.admin_url}/#schemas")
    wait_for(browser, "both subjects", lambda: sorted(
        r[0] for r in rows(browser, "subjects")) == ["console-orders-value",
                                                     "console-other-value"])
    listed = {r[0]: r for r in rows(browser, "subjects")}
    assert listed[subject][1:] == ["1, 2", "AVRO", str(ids[1])]
    click_row(browser, "subjects", subject)
    wait_for(browser, "the subject's versions", lambda: len(rows(browser, "versions")) == 2)
    versions = rows(browser, "versions")
    assert [(r[0], r[1]) for r in versions] == [("2", str(ids[1])), ("1", str(ids[0]))]
    assert '"note"' in versions[0][3] and '"note"' not in versions[1][3]
    assert browser.find_element(By.ID, "subject-name").text == subject
    assert_not_blank(browser.get_screenshot_as_png(), tmp_path / "schemas.png")


SERIES_TOPIC, SERIES_GROUP = "console-series", "console-series-group"


def _chart_points(driver: webdriver.Chrome, chart: str) -> int:
    """Points of the first line drawn in the chart ``chart`` (0 when none is drawn)."""
    n: int = driver.execute_script(
        "const l = document.querySelector(`#${arguments[0]} polyline.chart-line`);"
        "return l ? l.getAttribute('points').trim().split(' ').length : 0;", chart)
    return n


def test_console_charts_the_topic_and_the_lagging_group(
        make_broker: Callable[..., BrokerThread], browser: webdriver.Chrome,
        tmp_path: Path) -> None:
    """After a producer and a lagging group ran, the topic page and the group page each
    draw charts of several points; a deep link opens the message browser at an offset.
    With CONSOLE_SCREENSHOTS=DIR the two pages are kept there as PNG (docs/)."""
    broker = make_broker(admin=True)
    create_topic(broker, SERIES_TOPIC, 3)
    produced, consumed = lagging_traffic(broker, SERIES_TOPIC, SERIES_GROUP, seconds=10)
    assert 0 < consumed < produced
    shots = Path(os.environ.get("CONSOLE_SCREENSHOTS") or tmp_path)

    browser.get(f"{broker.admin_url}/#topics/{SERIES_TOPIC}")
    wait_for(browser, "the topic's rate charts", lambda: _chart_points(
        browser, "topic-records-chart") >= 3 and _chart_points(browser, "topic-bytes-chart") >= 3)
    legend = browser.find_element(By.ID, "topic-records-chart").text
    assert "produced" in legend and "consumed" in legend
    assert_not_blank(browser.get_screenshot_as_png(), shots / "console-topic.png")

    browser.get(f"{broker.admin_url}/#groups/{SERIES_GROUP}")
    wait_for(browser, "the group's lag charts", lambda: _chart_points(
        browser, "group-lag-chart") >= 3 and _chart_points(browser, "group-partition-chart") >= 3)
    assert "total" in browser.find_element(By.ID, "group-lag-chart").text
    # The group's first generation came after the broker's first sample: marked.
    wait_for(browser, "a rebalance mark", lambda: bool(browser.find_elements(
        By.CSS_SELECTOR, "#group-lag-chart line.chart-mark")))
    assert_not_blank(browser.get_screenshot_as_png(), shots / "console-group.png")

    browser.get(f"{broker.admin_url}/#brokers")
    wait_for(browser, "the request rate chart",
             lambda: _chart_points(browser, "nodes-requests-chart") >= 3)

    # Deep link: partition 1 of the topic from offset 2.
    browser.get(f"{broker.admin_url}/#topics/{SERIES_TOPIC}/1/2")
    wait_for(browser, "messages of partition 1 from offset 2", lambda: (
        rows(browser, "messages")[:1] or [[""]])[0][0] == "2")
    assert Select(browser.find_element(By.ID, "browse-partition")).first_selected_option \
        .get_attribute("value") == "1"


MSG_TOPIC, MSG_GROUP = "console-avro", "console-avro-group"
ORDER = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "int"}, {"name": "item", "type": "string"}]}


def _type(driver: webdriver.Chrome, field: str, text: str) -> None:
    box = driver.find_element(By.ID, field)
    box.clear()
    box.send_keys(text)


def _committed(broker: BrokerThread) -> int:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": MSG_GROUP})
    try:
        [tp] = c.committed([TopicPartition(MSG_TOPIC, 0)], timeout=10)
        return int(tp.offset)
    finally:
        c.close()


def test_console_finds_avro_by_key_produces_and_resets_offsets(
        make_broker: Callable[..., BrokerThread], browser: webdriver.Chrome,
        tmp_path: Path) -> None:
    broker = make_broker(admin=True, schema_registry=True)
    create_topic(broker, MSG_TOPIC, 1)
    ser = AvroSerializer(SchemaRegistryClient({"url": broker.schema_registry_url}),
                         json.dumps(ORDER))
    ctx = SerializationContext(MSG_TOPIC, MessageField.VALUE)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        p.produce(MSG_TOPIC, key=f"k{i}".encode(), value=ser({"id": i, "item": f"thing-{i}"},
                                                              ctx))
    assert p.flush(10) == 0

    browser.get(f"{broker.admin_url}/#topics/{MSG_TOPIC}")
    wait_for(browser, "the partitions", lambda: len(rows(browser, "partitions")) == 1)
    # The message browser shows the Avro values decoded.
    wait_for(browser, "the browsed values decoded", lambda: any(
        r[0] == "19" and r[3].startswith("AVRO schema ") and '"thing-19"' in r[3]
        for r in rows(browser, "messages")))
    # Searched by key: one record, its Avro value decoded through the registry.
    _type(browser, "search-key", "k7")
    browser.find_element(By.CSS_SELECTOR, "#search button").click()
    wait_for(browser, "the record of key k7", lambda: len(rows(browser, "search-results")) == 1)
    [found] = rows(browser, "search-results")
    assert found[1] == "7" and found[3] == "k7"
    assert found[5].startswith("AVRO schema ")
    assert json.loads(found[5].split("\n", 1)[1]) == {"id": 7, "item": "thing-7"}
    assert "20 records" in browser.find_element(By.ID, "search-status").text
    # With CONSOLE_SCREENSHOTS=DIR kept there as PNG (docs/).
    shots = Path(os.environ.get("CONSOLE_SCREENSHOTS") or tmp_path)
    browser.execute_script("document.getElementById('search').scrollIntoView();")
    assert_not_blank(browser.get_screenshot_as_png(), shots / "console-messages.png")

    # Produced from the page as JSON under the same Avro schema: offset 20, then found by
    # the same search form and shown decoded.
    schema_id = found[5].split("\n", 1)[0].removeprefix("AVRO schema ")
    _type(browser, "produce-key", "typed")
    _type(browser, "produce-value", '{"id": 99, "item": "from-the-page"}')
    _type(browser, "produce-schema", schema_id)
    browser.find_element(By.CSS_SELECTOR, "#produce button").click()
    wait_for(browser, "the produced offset", lambda: browser.find_element(
        By.ID, "produce-status").text == "produced to partition 0 at offset 20")
    _type(browser, "search-key", "typed")
    browser.find_element(By.CSS_SELECTOR, "#search button").click()
    wait_for(browser, "the record produced from the page", lambda: [
        (r[1], r[3]) for r in rows(browser, "search-results")] == [("20", "typed")])
    [typed] = rows(browser, "search-results")
    assert json.loads(typed[5].split("\n", 1)[1]) == {"id": 99, "item": "from-the-page"}

    # A real consumer reads all 21 and commits; then, with the group empty, a reset to the
    # earliest offset from the group page moves its committed offset back to 0.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": MSG_GROUP,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([MSG_TOPIC])
        seen = 0
        for _ in range(200):
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                seen += 1
            if seen == 21:
                break
        assert seen == 21
        c.commit(asynchronous=False)
    finally:
        c.close()
    assert _committed(broker) == 21
    browser.get(f"{broker.admin_url}/#groups/{MSG_GROUP}")
    wait_for(browser, "the group's lag row", lambda: any(
        r[:3] == [MSG_TOPIC, "0", "21"] for r in rows(browser, "lag")))
    _type(browser, "reset-topic", MSG_TOPIC)
    Select(browser.find_element(By.ID, "reset-to")).select_by_value("earliest")
    browser.find_element(By.CSS_SELECTOR, "#reset button").click()
    wait_for(browser, "the reset", lambda: browser.find_element(
        By.ID, "reset-status").text == f"reset {MSG_TOPIC}: 0→0")
    assert browser.find_element(By.ID, "reset-error").text == ""
    assert _committed(broker) == 0
    wait_for(browser, "the lag after the reset", lambda: any(
        r[:5] == [MSG_TOPIC, "0", "0", "21", "21"] for r in rows(browser, "lag")))
