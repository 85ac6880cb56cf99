"""The SASL mechanisms a listener offers, built from Kafka's properties.

``sasl.enabled.mechanisms`` (per listener: ``listener.name.<l>.sasl.enabled.mechanisms``);
PLAIN users and OAUTHBEARER options from the JAAS config, looked up as
``listener.name.<l>.<mechanism>.sasl.jaas.config`` then ``sasl.jaas.config``; SCRAM from
the credential store.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config.properties import ConfigError
from .jaas import JaasEntry, parse_jaas, plain_users
from .listeners import ListenerProps
from .oauthbearer import OAuthBearerServer
from .sasl import PlainServer, SaslServer
from .scram import MECHANISMS as SCRAM_MECHANISMS
from .scram import ScramServer, ScramStore

SUPPORTED = ("PLAIN", *SCRAM_MECHANISMS, "OAUTHBEARER")
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


def _jaas(props: ListenerProps, mechanism: str) -> JaasEntry | None:
    raw = props.mechanism_get(mechanism, "sasl.jaas.config")
    if not raw:
        return None
    entries = parse_jaas(raw)
    if len(entries) != 1:
        raise ConfigError(f"sasl.jaas.config for {mechanism} on {props.listener} must hold "
                          "exactly one login module")
    return entries[0]


def listener_mechanisms(props: ListenerProps, scram: ScramStore
                        ) -> dict[str, Callable[[], SaslServer]]:
    if props.is_set("sasl.enabled.mechanisms"):
        enabled = [m.upper() for m in props.list("sasl.enabled.mechanisms")]
    else:
        # Kafka's default is GSSAPI (Kerberos), which kafkalite lacks: offer SCRAM, and
        # PLAIN when PLAIN users are configured (docs/compatibility.md).
        enabled = list(SCRAM_MECHANISMS)
        if props.mechanism_get("PLAIN", "sasl.jaas.config"):
            enabled.insert(0, "PLAIN")
    out: dict[str, Callable[[], SaslServer]] = {}
    for mech in enabled:
        if mech not in SUPPORTED:
            raise ConfigError(f"sasl.enabled.mechanisms: SASL mechanism {mech} is not supported "
                              f"(supported: {', '.join(SUPPORTED)})")
        if mech == "PLAIN":
            entry = _jaas(props, mech)
            if entry is None:
                raise ConfigError(f"listener {props.listener}: PLAIN needs "
                                  f"listener.name.{props.listener.lower()}.plain.sasl.jaas.config "
                                  "(or sasl.jaas.config) with user_<name>=\"<password>\" entries")
            users = plain_users(entry.options)
            out[mech] = lambda users=users: PlainServer(users)  # type: ignore[misc]
        elif mech in SCRAM_MECHANISMS:
            out[mech] = lambda mech=mech: ScramServer(mech, scram)  # type: ignore[misc]
        else:
            entry = _jaas(props, mech)
            options = dict(entry.options) if entry is not None else {}
            out[mech] = lambda options=options: OAuthBearerServer(options)  # type: ignore[misc]
    if not out:
        raise ConfigError(f"listener {props.listener} uses SASL but sasl.enabled.mechanisms "
                          "is empty")
    return out
