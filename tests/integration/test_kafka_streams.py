"""A Kafka Streams 4.4 application against kafkalite: word count with a repartition step, a
RocksDB state store and processing.guarantee=exactly_once_v2 (tests/integration/java/
WordCountStreams.java). The store's record cache is off, so every word read emits its new
count: read_committed, each word's counts in the output topic are exactly 1, 2, ..., N, which
neither a lost nor a double-counted record leaves intact. The second run starts with an empty
state directory, so it restores the store from the changelog and goes on from there."""

from __future__ import annotations

import re
import struct
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import full_classpath, java_command, tools_log_config

APP = "wordcount"
IN, OUT = "wc-lines", "wc-counts"
LINES = [
    "the quick brown fox", "jumps over the lazy dog", "The dog sleeps", "a fox, a dog",
    "quick quick QUICK", "over and over", "lazy afternoon", "brown dog brown fox",
]


def _produce(bootstrap: str, lines: list[str]) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i, line in enumerate(lines):
        p.produce(IN, key=f"k{i}".encode(), value=line.encode())
    assert p.flush(10) == 0


def _words(lines: list[str]) -> Counter[str]:
    return Counter(w for line in lines for w in re.split(r"\W+", line.lower()) if w)


def _read_all(bootstrap: str, topic: str) -> list[tuple[str, int]]:
    """Every record of ``topic`` (key, long value) a read_committed consumer sees, by
    partition in offset order."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    parts = admin.list_topics(topic, timeout=10).topics[topic].partitions
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "wc-check",
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    out: list[tuple[str, int]] = []
    try:
        for p in parts:
            # One partition at a time, to its end (the stable offset: the application
            # closed, so every transaction is complete).
            c.assign([TopicPartition(topic, p, 0)])
            while True:
                m = c.poll(5)
                assert m is not None, f"{topic}-{p}: no end reached"
                if m.error() is not None:
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    break
                out.append((m.key().decode(), struct.unpack(">q", m.value())[0]))
    finally:
        c.close()
    return out


def _run(bootstrap: str, state_dir: Path, expected: Counter[str]) -> dict[str, str]:
    log = tools_log_config(state_dir.parent)
    cmd = java_command("WordCountStreams", bootstrap, APP, IN, OUT, str(state_dir),
                       ",".join(f"{w}:{n}" for w, n in expected.items()), cp=full_classpath(),
                       jvm_args=(f"-Dlog4j2.configurationFile={log}",))
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert "error" not in lines, out.stdout + out.stderr[-4000:]
    return lines


def _check_counts(bootstrap: str, expected: Counter[str]) -> None:
    by_word: dict[str, list[int]] = defaultdict(list)
    for word, n in _read_all(bootstrap, OUT):
        by_word[word].append(n)
    assert {w: by_word[w] for w in expected} == {w: list(range(1, n + 1))
                                                  for w, n in expected.items()}
    assert set(by_word) == set(expected)
    latest = dict(_read_all(bootstrap, f"{APP}-counts-changelog"))
    assert latest == dict(expected)


@pytest.mark.timeout(400)
def test_streams_word_count_exactly_once_resumes_from_changelog(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(IN, 3, 1), NewTopic(OUT, 2, 1)]).values():
        f.result(10)
    _produce(broker.bootstrap, LINES[:5])
    first = _words(LINES[:5])
    lines = _run(broker.bootstrap, tmp_path / "state-1", first)
    assert lines["state"] == "RUNNING" and lines["closed"] == "true"
    assert {w: int(lines[f"count.{w}"]) for w in first} == dict(first)
    _check_counts(broker.bootstrap, first)

    # The internal topics, as Streams asked for them: partitions from the input topic,
    # the changelog compacted, the repartition topic deleting and kept without a time limit.
    repartition, changelog = f"{APP}-words-repartition", f"{APP}-counts-changelog"
    topics = admin.list_topics(timeout=10).topics
    assert len(topics[repartition].partitions) == 3
    assert len(topics[changelog].partitions) == 3
    described = {r.name: {k: v.value for k, v in f.result(10).items()}
                 for r, f in admin.describe_configs(
                     [ConfigResource("topic", repartition),
                      ConfigResource("topic", changelog)]).items()}
    assert described[changelog]["cleanup.policy"] == "compact"
    assert described[changelog]["message.timestamp.type"] == "CreateTime"
    assert described[repartition]["cleanup.policy"] == "delete"
    assert described[repartition]["retention.ms"] == "-1"
    assert described[repartition]["segment.bytes"] == "52428800"
    assert described[repartition]["message.timestamp.type"] == "CreateTime"

    # The application's group committed every input record.
    committed = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": APP}).committed(
        [TopicPartition(IN, p) for p in range(3)], timeout=10)
    assert sum(tp.offset for tp in committed) == 5

    # A restart on an empty state directory: the store comes back from the changelog, the
    # new lines add to it, and nothing of the first run is counted twice.
    _produce(broker.bootstrap, LINES[5:])
    both = _words(LINES)
    lines = _run(broker.bootstrap, tmp_path / "state-2", both)
    assert lines["closed"] == "true"
    assert {w: int(lines[f"count.{w}"]) for w in both} == dict(both)
    _check_counts(broker.bootstrap, both)
