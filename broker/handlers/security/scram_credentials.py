"""DescribeUserScramCredentials and AlterUserScramCredentials over the credential store,
with Kafka's per-user errors (Alter on the cluster to change, Describe to list)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

from ...auth import CLUSTER_NAME, Access, Action, Operation, ResourceType
from ...context import RequestContext
from ...security.scram import (
    CODE_MECHANISMS,
    MAX_ITERATIONS,
    MECHANISM_CODES,
    MIN_ITERATIONS,
    ScramStore,
    credential_from_salted,
)

DESCRIBE_USER_SCRAM_CREDENTIALS = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
ALTER_USER_SCRAM_CREDENTIALS = ApiKey.ALTER_USER_SCRAM_CREDENTIALS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    DESCRIBE_USER_SCRAM_CREDENTIALS: (None, None),
    ALTER_USER_SCRAM_CREDENTIALS: (None, None),
}

Allowed = Callable[[Action], bool]


def describe(store: ScramStore, allowed: Allowed, version: int, req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_USER_SCRAM_CREDENTIALS, version).response_type
    result_t = nested(resp_t, "DescribeUserScramCredentialsResult")
    info_t = nested(resp_t, "CredentialInfo")
    if not allowed(Action(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)):
        return build(resp_t, throttle_time=NO_THROTTLE,
                     error_code=ErrorCode.cluster_authorization_failed,
                     error_message=None, results=())
    store.refresh()
    users = store.users()
    names = [u.name for u in req.users] if req.users else sorted(users)
    counts = Counter(names)
    results = []
    for name in dict.fromkeys(names):
        if counts[name] > 1:
            results.append(build(result_t, user=name, error_code=ErrorCode.duplicate_resource,
                                 error_message="Cannot describe SCRAM credentials for the same "
                                 "user twice in a single request", credential_infos=()))
        elif name not in users:
            results.append(build(result_t, user=name, error_code=ErrorCode.resource_not_found,
                                 error_message="Attempt to describe a user credential that does "
                                 "not exist", credential_infos=()))
        else:
            infos = tuple(build(info_t, mechanism=MECHANISM_CODES[m], iterations=c.iterations)
                          for m, c in sorted(users[name].items()))
            results.append(build(result_t, user=name, error_code=NO_ERROR,
                                 error_message=None, credential_infos=infos))
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR,
                 error_message=None, results=tuple(results))


def alter(store: ScramStore, allowed: Allowed, version: int, req: Any) -> Any:
    resp_t = codecs.codec(ALTER_USER_SCRAM_CREDENTIALS, version).response_type
    result_t = nested(resp_t, "AlterUserScramCredentialsResult")
    permitted = allowed(Action(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME))
    store.refresh()
    counts = Counter([d.name for d in req.deletions] + [u.name for u in req.upsertions])
    errors: dict[str, tuple[ErrorCode, str | None]] = {}

    def fail(name: str, code: ErrorCode, msg: str | None) -> None:
        errors.setdefault(name, (code, msg))

    for name, n in counts.items():
        if not permitted:
            fail(name, ErrorCode.cluster_authorization_failed, None)
        elif not name:
            fail(name, ErrorCode.unacceptable_credential, "Username must not be empty")
        elif n > 1:
            fail(name, ErrorCode.duplicate_resource,
                 "A user credential cannot be altered twice in the same request")
    for d in req.deletions:
        mech = CODE_MECHANISMS.get(d.mechanism)
        if mech is None:
            fail(d.name, ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
        elif store.get(d.name, mech) is None:
            fail(d.name, ErrorCode.resource_not_found,
                 "Attempt to delete a user credential that does not exist")
    for u in req.upsertions:
        if CODE_MECHANISMS.get(u.mechanism) is None:
            fail(u.name, ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
        elif u.iterations < MIN_ITERATIONS:
            fail(u.name, ErrorCode.unacceptable_credential, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            fail(u.name, ErrorCode.unacceptable_credential, "Too many iterations")
    changed = False
    for d in req.deletions:
        if d.name not in errors:
            changed |= store.delete(d.name, CODE_MECHANISMS[d.mechanism], save=False)
    for u in req.upsertions:
        if u.name not in errors:
            mech = CODE_MECHANISMS[u.mechanism]
            store.put(u.name, mech, credential_from_salted(mech, u.salt, u.salted_password,
                                                           u.iterations), save=False)
            changed = True
    if changed:
        store.save()
    results = tuple(build(result_t, user=name, error_code=errors.get(name, (NO_ERROR,))[0],
                          error_message=errors.get(name, (None, None))[1])
                    for name in counts)
    return build(resp_t, throttle_time=NO_THROTTLE, results=results)


def _allowed(access: Access, ctx: RequestContext) -> Allowed:
    return lambda action: access.permits(ctx, action.operation, action.resource_type,
                                         action.name)


def handle_describe(store: ScramStore, access: Access, ctx: RequestContext, req: Any) -> Any:
    return describe(store, _allowed(access, ctx), ctx.api_version, req)


def handle_alter(store: ScramStore, access: Access, ctx: RequestContext, req: Any) -> Any:
    return alter(store, _allowed(access, ctx), ctx.api_version, req)
