"""TxnOffsetCommit v0-v6: a transactional producer's consumed offsets, written to
``__consumer_offsets`` in a transactional batch and pending until the transaction's marker
(``coordinator/offsets/transactional.py``).

As KafkaApis: Write on the transactional id, Read on the group, Read on each topic; unknown
topics and partitions answer UNKNOWN_TOPIC_OR_PARTITION and are not committed. Then, as
the group coordinator's ``scheduleTransactionalWriteOperation``, the group's partition is
verified to be in the transaction (or, v5, added to it; ``txn_verify``) before the records
are written. v6 names topics by id (KIP-1319): an id the catalogue does not know is
answered UNKNOWN_TOPIC_ID, after the transactional id's and the group's checks, as
KafkaApis does.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit, PartitionCommitView
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, OFFSETS_TOPIC

from ...auth import Access, Operation, ResourceType
from ...context import RequestContext
from ...topic_store import Storage
from .txn_verify import TxnVerification, offset_commit_error

TXN_OFFSET_COMMIT = ApiKey.TXN_OFFSET_COMMIT

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    TXN_OFFSET_COMMIT: (0, 6),
}

_NO_TOPIC_ID = uuid.UUID(int=0)



def txn_offset_commit(storage: Storage, runtime: CoordinatorRuntime, verify: TxnVerification,
                      access: Access, ctx: RequestContext, req: Any) -> Any:
    v = ctx.api_version
    resp_t = codecs.codec(TXN_OFFSET_COMMIT, v).response_type
    topic_t = nested(resp_t, "TxnOffsetCommitResponseTopic")
    part_t = nested(resp_t, "TxnOffsetCommitResponsePartition")
    # (name, topic id, partitions); from v6 topics come by id, the name is the catalogue's
    # (a placeholder keying the answers of an id it does not know).
    named: list[tuple[str, uuid.UUID | None, Any]] = []
    for t in req.topics:
        if v >= 6:
            tid = t.topic_id or _NO_TOPIC_ID  # kio reads the zero UUID as None
            info = storage.catalog.by_id(tid)
            named.append((info.name if info is not None else f"\x00{tid}", tid, t.partitions))
        else:
            named.append((t.name, None, t.partitions))
    ids = {name: tid for name, tid, _ps in named}
    requested = [(name, p.partition_index) for name, _tid, ps in named for p in ps]

    def respond(errors: dict[tuple[str, int], ErrorCode]) -> Any:
        by_topic: dict[str, list[Any]] = {}
        for (topic, p), err in errors.items():
            if v < 2 and err is ErrorCode.coordinator_load_in_progress:
                err = ErrorCode.coordinator_not_available  # clients before 2.0 (KAFKA-7296)
            by_topic.setdefault(topic, []).append(build(part_t, partition_index=p,
                                                        error_code=err))
        return build(resp_t, throttle_time=NO_THROTTLE, topics=tuple(
            build(topic_t, name=t, topic_id=ids.get(t), partitions=tuple(ps))
            for t, ps in by_topic.items()))

    if not access.permits(ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID,
                          req.transactional_id):
        return respond(dict.fromkeys(requested, ErrorCode.transactional_id_authorization_failed))
    if not access.permits(ctx, Operation.READ, ResourceType.GROUP, req.group_id):
        return respond(dict.fromkeys(requested, ErrorCode.group_authorization_failed))
    rejected: dict[tuple[str, int], ErrorCode] = {}
    topics: list[tuple[str, Sequence[PartitionCommitView]]] = []
    for name, _tid, partitions in named:
        if name.startswith("\x00"):
            rejected.update(dict.fromkeys(((name, p.partition_index) for p in partitions),
                                          ErrorCode.unknown_topic_id))
            continue
        if not access.permits(ctx, Operation.READ, ResourceType.TOPIC, name):
            rejected.update(dict.fromkeys(((name, p.partition_index) for p in partitions),
                                          ErrorCode.topic_authorization_failed))
            continue
        info = storage.catalog.get(name)
        count = -1 if info is None else info.partitions
        given: Sequence[PartitionCommitView] = partitions
        if v < 2:  # no leader epoch before v2
            given = [PartitionCommit(p.partition_index, p.committed_offset, -1,
                                     p.committed_metadata) for p in given]
        valid = [p for p in given if 0 <= p.partition_index < count]
        rejected.update(dict.fromkeys(((name, p.partition_index) for p in partitions
                                       if not 0 <= p.partition_index < count),
                                      ErrorCode.unknown_topic_or_partition))
        if valid:
            topics.append((name, valid))
    if not topics:
        return respond({tp: rejected[tp] for tp in requested})
    parts = [(t, p.partition_index) for t, ps in topics for p in ps]

    def merged(errors: dict[tuple[str, int], ErrorCode]) -> Any:
        everything = {**rejected, **errors}
        return respond({tp: everything[tp] for tp in requested if tp in everything})

    if not req.group_id:
        return merged(dict.fromkeys(parts, ErrorCode.invalid_group_id))
    err = _verify(storage, runtime, verify, req, v)
    if err is not NO_ERROR:
        return merged(dict.fromkeys(parts, err))
    request = CommitRequest(
        group_id=req.group_id,
        member_id=getattr(req, "member_id", ""),
        instance_id=getattr(req, "group_instance_id", None),
        # kio names the field as Kafka's older specs did; v6 (generated) as 4.4's.
        generation_id=getattr(req, "generation_id_or_member_epoch",
                              getattr(req, "generation_id", -1)),
        topics=topics,
        api_version=v,
    )
    result: dict[tuple[str, int], ErrorCode] = runtime.groups.write(
        lambda g, now: g.commit_txn_offsets(now, request, req.producer_id, req.producer_epoch))
    return merged(result)


def _verify(storage: Storage, runtime: CoordinatorRuntime, verify: TxnVerification, req: Any,
            version: int) -> ErrorCode:
    """The group's partition in the producer's transaction, when this write would open the
    producer's transaction there (Kafka verifies only then)."""
    add = version >= 5
    if not add and not verify.enabled:
        return NO_ERROR
    partition = runtime.groups.query(lambda g: g.partition_for(req.group_id))
    plog = storage.logs.get(OFFSETS_TOPIC, partition)
    if plog is not None and plog.has_ongoing_transaction(req.producer_id):
        return NO_ERROR
    err = verify.check(req.transactional_id, req.producer_id, req.producer_epoch,
                       (OFFSETS_TOPIC, partition), add)
    return offset_commit_error(err, version)
