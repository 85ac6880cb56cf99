"""SCRAM-SHA-256/512 (RFC 5802/7677) through ``scramp``, and the salted credential store.

Credentials are Kafka's: per user and mechanism a salt, StoredKey, ServerKey and the
iteration count, never the password. They live in ``<data dir>/__scram_credentials.json``,
rewritten atomically on every change, and are reloaded when the file changes (so
``kafkalite scram`` can add a user to a stopped or a running broker).

``scramp`` is imported by the first SCRAM exchange, not at start-up: every broker keeps
a credential store, few authenticate with SCRAM, and the import costs a plaintext
broker a tenth of its start-up.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalite.storage.fsutil import atomic_write

from .sasl import SaslFailure, SaslServer

if TYPE_CHECKING:
    from .delegation_tokens import TokenStore

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
#: Kafka's wire codes for ScramMechanism (AlterUserScramCredentials and Describe...).
MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
CODE_MECHANISMS = {v: k for k, v in MECHANISM_CODES.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
FILE_NAME = "__scram_credentials.json"
_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_json(self) -> dict[str, object]:
        b64 = base64.b64encode
        return {"salt": b64(self.salt).decode(), "stored_key": b64(self.stored_key).decode(),
                "server_key": b64(self.server_key).decode(), "iterations": self.iterations}

    @classmethod
    def from_json(cls, d: dict[str, object]) -> ScramCredential:
        b = base64.b64decode
        return cls(b(str(d["salt"])), b(str(d["stored_key"])), b(str(d["server_key"])),
                   int(str(d["iterations"])))


def credential_from_salted(mechanism: str, salt: bytes, salted_password: bytes,
                           iterations: int) -> ScramCredential:
    """What AlterUserScramCredentials sends (salt and SaltedPassword) -> stored keys."""
    h = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", h).digest()
    stored_key = h(client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", h).digest()
    return ScramCredential(salt, stored_key, server_key, iterations)


def credential_from_password(mechanism: str, password: str,
                             iterations: int = MIN_ITERATIONS,
                             salt: bytes | None = None) -> ScramCredential:
    salt = os.urandom(32) if salt is None else salt
    salted = hashlib.pbkdf2_hmac(_HASHES[mechanism]().name, password.encode(), salt, iterations)
    return credential_from_salted(mechanism, salt, salted, iterations)


class ScramStore:
    """user -> mechanism -> credential, persisted in the data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self._stamp: tuple[int, int] | None = None
        #: Delegation tokens, for clients authenticating with SCRAM ``tokenauth=true``.
        self.tokens: TokenStore | None = None
        #: (token id, mechanism) -> the token's SCRAM credential (its HMAC as password).
        self._token_credentials: dict[tuple[str, str, bytes], ScramCredential] = {}
        self.reload()

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return st.st_mtime_ns, st.st_size

    def reload(self) -> None:
        stamp = self._file_stamp()
        users: dict[str, dict[str, ScramCredential]] = {}
        if stamp is not None:
            raw = json.loads(self.path.read_text())
            for user, mechs in raw.get("users", {}).items():
                users[user] = {m: ScramCredential.from_json(c) for m, c in mechs.items()
                               if m in MECHANISMS}
        self._users = users
        self._stamp = stamp

    def refresh(self) -> None:
        """Pick up changes another process (``kafkalite scram``) wrote."""
        if self._file_stamp() != self._stamp:
            self.reload()

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"users": {u: {m: c.to_json() for m, c in mechs.items()}
                          for u, mechs in sorted(self._users.items()) if mechs}}
        atomic_write(self.path, json.dumps(data, indent=1).encode())
        self._stamp = self._file_stamp()

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {u: dict(m) for u, m in self._users.items() if m}

    def put(self, user: str, mechanism: str, credential: ScramCredential, save: bool = True
            ) -> None:
        self._users.setdefault(user, {})[mechanism] = credential
        if save:
            self._save()

    def delete(self, user: str, mechanism: str, save: bool = True) -> bool:
        found = self._users.get(user, {}).pop(mechanism, None) is not None
        if not self._users.get(user):
            self._users.pop(user, None)
        if found and save:
            self._save()
        return found

    def save(self) -> None:
        self._save()

    def token_credential(self, token_id: str, mechanism: str
                         ) -> tuple[ScramCredential, str, int] | None:
        """(credential, owner principal, expiry ms) of a live delegation token: as Kafka,
        the password is the base64 HMAC, at the mechanism's minimum iterations."""
        info = self.tokens.live(token_id) if self.tokens is not None else None
        if info is None:
            return None
        key = (token_id, mechanism, info.hmac)
        cred = self._token_credentials.get(key)
        if cred is None:
            password = base64.b64encode(info.hmac).decode()
            cred = credential_from_password(mechanism, password, MIN_ITERATIONS,
                                            salt=os.urandom(32))
            self._token_credentials = {k: v for k, v in self._token_credentials.items()
                                       if k[0] != token_id}
            self._token_credentials[key] = cred
        return cred, info.owner, info.expiry_ms


