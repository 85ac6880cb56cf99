"""A Kafka Streams 4.4 application under the streams rebalance protocol (KIP-1071,
``group.protocol=streams``) against kafkalite: word count with a repartition topic, a state
store and exactly_once_v2 (tests/integration/java/StreamsGroupWordCount.java). kafkalite's
group coordinator creates the internal topics and assigns the tasks: two instances split
them, a third joins and one leaves while they process, and the output, read
read_committed, has each word's counts exactly 1, 2, ..., N. The first story also runs against
the real Kafka 4.4, which must agree."""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request

from .java_support import full_classpath, java_command, tools_log_config
from .test_kafka_streams import _read_all

APP = "wc-streams-group"
IN, OUT = "sg-lines", "sg-counts"
LINES = [f"alpha beta w{i % 7} gamma{i % 3} the fox {'dog ' * (i % 4)}" for i in range(60)]


def _words(lines: list[str]) -> Counter[str]:
    return Counter(w for line in lines for w in re.split(r"\W+", line.lower()) if w)


def closed_cleanly(instances: list[Any], outs: list[list[str]]) -> None:
    """Every instance closed, none reported an error (its output shown when not)."""
    for i, out in zip(instances, outs, strict=True):
        assert "closed=true" in out, f"{i.name}:\n" + "\n".join(out[-80:])
        assert not [ln for ln in out if ln.startswith("error=")], "\n".join(out[-80:])


def counts_by_word(bootstrap: str, topic: str) -> dict[str, list[int]]:
    """Each word's counts in the output topic, sorted (exactly once: 1, 2, ..., N)."""
    by_word: dict[str, list[int]] = defaultdict(list)
    for word, n in _read_all(bootstrap, topic):
        by_word[word].append(n)
    return {w: sorted(ns) for w, ns in by_word.items()}


