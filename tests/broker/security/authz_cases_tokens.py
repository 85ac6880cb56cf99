"""Delegation tokens: CREATE_TOKENS on the owner's USER resource to create a token for
another user, and DESCRIBE on the token or DESCRIBE_TOKENS on its owner to see one that
is not one's own. Over a SASL listener (Kafka refuses token requests on PLAINTEXT)."""

from __future__ import annotations

import asyncio
import datetime
from types import SimpleNamespace
from typing import Any

from kafkalite.broker.security.acl import AclOperation as O
from kafkalite.broker.security.acl import AclResourceType
from kafkalite.broker.security.listeners import SecurityProtocol
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build
from kafkalite.protocol.headers import encode_request_header, parse_response_header

from .authz_harness import Api, case

U = AclResourceType.USER
NOT_ALLOWED = 64  # DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
TOKEN_DENIED = 65  # DELEGATION_TOKEN_AUTHORIZATION_FAILED
DISABLED = 61  # DELEGATION_TOKEN_AUTH_DISABLED


async def _error(a: Api, api: int, version: int, **fields: Any) -> int:
    """The top-level error code, read off the wire: kio cannot decode the -1 timestamps
    Kafka answers errors with (the error code leads every one of these responses)."""
    c = codecs.codec(api, version)
    frame = encode_request_header(api, version, 1, "authz", c.request_flexible) + \
        codecs.encode_request(build(c.request_type, **fields))
    out = a.broker.apis.handle(a.peer, frame)
    if isinstance(out, asyncio.Future):
        out = await asyncio.wait_for(out, 10)
    assert isinstance(out, bytes)
    body = out[4:]
    _corr, off = parse_response_header(body, c.response_header_flexible)
    return int.from_bytes(body[off:off + 2], "big", signed=True)


def _over_sasl(a: Api) -> None:
    a.peer.security = SimpleNamespace(protocol=SecurityProtocol.SASL_PLAINTEXT)  # type: ignore[attr-defined]


def _create_fields(a: Api, owner: str | None) -> dict[str, object]:
    return {"owner_principal_type": "User" if owner else None, "owner_principal_name": owner,
            "renewers": (), "max_lifetime": datetime.timedelta(milliseconds=-1)}


@case(38)
async def create_delegation_token(a: Api) -> None:
    assert (await _error(a, 38, 3, **_create_fields(a, None))) == NOT_ALLOWED
    _over_sasl(a)
    # Her own token needs nothing; the broker has no secret key, so the controller's
    # answer is DELEGATION_TOKEN_AUTH_DISABLED.
    assert (await _error(a, 38, 3, **_create_fields(a, None))) == DISABLED
    assert (await _error(a, 38, 3, **_create_fields(a, "bob"))) == TOKEN_DENIED
    a.allow(U, "User:bob", O.CREATE_TOKENS)
    assert (await _error(a, 38, 3, **_create_fields(a, "bob"))) == DISABLED


@case(39)
async def renew_delegation_token(a: Api) -> None:
    period = datetime.timedelta(milliseconds=1)
    assert (await _error(a, 39, 2, hmac=b"x", renew_period=period)) == NOT_ALLOWED
    _over_sasl(a)
    assert (await _error(a, 39, 2, hmac=b"x", renew_period=period)) == DISABLED


@case(40)
async def expire_delegation_token(a: Api) -> None:
    period = datetime.timedelta(milliseconds=1)
    assert (await _error(a, 40, 2, hmac=b"x", expiry_time_period=period)) == \
        NOT_ALLOWED
    _over_sasl(a)
    assert (await _error(a, 40, 2, hmac=b"x", expiry_time_period=period)) == DISABLED


@case(41)
async def describe_delegation_token(a: Api) -> None:
    assert (await _error(a, 41, 3, owners=None)) == NOT_ALLOWED
    _over_sasl(a)
    assert (await _error(a, 41, 3, owners=None)) == DISABLED
