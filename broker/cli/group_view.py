"""What ``kafkalite groups`` shows of a consumer group, gathered over the Kafka protocol
alone (so it works against any Kafka broker): the group's coordinator (FindCoordinator),
its members and their assignments, its committed offsets (OffsetFetch) and the log end
offsets of those partitions from their leaders (Metadata, ListOffsets).

Members come from the first describer in ``DESCRIBERS`` that knows the group:
ShareGroupDescribe (KIP-932 share groups), StreamsGroupDescribe (KIP-1071 streams groups:
each member's process and its active, standby and warm-up tasks, now and target) and
ConsumerGroupDescribe (KIP-848 consumer groups: group, assignment and member epochs, target
assignments) when the broker serves them, then DescribeGroups (classic groups, whose
consumer-protocol assignments are decoded). A new group type adds its describer there.
A share group has no committed offsets: its partitions' share-partition start offsets and
lag come from DescribeShareGroupOffsets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build
from kafkalite.protocol.errors import ErrorCode, ProtocolError
from kafkalite.protocol.names import CoordinatorType

LATEST = -1
CLIENT_ID = "kafkalite-groups"


class GroupLookupError(Exception):
    pass


@dataclass
class MemberRow:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    #: topic -> partitions it owns now.
    assignment: dict[str, list[int]]
    #: The member epoch (consumer groups; None for classic members).
    epoch: int | None = None
    #: topic -> partitions it is to own (consumer groups, while reconciling).
    target: dict[str, list[int]] | None = None
    subscription: list[str] | None = None
    #: Streams groups: the member's process (Streams instance).
    process_id: str | None = None
    #: Streams groups: "active", "standby", "warmup" -> subtopology -> partitions, owned
    #: now and to own (target).
    tasks: dict[str, dict[str, list[int]]] | None = None
    target_tasks: dict[str, dict[str, list[int]]] | None = None


@dataclass
class PartitionLag:
    topic: str
    partition: int
    #: The committed offset (the share-partition start offset for a share group).
    committed: int | None
    log_end: int | None
    owner: MemberRow | None
    #: The lag the broker reported (DescribeShareGroupOffsets v1), else computed here.
    reported_lag: int | None = None

    @property
    def lag(self) -> int | None:
        if self.reported_lag is not None:
            return self.reported_lag
        if self.committed is None or self.log_end is None or self.log_end < 0:
            return None
        return max(self.log_end - self.committed, 0)


@dataclass
class GroupView:
    group_id: str
    #: "classic", "consumer", "share" or "streams".
    group_type: str
    state: str
    protocol_type: str
    #: The assignment strategy of a classic group, the server assignor of a consumer group.
    assignor: str
    coordinator: tuple[int, str, int]
    members: list[MemberRow]
    #: Consumer groups only: the group epoch and the epoch of its target assignment.
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    partitions: list[PartitionLag] = field(default_factory=list)

    @property
    def exists(self) -> bool:
        return self.state not in ("Dead", "") or bool(self.members) or bool(self.partitions)


class Connections:
    """One connection per broker address, opened when first needed."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._open: dict[str, RawConnection] = {}

    def get(self, address: str | None = None) -> RawConnection:
        address = address or self.bootstrap
        conn = self._open.get(address)
        if conn is None:
            try:
                conn = self._open[address] = RawConnection(address, CLIENT_ID)
            except OSError as e:
                raise GroupLookupError(f"cannot connect to {address}: {e}") from None
        return conn

    def close(self) -> None:
        for conn in self._open.values():
            conn.close()
        self._open.clear()

    def __enter__(self) -> Connections:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _check(code: Any, what: str) -> None:
    if int(code) != 0:
        raise GroupLookupError(f"{what}: {ErrorCode(int(code)).name.upper()}")


def find_coordinator(conns: Connections, group_id: str) -> tuple[int, str, int]:
    conn = conns.get()
    v = conn.version(ApiKey.FIND_COORDINATOR, 4)
    if v >= 4:
        resp = conn.call(request(ApiKey.FIND_COORDINATOR, v, key_type=CoordinatorType.GROUP,
                                 coordinator_keys=(group_id,)))
        c = resp.coordinators[0]
        _check(c.error_code, "FindCoordinator")
        return int(c.node_id), c.host, int(c.port)
    resp = conn.call(request(ApiKey.FIND_COORDINATOR, v, key=group_id,
                             key_type=CoordinatorType.GROUP))
    _check(resp.error_code, "FindCoordinator")
    return int(resp.node_id), resp.host, int(resp.port)


# --- describers: the first that knows the group answers ----------------------------------


