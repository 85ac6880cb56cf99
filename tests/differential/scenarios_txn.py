"""Scenarios: producer ids, transactions, fencing."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from .harness import batch
from .registry import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    DESCRIBE_PRODUCERS,
    DESCRIBE_TRANSACTIONS,
    END_TXN,
    INIT_PRODUCER_ID,
    LIST_TRANSACTIONS,
    TXN_OFFSET_COMMIT,
    Run,
    create_topic,
    produce,
    scenario,
)


def init(run: Run, step: str, txn_id: str | None, timeout_ms: int = 60_000) -> Any:
    return run.call(step, INIT_PRODUCER_ID, transactional_id=txn_id,
                    transaction_timeout=timeout_ms, producer_id=-1, producer_epoch=-1)


def add_partitions(run: Run, step: str, txn: str, pid: int, epoch: int, topic: str) -> Any:
    return run.call(step, ADD_PARTITIONS_TO_TXN, v3_and_below_transactional_id=txn,
                    v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                    v3_and_below_topics=[{"name": topic, "partitions": [0]}],
                    transactions=[{"transactional_id": txn, "producer_id": pid,
                                   "producer_epoch": epoch, "verify_only": False,
                                   "topics": [{"name": topic, "partitions": [0]}]}])


@scenario("init-producer-id")
def init_producer_id(run: Run) -> None:
    init(run, "idempotent", None)
    init(run, "transactional", run.group("txn"))
    init(run, "bad_timeout", run.group("txn2"), timeout_ms=999_999_999)


# Found a difference in the reference itself (listed): its partition verification.
@scenario("transaction-commit")
def transaction_commit(run: Run) -> None:
    tid = create_topic(run, run.topic())
    txn, g = run.group("txn"), run.group()
    first = init(run, "init", txn)
    pid, epoch = int(first.producer_id), int(first.producer_epoch)
    add_partitions(run, "add_partitions", txn, pid, epoch, run.topic())
    produce(run, "produce", run.topic(), tid,
            batch(b"a", producer_id=pid, producer_epoch=epoch, base_sequence=0,
                  transactional=True), transactional_id=txn)
    run.call("add_offsets", ADD_OFFSETS_TO_TXN, transactional_id=txn, producer_id=pid,
             producer_epoch=epoch, group_id=g)
    run.call("txn_offset_commit", TXN_OFFSET_COMMIT, transactional_id=txn, group_id=g,
             producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="",
             group_instance_id=None, topics=[{"name": run.topic(), "topic_id": tid,
                                              "partitions": [
                 {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                  "committed_metadata": ""}]}])
    run.call("describe_ongoing", DESCRIBE_TRANSACTIONS, transactional_ids=[txn])
    run.call("end", END_TXN, transactional_id=txn, producer_id=pid, producer_epoch=epoch,
             committed=True)
    run.call("describe_unknown", DESCRIBE_TRANSACTIONS,
             transactional_ids=[run.group("none")])


@scenario("transaction-errors")
def transaction_errors(run: Run) -> None:
    tid = create_topic(run, run.topic())
    txn = run.group("txn")
    first = init(run, "init", txn)
    pid, epoch = int(first.producer_id), int(first.producer_epoch)
    run.call("end_without_begin", END_TXN, transactional_id=txn, producer_id=pid,
             producer_epoch=epoch, committed=True)
    run.call("end_wrong_pid", END_TXN, transactional_id=txn, producer_id=pid + 1000,
             producer_epoch=epoch, committed=False)
    run.call("end_unknown_txn", END_TXN, transactional_id=run.group("none"),
             producer_id=pid, producer_epoch=epoch, committed=False)
    second = init(run, "reinit", txn)
    add_partitions(run, "stale_epoch", txn, pid, epoch, run.topic())
    produce(run, "produce_not_in_txn", run.topic(), tid,
            batch(b"a", producer_id=int(second.producer_id),
                  producer_epoch=int(second.producer_epoch), base_sequence=0,
                  transactional=True), transactional_id=txn)


CONCURRENT_TRANSACTIONS = 51


def settled(call: Callable[[], Any], attempts: int = 100) -> Any:
    """Repeat a transaction request while the coordinator answers CONCURRENT_TRANSACTIONS
    (a completion still being written), as clients do; the final answer."""
    for _ in range(attempts):
        resp = call()
        if resp is None or int(resp.error_code) != CONCURRENT_TRANSACTIONS:
            return resp
        time.sleep(0.05)
    return resp


# Found differences: EndTxn v5 with a fenced epoch, and the epoch after a fenced abort
# (see allowlist.toml).
@scenario("producer-fencing")
def producer_fencing(run: Run) -> None:
    create_topic(run, run.topic())
    txn = run.group("txn")
    old = init(run, "init_old", txn)
    add_partitions(run, "add", txn, int(old.producer_id), int(old.producer_epoch),
                   run.topic())
    # The second producer's InitProducerId aborts the first one's transaction.
    new = settled(lambda: init(run, "init_new", txn))
    settled(lambda: run.call("end_old_epoch", END_TXN, transactional_id=txn,
                             producer_id=int(old.producer_id),
                             producer_epoch=int(old.producer_epoch), committed=True))
    settled(lambda: run.call("end_new_epoch", END_TXN, transactional_id=txn,
                             producer_id=int(new.producer_id),
                             producer_epoch=int(new.producer_epoch), committed=False))


@scenario("describe-producers")
def describe_producers(run: Run) -> None:
    tid = create_topic(run, run.topic())
    first = init(run, "init", None)
    produce(run, "produce", run.topic(), tid, batch(
        b"a", b"b", producer_id=int(first.producer_id),
        producer_epoch=int(first.producer_epoch), base_sequence=0))
    run.call("describe", DESCRIBE_PRODUCERS, topics=[
        {"name": run.topic(), "partition_indexes": [0, 5]},
        {"name": run.topic("missing"), "partition_indexes": [0]}])


@scenario("list-transactions")
def list_transactions(run: Run) -> None:
    txn = run.group("txn")
    first = init(run, "init", txn)
    resp = run.call("list", LIST_TRANSACTIONS, state_filters=[],
                    producer_id_filters=[int(first.producer_id)], duration_filter=-1,
                    transactional_id_pattern=None)
    assert resp is not None


# TxnOffsetCommit names topics by id from v6 (KIP-1319): an unknown id is UNKNOWN_TOPIC_ID,
# an unknown partition of a known topic UNKNOWN_TOPIC_OR_PARTITION, the rest committed.
@scenario("txn-offset-commit-topics")
def txn_offset_commit_topics(run: Run) -> None:
    tid = create_topic(run, run.topic())
    txn, g = run.group("txn"), run.group()
    first = init(run, "init", txn)
    pid, epoch = int(first.producer_id), int(first.producer_epoch)
    run.call("add_offsets", ADD_OFFSETS_TO_TXN, transactional_id=txn, producer_id=pid,
             producer_epoch=epoch, group_id=g)

    def part(p: int) -> dict[str, Any]:
        return {"partition_index": p, "committed_offset": 1, "committed_leader_epoch": -1,
                "committed_metadata": ""}

    run.call("commit", TXN_OFFSET_COMMIT, transactional_id=txn, group_id=g,
             producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="",
             group_instance_id=None, topics=[
                 {"name": run.topic(), "topic_id": tid, "partitions": [part(0), part(7)]},
                 {"name": run.topic("missing"), "topic_id": uuid.uuid4(),
                  "partitions": [part(0)]}])
    # A member of a classic group commits with its generation, then with a wrong one.
    from .scenarios_groups import joined

    live = run.group("live")
    member, generation = joined(run, live)
    run.call("add_offsets_live", ADD_OFFSETS_TO_TXN, transactional_id=txn, producer_id=pid,
             producer_epoch=epoch, group_id=live)
    for step, gen in (("commit_member", generation), ("commit_wrong_generation",
                                                      generation + 5)):
        run.call(step, TXN_OFFSET_COMMIT, transactional_id=txn, group_id=live,
                 producer_id=pid, producer_epoch=epoch, generation_id=gen,
                 generation_id_or_member_epoch=gen, member_id=member,
                 group_instance_id=None, topics=[
                     {"name": run.topic(), "topic_id": tid, "partitions": [part(0)]}])
    run.call("end", END_TXN, transactional_id=txn, producer_id=pid, producer_epoch=epoch,
             committed=False)
