"""A confluent-kafka (librdkafka) consumer with ``group.protocol=consumer`` that changes its
subscription quickly, against a fresh ``kafkalite serve``: it subscribes to a sliding
window of five topics at every step, unsubscribes right after every seventh subscribe,
and at every fifth step polls until its assignment is the window's partitions (or empty
after an unsubscribe).

librdkafka (2.15, 2.16) can stop in this sequence against Apache Kafka 4.4 as well: when
the application unsubscribes while a revocation the coordinator sent for its previous
subscription change still waits for the application's poll, the unsubscribe's rejoin is
consumed by that revocation's follow-up assignment; the client leaves (epoch -1) from its
steady state and, once the leave is answered, never applies the subscription it was given
meanwhile: it sends nothing more (or, if the application subscribes again after the leave
was answered, a join at epoch 0 without a rebalance timeout, which Kafka and kafkalite
answer INVALID_REQUEST, fatal to the client). Whether the revocation comes before the
unsubscribe is timing alone (kafkalite answers in about a millisecond, Kafka 4.4 in two to
ten). So the test tells the client's stop apart from a coordinator fault, from both sides:
the client holds nothing, has no request in flight to the coordinator and sends none for
several heartbeat intervals, and the coordinator holds no member for the group (the leave
was honoured); the application then does what it must with such a client (a new consumer
in the same group) and every check must still be met.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerProcess

WINDOW, STEPS, PARTITIONS = 5, 20, 4
UNSUBSCRIBE_EVERY, CHECK_EVERY = 7, 5
HEARTBEAT_MS = 500
#: How long a check waits for the assignment before looking at why it did not come.
CONVERGE_S = 10.0
#: A client that sends nothing for this long (several heartbeat intervals) is stopped.
SILENT_S = 4 * HEARTBEAT_MS / 1000

TP = tuple[str, int]


class Client:
    """One consumer and what it reports about itself (statistics, errors)."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self._lock = threading.Lock()
        self.stats: dict[str, Any] = {}
        self.fatal: list[KafkaError] = []
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "statistics.interval.ms": 100,
            "stats_cb": self._on_stats, "error_cb": self._on_error})

    def _on_stats(self, raw: str) -> None:
        with self._lock:
            self.stats = json.loads(raw)

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            with self._lock:
                self.fatal.append(err)

    def subscribe(self, topics: list[str]) -> None:
        # Rebalance callbacks, as in the report: librdkafka then hands every assignment
        # change to the application's poll.
        self.consumer.subscribe(topics, on_assign=lambda c, p: None,
                                on_revoke=lambda c, p: None)

    def assignment(self) -> set[TP]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def poll_until(self, expected: set[TP], seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.consumer.poll(0.05)
            if not self.fatal and self.assignment() == expected:
                return True
        return False

    def coordinator(self) -> dict[str, Any]:
        with self._lock:
            stats = self.stats
        found: dict[str, Any] = stats.get("brokers", {}).get("GroupCoordinator", {})
        return {"cgrp": stats.get("cgrp", {}), "tx": found.get("tx"),
                "waitresp": found.get("waitresp_cnt"), "outbuf": found.get("outbuf_cnt")}

    def stopped(self) -> str | None:
        """Why the client stopped, if it did in one of librdkafka's two ways; None if it
        is still talking to the coordinator or holds partitions."""
        if self.fatal:
            err = self.fatal[0]
            if err.code() == KafkaError.INVALID_REQUEST and "ConsumerGroupHeartbeat" in err.str():
                return f"fatal: {err.str()}"
            return None
        before = self.coordinator()
        deadline = time.monotonic() + SILENT_S
        while time.monotonic() < deadline:
            self.consumer.poll(0.05)
        after = self.coordinator()
        silent = (before["tx"] is not None and before["tx"] == after["tx"]
                  and after["waitresp"] == 0 and after["outbuf"] == 0)
        cgrp = after["cgrp"]
        if silent and cgrp.get("join_state") == "steady" and cgrp.get("assignment_size") == 0 \
                and not self.assignment():
            return f"silent: {after}"
        return None

    def close(self) -> None:
        self.consumer.close()


def members(admin: AdminClient, group: str) -> int:
    desc = admin.describe_consumer_groups([group])[group].result(10)
    return len(desc.members)


def test_subscription_changes_in_quick_succession(tmp_path: Path) -> None:
    overrides = {"group.consumer.min.heartbeat.interval.ms": str(HEARTBEAT_MS),
                 "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS)}
    with BrokerProcess(tmp_path / "data", overrides) as proc:
        prefix = f"rs-{uuid.uuid4().hex[:6]}"
        names = [f"{prefix}-{i}" for i in range(STEPS + WINDOW - 1)]
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        for f in admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names]).values():
            f.result(30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            md = admin.list_topics(timeout=10).topics
            if all(n in md and len(md[n].partitions) == PARTITIONS for n in names):
                break
            time.sleep(0.1)
        group = f"g-{prefix}"
        client = Client(proc.bootstrap, group)
        stops: list[str] = []
        try:
            latest: list[str] = []
            for i in range(STEPS):
                latest = names[i:i + WINDOW]
                client.subscribe(latest)
                if (i + 1) % UNSUBSCRIBE_EVERY == 0:
                    client.consumer.unsubscribe()
                    latest = []
                if (i + 1) % CHECK_EVERY:
                    continue
                expected = {(t, p) for t in latest for p in range(PARTITIONS)}
                if client.poll_until(expected, CONVERGE_S):
                    continue
                why = client.stopped()
                assert why is not None, (
                    f"step {i}: assignment {sorted(client.assignment())} is not the "
                    f"subscription's {len(expected)} partitions, and the client is "
                    f"still working: {client.coordinator()}")
                # The coordinator honoured the leave: nothing is held for the client.
                assert members(admin, group) == 0, f"step {i}: {why}"
                stops.append(f"step {i}: {why}")
                client.close()
                client = Client(proc.bootstrap, group)
                if latest:
                    client.subscribe(latest)
                assert client.poll_until(expected, CONVERGE_S), (
                    f"step {i}: a new consumer in the group did not get "
                    f"{len(expected)} partitions: {sorted(client.assignment())}")
            # The last window's partitions, and the group holds just this member.
            assert client.assignment() == {(t, p) for t in latest for p in range(PARTITIONS)}
            assert members(admin, group) == (1 if latest else 0), stops
            print(f"librdkafka stops: {len(stops)}", *stops, sep="\n  ")
        finally:
            client.close()
            del admin  # its connections go before the broker does
