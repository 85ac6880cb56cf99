"""protocol/api_keys.py is kio's table of API keys and the generated APIs', as
scripts/gen_api_keys.py writes it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kio.schema.index import api_key_map

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.generated import API_NAMES as GENERATED

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gen_api_keys.py"


def test_the_enum_is_kios_table() -> None:
    assert {k.value: k.name.lower() for k in ApiKey} == {**api_key_map, **GENERATED}


def test_the_file_is_what_the_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location("gen_api_keys", SCRIPT)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.TARGET.read_text() == gen.render()
