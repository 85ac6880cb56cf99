"""Real clients over SSL, SASL_PLAINTEXT and SASL_SSL (PLAIN, SCRAM-SHA-256/512), mTLS and
OAUTHBEARER: each produces, then consumes in a group and commits, and the group's
committed offset is read back. One broker per security mode for the module.

The two mTLS brokers run the StandardAuthorizer with no ACL and one super user, so a
client gets through only as the principal its certificate maps to: the DN itself
(Kafka's DEFAULT rule), or ``User:client`` through ``ssl.principal.mapping.rules``
(that broker and its clients also use PKCS12 keystores and truststores)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalite.broker.security.fixture import ClientSettings, SecuritySetup
from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import java_command

MTLS_DN = "User:CN=client,O=kafkalite"
SETUPS = {
    "ssl": SecuritySetup("SSL"),
    "sasl_plaintext": SecuritySetup("SASL_PLAINTEXT"),
    "sasl_ssl": SecuritySetup("SASL_SSL", mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512",
                                                       "OAUTHBEARER")),
    # The certificate's DN is the principal: the only super user, with no ACLs otherwise.
    "mtls": SecuritySetup("SSL", client_auth="required", authorizer=True,
                          super_users=(MTLS_DN,)),
    "mtls_rules": SecuritySetup("SSL", client_auth="required", authorizer=True,
                                super_users=("User:client",), store_type="PKCS12",
                                principal_mapping_rules="RULE:^CN=([^,]+),O=kafkalite$/$1/L,"
                                                        "DEFAULT"),
}
CASES = [("ssl", None), *[(mode, m) for mode in ("sasl_plaintext", "sasl_ssl")
                          for m in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")]]
N = 5


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, BrokerThread]]:
    base = tmp_path_factory.mktemp("secure")
    started = {name: BrokerThread(base / name, security=s).start() for name, s in SETUPS.items()}
    yield started
    for b in started.values():
        b.stop()


def settings(brokers: dict[str, BrokerThread], mode: str, mech: str | None) -> ClientSettings:
    return brokers[mode].client(mechanism=mech)


def _id(mode: str, mech: str | None) -> str:
    return f"{mode}-{mech or 'cert'}".lower()


def committed(s: ClientSettings, group: str, topic: str) -> int:
    """The offset ``group`` committed on partition 0 of ``topic`` (OffsetFetch)."""
    c = Consumer({**s.librdkafka(), "group.id": group})
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        c.close()
    return int(tp.offset)


def confluent_round_trip(s: ClientSettings, name: str) -> None:
    conf = s.librdkafka()
    p = Producer(conf)
    for i in range(N):
        p.produce(name, key=str(i), value=f"v{i}")
    assert p.flush(20) == 0
    c = Consumer({**conf, "group.id": name, "auto.offset.reset": "earliest"})
    c.subscribe([name])
    seen, deadline = 0, time.monotonic() + 30
    while seen < N and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            seen += 1
    c.commit(asynchronous=False)
    c.close()
    assert seen == N
    assert committed(s, name, name) == N


MTLS_CASES = [("mtls", None), ("mtls_rules", None)]


@pytest.mark.parametrize(("mode", "mech"), [*CASES, ("sasl_ssl", "OAUTHBEARER"), *MTLS_CASES],
                         ids=lambda v: str(v))
def test_confluent(brokers: dict[str, BrokerThread], mode: str, mech: str | None) -> None:
    confluent_round_trip(settings(brokers, mode, mech), "ck-" + _id(mode, mech))


@pytest.mark.parametrize(("mode", "mech"), CASES, ids=lambda v: str(v))
def test_kafka_python(brokers: dict[str, BrokerThread], mode: str, mech: str | None) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    s = settings(brokers, mode, mech)
    name = "kp-" + _id(mode, mech)
    kw = s.kafka_python()
    producer = KafkaProducer(**kw)
    for i in range(N):
        producer.send(name, f"v{i}".encode())
    producer.flush(20)
    producer.close()
    consumer = KafkaConsumer(name, group_id=name, auto_offset_reset="earliest", **kw)
    seen, deadline = 0, time.monotonic() + 30
    while seen < N and time.monotonic() < deadline:
        for records in consumer.poll(500).values():
            seen += len(records)
    consumer.commit()
    consumer.close()
    assert seen == N
    assert committed(s, name, name) == N


@pytest.mark.parametrize(("mode", "mech"), CASES, ids=lambda v: str(v))
def test_aiokafka(brokers: dict[str, BrokerThread], mode: str, mech: str | None) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    s = settings(brokers, mode, mech)
    name = "aio-" + _id(mode, mech)
    kw = {k: v for k, v in s.kafka_python().items() if not k.startswith("ssl_")}
    kw["ssl_context"] = s.ssl_context()

    async def run() -> int:
        producer = AIOKafkaProducer(**kw)
        await producer.start()
        try:
            for i in range(N):
                await producer.send_and_wait(name, f"v{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(name, group_id=name, auto_offset_reset="earliest", **kw)
        await consumer.start()
        seen = 0
        try:
            deadline = time.monotonic() + 30
            while seen < N and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    seen += len(records)
            await consumer.commit()
        finally:
            await consumer.stop()
        return seen

    assert asyncio.run(run()) == N
    assert committed(s, name, name) == N


@pytest.mark.parametrize(("mode", "mech"), CASES, ids=lambda v: str(v))
def test_kcat(brokers: dict[str, BrokerThread], mode: str, mech: str | None) -> None:
    kcat = shutil.which("kcat")
    assert kcat, "kcat is needed"
    s = settings(brokers, mode, mech)
    name = "kcat-" + _id(mode, mech)
    args = [kcat, "-q"]
    for k, v in s.librdkafka().items():
        args += ["-b", str(v)] if k == "bootstrap.servers" else ["-X", f"{k}={v}"]
    subprocess.run([*args, "-P", "-t", name], input="".join(f"v{i}\n" for i in range(N)),
                   text=True, check=True, timeout=60)
    # -G: librdkafka's balanced consumer in group NAME; -e: exit at the end of the partition.
    out = subprocess.run([*args, "-G", name, "-X", "auto.offset.reset=earliest", "-e", name],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [f"v{i}" for i in range(N)]
    assert committed(s, name, name) == N  # the balanced consumer commits as it closes


def write_properties(path: Path, props: dict[str, str]) -> Path:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\:").replace("=", "\\=")
    path.write_text("".join(f"{k}={esc(v)}\n" for k, v in props.items()))
    return path


def test_java(brokers: dict[str, BrokerThread], tmp_path: Path) -> None:
    """One JVM runs every mode in turn (a JVM start costs more than a round trip)."""
    runs = []
    for mode, mech in [*CASES, *MTLS_CASES]:
        props = settings(brokers, mode, mech).java()
        props["request.timeout.ms"] = "20000"
        name = _id(mode, mech)
        runs.append(f"{name}={write_properties(tmp_path / f'{name}.properties', props)}")
    out = subprocess.run(java_command("SecureClients", "run", *runs),
                         capture_output=True, text=True, timeout=300)
    results = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    expected = {r.split("=", 1)[0]: "ok" for r in runs}
    assert results == expected, out.stdout + out.stderr[-3000:]
    for mode, mech in [*CASES, *MTLS_CASES]:
        name = "java-" + _id(mode, mech)
        assert committed(settings(brokers, mode, mech), name, name) == 5, name


def test_confluent_reauthenticates_live_connection(tmp_path: Path,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    """KIP-368: with connections.max.reauth.ms the session lifetime goes to the client,
    which re-authenticates on its live connection and keeps producing."""
    b = BrokerThread(tmp_path / "reauth", {"connections.max.reauth.ms": "1000"},
                     security=SecuritySetup("SASL_SSL")).start()
    try:
        p = Producer(b.client(mechanism="SCRAM-SHA-256").librdkafka())
        errors: list[object] = []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            p.produce("reauth", b"x", on_delivery=lambda err, _m: errors.append(err))
            p.flush(5)
            time.sleep(0.1)
        assert errors and all(e is None for e in errors)
    finally:
        b.stop()
    out = capfd.readouterr()
    assert "reauthentication=True" in out.out + out.err
