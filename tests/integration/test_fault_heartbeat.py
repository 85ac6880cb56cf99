"""Heartbeat errors injected into running groups of real consumers (aiokafka, kafka-python,
confluent-kafka), each in its own process, and the reaction each client's own code
defines:

* REBALANCE_IN_PROGRESS: rejoin (a JoinGroup) with the same member id.
* ILLEGAL_GENERATION: rejoin; kafka-python and librdkafka keep their member id, aiokafka
  resets it (``reset_generation``) and joins as a new member.
* UNKNOWN_MEMBER_ID: reset the member id and join as a new member; the old id stays in
  the group until its session times out, as in Kafka.
* NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE: look the coordinator up again (a new
  FindCoordinator at the broker) and carry on as the same member.
* GROUP_AUTHORIZATION_FAILED: aiokafka raises GroupAuthorizationFailedError from
  ``getmany`` (the member here then closes, as an application that cannot go on would);
  kafka-python logs "Heartbeat failed: authorization error" and retries; librdkafka
  treats it as a permanent error of that one request and sends the next heartbeat as
  usual. None of them leaves the group over it on its own.

One member of two (client id ``victim``) gets the error once, from a fault rule; the
group must be Stable again afterwards with every partition assigned once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import Member, create_topic, describe_all, stop_all, wait_stable

CLIENTS = ["aiokafka", "kafka-python", "confluent"]
PARTITIONS = 4
SESSION_MS = 3000
HEARTBEAT_MS = 200
FIND_COORDINATOR, JOIN_GROUP = 10, 11

#: Whether the victim keeps its member id when it rejoins after each error.
KEEPS_MEMBER_ID = {
    "REBALANCE_IN_PROGRESS": {"aiokafka": True, "kafka-python": True, "confluent": True},
    "ILLEGAL_GENERATION": {"aiokafka": False, "kafka-python": True, "confluent": True},
    "UNKNOWN_MEMBER_ID": {"aiokafka": False, "kafka-python": False, "confluent": False},
}


def members_by_client(broker: BrokerThread, group: str) -> dict[str, str]:
    """client id -> member id, as the broker has them."""

    def read() -> dict[str, str]:
        g = broker.inner.groups.core.group(group)
        return {} if g is None else {m.client_id: m.member_id for m in g.members.values()}

    return broker.call(read)


def session_deadline(broker: BrokerThread, group: str, member_id: str) -> int:
    """The member's session deadline (ms): re-armed by every heartbeat it sends."""

    def read() -> int:
        deadline = broker.inner.groups.core.timers.deadline(
            ("heartbeat", group, member_id))
        return -1 if deadline is None else deadline

    return broker.call(read)


def requests(broker: BrokerThread, api_key: int) -> int:
    """Requests of ``api_key`` the broker has answered (its /metrics counter)."""
    return broker.call(lambda: broker.inner.metrics.api(api_key).count)


def wait_until(what: str, check: Callable[[], bool], members: list[Member],
               broker: BrokerThread, group: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n"
                                 f"{describe_all(broker, group, members)}")
        time.sleep(0.05)


def running_group(broker: BrokerThread, client: str, name: str, **member_options: object
                  ) -> tuple[str, Member, Member]:
    topic = group = f"hb-{client}-{name}".lower()
    create_topic(broker, topic, PARTITIONS)
    victim, bystander = (
        Member(client, broker.bootstrap, group, topic, session_ms=SESSION_MS,
               heartbeat_ms=HEARTBEAT_MS, client_id=cid, name=f"{client}-{cid}",
               **member_options)  # type: ignore[arg-type]
        for cid in ("victim", "bystander"))
    wait_stable(broker, group, [victim, bystander], partitions=PARTITIONS,
                what="the group before the fault")
    return group, victim, bystander


