"""ACLs kept in ``<data dir>/__acls.json``, rewritten atomically on every change.

Kafka keeps ACLs in its metadata log; here a file is enough for one node. ``version``
rises on every change, and ``listeners`` are called (the authorizer drops its index and
cached decisions).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from kafkalite.storage.fsutil import atomic_write

from .acl import AclBinding, AclFilter

FILE_NAME = "__acls.json"


class AclStore:
    def __init__(self, data_dir: Path | None) -> None:
        self.path = data_dir / FILE_NAME if data_dir is not None else None
        self._acls: dict[AclBinding, None] = {}  # insertion ordered
        self.version = 0
        self.listeners: list[Callable[[], None]] = []
        if self.path is not None and self.path.exists():
            for row in json.loads(self.path.read_text()).get("acls", []):
                self._acls[AclBinding.from_json(row)] = None

    def all(self) -> list[AclBinding]:
        return list(self._acls)

    def __len__(self) -> int:
        return len(self._acls)

    def _changed(self) -> None:
        self.version += 1
        for listener in self.listeners:
            listener()
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            data = {"version": 1, "acls": [b.to_json() for b in self._acls]}
            atomic_write(self.path, json.dumps(data, indent=0).encode())

    def add(self, bindings: Iterable[AclBinding]) -> None:
        changed = False
        for b in bindings:
            if b not in self._acls:
                self._acls[b] = None
                changed = True
        if changed:
            self._changed()

    def matching(self, f: AclFilter) -> list[AclBinding]:
        return [b for b in self._acls if f.matches(b)]

    def delete(self, filters: Iterable[AclFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches; per filter, the bindings it removed."""
        out: list[list[AclBinding]] = []
        removed: set[AclBinding] = set()
        for f in filters:
            hit = [b for b in self._acls if f.matches(b)]
            out.append(hit)
            removed.update(hit)
        if removed:
            for b in removed:
                self._acls.pop(b, None)
            self._changed()
        return out
