"""Consumer-group members as child processes, and waits on what they and the broker report.

Every member runs in its own process (``group_member.py`` for the Python clients, ``kcat
-G`` for kcat), so that a member can be closed cleanly (SIGTERM: the client leaves the
group) or killed with SIGKILL (no LeaveGroup; the broker must expire it by its session
timeout), exactly as a crashed consumer would.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kafkalite.broker.testing.fixtures import BrokerThread

MEMBER_SCRIPT = str(Path(__file__).with_name("group_member.py"))
PARTITIONS = 12

#: Broker settings: short enough that no test waits out Kafka's defaults.
FAST_BROKER = {
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "100",
}

_KCAT_LINE = re.compile(r"% Group \S+ rebalanced \(memberid [^)]*\): (assigned|revoked): ?(.*)")
_KCAT_PART = re.compile(r"\[(\d+)\]")


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it if the test process dies (no leaked consumers)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


class Member:
    """One consumer in a child process; its latest reported assignment and callback counts."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, *,
                 strategy: str = "range", instance_id: str = "", session_ms: int = 2000,
                 heartbeat_ms: int = 200, name: str = "", client_id: str = "",
                 exit_on_error: bool = False, log_level: str = "") -> None:
        self.client = client
        self.name = name or client
        self.instance_id = instance_id
        self.assigned: frozenset[int] = frozenset()
        self.assigns = 0
        self.revokes = 0
        self.generation: int | None = None
        #: The member id the client itself reports (None until it has one).
        self.member_id: str | None = None
        #: Exceptions the client raised from its poll (or error events), by class name.
        self.errors: list[str] = []
        #: Every stderr line, kept when the client logs (``log_level``).
        self.stderr: list[str] = []
        self._keep_stderr = bool(log_level)
        self.closed = False
        self.output: collections.deque[str] = collections.deque(maxlen=40)
        self._lock = threading.Lock()
        if client == "kcat":
            args = ["kcat", "-b", bootstrap, "-G", group, topic, "-u",
                    "-X", f"session.timeout.ms={session_ms}",
                    "-X", f"heartbeat.interval.ms={heartbeat_ms}",
                    "-X", f"max.poll.interval.ms={max(10000, session_ms)}",
                    "-X", "topic.metadata.refresh.interval.ms=1000",
                    "-X", f"partition.assignment.strategy={strategy}"]
            if instance_id:
                args += ["-X", f"group.instance.id={instance_id}"]
        else:
            args = [sys.executable, MEMBER_SCRIPT, client, bootstrap, group, topic,
                    "--strategy", strategy, "--session-ms", str(session_ms),
                    "--heartbeat-ms", str(heartbeat_ms)]
            if instance_id:
                args += ["--instance-id", instance_id]
            if client_id:
                args += ["--client-id", client_id]
            if exit_on_error:
                args.append("--exit-on-error")
            if log_level:
                args += ["--log-level", log_level]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True,
                                     preexec_fn=_die_with_parent,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threads = [(self.proc.stdout, self._on_stdout), (self.proc.stderr, self._on_stderr)]
        for stream, fn in threads:
            threading.Thread(target=self._pump, args=(stream, fn), daemon=True).start()

    def _pump(self, stream: IO[str], fn: Callable[[str], None]) -> None:
        for line in stream:
            line = line.rstrip("\n")
            with self._lock:
                self.output.append(line)
                fn(line)

    def _on_stdout(self, line: str) -> None:
        if self.client == "kcat" or not line.startswith("{"):
            return
        d: dict[str, Any] = json.loads(line)
        if d.get("closed"):
            self.closed = True
            return
        if "error" in d:
            self.errors.append(d["error"])
            return
        self.assigned = frozenset(d["assigned"])
        self.assigns, self.revokes, self.generation = d["assigns"], d["revokes"], d["generation"]
        self.member_id = d.get("member_id")

    def _on_stderr(self, line: str) -> None:
        if self._keep_stderr:
            self.stderr.append(line)
        if self.client != "kcat":
            return
        m = _KCAT_LINE.search(line)
        if m is None:
            return
        parts = {int(p) for p in _KCAT_PART.findall(m.group(2))}
        # kcat runs librdkafka's eager protocol here: each event replaces the whole set.
        if m.group(1) == "assigned":
            self.assigns += 1
            self.assigned = frozenset(parts)
        else:
            self.revokes += 1
            self.assigned = frozenset()

    def snapshot(self) -> tuple[frozenset[int], int, int]:
        with self._lock:
            return self.assigned, self.assigns, self.revokes

    def close(self, timeout: float = 20) -> None:
        """SIGTERM: the client closes its consumer (a dynamic member sends LeaveGroup)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"{self.name} did not close: {self.describe()}") from None

    def kill(self) -> None:
        """SIGKILL: the member vanishes without a LeaveGroup."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def describe(self) -> str:
        with self._lock:
            tail = " | ".join(list(self.output)[-8:])
        return (f"{self.name}: assigned={sorted(self.assigned)} assigns={self.assigns} "
                f"revokes={self.revokes} rc={self.proc.poll()} output: {tail}")


