"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
DescribeDelegationToken, with KafkaApis' checks: no token requests over PLAINTEXT, over
one-way TLS (an anonymous SSL principal) or from a token-authenticated principal
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); CREATE_TOKENS / DESCRIBE_TOKENS on the owner's
USER resource; DESCRIBE on the DELEGATION_TOKEN resource."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, millis, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

from ...auth import Access, Operation, ResourceType
from ...context import RequestContext
from ...security.delegation_tokens import TokenInfo, TokenStore
from ...security.listeners import SecurityProtocol

CREATE = ApiKey.CREATE_DELEGATION_TOKEN
RENEW = ApiKey.RENEW_DELEGATION_TOKEN
EXPIRE = ApiKey.EXPIRE_DELEGATION_TOKEN
DESCRIBE = ApiKey.DESCRIBE_DELEGATION_TOKEN

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    CREATE: (None, None), RENEW: (None, None), EXPIRE: (None, None), DESCRIBE: (None, None),
}

ANONYMOUS = "User:ANONYMOUS"
#: Kafka's DelegationTokenManager.ErrorTimestamp.
ERROR_TS = -1
Allowed = Callable[[Operation, ResourceType, str], bool]


def _ts(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


def token_requests_allowed(ctx: RequestContext) -> bool:
    """Kafka's ``allowTokenRequests``."""
    peer = ctx.peer
    security = getattr(peer, "security", None)
    protocol = security.protocol if security is not None else SecurityProtocol.PLAINTEXT
    sasl = getattr(peer, "sasl", None)
    if sasl is not None and sasl.token_authenticated:
        return False
    if protocol is SecurityProtocol.PLAINTEXT:
        return False
    return not (protocol is SecurityProtocol.SSL and ctx.principal == ANONYMOUS)


def _split(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


def create(store: TokenStore, allowed: Allowed, permitted: bool, principal: str,
           version: int, req: Any) -> Any:
    resp_t = codecs.codec(CREATE, version).response_type
    owner = (f"{req.owner_principal_type}:{req.owner_principal_name}"
             if getattr(req, "owner_principal_name", None) else principal)

    def answer(code: ErrorCode, info: TokenInfo | None = None, unset: int = ERROR_TS) -> Any:
        # Refused by the broker: timestamps -1 (Kafka's ErrorTimestamp); by the
        # controller (tokens disabled): its response's defaults, 0.
        o_type, o_name = _split(owner)
        r_type, r_name = _split(principal)
        return build(resp_t, error_code=code, principal_type=o_type, principal_name=o_name,
                     token_requester_principal_type=r_type,
                     token_requester_principal_name=r_name,
                     issue_timestamp=_ts(info.issue_ms if info else unset),
                     expiry_timestamp=_ts(info.expiry_ms if info else unset),
                     max_timestamp=_ts(info.max_ms if info else unset),
                     token_id=info.token_id if info else "",
                     hmac=info.hmac if info else b"", throttle_time=NO_THROTTLE)

    if not permitted:
        return answer(ErrorCode.delegation_token_request_not_allowed)
    if owner != principal and not allowed(Operation.CREATE_TOKENS, ResourceType.USER, owner):
        return answer(ErrorCode.delegation_token_authorization_failed)
    if any(r.principal_type != "User" for r in req.renewers):
        return answer(ErrorCode.invalid_principal_type)
    if not store.config.enabled:
        return answer(ErrorCode.delegation_token_auth_disabled, unset=0)
    renewers = tuple(f"{r.principal_type}:{r.principal_name}" for r in req.renewers)
    info = store.create(owner, principal, renewers, millis(req.max_lifetime))
    return answer(NO_ERROR, info)


def renew_or_expire(store: TokenStore, permitted: bool, principal: str, api: int,
                    version: int, req: Any) -> Any:
    resp_t = codecs.codec(api, version).response_type
    if not permitted:
        code, expiry = ErrorCode.delegation_token_request_not_allowed, ERROR_TS
    elif api == RENEW:
        code, expiry = store.renew(principal, req.hmac, millis(req.renew_period))
    else:
        code, expiry = store.expire(principal, req.hmac, millis(req.expiry_time_period))
    return build(resp_t, error_code=code, expiry_timestamp=_ts(expiry),
                 throttle_time=NO_THROTTLE)


def describe(store: TokenStore, allowed: Allowed, permitted: bool, principal: str,
             version: int, req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE, version).response_type
    token_t = nested(resp_t, "DescribedDelegationToken")
    renewer_t = nested(resp_t, "DescribedDelegationTokenRenewer")
    if not permitted:
        return build(resp_t, error_code=ErrorCode.delegation_token_request_not_allowed,
                     tokens=(), throttle_time=NO_THROTTLE)
    if not store.config.enabled:
        return build(resp_t, error_code=ErrorCode.delegation_token_auth_disabled, tokens=(),
                     throttle_time=NO_THROTTLE)
    owners = (None if req.owners is None
              else [f"{o.principal_type}:{o.principal_name}" for o in req.owners])

    def eligible(t: TokenInfo) -> bool:
        # DelegationTokenManager.filterToken.
        if owners is not None and not any(t.owner_or_renewer(o) for o in owners):
            return False
        return (t.owner_or_renewer(principal)
                or allowed(Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, t.token_id)
                or allowed(Operation.DESCRIBE_TOKENS, ResourceType.USER, t.owner))

    tokens = []
    if owners != []:
        for t in store.tokens():
            if not eligible(t):
                continue
            o_type, o_name = _split(t.owner)
            r_type, r_name = _split(t.requester)
            tokens.append(build(
                token_t, principal_type=o_type, principal_name=o_name,
                token_requester_principal_type=r_type, token_requester_principal_name=r_name,
                issue_timestamp=t.issue_ms, expiry_timestamp=t.expiry_ms,
                max_timestamp=t.max_ms, token_id=t.token_id, hmac=t.hmac,
                renewers=tuple(build(renewer_t, principal_type=_split(r)[0],
                                     principal_name=_split(r)[1]) for r in t.renewers)))
    return build(resp_t, error_code=NO_ERROR, tokens=tuple(tokens), throttle_time=NO_THROTTLE)


def _allowed(access: Access, ctx: RequestContext) -> Allowed:
    return lambda op, rtype, name: access.permits(ctx, op, rtype, name)


def handle_create(store: TokenStore, access: Access, ctx: RequestContext, req: Any) -> Any:
    return create(store, _allowed(access, ctx), token_requests_allowed(ctx), ctx.principal,
                  ctx.api_version, req)


def handle_renew(store: TokenStore, ctx: RequestContext, req: Any) -> Any:
    return renew_or_expire(store, token_requests_allowed(ctx), ctx.principal, RENEW,
                           ctx.api_version, req)


def handle_expire(store: TokenStore, ctx: RequestContext, req: Any) -> Any:
    return renew_or_expire(store, token_requests_allowed(ctx), ctx.principal, EXPIRE,
                           ctx.api_version, req)


def handle_describe(store: TokenStore, access: Access, ctx: RequestContext, req: Any) -> Any:
    return describe(store, _allowed(access, ctx), token_requests_allowed(ctx), ctx.principal,
                    ctx.api_version, req)
