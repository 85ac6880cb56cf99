"""KafkaJS with @kafkajs/confluent-schema-registry (npm) against the broker's registry:
AVRO, PROTOBUF and JSON schemas registered, encoded and decoded, and Avro records written
by confluent-kafka's Python serializer decoded by KafkaJS from the same topic."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafkalite.broker.testing.fixtures import BrokerThread

JS = Path(__file__).parent.parent / "js"
CLICK = json.dumps({"type": "record", "name": "Click", "namespace": "js",
                    "fields": [{"name": "page", "type": "string"}]})


def run(url: str, bootstrap: str, topic: str) -> list[dict[str, Any]]:
    proc = subprocess.run(["node", str(JS / "registry_client.js"), url, bootstrap, topic],
                          capture_output=True, text=True, timeout=120, cwd=JS,
                          env={**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_kafkajs_registry_encodes_and_decodes(kafkalite_registry_broker: BrokerThread) -> None:
    b = kafkalite_registry_broker
    client = SchemaRegistryClient({"url": b.schema_registry_url})
    value = AvroSerializer(client, CLICK)({"page": "/py"},
                                          SerializationContext("clicks", MessageField.VALUE))
    p = Producer({"bootstrap.servers": b.bootstrap})
    p.produce("clicks", value=value)
    assert p.flush(10) == 0
    facts = run(b.schema_registry_url, b.bootstrap, "clicks")
    assert facts[0] == {"avroId": 1, "sameId": True}  # the Python client's id, reused
    assert facts[1] == {"proto": {"page": "/p", "n": 3}}
    assert facts[2] == {"json": {"page": "/j"}}
    assert facts[3]["jsonRefused"] is not None
    assert facts[4] == {"decoded": ["/a", "/b", "/py"]}
    assert client.get_latest_version("js-proto").schema.schema_type == "PROTOBUF"
