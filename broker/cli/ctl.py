"""``kafkalite ctl``: fault rules, the clock and coordinator scenarios of a running broker,
over its admin HTTP API (``admin.listener``)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

from kafkalite.client.admin import ADMIN_ENV, CtlError, request

DEFAULT_ADMIN = "http://127.0.0.1:9644"


_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d)?$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(text: str) -> int:
    """``1500``, ``1500ms``, ``45s``, ``10m``, ``2h``, ``7d`` -> ms."""
    m = _DURATION.match(text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 500ms, 45s, 10m)")
    return int(m.group(1)) * _UNIT_MS[m.group(2) or "ms"]


def register(sub: Any) -> None:
    c = sub.add_parser("ctl", help="control a running broker: fault rules, the clock, "
                       "coordinator scenarios (over its admin HTTP listener)")
    c.add_argument("--admin", default=os.environ.get(ADMIN_ENV, DEFAULT_ADMIN),
                   help=f"the broker's admin URL (default ${ADMIN_ENV} or {DEFAULT_ADMIN})")
    csub = c.add_subparsers(dest="ctl_command", required=True)

    f = csub.add_parser("fault", help="fault rules")
    fsub = f.add_subparsers(dest="fault_command", required=True)
    fa = fsub.add_parser("add", help="add a rule")
    fa.add_argument("--api", required=True, help="Kafka API name (Heartbeat, JoinGroup, ...)")
    fa.add_argument("--error", help="answer with this error (REBALANCE_IN_PROGRESS, ...)")
    fa.add_argument("--action", choices=["error", "delay", "drop", "close_before",
                                         "close_after"])
    fa.add_argument("--delay", type=duration_ms, help="delay the response this long")
    fa.add_argument("--min-version", type=int)
    fa.add_argument("--max-version", type=int)
    fa.add_argument("--client-id")
    fa.add_argument("--principal")
    fa.add_argument("--group", help="only requests for this group id")
    fa.add_argument("--topic", help="only requests naming this topic")
    fa.add_argument("--node", type=int, help="only requests to this node (serve --nodes N)")
    fa.add_argument("--count", type=int, help="fire this many times, then remove the rule")
    fa.add_argument("--duration", type=duration_ms, help="remove the rule after this long")
    fa.add_argument("--probability", type=float, help="fire with this probability (0, 1]")
    fa.add_argument("--seed", type=int, help="seed for --probability")
    fsub.add_parser("list", help="list the rules")
    fsub.add_parser("clear", help="remove every rule")
    fr = fsub.add_parser("remove", help="remove one rule")
    fr.add_argument("id", type=int)

    k = csub.add_parser("clock", help="the broker's clock")
    ksub = k.add_subparsers(dest="clock_command", required=True)
    ksub.add_parser("show", help="the clock's time and kind")
    ka = ksub.add_parser("advance", help="advance a manual clock (serve --manual-clock)")
    ka.add_argument("by", type=duration_ms, help="how far: 500ms, 45s, 10m, 7d")

    b = csub.add_parser("broker", help="the brokers of the process (serve --nodes N)")
    bsub = b.add_subparsers(dest="broker_command", required=True)
    bsub.add_parser("list", help="every node: id, rack, address, partitions it leads")
    for action, text in (("stop", "stop a node: its listeners close, leadership moves"),
                         ("start", "start a stopped node again; its replicas catch up"),
                         ("isolate", "cut a node off from the others (network partition)"),
                         ("heal", "end a node's isolation")):
        ba = bsub.add_parser(action, help=text)
        ba.add_argument("id", type=int, help="the node id")
        if action == "stop":
            ba.add_argument("--crash", action="store_true",
                            help="not a controlled shutdown: leadership moves after "
                                 "broker.session.timeout.ms")

    s = csub.add_parser("scenario", help="run a coordinator scenario")
    s.add_argument("name", choices=["rebalance", "expire-member", "fence-static-member",
                                    "evict-member", "partition-loading", "partition-moved"])
    s.add_argument("--group", help="the group")
    s.add_argument("--member", help="the member id")
    s.add_argument("--instance", help="the group.instance.id (fence-static-member)")
    s.add_argument("--for", dest="for_ms", type=duration_ms,
                   help="how long (partition-loading, partition-moved)")
    s.add_argument("--partition", type=int,
                   help="__consumer_offsets partition (default: the group's)")
    c.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except CtlError as e:
        print(f"kafkalite ctl: {e}", file=sys.stderr)
        return 1


def _run(a: argparse.Namespace) -> int:
    admin = a.admin
    if a.ctl_command == "fault":
        if a.fault_command == "add":
            spec: dict[str, Any] = {"api": a.api}
            for key, value in (("error", a.error), ("action", a.action),
                               ("delay_ms", a.delay), ("min_version", a.min_version),
                               ("max_version", a.max_version), ("client_id", a.client_id),
                               ("principal", a.principal), ("group_id", a.group),
                               ("topic", a.topic), ("count", a.count),
                               ("duration_ms", a.duration), ("probability", a.probability),
                               ("seed", a.seed), ("node", a.node)):
                if value is not None:
                    spec[key] = value
            rule = request(admin, "POST", "/api/v1/faults", spec)
            print(f"added rule {rule['id']}: {describe(rule)}")
        elif a.fault_command == "list":
            rules = request(admin, "GET", "/api/v1/faults")["rules"]
            for rule in rules:
                print(f"{rule['id']}\t{describe(rule)}\tfired {rule['fired']}")
            if not rules:
                print("no fault rules")
        elif a.fault_command == "clear":
            n = request(admin, "DELETE", "/api/v1/faults")["removed"]
            print(f"removed {n} rule{'s' if n != 1 else ''}")
        else:
            request(admin, "DELETE", f"/api/v1/faults/{a.id}")
            print(f"removed rule {a.id}")
    elif a.ctl_command == "clock":
        if a.clock_command == "show":
            c = request(admin, "GET", "/api/v1/clock")
        else:
            c = request(admin, "POST", "/api/v1/clock/advance", {"ms": a.by})
        print(f"{'manual' if c['manual'] else 'system'} clock at {c['now_ms']} ms")
    elif a.ctl_command == "broker" and a.broker_command != "list":
        body = {"controlled": not a.crash} if a.broker_command == "stop" else {}
        node = request(admin, "POST", f"/api/v1/brokers/{a.id}/{a.broker_command}", body)
        print(f"broker {node['node_id']}: {node['status']}, "
              f"leads {node['leader_partitions']}")
    elif a.ctl_command == "broker":
        for node in request(admin, "GET", "/api/v1/brokers")["brokers"]:
            address = node["listeners"][0]["advertised"] if node["listeners"] else "-"
            role = "\tcontroller" if node["controller"] else ""
            print(f"{node['node_id']}\t{address}\track {node['rack'] or '-'}\t"
                  f"{node['status']}\tleads {node['leader_partitions']}{role}")
    else:
        body = {k: v for k, v in (("group_id", a.group), ("member_id", a.member),
                                  ("group_instance_id", a.instance), ("for_ms", a.for_ms),
                                  ("partition", a.partition)) if v is not None}
        result = request(admin, "POST", f"/api/v1/scenarios/{a.name}", body)
        print(json.dumps(result))
    return 0


def describe(rule: dict[str, Any]) -> str:
    what = rule.get("error") or (f"delay {rule['delay_ms']} ms" if rule["action"] == "delay"
                                 else rule["action"])
    where = " ".join(f"{k}={rule[k]}"
                     for k in ("group_id", "topic", "client_id", "principal", "node")
                     if rule.get(k) is not None)
    limits = []
    if rule.get("count") is not None:
        limits.append(f"{rule['count']} left")
    if rule.get("remaining_ms") is not None:
        limits.append(f"{rule['remaining_ms']} ms left")
    if rule.get("probability", 1.0) < 1.0:
        limits.append(f"p={rule['probability']}")
    return " ".join(x for x in (rule["api"], what, where, ", ".join(limits)) if x)
