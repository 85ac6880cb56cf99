"""KIP-848 consumer groups over real clients: members in child processes that report every
partition handed to them or taken from them with a wall-clock time (``group_member.py
--timeline``, the Java member the same way), the broker's own view of the group, and the
two checks every test makes: every partition owned by exactly one member once the group
settles, and no partition owned by two members at any moment of the timeline."""

from __future__ import annotations

import collections
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import MEMBER_SCRIPT, _die_with_parent

TP = tuple[str, int]

#: Broker settings for consumer-group tests: short sessions through the broker's own
#: bounds (a consumer-protocol client cannot choose them), quick heartbeats and regex
#: refreshes.
FAST_CONSUMER_GROUPS = {
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "100",
    "group.consumer.min.session.timeout.ms": "500",
    "group.consumer.session.timeout.ms": "2500",
    "group.consumer.min.heartbeat.interval.ms": "50",
    "group.consumer.heartbeat.interval.ms": "150",
    "group.consumer.regex.refresh.interval.ms": "300",
}
SESSION_S = 2.5


class TimelineMember:
    """One group member in a child process, tracked through its timeline events."""

    def __init__(self, args: Sequence[str], name: str, env: dict[str, str] | None = None
                 ) -> None:
        self.name = name
        #: (time, "assign" | "revoke" | "killed", partitions)
        self.events: list[tuple[float, str, frozenset[TP]]] = []
        self.owned: set[TP] = set()
        self.closed = False
        self.lines: dict[str, str] = {}
        self.output: collections.deque[str] = collections.deque(maxlen=60)
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True,
                                     preexec_fn=_die_with_parent,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        assert self.proc.stdout is not None and self.proc.stderr is not None
        for stream, out in ((self.proc.stdout, True), (self.proc.stderr, False)):
            threading.Thread(target=self._pump, args=(stream, out), daemon=True).start()

    @classmethod
    def confluent(cls, bootstrap: str, group: str, topic: str, name: str, *,
                  assignor: str = "", instance_id: str = "") -> TimelineMember:
        args = [sys.executable, MEMBER_SCRIPT, "confluent", bootstrap, group, topic,
                "--protocol", "consumer", "--timeline"]
        if assignor:
            args += ["--remote-assignor", assignor]
        if instance_id:
            args += ["--instance-id", instance_id]
        return cls(args, name)

    @classmethod
    def classic(cls, client: str, bootstrap: str, group: str, topic: str, name: str,
                session_ms: int = 2000) -> TimelineMember:
        args = [sys.executable, MEMBER_SCRIPT, client, bootstrap, group, topic, "--timeline",
                "--session-ms", str(session_ms), "--heartbeat-ms", "150"]
        return cls(args, name)

    def _pump(self, stream: IO[str], stdout: bool) -> None:
        for line in stream:
            line = line.rstrip("\n")
            with self._lock:
                self.output.append(line)
                if stdout:
                    self._on_line(line)

    def _on_line(self, line: str) -> None:
        if line.startswith("{"):
            d: dict[str, Any] = json.loads(line)
            if d.get("closed"):
                self.closed = True
            elif "event" in d:
                parts = frozenset((t, p) for t, p in d["parts"])
                self.events.append((d["t"], d["event"], parts))
                if d["event"] == "assign":
                    self.owned |= parts
                else:
                    self.owned -= parts
        elif "=" in line:
            k, v = line.split("=", 1)
            self.lines[k] = v

    def snapshot(self) -> frozenset[TP]:
        with self._lock:
            return frozenset(self.owned)

    def close(self, timeout: float = 30) -> None:
        """SIGTERM: the client closes (a dynamic member leaves the group)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"{self.name} did not close: {self.describe()}") from None
        self._ended()

    def kill(self) -> None:
        """SIGKILL: gone without a word; what it owned it owns until now."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._ended()

    def _ended(self) -> None:
        with self._lock:
            if self.owned:
                self.events.append((time.time(), "killed", frozenset(self.owned)))
                self.owned.clear()

    def describe(self) -> str:
        with self._lock:
            tail = " | ".join(list(self.output)[-10:])
        return f"{self.name}: owned={sorted(self.owned)} rc={self.proc.poll()} output: {tail}"


