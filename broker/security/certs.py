"""Development certificates: a CA, a broker certificate and client certificates, as PEM
and as PKCS12 keystores and truststore.

``kafkalite certs --out DIR`` writes them so TLS can be turned on in one step; the test
fixtures use the same function. Keys are P-256 EC (fast to make) in PKCS#8, the form
Kafka's PEM keystores (KIP-651) read. The PKCS12 files (``*.p12``, protected by
``p12_password``) are what a Java client configured with ``ssl.keystore.type=PKCS12``
reads; the truststore marks the CA trusted the way Java's keytool does.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_HOSTS = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class CertFiles:
    dir: Path
    ca: Path
    ca_key: Path
    broker_cert: Path
    broker_key: Path
    client_cert: Path
    client_key: Path
    #: Key and chain in one file: Kafka's file-based PEM keystore (ssl.keystore.location).
    broker_keystore: Path
    client_keystore: Path
    #: PKCS12 keystores (key and chain) and a truststore holding the CA.
    broker_p12: Path
    client_p12: Path
    truststore_p12: Path
    p12_password: str

    def text(self, which: str) -> str:
        path: Path = getattr(self, which)
        return path.read_text()


def _name(cn: str, org: str = "kafkalite") -> x509.Name:
    return x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
        x509.NameAttribute(NameOID.COMMON_NAME, cn),
    ])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _san(hosts: list[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for h in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(names)


def _issue(subject: x509.Name, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
           issuer_key: ec.EllipticCurvePrivateKey, days: int, *, ca: bool,
           hosts: list[str] | None = None, usage: list[x509.ObjectIdentifier] | None = None,
           ) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=days))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        b = b.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
    else:
        b = b.add_extension(x509.KeyUsage(
            digital_signature=True, key_encipherment=False, key_cert_sign=False,
            crl_sign=False, content_commitment=False, data_encipherment=False,
            key_agreement=True, encipher_only=False, decipher_only=False), critical=True)
    if hosts:
        b = b.add_extension(_san(hosts), critical=False)
    if usage:
        b = b.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                        critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def make_certs(out: Path, hosts: list[str] | None = None, *, client: str = "client",
               days: int = 825, p12_password: str = "kafkalite") -> CertFiles:
    """Write ca.pem/ca.key, broker.pem/broker.key (chain: broker, CA),
    client.pem/client.key (chain: client, CA; subject ``CN=<client>,O=kafkalite``), the
    same as PEM keystores, and broker.p12, client.p12 and truststore.p12."""
    out.mkdir(parents=True, exist_ok=True)
    hosts = list(hosts or DEFAULT_HOSTS)
    ca_key = _key()
    ca_name = _name("kafkalite development CA")
    ca = _issue(ca_name, ca_key, ca_name, ca_key, days, ca=True)
    broker_key = _key()
    broker = _issue(_name(hosts[0]), broker_key, ca_name, ca_key, days, ca=False, hosts=hosts,
                    usage=[ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
    client_key = _key()
    client_cert = _issue(_name(client), client_key, ca_name, ca_key, days, ca=False,
                         usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
    files = CertFiles(out, out / "ca.pem", out / "ca.key", out / "broker.pem",
                      out / "broker.key", out / "client.pem", out / "client.key",
                      out / "broker-keystore.pem", out / "client-keystore.pem",
                      out / "broker.p12", out / "client.p12", out / "truststore.p12",
                      p12_password)
    files.ca.write_bytes(_pem(ca))
    _private(files.ca_key, _pem_key(ca_key))
    files.broker_cert.write_bytes(_pem(broker) + _pem(ca))
    _private(files.broker_key, _pem_key(broker_key))
    files.client_cert.write_bytes(_pem(client_cert) + _pem(ca))
    _private(files.client_key, _pem_key(client_key))
    _private(files.broker_keystore, _pem_key(broker_key) + _pem(broker) + _pem(ca))
    _private(files.client_keystore, _pem_key(client_key) + _pem(client_cert) + _pem(ca))
    secret = serialization.BestAvailableEncryption(p12_password.encode())
    for path, name, key, cert in ((files.broker_p12, b"broker", broker_key, broker),
                                  (files.client_p12, client.encode(), client_key, client_cert)):
        _private(path, pkcs12.serialize_key_and_certificates(name, key, cert, [ca], secret))
    files.truststore_p12.write_bytes(pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(ca, b"ca")], secret))
    return files


def _private(path: Path, data: bytes) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(data)


def broker_properties(files: CertFiles, listener: str = "SSL") -> dict[str, str]:
    """Broker properties for a TLS listener using these files (PEM keystore, KIP-651)."""
    p = f"listener.name.{listener.lower()}."
    return {
        p + "ssl.keystore.type": "PEM",
        p + "ssl.keystore.certificate.chain": files.text("broker_cert"),
        p + "ssl.keystore.key": files.text("broker_key"),
        p + "ssl.truststore.type": "PEM",
        p + "ssl.truststore.certificates": files.text("ca"),
    }
