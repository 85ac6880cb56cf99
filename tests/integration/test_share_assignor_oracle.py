"""The simple assignor against Kafka 4.4's own (java_oracle/SimpleAssignorOracle.java) on
fresh groups of 1-6 members and 1-6 partitions: each member gets as many partitions as
Kafka gives it and each partition is shared by as many members. Which member gets which
partition is Kafka's hash order, not compared."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

from kafkalite.coordinator.share.assignor import assign

from .java_support import full_classpath


def test_counts_and_sharing_match_kafkas(tmp_path: Path) -> None:
    source = Path(__file__).parent / "java_oracle" / "SimpleAssignorOracle.java"
    subprocess.run(["javac", "-nowarn", "-d", str(tmp_path), "-cp", full_classpath(),
                    str(source)], check=True, timeout=300)
    run = subprocess.run(["java", "-cp", f"{tmp_path}:{full_classpath()}",
                          "SimpleAssignorOracle"], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    cases = 0
    for line in run.stdout.splitlines():
        members_s, partitions_s, rest = line.split(" ", 2)
        members, partitions = int(members_s), int(partitions_s)
        kafka = {m: [int(p) for p in re.findall(r"\d+", ps)]
                 for m, ps in re.findall(r"(m\d+)=\[([^\]]*)\]", rest)}
        ours = assign({f"m{i}": frozenset({"t"}) for i in range(members)}, {"t": partitions})
        names = [f"m{i}" for i in range(members)]
        assert [len(ours[m]) for m in names] == [len(kafka[m]) for m in names], line
        kafka_sharing = Counter(p for ps in kafka.values() for p in ps)
        our_sharing = Counter(p for ps in ours.values() for _, p in ps)
        assert sorted(our_sharing.values()) == sorted(kafka_sharing.values()), line
        cases += 1
    assert cases == 36
