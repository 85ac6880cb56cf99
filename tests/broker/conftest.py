from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .harness import Handlers


@pytest.fixture
async def handlers(tmp_path: Path) -> AsyncIterator[Handlers]:
    h = Handlers(tmp_path / "data")
    await h.open()
    yield h
    await h.close()
