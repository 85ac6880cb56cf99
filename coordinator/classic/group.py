"""Classic group state: GroupMetadata and ClassicGroupMember, as Kafka's ClassicGroup keeps them.

Fields are public for the other request families (offsets, DescribeGroups, ListGroups).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..offsets.store import subscribed_topics_of
from .states import GroupState, check_transition


@dataclass(eq=False, slots=True)
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    #: (name, metadata) in the member's order of preference.
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    #: Opaque handle of a parked JoinGroup / SyncGroup response (the runtime's future).
    join_waiter: Any = None
    join_version: int = 0
    sync_waiter: Any = None
    #: Joined but not yet through a completed join (expires by the new-member timeout).
    is_new: bool = False
    heartbeat_satisfied: bool = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols


@dataclass(eq=False, slots=True)
class GroupMetadata:
    group_id: str
    partition: int
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, ClassicGroupMember] = field(default_factory=dict)
    #: KIP-394 members given an id but not yet joined with it.
    pending_members: set[str] = field(default_factory=set)
    #: Members that must still send SyncGroup for this generation.
    pending_sync: set[str] = field(default_factory=set)
    #: group.instance.id -> member id.
    static_members: dict[str, str] = field(default_factory=dict)
    current_state_timestamp: int = -1
    #: Set when a member joins during the initial delayed join (KIP-134).
    new_member_added: bool = False
    #: Remaining budget of the initial delayed join, when one is running.
    initial_join_remaining_ms: int | None = None

    # --- queries ----------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        if instance_id is None:
            return False
        current = self.static_members.get(instance_id)
        return current is not None and current != member_id

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.join_waiter is not None)

    def has_all_members_joined(self) -> bool:
        return (
            len(self.members) == self.num_awaiting_join() and not self.pending_members
        )

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self, exclude: str | None = None) -> list[str] | None:
        """Protocols every member (but ``exclude``) supports, or None when there is none."""
        common: set[str] | None = None
        for m in self.members.values():
            if m.member_id == exclude:
                continue
            names = set(m.protocol_names())
            common = names if common is None else common & names
        return None if common is None else sorted(common)

    def supports_protocols(
        self, protocol_type: str, protocols: list[tuple[str, bytes]], member_id: str | None = None
    ) -> bool:
        names = [p for p, _ in protocols]
        others = [m for m in self.members.values() if m.member_id != member_id]
        if not others:
            return bool(protocol_type) and bool(names)
        if self.protocol_type is not None and self.protocol_type != protocol_type:
            return False
        common = self.candidate_protocols(exclude=member_id) or []
        return any(n in common for n in names)

    def select_protocol(self) -> str | None:
        """Kafka's vote: each member votes for its most preferred common protocol."""
        common = self.candidate_protocols()
        if not common:
            return None
        votes: dict[str, int] = {}
        for m in self.members.values():
            for name in m.protocol_names():
                if name in common:
                    votes[name] = votes.get(name, 0) + 1
                    break
        # Ties go to the protocol listed first by the leader-elect's preference order.
        order = {n: i for i, n in enumerate(next(iter(self.members.values())).protocol_names())}
        return max(votes, key=lambda n: (votes[n], -order.get(n, len(order))))

    # --- changes ----------------------------------------------------------------------

    def add(self, member: ClassicGroupMember) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if self.leader_id is None:
            self.leader_id = member.member_id
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        member = self.members.pop(member_id, None)
        self.pending_sync.discard(member_id)
        if member is not None and member.group_instance_id is not None:
            if self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        if not self.members:
            self.leader_id = None
        return member

    def transition(self, state: GroupState, now: int) -> None:
        """Move to ``state`` (checked against ``states.VALID_PREVIOUS_STATES``)."""
        check_transition(self.group_id, self.state, state)
        self.state = state
        self.current_state_timestamp = now

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, None when unknown (see subscribed_topics_of)."""
        return subscribed_topics_of(self.protocol_type, self.protocol_name,
                                    [m.metadata(self.protocol_name) for m in self.members.values()])
