"""Confluent's ``ProtobufSchemaDiff`` rules over the model ``protobuf_format`` builds.
``diff(original, update)`` lists the incompatible differences, each named by the
protobuf-provider ``Difference.Type`` it mirrors. Changes Confluent counts as compatible
(MESSAGE_ADDED, ENUM_ADDED/REMOVED, ENUM_CONST_ADDED/CHANGED/REMOVED, FIELD_ADDED/REMOVED,
FIELD_NAME_CHANGED, FIELD_STRING_OR_BYTES_LABEL_CHANGED, ONEOF_ADDED/REMOVED,
ONEOF_FIELD_ADDED) are not reported."""

from __future__ import annotations

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


class _Types:
    """Resolves type names as written to the schema's own types, package-qualified
    names and protobuf's scoping (innermost enclosing message first)."""

    def __init__(self, model: ProtoModel) -> None:
        self.model = model

    def resolve(self, name: str, scope: str) -> tuple[str, str] | None:
        """("enum" or "message", the name without the package), or None for a type not
        defined in this schema (an import)."""
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
            if local in self.model.messages:
                return "message", local
            if local in self.model.enums:
                return "enum", local
        return None


def _split_map(t: str) -> tuple[str, str]:
    key, _, value = t[4:-1].partition(",")
    return key.strip(), value.strip()


class _Diff:
    def __init__(self, original: ProtoModel, update: ProtoModel) -> None:
        self.old, self.new = _Types(original), _Types(update)
        self.out: list[str] = []

    def kind(self, t: str, scope: str, types: _Types) -> str:
        if t in SCALARS:
            return "scalar"
        if t.startswith("map<"):
            return "map"
        found = types.resolve(t, scope)
        return "scalar" if found is not None and found[0] == "enum" else "message"

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
            same = ra[1] == rb[1] if ra is not None and rb is not None else \
                a.lstrip(".") == b.lstrip(".")
            if not same:
                _issue(self.out, "FIELD_NAMED_TYPE_CHANGED", where)
        else:
            (ka_, va), (kb_, vb) = _split_map(a), _split_map(b)
            self.types(ka_, kb_, "", "", sa, sb, where)
            self.types(va, vb, "", "", sa, sb, where)

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


def diff(original: ProtoModel, update: ProtoModel) -> list[str]:
    """The changes from ``original`` to ``update`` Confluent counts as incompatible."""
    d = _Diff(original, update)
    if original.package != update.package:
        _issue(d.out, "PACKAGE_CHANGED", "#/")
    for name, fields in original.messages.items():
        new = update.messages.get(name)
        if new is None:
            _issue(d.out, "MESSAGE_REMOVED", f"#/{name}")
        else:
            d.message(name, fields, new)
    return d.out
