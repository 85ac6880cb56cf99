"""From broker properties to what the server plugs in: each listener's security (TLS
context, SASL mechanisms, principal mapping) and the authorizer."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from ..auth import Authorizer
from ..config.properties import DEFAULT_VALUES, Config, ConfigError
from .delegation_tokens import TokenConfig, TokenStore
from .listeners import (
    DEFAULT_PROTOCOL_MAP,
    ListenerProps,
    SecurityProtocol,
    parse_protocol_map,
    protocol_for,
)
from .scram import ScramStore

if TYPE_CHECKING:
    from .acl_store import AclStore
    from .principal_rules import PrincipalMapper
    from .sasl import SaslServer

log = structlog.get_logger("kafkalite.security")


@dataclass(frozen=True)
class SecurityState:
    """The broker's security stores: SCRAM credentials, and ACLs when an authorizer is
    configured."""

    scram: ScramStore
    acls: AclStore | None = None
    #: Delegation tokens (``scram.tokens`` too, for SCRAM ``tokenauth``).
    tokens: TokenStore | None = None

    @classmethod
    def empty(cls, data_dir: Path) -> SecurityState:
        return cls(ScramStore(data_dir))


def build_security(config: Config, now_ms: Callable[[], int]
                   ) -> tuple[SecurityState, Authorizer | None]:
    authorizer, acls = build_authorizer(config, config.data_dir)
    scram = ScramStore(config.data_dir)
    tokens = TokenStore(config.data_dir, token_config(config), now_ms)
    scram.tokens = tokens
    return SecurityState(scram, acls, tokens), authorizer


def token_config(config: Config) -> TokenConfig:
    return TokenConfig(config.values.get("delegation.token.secret.key") or "",
                       config.int("delegation.token.max.lifetime.ms"),
                       config.int("delegation.token.expiry.time.ms"))


@dataclass(frozen=True)
class ListenerSecurity:
    name: str
    protocol: SecurityProtocol
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: PrincipalMapper | None = None
    mechanisms: dict[str, Callable[[], SaslServer]] | None = None
    #: ``connections.max.reauth.ms`` per mechanism (0: sessions do not expire).
    reauth_ms: dict[str, int] = field(default_factory=dict)
    #: Largest frame accepted before authentication (``sasl.server.max.receive.size``).
    max_receive_before_auth: int = 524288


PLAINTEXT = ListenerSecurity("PLAINTEXT", SecurityProtocol.PLAINTEXT)


def listener_props(config: Config, listener: str) -> ListenerProps:
    return ListenerProps(listener, config.values, DEFAULT_VALUES)


def listener_security(config: Config, listener: str, scram: ScramStore) -> ListenerSecurity:
    raw_map = config.values.get("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP)
    protocol = protocol_for(listener, parse_protocol_map(raw_map))
    if protocol is SecurityProtocol.PLAINTEXT:
        return ListenerSecurity(listener, protocol)
    props = listener_props(config, listener)
    ctx = mapper = mechs = None
    reauth: dict[str, int] = {}
    # TLS and SASL modules load only for listeners that use them.
    if protocol.uses_tls:
        from .principal_rules import PrincipalMapper
        from .tls import server_context

        ctx = server_context(props, _client_auth_override(props, protocol))
        mapper = PrincipalMapper(props.get("ssl.principal.mapping.rules"))
    if protocol.uses_sasl:
        from .mechanisms import listener_mechanisms

        mechs = listener_mechanisms(props, scram)
        # As Kafka: listener.name.<l>.<mechanism>.connections.max.reauth.ms first.
        reauth = {m: props.mechanism_int(m, "connections.max.reauth.ms", 0) for m in mechs}
    return ListenerSecurity(listener, protocol, ctx, mapper, mechs, reauth,
                            props.int("sasl.server.max.receive.size", 524288))


def _client_auth_override(props: ListenerProps, protocol: SecurityProtocol) -> str | None:
    """Kafka asks SASL_SSL clients for a certificate only when ``ssl.client.auth`` is
    set for that listener (``listener.name.<l>.ssl.client.auth``, KIP-684); the
    broker-wide setting applies to SSL listeners alone."""
    if protocol is not SecurityProtocol.SASL_SSL or props.is_set_for_listener(
            "ssl.client.auth"):
        return None
    configured = props.values.get("ssl.client.auth", "none")
    if configured.lower() != "none":
        log.warning("security.ssl_client_auth_ignored", listener=props.listener,
                    configured=configured,
                    reason="ssl.client.auth applies to SSL listeners only; set "
                    f"listener.name.{props.listener.lower()}.ssl.client.auth for SASL_SSL")
    return "none"


def build_authorizer(config: Config, data_dir: Path) -> tuple[Authorizer | None, AclStore | None]:
    """The authorizer ``authorizer.class.name`` names (None: allow everything) and its
    ACL store."""
    name = config.text("authorizer.class.name").strip()
    if not name:
        return None, None
    # The ACL modules load only for a broker that authorizes.
    from .acl_store import AclStore
    from .authorizer import CLASS_NAMES, AclAuthorizer, parse_super_users

    if name not in CLASS_NAMES:
        raise ConfigError(f"authorizer.class.name {name!r} is not supported "
                          f"(use {CLASS_NAMES[0]} or {CLASS_NAMES[1]})")
    store = AclStore(data_dir)
    authorizer = AclAuthorizer(store, parse_super_users(config.text("super.users")),
                               config.bool("allow.everyone.if.no.acl.found"), name)
    return authorizer, store
