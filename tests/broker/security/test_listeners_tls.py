"""Listener protocol map, per-listener properties, TLS contexts and certificate principals."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from kafkalite.broker.config.properties import Config, ConfigError
from kafkalite.broker.security.certs import CertFiles, broker_properties, make_certs
from kafkalite.broker.security.listeners import (
    ListenerProps,
    SecurityProtocol,
    parse_protocol_map,
    protocol_for,
)
from kafkalite.broker.security.principal_rules import NoMatchingRule, PrincipalMapper
from kafkalite.broker.security.scram import ScramStore
from kafkalite.broker.security.setup import ListenerSecurity, listener_security
from kafkalite.broker.security.tls import (
    java_dn,
    openssl_cipher,
    principal_for,
    server_context,
)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertFiles:
    return make_certs(tmp_path_factory.mktemp("certs"), client="alice")


def test_protocol_map_defaults_and_custom_names() -> None:
    m = parse_protocol_map("INTERNAL:SASL_SSL,external:ssl")
    assert protocol_for("INTERNAL", m) is SecurityProtocol.SASL_SSL
    assert protocol_for("EXTERNAL", m) is SecurityProtocol.SSL
    assert protocol_for("SASL_PLAINTEXT", {}) is SecurityProtocol.SASL_PLAINTEXT
    assert protocol_for("CUSTOM", m) is SecurityProtocol.PLAINTEXT  # served as before
    with pytest.raises(ConfigError):
        parse_protocol_map("A:NOPE")
    with pytest.raises(ConfigError):
        parse_protocol_map("ANAME")


def test_listener_overrides_win() -> None:
    props = ListenerProps("SASL_SSL", {
        "ssl.client.auth": "none",
        "listener.name.sasl_ssl.ssl.client.auth": "required",
        "sasl.jaas.config": "global",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": "plain-only",
    })
    assert props.text("ssl.client.auth") == "required"
    assert props.mechanism_get("PLAIN", "sasl.jaas.config") == "plain-only"
    assert props.mechanism_get("SCRAM-SHA-256", "sasl.jaas.config") == "global"
    assert ListenerProps("OTHER", props.values).text("ssl.client.auth") == "none"


@pytest.mark.parametrize(("rules", "dn", "name"), [
    ("DEFAULT", "CN=alice,O=kafkalite", "CN=alice,O=kafkalite"),
    ("RULE:^CN=(.*?),O=(.*?)$/$1@$2/", "CN=alice,O=kafkalite", "alice@kafkalite"),
    ("RULE:^CN=(.*?),O=.*$/$1/U, DEFAULT", "CN=alice,O=kafkalite", "ALICE"),
    ("RULE:^CN=bob.*$/bob/, DEFAULT", "CN=alice,O=x", "CN=alice,O=x"),
    ("RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L", "OU=x,CN=Carol.Z,O=y", "carol.z"),
])
def test_principal_mapping_rules(rules: str, dn: str, name: str) -> None:
    assert PrincipalMapper(rules).name(dn) == name


def test_principal_mapping_rules_refuse() -> None:
    with pytest.raises(NoMatchingRule):
        PrincipalMapper("RULE:^CN=bob$/bob/").name("CN=alice")
    for bad in ("default", "DEFAULT/L", "RULE:CN=(.*?),OU=ServiceUsers.*/$1"):
        with pytest.raises(ConfigError):
            PrincipalMapper(bad)


def test_cipher_names() -> None:
    assert openssl_cipher("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256") == "ECDHE-RSA-AES128-GCM-SHA256"
    assert openssl_cipher("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256") == \
        "ECDHE-ECDSA-CHACHA20-POLY1305-SHA256"
    assert openssl_cipher("ECDHE-RSA-AES256-GCM-SHA384") == "ECDHE-RSA-AES256-GCM-SHA384"


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> ssl.SSLObject:
    """Drive a TLS handshake through memory BIOs; returns the server side."""
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    srv = server.wrap_bio(s_in, s_out, server_side=True)
    cli = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    done = {"s": False, "c": False}
    for _ in range(20):
        for name, obj, out, peer_in in (("c", cli, c_out, s_in), ("s", srv, s_out, c_in)):
            if not done[name]:
                try:
                    obj.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
            data = out.read()
            if data:
                peer_in.write(data)
        if all(done.values()):
            break
    assert all(done.values())
    return srv


def _client(certs: CertFiles, with_cert: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    if with_cert:
        ctx.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    return ctx


def test_inline_pem_keystore_and_mtls_principal(certs: CertFiles) -> None:
    values = {**broker_properties(certs, "SSL"), "listener.name.ssl.ssl.client.auth": "required"}
    ctx = server_context(ListenerProps("SSL", values))
    srv = _handshake(ctx, _client(certs, True))
    assert principal_for(srv, PrincipalMapper(None)) == "User:CN=alice,O=kafkalite"
    rules = PrincipalMapper("RULE:^CN=(.*?),.*$/$1/")
    assert principal_for(srv, rules) == "User:alice"


def test_pem_files_and_requested_client_auth(certs: CertFiles) -> None:
    values = {"ssl.keystore.location": str(certs.broker_keystore), "ssl.keystore.type": "PEM",
              "ssl.truststore.location": str(certs.ca), "ssl.truststore.type": "PEM",
              "ssl.client.auth": "requested"}
    srv = _handshake(server_context(ListenerProps("SSL", values)), _client(certs, False))
    assert principal_for(srv, PrincipalMapper(None)) == "User:ANONYMOUS"


def test_pkcs12_keystore_and_truststore(certs: CertFiles, tmp_path: Path) -> None:
    key = serialization.load_pem_private_key(certs.broker_key.read_bytes(), None)
    chain = x509.load_pem_x509_certificates(certs.broker_cert.read_bytes())
    ks = tmp_path / "broker.p12"
    ks.write_bytes(pkcs12.serialize_key_and_certificates(
        b"broker", key, chain[0], chain[1:],  # type: ignore[arg-type]
        serialization.BestAvailableEncryption(b"changeit")))
    ts = tmp_path / "trust.p12"
    ca = x509.load_pem_x509_certificate(certs.ca.read_bytes())
    ts.write_bytes(pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(ca, b"ca")], serialization.BestAvailableEncryption(b"trust")))
    values = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(ks),
              "ssl.keystore.password": "changeit", "ssl.truststore.type": "PKCS12",
              "ssl.truststore.location": str(ts), "ssl.truststore.password": "trust",
              "ssl.client.auth": "required"}
    srv = _handshake(server_context(ListenerProps("SSL", values)), _client(certs, True))
    assert principal_for(srv, PrincipalMapper(None)).startswith("User:CN=alice")
    values["ssl.keystore.password"] = "wrong"
    with pytest.raises(ConfigError):
        server_context(ListenerProps("SSL", values))


def test_tls_config_errors(certs: CertFiles) -> None:
    with pytest.raises(ConfigError, match="keystore"):
        server_context(ListenerProps("SSL", {}))
    with pytest.raises(ConfigError, match="truststore"):
        server_context(ListenerProps("SSL", {"ssl.keystore.location": str(certs.broker_keystore),
                                             "ssl.client.auth": "required"}))
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.type BCFKS is not supported"):
        server_context(ListenerProps("SSL", {"ssl.keystore.type": "BCFKS",
                                             "ssl.keystore.location": "x.bcfks"}))
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.location: cannot read x\.jks"):
        server_context(ListenerProps("SSL", {"ssl.keystore.type": "JKS",
                                             "ssl.keystore.location": "x.jks"}))
    with pytest.raises(ConfigError, match="protocol"):
        server_context(ListenerProps("SSL", {"ssl.enabled.protocols": "SSLv3"}))


def test_key_stores_are_read_by_content_as_java_reads_them(
        certs: CertFiles, tmp_path: Path) -> None:
    # keytool writes PKCS12 whatever the file is called; Kafka's default type (JKS) reads it.
    keystore, truststore = tmp_path / "broker.keystore.jks", tmp_path / "truststore.jks"
    keystore.write_bytes(certs.broker_p12.read_bytes())
    truststore.write_bytes(certs.truststore_p12.read_bytes())
    for typ in ({}, {"ssl.keystore.type": "JKS", "ssl.truststore.type": "JKS"}):
        ctx = server_context(ListenerProps("SSL", {
            **typ, "ssl.keystore.location": str(keystore),
            "ssl.keystore.password": "kafkalite", "ssl.client.auth": "required",
            "ssl.truststore.location": str(truststore),
            "ssl.truststore.password": "kafkalite"}))
        _handshake(ctx, _client(certs, True))
    jks = tmp_path / "real.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(40))
    with pytest.raises(ConfigError, match=r"is a JKS key store.*-deststoretype PKCS12"):
        server_context(ListenerProps("SSL", {"ssl.keystore.location": str(jks)}))
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01")
    with pytest.raises(ConfigError, match="neither a PEM file nor a PKCS12"):
        server_context(ListenerProps("SSL", {"ssl.keystore.location": str(junk)}))


def test_enabled_protocols_limit_versions(certs: CertFiles) -> None:
    values = {"ssl.keystore.location": str(certs.broker_keystore),
              "ssl.enabled.protocols": "TLSv1.3"}
    ctx = server_context(ListenerProps("SSL", values))
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_3
    client = _client(certs, False)
    client.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(ssl.SSLError):
        _handshake(ctx, client)


def _listener(certs: CertFiles, tmp_path: Path, name: str, **props: str) -> ListenerSecurity:
    values = {"log.dirs": str(tmp_path), "ssl.keystore.location": str(certs.broker_keystore),
              "ssl.truststore.location": str(certs.ca),
              "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512", **props}
    config = Config.build(environ={}, overrides=values)
    return listener_security(config, name, ScramStore(tmp_path))


def test_sasl_ssl_asks_for_certificates_only_when_its_listener_says_so(
        certs: CertFiles, tmp_path: Path) -> None:
    """As Kafka (KIP-684): the broker-wide ssl.client.auth applies to SSL listeners; a
    SASL_SSL listener needs listener.name.<l>.ssl.client.auth."""
    def mode(name: str, **props: str) -> ssl.VerifyMode:
        ctx = _listener(certs, tmp_path, name, **props).ssl_context
        assert ctx is not None
        return ctx.verify_mode

    assert mode("SSL", **{"ssl.client.auth": "required"}) == ssl.CERT_REQUIRED
    assert mode("SASL_SSL", **{"ssl.client.auth": "required"}) == ssl.CERT_NONE
    assert mode("SASL_SSL", **{"ssl.client.auth": "required",
                               "listener.name.sasl_ssl.ssl.client.auth": "requested"}) == \
        ssl.CERT_OPTIONAL


def test_reauth_lifetime_per_mechanism(certs: CertFiles, tmp_path: Path) -> None:
    sec = _listener(certs, tmp_path, "SASL_PLAINTEXT", **{
        "connections.max.reauth.ms": "60000",
        "listener.name.sasl_plaintext.scram-sha-512.connections.max.reauth.ms": "5000"})
    assert sec.reauth_ms == {"SCRAM-SHA-256": 60000, "SCRAM-SHA-512": 5000}
    with pytest.raises(ConfigError, match="not an integer"):
        _listener(certs, tmp_path, "SASL_PLAINTEXT", **{
            "listener.name.sasl_plaintext.connections.max.reauth.ms": "soon"})


def _name(*rdns: list[tuple[x509.ObjectIdentifier, str]]) -> x509.Name:
    return x509.Name([x509.RelativeDistinguishedName([x509.NameAttribute(o, v) for o, v in r])
                      for r in rdns])


@pytest.mark.parametrize(("name", "java"), [
    # Expected strings are what Java's X500Principal.getName() printed for these names.
    (_name([(NameOID.DOMAIN_COMPONENT, "org")], [(NameOID.COUNTRY_NAME, "GB")],
           [(NameOID.ORGANIZATION_NAME, "A, B+C")], [(NameOID.COMMON_NAME, " lead#")],
           [(NameOID.EMAIL_ADDRESS, "a@b.c")], [(NameOID.SERIAL_NUMBER, "123")],
           [(NameOID.TITLE, "Ünï")]),
     "2.5.4.12=#0c05c39c6ec3af,2.5.4.5=#1303313233,1.2.840.113549.1.9.1=#16056140622e63,"
     "CN=\\ lead\\#,O=A\\, B\\+C,C=GB,DC=org"),
    (_name([(NameOID.COMMON_NAME, "#a#b=c d ")], [(NameOID.ORGANIZATIONAL_UNIT_NAME,
                                                    'Ünï;<>"\\x')],
           [(NameOID.LOCALITY_NAME, "tab\tnul")]),
     'L=tab\tnul,OU=Ünï\\;\\<\\>\\"\\\\x,CN=\\#a\\#b\\=c d\\ '),
    (_name([(NameOID.USER_ID, "u1"), (NameOID.COMMON_NAME, "x")],
           [(NameOID.ORGANIZATION_NAME, "o")]), "O=o,CN=x+UID=u1"),
])
def test_distinguished_names_print_as_java_does(name: x509.Name, java: str) -> None:
    """The mTLS principal is ``User:`` + this string: mapping rules written for Kafka
    must see what Kafka sees."""
    assert java_dn(name) == java


def test_cipher_suites_choose_protocol_versions(certs: CertFiles) -> None:
    def ctx(**props: str) -> ssl.SSLContext:
        return server_context(ListenerProps("SSL", {
            "ssl.keystore.location": str(certs.broker_keystore), **props}))

    # Only TLS 1.2 suites: TLS 1.3 is ruled out, as Java's engine leaves it.
    c = ctx(**{"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})
    assert (c.minimum_version, c.maximum_version) == (ssl.TLSVersion.TLSv1_2,
                                                     ssl.TLSVersion.TLSv1_2)
    assert {s["name"] for s in c.get_ciphers() if s["protocol"] != "TLSv1.3"} == \
        {"ECDHE-ECDSA-AES256-GCM-SHA384"}
    # Only TLS 1.3 suites: the versions before it are ruled out.
    c = ctx(**{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"})
    assert c.minimum_version == ssl.TLSVersion.TLSv1_3
    for bad in ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256",
                 "ssl.enabled.protocols": "TLSv1.2"},
                {"ssl.cipher.suites": "NO-SUCH-SUITE"}):
        with pytest.raises(ConfigError, match=r"ssl\.cipher\.suites"):
            ctx(**bad)
