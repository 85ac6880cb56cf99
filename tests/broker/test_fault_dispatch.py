"""Fault rules on the request path of a real broker, over TCP with a raw client: each
action (error, delay, drop, close before or after handling), the limits, the matching
on client id and principal, and that an injected error leaves the broker's state as it
was. The rules are added from the test's thread through ``broker.faults``."""

from __future__ import annotations

import datetime
import socket
import time

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.records import NewRecord, build_batch

PRODUCE, HEARTBEAT, OFFSET_COMMIT, CREATE_TOPICS, FIND_COORDINATOR = 0, 12, 8, 19, 10


def heartbeat(conn: RawConnection, group: str = "g") -> ErrorCode:
    resp = conn.call(request(HEARTBEAT, conn.version(HEARTBEAT, 4), group_id=group,
                             generation_id=1, member_id="m", group_instance_id=None))
    return ErrorCode(resp.error_code)


def create_topic_request(conn: RawConnection, name: str) -> object:
    v = conn.version(CREATE_TOPICS, 5)
    topic_cls = request_class(CREATE_TOPICS, v, "CreatableTopic")
    return request(CREATE_TOPICS, v, timeout=datetime.timedelta(seconds=5),
                   topics=(topic_cls(name=name, num_partitions=1, replication_factor=1,
                                     assignments=(), configs=()),))


def topic_exists(broker: BrokerThread, name: str) -> bool:
    return broker.call(lambda: broker.inner.topics.get(name) is not None)


def test_count_limited_error_then_the_real_answer(broker: BrokerThread) -> None:
    conn = RawConnection(broker.bootstrap)
    rule = broker.faults.add("Heartbeat", error="REBALANCE_IN_PROGRESS", count=2)
    got = [heartbeat(conn) for _ in range(3)]
    # The third is the broker's own answer for a member it does not know.
    assert got[:2] == [ErrorCode.rebalance_in_progress] * 2
    assert got[2] not in (ErrorCode.rebalance_in_progress, ErrorCode.none)
    assert rule.fired == 2 and broker.faults.rules() == []
    conn.close()


def test_errors_go_per_partition_and_nothing_is_appended(broker: BrokerThread) -> None:
    broker.call(lambda: broker.inner.create_topic("orders", 2))
    conn = RawConnection(broker.bootstrap)
    v = conn.version(PRODUCE, 9)
    topic_cls = request_class(PRODUCE, v, "TopicProduceData")
    part_cls = request_class(PRODUCE, v, "PartitionProduceData")
    batch = build_batch([NewRecord(b"k", b"v", 1)])
    req = request(PRODUCE, v, transactional_id=None, acks=1,
                  timeout=datetime.timedelta(seconds=5),
                  topic_data=(topic_cls(name="orders", partition_data=(
                      part_cls(index=0, records=batch), part_cls(index=1, records=batch))),))
    with broker.faults.injected("Produce", error="NOT_LEADER_OR_FOLLOWER", topic="orders"):
        resp = conn.call(req)
    assert [(p.index, ErrorCode(p.error_code)) for t in resp.responses
            for p in t.partition_responses] == \
        [(0, ErrorCode.not_leader_or_follower), (1, ErrorCode.not_leader_or_follower)]
    assert broker.call(lambda: [broker.inner.logs.get("orders", p).log_end_offset  # type: ignore[union-attr]
                                for p in (0, 1)]) == [0, 0]
    ok = conn.call(req)
    assert [ErrorCode(p.error_code) for t in ok.responses for p in t.partition_responses] == \
        [ErrorCode.none, ErrorCode.none]
    conn.close()


def test_injected_commit_error_stores_nothing(broker: BrokerThread) -> None:
    broker.call(lambda: broker.inner.create_topic("t", 1))
    conn = RawConnection(broker.bootstrap)
    v = conn.version(OFFSET_COMMIT, 8)
    topic_cls = request_class(OFFSET_COMMIT, v, "OffsetCommitRequestTopic")
    part_cls = request_class(OFFSET_COMMIT, v, "OffsetCommitRequestPartition")
    commit = request(OFFSET_COMMIT, v, group_id="simple", generation_id_or_member_epoch=-1,
                     member_id="", group_instance_id=None, topics=(topic_cls(
                         name="t", partitions=(part_cls(partition_index=0, committed_offset=7,
                                                        committed_leader_epoch=-1,
                                                        committed_metadata=None),)),))
    with broker.faults.injected("OffsetCommit", error="COORDINATOR_LOAD_IN_PROGRESS",
                                group_id="simple"):
        resp = conn.call(commit)
    assert [ErrorCode(p.error_code) for t in resp.topics for p in t.partitions] == \
        [ErrorCode.coordinator_load_in_progress]

    def committed() -> int:
        found = broker.inner.groups.core.offsets.get("simple", "t", 0)
        return -1 if found is None else found.offset

    assert broker.call(committed) == -1
    conn.call(commit)
    assert broker.call(committed) == 7
    conn.close()


