"""Run a real kafkalite broker from tests: in a background thread or as a child process.

Both listen on 127.0.0.1 with port 0 and expose ``bootstrap`` ("127.0.0.1:PORT").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from .compose import build_broker
from .config import Config
from .server import Broker, new_event_loop

T = TypeVar("T")

#: Timeouts short enough that tests never wait out Kafka's defaults.
TEST_DEFAULTS: dict[str, str] = {
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "100",
}


class BrokerThread:
    """A broker on its own event loop in a daemon thread of this process."""

    def __init__(self, data_dir: Path | str, overrides: Mapping[str, str] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.overrides = {**TEST_DEFAULTS, **(overrides or {})}
        self.overrides.setdefault("listeners", "PLAINTEXT://127.0.0.1:0")
        self.overrides["log.dirs"] = str(self.data_dir)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.broker: Broker | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 30) -> BrokerThread:
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = new_event_loop()
            self.loop = loop
            asyncio.set_event_loop(loop)
            try:
                config = Config.build(environ={}, overrides=self.overrides)
                self.broker = build_broker(config)
                loop.run_until_complete(self.broker.start())
            except BaseException as e:  # surfaced to the starting thread
                failure.append(e)
                started.set()
                loop.close()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name="kafkalite-broker", daemon=True)
        self._thread.start()
        if not started.wait(timeout):
            raise TimeoutError("broker did not start")
        if failure:
            raise failure[0]
        return self

    def call(self, fn: Callable[[], T], timeout: float = 30) -> T:
        """Run ``fn`` on the broker's loop and return its result (a coroutine is awaited)."""
        assert self.loop is not None

        async def wrapper() -> Any:
            result = fn()
            if asyncio.iscoroutine(result):
                result = await result
            return result

        fut: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(wrapper(), self.loop)
        value: T = fut.result(timeout)
        return value

    @property
    def port(self) -> int:
        assert self.broker is not None
        return self.broker.port

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, timeout: float = 30) -> None:
        if self.broker is None or self.loop is None or self._thread is None:
            return
        broker = self.broker
        try:
            _ = self.call(broker.stop, timeout)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
            self.broker = None

    def restart(self, keep_port: bool = True) -> BrokerThread:
        """Stop and start again on the same data directory (and, by default, the same port)."""
        port = self.port
        self.stop()
        if keep_port:
            self.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{port}"
        return self.start()

    def __enter__(self) -> BrokerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class BrokerProcess:
    """``kafkalite serve`` as a child process (for crash tests and the CLI end to end)."""

    def __init__(
        self,
        data_dir: Path | str,
        overrides: Mapping[str, str] | None = None,
        extra_args: list[str] | None = None,
        port: int = 0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.overrides = {**TEST_DEFAULTS, **(overrides or {})}
        self.extra_args = extra_args or []
        self.requested_port = port
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}.log"

    def start(self, timeout: float = 30) -> BrokerProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd, ready = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        os.unlink(ready)
        args = [sys.executable, "-m", "kafkalite", "serve", "--data-dir", str(self.data_dir),
                "--listen", f"127.0.0.1:{self.requested_port}", "--ready-file", ready,
                "--log-format", "json"]
        for k, v in self.overrides.items():
            args += ["--set", f"{k}={v}"]
        args += self.extra_args
        logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT)
        logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                self.port = int(json.loads(Path(ready).read_text())["port"])
                os.unlink(ready)
                self.requested_port = self.port
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}: "
                                   f"{self.log_path.read_text()[-2000:]}")
            time.sleep(0.02)
        self.kill()
        raise TimeoutError("broker process did not start")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, timeout: float = 20) -> int:
        if self.proc is None:
            return 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
