"""Authorization cases: the data APIs and transactions."""

from __future__ import annotations

import datetime
from typing import Any

from kafkalite.broker.security.acl import PatternType
from kafkalite.protocol.records import NewRecord, build_batch

from .authz_harness import (
    CLUSTER_DENIED,
    GROUP_DENIED,
    SECOND,
    TOPIC_DENIED,
    TXN_DENIED,
    Api,
    C,
    G,
    O,
    T,
    X,
    case,
    codes_of,
    group_read,
)

# --- data --------------------------------------------------------------------------------

@case(0)
async def produce(a: Api) -> None:
    batch = build_batch([NewRecord(None, b"v")])

    def request(topic: str) -> dict[str, Any]:
        part = a.n(0, 9, "PartitionProduceData", index=0, records=batch)
        return dict(transactional_id=None, acks=1, timeout=SECOND, topic_data=(
            a.n(0, 9, "TopicProduceData", name=topic, partition_data=(part,)),))

    path = ("responses", "partition_responses", "error_code")
    assert codes_of(await a.call(0, 9, **request("t")), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.WRITE)
    assert codes_of(await a.call(0, 9, **request("t")), *path) == [0]
    # Auto-creation by Produce needs Create too (on the topic or the cluster).
    a.allow(T, "auto-p", O.WRITE)
    assert codes_of(await a.call(0, 9, **request("auto-p")), *path) == [3]
    assert a.broker.topics.get("auto-p") is None
    a.allow(T, "auto-p", O.CREATE)
    assert codes_of(await a.call(0, 9, **request("auto-p")), *path) == [0]


