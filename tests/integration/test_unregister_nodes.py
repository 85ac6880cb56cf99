"""UnregisterBroker and UnregisterController through Kafka 4.4's own ``kafka-cluster`` tool
(``ClusterTool``) against a three-node kafkalite, with the brokers a client sees read by
confluent-kafka's AdminClient."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from confluent_kafka.admin import AdminClient

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_tool, tools_log_config

CLUSTER = "org.apache.kafka.tools.ClusterTool"


def brokers(bootstrap: str) -> set[int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return set(admin.list_topics(timeout=10).brokers)


def test_unregister_a_stopped_broker_until_it_starts(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    broker = make_broker(nodes=3)
    b = broker.bootstrap
    log = tools_log_config(tmp_path)

    def tool(*args: str, check: bool = True) -> tuple[int, str]:
        out = run_tool(CLUSTER, *args, "--bootstrap-server", b, log_config=log, check=check)
        return out.returncode, out.stdout + out.stderr

    assert brokers(b) == {1, 2, 3}
    code, text = tool("unregister", "--id", "9", check=False)
    assert code != 0 and "BrokerIdNotRegisteredException" in text, text

    # A running broker registers again at once: it stays listed.
    assert tool("unregister", "--id", "2")[0] == 0
    assert brokers(b) == {1, 2, 3}

    broker.stop_node(3)
    # Stopped, its registration kept: kafkalite still lists it (docs/compatibility.md).
    assert brokers(b) == {1, 2, 3}
    assert tool("unregister", "--id", "3")[0] == 0
    assert brokers(b) == {1, 2}
    code, text = tool("unregister", "--id", "3", check=False)
    assert code != 0 and "BrokerIdNotRegisteredException" in text, text

    broker.start_node(3)
    assert brokers(b) == {1, 2, 3}

    # Each node is the one voter of its quorum; no other controller is registered.
    code, text = tool("unregister-controller", "--id", "7", check=False)
    assert code != 0 and "not currently registered" in text, text
    code, text = tool("unregister-controller", "--id", "1", check=False)
    assert code != 0 and "InvalidRequestException" in text, text