@dataclass(frozen=True)
class ConsumerGroupView:
    state: str
    group_epoch: int
    assignment_epoch: int
    #: member id -> (member epoch, instance id, classic protocol)
    members: dict[str, tuple[int, str | None, bool]]


def consumer_group_view(broker: BrokerThread, group_id: str) -> ConsumerGroupView | None:
    """The broker's own record of a consumer group, read on its loop."""

    def read() -> ConsumerGroupView | None:
        assert broker.broker is not None
        g = broker.broker.groups.core.consumer_group(group_id)
        if g is None:
            return None
        return ConsumerGroupView(
            g.state.value, g.group_epoch, g.assignment_epoch,
            {mid: (m.member_epoch, m.instance_id, m.classic_member_metadata is not None)
             for mid, m in g.members.items()})

    return broker.call(read)


def describe_all(broker: BrokerThread, group: str, members: Iterable[TimelineMember]) -> str:
    return "\n".join([f"broker: {consumer_group_view(broker, group)}",
                      *(m.describe() for m in members)])


def exact_cover(members: Sequence[TimelineMember], partitions: set[TP]) -> bool:
    """Every partition owned by exactly one member, and every member owns some."""
    sets = [m.snapshot() for m in members]
    owned = [tp for s in sets for tp in s]
    return all(sets) and len(owned) == len(partitions) and set(owned) == partitions


def wait_settled(broker: BrokerThread, group: str, members: Sequence[TimelineMember],
                 partitions: set[TP], *, what: str, timeout: float = 60,
                 broker_check: Callable[[ConsumerGroupView | None], bool] | None = None,
                 settle: float = 0.5) -> ConsumerGroupView | None:
    """Wait until the members' assignments cover ``partitions`` once each and the broker
    has the group Stable with these members (or ``broker_check`` holds), then confirm it
    ``settle`` seconds later."""
    def broker_ok(view: ConsumerGroupView | None) -> bool:
        if broker_check is not None:
            return broker_check(view)
        return (view is not None and view.state == "Stable"
                and len(view.members) == len(members))

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = consumer_group_view(broker, group)
        if broker_ok(view) and exact_cover(members, partitions):
            before = [m.snapshot() for m in members]
            time.sleep(settle)
            again = consumer_group_view(broker, group)
            if again == view and [m.snapshot() for m in members] == before:
                return view
        for m in members:
            if m.proc.poll() is not None:
                raise AssertionError(f"{what}: member exited\n"
                                     f"{describe_all(broker, group, members)}")
        time.sleep(0.05)
    raise AssertionError(f"{what}: not settled in {timeout}s\n"
                         f"{describe_all(broker, group, members)}")


def assert_never_shared(members: Iterable[TimelineMember]) -> None:
    """No partition was owned by two members at any moment: per partition, the intervals
    from each member's assignment to its release never overlap."""
    intervals: dict[TP, list[tuple[float, float, str]]] = collections.defaultdict(list)
    for m in members:
        start: dict[TP, float] = {}
        for t, kind, parts in m.events:
            for tp in parts:
                if kind == "assign":
                    start.setdefault(tp, t)
                elif tp in start:
                    intervals[tp].append((start.pop(tp), t, m.name))
        for tp, t0 in start.items():
            intervals[tp].append((t0, float("inf"), m.name))
    for tp, spans in intervals.items():
        spans.sort()
        for (a0, a1, an), (b0, b1, bn) in itertools.pairwise(spans):
            assert b0 >= a1, (f"{tp} owned by {an} [{a0:.3f}, {a1:.3f}) and "
                              f"{bn} [{b0:.3f}, {b1:.3f}) at once")


def stop_all(members: Iterable[TimelineMember]) -> None:
    for m in members:
        m.kill()
