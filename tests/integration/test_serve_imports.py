"""What ``kafkalite serve`` imports before it listens: nothing a plaintext broker does not
use (start-up time is mostly imports; figures in docs/benchmarks.md)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

#: Each is tens of milliseconds of start-up: hypothesis (kio registers strategies when it
#: is importable), cryptography (TLS listeners only), scramp (SCRAM only), crc32c's
#: package __init__ and importlib.metadata, the HTTP client (kafkalite ctl), and the
#: pipeline's libraries; the modules of the kinds of group a new broker has none of, of the
#: share fetch path and of the transaction coordinator.
NOT_BEFORE_LISTENING = ("hypothesis", "cryptography", "scramp", "crc32c", "importlib.metadata",
                        "urllib.request", "pyspark", "pyarrow", "numpy", "pandas",
                        # TLS and SASL: only for listeners that use them.
                        "kafkalite.broker.security.tls", "kafkalite.broker.security.mechanisms",
                        "kafkalite.broker.security.oauthbearer",
                        "kafkalite.broker.security.jaas",
                        # ACLs: only with an authorizer, or the first ACL request.
                        "kafkalite.broker.security.acl", "kafkalite.broker.security.authorizer",
                        "kafkalite.broker.handlers.security.acls",
                        # KIP-848 consumer groups and KIP-932 share groups: with the first
                        # such group or record.
                        "kafkalite.protocol.consumer_group_records",
                        "kafkalite.coordinator.consumer.membership",
                        "kafkalite.coordinator.consumer.migration",
                        "kafkalite.coordinator.consumer.conversion",
                        "kafkalite.protocol.share_group_records",
                        "kafkalite.coordinator.share.membership",
                        "kafkalite.coordinator.share.group",
                        # KIP-932's fetch path and share-group state: with the first share
                        # consumer (or a data directory that has __share_group_state).
                        "kafkalite.broker.share.manager",
                        "kafkalite.broker.handlers.data.share_fetch",
                        "kafkalite.broker.handlers.groups.share_offsets",
                        "kafkalite.coordinator.share.partition",
                        "kafkalite.coordinator.share.sessions",
                        "kafkalite.coordinator.share.state_core",
                        "kafkalite.protocol.share_state_records",
                        # The transaction coordinator: with the first producer that needs
                        # it (or a data directory that has __transaction_state).
                        "kafkalite.coordinator.txn.transactions",
                        "kafkalite.protocol.transaction_log",
                        "kafkalite.coordinator.txn.markers",
                        "kafkalite.broker.handlers.transactions.transactions",
                        "kafkalite.broker.handlers.transactions.producer_ids",
                        # Pushed client telemetry (KIP-714): with the first push.
                        "google.protobuf", "opentelemetry.proto.metrics.v1.metrics_pb2")


def test_a_plaintext_broker_imports_none_of_the_heavy_optional_modules(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "kafkalite", "serve",
         "--data-dir", str(tmp_path / "data"), "--listen", "127.0.0.1:0",
         "--log-level", "warning", "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), "the broker did not listen"
        assert json.loads(ready.read_text())["port"] > 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    imported = {line.rsplit("|", 1)[1].strip() for line in err.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "kafkalite.broker.server" in imported
    # The packages themselves: ``serve`` keeps hypothesis out by a None in sys.modules, so
    # kio's attempt at ``hypothesis.strategies`` is listed but fails at once.
    assert sorted(imported.intersection(NOT_BEFORE_LISTENING)) == []
    # One node (the default) builds none of the multi-node composition.
    assert "kafkalite.broker.cluster.identity" in imported
    assert sorted(m for m in imported if m.startswith("kafkalite.broker.cluster.")
                  and m != "kafkalite.broker.cluster.identity") == []
