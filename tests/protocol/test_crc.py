"""The CRC-32C loaded from the ``crc32c`` package's extension module alone."""

from __future__ import annotations

import subprocess
import sys

import crc32c as package

from kafkalite.protocol.crc import crc32c


def test_check_value_and_buffers_match_the_package() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)
    data = bytes(range(256)) * 33
    for buf in (data, bytearray(data), memoryview(data)[7:4000]):
        assert crc32c(buf) == package.crc32c(buf)
    assert crc32c(data[100:], crc32c(data[:100])) == crc32c(data)


def test_loading_it_does_not_import_the_package() -> None:
    """The package's __init__ imports importlib.metadata (start-up time); the broker's
    import of the protocol layer must not (hypothesis, which kio imports when present and
    ``kafkalite serve`` keeps out, imports it too)."""
    code = ("import sys; sys.modules['hypothesis'] = None; import kafkalite.protocol.records; "
            "print('crc32c' in sys.modules, 'importlib.metadata' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
