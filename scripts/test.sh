#!/usr/bin/env bash
# Install everything the test suite needs and run all of it: lint, types, compose file
# check, unit, property, integration (real clients over TCP) and end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
. scripts/steps.sh

# System packages: kcat for the kcat tests, chromium for the report screenshot test and,
# with chromium-driver, the console test (Selenium); node and npm for the KafkaJS tests.
need_apt=()
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
# A JDK for the Java client test (compiled against the kafka-clients jar from PyPI).
command -v javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
# Maven, which resolves Apache Kafka's jars (the reference broker of tests/differential).
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  step "update Debian's package lists" $SUDO apt-get update -qq
  step "install ${need_apt[*]} from Debian" \
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 "${need_apt[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  step "create a virtualenv with $PY" "$PY" -m venv .venv
fi
step "upgrade pip from PyPI" .venv/bin/pip install -q --upgrade pip
step "install kafkalite's test and pipeline dependencies from PyPI" \
  .venv/bin/pip install -q -e ".[test,pipeline]"
export PATH="$PWD/.venv/bin:$PATH"
# KafkaJS 2.x for the KafkaJS tests, into the folder they run their scripts from.
step "install the KafkaJS tests' npm packages" \
  sh -c "cd tests/integration/js && npm ci --no-audit --no-fund --silent"

# Apache Kafka's jars (jvm/pom.xml), resolved once into a cache; the differential suite
# starts a real Kafka from them. Fails here with one line when Maven cannot be reached.
KAFKALITE_KAFKA_JARS_DIR=$(bash scripts/kafka-jars.sh)
export KAFKALITE_KAFKA_JARS_DIR

echo "== ruff"
ruff check kafkalite broker protocol coordinator storage pipeline schema_registry tests benchmarks timekeeping
echo "== mypy"
mypy
echo "== docker-compose.yml"
bash scripts/check-compose.sh
echo "== pytest"
python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=15 "$@"