def _supports(conn: RawConnection, api_key: int) -> bool:
    return api_key in conn.versions


def describe_consumer_group(conn: RawConnection, group_id: str,
                            coordinator: tuple[int, str, int]) -> GroupView | None:
    """A KIP-848 consumer group (ConsumerGroupDescribe); None when the broker does not
    serve the API or the group is not a consumer group."""
    g = _describe_one(conn, ApiKey.CONSUMER_GROUP_DESCRIBE, "ConsumerGroupDescribe", group_id)
    return None if g is None else consumer_group_view(g, coordinator)


def _describe_one(conn: RawConnection, api: int, name: str, group_id: str) -> Any | None:
    """One group from ConsumerGroupDescribe or ShareGroupDescribe (both v1, same shape);
    None when the broker does not serve the API or the group is of another kind (or
    none at all: the next describer says which)."""
    if not _supports(conn, api):
        return None
    v = conn.version(api, 1)
    resp = conn.call(request(api, v, group_ids=(group_id,),
                             include_authorized_operations=False))
    g = resp.groups[0]
    if int(g.error_code) == ErrorCode.group_id_not_found.value:
        return None
    _check(g.error_code, name)
    return g


def describe_share_group(conn: RawConnection, group_id: str,
                         coordinator: tuple[int, str, int]) -> GroupView | None:
    """A KIP-932 share group (ShareGroupDescribe); None when the broker does not serve
    the API or the group is not a share group."""
    g = _describe_one(conn, ApiKey.SHARE_GROUP_DESCRIBE, "ShareGroupDescribe", group_id)
    if g is None:
        return None
    members = [MemberRow(
        member_id=m.member_id, instance_id=None, client_id=m.client_id,
        host=m.client_host, epoch=int(m.member_epoch),
        assignment={tp.topic_name: sorted(int(p) for p in tp.partitions)
                    for tp in m.assignment.topic_partitions},
        subscription=list(m.subscribed_topic_names)) for m in g.members]
    return GroupView(group_id=g.group_id, group_type="share", state=g.group_state,
                     protocol_type="share", assignor=g.assignor_name,
                     coordinator=coordinator, members=members,
                     group_epoch=int(g.group_epoch), assignment_epoch=int(g.assignment_epoch))


def _tasks(assignment: Any) -> dict[str, dict[str, list[int]]]:
    return {kind: {t.subtopology_id: sorted(int(p) for p in t.partitions)
                   for t in getattr(assignment, f"{kind}_tasks")}
            for kind in ("active", "standby", "warmup")}


def describe_streams_group(conn: RawConnection, group_id: str,
                           coordinator: tuple[int, str, int]) -> GroupView | None:
    """A KIP-1071 streams group (StreamsGroupDescribe); None when the broker does not
    serve the API or the group is not a streams group. A member's assignment (for the lag
    table's owners) is the input partitions of its active tasks: task (subtopology, p)
    reads partition p of the subtopology's source and repartition topics."""
    g = _describe_one(conn, ApiKey.STREAMS_GROUP_DESCRIBE, "StreamsGroupDescribe", group_id)
    if g is None:
        return None
    inputs = {s.subtopology_id: [*s.source_topics,
                                 *(t.name for t in s.repartition_source_topics)]
              for s in (g.topology.subtopologies or ()) if g.topology is not None}
    members = []
    for m in g.members:
        tasks = _tasks(m.assignment)
        assignment: dict[str, list[int]] = {}
        for sub, parts in tasks["active"].items():
            for topic in inputs.get(sub, ()):
                assignment[topic] = sorted({*assignment.get(topic, ()), *parts})
        members.append(MemberRow(
            member_id=m.member_id, instance_id=m.instance_id, client_id=m.client_id,
            host=m.client_host, assignment=assignment, epoch=int(m.member_epoch),
            process_id=m.process_id, tasks=tasks, target_tasks=_tasks(m.target_assignment)))
    return GroupView(group_id=g.group_id, group_type="streams", state=g.group_state,
                     protocol_type="streams", assignor=getattr(g, "assignor_name", None) or "",
                     coordinator=coordinator, members=members,
                     group_epoch=int(g.group_epoch), assignment_epoch=int(g.assignment_epoch))