@case(1)
async def fetch(a: Api) -> None:
    def request(replica: int) -> dict[str, Any]:
        part = a.n(1, 12, "FetchPartition", partition=0, current_leader_epoch=-1,
                   fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                   partition_max_bytes=1 << 20)
        return dict(cluster_id=None, replica_id=replica, max_wait=datetime.timedelta(0),
                    min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                    session_epoch=-1, topics=(a.n(1, 12, "FetchTopic", topic="t",
                                                  partitions=(part,)),),
                    forgotten_topics_data=(), rack_id="")

    path = ("responses", "partitions", "error_code")
    assert codes_of(await a.call(1, 12, **request(-1)), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    assert codes_of(await a.call(1, 12, **request(-1)), *path) == [0]
    # A follower's fetch needs ClusterAction on the cluster, Read is not enough.
    assert codes_of(await a.call(1, 12, **request(1)), *path) == [TOPIC_DENIED]
    a.allow(C, "kafka-cluster", O.CLUSTER_ACTION)
    assert codes_of(await a.call(1, 12, **request(1)), *path) == [0]


@case(2)
async def list_offsets(a: Api) -> None:
    part = a.n(2, 7, "ListOffsetsPartition", partition_index=0, current_leader_epoch=-1,
               timestamp=-1)
    fields = dict(replica_id=-1, isolation_level=0,
                  topics=(a.n(2, 7, "ListOffsetsTopic", name="t", partitions=(part,)),))
    path = ("topics", "partitions", "error_code")
    assert codes_of(await a.call(2, 7, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.DESCRIBE)
    assert codes_of(await a.call(2, 7, **fields), *path) == [0]


@case(21)
async def delete_records(a: Api) -> None:
    part = a.n(21, 2, "DeleteRecordsPartition", partition_index=0, offset=0)
    fields = dict(timeout=SECOND,
                  topics=(a.n(21, 2, "DeleteRecordsTopic", name="t", partitions=(part,)),))
    path = ("topics", "partitions", "error_code")
    assert codes_of(await a.call(21, 2, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)  # Read, Describe: not Delete
    assert codes_of(await a.call(21, 2, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.DELETE)
    assert codes_of(await a.call(21, 2, **fields), *path) == [0]


@case(22)
async def init_producer_id(a: Api) -> None:
    fields = dict(transactional_id=None, transaction_timeout=SECOND, producer_id=-1,
                  producer_epoch=-1)
    assert (await a.call(22, 4, **fields)).error_code == CLUSTER_DENIED
    # KIP-679: Write on any topic (here by prefix) is enough for an idempotent producer.
    a.allow(T, "orders-", O.WRITE, PatternType.PREFIXED)
    assert (await a.call(22, 4, **fields)).error_code == 0
    a.revoke_all()
    a.allow(C, "kafka-cluster", O.IDEMPOTENT_WRITE)
    assert (await a.call(22, 4, **fields)).error_code == 0
    # With a transactional id: Write on it, whatever the cluster ACLs.
    fields["transactional_id"] = "tx"
    assert (await a.call(22, 4, **fields)).error_code == TXN_DENIED
    a.allow(X, "tx", O.DESCRIBE)  # not enough
    assert (await a.call(22, 4, **fields)).error_code == TXN_DENIED
    a.allow(X, "tx", O.WRITE)
    resp = await a.call(22, 4, **fields)
    assert (resp.error_code, resp.producer_epoch) == (0, 0)


# --- transactions --------------------------------------------------------------------------


async def _begun(a: Api, tid: str = "tx") -> tuple[int, int]:
    """A transactional id alice may write, initialized: (producer id, epoch)."""
    a.allow(X, tid, O.WRITE)
    resp = await a.call(22, 4, transactional_id=tid, transaction_timeout=SECOND * 60,
                        producer_id=-1, producer_epoch=-1)
    assert resp.error_code == 0
    a.revoke_all()
    return resp.producer_id, resp.producer_epoch


@case(24)
async def add_partitions_to_txn(a: Api) -> None:
    pid, epoch = await _begun(a)
    fields = dict(v3_and_below_transactional_id="tx", v3_and_below_producer_id=pid,
                  v3_and_below_producer_epoch=epoch, v3_and_below_topics=(
                      a.n(24, 3, "AddPartitionsToTxnTopic", name="t", partitions=(0,)),))
    path = ("results_by_topic_v3_and_below", "results_by_partition", "partition_error_code")
    assert codes_of(await a.call(24, 3, **fields), *path) == [TXN_DENIED]
    a.allow(X, "tx", O.WRITE)
    assert codes_of(await a.call(24, 3, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.WRITE)
    assert codes_of(await a.call(24, 3, **fields), *path) == [0]
    # v4+ comes from brokers: ClusterAction, and no transactional id or topic checks.
    a.revoke_all()
    txn = a.n(24, 5, "AddPartitionsToTxnTransaction", transactional_id="tx", producer_id=pid,
              producer_epoch=epoch, verify_only=True, topics=(
                  a.n(24, 5, "AddPartitionsToTxnTopic", name="t", partitions=(0,)),))
    assert (await a.call(24, 5, transactions=(txn,))).error_code == CLUSTER_DENIED
    a.allow(C, "kafka-cluster", O.CLUSTER_ACTION)
    resp = await a.call(24, 5, transactions=(txn,))
    assert resp.error_code == 0
    assert codes_of(resp, "results_by_transaction", "topic_results",
                    "results_by_partition", "partition_error_code") == [0]


@case(25)
async def add_offsets_to_txn(a: Api) -> None:
    pid, epoch = await _begun(a)
    fields = dict(transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="g")
    assert (await a.call(25, 3, **fields)).error_code == TXN_DENIED
    a.allow(X, "tx", O.WRITE)
    await group_read(a, 25, 3, **fields)
    assert (await a.call(25, 3, **fields)).error_code == 0


@case(26)
async def end_txn(a: Api) -> None:
    pid, epoch = await _begun(a)
    fields = dict(transactional_id="tx", producer_id=pid, producer_epoch=epoch,
                  committed=False)
    assert (await a.call(26, 4, **fields)).error_code == TXN_DENIED
    a.allow(X, "tx", O.DESCRIBE)
    assert (await a.call(26, 4, **fields)).error_code == TXN_DENIED
    a.allow(X, "tx", O.WRITE)
    assert (await a.call(26, 4, **fields)).error_code == 48  # INVALID_TXN_STATE: none open


@case(27)
async def write_txn_markers(a: Api) -> None:
    marker = a.n(27, 1, "WritableTxnMarker", producer_id=7, producer_epoch=0,
                 transaction_result=False, coordinator_epoch=0, topics=(
                     a.n(27, 1, "WritableTxnMarkerTopic", name="t", partition_indexes=(0,)),))
    path = ("markers", "topics", "partitions", "error_code")
    end = a.broker.logs.get("t", 0)
    assert end is not None
    before = end.log_end_offset
    assert codes_of(await a.call(27, 1, markers=(marker,)), *path) == [CLUSTER_DENIED]
    assert end.log_end_offset == before  # nothing written
    a.allow(C, "kafka-cluster", O.CLUSTER_ACTION)
    assert codes_of(await a.call(27, 1, markers=(marker,)), *path) == [0]
    assert end.log_end_offset == before + 1


@case(28)
async def txn_offset_commit(a: Api) -> None:
    pid, epoch = await _begun(a)
    part = a.n(28, 3, "TxnOffsetCommitRequestPartition", partition_index=0,
               committed_offset=1, committed_leader_epoch=-1, committed_metadata="")
    fields = dict(transactional_id="tx", group_id="g", producer_id=pid, producer_epoch=epoch,
                  generation_id=-1, member_id="", group_instance_id=None,
                  topics=(a.n(28, 3, "TxnOffsetCommitRequestTopic", name="t",
                              partitions=(part,)),))
    path = ("topics", "partitions", "error_code")
    assert codes_of(await a.call(28, 3, **fields), *path) == [TXN_DENIED]
    a.allow(X, "tx", O.WRITE)
    assert codes_of(await a.call(28, 3, **fields), *path) == [GROUP_DENIED]
    a.allow(G, "g", O.READ)
    assert codes_of(await a.call(28, 3, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    # Authorized; the group's partition is not in the transaction (no AddOffsetsToTxn).
    assert codes_of(await a.call(28, 3, **fields), *path) == [48]


@case(61)
async def describe_producers(a: Api) -> None:
    fields = dict(topics=(a.n(61, 0, "TopicRequest", name="t", partition_indexes=(0,)),))
    path = ("topics", "partitions", "error_code")
    assert codes_of(await a.call(61, 0, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.DESCRIBE)  # Read is what Kafka asks for
    assert codes_of(await a.call(61, 0, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    assert codes_of(await a.call(61, 0, **fields), *path) == [0]


@case(65)
async def describe_transactions(a: Api) -> None:
    pid, epoch = await _begun(a)
    a.allow(X, "tx", O.WRITE)
    a.allow(G, "g", O.READ)
    assert (await a.call(25, 3, transactional_id="tx", producer_id=pid, producer_epoch=epoch,
                         group_id="g")).error_code == 0
    a.revoke_all()
    path = ("transaction_states", "error_code")
    assert codes_of(await a.call(65, 0, transactional_ids=("tx",)), *path) == [TXN_DENIED]
    a.allow(X, "tx", O.DESCRIBE)
    resp = await a.call(65, 0, transactional_ids=("tx",))
    assert codes_of(resp, *path) == [0]
    # Ongoing, its partitions shown only where alice may describe the topic.
    assert (resp.transaction_states[0].transaction_state,
            resp.transaction_states[0].topics) == ("Ongoing", ())
    a.allow(T, "__consumer_offsets", O.DESCRIBE)
    resp = await a.call(65, 0, transactional_ids=("tx",))
    assert [t.topic for t in resp.transaction_states[0].topics] == ["__consumer_offsets"]


@case(66)
async def list_transactions(a: Api) -> None:
    await _begun(a, "tx")
    await _begun(a, "other")
    fields = dict(state_filters=(), producer_id_filters=(), duration_filter=-1)
    # Only the transactional ids alice may describe are listed.
    assert (await a.call(66, 1, **fields)).transaction_states == ()
    a.allow(X, "tx", O.DESCRIBE)
    resp = await a.call(66, 1, **fields)
    assert [t.transactional_id for t in resp.transaction_states] == ["tx"]


@case(23)
async def offset_for_leader_epoch(a: Api) -> None:
    part = a.n(23, 4, "OffsetForLeaderPartition", partition=0, current_leader_epoch=-1,
               leader_epoch=0)
    fields = dict(replica_id=-1, topics=(a.n(23, 4, "OffsetForLeaderTopic", topic="t",
                                             partitions=(part,)),))
    path = ("topics", "partitions", "error_code")
    assert codes_of(await a.call(23, 4, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.DESCRIBE)  # a consumer's check (KIP-320)
    assert codes_of(await a.call(23, 4, **fields), *path) == [0]
    a.revoke_all()
    a.allow(C, "kafka-cluster", O.CLUSTER_ACTION)  # a broker's
    assert codes_of(await a.call(23, 4, **fields), *path) == [0]
