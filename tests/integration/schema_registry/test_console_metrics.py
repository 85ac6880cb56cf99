"""The registry in the admin listener: the console's schema listing and the registry's
counters in ``/metrics``."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from kafkalite.broker.testing.fixtures import BrokerThread


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        body: bytes = r.read()
        return body


def test_console_lists_subjects_and_metrics_count(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(admin=True, schema_registry=True)
    client = SchemaRegistryClient({"url": b.schema_registry_url})
    first = json.dumps({"type": "record", "name": "R", "fields": []})
    client.register_schema("r", Schema(first, "AVRO"))
    client.register_schema("r", Schema(first, "AVRO"))  # cached by the client: no request
    client.lookup_schema("r", Schema(first, "AVRO"))
    listed = json.loads(_get(b.admin_url + "/api/v1/schemas"))
    assert listed == {"enabled": True, "subjects": [{"subject": "r", "versions": [
        {"version": 1, "id": 1, "type": "AVRO", "schema": first.replace(" ", "")}]}]}
    text = _get(b.admin_url + "/metrics").decode()
    assert 'kafkalite_schema_registry_operations_total{operation="register"} 1.0' in text
    assert 'kafkalite_schema_registry_operations_total{operation="lookup"} 1.0' in text
    page = _get(b.admin_url + "/").decode()
    assert 'data-view="schemas"' in page


def test_console_says_when_the_registry_is_off(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(admin=True)
    assert json.loads(_get(b.admin_url + "/api/v1/schemas")) == {"enabled": False,
                                                                "subjects": []}
    assert b"schema_registry" not in _get(b.admin_url + "/metrics")
