"""The distribution installs one import name, ``kafkalite``, and its pytest plugin lives
beside a user's own packages called ``broker``, ``storage``, ``protocol``, ``coordinator``
and ``pipeline``."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import kafkalite

ROOT = Path(__file__).resolve().parents[2]
#: The repository's folders that install as ``kafkalite.<name>``.
PACKAGES = ("broker", "coordinator", "pipeline", "protocol", "schema_registry", "storage",
            "timekeeping")
_NOT_SOURCE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")


def _source_tree(dst: Path) -> Path:
    """What the build reads, copied (links as links), so that building leaves no
    ``build/`` or ``*.egg-info`` behind in the checkout."""
    dst.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dst / name)
    for name in ("kafkalite", *PACKAGES):
        shutil.copytree(ROOT / name, dst / name, symlinks=True, ignore=_NOT_SOURCE)
    return dst


def _clean_env() -> dict[str, str]:
    """The environment without the checkout on the path and without this run's pytest
    settings: the child sees kafkalite only as it is installed."""
    drop = ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith("PYTEST_XDIST") and k != "PYTEST_CURRENT_TEST"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def test_wheel_holds_only_the_kafkalite_package(tmp_path: Path) -> None:
    src = _source_tree(tmp_path / "src")
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
        check=True, env=_clean_env(), timeout=300,
    )
    (wheel,) = out.glob("kafkalite-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        infos = {zi.filename: zi for zi in zf.infolist()}
        dist_info = f"kafkalite-{kafkalite.__version__}.dist-info"
        assert {name.split("/")[0] for name in infos} == {"kafkalite", dist_info}
        assert zf.read(f"{dist_info}/top_level.txt").split() == [b"kafkalite"]
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
    assert "kafkalite = kafkalite.broker.cli.main:main" in entry_points
    assert "kafkalite = kafkalite.broker.testing.pytest_plugin" in entry_points
    assert {"kafkalite/__init__.py", "kafkalite/__main__.py", "kafkalite/broker/server.py",
            "kafkalite/broker/testing/pytest_plugin.py"} <= infos.keys()
    # Every file of the linked folders is in the wheel as a file of its own, not a link.
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*"):
            if path.is_dir() or "__pycache__" in path.parts:
                continue
            name = f"kafkalite/{path.relative_to(ROOT).as_posix()}"
            assert name in infos, f"{name} missing from the wheel"
            assert stat.S_ISREG(infos[name].external_attr >> 16), f"{name} is not a file"


USER_TEST = '''
import socket
import struct

import broker
import coordinator
import pipeline
import protocol
import storage

import kafkalite.broker


def _read(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def test_own_packages_beside_the_kafkalite_broker(kafkalite_broker):
    for module in (broker, coordinator, pipeline, protocol, storage):
        assert module.MARKER == "mine:" + module.__name__
    assert "kafkalite" not in broker.__file__
    assert kafkalite.broker.__name__ == "kafkalite.broker"
    host, port = kafkalite_broker.bootstrap.rsplit(":", 1)
    # ApiVersions v0: api key 18, version 0, correlation id 7, client id "mine".
    body = struct.pack(">hhih", 18, 0, 7, 4) + b"mine"
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", _read(sock, 4))
        response = _read(sock, size)
    assert struct.unpack_from(">ih", response) == (7, 0)
'''


def test_user_project_with_packages_named_like_kafkalites(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for package in PACKAGES:
        (project / package).mkdir()
        (project / package / "__init__.py").write_text(f'MARKER = "mine:{package}"\n')
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "test_mine.py").write_text(USER_TEST)
    pytest_script = Path(sys.executable).with_name("pytest")
    assert pytest_script.exists(), "the pytest command is installed beside the interpreter"
    for command in ([str(pytest_script)], [sys.executable, "-m", "pytest"]):
        run = subprocess.run(
            [*command, "-q", "-p", "no:cacheprovider", "test_mine.py"],
            cwd=project, env=_clean_env(), capture_output=True, text=True, timeout=120,
        )
        assert run.returncode == 0, f"{command}:\n{run.stdout}\n{run.stderr}"
        assert "1 passed" in run.stdout
