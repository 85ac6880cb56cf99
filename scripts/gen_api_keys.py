"""Write protocol/api_keys.py from kio's table of API keys (Kafka's message schemas) and
the APIs generated beside it (protocol/generated, scripts/generate_codecs.py):
``python scripts/gen_api_keys.py``. tests/protocol/test_api_keys.py fails when the file
and kio's table differ."""

from __future__ import annotations

from pathlib import Path

from kio.schema.index import api_key_map

from kafkalite.protocol.generated import API_NAMES as GENERATED

TARGET = Path(__file__).resolve().parent.parent / "protocol" / "api_keys.py"

HEADER = '''"""Kafka's API keys, one enum for the whole code base.

Generated from kio's table (``kio.schema.index.api_key_map``, itself generated from
Kafka's message schemas) and the APIs of ``protocol/generated`` by
``scripts/gen_api_keys.py``; a test checks it against those tables. Do not edit by hand.
"""

from enum import IntEnum


class ApiKey(IntEnum):
'''


def render() -> str:
    keys = {**api_key_map, **GENERATED}
    lines = [f"    {name.upper()} = {key}\n" for key, name in sorted(keys.items())]
    return HEADER + "".join(lines)


if __name__ == "__main__":
    TARGET.write_text(render())