def share_offsets(conn: RawConnection, group_id: str
                  ) -> dict[tuple[str, int], tuple[int, int | None]]:
    """(start offset, lag) of every share-partition the share group has state for; the
    lag is None before DescribeShareGroupOffsets v1."""
    if not _supports(conn, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS):
        return {}
    v = conn.version(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1)
    group_t = request_class(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, v,
                            "DescribeShareGroupOffsetsRequestGroup")
    resp = conn.call(request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, v, groups=(
        build(group_t, group_id=group_id, topics=None),)))
    g = resp.groups[0]
    _check(g.error_code, "DescribeShareGroupOffsets")
    return {(t.topic_name, int(p.partition_index)): (
        int(p.start_offset), int(p.lag) if v >= 1 and int(p.lag) >= 0 else None)
        for t in g.topics for p in t.partitions
        if int(p.error_code) == 0 and int(p.start_offset) >= 0}


def consumer_group_view(g: Any, coordinator: tuple[int, str, int]) -> GroupView:
    """A ConsumerGroupDescribe group entry as a GroupView."""
    def parts(assignment: Any) -> dict[str, list[int]]:
        return {tp.topic_name: sorted(int(p) for p in tp.partitions)
                for tp in assignment.topic_partitions}

    members = [MemberRow(
        member_id=m.member_id, instance_id=m.instance_id, client_id=m.client_id,
        host=m.client_host, assignment=parts(m.assignment), epoch=int(m.member_epoch),
        target=parts(m.target_assignment),
        subscription=list(m.subscribed_topic_names) or (
            [m.subscribed_topic_regex] if m.subscribed_topic_regex else None))
        for m in g.members]
    return GroupView(group_id=g.group_id, group_type="consumer", state=g.group_state,
                     protocol_type="consumer", assignor=g.assignor_name,
                     coordinator=coordinator, members=members,
                     group_epoch=int(g.group_epoch), assignment_epoch=int(g.assignment_epoch))


def describe_classic_group(conn: RawConnection, group_id: str,
                           coordinator: tuple[int, str, int]) -> GroupView | None:
    """A classic group (DescribeGroups); consumer-protocol assignments are decoded."""
    v = conn.version(ApiKey.DESCRIBE_GROUPS, 5)
    resp = conn.call(request(ApiKey.DESCRIBE_GROUPS, v, groups=(group_id,),
                             include_authorized_operations=False))
    g = resp.groups[0]
    _check(g.error_code, "DescribeGroups")
    members = []
    for m in g.members:
        assignment: dict[str, list[int]] = {}
        subscription = None
        if g.protocol_type == "consumer":
            try:
                decoded = co.decode_assignment(m.member_assignment) \
                    if m.member_assignment else None
                for tp in decoded.assigned_partitions if decoded is not None else ():
                    assignment[tp.topic] = sorted({*assignment.get(tp.topic, ()),
                                                   *tp.partitions})
                if m.member_metadata:
                    subscription = list(co.decode_subscription(m.member_metadata).topics)
            except (ProtocolError, UnicodeDecodeError):
                pass  # a consumer-protocol payload this client cannot read
        members.append(MemberRow(member_id=m.member_id,
                              instance_id=getattr(m, "group_instance_id", None),
                              client_id=m.client_id, host=m.client_host,
                              assignment=assignment, subscription=subscription))
    return GroupView(group_id=g.group_id, group_type="classic", state=g.group_state,
                     protocol_type=g.protocol_type, assignor=g.protocol_data,
                     coordinator=coordinator, members=members)


Describer = Callable[[RawConnection, str, tuple[int, str, int]], GroupView | None]
#: Tried in order; the first that returns a view describes the group.
DESCRIBERS: tuple[Describer, ...] = (describe_share_group, describe_streams_group,
                                     describe_consumer_group, describe_classic_group)


# --- offsets and lag --------------------------------------------------------------------


def committed_offsets(conn: RawConnection, group_id: str) -> dict[tuple[str, int], int]:
    v = conn.version(ApiKey.OFFSET_FETCH, 8)
    if v >= 8:
        group_t = request_class(ApiKey.OFFSET_FETCH, v, "OffsetFetchRequestGroup")
        resp = conn.call(request(ApiKey.OFFSET_FETCH, v, require_stable=False, groups=(
            build(group_t, group_id=group_id, member_id=None, member_epoch=-1, topics=None),)))
        _check(resp.groups[0].error_code, "OffsetFetch")
        topics = resp.groups[0].topics
    else:
        resp = conn.call(request(ApiKey.OFFSET_FETCH, v, group_id=group_id, topics=None,
                                 require_stable=False))
        _check(getattr(resp, "error_code", 0), "OffsetFetch")
        topics = resp.topics
    return {(t.name, int(p.partition_index)): int(p.committed_offset)
            for t in topics for p in t.partitions
            if int(p.error_code) == 0 and int(p.committed_offset) >= 0}


