"""DescribeGroups v0-v5, ListGroups v0-v5 and DeleteGroups v0-v2 over the coordinator's
groups (classic and KIP-848 consumer groups, listed with their type), on the group
coordinator's core driven by its runtime."""

from __future__ import annotations

from typing import Any

from kafkalite.coordinator.results import DescribedGroup
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, OPS_OMITTED

from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...context import RequestContext

LIST_GROUPS = ApiKey.LIST_GROUPS
DESCRIBE_GROUPS = ApiKey.DESCRIBE_GROUPS
DELETE_GROUPS = ApiKey.DELETE_GROUPS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    DESCRIBE_GROUPS: (0, 6),
    LIST_GROUPS: (0, 5),
    DELETE_GROUPS: (0, 3),
}



def describe_groups(runtime: CoordinatorRuntime, access: Access, ctx: RequestContext,
                    req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_GROUPS, ctx.api_version).response_type
    group_t = nested(resp_t, "DescribedGroup")
    member_t = nested(resp_t, "DescribedGroupMember")
    out = []
    want_ops = bool(getattr(req, "include_authorized_operations", False))
    for group_id in req.groups:
        if not access.permits(ctx, Operation.DESCRIBE, ResourceType.GROUP, group_id):
            out.append(build(group_t, error_code=ErrorCode.group_authorization_failed,
                             group_id=group_id, group_state="", protocol_type="",
                             protocol_data="", authorized_operations=OPS_OMITTED, members=()))
            continue
        d = _describe(runtime, group_id)
        ops = access.operations_for(ctx, ResourceType.GROUP, group_id) if want_ops else OPS_OMITTED
        error = ErrorCode(d.error)
        message = None
        if (ctx.api_version >= 6 and error is NO_ERROR and d.state == "Dead"
                and not d.protocol_type and not d.members):
            # KIP-1043: from v6 a group that does not exist is GROUP_ID_NOT_FOUND.
            error, message = ErrorCode.group_id_not_found, f"Group {group_id} not found."
        out.append(build(
            group_t, error_code=error, error_message=message, group_id=group_id,
            group_state=d.state, protocol_type=d.protocol_type,
            protocol_data=d.protocol, authorized_operations=ops,
            members=tuple(build(
                member_t, member_id=m.member_id, group_instance_id=m.instance_id,
                client_id=m.client_id, client_host=m.client_host,
                member_metadata=m.metadata, member_assignment=m.assignment)
                for m in d.members),
        ))
    return build(resp_t, throttle_time=NO_THROTTLE, groups=tuple(out))


def list_groups(runtime: CoordinatorRuntime, access: Access, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(LIST_GROUPS, ctx.api_version).response_type
    listed_t = nested(resp_t, "ListedGroup")
    states = {s.strip().lower() for s in getattr(req, "states_filter", ())}
    # Kafka's GroupType.parse: an unknown type matches no group.
    types = {t.strip().lower() for t in getattr(req, "types_filter", ())}
    groups = []
    # As KafkaApis: Describe on the cluster lists every group, else those the principal
    # may describe.
    everything = access.permits(ctx, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)
    for g in runtime.groups.query(lambda c: c.list_groups()):
        if not everything and not access.permits(ctx, Operation.DESCRIBE, ResourceType.GROUP,
                                                 g.group_id):
            continue
        if states and g.state.lower() not in states:
            continue
        if types and g.group_type not in types:
            continue
        groups.append(build(listed_t, group_id=g.group_id, protocol_type=g.protocol_type,
                            group_state=g.state, group_type=g.group_type))
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR,
                 groups=tuple(groups))


def delete_groups(runtime: CoordinatorRuntime, access: Access, ctx: RequestContext,
                  req: Any) -> Any:
    """A deleted share group's share-partition state goes with it (the share-partition
    manager listens for the deletion)."""
    resp_t = codecs.codec(DELETE_GROUPS, ctx.api_version).response_type
    result_t = nested(resp_t, "DeletableGroupResult")
    results = []
    for group_id in req.groups_names:
        if not access.permits(ctx, Operation.DELETE, ResourceType.GROUP, group_id):
            results.append(build(result_t, group_id=group_id,
                                 error_code=ErrorCode.group_authorization_failed))
            continue
        err = _delete(runtime, group_id)
        results.append(build(result_t, group_id=group_id, error_code=ErrorCode(err)))
    return build(resp_t, throttle_time=NO_THROTTLE, results=tuple(results))


def _describe(runtime: CoordinatorRuntime, group_id: str) -> DescribedGroup:
    return runtime.groups.query(lambda g: g.describe_group(group_id))


def _delete(runtime: CoordinatorRuntime, group_id: str) -> ErrorCode:
    err: ErrorCode = runtime.groups.write(lambda g, now: g.delete_group(now, group_id))
    return err
