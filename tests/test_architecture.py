"""The shape of the code, read with ``ast``: objects are composed, not stacked (no project
class built from two or more project classes, no inheritance chain in ``coordinator/``
deeper than two), and request handlers reach the coordinators only through the runtime's
entry points (no handler or admin HTTP module names a core, the timers or the scheduler),
production code does not import the test support, and API keys are named, not numbered."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: kafkalite/ links each top-level package of the repository into the import package.
PACKAGE = ROOT / "kafkalite"


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    #: Classes defined here: name -> base expressions.
    classes: dict[str, list[ast.expr]] = field(default_factory=dict)
    #: Local name -> (module, attribute) for ``from m import a``; (module, "") for modules.
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)


def _package_dirs() -> list[Path]:
    return sorted(p for p in PACKAGE.iterdir() if p.is_dir() and p.is_symlink())


def _modules() -> dict[str, Module]:
    out: dict[str, Module] = {}
    for pkg in _package_dirs():
        base = pkg.resolve()
        for path in sorted(base.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            rel = path.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join(["kafkalite", pkg.name, *parts])
            is_package = path.name == "__init__.py"
            mod = Module(name, path, ast.parse(path.read_text(), str(path)))
            for node in ast.walk(mod.tree):
                if isinstance(node, ast.ClassDef):
                    mod.classes[node.name] = list(node.bases)
                elif isinstance(node, ast.ImportFrom):
                    src = _absolute(name, is_package, node.level, node.module)
                    for a in node.names:
                        mod.imports[a.asname or a.name] = (src, a.name)
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        mod.imports[a.asname or a.name.split(".")[0]] = (
                            a.name if a.asname else a.name.split(".")[0], "")
            out[name] = mod
    return out


def _absolute(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([target] if target else []))


Cls = tuple[str, str]  # (module, class name)


def _resolve(mods: dict[str, Module], module: str, expr: ast.expr, hops: int = 0
             ) -> Cls | None:
    """The project class a base expression names, or None (a library's class)."""
    if hops > 10:
        return None
    if isinstance(expr, ast.Subscript):  # Generic[T], a generic project class[T]
        return _resolve(mods, module, expr.value, hops)
    mod = mods.get(module)
    if mod is None:
        return None
    if isinstance(expr, ast.Name):
        if expr.id in mod.classes:
            return (module, expr.id)
        src = mod.imports.get(expr.id)
        if src is None or src[0] not in mods or not src[1]:
            return None
        return _resolve(mods, src[0], ast.Name(src[1]), hops + 1)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        src = mod.imports.get(expr.value.id)
        if src is None:
            return None
        target = f"{src[0]}.{src[1]}" if src[1] else src[0]
        if target in mods:
            return _resolve(mods, target, ast.Name(expr.attr), hops + 1)
    return None


def _project_bases(mods: dict[str, Module], cls: Cls) -> list[Cls]:
    module, name = cls
    found = (_resolve(mods, module, b) for b in mods[module].classes[name])
    return [b for b in found if b is not None]


def _depth(mods: dict[str, Module], cls: Cls, seen: frozenset[Cls] = frozenset()) -> int:
    if cls in seen:
        return 0
    bases = _project_bases(mods, cls)
    return 1 + max((_depth(mods, b, seen | {cls}) for b in bases), default=0)


def _classes(mods: dict[str, Module]) -> Iterator[Cls]:
    for name, mod in mods.items():
        for cls in mod.classes:
            yield (name, cls)


def test_no_class_is_built_from_two_project_classes() -> None:
    mods = _modules()
    stacked = {f"{m}.{c}": [f"{bm}.{bc}" for bm, bc in bases]
               for m, c in _classes(mods)
               if len(bases := _project_bases(mods, (m, c))) >= 2}
    assert not stacked, f"classes built from several project classes (compose them): {stacked}"


def test_no_inheritance_chain_in_the_coordinators_is_deeper_than_two() -> None:
    mods = _modules()
    deep = {f"{m}.{c}": d for m, c in _classes(mods)
            if m.startswith("kafkalite.coordinator.") and (d := _depth(mods, (m, c))) > 2}
    assert not deep, f"inheritance chains deeper than two in coordinator/: {deep}"


#: What a handler must not name: the coordinators' cores, the timers, the scheduler.
FORBIDDEN_NAMES = {"GroupCoordinatorCore", "TransactionCoordinatorCore", "Timers",
                   "Scheduler"}
FORBIDDEN_ATTRIBUTES = {"core", "timers", "scheduler"}
FORBIDDEN_MODULES = ("kafkalite.coordinator.core", "kafkalite.timekeeping.timers",
                     "kafkalite.timekeeping.scheduler", "kafkalite.coordinator.timers",
                     "kafkalite.coordinator.scheduler")


def _handler_modules(mods: dict[str, Module]) -> list[Module]:
    """Every module in a ``handlers`` package of the broker, wherever it lives."""
    return [m for name, m in mods.items()
            if name.startswith("kafkalite.broker.") and ".handlers." in f"{name}."
            and "handlers" in name.split(".")]


def _offences(mod: Module) -> list[str]:
    found = []
    for node in ast.walk(mod.tree):
        where = f"{mod.path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            found.append(f"{where} names {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            found.append(f"{where} reaches .{node.attr}")
        elif isinstance(node, ast.alias) and node.name in FORBIDDEN_NAMES:
            found.append(f"{where} imports {node.name}")
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                a.name for a in node.names]
            found += [f"{where} imports {n}" for n in names
                      if n.startswith(FORBIDDEN_MODULES) or n.endswith(
                          (".coordinator.core", ".timers", ".scheduler"))]
    return found


def test_handlers_reach_the_coordinators_only_through_the_runtime() -> None:
    mods = _modules()
    handlers = _handler_modules(mods)
    assert len(handlers) > 10, "the request handlers were not found"
    offences = [o for m in handlers for o in _offences(m)]
    assert not offences, "handler modules that name a core, the timers or the scheduler:\n" \
        + "\n".join(offences)


def test_the_admin_views_reach_the_coordinators_only_through_the_runtime() -> None:
    """The admin API and console read groups as the handlers do (the runtime's query)."""
    mods = _modules()
    admin = [m for name, m in mods.items() if name.startswith("kafkalite.broker.admin_http.")]
    assert len(admin) >= 4, "the admin HTTP modules were not found"
    offences = [o for m in admin for o in _offences(m)]
    assert not offences, "admin HTTP modules that name a core, the timers or the scheduler:\n" \
        + "\n".join(offences)


def _imported(mod: Module) -> Iterator[str]:
    """Every module or ``module.name`` an import statement of ``mod`` names, absolute."""
    package = mod.path.name == "__init__.py"
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.ImportFrom):
            src = _absolute(mod.name, package, node.level, node.module)
            yield src
            yield from (f"{src}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


TEST_SUPPORT = "kafkalite.broker.testing"


def test_production_code_does_not_import_the_test_support() -> None:
    """``broker/testing`` holds the fixtures and the pytest plugin; what the broker serves
    (fault rules, scenarios, clock control) lives in ``broker/control``."""
    mods = _modules()
    offences = sorted({f"{mod.path.relative_to(ROOT)} imports {name}"
                       for mod_name, mod in mods.items()
                       if not (mod_name + ".").startswith(TEST_SUPPORT + ".")
                       for name in _imported(mod)
                       if (name + ".").startswith(TEST_SUPPORT + ".")})
    assert not offences, "production code importing the test support:\n" + "\n".join(offences)


#: The KIP-848 consumer group's parts, lowest first: each may import only those before it.
CONSUMER_PARTS = ("conversion", "lifecycle", "membership", "migration")


def test_the_consumer_group_parts_import_one_way() -> None:
    """``consumer.conversion`` <- ``consumer.lifecycle`` <- ``consumer.membership`` <-
    ``consumer.migration``: no part imports one above it (type-checking imports too), so
    none needs a back-pointer set after it is built."""
    mods = _modules()
    prefix = "kafkalite.coordinator.consumer."
    offences = []
    for rank, part in enumerate(CONSUMER_PARTS):
        mod = mods[prefix + part]
        above = {prefix + p for p in CONSUMER_PARTS[rank + 1:]}
        offences += [f"{mod.name} imports {n}" for n in _imported(mod)
                     if n in above or any(n.startswith(a + ".") for a in above)]
    assert not offences, "\n".join(offences)


def _constant_assignments(tree: ast.Module) -> Iterator[tuple[int, str, object]]:
    """(line, name, value) of every name given a literal, one by one or in a tuple
    (``A, B = 1, 2``), at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs = [(node.target, node.value)]
        else:
            continue
        while pairs:
            target, value = pairs.pop()
            if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
                pairs += zip(target.elts, value.elts, strict=False)
            elif isinstance(target, ast.Name) and isinstance(value, ast.Constant):
                yield node.lineno, target.id, value.value


def test_api_keys_are_spelled_only_in_the_generated_enum() -> None:
    """Production code names an API by ``ApiKey``, never by its number."""
    from kafkalite.protocol.api_keys import ApiKey

    keys = {k.name: k.value for k in ApiKey}
    mods = _modules()
    raw = [f"{mod.path.relative_to(ROOT)}:{line} {name} = {value}; use ApiKey.{key}"
           for mod in mods.values() if mod.path.name != "api_keys.py"
           for line, name, value in _constant_assignments(mod.tree)
           if (key := name.lstrip("_")) in keys and keys[key] == value]
    assert not raw, "API keys spelled as numbers:\n" + "\n".join(raw)


def test_no_error_has_one_spelling() -> None:
    """``NO_ERROR``, not ``ErrorCode.none`` (defined once, in ``protocol/errors.py``)."""
    mods = _modules()
    found = [f"{mod.path.relative_to(ROOT)}:{node.lineno}"
             for name, mod in mods.items() if name != "kafkalite.protocol.errors"
             for node in ast.walk(mod.tree)
             if isinstance(node, ast.Attribute) and node.attr == "none"
             and isinstance(node.value, ast.Name) and node.value.id in ("ErrorCode", "E")]
    assert not found, "ErrorCode.none spelled out (use NO_ERROR):\n" + "\n".join(found)