def _saslname(name: str) -> str:
    """RFC 5802 saslname: ``=2C`` is ',' and ``=3D`` is '='."""
    return name.replace("=2C", ",").replace("=3D", "=")


def _token_extension(client_first: str) -> bool:
    """Kafka's SCRAM extension ``tokenauth=true`` after the nonce of client-first
    (``n,,n=<token id>,r=<nonce>,tokenauth=true``)."""
    attrs = client_first.split(",")[3:]
    return any(a.lower() == "tokenauth=true" for a in attrs)


class ScramServer(SaslServer):
    """client-first -> server-first -> client-final -> server-final."""

    def __init__(self, mechanism: str, store: ScramStore) -> None:
        super().__init__()
        self.mechanism = mechanism
        self.store = store
        self._unknown = False
        from scramp import ScramMechanism

        self._server = ScramMechanism(mechanism).make_server(self._credentials)
        self._step = 0

    def _credentials(self, raw_user: str) -> tuple[bytes, bytes, bytes, int]:
        user = _saslname(raw_user)
        self.user = user
        if self.token_authenticated:
            found = self.store.token_credential(user, self.mechanism)
            if found is None:
                self._unknown = True
                raise KeyError(user)
            token_cred, owner, self.credential_expiry_ms = found
            # The principal is the token's owner (``User:name``).
            self.user = owner.split(":", 1)[1]
            return (token_cred.salt, token_cred.stored_key, token_cred.server_key,
                    token_cred.iterations)
        cred = self.store.get(user, self.mechanism)
        if cred is None:
            # As Kafka's ScramSaslServer: refused at the client-first message, with the
            # generic message (which does not say whether the user exists). scramp
            # wraps what this raises; ``evaluate`` tells the cause by ``_unknown``.
            self._unknown = True
            raise KeyError(user)
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations

    def _accept_suffix_nonce(self, client_final: str) -> None:
        """Kafka accepts a client-final nonce that merely ends with the server's (older
        librdkafka, kcat's, repeats the client nonce in front); scramp wants equality."""
        from scramp.core import ClientFinal

        nonce = ClientFinal(client_final)["r"]
        server: Any = self._server
        theirs, ours = str(nonce), str(server.nonce)
        if theirs != ours and theirs.endswith(ours):
            server.nonce = nonce

    def _set_token_client_first(self, text: str) -> None:
        """scramp refuses attribute names longer than a letter: it parses the message
        without the extension, and the proof covers the message as the client sent it."""
        parts = text.split(",")
        self._server.set_client_first(",".join(parts[:4]))
        server: Any = self._server
        server.client_first_bare = ",".join(parts[2:])

    def evaluate(self, token: bytes) -> bytes:
        from scramp import ScramException

        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SaslFailure(f"{self.mechanism} message is not UTF-8", user=self.user) from e
        try:
            if self._step == 0:
                self._step = 1
                self.store.refresh()
                self.token_authenticated = _token_extension(text)
                if self.token_authenticated:
                    self._set_token_client_first(text)
                else:
                    self._server.set_client_first(text)
                return str(self._server.get_server_first()).encode()
            if self._step == 1:
                self._step = 2
                self._accept_suffix_nonce(text)
                self._server.set_client_final(text)
                out = str(self._server.get_server_final()).encode()
                self.complete = True
                return out
        except ScramException as e:
            if self._unknown:
                raise SaslFailure("Authentication failed: Invalid user credentials",
                                  user=self.user) from e
            raise SaslFailure(f"{self.mechanism}: {e}", user=self.user) from e
        except (ValueError, KeyError, IndexError, TypeError) as e:  # malformed messages
            raise SaslFailure(f"{self.mechanism}: malformed message: {e}", user=self.user) \
                from e
        raise SaslFailure(f"{self.mechanism} exchange already complete", user=self.user)
