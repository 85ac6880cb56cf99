"""Authorization cases: KIP-1071 streams groups (Read on the group, then Describe on each
source topic, for a heartbeat; Describe on the group for StreamsGroupDescribe; Read on the
group for a topology description push)."""

from __future__ import annotations

import datetime
from typing import Any

from .authz_harness import GROUP_DENIED, TOPIC_DENIED, Api, G, O, T, case, codes_of, group_read

GROUP_ID_NOT_FOUND = 69
UNSUPPORTED_VERSION = 35


@case(88)
async def streams_group_heartbeat(a: Api) -> None:
    sub = a.n(88, 0, "Subtopology", subtopology_id="0", source_topics=("t",),
              source_topic_regex=(), state_changelog_topics=(), repartition_sink_topics=(),
              repartition_source_topics=(), copartition_groups=())
    fields: dict[str, Any] = dict(
        group_id="g", member_id="m1", member_epoch=0, endpoint_information_epoch=0,
        rebalance_timeout=datetime.timedelta(milliseconds=30000),
        topology=a.n(88, 0, "Topology", epoch=1, subtopologies=(sub,)),
        active_tasks=(), standby_tasks=(), warmup_tasks=(), process_id="p",
        client_tags=(), task_offsets=(), task_end_offsets=())
    await group_read(a, 88, 0, **fields)
    assert (await a.call(88, 0, **fields)).error_code == TOPIC_DENIED
    a.allow(T, "t", O.DESCRIBE)
    assert (await a.call(88, 0, **fields)).error_code == 0


@case(89)
async def streams_group_describe(a: Api) -> None:
    path = ("groups", "error_code")
    fields = dict(group_ids=("g",), include_authorized_operations=False)
    assert codes_of(await a.call(89, 0, **fields), *path) == [GROUP_DENIED]
    a.allow(G, "g", O.DESCRIBE)
    assert codes_of(await a.call(89, 0, **fields), *path) == [GROUP_ID_NOT_FOUND]


@case(93)
async def streams_group_topology_description_update(a: Api) -> None:
    # Read on the group; past it, no description plugin: UNSUPPORTED_VERSION, as Kafka.
    desc = a.n(93, 0, "TopologyDescription", subtopologies=(), global_stores=())
    fields: dict[str, Any] = dict(group_id="g", member_id="m1", topology_epoch=1,
                                  topology_description=desc)
    await group_read(a, 93, 0, **fields)
    assert (await a.call(93, 0, **fields)).error_code == UNSUPPORTED_VERSION
