"""Confluent's ``ProtobufSchemaDiff`` rules over the model ``protobuf_format`` builds.
``diff(original, update)`` lists the incompatible differences, each named by the
protobuf-provider ``Difference.Type`` it mirrors. Changes Confluent counts as compatible
(MESSAGE_ADDED, ENUM_ADDED/REMOVED, ENUM_CONST_ADDED/CHANGED/REMOVED, FIELD_ADDED/REMOVED,
FIELD_NAME_CHANGED, FIELD_STRING_OR_BYTES_LABEL_CHANGED, ONEOF_ADDED/REMOVED,
ONEOF_FIELD_ADDED) are not reported."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from . import Resolved
from .protobuf_format import SCALARS, FieldInfo, ProtoModel

#: Scalar kinds Confluent treats as wire-compatible with each other; an enum is read as
#: a general number.
_KIND = {"int32": "number", "int64": "number", "uint32": "number", "uint64": "number",
         "bool": "number", "sint32": "signed", "sint64": "signed", "string": "text",
         "bytes": "text", "fixed32": "fixed32", "sfixed32": "fixed32", "fixed64": "fixed64",
         "sfixed64": "fixed64", "float": "float", "double": "double"}


def _issue(out: list[str], kind: str, path: str) -> None:
    out.append(f"{{errorType:'{kind}', description:'The new schema is incompatible with the "
               f"old schema at path '{path}''}}")


@dataclass(frozen=True, slots=True)
class _Found:
    kind: str  # "enum" or "message"
    local: str  # the full name without the package
    model: ProtoModel  # the schema (this one or an imported one) defining it


class _Types:
    """Resolves type names as written: to the schema's own types first (package-qualified
    names and protobuf's scoping, innermost enclosing message first), then to the types of
    the schemas it imports (its references)."""

    def __init__(self, model: ProtoModel, imports: list[ProtoModel]) -> None:
        self.model = model
        self.imports = imports

    def resolve(self, name: str, scope: str) -> _Found | None:
        pkg = self.model.package
        if name.startswith("."):
            full = name[1:]
            candidates = [full[len(pkg) + 1:]] if pkg and full.startswith(pkg + ".") else \
                ([] if pkg else [full])
        else:
            parts = scope.split(".") if scope else []
            candidates = [".".join([*parts[:i], name]) for i in range(len(parts), -1, -1)]
            if pkg and name.startswith(pkg + "."):
                candidates.append(name[len(pkg) + 1:])
        for local in candidates:
            found = _lookup(self.model, local)
            if found is not None:
                return found
        if name.startswith("."):
            fulls = [name[1:]]
        else:
            prefix = [*(pkg.split(".") if pkg else []), *(scope.split(".") if scope else [])]
            fulls = [".".join([*prefix[:i], name]) for i in range(len(prefix), -1, -1)]
        for full in fulls:
            for model in self.imports:
                p = model.package
                if not p or full.startswith(p + "."):
                    found = _lookup(model, full[len(p) + 1:] if p else full)
                    if found is not None:
                        return found
        return None


def _lookup(model: ProtoModel, local: str) -> _Found | None:
    if local in model.messages:
        return _Found("message", local, model)
    if local in model.enums:
        return _Found("enum", local, model)
    return None


def imported(refs: tuple[Resolved, ...], out: list[ProtoModel] | None = None
             ) -> list[ProtoModel]:
    """The models of a schema's references (and theirs), skipping any that do not parse."""
    from .protobuf_format import from_descriptor, from_text, looks_serialized

    out = [] if out is None else out
    for ref in refs:
        try:
            if looks_serialized(ref.text):
                out.append(from_descriptor(base64.b64decode(ref.text.strip())))
            else:
                out.append(from_text(ref.text))
        except (ValueError, TypeError, AttributeError, KeyError):
            pass
        imported(ref.refs, out)
    return out


def _split_map(t: str) -> tuple[str, str]:
    key, _, value = t[4:-1].partition(",")
    return key.strip(), value.strip()


