"""``kafkalite certs`` and ``kafkalite scram``, in process."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from kafkalite.broker.cli.main import main
from kafkalite.broker.security.scram import ScramStore


def test_certs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certs", "--out", str(tmp_path), "--host", "broker.local",
                 "--host", "10.1.2.3", "--client", "app", "--p12-password", "pw"]) == 0
    assert "ssl.keystore.location" in capsys.readouterr().out
    cert = x509.load_pem_x509_certificates((tmp_path / "broker.pem").read_bytes())[0]
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["broker.local"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["10.1.2.3"]
    client, ca = x509.load_pem_x509_certificates((tmp_path / "client.pem").read_bytes())
    assert client.subject.rfc4514_string() == "CN=app,O=kafkalite"
    assert (tmp_path / "broker.key").stat().st_mode & 0o077 == 0
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "broker-keystore.pem")
    ctx.load_verify_locations(tmp_path / "ca.pem")
    # PKCS12: key and chain per keystore, the CA alone in the truststore.
    for name, cn in (("broker.p12", "broker.local"), ("client.p12", "app")):
        key, leaf, extra = pkcs12.load_key_and_certificates(
            (tmp_path / name).read_bytes(), b"pw")
        assert key is not None and leaf is not None
        assert leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == cn
        assert [c.subject for c in extra] == [ca.subject]
    trust = pkcs12.load_pkcs12((tmp_path / "truststore.p12").read_bytes(), b"pw")
    assert trust.key is None and [c.certificate for c in trust.additional_certs] == [ca]


def test_scram(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = str(tmp_path)
    assert main(["scram", "set", "--data-dir", d, "--user", "alice", "--password", "pw",
                 "--iterations", "8192"]) == 0
    assert main(["scram", "set", "--data-dir", d, "--user", "bob", "--password", "pw",
                 "--mechanism", "SCRAM-SHA-512"]) == 0
    assert set(ScramStore(tmp_path).users()) == {"alice", "bob"}
    assert main(["scram", "list", "--data-dir", d]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["alice\tSCRAM-SHA-256\titerations=8192", "alice\tSCRAM-SHA-512\titerations=8192",
                   "bob\tSCRAM-SHA-512\titerations=4096"]
    assert main(["scram", "delete", "--data-dir", d, "--user", "alice"]) == 0
    assert main(["scram", "delete", "--data-dir", d, "--user", "alice"]) == 1
    assert main(["scram", "set", "--data-dir", d, "--user", "x", "--password", "p",
                 "--iterations", "10"]) == 2
    assert set(ScramStore(tmp_path).users()) == {"bob"}
