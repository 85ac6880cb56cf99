#!/usr/bin/env bash
# Install kafkalite (and the client the README's quick start uses) into .venv, then run the
# broker on 127.0.0.1:9092 with data in ./kafkalite-data. Extra arguments go to
# `kafkalite serve` (e.g. --listen 0.0.0.0:9092).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
. scripts/steps.sh
if [ ! -x .venv/bin/python ]; then
  step "create a virtualenv with $PY" "$PY" -m venv .venv
  step "upgrade pip from PyPI" .venv/bin/pip install -q --upgrade pip
fi
# Also reinstall a .venv made before the quick start's client was part of the install.
if ! .venv/bin/python -I -c 'import kafkalite, confluent_kafka' 2>/dev/null \
    || [ ! -x .venv/bin/kafkalite ]; then
  step "install kafkalite and confluent-kafka from PyPI" .venv/bin/pip install -q -e ".[quickstart]"
fi
exec .venv/bin/kafkalite serve "$@"