def test_delay_holds_the_answer_and_those_behind_it(broker: BrokerThread) -> None:
    conn = RawConnection(broker.bootstrap)
    broker.faults.add("Heartbeat", action="delay", delay_ms=300, group_id="slow", count=1)
    hv = conn.version(HEARTBEAT, 4)
    slow = request(HEARTBEAT, hv, group_id="slow", generation_id=1, member_id="m",
                   group_instance_id=None)
    fast = request(HEARTBEAT, hv, group_id="fast", generation_id=1, member_id="m",
                   group_instance_id=None)
    t0 = time.monotonic()
    conn.sock.sendall(conn.frame(slow) + conn.frame(fast))
    first, second = conn.recv_frame(), conn.recv_frame()
    # Answers keep request order: the undelayed one waits behind the delayed one.
    assert int.from_bytes(first[:4], "big") + 1 == int.from_bytes(second[:4], "big")
    assert time.monotonic() - t0 >= 0.29
    conn.close()


def test_drop_stalls_the_connection_until_the_client_gives_up(broker: BrokerThread) -> None:
    conn = RawConnection(broker.bootstrap)
    rule = broker.faults.add("Heartbeat", action="drop", count=1)
    hv = conn.version(HEARTBEAT, 4)
    hb = request(HEARTBEAT, hv, group_id="g", generation_id=1, member_id="m",
                 group_instance_id=None)
    conn.sock.sendall(conn.frame(hb) + conn.frame(hb))
    conn.sock.settimeout(0.5)
    with pytest.raises(TimeoutError):
        conn.recv_frame()
    assert rule.fired == 1
    conn.close()
    # The rule is spent; a new connection is served as usual.
    fresh = RawConnection(broker.bootstrap)
    assert heartbeat(fresh) is not ErrorCode.none
    fresh.close()


@pytest.mark.parametrize("action, created", [("close_before", False), ("close_after", True)])
def test_close_before_or_after_handling(broker: BrokerThread, action: str,
                                        created: bool) -> None:
    conn = RawConnection(broker.bootstrap)
    broker.faults.add("CreateTopics", action=action, count=1)
    conn.sock.sendall(conn.frame(create_topic_request(conn, f"t-{action}")))
    with pytest.raises((ConnectionError, socket.timeout)):
        conn.recv_frame()
    assert topic_exists(broker, f"t-{action}") is created
    conn.close()


def test_rules_match_client_id_and_principal(broker: BrokerThread) -> None:
    mine = RawConnection(broker.bootstrap, client_id="mine")
    other = RawConnection(broker.bootstrap, client_id="other")
    broker.faults.add("Heartbeat", error="NOT_COORDINATOR", client_id="mine")
    broker.faults.add("Heartbeat", error="COORDINATOR_NOT_AVAILABLE",
                      principal="User:someone-else")
    assert heartbeat(mine) is ErrorCode.not_coordinator
    assert heartbeat(other) not in (ErrorCode.not_coordinator,
                                    ErrorCode.coordinator_not_available)
    assert broker.faults.clear() == 2
    assert heartbeat(mine) is not ErrorCode.not_coordinator
    # A plaintext listener's clients are User:ANONYMOUS, as in Kafka.
    broker.faults.add("Heartbeat", error="COORDINATOR_NOT_AVAILABLE",
                      principal="User:ANONYMOUS", count=1)
    assert heartbeat(other) is ErrorCode.coordinator_not_available
    mine.close()
    other.close()


def test_version_range(broker: BrokerThread) -> None:
    conn = RawConnection(broker.bootstrap)
    hv = conn.version(HEARTBEAT, 4)
    broker.faults.add("Heartbeat", error="NOT_COORDINATOR", versions=(0, hv - 1))
    assert heartbeat(conn) is not ErrorCode.not_coordinator
    broker.faults.add("Heartbeat", error="NOT_COORDINATOR", versions=(hv, hv))
    assert heartbeat(conn) is ErrorCode.not_coordinator
    conn.close()


def test_context_manager_removes_its_rule_even_on_failure(broker: BrokerThread) -> None:
    with pytest.raises(RuntimeError), \
            broker.faults.injected("Heartbeat", error="NOT_COORDINATOR") as rule:
        assert [r.id for r in broker.faults.rules()] == [rule.id]
        raise RuntimeError("the test body failed")
    assert broker.faults.rules() == []


def test_group_rules_reach_requests_that_name_groups_elsewhere(broker: BrokerThread) -> None:
    """FindCoordinator names its group in a key list, not a group_id field."""
    conn = RawConnection(broker.bootstrap)
    v = conn.version(FIND_COORDINATOR, 6)
    assert v >= 4

    def find(key: str) -> ErrorCode:
        resp = conn.call(request(FIND_COORDINATOR, v, key_type=0, coordinator_keys=(key,)))
        (coordinator,) = resp.coordinators
        assert coordinator.key == key
        return ErrorCode(coordinator.error_code)

    broker.faults.add("FindCoordinator", error="COORDINATOR_NOT_AVAILABLE", group_id="g")
    assert find("g") is ErrorCode.coordinator_not_available
    assert find("h") is ErrorCode.none
    conn.close()
