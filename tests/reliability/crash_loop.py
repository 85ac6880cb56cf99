"""Crash loop: a ``--durable`` broker SIGKILLed at random moments under real clients.

Each cycle starts the broker (``BrokerProcess``, same data directory and port), lets the
workload run for a random time (run_min to run_max seconds) and kills the process with
SIGKILL. The workload, from real clients in this process, runs across the kills as an
application's would:

- an idempotent confluent-kafka producer (acks=-1) writing unique values, which records
  the partition and offset of every acknowledged one;
- a group consumer that commits synchronously every few messages and records every
  commit the broker acknowledged;
- churn: consumers joining the same group and leaving again.

After each kill the ``__consumer_offsets`` log is read from disk (``offsets dump``):
within each group generations never go down across the whole run (a group that did not
reload would start again at 1) and committed offsets per partition never go down. After
each restart: every acknowledged record is read back at its acknowledged offset, no value
appears twice (the idempotent producer's retries across a kill are deduplicated), the
committed offsets the broker returns are at least the last acknowledged commit, and the
broker's start-up (process start to listening) is timed.

With ``corrupt`` the data files of the produced topic are damaged before each restart:
the active segment of a partition is cut or overwritten at a random byte, or an index,
time index or producer snapshot file is. Recovery must cut the segment at the last whole
batch before the damage and log it (``log.recovery_truncated``); acknowledged records
before that batch must all be there. Records after the damage are counted as dropped (the
disk lost them) and the producer starts afresh each cycle (a producer whose acknowledged
sequence the broker lost is fenced by the broker as Kafka's would be). Commits are not
checked in this variant: a consumer whose position is past a truncated log end resets.
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.offsets_dump import iter_dump
from kafkalite.broker.testing import BrokerProcess
from kafkalite.protocol.records import iter_batch_headers

TOPIC = "crash-loop"
GROUP = "crash-loop-group"
PARTITIONS = 3
SEGMENT_BYTES = 64 * 1024
BROKER_SETTINGS = {
    "segment.bytes": str(SEGMENT_BYTES),
    "log.segment.bytes": str(SEGMENT_BYTES),
    "group.initial.rebalance.delay.ms": "100",
    "group.min.session.timeout.ms": "1000",
}


@dataclass
class Report:
    kills: int = 0
    acknowledged: int = 0
    verified: int = 0
    lost: int = 0
    duplicates: int = 0
    misplaced: int = 0
    dropped_by_corruption: int = 0
    corruptions: list[str] = field(default_factory=list)
    commits_acknowledged: int = 0
    commit_errors: int = 0
    commit_regressions: int = 0
    generation_regressions: int = 0
    groups_reloaded: int = 0
    max_generation: int = 0
    recovery_s: list[float] = field(default_factory=list)
    truncations_logged: int = 0
    problems: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not (self.lost or self.duplicates or self.misplaced or self.commit_regressions
                    or self.generation_regressions or self.problems)

    def lines(self) -> list[str]:
        rec = sorted(self.recovery_s)
        out = [
            f"kills: {self.kills}",
            f"records acknowledged: {self.acknowledged}",
            f"records verified at their acknowledged offsets: {self.verified}",
            f"lost: {self.lost}, duplicates: {self.duplicates}, misplaced: {self.misplaced}",
            f"commits acknowledged: {self.commits_acknowledged} (refused: {self.commit_errors}), "
            f"committed-offset regressions: {self.commit_regressions}",
            f"generation regressions: {self.generation_regressions}, highest generation: "
            f"{self.max_generation}, restarts that reloaded the group: {self.groups_reloaded}",
        ]
        if rec:
            out.append(
                f"recovery (process start to listening) s: p50 {statistics.median(rec):.2f}, "
                f"max {rec[-1]:.2f}")
        if self.corruptions:
            out.append(f"files damaged: {len(self.corruptions)}; records dropped after the "
                       f"damage: {self.dropped_by_corruption}; truncations logged: "
                       f"{self.truncations_logged}")
        out += [f"PROBLEM: {p}" for p in self.problems[:20]]
        return out


class Workload:
    """The clients: producer, committing consumer and churn, each on its own thread."""

    def __init__(self, bootstrap: str, rng: random.Random, commits: bool) -> None:
        self.bootstrap = bootstrap
        self.rng = rng
        self.commits = commits
        self.lock = threading.Lock()
        #: value -> (partition, offset) of every acknowledged record.
        self.acked: dict[bytes, tuple[int, int]] = {}
        #: partition -> highest offset whose commit the broker acknowledged.
        self.committed: dict[int, int] = {}
        self.commit_count = 0
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.paused = threading.Event()
        #: Set while the broker runs: churn leaves only then, as a LeaveGroup sent into a
        #: dead broker leaves a member behind that holds every rebalance for a session.
        self.up = threading.Event()
        self.up.set()
        self.seq = 0
        self.producer = self._new_producer()
        self.threads = [threading.Thread(target=self._produce, daemon=True)]
        if commits:
            self.threads += [threading.Thread(target=self._commit, daemon=True),
                             threading.Thread(target=self._churn, daemon=True)]

    def _new_producer(self) -> Producer:
        return Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 2,
                         "message.timeout.ms": 120000, "reconnect.backoff.max.ms": 200,
                         "retry.backoff.ms": 50})

    def start(self) -> Workload:
        for t in self.threads:
            t.start()
        return self

    def new_producer(self) -> None:
        """Drop the producer (outstanding messages unacknowledged) and start another."""
        with self.lock:
            old = self.producer
            self.producer = self._new_producer()
        old.purge()
        old.flush(0)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            with self.lock:
                self.acked[msg.value()] = (msg.partition(), msg.offset())

    def _produce(self) -> None:
        while not self.stop.is_set():
            if self.paused.is_set():
                time.sleep(0.01)
                continue
            with self.lock:
                p = self.producer
                self.seq += 1
                value = f"v{self.seq}".encode()
            try:
                p.produce(TOPIC, value, on_delivery=self._on_delivery)
            except BufferError:
                p.poll(0.05)
                continue
            # About 250 records a second: batches in flight at every kill, little to re-read.
            p.poll(0.02 if self.seq % 5 == 0 else 0)
        self.producer.flush(30)

    def _consumer(self, **extra: Any) -> Consumer:
        return Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         # Short timeouts: a member lost in a kill (its LeaveGroup never
                         # sent) must not hold a rebalance for Kafka's default 5 minutes.
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                         "max.poll.interval.ms": 6000,
                         "reconnect.backoff.max.ms": 200, **extra})

    def _commit(self) -> None:
        c = self._consumer()
        c.subscribe([TOPIC])
        n = 0
        while not self.stop.is_set():
            m = c.poll(0.1)
            if m is None or m.error() is not None:
                continue
            n += 1
            if n % 5 or self.paused.is_set():
                continue
            try:
                done = c.commit(asynchronous=False)
            except KafkaException as e:
                self.errors.append(str(e))
                continue
            with self.lock:
                self.commit_count += 1
                for tp in done or []:
                    if tp.error is None and tp.offset >= 0:
                        self.committed[tp.partition] = max(self.committed.get(tp.partition, -1),
                                                           tp.offset)
        c.close()

    def _churn(self) -> None:
        while not self.stop.is_set():
            c = self._consumer()
            c.subscribe([TOPIC])
            until = time.monotonic() + self.rng.uniform(1.0, 3.0)
            while time.monotonic() < until and not self.stop.is_set():
                c.poll(0.1)
            while not self.up.wait(0.1) and not self.stop.is_set():
                c.poll(0.1)
            try:
                c.close()
            except KafkaException:
                pass
            time.sleep(self.rng.uniform(1.0, 2.0))

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)


def read_partitions(bootstrap: str) -> dict[tuple[int, int], bytes]:
    """Every record of the topic: (partition, offset) -> value."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "crash-loop-check",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    out: dict[tuple[int, int], bytes] = {}
    ends = {}
    for p in range(PARTITIONS):
        _lo, hi = c.get_watermark_offsets(TopicPartition(TOPIC, p), 20)
        ends[p] = hi
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    pos = dict.fromkeys(ends, 0)
    deadline = time.monotonic() + 60
    while any(pos[p] < ends[p] for p in ends) and time.monotonic() < deadline:
        for m in c.consume(10000, 0.2):
            if m.error() is None:
                out[(m.partition(), m.offset())] = m.value()
                pos[m.partition()] = m.offset() + 1
    c.close()
    return out


