"""``kafkalite configs``: dynamic broker configs (KIP-226) in a data directory, for a
broker that is not running. The broker reads them at start-up; a running broker takes
changes through AlterConfigs / IncrementalAlterConfigs (``kafka-configs
--bootstrap-server``, an Admin client) instead.

    kafkalite configs list   --data-dir DIR [--broker ID | --default]   (also lists group configs)
    kafkalite configs set    --data-dir DIR (--broker ID | --default) NAME=VALUE ...
    kafkalite configs delete --data-dir DIR (--broker ID | --default) NAME ...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kafkalite.storage.fsutil import DirLock

from ..config.definitions import DynamicConfigError, is_sensitive, validate_dynamic
from ..config.store import DynamicStore


def register(sub: Any) -> None:
    c = sub.add_parser("configs", help="list or change dynamic broker configs (KIP-226) in "
                       "a data directory while the broker is stopped")
    csub = c.add_subparsers(dest="configs_command", required=True)
    for name, helptext in (("list", "print the dynamic configs"),
                           ("set", "set dynamic configs (NAME=VALUE ...)"),
                           ("delete", "remove dynamic configs (NAME ...)")):
        sp = csub.add_parser(name, help=helptext)
        sp.add_argument("--data-dir", required=True, help="the broker's data directory (log.dirs)")
        level = sp.add_mutually_exclusive_group(required=name != "list")
        level.add_argument("--broker", type=int, metavar="ID",
                           help="this broker's own values (resource name = node.id)")
        level.add_argument("--default", action="store_true",
                           help="the cluster-wide defaults (the empty resource name)")
        if name != "list":
            sp.add_argument("items", nargs="+", metavar="NAME=VALUE" if name == "set" else "NAME")
        sp.set_defaults(func=run)


def _print_level(title: str, values: dict[str, str]) -> None:
    for k, v in sorted(values.items()):
        shown = "[hidden]" if is_sensitive(k) else v
        print(f"{title}\t{k}={shown}")


def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir)
    try:
        store = DynamicStore.read(data_dir)
    except (OSError, ValueError) as e:
        print(f"cannot read the dynamic configs of {data_dir}: {e}", file=sys.stderr)
        return 1
    if args.configs_command == "list":
        if args.broker is None and not args.default:
            _print_level("default", store.default)
            for node, values in sorted(store.brokers.items()):
                _print_level(f"broker {node}", values)
            # Group configs (resource type GROUP) are listed; a running broker changes
            # them (kafka-configs --entity-type groups), as it validates them against its
            # group settings.
            for group, values in sorted(store.groups.items()):
                for k, v in sorted(values.items()):  # none of them is sensitive
                    print(f"group {group}\t{k}={v}")
        elif args.default:
            _print_level("default", store.default)
        else:
            _print_level(f"broker {args.broker}", store.level(args.broker))
        return 0
    if not data_dir.is_dir():
        print(f"{data_dir} is not a data directory", file=sys.stderr)
        return 1
    if DirLock.held_elsewhere(data_dir):
        print(f"a broker is running on {data_dir}: change its configs with an Admin client "
              "(IncrementalAlterConfigs, kafka-configs --bootstrap-server)", file=sys.stderr)
        return 1
    broker: int | None = None if args.default else args.broker
    values = store.level(broker)
    if args.configs_command == "set":
        for item in args.items:
            if "=" not in item:
                print(f"expected NAME=VALUE, got {item!r}", file=sys.stderr)
                return 2
            k, v = item.split("=", 1)
            values[k.strip()] = v.strip()
    else:
        for k in args.items:
            values.pop(k, None)
    try:
        validate_dynamic(values, per_broker=broker is not None)
    except DynamicConfigError as e:
        print(str(e), file=sys.stderr)
        return 1
    store.set_level(broker, values)
    store.write(data_dir)
    return 0
