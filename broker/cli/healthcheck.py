"""``python -m kafkalite.broker.cli.healthcheck [HOST:PORT]``: exit 0 when a broker answers
ApiVersions.

A real Kafka request rather than a port probe, so a container is healthy only once the
broker serves requests. Uses only the standard library and the protocol package.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.errors import NO_ERROR

API_VERSIONS = ApiKey.API_VERSIONS


def check(host: str, port: int, timeout: float) -> str | None:
    """None when healthy, else why not."""
    client_id = b"kafkalite-healthcheck"
    # ApiVersions v0: request header v1 and an empty body.
    body = struct.pack(">hhih", API_VERSIONS, 0, 1, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack(">i", len(body)) + body)
            head = _recv(s, 4)
            (size,) = struct.unpack(">i", head)
            if not 6 <= size <= 1 << 20:
                return f"bad response size {size}"
            frame = _recv(s, size)
    except OSError as e:
        return f"{type(e).__name__}: {e}"
    corr, error = struct.unpack_from(">ih", frame)
    if corr != 1:
        return f"unexpected correlation id {corr}"
    if error != NO_ERROR:
        return f"ApiVersions error code {error}"
    return None


def _recv(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        out += chunk
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kafkalite.broker.cli.healthcheck")
    p.add_argument("address", nargs="?", default="127.0.0.1:9092", help="HOST:PORT")
    p.add_argument("--timeout", type=float, default=5.0)
    args = p.parse_args(argv)
    host, _, port = args.address.rpartition(":")
    problem = check(host.strip("[]") or "127.0.0.1", int(port), args.timeout)
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    print("healthy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
