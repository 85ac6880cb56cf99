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
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from kafkalite.protocol.errors import ErrorCode
from kafkalite.timekeeping.clock import ManualClock

from ..compose import build_broker
from ..config.properties import Config
from ..control.faults import FaultAction, FaultRule
from ..security.certs import CertFiles
from ..security.fixture import ClientSettings, SecuritySetup
from ..server import Broker, new_event_loop

T = TypeVar("T")

#: Timeouts short enough that tests never wait out Kafka's defaults.
TEST_DEFAULTS: dict[str, str] = {
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "100",
}


class RemoteFaults:
    """``broker.faults`` of a ``BrokerThread``, from the test's thread: every call runs on
    the broker's loop (the rules are read there on every request) and returns its result.

    ``add`` takes the arguments of ``FaultRules.add``; the returned rule is the live one,
    so ``rule.fired`` counts its fires. ``injected(...)`` is the same as a context
    manager that removes the rule on exit::

        with broker.faults.injected("Heartbeat", error="REBALANCE_IN_PROGRESS", count=1):
            ...
    """

    def __init__(self, thread: BrokerThread) -> None:
        self._thread = thread

    def add(
        self,
        api: str | int,
        *,
        error: str | int | ErrorCode | None = None,
        action: str | FaultAction | None = None,
        delay_ms: int = 0,
        versions: tuple[int, int] | None = None,
        client_id: str | None = None,
        principal: str | None = None,
        group_id: str | None = None,
        topic: str | None = None,
        count: int | None = None,
        duration_ms: int | None = None,
        probability: float = 1.0,
        seed: int | None = None,
        node: int | None = None,
    ) -> FaultRule:
        def add() -> FaultRule:
            return self._thread.inner.faults.add(
                api, error=error, action=action, delay_ms=delay_ms, versions=versions,
                client_id=client_id, principal=principal, group_id=group_id, topic=topic,
                count=count, duration_ms=duration_ms, probability=probability, seed=seed,
                node=node)

        return self._thread.call(add)

    def remove(self, rule: FaultRule | int) -> bool:
        rule_id = rule.id if isinstance(rule, FaultRule) else rule
        return self._thread.call(lambda: self._thread.inner.faults.remove(rule_id))

    def clear(self) -> int:
        return self._thread.call(lambda: self._thread.inner.faults.clear())

    def rules(self) -> list[FaultRule]:
        return self._thread.call(lambda: self._thread.inner.faults.rules())

    @contextmanager
    def injected(
        self,
        api: str | int,
        *,
        error: str | int | ErrorCode | None = None,
        action: str | FaultAction | None = None,
        delay_ms: int = 0,
        versions: tuple[int, int] | None = None,
        client_id: str | None = None,
        principal: str | None = None,
        group_id: str | None = None,
        topic: str | None = None,
        count: int | None = None,
        duration_ms: int | None = None,
        probability: float = 1.0,
        seed: int | None = None,
        node: int | None = None,
    ) -> Iterator[FaultRule]:
        rule = self.add(api, error=error, action=action, delay_ms=delay_ms, versions=versions,
                        client_id=client_id, principal=principal, group_id=group_id,
                        topic=topic, count=count, duration_ms=duration_ms,
                        probability=probability, seed=seed, node=node)
        try:
            yield rule
        finally:
            if self._thread.broker is not None:
                self.remove(rule)


