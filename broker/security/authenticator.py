"""The SASL side of one connection, as Kafka's SaslServerAuthenticator runs it.

States: before the handshake only ApiVersions and SaslHandshake are served; after
SaslHandshake v1 only SaslAuthenticate; after SaslHandshake v0 the next frames are raw
SASL tokens without a Kafka header (the framing old clients use). Any other request
before authentication closes the connection, as in Kafka. Once authenticated, frames
pass straight through (``passes`` is the per-frame check), except SaslHandshake and
SaslAuthenticate, which re-authenticate (KIP-368), and any request after the session
expired (``connections.max.reauth.ms``), which closes the connection.
"""

from __future__ import annotations

import datetime
import enum
import struct
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build
from kafkalite.protocol.errors import NO_ERROR, ErrorCode, ProtocolError
from kafkalite.protocol.headers import encode_response_header, parse_request_header, peek_api
from kafkalite.timekeeping.clock import wall_ms

from .sasl import SaslFailure, SaslServer, generic_message

log = structlog.get_logger("kafkalite.sasl")

SASL_HANDSHAKE = ApiKey.SASL_HANDSHAKE
SASL_AUTHENTICATE = ApiKey.SASL_AUTHENTICATE
API_VERSIONS = ApiKey.API_VERSIONS
_SIZE = struct.Struct(">i")


