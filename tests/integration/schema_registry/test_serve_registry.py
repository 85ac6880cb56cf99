"""``kafkalite serve --schema-registry`` end to end: the flag, a bad value stopping the
broker with one line, and nothing of the registry loaded when it is off."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

from kafkalite.broker.testing import BrokerProcess


def test_serve_with_the_flag(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data",
                       extra_args=["--schema-registry", "127.0.0.1:0"]) as proc:
        url = proc.schema_registry_url
        assert url is not None and url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "/schemas/types", timeout=10) as r:
            assert r.headers["Content-Type"].startswith(
                "application/vnd.schemaregistry.v1+json")
            assert json.loads(r.read()) == ["JSON", "PROTOBUF", "AVRO"]


def test_bad_listener_is_a_configuration_error(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kafkalite", "serve", "--data-dir", str(tmp_path / "d"),
         "--schema-registry", "nowhere"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "configuration error: schema.registry.listener must be HOST:PORT, got 'nowhere'"]


def test_nothing_loaded_when_off(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from kafkalite.broker.config.properties import Config\n"
        "from kafkalite.broker.compose import build_broker\n"
        f"build_broker(Config.build(environ={{}}, overrides={{'log.dirs': {str(tmp_path)!r}}}))\n"
        "loaded = [m for m in sys.modules if m.startswith(('kafkalite.schema_registry', "
        "'avro', 'jsonschema', 'proto_schema_parser'))]\n"
        "print(loaded)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "[]"