def log_end_offsets(conns: Connections, tps: Iterable[tuple[str, int]]
                    ) -> dict[tuple[str, int], int]:
    """The latest offset of each partition, asked of its leader."""
    wanted = sorted(set(tps))
    if not wanted:
        return {}
    conn = conns.get()
    v = conn.version(ApiKey.METADATA, 12)
    topic_t = request_class(ApiKey.METADATA, v, "MetadataRequestTopic")
    meta = conn.call(request(ApiKey.METADATA, v, allow_auto_topic_creation=False,
                             include_topic_authorized_operations=False,
                             include_cluster_authorized_operations=False,
                             topics=tuple(build(topic_t, name=t, topic_id=None)
                                          for t in sorted({t for t, _p in wanted}))))
    addresses = {int(b.node_id): f"{b.host}:{b.port}" for b in meta.brokers}
    leaders = {(t.name, int(p.partition_index)): int(p.leader_id)
               for t in meta.topics for p in t.partitions}
    by_leader: dict[int, list[tuple[str, int]]] = {}
    for tp in wanted:
        if tp in leaders:
            by_leader.setdefault(leaders[tp], []).append(tp)
    out: dict[tuple[str, int], int] = {}
    for leader, tps_of in by_leader.items():
        if leader not in addresses:
            continue
        lconn = conns.get(addresses[leader])
        lv = lconn.version(ApiKey.LIST_OFFSETS, 7)
        ltopic_t = request_class(ApiKey.LIST_OFFSETS, lv, "ListOffsetsTopic")
        lpart_t = request_class(ApiKey.LIST_OFFSETS, lv, "ListOffsetsPartition")
        topics: dict[str, list[int]] = {}
        for t, p in tps_of:
            topics.setdefault(t, []).append(p)
        resp = lconn.call(request(ApiKey.LIST_OFFSETS, lv, replica_id=-1, isolation_level=0,
                                  topics=tuple(build(ltopic_t, name=t, partitions=tuple(
                                      build(lpart_t, partition_index=p, current_leader_epoch=-1,
                                            timestamp=LATEST) for p in ps))
                                      for t, ps in topics.items())))
        for t in resp.topics:
            for p in t.partitions:
                if int(p.error_code) == 0:
                    out[t.name, int(p.partition_index)] = int(p.offset)
    return out


def describe_group(bootstrap: str, group_id: str) -> GroupView:
    """Members, assignments, committed offsets and lag of ``group_id``."""
    with Connections(bootstrap) as conns:
        coordinator = find_coordinator(conns, group_id)
        _node, host, port = coordinator
        conn = conns.get(f"{host}:{port}")
        view = None
        for describer in DESCRIBERS:
            view = describer(conn, group_id, coordinator)
            if view is not None:
                break
        assert view is not None  # DescribeGroups answers for any group id
        share: dict[tuple[str, int], tuple[int, int | None]] = {}
        if view.group_type == "share":
            share = share_offsets(conn, group_id)
            committed = {tp: start for tp, (start, _lag) in share.items()}
        else:
            committed = committed_offsets(conn, group_id)
        owners = {(t, p): m for m in view.members for t, ps in m.assignment.items()
                  for p in ps}
        tps = set(committed) | set(owners)
        ends = log_end_offsets(conns, tps)
        view.partitions = [PartitionLag(t, p, committed.get((t, p)), ends.get((t, p)),
                                        owners.get((t, p)), share.get((t, p), (0, None))[1])
                           for t, p in sorted(tps)]
        return view


@dataclass
class GroupListing:
    group_id: str
    group_type: str
    state: str
    protocol_type: str


def list_groups(bootstrap: str) -> list[GroupListing]:
    """Every group the broker (each broker, for a cluster) coordinates."""
    with Connections(bootstrap) as conns:
        conn = conns.get()
        v = conn.version(ApiKey.METADATA, 12)
        meta = conn.call(request(ApiKey.METADATA, v, topics=(), allow_auto_topic_creation=False,
                                 include_topic_authorized_operations=False,
                                 include_cluster_authorized_operations=False))
        out: dict[str, GroupListing] = {}
        for b in meta.brokers:
            bconn = conns.get(f"{b.host}:{b.port}")
            lv = bconn.version(ApiKey.LIST_GROUPS, 5)
            resp = bconn.call(request(ApiKey.LIST_GROUPS, lv, states_filter=(), types_filter=()))
            _check(resp.error_code, "ListGroups")
            for g in resp.groups:
                out[g.group_id] = GroupListing(
                    g.group_id, getattr(g, "group_type", "") or "classic",
                    getattr(g, "group_state", ""), g.protocol_type)
        return sorted(out.values(), key=lambda g: g.group_id)
