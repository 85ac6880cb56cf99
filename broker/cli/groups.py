"""``kafkalite groups list|describe``: consumer groups as ``kafka-consumer-groups`` shows
them (``--list --state --type``; ``--describe`` with ``--state``, ``--members --verbose``
and the offsets view in one), share groups as ``kafka-share-groups`` does (members,
assignments, each share-partition's start offset and lag) and streams groups as
``kafka-streams-groups`` does (members with their processes and tasks), over the Kafka
protocol (``group_view.py``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from .group_view import GroupLookupError, GroupView, MemberRow, describe_group, list_groups

BOOTSTRAP_ENV = "KAFKALITE_BOOTSTRAP"
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def register(sub: Any) -> None:
    g = sub.add_parser("groups", help="list and describe consumer groups (members, "
                       "assignments, offsets and lag), as kafka-consumer-groups does")
    gsub = g.add_subparsers(dest="groups_command", required=True)
    for name, helptext in (("list", "every group, with its type and state"),
                           ("describe", "a group's state, members and lag per partition")):
        p = gsub.add_parser(name, help=helptext)
        p.add_argument("--bootstrap", "--bootstrap-server", dest="bootstrap",
                       default=os.environ.get(BOOTSTRAP_ENV, DEFAULT_BOOTSTRAP),
                       help=f"a broker's HOST:PORT (default ${BOOTSTRAP_ENV} or "
                       f"{DEFAULT_BOOTSTRAP}); PLAINTEXT listeners only")
        p.add_argument("--json", action="store_true", help="print JSON instead of tables")
        if name == "describe":
            p.add_argument("group", help="the group id")
        p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        if args.groups_command == "list":
            groups = list_groups(args.bootstrap)
            if args.json:
                print(json.dumps([asdict(g) for g in groups]))
            else:
                print(table(["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"],
                            [[g.group_id, g.group_type.capitalize(), g.state,
                              g.protocol_type or "-"] for g in groups]))
            return 0
        view = describe_group(args.bootstrap, args.group)
    except (GroupLookupError, RuntimeError, OSError) as e:
        print(f"kafkalite groups: {e}", file=sys.stderr)
        return 1
    if not view.exists:
        print(f"Consumer group '{args.group}' does not exist.", file=sys.stderr)
        return 1
    print(json.dumps(as_json(view)) if args.json else render(view))
    return 0


def _dash(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def assignment_text(assignment: dict[str, list[int]]) -> str:
    """Kafka's ``topic(0,1,2)`` form."""
    return ",".join(f"{t}({','.join(map(str, ps))})" for t, ps in sorted(assignment.items())) \
        or "-"


def tasks_text(tasks: dict[str, list[int]]) -> str:
    """``kafka-streams-groups``' ``0:[0,1]; 1:[0,1]`` form: subtopology, its partitions."""
    return "; ".join(f"{s}:[{','.join(map(str, ps))}]" for s, ps in sorted(tasks.items())) \
        or "-"


def render(view: GroupView) -> str:
    node, host, port = view.coordinator
    out = [table(
        ["GROUP", "COORDINATOR (ID)", "TYPE", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
         "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"],
        [[view.group_id, f"{host}:{port} ({node})", view.group_type.capitalize(),
          _dash(view.assignor), view.state, _dash(view.group_epoch),
          _dash(view.assignment_epoch), str(len(view.members))]])]
    if view.members and view.group_type == "streams":
        out += ["", table(
            ["MEMBER-ID", "PROCESS", "HOST", "CLIENT-ID", "EPOCH", "ACTIVE", "STANDBY",
             "WARMUP", "TARGET-ACTIVE"],
            [[m.member_id, _dash(m.process_id), m.host, m.client_id, _dash(m.epoch),
              *(tasks_text((m.tasks or {}).get(k, {})) for k in ("active", "standby", "warmup")),
              tasks_text((m.target_tasks or {}).get("active", {}))]
             for m in view.members])]
    elif view.members:
        out += ["", table(
            ["CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "EPOCH", "#PARTITIONS",
             "ASSIGNMENT", "TARGET-ASSIGNMENT"],
            [[m.member_id, _dash(m.instance_id), m.host, m.client_id, _dash(m.epoch),
              str(sum(len(ps) for ps in m.assignment.values())), assignment_text(m.assignment),
              "-" if m.target is None else assignment_text(m.target)]
             for m in view.members])]
    if view.partitions:
        offset = "START-OFFSET" if view.group_type == "share" else "CURRENT-OFFSET"
        out += ["", table(
            ["TOPIC", "PARTITION", offset, "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
             "HOST", "CLIENT-ID"],
            [[p.topic, str(p.partition), _dash(p.committed), _dash(p.log_end), _dash(p.lag),
              *_owner(p.owner)] for p in view.partitions])]
    return "\n".join(out)


def _owner(m: MemberRow | None) -> list[str]:
    return ["-", "-", "-"] if m is None else [m.member_id, m.host, m.client_id]


def as_json(view: GroupView) -> dict[str, Any]:
    node, host, port = view.coordinator
    return {
        "group": view.group_id, "type": view.group_type, "state": view.state,
        "protocol_type": view.protocol_type, "assignor": view.assignor,
        "coordinator": {"id": node, "host": host, "port": port},
        "group_epoch": view.group_epoch, "assignment_epoch": view.assignment_epoch,
        "members": [asdict(m) for m in view.members],
        "partitions": [{"topic": p.topic, "partition": p.partition,
                        ("start_offset" if view.group_type == "share" else "current_offset"):
                        p.committed, "log_end_offset": p.log_end,
                        "lag": p.lag, "consumer_id": p.owner.member_id if p.owner else None}
                       for p in view.partitions],
    }


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i])
              for i in range(len(header))]
    return "\n".join(" ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True))
                     .rstrip() for line in [header, *rows])
