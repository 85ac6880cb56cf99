"""Producing from the console: a record posted to the admin API is read back by a real
consumer with its key, value and headers; bad input gets a 400 and the broker's ACLs for
the admin listener's principal are applied (Write on the topic)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kafkalite.broker.admin_http import produce as produce_mod
from kafkalite.broker.testing.fixtures import BrokerThread


def _post(b: BrokerThread, topic: str, body: Any) -> dict[str, Any]:
    req = urllib.request.Request(f"{b.admin_url}/api/v1/topics/{topic}/produce",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        out: dict[str, Any] = json.loads(r.read())
        return out


def _topic(b: BrokerThread, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


@pytest.mark.parametrize("durable", ["false", "true"])
def test_produced_record_is_consumed(kafkalite_factory: Callable[..., BrokerThread],
                                     durable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = produce_mod.fsync_and_close

    def counted(fds: list[int]) -> None:
        synced.append(len(fds))
        real(fds)

    monkeypatch.setattr(produce_mod, "fsync_and_close", counted)
    b = kafkalite_factory({"log.durable": durable}, admin=True)
    _topic(b, "typed", 2)
    first = _post(b, "typed", {"partition": 1, "key": "k1", "value": "hello",
                               "headers": {"source": "console"}})
    assert first["partition"] == 1 and first["offset"] == 0
    second = _post(b, "typed", {"partition": 1, "key": None, "value": "again"})
    assert second["offset"] == 1
    # Under log.durable each answer waited for its fsync, as a Produce request's does.
    assert (len(synced) == 2 and all(synced)) if durable == "true" else synced == []
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "reader",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe(["typed"])
        got = []
        for _ in range(100):
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m)
            if len(got) == 2:
                break
    finally:
        c.close()
    assert [(m.partition(), m.offset(), m.key(), m.value()) for m in got] == [
        (1, 0, b"k1", b"hello"), (1, 1, None, b"again")]
    assert got[0].headers() == [("source", b"console")]
    assert got[0].timestamp()[1] == first["timestamp"]


def test_keyed_records_go_where_the_clients_partitioner_puts_them(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(admin=True)
    _topic(b, "keyed", 6)
    # librdkafka's murmur2_random is the Java client's default partitioner for a key.
    p = Producer({"bootstrap.servers": b.bootstrap, "partitioner": "murmur2_random"})
    placed: dict[str, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None
        placed[msg.key().decode()] = msg.partition()

    keys = [f"key-{i}" * (i % 4 + 1) for i in range(40)]  # every tail length of murmur2
    for k in keys:
        p.produce("keyed", key=k.encode(), value=b"v", on_delivery=delivered)
    assert p.flush(10) == 0
    assert len(set(placed.values())) > 1
    assert {k: _post(b, "keyed", {"key": k, "value": "v"})["partition"] for k in keys} \
        == placed
    assert _post(b, "keyed", {"value": "no key"})["partition"] == 0


@pytest.mark.parametrize("body, message", [
    ({"partition": 5, "value": "x"}, "has no partition 5"),
    ({"partition": "0", "value": "x"}, "partition must be an integer"),
    ({"value": 3}, "value must be a string or null"),
    ({"headers": ["a"]}, "headers must be an object"),
])
def test_bad_input_is_refused(kafkalite_factory: Callable[..., BrokerThread],
                              body: dict[str, Any], message: str) -> None:
    b = kafkalite_factory(admin=True)
    _topic(b, "t")
    with pytest.raises(urllib.error.HTTPError) as e:
        _post(b, "t", body)
    assert e.value.code == 400 and message in e.value.read().decode()
    with pytest.raises(urllib.error.HTTPError) as e:
        _post(b, "nope", {"value": "x"})
    assert e.value.code == 404


def test_produce_and_browse_need_write_and_read_for_the_admin_principal(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory({"authorizer.class.name":
                           "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                           "super.users": "User:ANONYMOUS",
                           "admin.principal": "User:console"}, admin=True)
    _topic(b, "guarded")
    with pytest.raises(urllib.error.HTTPError) as e:
        _post(b, "guarded", {"value": "x"})
    assert e.value.code == 403
    assert "User:console is not authorized to Write Topic 'guarded'" in e.value.read().decode()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    binding = AclBinding(ResourceType.TOPIC, "guarded", ResourcePatternType.LITERAL,
                         "User:console", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    admin.create_acls([binding])[binding].result(10)
    assert _post(b, "guarded", {"value": "x"})["offset"] == 0
    # The message browser reads as the same principal: Read on the topic.
    url = f"{b.admin_url}/api/v1/topics/guarded/partitions/0/messages"
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=10)
    assert e.value.code == 403
    assert "User:console is not authorized to Read Topic 'guarded'" in e.value.read().decode()
    read = AclBinding(ResourceType.TOPIC, "guarded", ResourcePatternType.LITERAL,
                      "User:console", "*", AclOperation.READ, AclPermissionType.ALLOW)
    admin.create_acls([read])[read].result(10)
    with urllib.request.urlopen(url, timeout=10) as r:
        [m] = json.loads(r.read())["messages"]
    assert m["value"]["text"] == "x" and m["decoded"] is None


def test_produce_only_where_this_node_leads(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(admin=True, nodes=3)
    _topic(b, "spread", 6)
    with urllib.request.urlopen(f"{b.admin_url}/api/v1/topics/spread", timeout=10) as r:
        parts = json.loads(r.read())["partitions"]
    node = json.loads(urllib.request.urlopen(f"{b.admin_url}/api/v1/cluster",
                                             timeout=10).read())["node_id"]
    led = [p["partition"] for p in parts if p["leader"] == node]
    other = [p for p in parts if p["leader"] != node]
    assert led and other
    assert _post(b, "spread", {"partition": led[0], "value": "here"})["offset"] == 0
    with pytest.raises(urllib.error.HTTPError) as e:
        _post(b, "spread", {"partition": other[0]["partition"], "value": "there"})
    assert e.value.code == 400
    assert f"is led by node {other[0]['leader']}" in e.value.read().decode()