class State(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    RAW_TOKEN = "raw_token"
    AUTHENTICATED = "authenticated"
    REAUTHENTICATE = "reauthenticate"


class Forward:
    """``handle`` says: serve this frame as an ordinary request."""


FORWARD = Forward()


class Close(Exception):
    """Close the connection, after writing ``response`` when there is one."""

    def __init__(self, reason: str, response: bytes | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.response = response


MechanismFactory = Callable[[], SaslServer]


class SaslAuthenticator:
    def __init__(self, mechanisms: Mapping[str, MechanismFactory],
                 reauth_ms: int | Mapping[str, int] = 0,
                 peer: str = "", listener: str = "",
                 clock_ms: Callable[[], int] = wall_ms) -> None:
        self.mechanisms = mechanisms
        self.reauth_ms = reauth_ms
        self.peer = peer
        self.listener = listener
        self.clock_ms = clock_ms
        self.state = State.HANDSHAKE
        self.principal = "User:ANONYMOUS"
        self.token_authenticated = False
        self.mechanism: str | None = None
        self._server: SaslServer | None = None
        #: Epoch ms after which the session is over (0: never).
        self.expires_at_ms = 0

    @property
    def authenticated(self) -> bool:
        return self.state in (State.AUTHENTICATED, State.REAUTHENTICATE)

    def passes(self, frame: bytes) -> bool:
        """True when ``frame`` is an ordinary request of an authenticated, live session."""
        if self.state is not State.AUTHENTICATED:
            return False
        if len(frame) >= 2 and frame[0] == 0 and frame[1] in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            return False
        return not self.expires_at_ms or self.clock_ms() < self.expires_at_ms

    # --- one frame ----------------------------------------------------------------------

    def handle(self, frame: bytes) -> bytes | Forward:
        """A response frame to write, or FORWARD. Raises ``Close``."""
        if self.state is State.RAW_TOKEN:
            return self._raw_token(frame)
        try:
            api_key, _version, _corr = peek_api(frame)
        except ProtocolError as e:
            raise Close(str(e)) from e
        name = codecs.API_NAMES.get(api_key, str(api_key))
        if self.state is State.AUTHENTICATED or self.state is State.REAUTHENTICATE:
            if api_key == SASL_HANDSHAKE:
                return self._handshake(frame, reauth=True)
            if api_key == SASL_AUTHENTICATE:
                if self.state is State.REAUTHENTICATE:
                    return self._authenticate(frame)
                return self._respond(frame, build_error(
                    frame, ErrorCode.illegal_sasl_state,
                    "SaslAuthenticate request received after successful authentication"))
            if self.expires_at_ms and self.clock_ms() >= self.expires_at_ms:
                log.info("sasl.session_expired", principal=self.principal, peer=self.peer,
                         listener=self.listener)
                raise Close(f"session expired before {name} (connections.max.reauth.ms)")
            return FORWARD
        if self.state is State.HANDSHAKE:
            if api_key == API_VERSIONS:
                return FORWARD
            if api_key == SASL_HANDSHAKE:
                return self._handshake(frame, reauth=False)
            raise Close(f"unexpected Kafka request of type {name} during SASL handshake")
        if api_key == SASL_AUTHENTICATE:
            return self._authenticate(frame)
        raise Close(f"unexpected Kafka request of type {name} during SASL authentication")

    def _decode(self, frame: bytes) -> tuple[codecs.ApiCodec, int, Any]:
        api_key, api_version, corr = peek_api(frame)
        try:
            c = codecs.codec(api_key, api_version)
        except ProtocolError as e:
            raise Close(str(e)) from e
        try:
            header = parse_request_header(frame, c.request_flexible)
            return c, corr, c.decode_request(frame, header.body_offset)
        except ProtocolError as e:
            raise Close(str(e)) from e

    def _respond(self, frame: bytes, response: Any) -> bytes:
        api_key, api_version, corr = peek_api(frame)
        c = codecs.codec(api_key, api_version)
        body = encode_response_header(corr, c.response_header_flexible) + \
            c.encode_response(response)
        return _SIZE.pack(len(body)) + body

    def _handshake(self, frame: bytes, reauth: bool) -> bytes:
        c, _corr, req = self._decode(frame)
        version = c.api_version
        mech = req.mechanism
        enabled = tuple(self.mechanisms)
        if reauth and (version < 1 or mech != self.mechanism):
            log.info("sasl.reauthentication_refused", principal=self.principal,
                     peer=self.peer, mechanism=mech)
            raise Close("re-authentication must use SaslHandshake v1 and the same mechanism",
                        self._respond(frame, build(c.response_type,
                                                   error_code=ErrorCode.illegal_sasl_state,
                                                   mechanisms=enabled)))
        if mech not in self.mechanisms:
            log.info("sasl.unsupported_mechanism", mechanism=mech, peer=self.peer,
                     listener=self.listener)
            raise Close(f"unsupported SASL mechanism {mech}",
                        self._respond(frame, build(c.response_type,
                                                   error_code=ErrorCode.unsupported_sasl_mechanism,
                                                   mechanisms=enabled)))
        self.mechanism = mech
        self._server = self.mechanisms[mech]()
        if reauth:
            self.state = State.REAUTHENTICATE
        else:
            self.state = State.RAW_TOKEN if version == 0 else State.AUTHENTICATE
        return self._respond(frame, build(c.response_type, error_code=NO_ERROR,
                                          mechanisms=enabled))

    def _evaluate(self, token: bytes) -> bytes:
        server = self._server
        assert server is not None
        try:
            return server.evaluate(token)
        except SaslFailure:
            raise
        except Exception as e:  # a mechanism bug must cost one connection only
            raise SaslFailure(f"{type(e).__name__}: {e}") from e

    def _finish(self, reauth: bool) -> None:
        server = self._server
        assert server is not None and server.user is not None
        principal = "User:" + server.user
        if reauth and principal != self.principal:
            raise SaslFailure(f"re-authentication changed the principal from "
                              f"{self.principal} to {principal}",
                              f"Cannot change principals during re-authentication from "
                              f"{self.principal}: {principal}", server.user)
        self.principal = principal
        self.token_authenticated = server.token_authenticated
        self.state = State.AUTHENTICATED
        now = self.clock_ms()
        expiry = 0
        lifetime = self.reauth_ms if isinstance(self.reauth_ms, int) else \
            self.reauth_ms.get(self.mechanism or "", 0)
        if lifetime > 0:
            expiry = now + lifetime
        if server.credential_expiry_ms is not None:
            expiry = min(expiry, server.credential_expiry_ms) if expiry else \
                server.credential_expiry_ms
        self.expires_at_ms = expiry
        log.info("sasl.authenticated", principal=principal, mechanism=self.mechanism,
                 peer=self.peer, listener=self.listener, reauthentication=reauth)

    def _fail_log(self, e: SaslFailure) -> None:
        # The reason never holds a password: mechanisms keep secrets out of it.
        log.warning("sasl.authentication_failed", mechanism=self.mechanism,
                    principal=f"User:{e.user}" if e.user else None, peer=self.peer,
                    listener=self.listener, reason=e.reason)

    def _authenticate(self, frame: bytes) -> bytes:
        c, _corr, req = self._decode(frame)
        reauth = self.state is State.REAUTHENTICATE
        try:
            out = self._evaluate(req.auth_bytes)
            assert self._server is not None
            if self._server.complete:
                self._finish(reauth)
        except SaslFailure as e:
            self._fail_log(e)
            message = e.client_message or generic_message(self.mechanism or "", reauth)
            raise Close("SASL authentication failed", self._respond(frame, build(
                c.response_type, error_code=ErrorCode.sasl_authentication_failed,
                error_message=message, auth_bytes=b"",
                session_lifetime=datetime.timedelta(0)))) from e
        lifetime = 0
        if self.state is State.AUTHENTICATED and self.expires_at_ms:
            lifetime = max(self.expires_at_ms - self.clock_ms(), 1)
        return self._respond(frame, build(
            c.response_type, error_code=NO_ERROR, error_message=None, auth_bytes=out,
            session_lifetime=datetime.timedelta(milliseconds=lifetime)))

    def _raw_token(self, frame: bytes) -> bytes:
        try:
            out = self._evaluate(frame)
            assert self._server is not None
            if self._server.complete:
                self._finish(False)
        except SaslFailure as e:
            self._fail_log(e)
            raise Close("SASL authentication failed (raw token)") from e
        return _SIZE.pack(len(out)) + out


def build_error(frame: bytes, code: ErrorCode, message: str) -> Any:
    api_key, api_version, _ = peek_api(frame)
    c = codecs.codec(api_key, api_version)
    return build(c.response_type, error_code=code, error_message=message, auth_bytes=b"",
                 session_lifetime=datetime.timedelta(0))
