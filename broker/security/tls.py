"""TLS for a listener: an ``ssl.SSLContext`` built from Kafka's ``ssl.*`` properties.

Keystores and truststores are PEM (KIP-651: inline ``ssl.keystore.certificate.chain`` /
``ssl.keystore.key`` / ``ssl.truststore.certificates``, or a PEM file at
``ssl.keystore.location``) or PKCS12 (``ssl.keystore.location`` and its passwords), the
file's format read from its content as Java reads a key store; a JKS store is refused
with the command that converts it.
Python's ``ssl`` loads a key and chain only from a file, so a PKCS12 or inline key is
written to a private temporary file for the load and removed at once.

``cryptography`` is imported where a key, store or client certificate is read, not at
module load: it is a fifth of a plaintext broker's start-up.
"""

from __future__ import annotations

import functools
import os
import ssl
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.properties import ConfigError
from .listeners import ListenerProps
from .principal_rules import PrincipalMapper

if TYPE_CHECKING:
    from cryptography import x509

_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}

_PROTOCOLS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


def _store_type(props: ListenerProps, kind: str) -> str:
    """The format of ``ssl.<kind>``: PEM for inline material, else read from the file.

    Kafka's default type is JKS, and Java's JKS and PKCS12 key stores read either format
    (``keystore.type.compat``): what ``keytool`` writes is PKCS12 whatever the file is
    called. So the file's content decides; an explicit PEM is taken at its word.
    """
    explicit = (props.get(f"ssl.{kind}.type") or "").upper()
    inline = "ssl.keystore.key" if kind == "keystore" else "ssl.truststore.certificates"
    if props.get(inline) or explicit == "PEM":
        return "PEM"
    if explicit and explicit not in ("JKS", "PKCS12"):
        raise ConfigError(f"ssl.{kind}.type {explicit} is not supported (use PEM, PKCS12 "
                          "or JKS)")
    location = props.get(f"ssl.{kind}.location")
    if not location:
        return explicit or "PEM"
    found = _sniff(_read(location, f"ssl.{kind}.location"))
    if found in ("JKS", "JCEKS"):
        raise ConfigError(
            f"ssl.{kind}.location {location} is a {found} key store, which kafkalite "
            f"cannot read: convert it to PKCS12 (keytool -importkeystore -srckeystore "
            f"{location} -destkeystore {location}.p12 -deststoretype PKCS12) or to PEM")
    if found is None:
        raise ConfigError(f"ssl.{kind}.location {location}: neither a PEM file nor a "
                          "PKCS12 or JKS key store")
    return found


def _sniff(data: bytes) -> str | None:
    """PEM, PKCS12 (a DER SEQUENCE), JKS or JCEKS (their magic numbers), by content."""
    if data[:4] == b"\xfe\xed\xfe\xed":
        return "JKS"
    if data[:4] == b"\xce\xce\xce\xce":
        return "JCEKS"
    if data[:1] == b"\x30":
        return "PKCS12"
    if b"-----BEGIN" in data[:4096]:
        return "PEM"
    return None


def _password(props: ListenerProps, prop: str) -> bytes | None:
    v = props.get(prop)
    return v.encode() if v else None


def _read(path: str, prop: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"{prop}: cannot read {path}: {e}") from e


