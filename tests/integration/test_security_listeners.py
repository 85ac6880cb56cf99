"""Listener security as Kafka reads it, with real clients: per-listener overrides
(``listener.name.<l>.<property>`` and the mechanism-prefixed JAAS form), a custom name
mapped to SASL_SSL beside a PLAINTEXT listener, the broker-wide ``ssl.client.auth``
left to SSL listeners, and ``ssl.enabled.protocols`` / ``ssl.cipher.suites`` holding on
real TLS connections."""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalite.broker.security.certs import broker_properties, make_certs
from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol.apis import codec, decode_response, encode_request
from kafkalite.protocol.build import build
from kafkalite.protocol.headers import encode_request_header, parse_response_header

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-secret";')


def test_custom_sasl_ssl_listener_beside_plaintext(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    b = make_broker({
        "listeners": "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL",
        **broker_properties(certs, "SECURE"),  # listener.name.secure.ssl.keystore.* (inline PEM)
        "listener.name.secure.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.secure.plain.sasl.jaas.config": PLAIN_JAAS,
        # Broker-wide: SSL listeners only (KIP-684), so SECURE asks for no certificate.
        "ssl.client.auth": "required",
    })
    assert b.broker is not None
    ports = {lst.name: lst.port for lst in b.broker.listeners}
    secure = {"bootstrap.servers": f"127.0.0.1:{ports['SECURE']}",
              "security.protocol": "SASL_SSL", "ssl.ca.location": str(certs.ca),
              "sasl.mechanisms": "PLAIN", "sasl.username": "alice",
              "sasl.password": "alice-secret"}
    p = Producer(secure)
    p.produce("over-secure", b"v")
    assert p.flush(20) == 0
    # The PLAINTEXT listener serves the same data, without authentication, and each
    # listener advertises itself.
    plain = {"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"}
    md = AdminClient(plain).list_topics(timeout=10)
    assert "over-secure" in md.topics
    assert [x.port for x in md.brokers.values()] == [ports["PLAINTEXT"]]
    c = Consumer({**plain, "group.id": "g"})
    low, high = c.get_watermark_offsets(TopicPartition("over-secure", 0), timeout=10)
    c.close()
    assert (low, high) == (0, 1)
    # SCRAM is not enabled on SECURE: the handshake is refused.
    assert "SCRAM-SHA-256" in client_error({**secure, "sasl.mechanisms": "SCRAM-SHA-256"},
                                           KafkaError._AUTHENTICATION)
    assert "Invalid username or password" in client_error({**secure, "sasl.password": "wrong"},
                                                          KafkaError._AUTHENTICATION)


def client_error(conf: dict[str, object], code: int) -> str:
    """The error librdkafka reports for ``conf`` (at once, through its error callback,
    rather than after a request times out)."""
    errors: list[KafkaError] = []
    p = Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        p.poll(0.1)
        found = [e for e in errors if e.code() == code]
        if found:
            return str(found[0].str())
    raise AssertionError(f"no error {code}, only {errors}")


_LEN = struct.Struct(">i")


def _api_versions(sock: ssl.SSLSocket) -> int:
    c = codec(18, 0)
    body = encode_request_header(18, 0, 7, "tls", c.request_flexible) + \
        encode_request(build(c.request_type))
    sock.sendall(_LEN.pack(len(body)) + body)
    data = b""
    while len(data) < 4 or len(data) < 4 + _LEN.unpack_from(data)[0]:
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        data += chunk
    data = data[4:]
    _corr, off = parse_response_header(data, False)
    return int(decode_response(18, 0, data, off).error_code)


def test_enabled_protocols_and_cipher_suites(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    allowed = "ECDHE-ECDSA-AES256-GCM-SHA384"
    b = make_broker({
        "listeners": "SSL://127.0.0.1:0,MODERN://127.0.0.1:0",
        "listener.security.protocol.map": "SSL:SSL,MODERN:SSL",
        **broker_properties(certs, "SSL"),
        **broker_properties(certs, "MODERN"),
        # SSL: TLS 1.2 and 1.3 enabled (the default), one TLS 1.2 suite, so (as with
        # Java) TLS 1.3 is out. MODERN: TLS 1.3 only.
        "listener.name.ssl.ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "listener.name.modern.ssl.enabled.protocols": "TLSv1.3",
    })
    assert b.broker is not None
    ports = {lst.name: lst.port for lst in b.broker.listeners}

    def client(low: ssl.TLSVersion, high: ssl.TLSVersion, ciphers: str | None = None
               ) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(certs.ca))
        ctx.minimum_version, ctx.maximum_version = low, high
        if ciphers:
            ctx.set_ciphers(ciphers)
        return ctx

    def connect(ctx: ssl.SSLContext, listener: str = "SSL") -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", ports[listener]), 10)
        return ctx.wrap_socket(raw, server_hostname="localhost")

    v12, v13 = ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3
    with connect(client(v12, v13)) as s:  # offered 1.2 and 1.3: the broker picks 1.2
        assert s.version() == "TLSv1.2" and s.cipher()[0] == allowed
        assert _api_versions(s) == 0
    with pytest.raises(ssl.SSLError):
        connect(client(v13, v13)).close()
    with pytest.raises(ssl.SSLError):
        connect(client(v12, v12, "ECDHE-ECDSA-AES128-GCM-SHA256")).close()
    with connect(client(v12, v13), "MODERN") as s:
        assert s.version() == "TLSv1.3" and _api_versions(s) == 0
    with pytest.raises(ssl.SSLError):
        connect(client(v12, v12), "MODERN").close()
    # A real client with its own suite list: refused, then served with the allowed one.
    conf = {"bootstrap.servers": f"127.0.0.1:{ports['SSL']}", "security.protocol": "SSL",
            "ssl.ca.location": str(certs.ca)}
    refused = client_error({**conf, "ssl.cipher.suites": "ECDHE-ECDSA-AES128-GCM-SHA256"},
                           KafkaError._SSL)
    assert "handshake failed" in refused
    md = AdminClient({**conf, "ssl.cipher.suites": allowed}).list_topics(timeout=10)
    assert list(md.brokers) == [1]
