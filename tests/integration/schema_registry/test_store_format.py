"""``_schemas`` holds Confluent's keys and values, and random request bodies never get a
500 or a write."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol.records import iter_records

from .test_rest_bad_input import call, schemas_end

AVRO = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})


def _records(broker: BrokerThread) -> list[tuple[Any, Any]]:
    def read() -> list[tuple[Any, Any]]:
        plog = broker.inner.logs.get("_schemas", 0)
        assert plog is not None
        out = []
        for batch in plog.iter_batches(0):
            for _h, r in iter_records(batch):
                out.append((json.loads(r.key or b"null"),
                            json.loads(r.value) if r.value is not None else None))
        return out
    return broker.call(read)


def test_schemas_topic_holds_confluents_records(kafkalite_registry_broker: BrokerThread) -> None:
    b = kafkalite_registry_broker
    url = b.schema_registry_url
    call(url + "/subjects/s/versions", "POST", json.dumps({"schema": AVRO}).encode())
    call(url + "/subjects/j/versions", "POST", json.dumps(
        {"schema": "{\"type\":\"string\"}", "schemaType": "JSON"}).encode())
    call(url + "/config/s", "PUT", json.dumps({"compatibility": "FULL"}).encode())
    call(url + "/mode", "PUT", json.dumps({"mode": "READWRITE"}).encode())
    call(url + "/subjects/j", "DELETE")
    call(url + "/subjects/j?permanent=true", "DELETE")
    info = b.call(lambda: b.inner.topics.get("_schemas"))
    assert info is not None and info.partitions == 1
    assert info.configs == {"cleanup.policy": "compact"}
    assert _records(b) == [
        ({"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1},
         {"subject": "s", "version": 1, "id": 1, "schema": AVRO.replace(" ", ""),
          "deleted": False}),
        ({"keytype": "SCHEMA", "subject": "j", "version": 1, "magic": 1},
         {"subject": "j", "version": 1, "id": 2, "schemaType": "JSON",
          "schema": "{\"type\":\"string\"}", "deleted": False}),
        ({"keytype": "CONFIG", "subject": "s", "magic": 0}, {"compatibilityLevel": "FULL"}),
        ({"keytype": "MODE", "subject": None, "magic": 0}, {"mode": "READWRITE"}),
        ({"keytype": "DELETE_SUBJECT", "subject": "j", "magic": 0},
         {"subject": "j", "version": 1}),
        ({"keytype": "SCHEMA", "subject": "j", "version": 1, "magic": 1}, None),
    ]


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**40) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["schema", "schemaType", "references", "name", "subject", "version",
                         "id", "type", "fields", "compatibility", "mode", "properties"]),
        inner, max_size=5),
    max_leaves=12)
SCHEMA_TEXT = st.one_of(
    st.text(max_size=40),
    st.builds(json.dumps, JSONISH),
    st.sampled_from(['{"type":"record","name":"R","fields":[{"name":"a","type":"nope"}]}',
                     'syntax = "proto3"; message M { string a = 1; }',
                     'message { }', '{"type": {"type": "array"}}', '{"$ref": "#/x"}']))
BODY = st.one_of(
    st.binary(max_size=60),
    st.builds(lambda b: json.dumps(b).encode(), JSONISH),
    st.builds(lambda s, t, r: json.dumps({"schema": s, "schemaType": t,
                                          "references": r}).encode(),
              SCHEMA_TEXT, st.sampled_from(["AVRO", "JSON", "PROTOBUF", "XML", None]),
              st.one_of(st.none(), st.lists(JSONISH, max_size=2))))
PATHS = st.sampled_from([
    ("POST", "/subjects/f/versions"), ("POST", "/subjects/f"),
    ("POST", "/compatibility/subjects/f/versions/latest?verbose=true"),
    ("POST", "/compatibility/subjects/f/versions"), ("PUT", "/config/f"), ("PUT", "/mode/f"),
    ("PUT", "/config"), ("DELETE", "/subjects/f/versions/x"), ("GET", "/schemas/ids/-1")])


def test_random_bodies_never_fail_the_server(kafkalite_registry_broker: BrokerThread) -> None:
    url = kafkalite_registry_broker.schema_registry_url

    @settings(max_examples=300, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(PATHS, BODY)
    def check(path: tuple[str, str], body: bytes) -> None:
        before = schemas_end(kafkalite_registry_broker)
        status, payload, _ = call(url + path[1], path[0], body)
        assert status < 500, (path, body, payload)
        if status >= 400:
            assert isinstance(payload["error_code"], int), payload
            assert schemas_end(kafkalite_registry_broker) == before

    check()
