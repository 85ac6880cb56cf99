"""A small KIP-848 heartbeat loop over the pure pieces, for property tests.

It follows Kafka's ``consumerGroupHeartbeat`` step by step (see the design note of
``coordinator/consumer/group.py``): every change is a list of records that is encoded,
decoded again and replayed, as the runtime will do; clients hold partitions and revoke
them promptly or late, and may lose a response.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from kafkalite.coordinator.consumer import records as cr
from kafkalite.coordinator.consumer.group import (
    ConsumerGroup,
    ConsumerGroupMember,
    TopicMetadata,
    replay,
    subscription_type,
)
from kafkalite.coordinator.consumer.reconciliation import (
    FencedMemberEpoch,
    build_target_assignment,
    reconcile,
    validate_member_epoch,
)
from kafkalite.coordinator.consumer.topic_regex import TopicRegexResolver
from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol import consumer_offsets as co

GROUP = "g"
TP = tuple[uuid.UUID, int]


class UnknownMember(Exception):
    pass


@dataclass
class Client:
    member_id: str
    names: frozenset[str] = frozenset()
    regex: str = ""
    epoch: int = 0
    held: set[TP] = field(default_factory=set)
    #: Held partitions the server asked back and the client has not let go of yet.
    revoking: set[TP] = field(default_factory=set)

    def owned(self) -> list[tuple[uuid.UUID, list[int]]]:
        by_topic: dict[uuid.UUID, list[int]] = {}
        for t, p in sorted(self.held):
            by_topic.setdefault(t, []).append(p)
        return list(by_topic.items())


@dataclass
class Sim:
    topics: dict[str, TopicMetadata]
    assignor: str = "uniform"
    groups: dict[str, ConsumerGroup] = field(default_factory=dict)
    clients: dict[str, Client] = field(default_factory=dict)
    resolver: TopicRegexResolver = field(default_factory=TopicRegexResolver)
    topic_version: int = 1
    now: int = 0
    records: int = 0

    @property
    def group(self) -> ConsumerGroup:
        return self.groups.get(GROUP) or ConsumerGroup(GROUP)

    def write(self, records: list[cr.Record]) -> None:
        for key, value in records:
            k = co.decode_key(co.encode_key(key), consumer_groups=True)
            raw = co.encode_value(value)
            assert isinstance(k, cg.KEY_CLASSES)
            replay(self.groups, k, co.decode_value(k, raw))
            self.records += 1

    # --- server side ------------------------------------------------------------------

    def _epoch_bump(self, g: ConsumerGroup, records: list[cr.Record]) -> int:
        epoch = g.group_epoch + 1
        records.append(cr.group_epoch_record(GROUP, epoch))
        return epoch

    def resolve_regexes(self, regex: str) -> None:
        """A new regex, or one resolved before the topic set changed, is resolved and written
        (with an epoch bump when its topics changed) before it is used: Kafka resolves
        asynchronously and then bumps the group epoch."""
        g = self.group
        known = g.resolved_regexes.get(regex)
        if not regex or (known is not None and known.version == self.topic_version):
            return
        resolved = self.resolver.resolve(regex, self.topics, self.topic_version, self.now)
        records = [cr.regular_expression_record(GROUP, regex, resolved)]
        if known is None or known.topics != resolved.topics:
            records.append(cr.group_epoch_record(GROUP, g.group_epoch + 1))
        self.write(records)

    def heartbeat(self, member_id: str, epoch: int, owned: list[tuple[uuid.UUID, list[int]]],
                  names: frozenset[str], regex: str) -> ConsumerGroupMember:
        self.resolve_regexes(regex)
        g = self.group
        old = g.members.get(member_id)
        if old is None and epoch != 0:
            raise UnknownMember(member_id)
        member = old or ConsumerGroupMember(member_id)
        if old is not None:
            validate_member_epoch(old, epoch, owned)
        updated = replace(member, subscribed_topic_names=names, subscribed_topic_regex=regex,
                          rebalance_timeout_ms=30000, client_id="c", client_host="/h",
                          server_assignor_name=self.assignor)
        records: list[cr.Record] = []
        # A new group moves away from epoch 0 at once (Kafka 4.0).
        bump = g.group_epoch == 0
        if updated != member:
            records.append(cr.member_subscription_record(GROUP, updated))
            bump |= (updated.subscribed_topic_names != member.subscribed_topic_names
                     or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        counts = g.compute_subscribed_topic_names(old, updated)
        meta = g.compute_subscription_metadata(counts, self.topics)
        if meta != g.subscription_metadata:
            records.append(cr.subscription_metadata_record(GROUP, meta))
            bump = True
        group_epoch = self._epoch_bump(g, records) if bump else g.group_epoch
        if group_epoch > g.assignment_epoch:
            stype = subscription_type(g.compute_subscribed_regexes(old, updated), counts,
                                      len(g.members) + (old is None))
            res = build_target_assignment(
                g, group_epoch, g.compute_preferred_server_assignor(old, updated), meta, stype,
                {member_id: updated})
            records.extend(res.records)
            target_epoch, target = group_epoch, res.assignment[member_id]
        else:
            target_epoch, target = g.assignment_epoch, g.target_assignment_of(member_id)
        new = reconcile(updated, target_epoch, target, g.current_partition_epoch, owned,
                        subscribed_topic_ids=g.subscribed_topic_ids(updated, self.topics),
                        has_subscription_changed=bump)
        if new != updated:
            records.append(cr.current_assignment_record(GROUP, new))
        self.write(records)
        return self.group.members[member_id]

    def remove(self, member_id: str) -> None:
        """A leave (epoch -1) or a session timeout: the member's records go, the epoch bumps."""
        g = self.group
        member = g.members.get(member_id)
        if member is None:
            return
        records = cr.remove_member_records(GROUP, member_id)
        counts = g.compute_subscribed_topic_names(member, None)
        meta = g.compute_subscription_metadata(counts, self.topics)
        if meta != g.subscription_metadata:
            records.append(cr.subscription_metadata_record(GROUP, meta))
        regex = member.regex
        if regex is not None and g.subscribed_regexes.get(regex) == 1:
            records.append(cr.regular_expression_tombstone(GROUP, regex))
        records.append(cr.group_epoch_record(GROUP, g.group_epoch + 1))
        self.write(records)

    # --- clients ----------------------------------------------------------------------

    def client_heartbeat(self, member_id: str, lose_response: bool = False,
                         revoke_now: bool = True) -> None:
        c = self.clients[member_id]
        self.now += 1
        try:
            m = self.heartbeat(member_id, c.epoch, c.owned(), c.names, c.regex)
        except (FencedMemberEpoch, UnknownMember):
            # The client gives up its partitions and rejoins from epoch 0.
            self.remove(member_id)
            c.held.clear()
            c.revoking.clear()
            c.epoch = 0
            return
        if lose_response:
            return
        c.epoch = m.member_epoch
        assigned = {(t, p) for t, ps in m.assigned_partitions.items() for p in ps}
        c.revoking |= c.held - assigned
        c.revoking &= c.held
        c.held |= assigned
        if revoke_now:
            self.finish_revocation(member_id)

    def finish_revocation(self, member_id: str) -> None:
        c = self.clients[member_id]
        c.held -= c.revoking
        c.revoking.clear()

    def join(self, member_id: str, names: frozenset[str], regex: str = "") -> None:
        self.clients[member_id] = Client(member_id, names, regex)
        self.client_heartbeat(member_id)

    def leave(self, member_id: str) -> None:
        self.remove(member_id)
        del self.clients[member_id]

    def create_topic(self, name: str, partitions: int) -> None:
        if name not in self.topics:
            self.topics[name] = TopicMetadata(uuid.uuid5(uuid.NAMESPACE_DNS, name), name,
                                              partitions)
            self.topic_version += 1

    def grow_topic(self, name: str, partitions: int) -> None:
        t = self.topics[name]
        if partitions > t.num_partitions:
            self.topics[name] = TopicMetadata(t.topic_id, name, partitions)
            self.topic_version += 1

    # --- checks -----------------------------------------------------------------------

    def server_owned(self) -> dict[str, set[TP]]:
        return {mid: {(t, p) for a in (m.assigned_partitions, m.partitions_pending_revocation)
                      for t, ps in a.items() for p in ps}
                for mid, m in self.group.members.items()}

    def check_exclusive(self) -> None:
        seen: dict[TP, str] = {}
        for mid, tps in self.server_owned().items():
            for tp in tps:
                assert tp not in seen, f"{tp} owned by {seen.get(tp)} and {mid} on the server"
                seen[tp] = mid
        held: dict[TP, str] = {}
        owned = self.server_owned()
        for mid, c in self.clients.items():
            for tp in c.held:
                assert tp not in held, f"{tp} consumed by {held.get(tp)} and {mid}"
                held[tp] = mid
                assert tp in owned.get(mid, set()), f"{mid} consumes {tp} it does not own"

    def subscribed_partitions(self) -> set[TP]:
        names: set[str] = set()
        for c in self.clients.values():
            names |= c.names
            if c.regex:
                names |= self.resolver.resolve(c.regex, self.topics, self.topic_version,
                                               self.now).topics
        return {(self.topics[n].topic_id, p) for n in names if n in self.topics
                for p in range(self.topics[n].num_partitions)}