@dataclass(frozen=True)
class GroupView:
    state: str
    generation: int
    protocol: str | None
    members: int
    leader_instance: str | None
    instances: frozenset[str]
    leader_id: str | None
    member_ids: frozenset[str]


def group_view(broker: BrokerThread, group_id: str) -> GroupView | None:
    """The broker's own record of a group, read on the broker's loop."""

    def read() -> GroupView | None:
        assert broker.broker is not None
        g = broker.broker.groups.core.group(group_id)
        if g is None:
            return None
        leader = g.members.get(g.leader_id) if g.leader_id else None
        return GroupView(g.state.value, g.generation, g.protocol_name, len(g.members),
                         leader.group_instance_id if leader else None,
                         frozenset(m.group_instance_id for m in g.members.values()
                                   if m.group_instance_id),
                         g.leader_id, frozenset(g.members))

    return broker.call(read)


def describe_all(broker: BrokerThread, group_id: str, members: Iterable[Member]) -> str:
    lines = [f"broker: {group_view(broker, group_id)}"]
    lines += [m.describe() for m in members]
    return "\n".join(lines)


def exact_cover(members: list[Member], partitions: int = PARTITIONS) -> bool:
    """Every partition owned by exactly one member, and every member owns some."""
    sets = [m.snapshot()[0] for m in members]
    owned = [p for s in sets for p in s]
    return all(sets) and len(owned) == partitions and set(owned) == set(range(partitions))


