"""A secured broker for tests: the properties to start it with, and the client settings
to reach it (bootstrap, CA, certificates, credentials) in each client library's terms.

Used by ``BrokerThread(security=...)`` and the pytest fixtures.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .certs import CertFiles, make_certs
from .scram import MECHANISMS as SCRAM_MECHANISMS
from .scram import ScramStore, credential_from_password

JAAS_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
JAAS_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
JAAS_OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass(frozen=True)
class SecuritySetup:
    """What to secure. ``protocol``: SSL, SASL_PLAINTEXT or SASL_SSL."""

    protocol: str = "SASL_SSL"
    mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    #: SASL users (PLAIN users and SCRAM credentials both); the first is the default.
    users: dict[str, str] = field(default_factory=lambda: {
        "admin": "admin-secret", "alice": "alice-secret"})
    #: ``ssl.client.auth`` on the TLS listener: none, requested or required.
    client_auth: str = "none"
    #: Turn on the StandardAuthorizer with these super users.
    authorizer: bool = False
    super_users: tuple[str, ...] = ("User:admin",)
    allow_everyone_if_no_acl: bool = False
    #: Client certificate common name.
    client_cn: str = "client"
    #: The format of the TLS listener's keystore and truststore, and of the client
    #: keystore the client settings name: PEM or PKCS12.
    store_type: str = "PEM"
    #: ``ssl.principal.mapping.rules`` of the TLS listener (None: Kafka's DEFAULT).
    principal_mapping_rules: str | None = None

    @property
    def listener(self) -> str:
        return self.protocol

    def prepare(self, data_dir: Path, certs_dir: Path) -> tuple[dict[str, str], CertFiles]:
        """Write certificates and SCRAM credentials; return the broker properties."""
        files = make_certs(certs_dir, client=self.client_cn)
        name = self.listener.lower()
        p = f"listener.name.{name}."
        props: dict[str, str] = {}
        if self.protocol in ("SSL", "SASL_SSL"):
            if self.store_type == "PKCS12":
                props.update({
                    p + "ssl.keystore.type": "PKCS12",
                    p + "ssl.keystore.location": str(files.broker_p12),
                    p + "ssl.keystore.password": files.p12_password,
                    p + "ssl.truststore.type": "PKCS12",
                    p + "ssl.truststore.location": str(files.truststore_p12),
                    p + "ssl.truststore.password": files.p12_password,
                })
            else:
                props.update({
                    p + "ssl.keystore.type": "PEM",
                    p + "ssl.keystore.location": str(files.broker_keystore),
                    p + "ssl.truststore.type": "PEM",
                    p + "ssl.truststore.location": str(files.ca),
                })
            props[p + "ssl.client.auth"] = self.client_auth
            if self.principal_mapping_rules is not None:
                props[p + "ssl.principal.mapping.rules"] = self.principal_mapping_rules
        if self.protocol.startswith("SASL"):
            props[p + "sasl.enabled.mechanisms"] = ",".join(self.mechanisms)
            if "PLAIN" in self.mechanisms:
                users = " ".join(f'user_{u}="{pw}"' for u, pw in self.users.items())
                props[p + "plain.sasl.jaas.config"] = f"{JAAS_PLAIN} required {users};"
            if "OAUTHBEARER" in self.mechanisms:
                props[p + "oauthbearer.sasl.jaas.config"] = f"{JAAS_OAUTH} required;"
            store = ScramStore(data_dir)
            for user, pw in self.users.items():
                for mech in SCRAM_MECHANISMS:
                    if mech in self.mechanisms and store.get(user, mech) is None:
                        store.put(user, mech, credential_from_password(mech, pw), save=False)
            store.save()
        if self.authorizer:
            props["authorizer.class.name"] = STANDARD_AUTHORIZER
            props["super.users"] = ";".join(self.super_users)
            props["allow.everyone.if.no.acl.found"] = str(self.allow_everyone_if_no_acl).lower()
        return props, files


@dataclass(frozen=True)
class ClientSettings:
    """How a client reaches a secured broker."""

    bootstrap: str
    security_protocol: str
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    #: PKCS12 client keystore (with the certificate of cert_file) and Java truststore,
    #: used instead of the PEM files when set.
    keystore_p12: str | None = None
    truststore_p12: str | None = None
    p12_password: str | None = None

    def as_user(self, username: str, password: str | None = None,
                mechanism: str | None = None) -> ClientSettings:
        return dataclasses.replace(self, mechanism=mechanism or self.mechanism,
                                   username=username, password=password)

    def with_mechanism(self, mechanism: str) -> ClientSettings:
        return dataclasses.replace(self, mechanism=mechanism)

    def librdkafka(self) -> dict[str, Any]:
        """confluent-kafka / kcat (``-X``) settings."""
        out: dict[str, Any] = {"bootstrap.servers": self.bootstrap,
                               "security.protocol": self.security_protocol}
        if self.ca_file:
            out["ssl.ca.location"] = self.ca_file
        if self.cert_file and self.key_file and self.keystore_p12:
            out["ssl.keystore.location"] = self.keystore_p12
            out["ssl.keystore.password"] = self.p12_password
        elif self.cert_file and self.key_file:
            out["ssl.certificate.location"] = self.cert_file
            out["ssl.key.location"] = self.key_file
        if self.mechanism == "OAUTHBEARER":
            out["sasl.mechanisms"] = "OAUTHBEARER"
            out["enable.sasl.oauthbearer.unsecure.jwt"] = True
            out["sasl.oauthbearer.config"] = f"principal={self.username}"
        elif self.mechanism:
            out["sasl.mechanisms"] = self.mechanism
            out["sasl.username"] = self.username
            out["sasl.password"] = self.password
        return out

    def kafka_python(self) -> dict[str, Any]:
        """kafka-python and aiokafka keyword arguments (aiokafka wants ``ssl_context``
        built from ``ssl_cafile``: see ``ssl_context()``)."""
        out: dict[str, Any] = {"bootstrap_servers": self.bootstrap,
                               "security_protocol": self.security_protocol}
        if self.ca_file:
            out["ssl_cafile"] = self.ca_file
        if self.cert_file and self.key_file:
            out["ssl_certfile"] = self.cert_file
            out["ssl_keyfile"] = self.key_file
        if self.mechanism:
            out["sasl_mechanism"] = self.mechanism
            out["sasl_plain_username"] = self.username
            out["sasl_plain_password"] = self.password
        return out

    def ssl_context(self) -> Any:
        import ssl

        if not self.ca_file:
            return None
        ctx = ssl.create_default_context(cafile=self.ca_file)
        if self.cert_file and self.key_file:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx

    def java(self) -> dict[str, str]:
        """Java client properties (PEM trust and key stores, KIP-651)."""
        out = {"bootstrap.servers": self.bootstrap, "security.protocol": self.security_protocol}
        if self.truststore_p12 and self.p12_password:
            out["ssl.truststore.type"] = "PKCS12"
            out["ssl.truststore.location"] = self.truststore_p12
            out["ssl.truststore.password"] = self.p12_password
        elif self.ca_file:
            out["ssl.truststore.type"] = "PEM"
            out["ssl.truststore.location"] = self.ca_file
        if self.cert_file and self.key_file and self.keystore_p12 and self.p12_password:
            out["ssl.keystore.type"] = "PKCS12"
            out["ssl.keystore.location"] = self.keystore_p12
            out["ssl.keystore.password"] = self.p12_password
        elif self.cert_file and self.key_file:
            out["ssl.keystore.type"] = "PEM"
            out["ssl.keystore.certificate.chain"] = Path(self.cert_file).read_text()
            out["ssl.keystore.key"] = Path(self.key_file).read_text()
        if self.mechanism == "PLAIN":
            out["sasl.mechanism"] = "PLAIN"
            out["sasl.jaas.config"] = (f'{JAAS_PLAIN} required username="{self.username}" '
                                       f'password="{self.password}";')
        elif self.mechanism in SCRAM_MECHANISMS:
            out["sasl.mechanism"] = self.mechanism
            out["sasl.jaas.config"] = (f'{JAAS_SCRAM} required username="{self.username}" '
                                       f'password="{self.password}";')
        elif self.mechanism == "OAUTHBEARER":
            out["sasl.mechanism"] = "OAUTHBEARER"
            out["sasl.jaas.config"] = (f'{JAAS_OAUTH} required '
                                       f'unsecuredLoginStringClaim_sub="{self.username}";')
        return out


def unsecured_jwt(subject: str, lifetime_s: int = 3600) -> str:
    """An unsigned token Kafka's unsecured validator accepts."""
    def enc(d: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
    now = int(time.time())
    return f"{enc({'alg': 'none'})}.{enc({'sub': subject, 'iat': now, 'exp': now + lifetime_s})}."
