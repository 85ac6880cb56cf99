"""The test tree itself: every test module has a name of its own, so a name given in a
report, a -k filter or a file search finds one module, and every test folder is described
in tests/README.md's table."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_module_names_are_unique() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if "node_modules" in path.parts:
            continue
        seen[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: sorted(paths) for name, paths in seen.items() if len(paths) > 1}
    assert not shared, f"test modules sharing a name (rename one to say what it tests): {shared}"


def test_readme_covers_every_folder() -> None:
    readme = (TESTS / "README.md").read_text()
    folders = sorted(
        p.name for p in TESTS.iterdir()
        if p.is_dir() and not p.name.startswith((".", "_")) and any(p.rglob("*.py"))
    )
    rows = {line.split("|")[1].strip() for line in readme.splitlines() if line.startswith("| `")}
    missing = [name for name in folders if f"`tests/{name}`" not in rows]
    assert not missing, f"tests/README.md does not describe: {missing}"
