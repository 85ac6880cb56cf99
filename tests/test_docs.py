"""The documentation against the tree: every module, file or folder path that README.md and
docs/*.md name exists, every ``kafkalite.*`` import path resolves, every link to a section
finds its heading, and the README stays short enough to scan (the details live in docs/)."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 260
PACKAGES = ("broker", "client", "coordinator", "pipeline", "protocol", "schema_registry",
            "storage", "timekeeping")
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache"}

# A path: folders joined by "/" (optionally ending in a file or "/"), or a bare *.py name.
# Not preceded by a character that would make it part of a URL or a longer path.
PATH = re.compile(r"(?<![\w./:@<>-])((?:[A-Za-z_][\w-]*/)+[\w.*-]*|[A-Za-z_]\w*\.py)\b/?")
IMPORT = re.compile(r"(?<![\w.])kafkalite((?:\.\w+)+)")
HEADING = re.compile(r"^#+ (.+)$", re.M)
SECTION_LINK = re.compile(r"\]\(([\w./-]*)#([\w-]+)\)")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@cache
def tree() -> tuple[frozenset[str], frozenset[str]]:
    """Every file and folder of the repository, as paths relative to its root (the links in
    kafkalite/ are not followed: each file once, under its folder)."""
    files: set[str] = set()
    folders: set[str] = set()
    for top, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        rel = Path(top).relative_to(ROOT)
        folders.update((rel / d).as_posix() for d in dirs)
        files.update((rel / n).as_posix() for n in names)
    return frozenset(files), frozenset(folders)


def path_exists(name: str) -> bool:
    files, folders = tree()
    name = name.rstrip("/")
    if "*" in name:
        return name.split("*", 1)[0].rstrip("/") in folders
    if name in files or name in folders or (ROOT / name).exists():
        return True
    if "/" not in name:
        return any(f.rsplit("/", 1)[-1] == name for f in files)
    # A path given relative to the folder the text is about (`share/membership.py` in the
    # coordinator's section): it must be the end of a real path.
    return any(p.endswith("/" + name) for p in files | folders)


def current(text: str, match: re.Match[str]) -> bool:
    """False for a name the text gives as a former one ("(was `kafkalite.protocol.client`)")."""
    return re.search(r"\bwas\s+`?$", text[max(0, match.start() - 8):match.start()]) is None


def named_paths(text: str) -> set[str]:
    top = {p.name for p in ROOT.iterdir() if p.is_dir() and p.name not in SKIP_DIRS}
    found = set()
    for match in PATH.finditer(text):
        name = match.group(1)
        if current(text, match) and (
                name.endswith(".py") or ("/" in name and name.split("/", 1)[0] in top)):
            found.add(name)
    return found


def imports(text: str) -> set[str]:
    return {m.group(1) for m in IMPORT.finditer(text) if current(text, m)}


def defines(module: Path, name: str) -> bool:
    return module.is_file() and re.search(rf"\b{name}\b", module.read_text()) is not None


def import_resolves(dotted: str) -> bool:
    """``kafkalite.broker.cli.healthcheck`` is broker/cli/healthcheck.py; what follows the
    last module (``source.register``) must be a name that module defines or imports."""
    parts = dotted.strip(".").split(".")
    if not parts or parts[0] not in PACKAGES:
        return True  # a property such as kafkalite.nodes, not an import path
    here = ROOT
    for i, part in enumerate(parts):
        if (here / part).is_dir():
            here = here / part
        elif (here / f"{part}.py").is_file():
            rest = parts[i + 1:]
            return not rest or defines(here / f"{part}.py", rest[0])
        else:
            return defines(here / "__init__.py", part)
    return True


def anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {anchor(h) for h in HEADING.findall(page.read_text())}


def test_every_named_path_exists() -> None:
    missing = [
        f"{doc.relative_to(ROOT)}: {name}"
        for doc in documents()
        for name in sorted(named_paths(doc.read_text()))
        if not path_exists(name)
    ]
    assert not missing, "paths named in the docs that are not in the tree:\n" + "\n".join(missing)


def test_every_kafkalite_import_path_resolves() -> None:
    broken = [
        f"{doc.relative_to(ROOT)}: kafkalite{dotted}"
        for doc in documents()
        for dotted in sorted(imports(doc.read_text()))
        if not import_resolves(dotted)
    ]
    assert not broken, "import paths named in the docs that do not resolve:\n" + "\n".join(broken)


def test_every_link_to_a_section_resolves() -> None:
    broken = []
    for doc in documents():
        for target, section in SECTION_LINK.findall(doc.read_text()):
            page = doc.parent / target if target else doc
            if not page.is_file() or section not in anchors(page):
                broken.append(f"{doc.relative_to(ROOT)}: {target}#{section}")
    assert not broken, "links to sections that do not exist:\n" + "\n".join(broken)


def test_the_checks_catch_what_they_are_for() -> None:
    assert not path_exists("coordinator/consumer_migration.py")
    assert not path_exists("consumer_admin.py")
    assert path_exists("coordinator/consumer/migration.py")
    assert path_exists("share/membership.py")
    text = "see `storage/log.py`, s3://bucket/storage/x and https://a/b.py"
    assert named_paths(text) == {"storage/log.py"}
    assert not import_resolves(".broker.nothing_here.fixtures")
    assert import_resolves(".broker.cli.healthcheck")
    moved = "now `kafkalite.client.kafka` (was `kafkalite.protocol.client`)"
    assert imports(moved) == {".client.kafka"}
    heading = "Release emulation (`kafkalite.as.version`)"
    assert anchor(heading) == "release-emulation-kafkaliteasversion"


def test_readme_stays_short() -> None:
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move details into docs/")
