"""The ``kafkalite`` command."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from kafkalite import __version__

from .config import Config, ConfigError


def _serve(args: argparse.Namespace) -> int:
    from . import logs
    from .server import Broker, new_event_loop, serve_until_signalled

    overrides: dict[str, str] = {}
    for item in args.set or []:
        if "=" not in item:
            print(f"--set expects key=value, got {item!r}", file=sys.stderr)
            return 2
        k, v = item.split("=", 1)
        overrides[k.strip()] = v.strip()
    if args.data_dir:
        overrides["log.dirs"] = args.data_dir
    if args.listen:
        overrides["listeners"] = f"PLAINTEXT://{args.listen}"
    if args.advertise:
        overrides["advertised.listeners"] = f"PLAINTEXT://{args.advertise}"
    if args.durable:
        overrides["log.durable"] = "true"
    try:
        config = Config.build(Path(args.config) if args.config else None, overrides=overrides)
    except (ConfigError, OSError) as e:
        print(f"configuration error: {e}", file=sys.stderr)
        return 2
    logs.configure(args.log_format, args.log_level)

    def ready(broker: Broker) -> None:
        if args.ready_file:
            Path(args.ready_file).write_text(
                json.dumps({"bootstrap": broker.bootstrap, "port": broker.port,
                            "cluster_id": broker.cluster_id})
            )

    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(serve_until_signalled(Broker(config), ready))
    finally:
        loop.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kafkalite", description="A Kafka-protocol broker.")
    p.add_argument("--version", action="version", version=f"kafkalite {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="run the broker")
    s.add_argument("--config", help="server.properties file")
    s.add_argument("--data-dir", help="data directory (log.dirs); default ./kafkalite-data")
    s.add_argument("--listen", help="HOST:PORT to listen on (default 127.0.0.1:9092)")
    s.add_argument("--advertise", help="HOST:PORT clients are told to connect to")
    s.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="set a broker property (Kafka's names); repeatable")
    s.add_argument("--durable", action="store_true",
                   help="fsync a partition before acknowledging acks=1/-1 writes")
    s.add_argument("--log-format", choices=["auto", "console", "json"], default="auto")
    s.add_argument("--log-level", default="info")
    s.add_argument("--ready-file", help="write the bound address as JSON here once listening")
    s.set_defaults(func=_serve)

    o = sub.add_parser("offsets", help="inspect __consumer_offsets")
    osub = o.add_subparsers(dest="offsets_command", required=True)
    od = osub.add_parser("dump", help="print its records as JSON lines, as kafka-dump-log "
                         "--offsets-decoder shows them")
    od.add_argument("--data-dir", required=True, help="the broker's data directory (log.dirs)")
    od.add_argument("--partition", type=int, help="only this partition")
    od.set_defaults(func=_offsets_dump)

    # Only argparse at build time; Spark and pyarrow load when a pipeline job runs.
    from kafkalite.pipeline.cli import register as register_pipeline

    register_pipeline(sub)
    return p


def _offsets_dump(args: argparse.Namespace) -> int:
    from .offsets_dump import dump

    dump(Path(args.data_dir), sys.stdout, args.partition)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    rc: int = args.func(args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
