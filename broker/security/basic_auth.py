"""HTTP basic auth against the broker's own users (the Schema Registry's): when a
listener uses SASL, the check takes the PLAIN users of the listeners' JAAS configs and
the SCRAM credentials of the data directory, as the Kafka listeners do."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

from ..config.properties import Config, parse_listeners
from .jaas import parse_jaas, plain_users
from .listeners import DEFAULT_PROTOCOL_MAP, parse_protocol_map, protocol_for
from .scram import MECHANISMS, ScramStore, credential_from_password
from .setup import listener_props


def broker_users(config: Config, scram: ScramStore) -> Callable[[str, str], bool] | None:
    """A check of (user, password), or None when no listener uses SASL (no auth)."""
    raw_map = config.values.get("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP)
    protocols = parse_protocol_map(raw_map)
    sasl = [lst.name for lst in parse_listeners(config.text("listeners"))
            if protocol_for(lst.name, protocols).uses_sasl]
    if not sasl:
        return None
    plain: dict[str, str] = {}
    for name in sasl:
        raw = listener_props(config, name).mechanism_get("PLAIN", "sasl.jaas.config")
        if raw:
            for entry in parse_jaas(raw):
                plain.update(plain_users(entry.options))
    # SCRAM's key derivation is deliberately slow: a password once accepted is remembered
    # (by digest) until the credential changes.
    accepted: dict[tuple[str, bytes], bytes] = {}

    def check(user: str, password: str) -> bool:
        known = plain.get(user)
        if known is not None and hmac.compare_digest(known.encode(), password.encode()):
            return True
        scram.refresh()
        for mech in MECHANISMS:
            cred = scram.get(user, mech)
            if cred is None:
                continue
            digest = hashlib.sha256(password.encode()).digest()
            if accepted.get((user, digest)) == cred.stored_key:
                return True
            mine = credential_from_password(mech, password, cred.iterations, cred.salt)
            if hmac.compare_digest(mine.stored_key, cred.stored_key):
                accepted[(user, digest)] = cred.stored_key
                return True
        return False

    return check
