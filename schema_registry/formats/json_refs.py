"""JSON Schema ``$ref`` resolution for the compatibility check: a schema is expanded with
its local definitions (``#/definitions/...``, ``#/$defs/...``) and the schemas of its
references (by reference name or ``$id``) put in place, as Confluent's diff follows a
``ReferenceSchema`` to the schema it refers to. A reference met again inside itself
(a recursive schema) becomes a cycle marker the diff treats as already compared."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from . import Resolved

#: Marks a ``$ref`` cut because it refers to a schema being expanded already.
CYCLE = "$kafkalite-cycle"
#: Keys whose values are data or definitions, not schemas to expand.
_DATA = frozenset({"enum", "const", "default", "examples", "required", "definitions",
                   "$defs"})
_MAX_NODES = 20_000
_MAX_DEPTH = 64


def _documents(refs: tuple[Resolved, ...], out: dict[str, Any]) -> dict[str, Any]:
    for ref in refs:
        try:
            doc = json.loads(ref.text)
        except ValueError:
            continue
        out.setdefault(ref.name, doc)
        if isinstance(doc, dict) and isinstance(doc.get("$id"), str):
            out.setdefault(doc["$id"], doc)
        _documents(ref.refs, out)
    return out


class _Expander:
    def __init__(self, root: Any, refs: tuple[Resolved, ...]) -> None:
        self.root = root
        self.docs = _documents(refs, {})
        self.nodes = 0
        self.stack: list[tuple[int, str]] = []

    def document(self, base: str, current: Any) -> Any:
        if not base:
            return current
        for key in (base, base.rsplit("/", 1)[-1]):
            if key in self.docs:
                return self.docs[key]
        for doc in (self.root, current):
            if isinstance(doc, dict) and doc.get("$id") in (base, base.rsplit("/", 1)[-1]):
                return doc
        return None

    def target(self, ref: str, current: Any) -> tuple[Any, Any] | None:
        base, _, fragment = ref.partition("#")
        doc = self.document(base, current)
        if doc is None:
            return None
        node = doc
        if fragment:
            if not fragment.startswith("/"):
                return None
            for part in fragment[1:].split("/"):
                part = unquote(part).replace("~1", "/").replace("~0", "~")
                if isinstance(node, dict) and part in node:
                    node = node[part]
                elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                else:
                    return None
        return node, doc

    def expand(self, node: Any, current: Any) -> Any:
        self.nodes += 1
        if self.nodes > _MAX_NODES:
            return node
        if isinstance(node, list):
            return [self.expand(v, current) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and len(self.stack) < _MAX_DEPTH:
            found = self.target(ref, current)
            if found is not None:
                target, doc = found
                key = (id(doc), ref)
                if key in self.stack:
                    return {CYCLE: ref}
                self.stack.append(key)
                try:
                    expanded = self.expand(target, doc)
                finally:
                    self.stack.pop()
                if not isinstance(expanded, dict):
                    return expanded
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                return {**self.expand(siblings, current), **expanded}
        return {k: (v if k in _DATA else self.expand(v, current)) for k, v in node.items()}


def expand(schema: Any, refs: tuple[Resolved, ...], text: str) -> Any:
    """``schema`` with its resolvable ``$ref`` put in place (unchanged when it has none)."""
    if "$ref" not in text:
        return schema
    return _Expander(schema, refs).expand(schema, schema)
