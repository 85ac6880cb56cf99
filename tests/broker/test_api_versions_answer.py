"""ApiVersions, byte for byte, as clients have always seen it from this broker: the
response of every version to a fresh plaintext broker (consumer protocol on, the
default), against the bytes recorded in ``data/api_versions_responses.json``. The API
table is derived from the route table; a change to either shows here first."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request

RECORDED = Path(__file__).parent / "data" / "api_versions_responses.json"


def answers(bootstrap: str) -> dict[str, str]:
    conn = RawConnection(bootstrap, client_id="api-versions-check")
    try:
        out = {}
        for version in range(6):
            fields = ({"client_software_name": "kafkalite-check",
                       "client_software_version": "1"} if version >= 3 else {})
            conn.corr = 99  # one correlation id for every recording
            conn.sock.sendall(conn.frame(request(18, version, **fields)))
            out[str(version)] = conn.recv_frame().hex()
        return out
    finally:
        conn.close()


def test_api_versions_answers_are_unchanged(tmp_path: Path) -> None:
    broker = BrokerThread(tmp_path / "data").start()
    try:
        got = answers(broker.bootstrap)
    finally:
        broker.stop()
    assert got == json.loads(RECORDED.read_text())


def test_v5_checks_the_cluster_and_node_the_client_means(tmp_path: Path) -> None:
    """KIP-1242: a v5 request naming another cluster or node is REBOOTSTRAP_REQUIRED, one
    of the two alone (or a software name outside Kafka's pattern) INVALID_REQUEST; errors
    carry no API list."""
    broker = BrokerThread(tmp_path / "data").start()
    conn = RawConnection(broker.bootstrap, client_id="api-versions-check")
    try:
        cluster_id = broker.call(lambda: broker.inner.cluster.cluster_id)
        sw = {"client_software_name": "kafkalite-check", "client_software_version": "1"}

        def ask(version: int = 5, **fields: object) -> tuple[int, int]:
            resp = conn.call(request(18, version, **{**sw, **fields}))
            return int(resp.error_code), len(resp.api_keys)

        assert ask(cluster_id=cluster_id, node_id=1)[0] == 0
        assert ask()[0] == 0
        assert ask(cluster_id="elsewhere", node_id=1) == (129, 0)  # REBOOTSTRAP_REQUIRED
        assert ask(cluster_id=cluster_id, node_id=2) == (129, 0)
        assert ask(cluster_id=cluster_id) == (42, 0)  # INVALID_REQUEST
        assert ask(node_id=1) == (42, 0)
        assert ask(version=3, client_software_name="no spaces allowed") == (42, 0)
    finally:
        conn.close()
        broker.stop()


if __name__ == "__main__":  # records the current answers
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        b = BrokerThread(Path(d) / "data").start()
        try:
            RECORDED.write_text(json.dumps(answers(b.bootstrap), indent=1) + "\n")
        finally:
            b.stop()
    sys.exit(0)
