"""SASL mechanisms on the server side, as pure state machines: token in, token out.

A mechanism raises ``SaslFailure`` to refuse the client. Kafka sends the client the
message of an authentication exception (PLAIN's "Invalid username or password"), and
for any other failure only a generic one naming the mechanism, so nothing about the
user's existence leaks; ``SaslFailure.client_message`` carries that choice.
"""

from __future__ import annotations

import hmac
from abc import ABC, abstractmethod
from collections.abc import Mapping


class SaslFailure(Exception):
    """Authentication refused. ``reason`` is for the log (never a password);
    ``client_message`` is what the client is told, None for Kafka's generic message."""

    def __init__(self, reason: str, client_message: str | None = None,
                 user: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.client_message = client_message
        self.user = user


def generic_message(mechanism: str, reauthentication: bool = False) -> str:
    phase = "re-authentication" if reauthentication else "authentication"
    return (f"Authentication failed during {phase} due to invalid credentials with SASL "
            f"mechanism {mechanism}")


class SaslServer(ABC):
    mechanism: str = ""

    def __init__(self) -> None:
        self.complete = False
        #: The authenticated user name (the principal is ``User:<name>``).
        self.user: str | None = None
        #: Absolute expiry of the credential in epoch ms (OAUTHBEARER tokens), else None.
        self.credential_expiry_ms: int | None = None
        #: Authenticated with a delegation token (SCRAM ``tokenauth=true``): such a
        #: principal may not create, renew, expire or describe tokens.
        self.token_authenticated = False

    @abstractmethod
    def evaluate(self, token: bytes) -> bytes:
        """Consume the client's token, return the server's (empty when none)."""


class PlainServer(SaslServer):
    """RFC 4616: ``authzid NUL authcid NUL passwd``, checked against the JAAS users."""

    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        super().__init__()
        self.users = users

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("PLAIN exchange already complete")
        # Java decodes with replacement characters: bad UTF-8 fails the checks below.
        text = token.decode("utf-8", errors="replace")
        parts = text.split("\x00", 3)
        if len(parts) != 3:
            # Kafka counts at most four tokens and tells the client how many it found.
            msg = f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}"
            raise SaslFailure(msg, msg)
        authzid, username, password = parts
        if not username:
            raise SaslFailure("username not specified",
                              "Authentication failed: username not specified")
        if not password:
            raise SaslFailure("password not specified",
                              "Authentication failed: password not specified", username)
        expected = self.users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslFailure("invalid username or password",
                              "Authentication failed: Invalid username or password", username)
        if authzid and authzid != username:
            raise SaslFailure(
                "authorization id differs from the user name",
                "Authentication failed: Client requested an authorization id that is "
                "different from username", username)
        self.user = username
        self.complete = True
        return b""