class _Instance:
    def __init__(self, bootstrap: str, folder: Path, name: str, app: str = APP,
                 instance_id: str | None = None, state: Path | None = None,
                 topics: tuple[str, str] = (IN, OUT)) -> None:
        folder.mkdir()
        self.stop = folder / "stop"
        self.out = open(folder / "stdout", "w+")  # closed in close()
        log = tools_log_config(folder)
        extra = () if instance_id is None else (instance_id,)
        cmd = java_command("StreamsGroupWordCount", bootstrap, app, *topics,
                           str(state or folder / "state"), str(self.stop), *extra,
                           cp=full_classpath(),
                           jvm_args=(f"-Dlog4j2.configurationFile={log}",))
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT,
                                     text=True)
        self.name = name

    def lines(self) -> list[str]:
        self.out.flush()
        self.out.seek(0)
        return self.out.read().splitlines()

    def tasks(self, kind: str = "tasks") -> set[str] | None:
        last = [ln for ln in self.lines() if ln.startswith(f"{kind}=")]
        if not last:
            return None
        inner = last[-1].removeprefix(f"{kind}=[").removesuffix("]")
        return {t.strip() for t in inner.split(",") if t.strip()}

    def close(self) -> list[str]:
        self.stop.touch()
        try:
            self.proc.wait(60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
        out = self.lines()
        self.out.close()
        return out


def _wait(cond: Callable[[], bool], timeout: float, what: str,
          instances: list[_Instance]) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        for i in instances:
            assert i.proc.poll() is None, f"{i.name} ended:\n" + "\n".join(i.lines()[-80:])
        time.sleep(0.2)
    raise AssertionError(f"{what}:\n" + "\n\n".join(
        f"{i.name}:\n" + "\n".join(i.lines()[-60:]) for i in instances))


@pytest.fixture(params=["kafkalite", "kafka"])
def word_count_bootstrap(request: pytest.FixtureRequest,
                         make_broker: Callable[..., BrokerThread]) -> str:
    """A kafkalite broker, or the real Kafka 4.4 of the session (``kafka_reference``);
    no broker setting on either."""
    if request.param == "kafka":
        return str(request.getfixturevalue("kafka_reference").bootstrap)
    return make_broker().bootstrap


@pytest.mark.timeout(600)
def test_streams_instances_split_tasks_and_rebalance_exactly_once(
        word_count_bootstrap: str, tmp_path: Path) -> None:
    """The same run against kafkalite and against the real Kafka 4.4: both must agree."""
    bootstrap = word_count_bootstrap
    # Names of their own: the reference Kafka is shared by the whole test session.
    app, in_t, out_t = (f"{n}-{uuid.uuid4().hex[:8]}" for n in (APP, IN, OUT))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(in_t, 4, 1), NewTopic(out_t, 2, 1)]).values():
        f.result(10)
    instances: list[_Instance] = []

    def start(name: str) -> _Instance:
        return _Instance(bootstrap, tmp_path / name, name, app=app, topics=(in_t, out_t))

    try:
        instances.append(start("a"))
        instances.append(start("b"))
        a, b = instances
        # 2 subtopologies x 4 partitions: each instance runs 4 of the 8 tasks.
        _wait(lambda: a.tasks() is not None and b.tasks() is not None
              and len(a.tasks() or ()) == 4 and len(b.tasks() or ()) == 4,
              180, "the two instances did not split the tasks", instances)
        ta, tb = a.tasks() or set(), b.tasks() or set()
        assert not ta & tb
        assert ta | tb == {f"{s}_{p}" for s in (0, 1) for p in range(4)}

        # The broker's view: one streams group, both members with four tasks each.
        conn = RawConnection(bootstrap)
        try:
            d = conn.call(request(89, 0, group_ids=(app,), include_authorized_operations=False))
            (g,) = d.groups
            assert (g.error_code, g.group_state) == (0, "Stable")
            assert sorted(sum(len(t.partitions) for t in m.assignment.active_tasks)
                          for m in g.members) == [4, 4]
            assert {s.subtopology_id for s in g.topology.subtopologies} == {"0", "1"}
            listed = conn.call(request(16, 5, states_filter=(), types_filter=()))
            assert [(x.group_type, x.group_state) for x in listed.groups
                    if x.group_id == app] == [("streams", "Stable")]
        finally:
            conn.close()

        # The internal topics, created by the coordinator with the topology's partitions.
        topics = admin.list_topics(timeout=10).topics
        assert len(topics[f"{app}-words-repartition"].partitions) == 4
        assert len(topics[f"{app}-counts-changelog"].partitions) == 4

        p = Producer({"bootstrap.servers": bootstrap})

        def produce(lines: list[str], first: int) -> None:
            for i, line in enumerate(lines, first):
                p.produce(in_t, key=f"k{i}".encode(), value=line.encode())
            assert p.flush(10) == 0

        def counted(lines: list[str]) -> Callable[[], bool]:
            expected = _words(lines)

            def check() -> bool:
                latest: dict[str, int] = {}
                for word, n in _read_all(bootstrap, out_t):
                    latest[word] = n
                return latest == dict(expected)

            return check

        third = len(LINES) // 3
        produce(LINES[:third], 0)
        _wait(counted(LINES[:third]), 120, "the counts did not reach the expected ones",
              instances)

        # A third instance joins while the others process: the tasks are split three ways.
        instances.append(start("c"))
        c = instances[2]
        produce(LINES[third:2 * third], third)
        _wait(lambda: sorted(len(i.tasks() or ()) for i in instances) == [2, 3, 3],
              180, "the third instance did not get its tasks", instances)
        assert set().union(*(i.tasks() or set() for i in instances)) == ta | tb
        _wait(counted(LINES[:2 * third]), 120, "the counts after the join are wrong",
              instances)

        # One leaves: the two left take its tasks, and the counts go on exactly.
        out_a = a.close()
        assert "closed=true" in out_a, "\n".join(out_a[-80:])
        instances.remove(a)
        produce(LINES[2 * third:], 2 * third)
        _wait(lambda: sorted(len(i.tasks() or ()) for i in (b, c)) == [4, 4],
              180, "the tasks did not move to the two left", [b, c])
        _wait(counted(LINES), 120, "the counts after the leave are wrong", [b, c])
    finally:
        outs = [i.close() for i in instances]
    closed_cleanly(instances, outs)
    expected = _words(LINES)
    by_word = counts_by_word(bootstrap, out_t)
    assert {w: by_word.get(w, []) for w in expected} == {
        w: list(range(1, n + 1)) for w, n in expected.items()}
    assert set(by_word) == set(expected)


@pytest.mark.timeout(600)
def test_standby_replicas_follow_and_take_over_exactly_once(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    """``group.streams.num.standby.replicas`` 1 on the server: each of two instances runs
    half the tasks and keeps a standby of the other's counting tasks (the stateful ones);
    when one leaves, the other runs every task and the counts go on exactly."""
    broker = make_broker({"group.streams.num.standby.replicas": "1"})
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(IN, 4, 1), NewTopic(OUT, 2, 1)]).values():
        f.result(10)
    instances = [_Instance(bootstrap, tmp_path / "a", "a"),
                 _Instance(bootstrap, tmp_path / "b", "b")]
    a, b = instances
    try:
        def split() -> bool:
            return all(len(i.tasks() or ()) == 4 and len(i.tasks("standby") or ()) == 2
                       for i in instances)

        _wait(split, 180, "the instances did not get their active and standby tasks",
              instances)
        for i, other in ((a, b), (b, a)):
            standby = i.tasks("standby") or set()
            # Standbys of the counting subtopology only, the other instance's tasks.
            assert {t.split("_")[0] for t in standby} == {"1"}
            assert standby <= (other.tasks() or set())
        p = Producer({"bootstrap.servers": bootstrap})
        for n, line in enumerate(LINES):
            p.produce(IN, key=f"k{n}".encode(), value=line.encode())
        assert p.flush(10) == 0
        expected = dict(_words(LINES))

        def counted() -> bool:
            latest: dict[str, int] = {}
            for word, n in _read_all(bootstrap, OUT):
                latest[word] = n
            return latest == expected

        _wait(counted, 120, "the counts did not reach the expected ones", instances)
        out_a = a.close()
        assert "closed=true" in out_a, "\n".join(out_a[-80:])
        instances.remove(a)
        _wait(lambda: len(b.tasks() or ()) == 8, 180, "b did not take every task", [b])
        more = LINES[:10]
        for n, line in enumerate(more, len(LINES)):
            p.produce(IN, key=f"k{n}".encode(), value=line.encode())
        assert p.flush(10) == 0
        expected = dict(_words(LINES + more))
        _wait(counted, 120, "the counts after the takeover are wrong", [b])
    finally:
        outs = [i.close() for i in instances]
    closed_cleanly(instances, outs)
    by_word = counts_by_word(bootstrap, OUT)
    # Exactly once: each word's counts are 1, 2, ..., N with nothing twice.
    assert {w: by_word.get(w, []) for w in expected} == {
        w: list(range(1, n + 1)) for w, n in expected.items()}


