"""Bad input to the registry's REST API over HTTP: Confluent's error codes with a 4xx,
never a 500, and nothing written to ``_schemas``."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread

CT = "application/vnd.schemaregistry.v1+json"


def call(url: str, method: str = "GET", body: bytes | None = None
         ) -> tuple[int, Any, str]:
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Content-Type": CT} if body is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null"), r.headers["Content-Type"]
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null"), e.headers["Content-Type"]


def schemas_end(broker: BrokerThread) -> int:
    def end() -> int:
        plog = broker.inner.logs.get("_schemas", 0)
        return plog.log_end_offset if plog is not None else 0
    return broker.call(end)


DEEP = '{"type":"object","properties":{"a":' * 2000 + "{}" + "}}" * 2000
GOOD = json.dumps({"schema": json.dumps({"type": "record", "name": "R", "fields": [
    {"name": "a", "type": "int"}]})}).encode()


@pytest.mark.parametrize("path,method,body,status,code", [
    ("/subjects/s/versions", "POST", b"{not json", 400, 400),
    ("/subjects/s/versions", "POST", b"[1,2]", 422, 422),
    ("/subjects/s/versions", "POST", json.dumps({"schema": "{\"type\":\"nope\"}"}).encode(),
     422, 42201),
    ("/subjects/s/versions", "POST", json.dumps({"schema": "not json"}).encode(), 422, 42201),
    ("/subjects/s/versions", "POST", json.dumps({"schema": "{}", "schemaType": "XML"}).encode(),
     422, 42201),
    ("/subjects/s/versions", "POST", json.dumps({"schema": 5}).encode(), 422, 422),
    ("/subjects/s/versions", "POST", json.dumps({"schema": "{\"type\":\"string\"}",
                                                 "references": [{"name": "x", "subject": "nope",
                                                                 "version": 1}]}).encode(),
     422, 42201),
    ("/subjects/s/versions", "POST", json.dumps({"schema": "{\"type\": 3}",
                                                 "schemaType": "JSON"}).encode(), 422, 42201),
    ("/subjects/s/versions", "POST", json.dumps({"schema": "message {",
                                                 "schemaType": "PROTOBUF"}).encode(),
     422, 42201),
    ("/subjects/s/versions/0", "GET", None, 422, 42202),
    ("/subjects/s/versions/2147483648", "GET", None, 422, 42202),
    ("/subjects/s/versions/abc", "GET", None, 422, 42202),
    ("/subjects/t/versions/1", "GET", None, 404, 40401),
    ("/subjects/s/versions/7", "GET", None, 404, 40402),
    ("/schemas/ids/999", "GET", None, 404, 40403),
    ("/config", "PUT", json.dumps({"compatibility": "SIDEWAYS"}).encode(), 422, 42203),
    ("/mode", "PUT", json.dumps({"mode": "WRONG"}).encode(), 422, 42204),
    ("/config/nosuch", "GET", None, 404, 40408),
    ("/mode/nosuch", "GET", None, 404, 40409),
    ("/subjects/s/versions", "POST", b"x" * (5 * 1024 * 1024), 413, 413),
    ("/subjects/s/versions", "POST", b"[" * 100_000, 400, 400),
    ("/subjects/s/versions", "POST", json.dumps({"schemaType": "JSON", "schema": DEEP}).encode(),
     422, 42201),
    ("/no/such/endpoint", "GET", None, 404, 404),
])
def test_refused_with_confluent_codes(kafkalite_registry_broker: BrokerThread, path: str,
                                      method: str, body: bytes | None, status: int,
                                      code: int) -> None:
    url = kafkalite_registry_broker.schema_registry_url
    assert call(url + "/subjects/s/versions", "POST", GOOD)[0] == 200
    before = schemas_end(kafkalite_registry_broker)
    got, payload, ctype = call(url + path, method, body)
    assert (got, payload["error_code"]) == (status, code), payload
    assert isinstance(payload["message"], str) and payload["message"]
    assert ctype.startswith(CT)
    assert schemas_end(kafkalite_registry_broker) == before


def test_mode_readonly_and_import(kafkalite_registry_broker: BrokerThread) -> None:
    url = kafkalite_registry_broker.schema_registry_url
    assert call(url + "/subjects/s/versions", "POST", GOOD)[0] == 200
    assert call(url + "/mode", "PUT", json.dumps({"mode": "IMPORT"}).encode())[1][
        "error_code"] == 42205
    assert call(url + "/mode/s", "PUT", json.dumps({"mode": "READONLY"}).encode())[:2] == (
        200, {"mode": "READONLY"})
    status, body, _ = call(url + "/subjects/s/versions", "POST", json.dumps(
        {"schema": "{\"type\":\"string\"}"}).encode())
    assert (status, body["error_code"]) == (422, 42205)
    assert call(url + "/mode/s?defaultToGlobal=true")[1] == {"mode": "READONLY"}
    assert call(url + "/mode/s", "DELETE")[1] == {"mode": "READONLY"}
    # IMPORT on an empty subject: the id and version given are kept.
    assert call(url + "/mode/imp", "PUT", json.dumps({"mode": "IMPORT"}).encode())[0] == 200
    status, body, _ = call(url + "/subjects/imp/versions", "POST", json.dumps(
        {"schema": "{\"type\":\"string\"}", "id": 77, "version": 5}).encode())
    assert (status, body) == (200, {"id": 77})
    assert call(url + "/subjects/imp/versions")[1] == [5]
    assert call(url + "/schemas/ids/77")[1] == {"schema": "{\"type\":\"string\"}"}


def test_verbose_compatibility_and_config(kafkalite_registry_broker: BrokerThread) -> None:
    url = kafkalite_registry_broker.schema_registry_url
    call(url + "/subjects/s/versions", "POST", GOOD)
    bad = json.dumps({"schema": json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": "int"}]})}).encode()
    status, body, _ = call(url + "/compatibility/subjects/s/versions/latest?verbose=true",
                           "POST", bad)
    assert status == 200 and body["is_compatible"] is False
    assert any("READER_FIELD_MISSING_DEFAULT_VALUE" in m for m in body["messages"])
    assert call(url + "/config")[1] == {"compatibilityLevel": "BACKWARD"}
    assert call(url + "/config/s?defaultToGlobal=true")[1] == {"compatibilityLevel": "BACKWARD"}
    assert call(url + "/config/s", "PUT", json.dumps({"compatibility": "none"}).encode())[1] == {
        "compatibility": "NONE"}
    assert call(url + "/compatibility/subjects/s/versions/1", "POST", bad)[1] == {
        "is_compatible": True}
    assert call(url + "/config/s", "DELETE")[1] == {"compatibilityLevel": "NONE"}
    assert call(url + "/schemas/types")[1] == ["JSON", "PROTOBUF", "AVRO"]
    assert call(url + "/schemas/ids/1/versions")[1] == [{"subject": "s", "version": 1}]
    assert call(url + "/schemas/ids/1/subjects")[1] == ["s"]
