"""A keystore of each node's own in a three-node process with an SSL listener: node 2's
own dynamic level (``listener.name.ssl.ssl.keystore.location`` set for broker 2 by
confluent-kafka's AdminClient, as ``kafka-configs --entity-name 2`` sets it) reaches node
2's listener alone, new connections to node 2 get its certificate and clients trusting
the new CA reach node 2; nodes 1 and 3 keep theirs, across a restart too."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from kafkalite.broker.security.certs import make_certs
from kafkalite.broker.security.fixture import SecuritySetup
from kafkalite.broker.testing.fixtures import BrokerThread

KEY = "listener.name.ssl.ssl.keystore.location"


def certificate(address: str) -> bytes:
    host, port = address.rsplit(":", 1)
    return ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate((host, int(port))))


def set_keystore(admin: AdminClient, node: str, value: str) -> None:
    res = ConfigResource("broker", node, incremental_configs=[
        ConfigEntry(KEY, value, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(15)


def test_a_node_takes_a_keystore_of_its_own(make_broker: Callable[..., BrokerThread],
                                            tmp_path: Path) -> None:
    broker = make_broker(security=SecuritySetup("SSL"), nodes=3)
    before = {i: certificate(a) for i, a in enumerate(broker.bootstraps, 1)}
    conf = broker.client().librdkafka()
    admin = AdminClient({**conf, "bootstrap.servers": ",".join(broker.bootstraps)})

    # A keystore node 2 cannot load is refused, and nothing changes.
    with pytest.raises(KafkaException, match="Invalid dynamic configuration"):
        set_keystore(admin, "2", str(tmp_path / "nope.pem"))
    assert {i: certificate(a) for i, a in enumerate(broker.bootstraps, 1)} == before

    rotated = make_certs(tmp_path / "rotated")
    set_keystore(admin, "2", str(rotated.broker_keystore))
    after = {i: certificate(a) for i, a in enumerate(broker.bootstraps, 1)}
    assert after[1] == before[1] and after[3] == before[3]
    assert after[2] != before[2]
    new_cert = rotated.broker_cert.read_text().split("-----END CERTIFICATE-----")[0]
    assert after[2] == ssl.PEM_cert_to_DER_cert(new_cert + "-----END CERTIFICATE-----\n")

    # A client trusting only the new CA reaches node 2 (and not node 1).
    fresh = {**conf, "ssl.ca.location": str(rotated.ca)}
    meta = AdminClient({**fresh, "bootstrap.servers": broker.bootstraps[1]}).list_topics(
        timeout=10)
    assert sorted(meta.brokers) == [1, 2, 3]
    with pytest.raises(KafkaException):
        AdminClient({**fresh, "bootstrap.servers": broker.bootstraps[0]}).list_topics(
            timeout=3)

    broker.restart()
    again = {i: certificate(a) for i, a in enumerate(broker.bootstraps, 1)}
    assert again == after
