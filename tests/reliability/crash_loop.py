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
batch before the damage and log it: every damage that breaks a batch (a cut inside one,
or changed bytes in its length, magic, CRC or CRC-covered part) must show up as a
``log.recovery_truncated`` line for that segment with ``valid_bytes`` at the start of
that batch. Acknowledged records before that batch must all be there. Records after the
damage are counted as dropped (the disk lost them) and the producer starts afresh each
cycle (a producer whose acknowledged sequence the broker lost is fenced by the broker as
Kafka's would be); a value that was ever acknowledged must never be read at another
offset than its acknowledged one (a damaged batch kept by recovery would show so). The
one damage recovery cannot see is a batch's base offset field (outside the CRC) changed
to a higher value: the batch is kept at the new offsets, as Kafka's recovery would keep
it; the report counts such damages and their values are exempt from the offset check.
Commits are not checked in this variant: a consumer whose position is past a truncated
log end resets.

Recovery time is bounded by ``BrokerProcess.start``'s limit (30 s: a slower start fails
the cycle); the report prints its median and maximum, and the medians of the first and
last ten restarts, which show whether it grows with the log.
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

from kafkalite.broker.cli.offsets_dump import iter_dump
from kafkalite.broker.testing.fixtures import BrokerProcess

from .damage import Damage, damage, logged_truncations

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
    #: Restarts after which the group had to be there (it had a generation in the log).
    group_restarts: int = 0
    max_generation: int = 0
    recovery_s: list[float] = field(default_factory=list)
    truncations_logged: int = 0
    #: Damages that broke a batch, each needing a truncation line at that batch's start.
    truncations_expected: int = 0
    truncations_matched: int = 0
    #: Damages that moved a batch's base offset field forward (undetectable, as in Kafka).
    base_offsets_moved: int = 0
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
            f"{self.max_generation}, restarts that reloaded the group: {self.groups_reloaded} "
            f"of {self.group_restarts}",
        ]
        if rec:
            first, last = self.recovery_s[:10], self.recovery_s[-10:]
            out.append(
                f"recovery (process start to listening) s: p50 {statistics.median(rec):.2f}, "
                f"max {rec[-1]:.2f}; p50 of the first / last ten restarts "
                f"{statistics.median(first):.2f} / {statistics.median(last):.2f}")
        if self.corruptions:
            out.append(f"files damaged: {len(self.corruptions)}; records dropped after the "
                       f"damage: {self.dropped_by_corruption}; truncations logged: "
                       f"{self.truncations_logged}, of them at the expected batch: "
                       f"{self.truncations_matched} of {self.truncations_expected} expected; "
                       f"base offset fields moved forward (kept, undetectable): "
                       f"{self.base_offsets_moved}")
        out += [f"PROBLEM: {p}" for p in self.problems[:20]]
        return out


class Workload:
    """The clients: producer, committing consumer and churn, each on its own thread."""

    def __init__(self, bootstrap: str, rng: random.Random, commits: bool) -> None:
        self.bootstrap = bootstrap
        self.rng = rng
        self.commits = commits
        self.lock = threading.Lock()
        #: value -> (partition, offset) of every acknowledged record still expected.
        self.acked: dict[bytes, tuple[int, int]] = {}
        #: The same for every record ever acknowledged (the damage variant drops some from
        #: ``acked``; none of them may turn up at another offset).
        self.ever_acked: dict[bytes, tuple[int, int]] = {}
        #: Values of batches whose base offset field the damage moved forward (recovery
        #: cannot tell; see ``expected_cut``): they may be read at other offsets.
        self.unplaceable: set[bytes] = set()
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
        #: Assignments the committing consumer received: one per completed rebalance.
        self.assignments = 0
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
                self.acked[msg.value()] = self.ever_acked[msg.value()] = (
                    msg.partition(), msg.offset())

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

    def _assigned(self, _c: Any, _parts: Any) -> None:
        with self.lock:
            self.assignments += 1

    def _commit(self) -> None:
        c = self._consumer()
        c.subscribe([TOPIC], on_assign=self._assigned)
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


# --- the loop --------------------------------------------------------------------------


