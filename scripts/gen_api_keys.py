"""Write protocol/api_keys.py from kio's table of API keys (Kafka's message schemas):
``python scripts/gen_api_keys.py``. tests/protocol/test_api_keys.py fails when the file
and kio's table differ."""

from __future__ import annotations

from pathlib import Path

from kio.schema.index import api_key_map

TARGET = Path(__file__).resolve().parent.parent / "protocol" / "api_keys.py"

HEADER = '''"""Kafka's API keys, one enum for the whole code base.

Generated from kio's table (``kio.schema.index.api_key_map``, itself generated from
Kafka's message schemas) by ``scripts/gen_api_keys.py``; a test checks it against that
table. Do not edit by hand.
"""

from enum import IntEnum


class ApiKey(IntEnum):
'''


def render() -> str:
    lines = [f"    {name.upper()} = {key}\n" for key, name in sorted(api_key_map.items())]
    return HEADER + "".join(lines)


if __name__ == "__main__":
    TARGET.write_text(render())
