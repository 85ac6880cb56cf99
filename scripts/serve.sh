#!/usr/bin/env bash
# Install kafkalite into .venv (once) and run the broker on 127.0.0.1:9092 with data in
# ./kafkalite-data. Extra arguments go to `kafkalite serve` (e.g. --listen 0.0.0.0:9092).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/kafkalite ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e .
fi
exec .venv/bin/kafkalite serve "$@"