def run(data_dir: Path, kills: int, seed: int = 1, corrupt: bool = False,
        run_min: float = 0.2, run_max: float = 1.5,
        progress: Any = None, rebalance_every: int = 0) -> Report:
    """``rebalance_every`` N: every Nth kill waits (at most 30 s) for a rebalance to
    complete first, so that short runs also reload groups past their first generation
    (a kill every second or two otherwise lands inside every rebalance)."""
    rng = random.Random(seed)
    report = Report()
    broker = BrokerProcess(data_dir, BROKER_SETTINGS, extra_args=["--durable"]).start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        f.result(20)
    work = Workload(broker.bootstrap, rng, commits=not corrupt).start()
    offsets_log = OffsetsLog()
    expected_truncations: list[tuple[str, str, int]] = []
    try:
        for cycle in range(kills):
            with work.lock:
                acks_before = len(work.ever_acked)
                assignments_before = work.assignments
            time.sleep(rng.uniform(run_min, run_max))
            # On a loaded machine a restarted producer may not have written anything yet:
            # kill once this cycle has acknowledged something (waiting at most 30 s), so
            # that every kill cuts into live writes and the damage variant has data to hit.
            progress_deadline = time.monotonic() + 30
            wait_rebalance = bool(rebalance_every) and not corrupt and \
                (cycle + 1) % rebalance_every == 0
            while time.monotonic() < progress_deadline:
                with work.lock:
                    if len(work.ever_acked) > acks_before and (
                            not wait_rebalance or work.assignments > assignments_before):
                        break
                time.sleep(0.05)
            work.up.clear()
            broker.kill()
            report.kills += 1
            with work.lock:
                acked_before = dict(work.acked)
                committed_before = dict(work.committed)
            gen = offsets_log.check(data_dir, report)
            hurt = damage(data_dir, TOPIC, PARTITIONS, rng) if corrupt else Damage({}, None)
            if hurt.done is not None:
                report.corruptions.append(hurt.done)
            if hurt.truncation is not None:
                expected_truncations.append(hurt.truncation)
                report.truncations_expected += 1
            if hurt.moved is not None:
                report.base_offsets_moved += 1
            dropped = hurt.kept
            if hurt.moved is not None:
                with work.lock:
                    work.unplaceable.update(
                        v for v, (vp, off) in work.ever_acked.items()
                        if vp == hurt.moved[0] and off >= hurt.moved[1])
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
            with work.lock:
                ever = {v: at for v, at in work.ever_acked.items() if v not in work.unplaceable}
            verify(broker.bootstrap, acked_before, report, ever)
            if not corrupt:
                check_commits(broker.bootstrap, committed_before, report)
                if gen:
                    report.group_restarts += 1
                    state = group_state(broker.bootstrap)
                    if state in ("Dead", "unknown"):
                        report.problems.append(f"after kill {report.kills}: group {GROUP} "
                                               f"(generation {gen} in the log) is {state}")
                    else:
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
            ever = {v: at for v, at in work.ever_acked.items() if v not in work.unplaceable}
        verify(broker.bootstrap, final, report, ever)
        report.acknowledged = len(final)
        report.commits_acknowledged = work.commit_count
        report.commit_errors = len(work.errors)
        report.max_generation = max(report.max_generation, offsets_log.check(data_dir, report))
    finally:
        broker.stop()
    logged = logged_truncations(broker.log_path, TOPIC)
    report.truncations_logged = len(logged)
    for t in expected_truncations:
        if t in logged:
            logged.remove(t)
            report.truncations_matched += 1
        else:
            report.problems.append(f"no log.recovery_truncated at byte {t[2]} of {t[0]}/{t[1]}")
    return report


def verify(bootstrap: str, acked: dict[bytes, tuple[int, int]], report: Report,
           ever_acked: dict[bytes, tuple[int, int]]) -> None:
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
    # A value acknowledged at one offset and read at another (also one the damage variant
    # no longer expects: recovery must not keep a damaged batch at a wrong offset).
    misplaced += sum(1 for at, v in records.items()
                     if v in ever_acked and ever_acked[v] != at and v not in acked)
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


def group_state(bootstrap: str) -> str:
    """The group's state after the restart (DescribeGroups): a group that had a generation
    in the log is Empty, Stable or rebalancing when it reloaded, Dead (unknown to the
    coordinator) when it did not."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        desc = admin.describe_consumer_groups([GROUP])[GROUP].result(20)
    except KafkaException:
        return "unknown"
    return str(desc.state).rsplit(".", 1)[-1].title()


def main() -> None:  # pragma: no cover - the benchmark command wraps this
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        r = run(Path(d) / "data", 3, progress=lambda n, r: print(n, flush=True))
        print("\n".join(r.lines()))
        print(json.dumps({"ok": r.ok()}))


if __name__ == "__main__":
    main()
