"""Delegation tokens on the manual clock: the four handlers, lifetimes, expiry, the data
directory, and SCRAM ``tokenauth`` authenticating as the token's owner."""

from __future__ import annotations

import base64
import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scramp import ScramClient

from kafkalite.broker.handlers.security import delegation_tokens as h
from kafkalite.broker.security.delegation_tokens import TokenConfig, TokenStore, token_hmac
from kafkalite.broker.security.listeners import SecurityProtocol
from kafkalite.broker.security.sasl import SaslFailure
from kafkalite.broker.security.scram import ScramServer, ScramStore
from kafkalite.protocol.apis import codec
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode
from kafkalite.timekeeping.clock import ManualClock

DAY = 86_400_000
T0 = 1_700_000_000_000
ALICE, BOB, CAROL = "User:alice", "User:bob", "User:carol"


def _store(tmp_path: Path, clock: ManualClock, secret: str = "s3cret") -> TokenStore:
    return TokenStore(tmp_path, TokenConfig(secret, 7 * DAY, DAY), clock.now_ms)


def _req(api: int, version: int, **kw: Any) -> Any:
    return build(codec(api, version).request_type, **kw)


def _create(store: TokenStore, principal: str = ALICE, owner: str | None = None,
            renewers: tuple[str, ...] = (), max_ms: int = -1, permitted: bool = True,
            allowed: bool = True) -> Any:
    req_t = codec(h.CREATE, 3).request_type
    renewer_t = nested(req_t, "CreatableRenewers")
    o_type, _, o_name = (owner or ":").partition(":")
    req = build(req_t, owner_principal_type=o_type or None, owner_principal_name=o_name or None,
                renewers=tuple(build(renewer_t, principal_type=r.split(":")[0],
                                     principal_name=r.split(":")[1]) for r in renewers),
                max_lifetime=datetime.timedelta(milliseconds=max_ms))
    return h.create(store, lambda *_: allowed, permitted, principal, 3, req)


def _renew(store: TokenStore, principal: str, mac: bytes, ms: int) -> Any:
    return h.renew_or_expire(store, True, principal, h.RENEW, 2,
                             _req(h.RENEW, 2, hmac=mac,
                                  renew_period=datetime.timedelta(milliseconds=ms)))


def _expire(store: TokenStore, principal: str, mac: bytes, ms: int) -> Any:
    return h.renew_or_expire(store, True, principal, h.EXPIRE, 2,
                             _req(h.EXPIRE, 2, hmac=mac,
                                  expiry_time_period=datetime.timedelta(milliseconds=ms)))


def _describe(store: TokenStore, principal: str, owners: list[str] | None,
              allowed: bool = False) -> Any:
    req_t = codec(h.DESCRIBE, 3).request_type
    owner_t = nested(req_t, "DescribeDelegationTokenOwner")
    req = build(req_t, owners=None if owners is None else tuple(
        build(owner_t, principal_type="User", principal_name=o.split(":")[1]) for o in owners))
    return h.describe(store, lambda *_: allowed, True, principal, 3, req)


def _ms(ts: datetime.datetime) -> int:
    return int(ts.timestamp() * 1000)


