"""The broker stays responsive while it does large work: a real consumer group member
(confluent-kafka, a 6 s session) keeps its generation and its assignment while one
CreateTopics of 10,000 partitions (1,000 topics of 10) runs, through a restart of the
broker that holds them, and through one CreatePartitions and one DeleteTopics of them all;
and through the CreateTopics and DeleteTopics of one topic of 10,000 partitions.

Nothing here is timed: the member's own session timeout is the criterion. Were the
broker's loop held longer than the session, the coordinator would expire the member (a
new generation) or librdkafka itself would give the session up and rejoin (a revoke and a
new assignment).

And the connection guard-rails (``max.connections``, ``max.connections.per.ip``) at
hundreds of connections."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import Member, create_topic, describe_all, group_view, wait_stable
from .test_limits import closed_within, connect, served

SESSION_MS = 6000
HEARTBEAT_MS = 500
TOPICS, PARTITIONS_EACH = 1000, 10  # one CreateTopics of 10,000 partitions
#: Short group timeouts on the broker, so that a 6 s session is allowed and the first
#: join does not wait out Kafka's 3 s initial delay.
BROKER = {"group.min.session.timeout.ms": "1000", "group.initial.rebalance.delay.ms": "0"}


def _member_holds(broker: BrokerThread, group: str, member: Member, generation: int,
                  member_id: str | None, assigns: int, what: str) -> None:
    view = group_view(broker, group)
    assert view is not None and view.generation == generation and view.state == "Stable", \
        f"{what}\n{describe_all(broker, group, [member])}"
    assert member_id in view.member_ids, f"{what}\n{describe_all(broker, group, [member])}"
    assigned, seen_assigns, revokes = member.snapshot()
    assert (seen_assigns, revokes) == (assigns, 0) and assigned == frozenset(range(4)), \
        f"{what}\n{describe_all(broker, group, [member])}"


def _outlive_one_session() -> None:
    # Long enough for a missed session to show: the coordinator's expiry or the client's.
    time.sleep(SESSION_MS / 1000 + 2)


def test_member_keeps_its_generation_through_10000_partitions_created_and_restarted(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(BROKER)
    topic, group = "resp-topic", "resp-group"
    create_topic(broker, topic, 4)
    member = Member("confluent", broker.bootstrap, group, topic, session_ms=SESSION_MS,
                    heartbeat_ms=HEARTBEAT_MS, name="confluent-resp")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        view = wait_stable(broker, group, [member], partitions=4, what="joined")
        _, assigns, _ = member.snapshot()
        member_id = member.member_id

        t0 = time.monotonic()
        futures = admin.create_topics(
            [NewTopic(f"bulk-{i:04d}", PARTITIONS_EACH, 1) for i in range(TOPICS)],
            request_timeout=600, operation_timeout=600)
        for f in futures.values():
            f.result(timeout=600)
        print(f"CreateTopics of {TOPICS * PARTITIONS_EACH} partitions: "
              f"{time.monotonic() - t0:.1f}s")
        _outlive_one_session()
        _member_holds(broker, group, member, view.generation, member_id, assigns,
                      "after the large CreateTopics")

        # A clean stop and a start on the same port: the member's session spans the
        # downtime, so the stop (no fsync of an untouched log) and the start (logs opened
        # on first use) together fit in it, and the background opening of the 10,000 logs
        # that follows leaves the heartbeats served.
        t0 = time.monotonic()
        broker = broker.restart()
        print(f"restart with {TOPICS * PARTITIONS_EACH + 4} partitions: "
              f"{time.monotonic() - t0:.1f}s")
        _outlive_one_session()
        _member_holds(broker, group, member, view.generation, member_id, assigns,
                      "after the restart")

        # CreatePartitions and DeleteTopics over the same 1,000 topics, each one request.
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        names = [f"bulk-{i:04d}" for i in range(TOPICS)]
        for f in admin.create_partitions(
                [NewPartitions(n, PARTITIONS_EACH + 2) for n in names],
                request_timeout=600, operation_timeout=600).values():
            f.result(timeout=600)
        _outlive_one_session()
        _member_holds(broker, group, member, view.generation, member_id, assigns,
                      "after the large CreatePartitions")
        for f in admin.delete_topics(names, request_timeout=600,
                                     operation_timeout=600).values():
            f.result(timeout=600)
        _outlive_one_session()
        _member_holds(broker, group, member, view.generation, member_id, assigns,
                      "after the large DeleteTopics")
    finally:
        member.kill()


def test_member_keeps_its_generation_through_one_topic_of_10000_partitions(
        make_broker: Callable[..., BrokerThread]) -> None:
    """One topic of 10,000 partitions created and deleted, each in one request: its logs
    are created in the background and removed a partition at a time, the loop let go
    between slices."""
    broker = make_broker(BROKER)
    topic, group = "resp-one", "resp-one-group"
    create_topic(broker, topic, 4)
    member = Member("confluent", broker.bootstrap, group, topic, session_ms=SESSION_MS,
                    heartbeat_ms=HEARTBEAT_MS, name="confluent-resp-one")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    huge = TOPICS * PARTITIONS_EACH
    try:
        view = wait_stable(broker, group, [member], partitions=4, what="joined")
        _, assigns, _ = member.snapshot()
        member_id = member.member_id
        t0 = time.monotonic()
        admin.create_topics([NewTopic("one-huge", huge, 1)], request_timeout=600,
                            operation_timeout=600)["one-huge"].result(timeout=600)
        print(f"CreateTopics of one topic of {huge} partitions: "
              f"{time.monotonic() - t0:.1f}s")
        # Answered once committed: the logs follow in the background meanwhile.
        _outlive_one_session()
        deadline = time.monotonic() + 300
        while (opened := broker.call(
                lambda: len(broker.inner.storage.logs.partitions("one-huge")))) < huge:
            assert time.monotonic() < deadline, f"{opened} of {huge} logs created"
            time.sleep(0.2)
        _member_holds(broker, group, member, view.generation, member_id, assigns,
                      "after the CreateTopics of one huge topic")
        t0 = time.monotonic()
        admin.delete_topics(["one-huge"], request_timeout=600,
                            operation_timeout=600)["one-huge"].result(timeout=600)
        print(f"DeleteTopics of it: {time.monotonic() - t0:.1f}s")
        data = broker.call(lambda: broker.inner.storage.logs.data_dir)
        assert not list(data.glob("one-huge-*"))
        _outlive_one_session()
        _member_holds(broker, group, member, view.generation, member_id, assigns,
                      "after the DeleteTopics of one huge topic")
    finally:
        member.kill()


def test_connection_limits_hold_at_hundreds_of_connections(
        make_broker: Callable[..., BrokerThread]) -> None:
    """``max.connections.per.ip`` and ``max.connections`` at hundreds of idle connections
    (each served one ApiVersions), not only at a handful: the one past either limit is
    closed while every connection within it is still served."""
    per_ip, total = 400, 600
    broker = make_broker({"max.connections.per.ip": str(per_ip),
                          "max.connections": str(total)})
    held: list[socket.socket] = []
    try:
        held += [connect(broker) for _ in range(per_ip)]
        assert all(served(s, i + 1) for i, s in enumerate(held))
        over_ip = connect(broker)
        assert closed_within(over_ip, 5)
        over_ip.close()
        # 127.0.0.2 (the same loopback, another address) fills the broker-wide limit.
        others = [connect(broker, "127.0.0.2") for _ in range(total - per_ip)]
        held += others
        assert all(served(s, i + 1) for i, s in enumerate(others))
        over_all = connect(broker, "127.0.0.3")
        assert closed_within(over_all, 5)
        over_all.close()
        # A place freed is taken again, and the first connections are still served.
        held.pop().close()
        time.sleep(0.2)
        again = connect(broker, "127.0.0.3")
        held.append(again)
        assert served(again)
        assert all(served(s, 7) for s in held[:10])
    finally:
        for s in held:
            s.close()