def _describe(bootstrap: str) -> Any:
    conn = RawConnection(bootstrap)
    try:
        d = conn.call(request(89, 0, group_ids=(APP,), include_authorized_operations=False))
    finally:
        conn.close()
    (g,) = d.groups
    return g


@pytest.mark.timeout(600)
def test_static_member_restarted_takes_its_tasks_back_without_a_rebalance(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    """Kafka Streams 4.4 static members (group.instance.id): one closes (it leaves with
    epoch -2, keeping its tasks), a new instance with the same instance id and state
    directory takes its tasks back, the other keeps its own throughout, the group epoch
    does not move, and the counts stay exact."""
    broker = make_broker()
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(IN, 4, 1), NewTopic(OUT, 2, 1)]).values():
        f.result(10)
    a = _Instance(bootstrap, tmp_path / "a", "a", instance_id="i-a")
    b = _Instance(bootstrap, tmp_path / "b", "b", instance_id="i-b")
    instances = [a, b]
    try:
        _wait(lambda: all(len(i.tasks() or ()) == 4 for i in instances), 180,
              "the instances did not split the tasks", instances)
        _wait(lambda: _describe(bootstrap).group_state == "Stable", 60,
              "the group did not settle", instances)
        ta, tb = a.tasks() or set(), b.tasks() or set()
        before = _describe(bootstrap)
        # Kafka Streams names its thread's member "<group.instance.id>-<thread>".
        old_id = next(m.member_id for m in before.members if m.instance_id == "i-a-1")
        p = Producer({"bootstrap.servers": bootstrap})
        half = len(LINES) // 2
        for n, line in enumerate(LINES[:half]):
            p.produce(IN, key=f"k{n}".encode(), value=line.encode())
        assert p.flush(10) == 0

        def counted(lines: list[str]) -> Callable[[], bool]:
            expected = dict(_words(lines))

            def check() -> bool:
                latest: dict[str, int] = {}
                for word, n in _read_all(bootstrap, OUT):
                    latest[word] = n
                return latest == expected
            return check

        _wait(counted(LINES[:half]), 120, "the counts did not reach the expected ones",
              instances)
        out_a = a.close()
        instances.remove(a)
        assert "closed=true" in out_a, "\n".join(out_a[-80:])
        # The static member left with epoch -2: still a member, its tasks kept.
        left = _describe(bootstrap)
        gone = [m for m in left.members if m.instance_id == "i-a-1"]
        assert [(m.member_id, m.member_epoch) for m in gone] == [(old_id, -2)]
        a2 = _Instance(bootstrap, tmp_path / "a2", "a2", instance_id="i-a",
                       state=tmp_path / "a" / "state")
        instances.append(a2)
        _wait(lambda: (a2.tasks() or set()) == ta, 180,
              "the restarted static member did not get its tasks back", instances)
        assert b.tasks() == tb
        after = _describe(bootstrap)
        assert after.group_epoch == before.group_epoch
        assert sorted(m.instance_id for m in after.members) == ["i-a-1", "i-b-1"]
        assert old_id not in {m.member_id for m in after.members}
        for n, line in enumerate(LINES[half:], half):
            p.produce(IN, key=f"k{n}".encode(), value=line.encode())
        assert p.flush(10) == 0
        _wait(counted(LINES), 120, "the counts after the restart are wrong", instances)
    finally:
        outs = [i.close() for i in instances]
    closed_cleanly(instances, outs)
    expected = _words(LINES)
    by_word = counts_by_word(bootstrap, OUT)
    assert {w: by_word.get(w, []) for w in expected} == {
        w: list(range(1, n + 1)) for w, n in expected.items()}
