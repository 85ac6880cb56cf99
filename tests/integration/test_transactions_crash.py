"""SIGKILL of ``kafkalite serve`` with a transaction in each state, a read_committed
consumer running throughout: after the restart the outcome is Kafka's. A transaction
found Ongoing is aborted once its timeout passes; one found in PrepareCommit or
PrepareAbort is completed from ``__transaction_state`` (its markers written again, its
pending offsets made committed or dropped). No aborted record ever reaches the
read_committed consumer, and every committed one reaches it once, in order.

The broker runs on a manual clock (``--manual-clock``, advanced through the admin API),
so a timeout passes exactly when the test says. A transaction is held in PrepareCommit or
PrepareAbort by putting the group coordinator's ``__consumer_offsets`` partition of the
transaction's group into loading (the ``partition-loading`` scenario): its marker is then
retried, and the transaction waits for it, until the clock passes the hold.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from kafkalite.broker.testing.fixtures import BrokerProcess
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode

TOPIC = "crash-data"
GROUP = "crash-group"
OFFSET_FETCH, LIST_TXNS = 9, 66


class Node:
    """A broker process on a manual clock, killed and started again on the same port."""

    def __init__(self, data_dir: Path) -> None:
        self.proc = BrokerProcess(data_dir, {
            "admin.listener": "127.0.0.1:0", "num.partitions": "1",
            "transaction.state.log.num.partitions": "2",
            "group.initial.rebalance.delay.ms": "0"}, extra_args=["--manual-clock"])
        self.proc.start()

    @property
    def bootstrap(self) -> str:
        return self.proc.bootstrap

    def admin(self, path: str, body: dict[str, Any]) -> Any:
        assert self.proc.admin_url is not None
        req = urllib.request.Request(f"{self.proc.admin_url}{path}",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def advance(self, ms: int) -> None:
        self.admin("/api/v1/clock/advance", {"ms": ms})

    def hold_group_partition(self) -> None:
        out = self.admin("/api/v1/scenarios/partition-loading",
                         {"group_id": GROUP, "for_ms": 600_000})
        assert out["error"] == "NONE", out

    def crash_and_restart(self) -> None:
        self.proc.kill()
        self.proc.start()

    def states(self) -> dict[str, str]:
        """ListTransactions, asked again (bounded) while a restarted broker still loads
        ``__transaction_state`` and answers COORDINATOR_LOAD_IN_PROGRESS, as a client
        would."""
        conn = RawConnection(self.bootstrap)
        try:
            deadline = time.monotonic() + 10
            while True:
                r = conn.call(request(LIST_TXNS, 1, state_filters=(), producer_id_filters=(),
                                      duration_filter=-1))
                if (r.error_code != ErrorCode.coordinator_load_in_progress
                        or time.monotonic() > deadline):
                    break
                time.sleep(0.02)
            assert r.error_code == ErrorCode.none, r.error_code
            return {t.transactional_id: t.transaction_state for t in r.transaction_states}
        finally:
            conn.close()

    def stable_offset(self) -> tuple[int, int]:
        """OffsetFetch with require_stable for the group: (error, offset)."""
        conn = RawConnection(self.bootstrap)
        try:
            topic = request_class(OFFSET_FETCH, 7, "OffsetFetchRequestTopic")
            deadline = time.monotonic() + 10
            while True:
                r = conn.call(request(OFFSET_FETCH, 7, group_id=GROUP, require_stable=True,
                                      topics=(topic(name=TOPIC, partition_indexes=(0,)),)))
                # A restarted broker still loading the group's partition says so.
                if (r.error_code != ErrorCode.coordinator_load_in_progress
                        or time.monotonic() > deadline):
                    break
                time.sleep(0.02)
            p = r.topics[0].partitions[0]
            return int(p.error_code), int(p.committed_offset)
        finally:
            conn.close()


class Reader(threading.Thread):
    """A read_committed consumer polling the topic the whole time, broker restarts too."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.values: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "crash-reader",
                      "isolation.level": "read_committed", "enable.auto.commit": False,
                      "reconnect.backoff.max.ms": 200})
        c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        try:
            while not self.stop.is_set():
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    self.values.append(m.value().decode())
        finally:
            c.close()

    def wait_for(self, values: list[str], seconds: float = 20) -> list[str]:
        deadline = time.monotonic() + seconds
        while self.values != values and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.values


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[Node, Reader]]:
    n = Node(tmp_path / "data")
    p = Producer({"bootstrap.servers": n.bootstrap})
    p.produce(TOPIC, b"before")
    assert p.flush(10) == 0
    reader = Reader(n.bootstrap)
    reader.start()
    assert reader.wait_for(["before"]) == ["before"]
    try:
        yield n, reader
    finally:
        reader.stop.set()
        reader.join(10)
        n.proc.kill()


def producer(n: Node, tid: str) -> Producer:
    p = Producer({"bootstrap.servers": n.bootstrap, "transactional.id": tid,
                  "linger.ms": 0, "transaction.timeout.ms": 60_000})
    p.init_transactions(20)
    return p


def after(n: Node, *values: str) -> None:
    """Plain records written after the transaction."""
    p = Producer({"bootstrap.servers": n.bootstrap})
    for v in values:
        p.produce(TOPIC, v.encode())
    assert p.flush(15) == 0


def test_crash_with_a_transaction_ongoing(node: tuple[Node, Reader]) -> None:
    n, reader = node
    p = producer(n, "crash-ongoing")
    p.begin_transaction()
    for i in range(3):
        p.produce(TOPIC, f"ongoing-{i}".encode())
    assert p.flush(10) == 0
    after(n, "later")  # past the open transaction: held back under read_committed
    assert n.states() == {"crash-ongoing": "Ongoing"}
    n.crash_and_restart()
    assert n.states() == {"crash-ongoing": "Ongoing"}  # loaded, still open
    time.sleep(0.5)
    assert reader.values == ["before"]
    n.advance(60_001)  # its timeout passes: the coordinator aborts it
    assert n.states() == {"crash-ongoing": "CompleteAbort"}
    assert reader.wait_for(["before", "later"]) == ["before", "later"]
    after(n, "last")
    assert reader.wait_for(["before", "later", "last"]) == ["before", "later", "last"]
    del p


@pytest.mark.parametrize("commit", [True, False], ids=["prepare-commit", "prepare-abort"])
def test_crash_with_a_transaction_prepared(node: tuple[Node, Reader], commit: bool) -> None:
    n, reader = node
    tid = "crash-prepared"
    p = producer(n, tid)
    c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": GROUP})
    p.begin_transaction()
    for i in range(3):
        p.produce(TOPIC, f"prepared-{i}".encode())
    p.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 42)],
                                  c.consumer_group_metadata(), 20)
    assert n.stable_offset() == (ErrorCode.unstable_offset_commit, -1)
    n.hold_group_partition()
    if commit:
        p.commit_transaction(20)  # answered once PrepareCommit is written
    else:
        p.abort_transaction(20)
    state = "PrepareCommit" if commit else "PrepareAbort"
    assert n.states() == {tid: state}
    n.crash_and_restart()
    # Loading finds it prepared and completes it: markers, then the completion record.
    assert n.states() == {tid: "CompleteCommit" if commit else "CompleteAbort"}
    assert n.stable_offset() == (ErrorCode.none, 42 if commit else -1)
    after(n, "later")
    expected = ["before", *(f"prepared-{i}" for i in range(3) if commit), "later"]
    assert reader.wait_for(expected) == expected
    time.sleep(0.3)
    assert reader.values == expected  # nothing twice, nothing aborted
    c.close()
    del p