def committed_offsets(bootstrap: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        got = c.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], 20)
    finally:
        c.close()
    return {tp.partition: tp.offset for tp in got if tp.offset >= 0}


class OffsetsLog:
    """What ``__consumer_offsets`` on disk says: generations and commits, in log order."""

    def __init__(self) -> None:
        self.generation = 0
        self.commits: dict[int, int] = {}

    def check(self, data_dir: Path, report: Report) -> int:
        """Walk the log; count regressions; return the group's last generation."""
        gens = []
        commits: dict[int, list[int]] = defaultdict(list)
        for row in iter_dump(data_dir):
            key, value = row.get("key"), row.get("value")
            if not isinstance(key, dict) or not isinstance(value, dict):
                continue
            key, value = key["data"], value["data"]
            if key.get("group") != GROUP:
                continue
            if "generation" in value:
                gens.append(int(value["generation"]))
            elif key.get("topic") == TOPIC and "offset" in value:
                commits[int(key["partition"])].append(int(value["offset"]))
        for a, b in itertools.pairwise(gens):
            if b < a:
                report.generation_regressions += 1
                report.problems.append(f"generation went from {a} to {b} in the log")
        for p, offs in commits.items():
            for a, b in itertools.pairwise(offs):
                if b < a:
                    report.commit_regressions += 1
                    report.problems.append(f"commit of partition {p} went {a} -> {b} in the log")
        return gens[-1] if gens else 0


