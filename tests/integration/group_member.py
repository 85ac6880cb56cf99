"""One consumer-group member in a child process, for the group integration tests.

Run as ``python group_member.py CLIENT BOOTSTRAP GROUP TOPIC [options]`` with CLIENT one of
``aiokafka``, ``kafka-python`` or ``confluent``. It subscribes to TOPIC and polls until
SIGTERM, then closes the consumer (which sends LeaveGroup, unless it is a static member);
SIGKILL stops it with no LeaveGroup at all. Each time its assignment or its rebalance
callback counts change it prints one JSON line to stdout::

    {"assigned": [0, 1, 2], "assigns": 1, "revokes": 0, "generation": 3}

``generation`` and ``member_id`` are the client's own view where the client exposes
them, else null. An exception the client raises from its poll prints
``{"error": "<exception class>"}``; with ``--exit-on-error`` the member then closes its
consumer, as an application that cannot go on would. The line ``{"closed": true}``
follows a clean close. ``--log-level`` sends the client's own log lines (kafka-python,
aiokafka) to stderr from that level up.

With ``--timeline`` each rebalance callback also prints the moment partitions change
hands, on the wall clock shared by every process of the test: partitions a member gets
are stamped when its callback starts (before it may read them), partitions it gives up
when its callback has released them (before the client tells the coordinator)::

    {"t": 1700000000.123, "event": "assign", "parts": [["topic", 0], ["topic", 1]]}

``--protocol consumer`` runs confluent-kafka with KIP-848's ``group.protocol=consumer``
(``--remote-assignor`` picks the server assignor; its ``assigned`` lines name topics);
a TOPIC starting with ``^`` is a regular-expression subscription.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from typing import Any


class Reporter:
    def __init__(self) -> None:
        self.assigns = 0
        self.revokes = 0
        self.last: Any = None
        self.stop = False

    def report(self, assigned: set[Any], generation: int | None,
               member_id: str | None = None) -> None:
        state = (sorted(assigned), self.assigns, self.revokes, generation, member_id)
        if state != self.last:
            self.last = state
            line = {"assigned": state[0], "assigns": self.assigns, "revokes": self.revokes,
                    "generation": generation, "member_id": member_id}
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()

    def error(self, name: str) -> None:
        sys.stdout.write(json.dumps({"error": name}) + "\n")
        sys.stdout.flush()

    def closed(self) -> None:
        sys.stdout.write('{"closed": true}\n')
        sys.stdout.flush()

    timeline = False

    def event(self, kind: str, parts: Any) -> None:
        """A timeline line (``--timeline``): (topic, partition) pairs changing hands now."""
        if not self.timeline:
            return
        pairs = sorted([tp.topic, tp.partition] for tp in parts)
        sys.stdout.write(json.dumps({"t": time.time(), "event": kind, "parts": pairs}) + "\n")
        sys.stdout.flush()


def run_confluent(a: argparse.Namespace, r: Reporter) -> None:
    from confluent_kafka import Consumer

    conf: dict[str, Any] = {
        "bootstrap.servers": a.bootstrap,
        "group.id": a.group,
        "topic.metadata.refresh.interval.ms": 1000,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    consumer_protocol = a.protocol == "consumer"
    if consumer_protocol:
        # KIP-848: timeouts and assignment are the broker's.
        conf["group.protocol"] = "consumer"
        if a.remote_assignor:
            conf["group.remote.assignor"] = a.remote_assignor
    else:
        conf.update({
            "session.timeout.ms": a.session_ms,
            "heartbeat.interval.ms": a.heartbeat_ms,
            # librdkafka refuses a max.poll.interval.ms below session.timeout.ms.
            "max.poll.interval.ms": max(10000, a.session_ms),
            "partition.assignment.strategy": a.strategy,
        })
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    if a.client_id:
        conf["client.id"] = a.client_id
    c = Consumer(conf)
    incremental = consumer_protocol or a.strategy == "cooperative-sticky"

    def on_assign(consumer: Any, parts: Any) -> None:
        r.assigns += 1
        r.event("assign", parts)
        if r.timeline:
            if incremental:
                consumer.incremental_assign(parts)
            else:
                consumer.assign(parts)

    def on_revoke(consumer: Any, parts: Any) -> None:
        r.revokes += 1
        if r.timeline:
            if incremental:
                consumer.incremental_unassign(parts)
            else:
                consumer.unassign()
        r.event("revoke", parts)

    c.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not r.stop:
        msg = c.poll(0.05)
        if msg is not None and msg.error() is not None:
            # librdkafka hands consumer errors to the application as events.
            r.error(msg.error().name())
        if consumer_protocol:
            # Topic-qualified: a regex subscription spans topics.
            r.report({(tp.topic, tp.partition) for tp in c.assignment()}, None,
                     c.memberid() or None)
        else:
            r.report({tp.partition for tp in c.assignment()}, None, c.memberid() or None)
    c.close()
    r.closed()


def run_kafka_python(a: argparse.Namespace, r: Reporter) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            r.revokes += 1
            r.event("revoke", revoked)

        def on_partitions_assigned(self, assigned: Any) -> None:
            r.assigns += 1
            r.event("assign", assigned)

    assignor = {"range": RangePartitionAssignor,
                "cooperative-sticky": CooperativeStickyAssignor}[a.strategy]
    extra = {"client_id": a.client_id} if a.client_id else {}
    c = KafkaConsumer(
        **extra,
        bootstrap_servers=a.bootstrap, group_id=a.group,
        group_instance_id=a.instance_id or None, partition_assignment_strategy=[assignor],
        session_timeout_ms=a.session_ms, heartbeat_interval_ms=a.heartbeat_ms,
        max_poll_interval_ms=max(10000, a.session_ms), metadata_max_age_ms=1000,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    c.subscribe([a.topic], listener=Listener())
    while not r.stop:
        try:
            c.poll(timeout_ms=50)
        except Exception as e:
            r.error(type(e).__name__)
            if a.exit_on_error:
                break
        generation = c._coordinator._generation
        r.report({tp.partition for tp in c.assignment()},
                 generation.generation_id if generation else None,
                 (generation.member_id or None) if generation else None)
    c.close()
    r.closed()


async def run_aiokafka(a: argparse.Namespace, r: Reporter) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.abc import ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            r.revokes += 1
            r.event("revoke", revoked)

        def on_partitions_assigned(self, assigned: Any) -> None:
            r.assigns += 1
            r.event("assign", assigned)

    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def on_term() -> None:
        r.stop = True
        done.set()

    loop.add_signal_handler(signal.SIGTERM, on_term)
    extra = {"client_id": a.client_id} if a.client_id else {}
    c = AIOKafkaConsumer(
        **extra,
        bootstrap_servers=a.bootstrap, group_id=a.group,
        group_instance_id=a.instance_id or None,
        partition_assignment_strategy=[RangePartitionAssignor],
        session_timeout_ms=a.session_ms, heartbeat_interval_ms=a.heartbeat_ms,
        max_poll_interval_ms=max(10000, a.session_ms), metadata_max_age_ms=1000,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await c.start()
    c.subscribe([a.topic], listener=Listener())
    while not r.stop:
        try:
            await c.getmany(timeout_ms=50)
        except Exception as e:
            r.error(type(e).__name__)
            if a.exit_on_error:
                break
        coordinator = c._coordinator
        r.report({tp.partition for tp in c.assignment()},
                 getattr(coordinator, "generation", None),
                 getattr(coordinator, "member_id", None) or None)
    await c.stop()
    r.closed()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("client", choices=["aiokafka", "kafka-python", "confluent"])
    p.add_argument("bootstrap")
    p.add_argument("group")
    p.add_argument("topic")
    p.add_argument("--strategy", default="range")
    p.add_argument("--instance-id", default="")
    p.add_argument("--session-ms", type=int, default=2000)
    p.add_argument("--heartbeat-ms", type=int, default=200)
    p.add_argument("--client-id", default="")
    p.add_argument("--exit-on-error", action="store_true")
    p.add_argument("--log-level", default="")
    p.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    p.add_argument("--remote-assignor", default="")
    p.add_argument("--timeline", action="store_true")
    a = p.parse_args()
    if os.environ.get("GROUP_MEMBER_DEBUG"):
        # Client logs on stderr, for diagnosing a failing test.
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    elif a.log_level:
        logging.basicConfig(level=a.log_level.upper(), stream=sys.stderr,
                            format="%(levelname)s %(name)s %(message)s")
    r = Reporter()
    r.timeline = a.timeline

    def on_term(_sig: int, _frame: Any) -> None:
        r.stop = True

    signal.signal(signal.SIGTERM, on_term)
    if a.client == "aiokafka":
        asyncio.run(run_aiokafka(a, r))
    elif a.client == "kafka-python":
        run_kafka_python(a, r)
    else:
        run_confluent(a, r)


if __name__ == "__main__":
    main()
