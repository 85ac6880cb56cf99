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
        for version in range(5):
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


if __name__ == "__main__":  # records the current answers
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        b = BrokerThread(Path(d) / "data").start()
        try:
            RECORDED.write_text(json.dumps(answers(b.bootstrap), indent=1) + "\n")
        finally:
            b.stop()
    sys.exit(0)
