"""The catalogue written once for a batch of changes, each change still announced."""

from __future__ import annotations

import json
from pathlib import Path

from kafkalite.storage.catalog import TopicCatalog


def test_batch_saves_once_at_its_end_and_listeners_hear_each_change(tmp_path: Path) -> None:
    catalog = TopicCatalog(tmp_path)
    heard: list[tuple[str, str]] = []
    catalog.listeners.append(lambda event, info: heard.append((event, info.name)))
    with catalog.batch():
        catalog.create("a", 1)
        catalog.create("b", 2)
        assert not catalog.path.exists()  # not yet written
        assert heard == [("created", "a"), ("created", "b")]
    saved = json.loads(catalog.path.read_text())["topics"]
    assert sorted(t["name"] for t in saved) == ["a", "b"]
    assert sorted(t.name for t in TopicCatalog(tmp_path)) == ["a", "b"]
    catalog.create("c", 1)  # outside a batch: at once
    assert len(json.loads(catalog.path.read_text())["topics"]) == 3
