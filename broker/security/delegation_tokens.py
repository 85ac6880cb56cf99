"""Delegation tokens (KIP-48) as Kafka's DelegationTokenControlManager keeps them.

A token is an id, its HMAC-SHA512 under ``delegation.token.secret.key``, an owner, the
principal that requested it, renewers, and three timestamps (issue, expiry, max). Clients
authenticate with SCRAM ``tokenauth=true``: the token id is the user name and the
base64 HMAC the password. Tokens live in ``<data dir>/__delegation_tokens.json``,
rewritten atomically on every change; the expired are dropped by ``expire_due``
(every ``delegation.token.expiry.check.interval.ms`` on the broker's clock).
"""

from __future__ import annotations

import base64
import hashlib
import hmac as hmac_mod
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.storage.fsutil import atomic_write

FILE_NAME = "__delegation_tokens.json"


def token_hmac(token_id: str, secret: str) -> bytes:
    return hmac_mod.new(secret.encode(), token_id.encode(), hashlib.sha512).digest()


def new_token_id() -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    hmac: bytes
    owner: str  # "User:name"
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int

    def owner_or_renewer(self, principal: str) -> bool:
        return principal in (self.owner, self.requester) or principal in self.renewers

    def to_json(self) -> dict[str, object]:
        return {"token_id": self.token_id, "hmac": base64.b64encode(self.hmac).decode(),
                "owner": self.owner, "requester": self.requester,
                "renewers": list(self.renewers), "issue_ms": self.issue_ms,
                "expiry_ms": self.expiry_ms, "max_ms": self.max_ms}

    @classmethod
    def from_json(cls, d: dict[str, object]) -> TokenInfo:
        renewers = d["renewers"]
        assert isinstance(renewers, list)
        return cls(str(d["token_id"]), base64.b64decode(str(d["hmac"])), str(d["owner"]),
                   str(d["requester"]), tuple(str(r) for r in renewers),
                   int(str(d["issue_ms"])), int(str(d["expiry_ms"])), int(str(d["max_ms"])))


@dataclass
class TokenConfig:
    #: ``delegation.token.secret.key``; empty: tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED).
    secret: str
    max_lifetime_ms: int = 604800000
    renew_lifetime_ms: int = 86400000

    @property
    def enabled(self) -> bool:
        return bool(self.secret)


@dataclass
class TokenStore:
    data_dir: Path
    config: TokenConfig
    now_ms: Callable[[], int]
    _tokens: dict[str, TokenInfo] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.path = self.data_dir / FILE_NAME
        if self.path.exists():
            raw = json.loads(self.path.read_text())
            for d in raw.get("tokens", []):
                t = TokenInfo.from_json(d)
                self._tokens[t.token_id] = t

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"tokens": [t.to_json() for t in self._tokens.values()]}
        atomic_write(self.path, json.dumps(data, indent=1).encode())

    def get(self, token_id: str) -> TokenInfo | None:
        return self._tokens.get(token_id)

    def tokens(self) -> list[TokenInfo]:
        return list(self._tokens.values())

    def _by_hmac(self, mac: bytes) -> TokenInfo | None:
        for t in self._tokens.values():
            if hmac_mod.compare_digest(t.hmac, mac):
                return t
        return None

    def create(self, owner: str, requester: str, renewers: tuple[str, ...],
               max_lifetime_ms: int) -> TokenInfo:
        """The caller has checked ``config.enabled`` and the request's authorization."""
        now = self.now_ms()
        cap = self.config.max_lifetime_ms
        life = cap if max_lifetime_ms <= 0 else min(max_lifetime_ms, cap)
        max_ms = now + life
        expiry = min(max_ms, now + self.config.renew_lifetime_ms)
        token_id = new_token_id()
        info = TokenInfo(token_id, token_hmac(token_id, self.config.secret), owner, requester,
                         renewers, now, expiry, max_ms)
        self._tokens[token_id] = info
        self._save()
        return info

    def _find(self, mac: bytes) -> TokenInfo | ErrorCode:
        if not self.config.enabled:
            return ErrorCode.delegation_token_auth_disabled
        info = self._by_hmac(mac)
        return ErrorCode.delegation_token_not_found if info is None else info

    @staticmethod
    def _may_renew(info: TokenInfo, principal: str) -> bool:
        """The controller's ``allowedToRenew``: the owner or a renewer (not the requester)."""
        return principal == info.owner or principal in info.renewers

    def renew(self, principal: str, mac: bytes, period_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry timestamp; 0 on an error, as the controller's answer).
        A renewal never reaches past ``delegation.token.expiry.time.ms`` from now."""
        found = self._find(mac)
        if isinstance(found, ErrorCode):
            return found, 0
        now = self.now_ms()
        if found.max_ms < now or found.expiry_ms < now:
            return ErrorCode.delegation_token_expired, 0
        if not self._may_renew(found, principal):
            return ErrorCode.delegation_token_owner_mismatch, 0
        period = self.config.renew_lifetime_ms
        if period_ms > 0:
            period = min(period, period_ms)
        expiry = min(found.max_ms, now + period)
        self._tokens[found.token_id] = replace(found, expiry_ms=expiry)
        self._save()
        return NO_ERROR, expiry

    def expire(self, principal: str, mac: bytes, period_ms: int) -> tuple[ErrorCode, int]:
        """(error, new expiry timestamp; 0 on an error); a negative period removes the
        token at once."""
        found = self._find(mac)
        if isinstance(found, ErrorCode):
            return found, 0
        if not self._may_renew(found, principal):
            return ErrorCode.delegation_token_owner_mismatch, 0
        now = self.now_ms()
        if period_ms < 0:
            del self._tokens[found.token_id]
            self._save()
            return NO_ERROR, now
        if found.max_ms < now or found.expiry_ms < now:
            return ErrorCode.delegation_token_expired, 0
        expiry = min(found.max_ms, now + period_ms)
        self._tokens[found.token_id] = replace(found, expiry_ms=expiry)
        self._save()
        return NO_ERROR, expiry

    def expire_due(self, now: int | None = None) -> list[str]:
        """Drop the tokens past their expiry (or max) timestamp; their ids."""
        now = self.now_ms() if now is None else now
        gone = [i for i, t in self._tokens.items() if t.expiry_ms < now or t.max_ms < now]
        for i in gone:
            del self._tokens[i]
        if gone:
            self._save()
        return gone

    def live(self, token_id: str) -> TokenInfo | None:
        """The token a ``tokenauth`` client names, if it has not expired."""
        info = self._tokens.get(token_id)
        if info is None or not self.config.enabled or info.expiry_ms < self.now_ms():
            return None
        return info
