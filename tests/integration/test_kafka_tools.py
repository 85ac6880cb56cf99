"""Apache Kafka 4.4's command-line tools against kafkalite, run as bin/kafka-*.sh runs them
(``java -cp <Kafka's jars> <main class> ...``), with their printed output checked; the
expected output is what the same commands printed against Kafka 4.4 itself. The tools:
kafka-topics, kafka-configs (topics, brokers, groups), kafka-consumer-groups,
kafka-transactions, kafka-acls, kafka-producer-perf-test and kafka-consumer-perf-test.
Every run is a JVM start, so each test runs a tool's whole story on one broker."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.security.fixture import SecuritySetup
from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_tool, tools_log_config
from .test_security_clients import write_properties

TOPICS = "org.apache.kafka.tools.TopicCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
ACLS = "org.apache.kafka.tools.AclCommand"
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"


def rows(text: str) -> list[list[str]]:
    """The non-empty lines of a tool's table, split on whitespace."""
    return [line.split() for line in text.splitlines() if line.strip()]


def test_topics_and_configs(make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    b = make_broker().bootstrap
    log = tools_log_config(tmp_path)

    def tool(main: str, *args: str) -> str:
        return run_tool(main, "--bootstrap-server", b, *args, log_config=log).stdout

    assert tool(TOPICS, "--create", "--topic", "tools-t", "--partitions", "2",
                "--config", "retention.ms=60000") == "Created topic tools-t.\n"
    assert "tools-t" in tool(TOPICS, "--list").split()
    assert tool(TOPICS, "--alter", "--topic", "tools-t", "--partitions", "4") == ""
    described = tool(TOPICS, "--describe", "--topic", "tools-t").splitlines()
    head = dict(f.split(": ", 1) for f in described[0].split("\t"))
    assert (head["Topic"], head["PartitionCount"], head["ReplicationFactor"],
            head["Configs"]) == ("tools-t", "4", "1", "retention.ms=60000")
    assert len(head["TopicId"]) == 22  # URL-safe base64 of 16 bytes, unpadded
    parts = [dict(f.split(": ", 1) for f in line.strip().split("\t") if ": " in f)
             for line in described[1:]]
    assert [(p["Partition"], p["Leader"], p["Replicas"], p["Isr"]) for p in parts] == [
        (str(i), "1", "1", "1") for i in range(4)]

    # kafka-configs: a topic's dynamic configs, then a broker's.
    assert tool(CONFIGS, "--entity-type", "topics", "--entity-name", "tools-t", "--alter",
                "--add-config", "retention.ms=1000,max.message.bytes=2000000") \
        == "Completed updating config for topic tools-t.\n"
    assert tool(CONFIGS, "--entity-type", "topics", "--entity-name", "tools-t",
                "--describe").splitlines() == [
        "Dynamic configs for topic tools-t are:",
        "  max.message.bytes=2000000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "max.message.bytes=2000000, DEFAULT_CONFIG:message.max.bytes=1048588}",
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}",
    ]
    assert tool(CONFIGS, "--entity-type", "brokers", "--entity-name", "1", "--alter",
                "--add-config", "log.retention.ms=3600000") \
        == "Completed updating config for broker 1.\n"
    assert tool(CONFIGS, "--entity-type", "brokers", "--entity-name", "1",
                "--describe").splitlines() == [
        "Dynamic configs for broker 1 are:",
        "  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "log.retention.ms=3600000, DEFAULT_CONFIG:log.retention.hours=168}",
    ]

    # A group's dynamic configs (KIP-848's group-level session and heartbeat settings):
    # two set, one removed again; the output as Kafka 4.4 prints it.
    assert tool(CONFIGS, "--entity-type", "groups", "--entity-name", "tools-g", "--alter",
                "--add-config", "consumer.session.timeout.ms=50000,"
                "consumer.heartbeat.interval.ms=6000") \
        == "Completed updating config for group tools-g.\n"
    assert tool(CONFIGS, "--entity-type", "groups", "--entity-name", "tools-g", "--alter",
                "--delete-config", "consumer.heartbeat.interval.ms") \
        == "Completed updating config for group tools-g.\n"
    assert tool(CONFIGS, "--entity-type", "groups", "--entity-name", "tools-g",
                "--describe").splitlines() == [
        "Dynamic configs for group tools-g are:",
        "  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "consumer.session.timeout.ms=50000, DEFAULT_CONFIG:"
        "group.consumer.session.timeout.ms=45000}",
    ]

    assert tool(TOPICS, "--delete", "--topic", "tools-t") == ""
    admin = AdminClient({"bootstrap.servers": b})
    deadline = time.monotonic() + 10
    while "tools-t" in admin.list_topics(timeout=5).topics:
        assert time.monotonic() < deadline, "tools-t still listed after --delete"
        time.sleep(0.05)


