"""The ``kafkalite`` command."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalite import __version__

from ..config.properties import Config, ConfigError

if TYPE_CHECKING:
    from ..server import Broker


def _raise_open_files_limit() -> None:
    """Every partition keeps its active segment open: take the hard limit on open files
    (often 1024 soft against 10^5 or more hard), as Kafka's docs ask operators to."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass


def _keep_hypothesis_out() -> None:
    """kio registers hypothesis strategies for its types whenever hypothesis is installed
    (it is in every test environment): a third of the broker's import time, of no use to
    a broker process."""
    if "hypothesis" not in sys.modules:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]


def _serve(args: argparse.Namespace) -> int:
    _keep_hypothesis_out()
    _raise_open_files_limit()
    from kafkalite.timekeeping.clock import ManualClock

    from ..compose import build_broker
    from ..server import data_dir_problem, new_event_loop, serve_until_signalled
    from . import logs

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
    if args.admin is not None:
        overrides["admin.listener"] = args.admin
    if args.schema_registry is not None:
        overrides["schema.registry.listener"] = args.schema_registry
    if args.as_version is not None:
        overrides["kafkalite.as.version"] = args.as_version
    if args.nodes is not None:
        overrides["kafkalite.nodes"] = str(args.nodes)
    # Every problem with a setting, found while building the broker or while it starts
    # (keystores, SASL, data directory, binding), ends the process with one line, exit 1.
    try:
        config = Config.build(Path(args.config) if args.config else None, overrides=overrides)
    except ConfigError as e:
        return _config_error(str(e))
    except OSError as e:
        return _config_error(f"--config {args.config}: {e.strerror or e}")
    try:
        broker = build_broker(config, ManualClock() if args.manual_clock else None)
    except ConfigError as e:
        return _config_error(str(e))
    except OSError as e:
        return _config_error(data_dir_problem(config.data_dir, e))
    logs.configure(args.log_format, args.log_level)

    def ready(broker: Broker) -> None:
        if args.ready_file:
            Path(args.ready_file).write_text(
                json.dumps({"bootstrap": broker.bootstrap, "port": broker.port,
                            **({"nodes": broker.bootstraps} if len(broker.nodes) > 1
                               else {}),
                            "cluster_id": broker.cluster_id, "admin": broker.console_url,
                            "schema_registry": broker.schema_registry_url})
            )
        if sys.stdout.isatty():
            print(start_line(broker), flush=True)
        # What start-up made lives as long as the broker: no collection needs to look at
        # it again (``main`` kept the collector off until now).
        gc.freeze()
        gc.enable()

    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(serve_until_signalled(broker, ready))
    except ConfigError as e:
        return _config_error(str(e))
    finally:
        loop.close()
    return 0


def _config_error(message: str) -> int:
    print(f"configuration error: {message}", file=sys.stderr)
    return 1


def start_line(broker: Broker) -> str:
    """What a person at a terminal needs: where to connect, where the data is, where
    to look."""
    console = broker.console_url or "off (--admin 127.0.0.1:9644 to open it)"
    return (f"kafkalite {__version__} ready: bootstrap {broker.bootstrap}, "
            f"data {broker.data_dir.resolve()}, console {console}")


def build_parser(serve_only: bool = False) -> argparse.ArgumentParser:
    """The command line; ``serve_only`` builds the ``serve`` command alone (what
    ``kafkalite serve`` needs: the other commands' modules import most of the broker, and
    importing them before ``_serve`` runs would also let hypothesis in)."""
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
    s.add_argument("--manual-clock", action="store_true",
                   help="run on a manual clock that only moves when advanced (kafkalite ctl "
                   "clock advance, the admin API): for test harnesses")
    s.add_argument("--admin", metavar="HOST:PORT",
                   help="open the admin HTTP listener (JSON API, /metrics, web console) "
                   "here (admin.listener; default off)")
    s.add_argument("--as-version", metavar="X",
                   help="advertise the APIs, versions and feature levels of Kafka release X "
                        "(3.6 to 4.4; default 4.4): property kafkalite.as.version")
    s.add_argument("--nodes", type=int, metavar="N",
                   help="run N brokers in this process, node ids 1..N, listening on the "
                   "--listen port and the N-1 ports after it (kafkalite.nodes; default 1)")
    s.add_argument("--schema-registry", metavar="HOST:PORT",
                   help="serve a Confluent-compatible Schema Registry here "
                   "(schema.registry.listener; default off)")
    s.add_argument("--log-format", choices=["auto", "console", "json"], default="auto")
    s.add_argument("--log-level", default="info")
    s.add_argument("--ready-file", help="write the bound address as JSON here once listening")
    s.set_defaults(func=_serve)
    if serve_only:
        return p

    o = sub.add_parser("offsets", help="inspect __consumer_offsets")
    osub = o.add_subparsers(dest="offsets_command", required=True)
    od = osub.add_parser("dump", help="print its records as JSON lines, as kafka-dump-log "
                         "--offsets-decoder shows them")
    od.add_argument("--data-dir", required=True, help="the broker's data directory (log.dirs)")
    od.add_argument("--partition", type=int, help="only this partition")
    od.add_argument("--topic", default="__consumer_offsets",
                    choices=["__consumer_offsets", "__share_group_state"],
                    help="the internal topic to read (default __consumer_offsets)")
    od.set_defaults(func=_offsets_dump)

    c = sub.add_parser("certs", help="make a development CA, broker and client certificates "
                       "(PEM, and PKCS12 keystores and truststore) for TLS listeners")
    c.add_argument("--out", required=True, help="directory to write the files to")
    c.add_argument("--host", action="append", metavar="NAME",
                   help="a host name or address the broker certificate covers; repeatable "
                   "(default: localhost, 127.0.0.1, ::1)")
    c.add_argument("--client", default="client", help="the client certificate's common name")
    c.add_argument("--days", type=int, default=825, help="validity in days")
    c.add_argument("--p12-password", default="kafkalite",
                   help="password of the PKCS12 keystores and truststore")
    c.set_defaults(func=_certs)

    sc = sub.add_parser("scram", help="manage SCRAM credentials in a data directory")
    scsub = sc.add_subparsers(dest="scram_command", required=True)
    for name, helptext in (("set", "add or replace a user's credential"),
                           ("delete", "remove a user's credential"),
                           ("list", "list users and their mechanisms")):
        sp = scsub.add_parser(name, help=helptext)
        sp.add_argument("--data-dir", required=True, help="the broker's data directory (log.dirs)")
        if name != "list":
            sp.add_argument("--user", required=True)
            sp.add_argument("--mechanism", action="append",
                            choices=["SCRAM-SHA-256", "SCRAM-SHA-512"],
                            help="repeatable; default both")
        if name == "set":
            sp.add_argument("--password", help="the password (default: read from stdin)")
            sp.add_argument("--iterations", type=int, default=4096)
        sp.set_defaults(func=_scram)

    from .configs import register as register_configs
    from .ctl import register as register_ctl
    from .groups import register as register_groups

    register_configs(sub)
    register_ctl(sub)
    register_groups(sub)

    # Only argparse at build time; Spark and pyarrow load when a pipeline job runs.
    from kafkalite.pipeline.cli import register as register_pipeline

    register_pipeline(sub)
    return p