class _Diff:
    def __init__(self, old: _Types, new: _Types, seen: set[tuple[int, int, str]]) -> None:
        self.old, self.new = old, new
        self.seen = seen  # imported types compared already (or being compared)
        self.out: list[str] = []

    def kind(self, t: str, scope: str, types: _Types) -> str:
        if t in SCALARS:
            return "scalar"
        if t.startswith("map<"):
            return "map"
        found = types.resolve(t, scope)
        return "scalar" if found is not None and found.kind == "enum" else "message"

    @staticmethod
    def scalar_kind(t: str) -> str:
        return _KIND.get(t, "number")  # an enum

    def types(self, a: str, b: str, la: str, lb: str, sa: str, sb: str, where: str) -> None:
        """FieldSchemaDiff: kind (scalar, message, map), scalar group, named type (by its
        package-local full name) and, for scalars, the repeated/singular label."""
        ka, kb = self.kind(a, sa, self.old), self.kind(b, sb, self.new)
        if ka != kb:
            _issue(self.out, "FIELD_KIND_CHANGED", where)
        elif ka == "scalar":
            group = self.scalar_kind(a)
            if group != self.scalar_kind(b):
                _issue(self.out, "FIELD_SCALAR_KIND_CHANGED", where)
            elif la and lb and la != lb and group != "text":
                _issue(self.out, "FIELD_NUMERIC_LABEL_CHANGED", where)
        elif ka == "message":
            ra, rb = self.old.resolve(a, sa), self.new.resolve(b, sb)
            if ra is None or rb is None:
                if a.lstrip(".") != b.lstrip("."):
                    _issue(self.out, "FIELD_NAMED_TYPE_CHANGED", where)
            elif ra.local != rb.local:
                _issue(self.out, "FIELD_NAMED_TYPE_CHANGED", where)
            elif ra.model is not self.old.model or rb.model is not self.new.model:
                self.imported_message(ra, rb, where)
        else:
            (ka_, va), (kb_, vb) = _split_map(a), _split_map(b)
            self.types(ka_, kb_, "", "", sa, sb, where)
            self.types(va, vb, "", "", sa, sb, where)

    def imported_message(self, ra: _Found, rb: _Found, where: str) -> None:
        """A message from a reference: diffed like one of the schema's own (Confluent
        diffs the referenced message unless both sides use the same subject version)."""
        key = (id(ra.model), id(rb.model), ra.local)
        if key in self.seen:
            return
        self.seen.add(key)

        def types(t: _Types, model: ProtoModel) -> _Types:
            return _Types(model, [m for m in [t.model, *t.imports] if m is not model])

        sub = _Diff(types(self.old, ra.model), types(self.new, rb.model), self.seen)
        sub.message(ra.local, ra.model.messages[ra.local], rb.model.messages[rb.local])
        if sub.out:
            self.out += sub.out
            _issue(self.out, "FIELD_NAMED_TYPE_CHANGED", where)

    def field(self, f: FieldInfo, g: FieldInfo, where: str) -> None:
        self.types(f.type, g.type, f.label, g.label, f.scope, g.scope, where)

    def message(self, name: str, old: dict[int, FieldInfo], new: dict[int, FieldInfo]) -> None:
        """MessageSchemaDiff: oneof moves, oneof fields, top-level fields by tag, then the
        fields whose oneof membership changed."""
        old_top = {n: f for n, f in old.items() if f.oneof is None}
        new_top = {n: f for n, f in new.items() if f.oneof is None}
        old_oneof_tags = {n for n, f in old.items() if f.oneof is not None}
        new_oneofs: dict[str, list[int]] = {}
        for n, info in new.items():
            if info.oneof is not None:
                new_oneofs.setdefault(info.oneof, []).append(n)
        old_oneofs = {f.oneof for f in old.values() if f.oneof is not None}
        moved_in: set[int] = set()
        for oneof, tags in new_oneofs.items():
            moved = [n for n in tags if n in old_top]
            existing = [n for n in tags if n in old_oneof_tags]
            moved_in.update(moved)
            if len(moved) > 1:
                _issue(self.out, "MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"#/{name}/{oneof}")
            elif len(moved) == 1 and existing:
                _issue(self.out, "FIELD_MOVED_TO_EXISTING_ONEOF", f"#/{name}/{oneof}")
        for oneof in sorted(old_oneofs & set(new_oneofs)):
            for n in sorted(t for t, info in old.items() if info.oneof == oneof):
                if n not in new:
                    _issue(self.out, "ONEOF_FIELD_REMOVED", f"#/{name}/{oneof}/{n}")
                elif new[n].oneof == oneof:
                    self.field(old[n], new[n], f"#/{name}/{oneof}/{n}")
        for n in sorted(set(old_top) | set(new_top)):
            where = f"#/{name}/{n}"
            was, now = old_top.get(n), new_top.get(n)
            if now is None and was is not None and n not in moved_in:
                if was.label == "required":
                    _issue(self.out, "REQUIRED_FIELD_REMOVED", where)
            elif was is None and now is not None:
                if now.label == "required":
                    _issue(self.out, "REQUIRED_FIELD_ADDED", where)
            elif was is not None and now is not None:
                self.field(was, now, where)
        for n in sorted(set(old) & set(new)):
            if old[n].oneof != new[n].oneof:
                self.field(old[n], new[n], f"#/{name}/{n}")


def diff(original: ProtoModel, update: ProtoModel, original_imports: tuple[ProtoModel, ...] = (),
         update_imports: tuple[ProtoModel, ...] = ()) -> list[str]:
    """The changes from ``original`` to ``update`` Confluent counts as incompatible;
    ``*_imports`` are the models of each side's references."""
    d = _Diff(_Types(original, list(original_imports)), _Types(update, list(update_imports)),
              set())
    if original.package != update.package:
        _issue(d.out, "PACKAGE_CHANGED", "#/")
    for name, fields in original.messages.items():
        new = update.messages.get(name)
        if new is None:
            _issue(d.out, "MESSAGE_REMOVED", f"#/{name}")
        else:
            d.message(name, fields, new)
    return d.out