def test_consumer_groups_and_transactions(make_broker: Callable[..., BrokerThread],
                                          tmp_path: Path) -> None:
    b = make_broker().bootstrap
    log = tools_log_config(tmp_path)

    def tool(main: str, *args: str) -> str:
        return run_tool(main, "--bootstrap-server", b, *args, log_config=log).stdout

    admin = AdminClient({"bootstrap.servers": b})
    admin.create_topics([NewTopic("tools-g", 2, 1)])["tools-g"].result(10)
    # One committed transaction writing 3 records to each of 2 partitions; one left open.
    done = Producer({"bootstrap.servers": b, "transactional.id": "tools-done"})
    done.init_transactions()
    done.begin_transaction()
    for i in range(6):
        done.produce("tools-g", value=b"v", partition=i % 2)
    done.commit_transaction()
    open_ = Producer({"bootstrap.servers": b, "transactional.id": "tools-open",
                      # Long enough that the tools below (a JVM each) end before it expires
                      # on a loaded machine.
                      "transaction.timeout.ms": 600000})
    open_.init_transactions()
    open_.begin_transaction()
    open_.produce("tools-g", value=b"o", partition=0)
    assert open_.flush(10) == 0
    # A group commits offsets 2 on partition 1 and leaves (no members, offsets kept).
    c = Consumer({"bootstrap.servers": b, "group.id": "tools-cg", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("tools-g", 1, 2)], asynchronous=False)
    c.close()

    described = rows(tool(GROUPS, "--describe", "--group", "tools-cg"))
    assert described[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                            "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    # Partition 1's log end is after the commit marker: 3 records and 1 marker.
    assert described[1:] == [["tools-cg", "tools-g", "1", "2", "4", "2", "-", "-", "-"]]
    reset = rows(tool(GROUPS, "--reset-offsets", "--group", "tools-cg", "--topic", "tools-g:1",
                      "--to-latest", "--execute"))
    assert reset == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                     ["tools-cg", "tools-g", "1", "4"]]
    check = Consumer({"bootstrap.servers": b, "group.id": "tools-cg"})
    assert check.committed([TopicPartition("tools-g", 1)], timeout=10)[0].offset == 4
    check.close()
    state = tool(GROUPS, "--describe", "--group", "tools-cg", "--state")
    assert rows(state)[1:] == [["tools-cg", f"{b}", "(1)", "-", "Empty", "0"]], state
    assert tool(GROUPS, "--delete", "--group", "tools-cg").strip() \
        == "Deletion of requested consumer groups ('tools-cg') was successful."

    # kafka-transactions: list, describe the open one, the producers of partition 0.
    listed = rows(tool(TRANSACTIONS, "list"))
    assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    states = {r[0]: r[3] for r in listed[1:]}
    assert states == {"tools-done": "CompleteCommit", "tools-open": "Ongoing"}
    pids = {r[0]: r[2] for r in listed[1:]}
    described = rows(tool(TRANSACTIONS, "describe", "--transactional-id", "tools-open"))
    assert described[0] == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                            "TransactionState", "TransactionTimeoutMs",
                            "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                            "TopicPartitions"]
    [row] = described[1:]
    assert (row[0], row[1], row[2], row[3], row[4], row[5], row[8]) == (
        "1", "tools-open", pids["tools-open"], "0", "Ongoing", "600000", "tools-g-0")
    assert 0 <= int(row[7]) < 600_000
    producers = rows(tool(TRANSACTIONS, "describe-producers", "--topic", "tools-g",
                          "--partition", "0"))
    assert producers[0] == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch",
                            "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"]
    by_pid = {r[0]: r for r in producers[1:]}
    # The committed producer wrote offsets 0-2 (last sequence 2), its marker at 3; the open
    # one's transaction starts at 4.
    assert by_pid[pids["tools-done"]][3] == "2" and by_pid[pids["tools-done"]][5] == "None"
    assert by_pid[pids["tools-open"]][3] == "0" and by_pid[pids["tools-open"]][5] == "4"
    open_.abort_transaction()