def _pem_key(key: object) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(  # type: ignore[attr-defined, no-any-return]
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _load_private_pem(ctx: ssl.SSLContext, pem: bytes) -> None:
    fd, name = tempfile.mkstemp(prefix="kafkalite-key-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        ctx.load_cert_chain(name)
    finally:
        os.unlink(name)


def _load_keystore(ctx: ssl.SSLContext, props: ListenerProps) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    kind = _store_type(props, "keystore")
    key_password = _password(props, "ssl.key.password")
    if kind == "PEM":
        chain = props.get("ssl.keystore.certificate.chain")
        key = props.get("ssl.keystore.key")
        if chain or key:
            if not (chain and key):
                raise ConfigError("ssl.keystore.certificate.chain and ssl.keystore.key "
                                  "must be set together")
            try:
                pk = serialization.load_pem_private_key(key.encode(), key_password)
            except (ValueError, TypeError) as e:
                raise ConfigError(f"ssl.keystore.key: {e}") from e
            _load_private_pem(ctx, _pem_key(pk) + b"\n" + chain.encode() + b"\n")
            return
        location = props.get("ssl.keystore.location")
        if not location:
            raise ConfigError("a TLS listener needs ssl.keystore.location or "
                              "ssl.keystore.certificate.chain and ssl.keystore.key")
        try:
            ctx.load_cert_chain(location, password=key_password)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"ssl.keystore.location {location}: {e}") from e
        return
    if kind == "PKCS12":
        location = props.get("ssl.keystore.location")
        if not location:
            raise ConfigError("ssl.keystore.type=PKCS12 needs ssl.keystore.location")
        data = _read(location, "ssl.keystore.location")
        try:
            p12_key, cert, extra = pkcs12.load_key_and_certificates(
                data, _password(props, "ssl.keystore.password") or key_password)
        except (ValueError, TypeError):
            raise ConfigError(f"ssl.keystore.password: cannot open the PKCS12 key store "
                              f"{location} with it (a wrong password, or a damaged "
                              "store)") from None
        if p12_key is None or cert is None:
            raise ConfigError(f"ssl.keystore.location {location}: no key and certificate")
        certs = [cert, *extra]
        _load_private_pem(ctx, _pem_key(p12_key) + b"".join(
            c.public_bytes(serialization.Encoding.PEM) for c in certs))
        return
    raise ConfigError(f"ssl.keystore.type {kind} is not supported (use PEM or PKCS12)")


def _load_truststore(ctx: ssl.SSLContext, props: ListenerProps) -> bool:
    """Trusted CAs for client certificates; False when none are configured."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    kind = _store_type(props, "truststore")
    inline = props.get("ssl.truststore.certificates")
    location = props.get("ssl.truststore.location")
    try:
        if kind == "PEM":
            if inline:
                ctx.load_verify_locations(cadata=inline)
                return True
            if location:
                ctx.load_verify_locations(cafile=location)
                return True
            return False
        if kind == "PKCS12":
            if not location:
                raise ConfigError("ssl.truststore.type=PKCS12 needs ssl.truststore.location")
            data = _read(location, "ssl.truststore.location")
            try:
                store = pkcs12.load_pkcs12(data, _password(props, "ssl.truststore.password"))
            except (ValueError, TypeError):
                raise ConfigError(f"ssl.truststore.password: cannot open the PKCS12 trust "
                                  f"store {location} with it (a wrong password, or a "
                                  "damaged store)") from None
            certs = [c.certificate for c in store.additional_certs]
            if store.cert is not None:
                certs.append(store.cert.certificate)
            if not certs:
                raise ConfigError(f"ssl.truststore.location {location}: no certificates")
            ctx.load_verify_locations(cadata="".join(
                c.public_bytes(serialization.Encoding.PEM).decode() for c in certs))
            return True
    except (OSError, ssl.SSLError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"ssl.truststore.location {location}: {e}") from e
    raise ConfigError(f"ssl.truststore.type {kind} is not supported (use PEM or PKCS12)")


def openssl_cipher(name: str) -> str:
    """A Java/IANA suite name (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) as OpenSSL names it
    (ECDHE-RSA-AES128-GCM-SHA256); OpenSSL names pass through."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    kx, cipher = name[4:].split("_WITH_", 1)
    kx = kx.replace("_", "-")
    if kx == "RSA":
        kx = ""
    cipher = cipher.replace("AES_128", "AES128").replace("AES_256", "AES256")
    cipher = cipher.replace("CHACHA20_POLY1305", "CHACHA20-POLY1305").replace("_", "-")
    return f"{kx}-{cipher}" if kx else cipher


#: TLS 1.3's suites: Python's ``ssl`` offers all OpenSSL enables and cannot narrow them.
TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                          "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_CCM_SHA256",
                          "TLS_AES_128_CCM_8_SHA256"})


def _cipher_suites(ctx: ssl.SSLContext, suites: list[str], low: ssl.TLSVersion,
                   high: ssl.TLSVersion) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """Apply ``ssl.cipher.suites``; returns the protocol range it leaves. As with Java, a
    list without TLS 1.3 suites rules TLS 1.3 out, and one with only TLS 1.3 suites
    rules out the versions before it."""
    older = [s for s in suites if s not in TLS13_SUITES]
    if older:
        try:
            ctx.set_ciphers(":".join(openssl_cipher(s) for s in older))
        except ssl.SSLError as e:
            raise ConfigError(f"ssl.cipher.suites: no usable suite in {older}: {e}") from e
    else:
        low = max(low, ssl.TLSVersion.TLSv1_3)
    if len(older) == len(suites):
        high = min(high, ssl.TLSVersion.TLSv1_2)
    if low > high:
        raise ConfigError(f"ssl.cipher.suites {suites} leave no protocol of "
                          "ssl.enabled.protocols usable")
    return low, high