@pytest.mark.parametrize("error", list(KEEPS_MEMBER_ID))
@pytest.mark.parametrize("client", CLIENTS)
def test_rejoin(broker: BrokerThread, client: str, error: str) -> None:
    group, victim, bystander = running_group(broker, client, error)
    members = [victim, bystander]
    try:
        before = members_by_client(broker, group)
        joins = requests(broker, JOIN_GROUP)
        with broker.faults.injected("Heartbeat", error=error, group_id=group,
                                    client_id="victim", count=1) as rule:
            wait_until("the rule to fire", lambda: rule.fired == 1, members, broker, group)
            wait_until("a JoinGroup", lambda: requests(broker, JOIN_GROUP) > joins, members,
                       broker, group)
            if not KEEPS_MEMBER_ID[error][client]:
                wait_until("the victim's new member id", lambda: members_by_client(
                    broker, group).get("victim") not in (None, before["victim"]),
                    members, broker, group)
            wait_stable(broker, group, members, partitions=PARTITIONS, what=f"after {error}")
        after = members_by_client(broker, group)
        assert set(after) == {"victim", "bystander"}, after
        assert after["bystander"] == before["bystander"]
        keeps = after["victim"] == before["victim"]
        assert keeps is KEEPS_MEMBER_ID[error][client], (before, after)
        if client != "confluent" or keeps:
            # The client's own view agrees (confluent-kafka reports it once assigned).
            assert victim.member_id == after["victim"], describe_all(broker, group, members)
        assert victim.errors == [] and bystander.errors == [], \
            describe_all(broker, group, members)
    finally:
        stop_all(members)


@pytest.mark.parametrize("error", ["NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"])
@pytest.mark.parametrize("client", CLIENTS)
def test_coordinator_rediscovery(broker: BrokerThread, client: str, error: str) -> None:
    group, victim, bystander = running_group(broker, client, error)
    members = [victim, bystander]
    try:
        before = members_by_client(broker, group)
        finds = requests(broker, FIND_COORDINATOR)
        with broker.faults.injected("Heartbeat", error=error, group_id=group,
                                    client_id="victim", count=1) as rule:
            wait_until("the rule to fire", lambda: rule.fired == 1, members, broker, group)
            wait_until("a new FindCoordinator",
                       lambda: requests(broker, FIND_COORDINATOR) > finds, members, broker,
                       group)
        wait_stable(broker, group, members, partitions=PARTITIONS, what=f"after {error}")
        assert members_by_client(broker, group) == before
        assert victim.errors == [] and bystander.errors == [], \
            describe_all(broker, group, members)
    finally:
        stop_all(members)


@pytest.mark.parametrize("client", CLIENTS)
def test_group_authorization_failed(broker: BrokerThread, client: str) -> None:
    group, victim, bystander = running_group(broker, client, "auth", exit_on_error=True,
                                             log_level="ERROR")
    members = [victim, bystander]
    try:
        before = members_by_client(broker, group)
        generation = wait_stable(broker, group, members, partitions=PARTITIONS).generation
        with broker.faults.injected("Heartbeat", error="GROUP_AUTHORIZATION_FAILED",
                                    group_id=group, client_id="victim", count=1) as rule:
            wait_until("the rule to fire", lambda: rule.fired == 1, members, broker, group)
        if client == "aiokafka":
            wait_until("the exception", lambda: victim.closed, members, broker, group)
            assert victim.errors[:1] == ["GroupAuthorizationFailedError"], victim.describe()
            # The victim closed its consumer (LeaveGroup); the other takes every partition.
            view = wait_stable(broker, group, [bystander], partitions=PARTITIONS,
                               what="after the victim left")
            assert view.member_ids == {before["bystander"]}
            return
        if client == "kafka-python":
            wait_until("the log line", lambda: any(
                "Heartbeat failed: authorization error" in line for line in victim.stderr),
                members, broker, group)
        # The victim goes on heartbeating: its session deadline moves on.
        fired_at = session_deadline(broker, group, before["victim"])
        wait_until("heartbeats after the error",
                   lambda: session_deadline(broker, group, before["victim"])
                   > fired_at + 2 * HEARTBEAT_MS, members, broker, group)
        view = wait_stable(broker, group, members, partitions=PARTITIONS,
                           what="after GROUP_AUTHORIZATION_FAILED")
        assert (view.generation, members_by_client(broker, group)) == (generation, before)
        assert victim.errors == [] and not victim.closed, victim.describe()
    finally:
        stop_all(members)