def test_perf_tools(make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    b = make_broker().bootstrap
    log = tools_log_config(tmp_path)
    out = run_tool(PRODUCER_PERF, "--topic", "perf", "--num-records", "20000",
                   "--record-size", "100", "--throughput", "-1",
                   "--command-property", f"bootstrap.servers={b}", "acks=all",
                   log_config=log).stdout
    assert re.search(r"^20000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms "
                     r"avg latency, [\d.]+ ms max latency", out, re.M), out
    out = run_tool(CONSUMER_PERF, "--bootstrap-server", b, "--topic", "perf",
                   "--num-records", "20000", "--timeout", "30000", log_config=log).stdout
    header, row = out.strip().splitlines()[-2:]
    fields = dict(zip(header.split(", "), row.split(", "), strict=True))
    assert fields["data.consumed.in.nMsg"] == "20000", out
    assert fields["data.consumed.in.MB"] == "1.9073", out  # 20000 x 100 bytes


ACL_SETUP = SecuritySetup("SASL_PLAINTEXT", mechanisms=("PLAIN",),
                          users={"admin": "admin-secret", "alice": "alice-secret"},
                          authorizer=True)


@pytest.mark.timeout(180)
def test_acls(make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    broker = make_broker(security=ACL_SETUP)
    log = tools_log_config(tmp_path)
    admin = write_properties(tmp_path / "admin.properties", {
        k: v for k, v in broker.client("admin", "PLAIN").java().items()
        if k != "bootstrap.servers"})

    def tool(*args: str) -> str:
        return run_tool(ACLS, "--bootstrap-server", broker.bootstrap, "--command-config",
                        str(admin), *args, log_config=log).stdout

    topic = "ResourcePattern(resourceType=TOPIC, name=acl-t, patternType=LITERAL)"
    group = "ResourcePattern(resourceType=GROUP, name=acl-, patternType=PREFIXED)"
    read = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    describe = "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)"
    added = tool("--add", "--allow-principal", "User:alice", "--operation", "Read",
                 "--operation", "Describe", "--topic", "acl-t")
    assert f"Adding ACLs for resource `{topic}`:" in added
    assert read in added and describe in added
    tool("--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "acl-",
         "--resource-pattern-type", "prefixed")
    listed = tool("--list", "--principal", "User:alice")
    assert listed.startswith("ACLs for principal `User:alice`\n")
    assert f"Current ACLs for resource `{topic}`:" in listed
    assert f"Current ACLs for resource `{group}`:" in listed
    # --remove prints nothing (the confirmation prompt is skipped with --force).
    assert tool("--remove", "--force", "--allow-principal", "User:alice", "--operation",
                "Read", "--topic", "acl-t") == ""
    after = tool("--list", "--topic", "acl-t")
    assert after.splitlines() == [f"Current ACLs for resource `{topic}`:", f"\t{describe}", ""]