def server_context(props: ListenerProps, client_auth: str | None = None) -> ssl.SSLContext:
    """The listener's TLS context; ``client_auth`` overrides ``ssl.client.auth``."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocols = props.list("ssl.enabled.protocols", "TLSv1.2,TLSv1.3")
    versions = []
    for p in protocols:
        if p not in _PROTOCOLS:
            raise ConfigError(f"ssl.enabled.protocols: unknown protocol {p!r}")
        versions.append(_PROTOCOLS[p])
    if not versions:
        raise ConfigError("ssl.enabled.protocols is empty")
    low, high = min(versions), max(versions)
    suites = props.list("ssl.cipher.suites")
    if suites:
        low, high = _cipher_suites(ctx, suites, low, high)
    ctx.minimum_version, ctx.maximum_version = low, high
    _load_keystore(ctx, props)
    mode = (client_auth or props.text("ssl.client.auth", "none")).lower()
    if mode not in _CLIENT_AUTH:
        raise ConfigError(f"ssl.client.auth must be none, requested or required, not {mode!r}")
    trusted = _load_truststore(ctx, props)
    if mode != "none" and not trusted:
        raise ConfigError(f"ssl.client.auth={mode} needs a truststore "
                          "(ssl.truststore.location or ssl.truststore.certificates)")
    ctx.verify_mode = _CLIENT_AUTH[mode]
    return ctx


@functools.cache
def _rfc2253_keywords() -> dict[Any, str]:
    """The attribute types Java's X500Principal.getName() (RFC 2253) prints by keyword;
    any other prints as its OID and the value's DER in hex."""
    from cryptography.x509.oid import NameOID

    return {
        NameOID.COMMON_NAME: "CN", NameOID.COUNTRY_NAME: "C", NameOID.LOCALITY_NAME: "L",
        NameOID.STATE_OR_PROVINCE_NAME: "ST", NameOID.ORGANIZATION_NAME: "O",
        NameOID.ORGANIZATIONAL_UNIT_NAME: "OU", NameOID.STREET_ADDRESS: "STREET",
        NameOID.DOMAIN_COMPONENT: "DC", NameOID.USER_ID: "UID",
    }
_SPECIAL = frozenset(',=+<>#;\\"')


def _escape(value: str) -> str:
    """Java's RFC 2253 escaping: its special characters anywhere, a space at either end."""
    chars = ["\\" + c if c in _SPECIAL else c for c in value]
    if chars and value[0] == " ":
        chars[0] = "\\ "
    if chars and value[-1] == " ":
        chars[-1] = "\\ "
    return "".join(chars)


_ENCODINGS = {30: "utf-16-be", 28: "utf-32-be"}  # BMPString, UniversalString


def _der_value(attr: x509.NameAttribute[Any]) -> bytes:
    tag = int(getattr(getattr(attr, "_type", None), "value", 12))  # UTF8String by default
    raw = attr.value if isinstance(attr.value, bytes) else \
        attr.value.encode(_ENCODINGS.get(tag, "utf-8"))
    n = len(raw)
    length = bytes([n]) if n < 128 else \
        bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes((n.bit_length() + 7) // 8)
    return bytes([tag]) + length + raw


def java_dn(name: x509.Name) -> str:
    """A distinguished name as Java's X500Principal.getName() prints it (RFC 2253, the
    form Kafka's principal builder and ssl.principal.mapping.rules see)."""
    keywords = _rfc2253_keywords()
    rdns = []
    for rdn in reversed(name.rdns):
        avas: list[tuple[tuple[int, str, tuple[int, ...]], str]] = []
        for attr in rdn:
            keyword = keywords.get(attr.oid)
            if keyword is not None and isinstance(attr.value, str):
                # Java sorts a multi-valued RDN: keywords first (by canonical form),
                # then OIDs numerically.
                key: tuple[int, str, tuple[int, ...]] = (
                    0, f"{keyword}={attr.value}".lower(), ())
                avas.append((key, f"{keyword}={_escape(attr.value)}"))
            else:
                oid = attr.oid.dotted_string
                key = (1, "", tuple(int(x) for x in oid.split(".")))
                avas.append((key, f"{oid}=#{_der_value(attr).hex()}"))
        rdns.append("+".join(text for _k, text in sorted(avas)))
    return ",".join(rdns)


def peer_dn(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str | None:
    """The client certificate's subject DN as Java prints it (RFC 2253), or None."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    from cryptography import x509

    return java_dn(x509.load_der_x509_certificate(der).subject)


def principal_for(ssl_object: ssl.SSLObject | ssl.SSLSocket | None,
                  mapper: PrincipalMapper) -> str:
    """Kafka's default principal builder on an SSL listener: ``User:`` + the mapped DN,
    ``User:ANONYMOUS`` without a client certificate."""
    dn = peer_dn(ssl_object)
    if dn is None:
        return "User:ANONYMOUS"
    return "User:" + mapper.name(dn)