# --- damage ----------------------------------------------------------------------------


def last_whole_offset(segment: bytes, position: int) -> int:
    """Last offset of the last batch that ends at or before ``position`` (-1 if none)."""
    last = -1
    for pos, h in iter_batch_headers(segment):
        if pos + h.size > position:
            break
        last = h.last_offset
    return last


def damage(data_dir: Path, rng: random.Random, report: Report) -> dict[int, int]:
    """Damage one file of the topic; return partition -> last offset surely kept."""
    files = []
    for p in range(PARTITIONS):
        d = data_dir / f"{TOPIC}-{p}"
        logs = sorted(d.glob("*.log"))
        if not logs:
            continue
        files.append((p, logs[-1]))
        files += [(p, f) for f in d.glob("*.index")]
        files += [(p, f) for f in d.glob("*.timeindex")]
        files += [(p, f) for f in d.glob("*.snapshot")]
    files = [(p, f) for p, f in files if f.stat().st_size > 0]
    if not files:
        return {}
    # Segments twice as often as the other files: they hold the data.
    weighted = files + [(p, f) for p, f in files if f.suffix == ".log"]
    p, path = rng.choice(weighted)
    data = path.read_bytes()
    at = rng.randrange(len(data))
    if rng.random() < 0.5:
        path.write_bytes(data[:at])
        what = "cut"
    else:
        n = rng.randint(1, 8)
        path.write_bytes(data[:at] + bytes(rng.randrange(256) for _ in range(n))
                         + data[at + n:])
        what = "overwritten"
    report.corruptions.append(f"{path.parent.name}/{path.name} {what} at byte {at}")
    if path.suffix != ".log":
        return {}
    return {p: last_whole_offset(data, at)}


# --- the loop --------------------------------------------------------------------------


