"""Authorization cases: KIP-932 share groups (Read on the group, then Describe or Read on
each topic, as KafkaApis asks)."""

from __future__ import annotations

import uuid
from typing import Any

from .authz_harness import (
    GROUP_DENIED,
    SECOND,
    TOPIC_DENIED,
    Api,
    G,
    O,
    T,
    case,
    codes_of,
    group_read,
)

SHARE_SESSION_NOT_FOUND, GROUP_ID_NOT_FOUND = 122, 69


def _topic_id(a: Api) -> uuid.UUID:
    info = a.broker.storage.catalog.get("t")
    assert info is not None
    return info.topic_id


@case(76)
async def share_group_heartbeat(a: Api) -> None:
    fields: dict[str, Any] = dict(group_id="g", member_id="m1", member_epoch=0, rack_id=None,
                                  subscribed_topic_names=("t",))
    await group_read(a, 76, 1, **fields)
    assert (await a.call(76, 1, **fields)).error_code == TOPIC_DENIED
    a.allow(T, "t", O.DESCRIBE)
    assert (await a.call(76, 1, **fields)).error_code == 0


@case(77)
async def share_group_describe(a: Api) -> None:
    path = ("groups", "error_code")
    fields = dict(group_ids=("g",), include_authorized_operations=False)
    assert codes_of(await a.call(77, 1, **fields), *path) == [GROUP_DENIED]
    a.allow(G, "g", O.DESCRIBE)
    assert codes_of(await a.call(77, 1, **fields), *path) == [GROUP_ID_NOT_FOUND]


@case(78)
async def share_fetch(a: Api) -> None:
    topic = a.n(78, 1, "FetchTopic", topic_id=_topic_id(a), partitions=(
        a.n(78, 1, "FetchPartition", partition_index=0, partition_max_bytes=1 << 20,
            acknowledgement_batches=()),))

    def fields(epoch: int) -> dict[str, Any]:
        return dict(group_id="g", member_id="m1", share_session_epoch=epoch, max_wait=0 * SECOND,
                    min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
                    topics=(topic,), forgotten_topics_data=())

    await group_read(a, 78, 1, **fields(0))
    path = ("responses", "partitions", "error_code")
    assert codes_of(await a.call(78, 1, **fields(0)), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    got = await a.call(78, 1, **fields(0))
    assert codes_of(got, *path) == [0], got


@case(79)
async def share_acknowledge(a: Api) -> None:
    fields: dict[str, Any] = dict(group_id="g", member_id="m1", share_session_epoch=1,
                                  topics=())
    await group_read(a, 79, 1, **fields)
    assert (await a.call(79, 1, **fields)).error_code == SHARE_SESSION_NOT_FOUND
