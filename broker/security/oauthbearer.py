"""SASL/OAUTHBEARER (RFC 7628) with Kafka's unsecured JWS validator, for development.

The token is an unsigned JWT (``alg: none``, empty signature). Options come from the
JAAS config as in Kafka: ``unsecuredValidatorPrincipalClaimName`` (default ``sub``),
``unsecuredValidatorScopeClaimName`` (``scope``), ``unsecuredValidatorRequiredScope``
and ``unsecuredValidatorAllowableClockSkewMs``. A refused token is answered with the
RFC 7628 JSON error challenge; the client's ``%x01`` reply then fails the exchange.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.timekeeping.clock import wall_ms

from .sasl import SaslFailure, SaslServer

_SEP = "\x01"


def _b64url(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class TokenError(ValueError):
    def __init__(self, message: str, status: str = "invalid_token", scope: str | None = None
                 ) -> None:
        super().__init__(message)
        self.status = status
        self.scope = scope


def validate_unsecured(token: str, options: Mapping[str, str], now_ms: int) -> dict[str, Any]:
    """Kafka's OAuthBearerUnsecuredJws checks; returns the claims."""
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("Unsecured JWS compact serializations must have 3 dot-separated "
                         "Base64URL-encoded values")
    if parts[2]:
        raise TokenError("Unsecured JWS must not contain a digital signature")
    try:
        header = json.loads(_b64url(parts[0]))
        claims = json.loads(_b64url(parts[1]))
    except (ValueError, UnicodeDecodeError) as e:
        raise TokenError(f"malformed token: {e}") from e
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenError("token header and claims must be JSON objects")
    if header.get("alg") != "none":
        raise TokenError("Unsecured JWS must use the 'none' algorithm")
    principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "sub")
    sub = claims.get(principal_claim)
    if not isinstance(sub, str) or not sub.strip():
        raise TokenError(f"No principal name in the '{principal_claim}' claim")
    skew = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0") or 0)
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise TokenError("Required claim 'exp' is missing or not a number")
    exp_ms = int(exp * 1000)
    if now_ms - skew >= exp_ms:
        raise TokenError(f"The indicated time ({now_ms} ms) is at or after the expiration "
                         f"time ({exp_ms} ms)")
    iat = claims.get("iat")
    if iat is not None:
        if not isinstance(iat, int | float) or isinstance(iat, bool):
            raise TokenError("Claim 'iat' is not a number")
        if int(iat * 1000) > now_ms + skew:
            raise TokenError("The token was issued in the future")
        if int(iat * 1000) >= exp_ms:
            raise TokenError("The token expires before it was issued")
    required = [s.strip() for s in options.get("unsecuredValidatorRequiredScope", "").split(",")
                if s.strip()]
    if required:
        raw_scope = claims.get(options.get("unsecuredValidatorScopeClaimName", "scope"))
        have = set(raw_scope.split() if isinstance(raw_scope, str)
                   else raw_scope if isinstance(raw_scope, list) else [])
        missing = [s for s in required if s not in have]
        if missing:
            raise TokenError(f"The provided scope lacks {missing}", "insufficient_scope",
                             " ".join(required))
    claims["_exp_ms"] = exp_ms
    claims["_principal"] = sub
    return claims


class OAuthBearerServer(SaslServer):
    mechanism = "OAUTHBEARER"

    def __init__(self, options: Mapping[str, str],
                 clock_ms: Callable[[], int] = wall_ms) -> None:
        super().__init__()
        self.options = options
        self.clock_ms = clock_ms
        self._error: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self._error is not None:
            # Whatever the client answers after our error challenge ends the exchange.
            raise SaslFailure(f"token refused: {self._error}", self._error, self.user)
        if self.complete:
            raise SaslFailure("OAUTHBEARER exchange already complete")
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SaslFailure("OAUTHBEARER message is not UTF-8") from e
        gs2, sep, rest = text.partition(_SEP)
        if not sep or not gs2.startswith(("n,", "y,")):
            raise SaslFailure("Invalid OAUTHBEARER client first message")
        authzid = ""
        gs2_fields = gs2.split(",")
        if len(gs2_fields) >= 2 and gs2_fields[1].startswith("a="):
            authzid = gs2_fields[1][2:]
        kv: dict[str, str] = {}
        for item in rest.split(_SEP):
            if not item:
                continue
            k, eq, v = item.partition("=")
            if not eq:
                raise SaslFailure("Invalid OAUTHBEARER client first message")
            kv[k] = v
        auth = kv.get("auth", "")
        if not auth.lower().startswith("bearer "):
            raise SaslFailure("Invalid OAUTHBEARER client first message: no bearer token")
        try:
            claims = validate_unsecured(auth[7:].strip(), self.options, self.clock_ms())
        except TokenError as e:
            body: dict[str, str] = {"status": e.status}
            if e.scope:
                body["scope"] = e.scope
            self._error = json.dumps(body, separators=(",", ":"))
            return self._error.encode()
        user = str(claims["_principal"])
        if authzid and authzid != user:
            raise SaslFailure("authorization id differs from the token's principal",
                              "Authentication failed: Authorization ID does not match the "
                              "token's principal name", user)
        self.user = user
        self.credential_expiry_ms = int(claims["_exp_ms"])
        self.complete = True
        return b""
