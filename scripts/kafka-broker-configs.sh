#!/usr/bin/env bash
# Regenerate broker/config/kafka_broker_configs.json: every broker property the pinned
# Kafka defines (KafkaConfig's ConfigDef) with its type, read from its jars by
# jvm/broker-configs/BrokerConfigs.java. Run when the pinned release moves; the output is
# checked in (tests/differential/test_generated_codecs.py compares it with the jars).
set -euo pipefail
cd "$(dirname "$0")/.."
jars=${KAFKALITE_KAFKA_JARS_DIR:-$(bash scripts/kafka-jars.sh)}
java -cp "$jars/*" jvm/broker-configs/BrokerConfigs.java > broker/config/kafka_broker_configs.json.tmp
python3 -m json.tool broker/config/kafka_broker_configs.json.tmp >/dev/null
mv broker/config/kafka_broker_configs.json.tmp broker/config/kafka_broker_configs.json
echo broker/config/kafka_broker_configs.json
