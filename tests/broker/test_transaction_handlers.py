"""The transaction APIs' handlers on a broker built by the composition root (no socket):
versions and their error mappings, KIP-890's verification and (transaction version 2)
implicit adds on Produce and TxnOffsetCommit, DescribeProducers, FindCoordinator for
transactional ids."""

from __future__ import annotations

import datetime
from typing import Any

from kafkalite.protocol.apis import codec
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.protocol.names import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from kafkalite.protocol.records import ATTR_TRANSACTIONAL, NewRecord, build_batch

from .harness import Handlers
from .test_handlers import CREATE_TOPICS, create_topics

PRODUCE, FIND, INIT, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_COMMIT = 0, 10, 22, 24, 25, 26, 28
DESCRIBE_PRODUCERS, LIST_TXNS = 61, 66
SECOND = datetime.timedelta(seconds=1)


async def init(h: Handlers, tid: str, timeout_ms: int = 60_000, version: int = 4) -> Any:
    return await h.call(INIT, version, transactional_id=tid,
                        transaction_timeout=datetime.timedelta(milliseconds=timeout_ms),
                        producer_id=-1, producer_epoch=-1)


async def produce(h: Handlers, version: int, tid: str, pid: int, epoch: int, seq: int,
                  value: bytes = b"v") -> Any:
    batch = build_batch([NewRecord(None, value)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, attributes=ATTR_TRANSACTIONAL)
    req_t = codec(PRODUCE, version).request_type
    topic_t, part_t = nested(req_t, "TopicProduceData"), nested(req_t, "PartitionProduceData")
    resp = await h.call(PRODUCE, version, transactional_id=tid, acks=-1, timeout=SECOND,
                        topic_data=(topic_t(name="t", partition_data=(
                            part_t(index=0, records=batch),)),))
    return resp.responses[0].partition_responses[0]


async def txn_commit(h: Handlers, version: int, tid: str, pid: int, epoch: int,
                     group: str = "g") -> int:
    req_t = codec(TXN_COMMIT, version).request_type
    part = build(nested(req_t, "TxnOffsetCommitRequestPartition"), partition_index=0,
                 committed_offset=3, committed_leader_epoch=-1, committed_metadata="")
    topic = build(nested(req_t, "TxnOffsetCommitRequestTopic"), name="t", partitions=(part,))
    resp = await h.call(TXN_COMMIT, version, transactional_id=tid, group_id=group,
                        producer_id=pid, producer_epoch=epoch, generation_id=-1,
                        member_id="", group_instance_id=None, topics=(topic,))
    return int(resp.topics[0].partitions[0].error_code)


def in_transaction(h: Handlers, tid: str) -> set[tuple[str, int]]:
    meta = h.broker.transactions.transaction(tid)
    assert meta is not None
    return meta.partitions


async def test_find_coordinator_for_a_transactional_id_creates_the_topic(
        handlers: Handlers) -> None:
    assert handlers.broker.topics.get(TRANSACTION_STATE_TOPIC) is None
    resp = await handlers.call(FIND, 4, key_type=1, coordinator_keys=("tx",))
    assert [(c.error_code, c.node_id) for c in resp.coordinators] == [(E.none, 1)]
    info = handlers.broker.topics.get(TRANSACTION_STATE_TOPIC)
    assert info is not None and info.internal and info.partitions == 50
    assert info.configs["cleanup.policy"] == "compact"
    # Share groups are not served.
    resp = await handlers.call(FIND, 6, key_type=2, coordinator_keys=("s",))
    assert resp.coordinators[0].error_code == E.invalid_request


async def test_init_producer_id_versions_and_bad_input(handlers: Handlers) -> None:
    r = await init(handlers, "tx")
    assert (r.error_code, r.producer_epoch) == (E.none, 0)
    assert (await init(handlers, "tx", timeout_ms=900_001)).error_code == \
        E.invalid_transaction_timeout
    assert (await init(handlers, "", version=4)).error_code == E.invalid_request
    # KIP-360 (v3+): the expected producer id and epoch; a stale epoch is fenced, as
    # PRODUCER_FENCED from v4 and INVALID_PRODUCER_EPOCH before.
    again = await handlers.call(INIT, 4, transactional_id="tx", transaction_timeout=SECOND,
                                producer_id=r.producer_id, producer_epoch=r.producer_epoch)
    assert (again.error_code, again.producer_epoch) == (E.none, 1)
    for version, code in ((4, E.producer_fenced), (3, E.invalid_producer_epoch)):
        stale = await handlers.call(INIT, version, transactional_id="tx",
                                    transaction_timeout=SECOND, producer_id=r.producer_id,
                                    producer_epoch=5)
        assert stale.error_code == code
    # An idempotent producer still gets a fresh id at epoch 0; half a KIP-360 pair is bad.
    idem = await handlers.call(INIT, 4, transactional_id=None, transaction_timeout=SECOND,
                               producer_id=-1, producer_epoch=-1)
    assert (idem.error_code, idem.producer_epoch) == (E.none, 0)
    assert idem.producer_id != r.producer_id
    half = await handlers.call(INIT, 4, transactional_id=None, transaction_timeout=SECOND,
                               producer_id=7, producer_epoch=-1)
    assert half.error_code == E.invalid_request


async def test_produce_is_verified_with_the_coordinator(handlers: Handlers) -> None:
    await handlers.call(CREATE_TOPICS, 7, create_topics("t", partitions=1))
    r = await init(handlers, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    # The partition was never added to the transaction (KIP-890 part 1): Produce v11
    # answers TRANSACTION_ABORTABLE, older versions INVALID_TXN_STATE; nothing is written.
    assert (await produce(handlers, 11, "tx", pid, epoch, 0)).error_code == \
        E.transaction_abortable
    part = await produce(handlers, 9, "tx", pid, epoch, 0)
    assert (part.error_code, part.error_message) == (
        E.invalid_txn_state, "Partition was not added to the transaction")
    # A stale epoch: INVALID_PRODUCER_EPOCH; an unknown producer id: INVALID_PRODUCER_ID_MAPPING.
    assert (await produce(handlers, 9, "tx", pid, epoch + 1, 0)).error_code == \
        E.invalid_producer_epoch
    assert (await produce(handlers, 9, "tx", pid + 99, epoch, 0)).error_code == \
        E.invalid_producer_id_mapping
    log = handlers.broker.logs.get("t", 0)
    assert log is not None and log.log_end_offset == 0
    # Added with AddPartitionsToTxn: taken.
    t = nested(codec(ADD_PARTITIONS, 3).request_type, "AddPartitionsToTxnTopic")
    added = await handlers.call(ADD_PARTITIONS, 3, v3_and_below_transactional_id="tx",
                                v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                                v3_and_below_topics=(t(name="t", partitions=(0,)),))
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0] \
        .partition_error_code == E.none
    assert (await produce(handlers, 9, "tx", pid, epoch, 0)).error_code == E.none
    assert log.log_end_offset == 1 and log.last_stable_offset == 0


async def test_produce_v12_adds_the_partition_itself(handlers: Handlers) -> None:
    """Transaction version 2 (KIP-890 part 2): a Produce v12+ batch adds its partition to
    the transaction, and the producer sends no AddPartitionsToTxn."""
    await handlers.call(CREATE_TOPICS, 7, create_topics("t", partitions=1))
    r = await init(handlers, "tv2", version=5)
    assert (await produce(handlers, 12, "tv2", r.producer_id, r.producer_epoch, 0)
            ).error_code == E.none
    assert in_transaction(handlers, "tv2") == {("t", 0)}
    # EndTxn v5 answers the bumped epoch to go on with.
    end = await handlers.call(END_TXN, 5, transactional_id="tv2", producer_id=r.producer_id,
                              producer_epoch=r.producer_epoch, committed=True)
    assert (end.error_code, end.producer_id, end.producer_epoch) == (
        E.none, r.producer_id, r.producer_epoch + 1)
    log = handlers.broker.logs.get("t", 0)
    assert log is not None and log.last_stable_offset == log.log_end_offset == 2


async def test_txn_offset_commit_verification_and_implicit_add(handlers: Handlers) -> None:
    await handlers.call(CREATE_TOPICS, 7, create_topics("t", partitions=1))
    await handlers.call(FIND, 4, key_type=0, coordinator_keys=("g",))
    r = await init(handlers, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    # Without AddOffsetsToTxn the group's partition is not in the transaction.
    assert await txn_commit(handlers, 4, "tx", pid, epoch) == E.transaction_abortable
    assert await txn_commit(handlers, 3, "tx", pid, epoch) == E.invalid_txn_state
    assert await txn_commit(handlers, 3, "tx", pid, epoch + 1) == E.invalid_producer_epoch
    # v5 adds it (transaction version 2).
    assert await txn_commit(handlers, 5, "tx", pid, epoch) == E.none
    group_partition = handlers.broker.groups.core.partition_for("g")
    assert in_transaction(handlers, "tx") == {(OFFSETS_TOPIC, group_partition)}
    # Once the transaction has written there, no further check is needed.
    assert await txn_commit(handlers, 3, "tx", pid, epoch) == E.none
    # An empty group id, and an unknown topic partition.
    assert await txn_commit(handlers, 3, "tx", pid, epoch, group="") == E.invalid_group_id


async def test_add_partitions_v4_batches_and_verifies(handlers: Handlers) -> None:
    await handlers.call(CREATE_TOPICS, 7, create_topics("t", partitions=2))
    a, b = await init(handlers, "a"), await init(handlers, "b")
    req_t = codec(ADD_PARTITIONS, 5).request_type
    txn_t, topic_t = nested(req_t, "AddPartitionsToTxnTransaction"), \
        nested(req_t, "AddPartitionsToTxnTopic")

    def txn(tid: str, r: Any, parts: tuple[int, ...], verify: bool, topic: str = "t") -> Any:
        return txn_t(transactional_id=tid, producer_id=r.producer_id,
                     producer_epoch=r.producer_epoch, verify_only=verify,
                     topics=(topic_t(name=topic, partitions=parts),))

    resp = await handlers.call(ADD_PARTITIONS, 5, transactions=(
        txn("a", a, (0,), False), txn("b", b, (1,), True), txn("a", a, (0,), True, "nope")))
    got = [[(tr.name, p.partition_index, p.partition_error_code) for tr in x.topic_results
            for p in tr.results_by_partition] for x in resp.results_by_transaction]
    # Added; verified and not in "b"'s transaction; an unknown topic fails that entry.
    assert resp.error_code == E.none
    assert [x.transactional_id for x in resp.results_by_transaction] == ["a", "b", "a"]
    assert got == [[("t", 0, E.none)], [("t", 1, E.transaction_abortable)],
                   [("nope", 0, E.unknown_topic_or_partition)]]
    assert in_transaction(handlers, "a") == {("t", 0)}
    assert in_transaction(handlers, "b") == set()


async def test_describe_producers_lists_the_partition_state(handlers: Handlers) -> None:
    await handlers.call(CREATE_TOPICS, 7, create_topics("t", partitions=1))
    r = await init(handlers, "tx")
    topic = nested(codec(DESCRIBE_PRODUCERS, 0).request_type, "TopicRequest")
    await produce(handlers, 12, "tx", r.producer_id, r.producer_epoch, 0)
    resp = await handlers.call(DESCRIBE_PRODUCERS, 0, topics=(
        topic(name="t", partition_indexes=(0, 5)), topic(name="missing", partition_indexes=(0,)),
        topic(name="bad/name", partition_indexes=(0,))))
    ok, absent = resp.topics[0].partitions
    assert ok.error_code == E.none
    (state,) = ok.active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence,
            state.coordinator_epoch, state.current_txn_start_offset) == (
        r.producer_id, r.producer_epoch, 0, -1, 0)
    assert absent.error_code == E.unknown_topic_or_partition
    assert resp.topics[1].partitions[0].error_code == E.unknown_topic_or_partition
    assert resp.topics[2].partitions[0].error_code == E.invalid_topic_exception


async def test_list_transactions_filters(handlers: Handlers) -> None:
    await handlers.call(CREATE_TOPICS, 7, create_topics("t", partitions=1))
    a = await init(handlers, "alpha")
    await init(handlers, "beta")
    await produce(handlers, 12, "alpha", a.producer_id, a.producer_epoch, 0)

    async def listed(**filters: Any) -> list[tuple[str, str]]:
        fields = dict(state_filters=(), producer_id_filters=(), duration_filter=-1,
                      transactional_id_pattern=None)
        fields.update(filters)
        resp = await handlers.call(LIST_TXNS, 2, **fields)
        return sorted((t.transactional_id, t.transaction_state)
                      for t in resp.transaction_states)

    assert await listed() == [("alpha", "Ongoing"), ("beta", "Empty")]
    assert await listed(state_filters=("Ongoing",)) == [("alpha", "Ongoing")]
    assert await listed(producer_id_filters=(a.producer_id,)) == [("alpha", "Ongoing")]
    assert await listed(transactional_id_pattern="b.*") == [("beta", "Empty")]
    resp = await handlers.call(LIST_TXNS, 1, state_filters=("Nope",), producer_id_filters=(),
                               duration_filter=-1)
    assert resp.unknown_state_filters == ("Nope",)
