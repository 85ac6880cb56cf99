"""Metadata v0-v12 semantics, over a raw socket with kio's codecs."""

from __future__ import annotations

import socket
import struct
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.headers import encode_request_header, parse_response_header

METADATA = 3


class RawClient:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.corr = 0

    def call(self, api_key: int, version: int, **fields: Any) -> Any:
        c = codecs.codec(api_key, version)
        req = build(c.request_type, **fields)
        self.corr += 1
        payload = encode_request_header(api_key, version, self.corr, "raw", c.request_flexible)
        payload += codecs.encode_request(req)
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._recv(4))[0]
        frame = self._recv(size)
        corr, offset = parse_response_header(frame, c.response_header_flexible)
        assert corr == self.corr
        return codecs.decode_response(api_key, version, frame, offset)

    def _recv(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            assert chunk, "connection closed"
            out += chunk
        return out

    def metadata(self, version: int, names: list[str] | None, **kw: Any) -> Any:
        topic_t = nested(codecs.codec(METADATA, version).request_type, "MetadataRequestTopic")
        topics = None if names is None else tuple(build(topic_t, name=n, topic_id=None)
                                                  for n in names)
        defaults = {"allow_auto_topic_creation": True,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False}
        return self.call(METADATA, version, topics=topics, **{**defaults, **kw})


@pytest.fixture
def raw(broker: BrokerThread) -> RawClient:
    assert broker.broker is not None
    for name, n in (("a", 2), ("b", 1)):
        broker.call(lambda name=name, n=n: broker.broker.create_topic(name, n))  # type: ignore
    c = RawClient(broker.port)
    yield c
    c.sock.close()


def names(resp: Any) -> set[str]:
    return {t.name for t in resp.topics}


@pytest.mark.parametrize("version", range(0, 13))
def test_every_version_lists_brokers_and_topics(raw: RawClient, broker: BrokerThread,
                                                version: int) -> None:
    # v0 has no null list: an empty one means all topics.
    resp = raw.metadata(version, [] if version == 0 else None)
    assert {"a", "b"} <= names(resp)
    (b,) = resp.brokers
    assert (b.node_id, b.host, b.port) == (1, "127.0.0.1", broker.port)
    a = next(t for t in resp.topics if t.name == "a")
    assert a.error_code == ErrorCode.none
    assert [(p.partition_index, p.leader_id, tuple(p.replica_nodes)) for p in a.partitions] == [
        (0, 1, (1,)), (1, 1, (1,))]
    if version >= 1:
        assert resp.controller_id == 1
    if version >= 2:
        assert broker.broker is not None and resp.cluster_id == broker.broker.cluster_id
    if version >= 10:
        assert a.topic_id == broker.call(lambda: broker.broker.topics.get("a").topic_id)  # type: ignore


def test_empty_list_means_no_topics_from_v1(raw: RawClient) -> None:
    assert raw.metadata(1, []).topics == ()
    assert raw.metadata(9, ["a"]).topics[0].name == "a"


def test_auto_creation(raw: RawClient, make_broker: Callable[..., BrokerThread]) -> None:
    resp = raw.metadata(9, ["fresh"], allow_auto_topic_creation=True)
    (t,) = resp.topics
    assert t.error_code == ErrorCode.none and len(t.partitions) == 1
    resp = raw.metadata(9, ["not-wanted"], allow_auto_topic_creation=False)
    assert resp.topics[0].error_code == ErrorCode.unknown_topic_or_partition
    assert raw.metadata(9, ["bad name"]).topics[0].error_code == (
        ErrorCode.invalid_topic_exception)

    off = make_broker({"auto.create.topics.enable": "false"})
    c = RawClient(off.port)
    resp = c.metadata(9, ["fresh"], allow_auto_topic_creation=True)
    assert resp.topics[0].error_code == ErrorCode.unknown_topic_or_partition
    # Before v4 a request always asks for creation; the broker setting still decides.
    assert c.metadata(3, ["fresh"]).topics[0].error_code == ErrorCode.unknown_topic_or_partition
    c.sock.close()


def test_topic_ids_v12(raw: RawClient, broker: BrokerThread) -> None:
    assert broker.broker is not None
    tid = broker.call(lambda: broker.broker.topics.get("a").topic_id)  # type: ignore[union-attr]
    topic_t = nested(codecs.codec(METADATA, 12).request_type, "MetadataRequestTopic")
    resp = raw.call(METADATA, 12, topics=(build(topic_t, name=None, topic_id=tid),),
                    allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    (t,) = resp.topics
    assert (t.name, t.topic_id, t.error_code) == ("a", tid, ErrorCode.none)
    unknown = uuid.uuid4()
    resp = raw.call(METADATA, 12, topics=(build(topic_t, name=None, topic_id=unknown),),
                    allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    assert resp.topics[0].error_code == ErrorCode.unknown_topic_id


def test_internal_flag_and_authorized_operations(raw: RawClient, broker: BrokerThread) -> None:
    assert broker.broker is not None
    broker.call(lambda: broker.broker.topics.get("__consumer_offsets")  # type: ignore
                or broker.broker.create_topic("__consumer_offsets", 1, internal=True))  # type: ignore
    resp = raw.metadata(8, None, allow_auto_topic_creation=False,
                        include_topic_authorized_operations=True,
                        include_cluster_authorized_operations=True)
    by_name = {t.name: t for t in resp.topics}
    assert by_name["__consumer_offsets"].is_internal
    assert not by_name["a"].is_internal
    # READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
    expected = sum(1 << b for b in (3, 4, 5, 6, 7, 8, 10, 11))
    assert by_name["a"].topic_authorized_operations == expected
    assert resp.cluster_authorized_operations > 0
