"""The shape of the packages: no import cycle between the top-level packages, a broker
package with a short top level, and no blocking I/O in the sans-I/O protocol package."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_LEVEL = sorted(p.name for p in (ROOT / "kafkalite").iterdir() if p.is_symlink())


def _imports(path: Path, package: list[str]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                found.add(".".join(base + ([node.module] if node.module else [])))
            else:
                found.add(node.module or "")
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in TOP_LEVEL}
    for top in TOP_LEVEL:
        for path in (ROOT / top).rglob("*.py"):
            parts = ["kafkalite", *path.relative_to(ROOT).with_suffix("").parts]
            package = parts[:-1]
            for module in _imports(path, package):
                names = module.split(".")
                if names[0] == "kafkalite" and len(names) > 1 and names[1] in graph:
                    if names[1] != top:
                        graph[top].add(names[1])
    return graph


def test_top_level_packages_import_each_other_without_a_cycle() -> None:
    graph = _package_graph()
    assert {"broker", "protocol", "storage"} <= graph.keys()
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        assert name not in path, "import cycle: " + " -> ".join([*path, name])
        if name in done:
            return
        for nxt in sorted(graph[name]):
            visit(nxt, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_the_broker_package_keeps_at_most_fifteen_modules_at_its_top_level() -> None:
    modules = sorted(p.name for p in (ROOT / "broker").glob("*.py"))
    assert len(modules) <= 15, modules


def test_the_protocol_package_opens_no_sockets() -> None:
    for path in (ROOT / "protocol").rglob("*.py"):
        imported = _imports(path, ["kafkalite", "protocol"])
        assert not imported & {"socket", "selectors", "asyncio"}, path