class BrokerThread:
    """A broker on its own event loop in a daemon thread of this process.

    ``admin=True`` opens the admin HTTP listener on a free loopback port (``admin_url``);
    ``faults`` adds and removes fault rules from the test's thread. ``manual_clock=True``
    runs the broker on a manual clock that ``advance(ms)`` moves (and runs what became
    due); ``scenario(name, ...)`` runs a coordinator scenario. ``nodes=N`` runs N brokers
    (``kafkalite.nodes``), node ids 1..N; ``bootstrap`` is node 1's address and
    ``bootstraps`` every node's."""

    def __init__(self, data_dir: Path | str, overrides: Mapping[str, str] | None = None,
                 security: SecuritySetup | None = None, admin: bool = False,
                 manual_clock: bool = False, schema_registry: bool = False,
                 as_version: str | None = None, nodes: int = 1) -> None:
        self.data_dir = Path(data_dir)
        self.security = security
        self.certs: CertFiles | None = None
        # A broker on a thread shares the GIL with its test's clients: a busy poll there
        # would hold the lock a Python client needs to send the request it waits for.
        self.overrides = {**TEST_DEFAULTS, "socket.busy.poll.us": "0"}
        if security is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            props, self.certs = security.prepare(
                self.data_dir, self.data_dir.parent / f"{self.data_dir.name}-certs")
            self.overrides.update(props)
            self.overrides["listeners"] = f"{security.listener}://127.0.0.1:0"
        if admin:
            self.overrides["admin.listener"] = "127.0.0.1:0"
        if as_version is not None:
            self.overrides["kafkalite.as.version"] = as_version
        if schema_registry:
            self.overrides["schema.registry.listener"] = "127.0.0.1:0"
        if nodes != 1:
            self.overrides["kafkalite.nodes"] = str(nodes)
        if manual_clock:
            # The initial delay is a timer too: with time standing still, a group's first
            # rebalance would wait for an advance.
            self.overrides["group.initial.rebalance.delay.ms"] = "0"
        self.overrides.update(overrides or {})
        self.overrides.setdefault("listeners", "PLAINTEXT://127.0.0.1:0")
        self.overrides["log.dirs"] = str(self.data_dir)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.broker: Broker | None = None
        self._thread: threading.Thread | None = None
        self.faults = RemoteFaults(self)
        self.manual_clock = manual_clock
        #: Where a restarted broker's manual clock resumes (None: the wall clock's time).
        self._clock_at: int | None = None

    def start(self, timeout: float = 30) -> BrokerThread:
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = new_event_loop()
            self.loop = loop
            asyncio.set_event_loop(loop)
            try:
                config = Config.build(environ={}, overrides=self.overrides)
                clock = ManualClock(self._clock_at) if self.manual_clock else None
                self.broker = build_broker(config, clock)
                loop.run_until_complete(self.broker.start())
                # A test's first request finds its group coordinator loaded.
                loop.run_until_complete(self.broker.loaded())
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

    def advance(self, ms: int) -> int:
        """Move the manual clock ``ms`` forward, running every deadline it crosses; the new
        time in ms."""
        return self.call(lambda: self.inner.clock_control.advance(ms))

    def now_ms(self) -> int:
        """The broker's clock."""
        return self.call(lambda: self.inner.clock_control.now_ms())

    def scenario(self, name: str, **params: Any) -> dict[str, Any]:
        """Run a coordinator scenario (``broker/control/scenarios.py``): ``rebalance``,
        ``expire-member``, ``evict-member``, ``fence-static-member`` (group_id, member_id or
        group_instance_id), ``partition-loading``, ``partition-moved`` (group_id or
        partition, for_ms)."""
        return self.call(lambda: self.inner.scenarios.run(name, params))

    @property
    def inner(self) -> Broker:
        """The running broker (read it on its loop: ``call``)."""
        if self.broker is None:
            raise RuntimeError("the broker is not running")
        return self.broker

    @property
    def port(self) -> int:
        return self.inner.port

    @property
    def admin_url(self) -> str:
        """The admin HTTP listener's base URL (start with ``admin=True``)."""
        admin = self.inner.admin
        if admin is None:
            raise RuntimeError("no admin listener: start the broker with admin=True "
                               "or admin.listener set")
        return admin.url

    @property
    def schema_registry_url(self) -> str:
        """The Schema Registry's base URL (start with ``schema_registry=True``)."""
        url = self.inner.schema_registry_url
        if url is None:
            raise RuntimeError("no schema registry: start the broker with schema_registry=True "
                               "or schema.registry.listener set")
        return url

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def bootstraps(self) -> list[str]:
        """Every node's address, node 1 first (``nodes=N``)."""
        return self.inner.bootstraps

    # --- nodes (``nodes=N``) -------------------------------------------------------------

    def stop_node(self, node_id: int, controlled: bool = True) -> None:
        """Stop one node: its listeners and connections close and its leadership moves
        (``controlled=False``: after broker.session.timeout.ms on the broker clock)."""
        _ = self.call(lambda: self.inner.stop_node(node_id, controlled))

    def start_node(self, node_id: int) -> None:
        """Start a stopped node again on its addresses; its replicas catch up."""
        _ = self.call(lambda: self.inner.start_node(node_id))

    def isolate_node(self, node_id: int) -> None:
        """Cut one node off, as a network partition (``heal_node`` ends it)."""
        self.call(lambda: self.inner.isolate_node(node_id))

    def heal_node(self, node_id: int) -> None:
        self.call(lambda: self.inner.heal_node(node_id))

    def partition_state(self, topic: str, partition: int) -> tuple[int, tuple[int, ...],
                                                                   tuple[int, ...]]:
        """(leader, replicas, in-sync replicas) of a partition, as the controller has them."""
        return self.call(lambda: self.inner.cluster.replicas(topic, partition))

    def client(self, user: str | None = None, mechanism: str | None = None,
               certificate: bool | None = None) -> ClientSettings:
        """Settings for a client of the first listener: the CA to trust, and the SASL
        user (default: the first configured) or, with ``ssl.client.auth``, the client
        certificate."""
        sec = self.security
        if sec is None:
            return ClientSettings(self.bootstrap, "PLAINTEXT")
        certs = self.certs
        assert certs is not None
        tls = sec.protocol in ("SSL", "SASL_SSL")
        with_cert = (sec.client_auth != "none") if certificate is None else certificate
        name = user or next(iter(sec.users))
        sasl = sec.protocol.startswith("SASL")
        p12 = tls and sec.store_type == "PKCS12"
        return ClientSettings(
            self.bootstrap, sec.protocol,
            ca_file=str(certs.ca) if tls else None,
            cert_file=str(certs.client_cert) if tls and with_cert else None,
            key_file=str(certs.client_key) if tls and with_cert else None,
            mechanism=(mechanism or sec.mechanisms[0]) if sasl else None,
            username=name if sasl else None,
            password=sec.users.get(name) if sasl else None,
            keystore_p12=str(certs.client_p12) if p12 and with_cert else None,
            truststore_p12=str(certs.truststore_p12) if p12 else None,
            p12_password=certs.p12_password if p12 else None,
        )

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
        """Stop and start again on the same data directory (and, by default, the same port;
        with several nodes, whose ports need not follow each other, new free ports)."""
        assert self.broker is not None
        keep_port = keep_port and len(self.broker.nodes) == 1
        bound = [f"{b.name}://127.0.0.1:{b.port}" for b in self.broker.listeners]
        admin = self.broker.admin
        registry = self.broker.schema_registry
        if self.manual_clock:
            self._clock_at = self.now_ms()
        self.stop()
        if keep_port:
            self.overrides["listeners"] = ",".join(bound)
            if admin is not None:
                self.overrides["admin.listener"] = f"{admin.host}:{admin.port}"
            if registry is not None:
                self.overrides["schema.registry.listener"] = f"{registry.host}:{registry.port}"
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
        #: The admin listener's base URL, when ``admin.listener`` is set.
        self.admin_url: str | None = None
        #: The Schema Registry's base URL, when ``schema.registry.listener`` is set.
        self.schema_registry_url: str | None = None
        #: Every node's address when the process runs several (the ready file's list).
        self.nodes: list[str] = []
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
                facts = json.loads(Path(ready).read_text())
                self.port = int(facts["port"])
                self.admin_url = facts["admin"].rstrip("/") if facts.get("admin") else None
                self.schema_registry_url = facts.get("schema_registry")
                self.nodes = list(facts.get("nodes", []))
                os.unlink(ready)
                self.requested_port = self.port
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}: "
                                   f"{self.log_path.read_text()[-2000:]}")
            # A short poll: start-up benchmarks time launches through this.
            time.sleep(0.002)
        self.kill()
        raise TimeoutError("broker process did not start")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def bootstraps(self) -> list[str]:
        """Every node's address, node 1 first (``kafkalite.nodes``)."""
        return self.nodes or [self.bootstrap]

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
