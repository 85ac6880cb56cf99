"""``kafkalite serve`` against bad and unusual settings, as a child process: every
configuration problem, found early or while listeners and data directories are set up,
ends it with one line naming the property and exit status 1; a PKCS12 keystore with no
type (what keytool writes, whatever the file is called) serves TLS as Kafka would."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from kafkalite.broker.security.certs import CertFiles, make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertFiles:
    return make_certs(tmp_path_factory.mktemp("certs"), p12_password="store-secret")


def _serve(data_dir: Path, *settings: str, ready: Path | None = None
           ) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "kafkalite", "serve", "--data-dir", str(data_dir)]
    for s in settings:
        args += ["--set", s]
    if ready is not None:
        args += ["--ready-file", str(ready)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _fails_with_one_line(data_dir: Path, *settings: str) -> str:
    proc = _serve(data_dir, *settings)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("configuration error: "), err
    assert "Traceback" not in err
    return lines[0]


def _tls(keystore: Path, password: str) -> tuple[str, ...]:
    return ("listeners=SSL://127.0.0.1:0", f"ssl.keystore.location={keystore}",
            f"ssl.keystore.password={password}")


def test_a_pkcs12_keystore_named_jks_without_a_type_serves_tls(
        certs: CertFiles, tmp_path: Path) -> None:
    keystore = tmp_path / "broker.keystore.jks"
    shutil.copy(certs.broker_p12, keystore)
    ready = tmp_path / "ready.json"
    proc = _serve(tmp_path / "data", *_tls(keystore, "store-secret"),
                  "offsets.topic.num.partitions=1", ready=ready)
    try:
        deadline = time.monotonic() + 60
        while not (ready.exists() and ready.stat().st_size) and proc.poll() is None:
            assert time.monotonic() < deadline, "the broker did not listen"
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1]
        bootstrap = json.loads(ready.read_text())["bootstrap"]
        tls = {"bootstrap.servers": bootstrap, "security.protocol": "SSL",
               "ssl.ca.location": str(certs.ca)}
        producer = Producer(tls)
        producer.produce("tls-topic", b"over TLS")
        assert producer.flush(30) == 0
        consumer = Consumer({**tls, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["tls-topic"])
        try:
            deadline = time.monotonic() + 30
            msg = None
            while msg is None and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error():
                    msg = None
            assert msg is not None and msg.value() == b"over TLS"
        finally:
            consumer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_a_wrong_keystore_password_is_one_line(certs: CertFiles, tmp_path: Path) -> None:
    line = _fails_with_one_line(tmp_path / "data", *_tls(certs.broker_p12, "not-it"))
    assert "ssl.keystore.password" in line


def test_a_missing_keystore_is_one_line(certs: CertFiles, tmp_path: Path) -> None:
    line = _fails_with_one_line(tmp_path / "data", *_tls(tmp_path / "absent.jks", "x"))
    assert "ssl.keystore.location" in line and "absent.jks" in line


def test_a_jks_keystore_is_one_line_saying_how_to_convert_it(tmp_path: Path) -> None:
    # A JKS store begins with the magic number 0xFEEDFEED.
    store = tmp_path / "old.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    line = _fails_with_one_line(tmp_path / "data", *_tls(store, "changeit"))
    assert "ssl.keystore.location" in line and "JKS" in line
    assert "-deststoretype PKCS12" in line


def test_a_wrong_truststore_password_is_one_line(certs: CertFiles, tmp_path: Path) -> None:
    line = _fails_with_one_line(
        tmp_path / "data", *_tls(certs.broker_p12, "store-secret"),
        "ssl.client.auth=required", f"ssl.truststore.location={certs.truststore_p12}",
        "ssl.truststore.password=not-it")
    assert "ssl.truststore.password" in line


def test_an_unusable_data_directory_is_one_line(tmp_path: Path) -> None:
    # A file where the directory should be: refused whoever runs the test (root reads
    # a mode-000 directory).
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    line = _fails_with_one_line(blocker / "data", "listeners=PLAINTEXT://127.0.0.1:0")
    assert "log.dirs" in line and str(blocker / "data") in line


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _serve(tmp_path / "data", f"listeners=PLAINTEXT://127.0.0.1:{port}")
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert err.splitlines()[-1].startswith(f"configuration error: listeners: cannot listen "
                                           f"on 127.0.0.1:{port}"), err
    assert "Traceback" not in err


def test_a_bad_sasl_setting_is_one_line(tmp_path: Path) -> None:
    line = _fails_with_one_line(tmp_path / "data", "listeners=SASL_PLAINTEXT://127.0.0.1:0",
                                "sasl.enabled.mechanisms=NOT-A-MECHANISM")
    assert "sasl.enabled.mechanisms" in line


def test_an_unknown_replica_selector_is_one_line(tmp_path: Path) -> None:
    line = _fails_with_one_line(tmp_path / "data",
                                "replica.selector.class=com.example.NearestSelector")
    assert "replica.selector.class" in line and "com.example.NearestSelector" in line
