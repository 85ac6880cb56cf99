"""CreateAcls, DescribeAcls and DeleteAcls (v1-3) over the ACL store.

As Kafka: all three need the cluster permission (Alter to change, Describe to list),
answered with CLUSTER_AUTHORIZATION_FAILED per creation or filter; without an authorizer
configured they answer SECURITY_DISABLED; a bad creation or filter gets INVALID_REQUEST
with Kafka's message while the rest of the request is served.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby
from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

from ...auth import CLUSTER_NAME, Access, Action, Operation, ResourceType
from ...context import RequestContext
from ...security.acl import AclBinding, AclFilter, validate_new
from ...security.acl_store import AclStore

DESCRIBE_ACLS = ApiKey.DESCRIBE_ACLS
CREATE_ACLS = ApiKey.CREATE_ACLS
DELETE_ACLS = ApiKey.DELETE_ACLS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    CREATE_ACLS: (1, 3),
    DESCRIBE_ACLS: (1, 3),
    DELETE_ACLS: (1, 3),
}

_NO_AUTHORIZER = "No Authorizer is configured."
_ALTER = Action(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
_DESCRIBE = Action(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)

Allowed = Callable[[Action], bool]


def create_acls(store: AclStore | None, allowed: Allowed, version: int, req: Any) -> Any:
    resp_t = codecs.codec(CREATE_ACLS, version).response_type
    result_t = nested(resp_t, "AclCreationResult")
    results: list[Any] = []
    valid: list[AclBinding] = []
    permitted = allowed(_ALTER)
    for c in req.creations:
        err, msg = NO_ERROR, None
        binding = AclBinding.of(c.resource_type, c.resource_name,
                                getattr(c, "resource_pattern_type", 3), c.principal, c.host,
                                c.operation, c.permission_type)
        if store is None:
            err, msg = ErrorCode.security_disabled, _NO_AUTHORIZER
        elif not permitted:
            err, msg = ErrorCode.cluster_authorization_failed, None
        else:
            problem = validate_new(binding)
            if problem is not None:
                err, msg = ErrorCode.invalid_request, problem
            else:
                valid.append(binding)
        results.append(build(result_t, error_code=err, error_message=msg))
    if store is not None and valid:
        store.add(valid)
    return build(resp_t, throttle_time=NO_THROTTLE, results=tuple(results))


def _filter(f: Any) -> AclFilter:
    return AclFilter.of(f.resource_type_filter, f.resource_name_filter,
                        getattr(f, "pattern_type_filter", 3), f.principal_filter,
                        f.host_filter, f.operation, f.permission_type)


def describe_acls(store: AclStore | None, allowed: Allowed, version: int, req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_ACLS, version).response_type
    res_t = nested(resp_t, "DescribeAclsResource")
    desc_t = nested(resp_t, "AclDescription")

    def fail(code: ErrorCode, msg: str | None) -> Any:
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=code, error_message=msg,
                     resources=())

    if store is None:
        return fail(ErrorCode.security_disabled, _NO_AUTHORIZER)
    if not allowed(_DESCRIBE):
        return fail(ErrorCode.cluster_authorization_failed, None)
    flt = _filter(req)
    if flt.unknown():
        return fail(ErrorCode.invalid_request, "The filter contains an UNKNOWN element")
    found = store.matching(flt)

    def key(b: AclBinding) -> tuple[int, str, int]:
        return (int(b.resource_type), b.name, int(b.pattern_type))

    resources = []
    for (rt, name, pt), group in groupby(sorted(found, key=key), key=key):
        resources.append(build(res_t, resource_type=rt, resource_name=name, pattern_type=pt,
                               acls=tuple(build(desc_t, principal=b.principal, host=b.host,
                                                operation=int(b.operation),
                                                permission_type=int(b.permission))
                                          for b in group)))
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR,
                 error_message=None, resources=tuple(resources))


def delete_acls(store: AclStore | None, allowed: Allowed, version: int, req: Any) -> Any:
    resp_t = codecs.codec(DELETE_ACLS, version).response_type
    result_t = nested(resp_t, "DeleteAclsFilterResult")
    match_t = nested(resp_t, "DeleteAclsMatchingAcl")
    permitted = allowed(_ALTER)
    filters = [_filter(f) for f in req.filters]
    out: list[Any] = []
    if store is None or not permitted:
        code = ErrorCode.security_disabled if store is None else \
            ErrorCode.cluster_authorization_failed
        msg = _NO_AUTHORIZER if store is None else None
        return build(resp_t, throttle_time=NO_THROTTLE, filter_results=tuple(
            build(result_t, error_code=code, error_message=msg, matching_acls=())
            for _ in filters))
    usable = [f for f in filters if not f.unknown()]
    removed = iter(store.delete(usable))
    for f in filters:
        if f.unknown():
            out.append(build(result_t, error_code=ErrorCode.invalid_request,
                             error_message="The filter contains an UNKNOWN element",
                             matching_acls=()))
            continue
        out.append(build(result_t, error_code=NO_ERROR, error_message=None,
                         matching_acls=tuple(
                             build(match_t, error_code=NO_ERROR, error_message=None,
                                   resource_type=int(b.resource_type), resource_name=b.name,
                                   pattern_type=int(b.pattern_type), principal=b.principal,
                                   host=b.host, operation=int(b.operation),
                                   permission_type=int(b.permission))
                             for b in next(removed))))
    return build(resp_t, throttle_time=NO_THROTTLE, filter_results=tuple(out))


def _allowed(access: Access, ctx: RequestContext) -> Allowed:
    return lambda action: access.permits(ctx, action.operation, action.resource_type,
                                         action.name)


def handle_create(store: AclStore | None, access: Access, ctx: RequestContext, req: Any) -> Any:
    return create_acls(store, _allowed(access, ctx), ctx.api_version, req)


def handle_describe(store: AclStore | None, access: Access, ctx: RequestContext,
                    req: Any) -> Any:
    return describe_acls(store, _allowed(access, ctx), ctx.api_version, req)


def handle_delete(store: AclStore | None, access: Access, ctx: RequestContext, req: Any) -> Any:
    return delete_acls(store, _allowed(access, ctx), ctx.api_version, req)