def _offsets_dump(args: argparse.Namespace) -> int:
    from .offsets_dump import dump

    dump(Path(args.data_dir), sys.stdout, args.partition, args.topic)
    return 0


def _certs(args: argparse.Namespace) -> int:
    from ..security.certs import make_certs

    files = make_certs(Path(args.out), args.host, client=args.client, days=args.days,
                       p12_password=args.p12_password)
    written = (files.ca, files.broker_cert, files.broker_key, files.broker_keystore,
               files.client_cert, files.client_key, files.client_keystore, files.broker_p12,
               files.client_p12, files.truststore_p12)
    print(f"wrote {', '.join(f.name for f in written)} to {files.dir}")
    print("broker (server.properties):")
    print("  listeners=SSL://127.0.0.1:9093")
    print("  ssl.keystore.type=PEM")
    print(f"  ssl.keystore.location={files.broker_keystore.resolve()}")
    print("  ssl.truststore.type=PEM")
    print(f"  ssl.truststore.location={files.ca.resolve()}")
    print(f"  (or PKCS12: ssl.keystore.location={files.broker_p12.resolve()}, "
          f"ssl.truststore.location={files.truststore_p12.resolve()}, "
          "ssl.*.type=PKCS12 and ssl.*.password set to the --p12-password)")
    print("client: security.protocol=SSL, ssl.ca.location (librdkafka) or "
          f"ssl.truststore.location with ssl.truststore.type=PEM (Java) = {files.ca.resolve()}")
    return 0


def _scram(args: argparse.Namespace) -> int:
    from ..security.scram import (
        MAX_ITERATIONS,
        MECHANISMS,
        MIN_ITERATIONS,
        ScramStore,
        credential_from_password,
    )

    store = ScramStore(Path(args.data_dir))
    if args.scram_command == "list":
        for user, mechs in sorted(store.users().items()):
            for mech, cred in sorted(mechs.items()):
                print(f"{user}\t{mech}\titerations={cred.iterations}")
        return 0
    mechanisms = args.mechanism or list(MECHANISMS)
    if args.scram_command == "delete":
        found = [m for m in mechanisms if store.delete(args.user, m)]
        if not found:
            print(f"no SCRAM credential for {args.user}", file=sys.stderr)
            return 1
        return 0
    if not MIN_ITERATIONS <= args.iterations <= MAX_ITERATIONS:
        print(f"--iterations must be within {MIN_ITERATIONS}..{MAX_ITERATIONS}", file=sys.stderr)
        return 2
    password = args.password if args.password is not None else sys.stdin.readline().rstrip("\n")
    if not password:
        print("empty password", file=sys.stderr)
        return 2
    for m in mechanisms:
        store.put(args.user, m, credential_from_password(m, password, args.iterations),
                  save=False)
    store.save()
    return 0


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    serving = given[:1] == ["serve"]
    if not serving:
        gc.enable()
        return _run(given, serving)
    # No collection over the objects start-up makes; ``_serve`` freezes them (out of every
    # later collection) and enables the collector once the broker listens.
    gc.disable()
    try:
        return _run(given, serving)
    finally:
        gc.enable()


def _run(given: list[str], serving: bool) -> int:
    parser = build_parser(serve_only=serving)
    args = parser.parse_args(given)
    rc: int = args.func(args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
