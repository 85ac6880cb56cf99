"""Authorization cases: the share-group offsets APIs (KIP-932), as KafkaApis asks:
Describe on the group and Describe on each topic for DescribeShareGroupOffsets; Read on
the group and on each topic for AlterShareGroupOffsets; Delete on the group and Read on
each topic for DeleteShareGroupOffsets."""

from __future__ import annotations

from .authz_harness import GROUP_DENIED, TOPIC_DENIED, Api, G, O, T, case, codes_of, group_read


async def empty_share_group(a: Api) -> None:
    """Share group "g" with no members (a member joins and leaves)."""
    a.allow(G, "g", O.READ)
    a.allow(T, "t", O.DESCRIBE)
    for epoch in (0, -1):
        r = await a.call(76, 1, group_id="g", member_id="m1", member_epoch=epoch,
                         rack_id=None, subscribed_topic_names=("t",) if epoch == 0 else None)
        assert r.error_code == 0, r


@case(90)
async def describe_share_group_offsets(a: Api) -> None:
    group = a.n(90, 1, "DescribeShareGroupOffsetsRequestGroup", group_id="g", topics=(
        a.n(90, 1, "DescribeShareGroupOffsetsRequestTopic", topic_name="t",
            partitions=(0,)),))
    assert codes_of(await a.call(90, 1, groups=(group,)), "groups", "error_code") == [
        GROUP_DENIED]
    a.allow(G, "g", O.DESCRIBE)
    path = ("groups", "topics", "partitions", "error_code")
    assert codes_of(await a.call(90, 1, groups=(group,)), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.DESCRIBE)
    assert codes_of(await a.call(90, 1, groups=(group,)), *path) == [0]


@case(91)
async def alter_share_group_offsets(a: Api) -> None:
    topic = a.n(91, 0, "AlterShareGroupOffsetsRequestTopic", topic_name="t", partitions=(
        a.n(91, 0, "AlterShareGroupOffsetsRequestPartition", partition_index=0,
            start_offset=0),))
    await group_read(a, 91, 0, group_id="g", topics=(topic,))
    await empty_share_group(a)
    path = ("responses", "partitions", "error_code")
    assert codes_of(await a.call(91, 0, group_id="g", topics=(topic,)), *path) == [
        TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    got = await a.call(91, 0, group_id="g", topics=(topic,))
    assert (got.error_code, codes_of(got, *path)) == (0, [0]), got


@case(92)
async def delete_share_group_offsets(a: Api) -> None:
    topic = a.n(92, 0, "DeleteShareGroupOffsetsRequestTopic", topic_name="t")
    assert (await a.call(92, 0, group_id="g", topics=(topic,))).error_code == GROUP_DENIED
    a.allow(G, "g", O.READ)  # not enough
    assert (await a.call(92, 0, group_id="g", topics=(topic,))).error_code == GROUP_DENIED
    a.allow(G, "g", O.DELETE)
    await empty_share_group(a)
    path = ("responses", "error_code")
    assert codes_of(await a.call(92, 0, group_id="g", topics=(topic,)), *path) == [
        TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    # Authorized; the group has no offsets for the topic yet.
    assert codes_of(await a.call(92, 0, group_id="g", topics=(topic,)), *path) == [3]
