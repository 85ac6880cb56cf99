"""KafkaJS 2.x (npm) against the broker: produce and consume, a group with a leave and a
rejoin, and the admin client's describe calls. The scenarios are in js/kafkajs_client.js;
``scripts/test.sh`` installs KafkaJS there with npm."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import group_view

JS = Path(__file__).with_name("js")


def run(broker: BrokerThread, scenario: str, topic: str) -> list[dict[str, Any]]:
    proc = subprocess.run(
        ["node", str(JS / "kafkajs_client.js"), broker.bootstrap, scenario, topic],
        capture_output=True, text=True, timeout=120, cwd=JS,
        env={**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_produce_and_consume(broker: BrokerThread) -> None:
    facts = run(broker, "produce-consume", "js-orders")
    assert facts[0] == {"produced": 10, "partitions": [0, 1]}
    consumed = facts[1]["consumed"]
    assert [(m["value"]["i"], m["key"], m["header"]) for m in consumed] == \
        [(i, f"k{i}", str(i)) for i in range(10)]
    assert [(m["partition"], m["offset"]) for m in consumed] == \
        [(i % 2, i // 2) for i in range(10)]


def test_group_leave_and_rejoin(broker: BrokerThread) -> None:
    facts = run(broker, "group", "js-group")
    # The describe fact is not always the last line: the script then disconnects "a"
    # first, and its LeaveGroup makes the second "b" rejoin alone (a GROUP_JOIN event,
    # printed) before "b" disconnects too, as it would against Kafka.
    end = next(i for i, f in enumerate(facts) if "describe" in f)
    phases = {f["phase"]: f for f in facts if "phase" in f}
    assert sorted(phases["both"]["a"] + phases["both"]["b"]) == [0, 1, 2, 3]
    assert phases["left"]["a"] == [0, 1, 2, 3]
    assert sorted(phases["rejoined"]["a"] + phases["rejoined"]["b"]) == [0, 1, 2, 3]
    b_ids = [f["memberId"] for f in facts[:end] if f.get("member") == "b"]
    assert len(set(b_ids)) == 2, b_ids  # the rejoining consumer is a new member
    assert facts[end]["describe"] == {"state": "Stable", "protocol": "RoundRobinAssigner",
                                      "members": 2}
    after = facts[end + 1:]
    assert all(f.get("member") == "b" and f["memberId"] == b_ids[-1] and
               f["assignment"] == [0, 1, 2, 3] for f in after), after
    view = group_view(broker, "js-group-group")
    assert view is not None and view.members == 0 and view.state == "Empty", view


def test_admin_describe(broker: BrokerThread) -> None:
    (facts,) = run(broker, "admin", "js-admin")
    assert facts["cluster"]["brokers"] == 1 and facts["cluster"]["controller"] == 1
    assert facts["cluster"]["clusterId"] == broker.broker.cluster_id  # type: ignore[union-attr]
    assert facts["topic"] == {"name": "js-admin", "partitions": 3}
    assert facts["listed"] and facts["configs"]
    assert facts["offsets"] == [{"partition": p, "high": "0"} for p in range(3)]