def test_create_lifetimes_and_hmac(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    store = _store(tmp_path, clock)
    r = _create(store)
    assert r.error_code == ErrorCode.none
    assert (r.principal_name, r.token_requester_principal_name) == ("alice", "alice")
    assert r.hmac == token_hmac(r.token_id, "s3cret")
    assert (_ms(r.issue_timestamp), _ms(r.expiry_timestamp), _ms(r.max_timestamp)) == \
        (T0, T0 + DAY, T0 + 7 * DAY)
    # A shorter max lifetime caps the expiry; a longer one is capped by the broker's.
    short = _create(store, max_ms=3_600_000)
    assert _ms(short.expiry_timestamp) == _ms(short.max_timestamp) == T0 + 3_600_000
    assert _ms(_create(store, max_ms=30 * DAY).max_timestamp) == T0 + 7 * DAY
    # For another owner: CREATE_TOKENS on that user.
    other = _create(store, owner=BOB, allowed=False)
    assert other.error_code == ErrorCode.delegation_token_authorization_failed
    assert (other.principal_name, other.token_requester_principal_name) == ("bob", "alice")
    ok = _create(store, owner=BOB)
    assert ok.error_code == ErrorCode.none and store.get(ok.token_id).owner == BOB  # type: ignore[union-attr]
    assert _create(store, renewers=("Group:g",)).error_code == ErrorCode.invalid_principal_type
    assert _create(store, permitted=False).error_code == \
        ErrorCode.delegation_token_request_not_allowed
    disabled = _store(tmp_path / "off", clock, secret="")
    assert _create(disabled).error_code == ErrorCode.delegation_token_auth_disabled
    assert _describe(disabled, ALICE, None).error_code == ErrorCode.delegation_token_auth_disabled
    assert _renew(disabled, ALICE, b"x", 1).error_code == ErrorCode.delegation_token_auth_disabled


def test_renew_expire_owner_mismatch_and_expiry(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    store = _store(tmp_path, clock)
    tok = _create(store, renewers=(BOB,))
    assert _renew(store, CAROL, tok.hmac, DAY).error_code == \
        ErrorCode.delegation_token_owner_mismatch
    assert _renew(store, ALICE, b"nope", DAY).error_code == ErrorCode.delegation_token_not_found
    # The requester is not a renewer unless it owns the token.
    assert _renew(store, CAROL, _create(store, principal=CAROL, owner=BOB).hmac, DAY
                  ).error_code == ErrorCode.delegation_token_owner_mismatch
    clock.advance(DAY // 2)
    r = _renew(store, BOB, tok.hmac, DAY // 4)
    assert r.error_code == ErrorCode.none and _ms(r.expiry_timestamp) == clock.now_ms() + DAY // 4
    # A renewal reaches delegation.token.expiry.time.ms at most (also for -1), never
    # past the max timestamp.
    assert _ms(_renew(store, ALICE, tok.hmac, -1).expiry_timestamp) == clock.now_ms() + DAY
    assert _ms(_renew(store, ALICE, tok.hmac, 10 * DAY).expiry_timestamp) == \
        clock.now_ms() + DAY
    for _ in range(6):
        clock.advance(DAY // 2)
        _renew(store, ALICE, tok.hmac, -1)
        clock.advance(DAY // 2)
        assert _renew(store, BOB, tok.hmac, -1).error_code == ErrorCode.none
    assert _ms(_renew(store, ALICE, tok.hmac, -1).expiry_timestamp) == T0 + 7 * DAY
    e = _expire(store, ALICE, tok.hmac, 1000)
    assert e.error_code == ErrorCode.none and _ms(e.expiry_timestamp) == clock.now_ms() + 1000
    clock.advance(1001)
    # Past its expiry, a renewal or a timed expiry fails; the expiry check removes it.
    assert _renew(store, ALICE, tok.hmac, 1).error_code == ErrorCode.delegation_token_expired
    assert _expire(store, ALICE, tok.hmac, 1).error_code == ErrorCode.delegation_token_expired
    assert _renew(store, CAROL, tok.hmac, 1).error_code == ErrorCode.delegation_token_expired
    assert _expire(store, CAROL, tok.hmac, 1).error_code == \
        ErrorCode.delegation_token_owner_mismatch
    assert tok.token_id in store.expire_due() and store.get(tok.token_id) is None
    assert _describe(store, ALICE, None).tokens == ()
    # A negative expiry period expires at once.
    t2 = _create(store)
    e2 = _expire(store, ALICE, t2.hmac, -1)
    assert e2.error_code == ErrorCode.none and _ms(e2.expiry_timestamp) == clock.now_ms()
    assert store.get(t2.token_id) is None


def test_expiry_check_drops_unrenewed_tokens(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    store = _store(tmp_path, clock)
    a, b = _create(store), _create(store)
    clock.advance(DAY // 2)
    _renew(store, ALICE, b.hmac, DAY)
    clock.advance(DAY // 2 + 1)
    assert store.expire_due() == [a.token_id]
    assert [t.token_id for t in store.tokens()] == [b.token_id]


def test_describe_authorization_and_owners_filter(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    store = _store(tmp_path, clock)
    a = _create(store, principal=ALICE, renewers=(BOB,))
    c = _create(store, principal=CAROL)
    ids = lambda r: sorted(t.token_id for t in r.tokens)  # noqa: E731
    # Without DESCRIBE rights: the tokens one owns, requested or renews.
    assert ids(_describe(store, ALICE, None)) == [a.token_id]
    assert ids(_describe(store, BOB, None)) == [a.token_id]
    # DESCRIBE on the token or DESCRIBE_TOKENS on its owner shows the rest.
    assert ids(_describe(store, BOB, None, allowed=True)) == sorted([a.token_id, c.token_id])
    assert ids(_describe(store, BOB, [CAROL], allowed=True)) == [c.token_id]
    assert _describe(store, ALICE, []).tokens == ()
    t = _describe(store, BOB, None).tokens[0]
    assert (t.principal_name, t.token_requester_principal_name, t.hmac) == ("alice", "alice",
                                                                           a.hmac)
    assert [r.principal_name for r in t.renewers] == ["bob"]
    assert (t.issue_timestamp, t.expiry_timestamp, t.max_timestamp) == \
        (T0, T0 + DAY, T0 + 7 * DAY)


def test_tokens_kept_in_the_data_directory(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    tok = _create(_store(tmp_path, clock), renewers=(BOB,))
    again = _store(tmp_path, clock)
    info = again.get(tok.token_id)
    assert info is not None and info.hmac == tok.hmac and info.renewers == (BOB,)
    assert _renew(again, BOB, tok.hmac, 1000).error_code == ErrorCode.none


def _conn(protocol: SecurityProtocol | None, token: bool = False) -> Any:
    return SimpleNamespace(security=None if protocol is None else SimpleNamespace(
        protocol=protocol), sasl=SimpleNamespace(token_authenticated=token))


@pytest.mark.parametrize(("protocol", "principal", "token", "allowed"), [
    (None, "User:ANONYMOUS", False, False),
    (SecurityProtocol.PLAINTEXT, "User:ANONYMOUS", False, False),
    (SecurityProtocol.SSL, "User:ANONYMOUS", False, False),
    (SecurityProtocol.SSL, "User:CN=client", False, True),
    (SecurityProtocol.SASL_PLAINTEXT, ALICE, False, True),
    (SecurityProtocol.SASL_SSL, ALICE, True, False),
])
def test_token_requests_allowed(protocol: SecurityProtocol | None, principal: str,
                                token: bool, allowed: bool) -> None:
    ctx = SimpleNamespace(peer=_conn(protocol, token), principal=principal)
    assert h.token_requests_allowed(ctx) is allowed  # type: ignore[arg-type]


def _token_login(server: ScramServer, mech: str, token_id: str, password: str) -> None:
    client = ScramClient([mech], token_id, password)
    first = client.get_client_first() + ",tokenauth=true"
    client.client_first_bare += ",tokenauth=true"  # type: ignore[attr-defined]
    client.set_server_first(server.evaluate(first.encode()).decode())
    client.set_server_final(server.evaluate(client.get_client_final().encode()).decode())


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_tokenauth_is_the_owner(mech: str, tmp_path: Path) -> None:
    clock = ManualClock(T0)
    tokens = _store(tmp_path, clock)
    scram = ScramStore(tmp_path)
    scram.tokens = tokens
    tok = _create(tokens, owner=BOB)
    password = base64.b64encode(tok.hmac).decode()
    server = ScramServer(mech, scram)
    _token_login(server, mech, tok.token_id, password)
    assert server.complete and server.user == "bob" and server.token_authenticated
    assert server.credential_expiry_ms == T0 + DAY
    with pytest.raises(SaslFailure):
        _token_login(ScramServer(mech, scram), mech, tok.token_id, "wrong")
    # Without the extension the token id is an ordinary (unknown) user.
    with pytest.raises(SaslFailure):
        ScramServer(mech, scram).evaluate(
            ScramClient([mech], tok.token_id, password).get_client_first().encode())
    clock.advance(DAY + 1)
    with pytest.raises(SaslFailure):
        _token_login(ScramServer(mech, scram), mech, tok.token_id, password)
