"""protocol/generated is what scripts/generate_codecs.py writes from the pinned Kafka's
message specs (the kafka-clients jar): a hand edit, or a Kafka upgrade without running the
generator again, fails here."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from ..kafka_reference import kafka_jars

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "generate_codecs.py"


def test_generated_codecs_are_what_the_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location("generate_codecs", SCRIPT)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    os.environ.setdefault("KAFKALITE_KAFKA_JARS_DIR", str(kafka_jars()))
    files = gen.render(gen.load_specs(gen.kafka_clients_jar()))
    assert files, "nothing generated"
    on_disk = {p.relative_to(gen.OUT) for p in gen.OUT.rglob("*.py")}
    assert on_disk == set(files)
    for path, text in files.items():
        assert (gen.OUT / path).read_text() == text, path


def test_kafka_broker_configs_are_the_pinned_kafkas() -> None:
    """broker/config/kafka_broker_configs.json is what scripts/kafka-broker-configs.sh
    reads from the pinned jars: every broker property Kafka defines, with its type."""
    import json
    import subprocess

    repo = SCRIPT.parents[1]
    out = subprocess.run(
        ["java", "-cp", f"{kafka_jars()}/*", "jvm/broker-configs/BrokerConfigs.java"],
        cwd=repo, capture_output=True, text=True, check=True, timeout=300).stdout
    committed = (repo / "broker" / "config" / "kafka_broker_configs.json").read_text()
    assert json.loads(out) == json.loads(committed)
