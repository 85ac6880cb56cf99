"""A local S3 server (moto) on 127.0.0.1: prints its port, serves until stdin closes.

Run with ``INITIAL_NO_AUTH_ACTION_COUNT=N`` in the environment and requests after the
first N must be signed with keys that moto's IAM knows, as on AWS.
"""

from __future__ import annotations

import sys

from moto.server import ThreadedMotoServer


def main() -> None:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    print(server.get_host_and_port()[1], flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