def run(data_dir: Path, kills: int, seed: int = 1, corrupt: bool = False,
        run_min: float = 0.2, run_max: float = 1.5,
        progress: Any = None) -> Report:
    rng = random.Random(seed)
    report = Report()
    broker = BrokerProcess(data_dir, BROKER_SETTINGS, extra_args=["--durable"]).start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        f.result(20)
    work = Workload(broker.bootstrap, rng, commits=not corrupt).start()
    offsets_log = OffsetsLog()
    #: partition -> offset below which the disk kept everything (corrupt mode).
    try:
        for cycle in range(kills):
            time.sleep(rng.uniform(run_min, run_max))
            work.up.clear()
            broker.kill()
            report.kills += 1
            with work.lock:
                acked_before = dict(work.acked)
                committed_before = dict(work.committed)
            gen = offsets_log.check(data_dir, report)
            dropped = damage(data_dir, rng, report) if corrupt else {}
            if corrupt:
                work.paused.set()
            t0 = time.monotonic()
            broker.start()
            report.recovery_s.append(time.monotonic() - t0)
            work.up.set()
            if gen:
                report.max_generation = max(report.max_generation, gen)
            if corrupt:
                # Records after the damage are gone; stop expecting them.
                with work.lock:
                    for v, (p, off) in list(work.acked.items()):
                        if p in dropped and off > dropped[p]:
                            del work.acked[v]
                            report.dropped_by_corruption += 1
                    acked_before = {v: po for v, po in acked_before.items() if v in work.acked}
                work.new_producer()
                work.paused.clear()
            verify(broker.bootstrap, acked_before, report)
            if not corrupt:
                check_commits(broker.bootstrap, committed_before, report)
                if gen and group_reloaded(broker.bootstrap):
                    report.groups_reloaded += 1
            if progress is not None:
                progress(cycle + 1, report)
    finally:
        work.finish()
        broker.kill()
    broker.start()
    try:
        with work.lock:
            final = dict(work.acked)
        verify(broker.bootstrap, final, report)
        report.acknowledged = len(final)
        report.commits_acknowledged = work.commit_count
        report.commit_errors = len(work.errors)
        report.max_generation = max(report.max_generation, offsets_log.check(data_dir, report))
    finally:
        broker.stop()
    report.truncations_logged = sum(
        1 for line in broker.log_path.read_text(errors="replace").splitlines()
        if "log.recovery_truncated" in line and TOPIC in line)
    return report


def verify(bootstrap: str, acked: dict[bytes, tuple[int, int]], report: Report) -> None:
    records = read_partitions(bootstrap)
    seen: dict[bytes, int] = defaultdict(int)
    for v in records.values():
        seen[v] += 1
    dups = sum(1 for n in seen.values() if n > 1)
    if dups:
        report.duplicates = max(report.duplicates, dups)
        report.problems.append(f"{dups} values appear more than once")
    lost = misplaced = 0
    for v, (p, off) in acked.items():
        got = records.get((p, off))
        if got == v:
            continue
        if v in seen:
            misplaced += 1
        else:
            lost += 1
    if lost or misplaced:
        report.problems.append(f"after kill {report.kills}: {lost} acknowledged records lost, "
                               f"{misplaced} at another offset")
    report.lost = max(report.lost, lost)
    report.misplaced = max(report.misplaced, misplaced)
    report.verified = len(acked) - lost - misplaced  # the last check covers every record


def check_commits(bootstrap: str, before: dict[int, int], report: Report) -> None:
    try:
        now = committed_offsets(bootstrap)
    except KafkaException as e:
        report.problems.append(f"OffsetFetch failed after restart: {e}")
        return
    for p, off in before.items():
        if now.get(p, -1) < off:
            report.commit_regressions += 1
            report.problems.append(f"partition {p}: committed {now.get(p)} after restart, "
                                   f"{off} acknowledged before the kill")


def group_reloaded(bootstrap: str) -> bool:
    """The group is known after the restart, with its protocol (DescribeGroups)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        desc = admin.describe_consumer_groups([GROUP])[GROUP].result(20)
    except KafkaException:
        return False
    return str(desc.state) != "ConsumerGroupState.DEAD" and bool(desc.partition_assignor
                                                                 or desc.members)


def main() -> None:  # pragma: no cover - the benchmark command wraps this
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        r = run(Path(d) / "data", 3, progress=lambda n, r: print(n, flush=True))
        print("\n".join(r.lines()))
        print(json.dumps({"ok": r.ok()}))


if __name__ == "__main__":
    main()
