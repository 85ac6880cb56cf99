"""UnregisterBroker and UnregisterController through Kafka 4.4's own ``kafka-cluster`` tool
(``ClusterTool``) against a three-node kafkalite, with the brokers a client sees read by
confluent-kafka's AdminClient (Metadata) and ``kafka-cluster list-endpoints`` (DescribeCluster
v2, fenced brokers included on request). A stopped node is fenced as Kafka's controller
fences it: at once after a controlled stop, after broker.session.timeout.ms after a crash."""

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


def endpoints(text: str) -> dict[int, str]:
    """``list-endpoints``'s table: node id -> its STATE column (fenced / unfenced)."""
    rows = [line.split() for line in text.splitlines()[1:] if line.strip()]
    header = text.splitlines()[0].split()
    state = header.index("STATE")
    return {int(r[0]): r[state] for r in rows}


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

    assert endpoints(tool("list-endpoints", "--include-fenced-brokers")[1]) == {
        1: "unfenced", 2: "unfenced", 3: "unfenced"}
    broker.stop_node(3)
    # A controlled stop ends fenced: registered, left out of Metadata and DescribeCluster
    # unless fenced brokers are asked for.
    assert brokers(b) == {1, 2}
    assert endpoints(tool("list-endpoints")[1]) == {1: "unfenced", 2: "unfenced"}
    assert endpoints(tool("list-endpoints", "--include-fenced-brokers")[1]) == {
        1: "unfenced", 2: "unfenced", 3: "fenced"}
    assert tool("unregister", "--id", "3")[0] == 0
    assert brokers(b) == {1, 2}
    assert endpoints(tool("list-endpoints", "--include-fenced-brokers")[1]) == {
        1: "unfenced", 2: "unfenced"}
    code, text = tool("unregister", "--id", "3", check=False)
    assert code != 0 and "BrokerIdNotRegisteredException" in text, text

    broker.start_node(3)
    assert brokers(b) == {1, 2, 3}

    # Each node is the one voter of its quorum; no other controller is registered.
    code, text = tool("unregister-controller", "--id", "7", check=False)
    assert code != 0 and "not currently registered" in text, text
    code, text = tool("unregister-controller", "--id", "1", check=False)
    assert code != 0 and "InvalidRequestException" in text, text


def test_a_crashed_broker_is_fenced_after_the_session_timeout(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    broker = make_broker({"broker.session.timeout.ms": "9000"}, nodes=3, manual_clock=True)
    b = broker.bootstrap
    log = tools_log_config(tmp_path)

    def listed() -> dict[int, str]:
        out = run_tool(CLUSTER, "list-endpoints", "--include-fenced-brokers",
                       "--bootstrap-server", b, log_config=log)
        return endpoints(out.stdout)

    broker.stop_node(2, controlled=False)
    # Unfenced until the controller misses its heartbeats for the session timeout.
    assert brokers(b) == {1, 2, 3}
    assert listed() == {1: "unfenced", 2: "unfenced", 3: "unfenced"}
    broker.advance(10000)
    assert brokers(b) == {1, 3}
    assert listed() == {1: "unfenced", 2: "fenced", 3: "unfenced"}
    broker.start_node(2)
    assert brokers(b) == {1, 2, 3}
    assert listed() == {1: "unfenced", 2: "unfenced", 3: "unfenced"}


def test_unregistering_a_crashed_leader_moves_its_leadership_at_once(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    """Kafka's controller moves a removed registration's leaderships and ISR places as it
    removes it; the session timeout (on the manual clock, not moved here) is not waited."""
    from confluent_kafka.admin import NewTopic

    broker = make_broker({"broker.session.timeout.ms": "9000"}, nodes=3, manual_clock=True)
    b = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": b})
    admin.create_topics([NewTopic("unreg", 1, replication_factor=3)])["unreg"].result(15)
    leader, _replicas, isr = broker.partition_state("unreg", 0)
    assert len(isr) == 3
    broker.stop_node(leader, controlled=False)
    assert broker.partition_state("unreg", 0)[0] == leader  # a crash: not yet fenced
    other = next(a for i, a in enumerate(broker.bootstraps, 1) if i != leader)
    run_tool(CLUSTER, "unregister", "--id", str(leader), "--bootstrap-server", other,
             log_config=tools_log_config(tmp_path))
    new_leader, _replicas, new_isr = broker.partition_state("unreg", 0)
    assert new_leader not in (leader, -1) and leader not in new_isr
    assert brokers(other) == {1, 2, 3} - {leader}
