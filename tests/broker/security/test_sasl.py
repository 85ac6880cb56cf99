"""SASL mechanisms and the connection authenticator, driven with tokens and frames."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from scramp import ScramClient

from kafkalite.broker.config.properties import ConfigError
from kafkalite.broker.security.authenticator import FORWARD, Close, SaslAuthenticator, State
from kafkalite.broker.security.jaas import parse_jaas, plain_users
from kafkalite.broker.security.listeners import ListenerProps
from kafkalite.broker.security.mechanisms import listener_mechanisms
from kafkalite.broker.security.oauthbearer import OAuthBearerServer
from kafkalite.broker.security.sasl import PlainServer, SaslFailure
from kafkalite.broker.security.scram import (
    ScramServer,
    ScramStore,
    credential_from_password,
    credential_from_salted,
)
from kafkalite.protocol.apis import codec, decode_response, encode_request
from kafkalite.protocol.build import build
from kafkalite.protocol.headers import encode_request_header, parse_response_header

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="al\\"ice";')


def test_jaas_parsing() -> None:
    (entry,) = parse_jaas(JAAS)
    assert entry.login_module.endswith("PlainLoginModule") and entry.flag == "required"
    assert plain_users(entry.options) == {"admin": "admin-secret", "alice": 'al"ice'}
    for bad in ("", "Module required", "Module maybe;", 'Module required a="b"',
                'Module required a=;'):
        with pytest.raises(ConfigError):
            parse_jaas(bad)


@pytest.mark.parametrize(("token", "message"), [
    (b"\x00alice\x00secret", None),
    (b"alice\x00alice\x00secret", None),
    (b"\x00alice\x00wrong", "Authentication failed: Invalid username or password"),
    (b"\x00nobody\x00secret", "Authentication failed: Invalid username or password"),
    (b"\x00\x00secret", "Authentication failed: username not specified"),
    (b"bob\x00alice\x00secret", "Authentication failed: Client requested an authorization id "
                                "that is different from username"),
    (b"alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\x00alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\x00alice\x00secret\x00more", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\xff\xfe", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\x00alice\x00secre\xff", "Authentication failed: Invalid username or password"),
])
def test_plain(token: bytes, message: str | None) -> None:
    server = PlainServer({"alice": "secret"})
    if message is None:
        assert server.evaluate(token) == b"" and server.complete and server.user == "alice"
        return
    with pytest.raises(SaslFailure) as e:
        server.evaluate(token)
    assert e.value.client_message == (None if message == "generic" else message)
    assert "secret" not in e.value.reason and "wrong" not in e.value.reason


def _scram(server: ScramServer, mech: str, user: str, password: str) -> None:
    client = ScramClient([mech], user, password)
    first = server.evaluate(client.get_client_first().encode())
    client.set_server_first(first.decode())
    final = server.evaluate(client.get_client_final().encode())
    client.set_server_final(final.decode())


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_and_failures(mech: str, tmp_path: Path) -> None:
    store = ScramStore(tmp_path)
    store.put("alice", mech, credential_from_password(mech, "secret"))
    server = ScramServer(mech, store)
    _scram(server, mech, "alice", "secret")
    assert server.complete and server.user == "alice"
    for user, password in (("alice", "wrong"), ("nobody", "secret")):
        with pytest.raises(SaslFailure) as e:
            _scram(ScramServer(mech, store), mech, user, password)
        assert e.value.client_message is None and e.value.user == user
    # As Kafka, an unknown user is refused at the client-first message already.
    with pytest.raises(SaslFailure, match="Invalid user credentials"):
        ScramServer(mech, store).evaluate(ScramClient([mech], "nobody", "x")
                                          .get_client_first().encode())
    # Malformed client messages fail the exchange, never escape as another exception.
    for first in (b"garbage", b"n,,n=alice", b"p=tls-unique,,n=alice,r=abc", b"\xff"):
        with pytest.raises(SaslFailure):
            ScramServer(mech, store).evaluate(first)
    s = ScramServer(mech, store)
    s.evaluate(b"n,,n=alice,r=abcdef")
    with pytest.raises(SaslFailure):
        s.evaluate(b"c=biws,r=abcdef,p=AAAA")


def test_scram_store_persists_and_refreshes(tmp_path: Path) -> None:
    store = ScramStore(tmp_path)
    cred = credential_from_password("SCRAM-SHA-256", "pw", 8192)
    store.put("bob", "SCRAM-SHA-256", cred)
    other = ScramStore(tmp_path)  # e.g. the `kafkalite scram` command
    assert other.get("bob", "SCRAM-SHA-256") == cred
    other.delete("bob", "SCRAM-SHA-256")
    store.refresh()
    assert store.get("bob", "SCRAM-SHA-256") is None and store.users() == {}
    salted = bytes(range(32))
    a = credential_from_salted("SCRAM-SHA-512", b"salt", salted, 4096)
    assert a.stored_key != a.server_key and len(a.server_key) == 64


def _jwt(claims: dict[str, Any], alg: str = "none", sig: str = "") -> str:
    def enc(d: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
    return f"{enc({'alg': alg})}.{enc(claims)}.{sig}"


def _oauth_msg(token: str, authzid: str = "") -> bytes:
    a = f"a={authzid}" if authzid else ""
    return f"n,{a},\x01auth=Bearer {token}\x01\x01".encode()


def test_oauthbearer_unsecured_tokens() -> None:
    now = 1_700_000_000_000
    good = {"sub": "alice", "iat": now / 1000 - 10, "exp": now / 1000 + 60, "scope": "a b"}
    server = OAuthBearerServer({"unsecuredValidatorRequiredScope": "a"}, lambda: now)
    assert server.evaluate(_oauth_msg(_jwt(good))) == b""
    assert server.complete and server.user == "alice"
    assert server.credential_expiry_ms == now + 60_000
    bad_tokens = [
        _jwt({**good, "exp": now / 1000 - 1}),
        _jwt({k: v for k, v in good.items() if k != "exp"}),
        _jwt({**good, "sub": ""}),
        _jwt(good, alg="HS256"),
        _jwt(good, sig="abc"),
        "not-a-jwt",
        _jwt({**good, "scope": "b"}),
    ]
    for token in bad_tokens:
        s = OAuthBearerServer({"unsecuredValidatorRequiredScope": "a"}, lambda: now)
        challenge = json.loads(s.evaluate(_oauth_msg(token)))
        assert challenge["status"] in ("invalid_token", "insufficient_scope")
        with pytest.raises(SaslFailure) as e:
            s.evaluate(b"\x01")
        assert e.value.client_message is not None and "status" in e.value.client_message
    with pytest.raises(SaslFailure):
        OAuthBearerServer({}, lambda: now).evaluate(b"garbage")
    with pytest.raises(SaslFailure):
        OAuthBearerServer({}, lambda: now).evaluate(_oauth_msg(_jwt(good), authzid="bob"))


def test_listener_mechanisms(tmp_path: Path) -> None:
    store = ScramStore(tmp_path)
    props = ListenerProps("SASL_SSL", {"listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS})
    assert list(listener_mechanisms(props, store)) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    props = ListenerProps("SASL_SSL", {"sasl.enabled.mechanisms": "OAUTHBEARER,SCRAM-SHA-512"})
    assert list(listener_mechanisms(props, store)) == ["OAUTHBEARER", "SCRAM-SHA-512"]
    for bad in ("GSSAPI", "PLAIN", ""):
        with pytest.raises(ConfigError):
            listener_mechanisms(ListenerProps("L", {"sasl.enabled.mechanisms": bad}), store)


# --- the connection authenticator, frame by frame -------------------------------------------

_LEN = struct.Struct(">i")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def _frame(api_key: int, version: int, corr: int = 1, **fields: Any) -> bytes:
    c = codec(api_key, version)
    req = build(c.request_type, **fields)
    return encode_request_header(api_key, version, corr, "t", c.request_flexible) + \
        encode_request(req)


def _answer(api_key: int, version: int, out: bytes) -> Any:
    body = out[4:]
    assert _LEN.unpack_from(out)[0] == len(body)
    _corr, off = parse_response_header(body, codec(api_key, version).response_header_flexible)
    return decode_response(api_key, version, body, off)


def _auth(reauth_ms: int | dict[str, int] = 0, clock: Clock | None = None
          ) -> SaslAuthenticator:
    users = {"alice": "secret", "bob": "pw"}
    return SaslAuthenticator({"PLAIN": lambda: PlainServer(users)}, reauth_ms, "peer:1", "L",
                             clock or Clock())


def test_authenticator_v1_flow_and_preauth_rule() -> None:
    a = _auth()
    assert a.handle(_frame(18, 3, client_software_name="x", client_software_version="1")) \
        is FORWARD
    with pytest.raises(Close, match="during SASL handshake"):
        _auth().handle(_frame(3, 1, topics=None))
    resp = _answer(17, 1, a.handle(_frame(17, 1, mechanism="PLAIN")))  # type: ignore[arg-type]
    assert resp.error_code == 0 and resp.mechanisms == ("PLAIN",)
    with pytest.raises(Close, match="during SASL authentication"):
        a.handle(_frame(18, 0))
    out = a.handle(_frame(36, 2, auth_bytes=b"\x00alice\x00secret"))
    resp = _answer(36, 2, out)  # type: ignore[arg-type]
    assert resp.error_code == 0 and resp.session_lifetime.total_seconds() == 0
    assert a.principal == "User:alice" and a.state is State.AUTHENTICATED
    assert a.passes(_frame(12, 4, group_id="g", generation_id=1, member_id="m"))
    again = _answer(36, 2, a.handle(_frame(36, 2, auth_bytes=b"x")))  # type: ignore[arg-type]
    assert again.error_code == 34  # ILLEGAL_SASL_STATE, the connection stays


def test_authenticator_failures_answer_then_close() -> None:
    a = _auth()
    a.handle(_frame(17, 1, mechanism="PLAIN"))
    with pytest.raises(Close) as e:
        a.handle(_frame(36, 1, auth_bytes=b"\x00alice\x00wrong"))
    resp = _answer(36, 1, e.value.response)  # type: ignore[arg-type]
    assert resp.error_code == 58
    assert resp.error_message == "Authentication failed: Invalid username or password"
    with pytest.raises(Close) as e:
        _auth().handle(_frame(17, 1, mechanism="GSSAPI"))
    assert _answer(17, 1, e.value.response).error_code == 33  # type: ignore[arg-type]
    a = _auth()
    a.handle(_frame(17, 1, mechanism="PLAIN"))
    with pytest.raises(Close) as e:
        a.handle(_frame(36, 1, auth_bytes=b"only-one-token"))
    assert _answer(36, 1, e.value.response).error_message == (  # type: ignore[arg-type]
        "Invalid SASL/PLAIN response: expected 3 tokens, got 1")
    with pytest.raises(Close):
        a2 = _auth()
        a2.handle(_frame(17, 1, mechanism="PLAIN"))
        a2.handle(b"\x00\x24\x00")  # truncated header


def test_authenticator_v0_raw_tokens() -> None:
    a = _auth()
    a.handle(_frame(17, 0, mechanism="PLAIN"))
    assert a.handle(b"\x00alice\x00secret") == b"\x00\x00\x00\x00"
    assert a.principal == "User:alice"
    b = _auth()
    b.handle(_frame(17, 0, mechanism="PLAIN"))
    with pytest.raises(Close) as e:
        b.handle(b"\x00alice\x00nope")
    assert e.value.response is None


def test_reauthentication_and_expiry() -> None:
    clock = Clock()
    a = _auth(reauth_ms={"PLAIN": 5000, "SCRAM-SHA-256": 1}, clock=clock)  # per mechanism
    a.handle(_frame(17, 1, mechanism="PLAIN"))
    resp = _answer(36, 1, a.handle(_frame(36, 1, auth_bytes=b"\x00alice\x00secret")))  # type: ignore[arg-type]
    assert resp.session_lifetime.total_seconds() == 5
    hb = _frame(12, 4, group_id="g", generation_id=1, member_id="m")
    assert a.passes(hb)
    clock.now += 4000
    a.handle(_frame(17, 1, mechanism="PLAIN"))  # re-authenticate on the live connection
    assert a.handle(hb) is FORWARD  # requests keep flowing meanwhile
    a.handle(_frame(36, 1, auth_bytes=b"\x00alice\x00secret"))
    clock.now += 4000
    assert a.passes(hb)  # the new session runs from the re-authentication
    clock.now += 1001
    assert not a.passes(hb)
    with pytest.raises(Close, match="expired"):
        a.handle(hb)
    # Re-authenticating as someone else is refused.
    b = _auth(reauth_ms=5000, clock=clock)
    b.handle(_frame(17, 1, mechanism="PLAIN"))
    b.handle(_frame(36, 1, auth_bytes=b"\x00alice\x00secret"))
    b.handle(_frame(17, 1, mechanism="PLAIN"))
    with pytest.raises(Close) as e:
        b.handle(_frame(36, 1, auth_bytes=b"\x00bob\x00pw"))
    assert "Cannot change principals" in _answer(36, 1, e.value.response).error_message  # type: ignore[arg-type]
