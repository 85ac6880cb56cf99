"""Scenarios: Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch, bad
records and malformed requests, and ACLs on the SASL listener."""

from __future__ import annotations

import struct

from .harness import batch
from .registry import (
    CREATE_ACLS,
    DELETE_ACLS,
    DELETE_RECORDS,
    DESCRIBE_ACLS,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    OFFSET_FOR_LEADER_EPOCH,
    Run,
    call_until,
    create_topic,
    produce,
    scenario,
)


def fetch(run: Run, step: str, topic: str, topic_id: object, offset: int,
          partition: int = 0, isolation_level: int = 0) -> None:
    run.call(step, FETCH, max_wait=0, min_bytes=0, max_bytes=1 << 20,
             isolation_level=isolation_level, session_id=0, session_epoch=-1,
             replica_id=-1, forgotten_topics_data=[], rack_id="", topics=[{
                 "topic": topic, "topic_id": topic_id, "partitions": [{
                     "partition": partition, "fetch_offset": offset,
                     "partition_max_bytes": 1 << 20, "log_start_offset": -1}]}])


@scenario("produce-fetch")
def produce_fetch(run: Run) -> None:
    tid = create_topic(run, run.topic())
    produce(run, "produce1", run.topic(), tid, batch(b"a", b"b", (b"k", b"c")))
    produce(run, "produce2", run.topic(), tid, batch(b"d"))
    fetch(run, "fetch0", run.topic(), tid, 0)
    fetch(run, "fetch3", run.topic(), tid, 3)
    fetch(run, "fetch_end", run.topic(), tid, 4)


@scenario("produce-unknown-topic")
def produce_unknown(run: Run) -> None:
    produce(run, "produce", run.topic("missing"), None, batch(b"a"))


@scenario("produce-unknown-partition")
def produce_unknown_partition(run: Run) -> None:
    tid = create_topic(run, run.topic())
    produce(run, "produce", run.topic(), tid, batch(b"a"), partition=7)


@scenario("produce-invalid-acks")
def produce_invalid_acks(run: Run) -> None:
    tid = create_topic(run, run.topic())
    produce(run, "produce", run.topic(), tid, batch(b"a"), acks=2)


@scenario("produce-oversized-batch")
def produce_oversized(run: Run) -> None:
    tid = create_topic(run, run.topic(), configs={"max.message.bytes": "200"})
    produce(run, "produce", run.topic(), tid, batch(b"x" * 500))
    produce(run, "small", run.topic(), tid, batch(b"x" * 10))


@scenario("produce-corrupt-crc")
def produce_corrupt(run: Run) -> None:
    tid = create_topic(run, run.topic())
    raw = bytearray(batch(b"payload"))
    raw[-1] ^= 0xFF  # the last byte of the record, under the CRC
    produce(run, "produce", run.topic(), tid, bytes(raw))
    fetch(run, "fetch", run.topic(), tid, 0)


# Found differences: the log start offset of OUT_OF_ORDER_SEQUENCE_NUMBER (fixed);
# a duplicate's log_append_time (listed).
@scenario("produce-idempotent-sequence")
def produce_idempotent(run: Run) -> None:
    tid = create_topic(run, run.topic())
    init = run.call("init", 22, transactional_id=None, transaction_timeout=60_000,
                    producer_id=-1, producer_epoch=-1)
    pid, epoch = int(init.producer_id), int(init.producer_epoch)
    rec = batch(b"a", b"b", producer_id=pid, producer_epoch=epoch, base_sequence=0)
    produce(run, "first", run.topic(), tid, rec)
    produce(run, "duplicate", run.topic(), tid, rec)
    produce(run, "gap", run.topic(), tid, batch(b"c", producer_id=pid,
                                                 producer_epoch=epoch, base_sequence=5))
    produce(run, "next", run.topic(), tid, batch(b"c", producer_id=pid,
                                                  producer_epoch=epoch, base_sequence=2))
    fetch(run, "fetch", run.topic(), tid, 0)


# Found differences, fixed: -1 offsets on a failed read, an empty aborted list and
# UNKNOWN_TOPIC_OR_PARTITION for a known topic id without the partition.
@scenario("fetch-offset-out-of-range")
def fetch_out_of_range(run: Run) -> None:
    tid = create_topic(run, run.topic())
    produce(run, "produce", run.topic(), tid, batch(b"a"))
    fetch(run, "past_end", run.topic(), tid, 50)
    fetch(run, "negative", run.topic(), tid, -5)
    fetch(run, "unknown_partition", run.topic(), tid, 0, partition=3)


