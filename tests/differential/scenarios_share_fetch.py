"""Scenarios: how much one ShareFetch answer holds (KIP-932): the partitions it covers,
its records under MaxBytes, MaxRecords and BatchSize, ShareAcquireMode, and when it waits
for MinBytes.

Every share-partition is made by an empty fetch before records arrive: a fetch that makes
share-partitions answers as soon as the first is ready with records, which in Kafka is a
race between its share-partitions' initializations. The byte limits are tried on one
partition: Kafka spreads the remainder of MaxBytes over the partitions at random.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from .harness import batch
from .registry import Run, create_topic, produce, scenario
from .scenarios_share import alter_group_configs, heartbeat, settled

SHARE_FETCH, SHARE_ACKNOWLEDGE = 78, 79
BIG = 50 << 20


def five(first: int) -> bytes:
    """One record batch of five records."""
    return batch(*(b"v%d" % i for i in range(first, first + 5)))


class Fetcher:
    """One member's share session on the run's main connection."""

    def __init__(self, run: Run, group: str, member: str, topic_id: Any) -> None:
        self.run, self.group, self.member, self.topic_id = run, group, member, topic_id
        self.epoch = 0

    def fetch(self, step: str, partitions: list[int] | None = None,
              acks: dict[int, list[dict[str, Any]]] | None = None, max_bytes: int = BIG,
              max_records: int = 500, batch_size: int = 500, min_bytes: int = 1,
              max_wait: int = 500, mode: int = 0) -> Any:
        asked = sorted(set(partitions or []) | set(acks or {}))
        topics = [{"topic_id": self.topic_id, "partitions": [
            {"partition_index": p, "acknowledgement_batches": (acks or {}).get(p, [])}
            for p in asked]}] if asked else []
        resp = self.run.call(
            step, SHARE_FETCH, group_id=self.group, member_id=self.member,
            share_session_epoch=self.epoch, max_wait=max_wait, min_bytes=min_bytes,
            max_bytes=max_bytes, max_records=max_records, batch_size=batch_size,
            share_acquire_mode=mode, is_renew_ack=False, topics=topics,
            forgotten_topics_data=[])
        if resp is not None and int(resp.error_code) == 0:
            self.epoch += 1
        return resp


    def acknowledge(self, step: str, acks: dict[int, list[dict[str, Any]]]) -> Any:
        resp = self.run.call(
            step, SHARE_ACKNOWLEDGE, group_id=self.group, member_id=self.member,
            share_session_epoch=self.epoch, is_renew_ack=False, topics=[{
                "topic_id": self.topic_id, "partitions": [
                    {"partition_index": p, "acknowledgement_batches": b}
                    for p, b in sorted(acks.items())]}])
        if resp is not None and int(resp.error_code) == 0:
            self.epoch += 1
        return resp


def whole(first: int, last: int, kind: int) -> list[dict[str, Any]]:
    """One acknowledgement batch of one type (1 accept, 2 release)."""
    return [{"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}]


def member_of(run: Run, partitions: int) -> tuple[str, Any, Fetcher]:
    """A topic, a share group reading it from the earliest offset, and one settled member
    whose share-partitions are made (empty) by a first fetch."""
    t = run.topic()
    tid = create_topic(run, t, partitions=partitions)
    g, member = run.group(), str(uuid.uuid4())
    alter_group_configs(run, "earliest", g, {"share.auto.offset.reset": "earliest"})
    settled(run, g, member, [t])
    f = Fetcher(run, g, member, tid)
    # Kafka makes share-partitions asynchronously (the first use of its share coordinator
    # creates and loads __share_group_state): fetch until the answer lists all of them.
    # Each try opens the session again (epoch 0): a full answer lists every partition
    # read, an incremental one only those with records.
    deadline = time.monotonic() + 60
    while True:
        f.epoch = 0
        resp = f.fetch("make", list(range(partitions)), max_wait=300)
        listed = [] if resp is None else [p for t in resp.responses for p in t.partitions]
        # Its share coordinator's first use can also fail a share-partition's making
        # (UNKNOWN_SERVER_ERROR for the partition): asked again, it is made.
        if time.monotonic() > deadline or (len(listed) == partitions and not any(
                int(p.error_code) for p in listed)):
            break
        time.sleep(0.2)
    return t, tid, f


def leave(run: Run, f: Fetcher) -> None:
    heartbeat(run, "leave", f.group, f.member, -1, None, record=False)


@scenario("share-fetch-partitions")
def share_fetch_partitions(run: Run) -> None:
    t, tid, f = member_of(run, 3)
    for p in range(3):
        for first in (0, 5, 10):
            produce(run, "produce", t, tid, five(first), partition=p, record=False)
    # Nothing is read: answered at once, no partition listed.
    f.fetch("max_bytes_zero")
    f.fetch("max_records_zero", max_records=0)
    # Every partition with records is covered, each with all it has.
    f.fetch("all")
    # Acknowledgements only: the acknowledged partition is listed, nothing else comes.
    f.fetch("accept", acks={0: whole(0, 14, 1)}, max_wait=100)
    f.fetch("nothing_left", max_wait=100)
    # Released by the fetch that asks again: delivered again by it.
    f.fetch("release_and_fetch", acks={1: whole(0, 14, 2)}, max_wait=300)
    f.acknowledge("acknowledge", {1: whole(0, 14, 1), 2: whole(0, 14, 1)})
    leave(run, f)


@scenario("share-fetch-limits")
def share_fetch_limits(run: Run) -> None:
    t, tid, f = member_of(run, 1)
    size = len(five(0))
    for first in range(0, 35, 5):
        produce(run, "produce", t, tid, five(first), record=False)
    # MaxBytes below one batch: the first batch whole all the same (KIP-74).
    f.fetch("max_bytes_one", max_bytes=1)
    # Room for two batches and a little more: two whole batches.
    f.fetch("max_bytes_two_batches", max_bytes=2 * size + size // 2)
    # MaxRecords below a batch: the whole batch.
    f.fetch("max_records_three", max_records=3, batch_size=3)
    # BatchSize below the records acquired: ranges cut on batch boundaries.
    f.fetch("batch_size_below", max_records=10, batch_size=3)
    # Record-limit acquisition (v2): exactly MaxRecords offsets.
    f.fetch("record_limit_three", max_records=3, mode=1)
    f.fetch("record_limit_rest", mode=1)
    # MinBytes not met: the fetch waits MaxWait, then answers with what there is.
    produce(run, "produce", t, tid, five(35), record=False)
    began = time.monotonic()
    f.fetch("min_bytes_unmet", min_bytes=1 << 20, max_wait=600)
    run.note("min_bytes_unmet_waited", time.monotonic() - began >= 0.5)
    began = time.monotonic()
    f.fetch("empty_waits", max_wait=600)
    run.note("empty_waited", time.monotonic() - began >= 0.5)
    leave(run, f)
