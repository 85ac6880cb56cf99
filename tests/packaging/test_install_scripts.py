"""The README's install steps on a machine where nothing of the project's is cached yet:
``scripts/kafka-jars.sh`` with an empty HOME and no XDG_CACHE_HOME resolves Kafka's jars
into a cache it makes itself, and a second run only prints that folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "kafka-jars.sh"


def _env(home: Path, path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_CACHE_HOME", "KAFKALITE_JARS", "KAFKALITE_KAFKA_JARS_DIR")}
    # Maven's own local repository is a system-wide package cache (the issue of a missing
    # step is the project's cache folder, not Maven's): the real one is used, not HOME's.
    m2 = Path(os.environ.get("HOME", "/root")) / ".m2" / "repository"
    env.update(HOME=str(home), PATH=path, MAVEN_OPTS=f"-Dmaven.repo.local={m2}")
    return env


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=900, check=False)


def test_kafka_jars_with_an_empty_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    first = _run(_env(home, os.environ["PATH"]))
    assert first.returncode == 0, first.stderr
    folder = Path(first.stdout.strip())
    assert folder.parent == home / ".cache" / "kafkalite"
    assert (folder / ".complete").is_file()
    assert list(folder.glob("kafka-clients-[0-9]*.jar"))
    assert list(folder.glob("kafka_2.13-[0-9]*.jar"))

    # The second run must not call Maven: an mvn that fails is first on the PATH.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "mvn").write_text("#!/bin/sh\necho 'mvn called' >&2\nexit 3\n")
    (fake / "mvn").chmod(0o755)
    second = _run(_env(home, f"{fake}:{os.environ['PATH']}"))
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == str(folder)
    assert "mvn called" not in second.stderr


def test_kafka_jars_says_in_one_line_what_could_not_be_fetched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "mvn").write_text("#!/bin/sh\necho 'Could not transfer artifact' >&2\nexit 1\n")
    (fake / "mvn").chmod(0o755)
    run = _run(_env(home, f"{fake}:{os.environ['PATH']}"))
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("kafka-jars: Maven could not resolve Kafka")
    assert not list((home / ".cache" / "kafkalite").glob("*/.complete"))
