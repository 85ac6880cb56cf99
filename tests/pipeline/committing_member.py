"""A consumer-group member that commits what it consumes, in a child process.

``python committing_member.py BOOTSTRAP GROUP TOPIC [--instance-id ID] [--session-ms N]``
consumes with aiokafka and commits after every non-empty poll until SIGTERM, then closes
(a dynamic member leaves the group; a static one does not). SIGKILL stops it with no
LeaveGroup. It prints ``{"consumed": n}`` lines as it goes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys


async def run(a: argparse.Namespace) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaError

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    c = AIOKafkaConsumer(
        a.topic, bootstrap_servers=a.bootstrap, group_id=a.group,
        group_instance_id=a.instance_id or None, session_timeout_ms=a.session_ms,
        heartbeat_interval_ms=200, max_poll_interval_ms=20000, metadata_max_age_ms=1000,
        enable_auto_commit=False, auto_offset_reset="earliest", client_id=a.client_id,
    )
    await c.start()
    consumed = 0
    while not stop.is_set():
        batch = await c.getmany(timeout_ms=100)
        n = sum(len(v) for v in batch.values())
        if n:
            consumed += n
            try:
                await c.commit()
            except KafkaError:
                continue  # a rebalance is under way: the next owner commits
            sys.stdout.write(json.dumps({"consumed": consumed}) + "\n")
            sys.stdout.flush()
    await c.stop()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("bootstrap")
    p.add_argument("group")
    p.add_argument("topic")
    p.add_argument("--instance-id", default="")
    p.add_argument("--client-id", default="pipeline-test")
    p.add_argument("--session-ms", type=int, default=2000)
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
