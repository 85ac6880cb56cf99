"""Group state to and from its ``__consumer_offsets`` record (GroupMetadataValue)."""

from __future__ import annotations

from kafkalite.protocol.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    Key,
    Value,
)
from kafkalite.protocol.consumer_offsets import MemberMetadata as MemberRecord

from .group import ClassicGroupMember, GroupMetadata
from .states import GroupState


def group_record(group: GroupMetadata, assignments: dict[str, bytes] | None = None
                 ) -> tuple[Key, Value]:
    """The GroupMetadata record of ``group`` as it stands (with ``assignments`` if given)."""
    members = tuple(
        MemberRecord(
            member_id=m.member_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(group.protocol_name),
            assignment=(assignments or {}).get(m.member_id, m.assignment)
            if assignments is not None else m.assignment,
            group_instance_id=m.group_instance_id,
        )
        for m in group.members.values()
    )
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation,
        protocol=group.protocol_name,
        leader=group.leader_id,
        current_state_timestamp=group.current_state_timestamp,
        members=members,
    )
    return GroupMetadataKey(group.group_id), value


def group_from_record(group_id: str, partition: int, v: GroupMetadataValue) -> GroupMetadata:
    group = GroupMetadata(
        group_id,
        partition,
        state=GroupState.STABLE if v.members else GroupState.EMPTY,
        generation=v.generation,
        protocol_type=v.protocol_type or None,
        protocol_name=v.protocol,
        leader_id=v.leader,
        current_state_timestamp=v.current_state_timestamp,
    )
    for r in v.members:
        m = ClassicGroupMember(
            r.member_id, r.group_instance_id, r.client_id, r.client_host,
            r.rebalance_timeout, r.session_timeout, v.protocol_type,
            [(v.protocol or "", r.subscription)], r.assignment,
        )
        group.members[r.member_id] = m
        if r.group_instance_id is not None:
            group.static_members[r.group_instance_id] = r.member_id
    if not group.members:
        group.leader_id = None
    return group