def wait_stable(broker: BrokerThread, group_id: str, members: list[Member], *,
                timeout: float = 60, partitions: int = PARTITIONS, settle: float = 0.4,
                what: str = "") -> GroupView:
    """Wait until the broker has the group Stable with exactly these members and the
    members' reported assignments cover every partition once; confirmed again ``settle``
    seconds later (a cooperative rebalance passes through several generations)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = group_view(broker, group_id)
        if (view is not None and view.state == "Stable" and view.members == len(members)
                and exact_cover(members, partitions)):
            before = [m.snapshot() for m in members]
            time.sleep(settle)
            again = group_view(broker, group_id)
            if again == view and [m.snapshot() for m in members] == before:
                return view
        for m in members:
            if m.proc.poll() is not None:
                raise AssertionError(f"{what}: member exited\n"
                                     f"{describe_all(broker, group_id, members)}")
        time.sleep(0.05)
    raise AssertionError(f"{what}: group not stable in {timeout}s\n"
                         f"{describe_all(broker, group_id, members)}")


def create_topic(broker: BrokerThread, topic: str, partitions: int = PARTITIONS) -> None:
    def create() -> Any:
        assert broker.broker is not None
        return broker.broker.create_topic(topic, partitions)

    broker.call(create)


def stop_all(members: Iterable[Member]) -> None:
    for m in members:
        m.kill()


def sizes(members: list[Member]) -> list[int]:
    return sorted(len(m.snapshot()[0]) for m in members)


def run_lifecycle(broker: BrokerThread, client: str, strategy: str = "range",
                  session_ms: int = 2000, heartbeat_ms: int = 200) -> None:
    """3 members join and split 12 partitions; a 4th joins; one closes (LeaveGroup); one is
    killed (no LeaveGroup) and its partitions move only after its session timeout."""
    topic, group = f"t-{client}-{strategy}", f"g-{client}-{strategy}"
    create_topic(broker, topic)

    def member(i: int) -> Member:
        return Member(client, broker.bootstrap, group, topic, strategy=strategy,
                      session_ms=session_ms, heartbeat_ms=heartbeat_ms, name=f"{client}-{i}")

    members = [member(i) for i in range(3)]
    t_start = time.monotonic()

    def phase(name: str, view: GroupView) -> None:
        # Shown with a failure's captured output: how long each step took.
        print(f"{name}: generation {view.generation} at {time.monotonic() - t_start:.1f}s")

    try:
        v3 = wait_stable(broker, group, members, what="3 members")
        phase("3 joined", v3)
        assert v3.protocol == strategy, v3
        assert sizes(members) == [4, 4, 4], describe_all(broker, group, members)

        members.append(member(3))
        v4 = wait_stable(broker, group, members, what="4th joined")
        phase("4th joined", v4)
        assert v4.generation > v3.generation
        assert sizes(members) == [3, 3, 3, 3], describe_all(broker, group, members)

        leaving = members.pop(0)
        leaving.close()
        if client != "kcat":
            assert leaving.closed, leaving.describe()
        v_left = wait_stable(broker, group, members, what="after a clean leave")
        phase("one left", v_left)
        assert v_left.generation > v4.generation
        assert sizes(members) == [4, 4, 4], describe_all(broker, group, members)

        killed = members.pop(0)
        killed.kill()
        t0 = time.monotonic()
        v_killed = wait_stable(broker, group, members, what="after a kill")
        elapsed = time.monotonic() - t0
        phase("one killed", v_killed)
        assert v_killed.generation > v_left.generation
        assert sizes(members) == [6, 6], describe_all(broker, group, members)
        # Kafka does not drop a member when its connection closes: only the session
        # timeout (from its last heartbeat, at most one interval before the kill) removes it.
        assert elapsed >= (session_ms - heartbeat_ms) / 1000 - 0.1, elapsed
    finally:
        stop_all(members)


def run_static_restart(broker: BrokerThread, client: str, strategy: str = "range",
                       session_ms: int = 30000, heartbeat_ms: int = 200,
                       leader: bool = False) -> None:
    """Three static members; a follower (or the leader) closes (static members send no
    LeaveGroup) and a new process with its group.instance.id joins within the session
    timeout: it gets the same partitions back, the generation does not move and the others
    see no rebalance."""
    role = "leader" if leader else "follower"
    topic, group = f"ts-{client}-{strategy}-{role}", f"gs-{client}-{strategy}-{role}"
    create_topic(broker, topic)

    def member(i: int) -> Member:
        return Member(client, broker.bootstrap, group, topic, strategy=strategy,
                      instance_id=f"{client}-static-{i}", session_ms=session_ms,
                      heartbeat_ms=heartbeat_ms, name=f"{client}-static-{i}")

    members = [member(i) for i in range(3)]
    try:
        view = wait_stable(broker, group, members, what="3 static members")
        assert view.protocol == strategy, view
        assert view.instances == {m.instance_id for m in members}
        idx = next(i for i, m in enumerate(members)
                   if (m.instance_id == view.leader_instance) == leader)
        old = members[idx]
        before = old.snapshot()[0]
        others = [m for m in members if m is not old]
        others_before = [m.snapshot() for m in others]

        old.close()
        after_close = group_view(broker, group)
        assert after_close is not None and after_close.members == 3, after_close
        assert after_close.generation == view.generation, after_close

        new = member(idx)
        members[idx] = new
        deadline = time.monotonic() + 30
        while new.snapshot()[0] != before and time.monotonic() < deadline:
            assert new.proc.poll() is None, new.describe()
            time.sleep(0.05)
        assert new.snapshot()[0] == before, describe_all(broker, group, members)
        # Give a rebalance, had one been triggered, time to show.
        time.sleep(1.0)
        final = wait_stable(broker, group, members, what="after the static restart")
        assert final.generation == view.generation, describe_all(broker, group, members)
        assert [m.snapshot() for m in others] == others_before, \
            describe_all(broker, group, members)
        assert new.snapshot()[0] == before
        assert final.leader_instance == view.leader_instance, final
    finally:
        stop_all(members)
