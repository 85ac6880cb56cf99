"""Small durable-file helpers."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a crash leaves either the old or the new file whole."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_and_close(fds: list[int]) -> None:
    """fsync each descriptor (duplicated for the call), closing all of them whatever fails."""
    try:
        for fd in fds:
            os.fsync(fd)
    finally:
        for fd in fds:
            os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


LOCK_FILE = ".lock"


class DirLockedError(OSError):
    """Another process holds the data directory (a running broker)."""


class DirLock:
    """An exclusive lock on ``<dir>/.lock`` while a broker uses the directory, as Kafka
    locks each log directory. POSIX record locks: held per process (a second broker in
    the same process is not refused) and released by the kernel when the process dies."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            raise DirLockedError(
                f"Failed to acquire lock on file {LOCK_FILE} in {self.path.parent}. A Kafka "
                "instance in another process or thread is using this directory.") from e
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @staticmethod
    def held_elsewhere(directory: Path) -> bool:
        """Whether another process holds the lock (without keeping it). For processes
        without a broker of their own: closing the probe's descriptor would drop this
        process's own lock on the file (POSIX record-lock semantics)."""
        import fcntl

        path = directory / LOCK_FILE
        if not path.exists():
            return False
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # also drops the lock just taken
        return False