# Found a difference, fixed: the max-timestamp query below v7 is UNSUPPORTED_VERSION.
@scenario("list-offsets")
def list_offsets(run: Run) -> None:
    tid = create_topic(run, run.topic())
    produce(run, "produce", run.topic(), tid, batch(b"a", b"b", b"c", timestamp=1_000_000))
    for label, ts in (("earliest", -2), ("latest", -1), ("max_timestamp", -3),
                      ("by_time", 1_000_001), ("after_all", 9_000_000_000_000)):
        run.call(label, LIST_OFFSETS, replica_id=-1, isolation_level=0, timeout=10_000,
                 topics=[{"name": run.topic(), "partitions": [
                     {"partition_index": 0, "timestamp": ts, "max_num_offsets": 1}]}])
    run.call("unknown", LIST_OFFSETS, replica_id=-1, isolation_level=0, timeout=10_000,
             topics=[{"name": run.topic("missing"), "partitions": [
                 {"partition_index": 0, "timestamp": -1, "max_num_offsets": 1}]}])


# Found a difference, fixed: a fetch below the log start answers -1 offsets.
@scenario("delete-records")
def delete_records(run: Run) -> None:
    tid = create_topic(run, run.topic())
    produce(run, "produce", run.topic(), tid, batch(b"a", b"b", b"c"))
    run.call("delete", DELETE_RECORDS, timeout=10_000, topics=[{"name": run.topic(),
             "partitions": [{"partition_index": 0, "offset": 2}]}])
    run.call("beyond", DELETE_RECORDS, timeout=10_000, topics=[{"name": run.topic(),
             "partitions": [{"partition_index": 0, "offset": 10}]}])
    run.call("unknown", DELETE_RECORDS, timeout=10_000, topics=[{"name": run.topic("x"),
             "partitions": [{"partition_index": 0, "offset": 1}]}])
    fetch(run, "fetch_deleted", run.topic(), tid, 0)


@scenario("offset-for-leader-epoch")
def offset_for_leader_epoch(run: Run) -> None:
    tid = create_topic(run, run.topic())
    produce(run, "produce", run.topic(), tid, batch(b"a", b"b"))
    run.call("epoch0", OFFSET_FOR_LEADER_EPOCH, replica_id=-1, topics=[
        {"topic": run.topic(), "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0},
            {"partition": 4, "current_leader_epoch": -1, "leader_epoch": 0}]},
        {"topic": run.topic("missing"), "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}])
    run.call("fenced", OFFSET_FOR_LEADER_EPOCH, replica_id=-1, topics=[
        {"topic": run.topic(), "partitions": [
            {"partition": 0, "current_leader_epoch": 99, "leader_epoch": 0}]}])


@scenario("malformed-request")
def malformed_request(run: Run) -> None:
    # A Metadata request whose topic array claims more entries than the frame holds: the
    # broker closes the connection rather than answer.
    w = run.wire()
    try:
        w.send_bytes(METADATA, 4, struct.pack(">i", 1000) + b"\x00\x01a")
        run.note("truncated", "answered")
    except Exception:
        run.note("truncated", "closed")


@scenario("acl-denied-on-sasl-listener")
def acl_denied(run: Run) -> None:
    tid = create_topic(run, run.topic())
    alice = run.wire(sasl_user="alice")
    run.call("metadata", METADATA, wire=alice,
             topics=[{"name": run.topic(), "topic_id": None}],
             allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
             include_topic_authorized_operations=True)
    produce(run, "produce", run.topic(), tid, batch(b"a"), wire=alice)
    run.call("create", 19, wire=alice, timeout=30_000, validate_only=False, topics=[
        {"name": run.topic("new"), "num_partitions": 1, "replication_factor": 1,
         "assignments": [], "configs": []}])


@scenario("acls-create-describe-delete")
def acls_roundtrip(run: Run) -> None:
    tid = create_topic(run, run.topic())
    # Allow alice to write (3 = LITERAL, 2 = TOPIC, 4 = WRITE, 3 = ALLOW).
    rule = {"resource_type": 2, "resource_name": run.topic(), "resource_pattern_type": 3,
            "principal": "User:alice", "host": "*", "operation": 4, "permission_type": 3}
    run.call("create", CREATE_ACLS, creations=[rule, {**rule, "principal": "alice"}])
    # Kafka's authorizer applies ACLs from the metadata log a moment after the controller
    # answers: asked until they are listed, so the produce below meets them.
    call_until(run, "describe", DESCRIBE_ACLS, lambda r: bool(r.resources),
               resource_type_filter=2, resource_name_filter=run.topic(),
               pattern_type_filter=3, principal_filter=None, host_filter=None, operation=1,
               permission_type=1)
    alice = run.wire(sasl_user="alice")
    produce(run, "produce_allowed", run.topic(), tid, batch(b"a"), wire=alice)
    run.call("delete", DELETE_ACLS, filters=[{
        "resource_type_filter": 2, "resource_name_filter": run.topic(),
        "pattern_type_filter": 3, "principal_filter": "User:alice", "host_filter": None,
        "operation": 1, "permission_type": 1}])
    call_until(run, "describe_after", DESCRIBE_ACLS, lambda r: not r.resources,
               resource_type_filter=2, resource_name_filter=run.topic(),
               pattern_type_filter=3, principal_filter=None, host_filter=None, operation=1,
               permission_type=1)
