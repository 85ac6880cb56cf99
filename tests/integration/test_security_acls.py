"""ACLs through the admin clients of confluent-kafka, kafka-python and Java, and their
enforcement on real clients: Write denied on produce (and Write alone enough for an
idempotent producer), Read on the group denied at join, and a Stable member losing its
group ACL answered GROUP_AUTHORIZATION_FAILED on its next Heartbeat, which each Python
client surfaces as its documented error. super.users and
allow.everyone.if.no.acl.found as Kafka's; ACLs and SCRAM credentials survive a restart.
One broker for the module (SASL_PLAINTEXT, the StandardAuthorizer, ``User:admin`` the
super user)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from structlog.testing import capture_logs

from kafkalite.broker.cli.main import main as cli_main
from kafkalite.broker.security.acl import (
    AclBinding as Binding,
)
from kafkalite.broker.security.acl import (
    AclFilter,
    AclPermission,
    AclResourceType,
    PatternType,
)
from kafkalite.broker.security.acl import (
    AclOperation as Op,
)
from kafkalite.broker.security.fixture import ClientSettings, SecuritySetup
from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import java_command
from .test_security_clients import write_properties

SETUP = SecuritySetup("SASL_PLAINTEXT", mechanisms=("PLAIN", "SCRAM-SHA-256"),
                      users={"admin": "admin-secret", "alice": "alice-secret",
                             "bob": "bob-secret"}, authorizer=True)


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory for the Java client's properties files."""
    return tmp_path_factory.mktemp("java")


def run_java(java: Path, *args: str) -> dict[str, str]:
    out = subprocess.run(java_command("SecureClients", *args),
                         capture_output=True, text=True, timeout=180)
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    lines["_output"] = out.stdout + out.stderr[-2000:]
    return lines


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path_factory.mktemp("acls") / "broker", security=SETUP).start()
    yield b
    b.stop()


def grant(b: BrokerThread, *bindings: Binding) -> None:
    assert b.broker is not None and b.broker.acls is not None
    store = b.broker.acls
    b.call(lambda: store.add(bindings))


def revoke(b: BrokerThread, rtype: AclResourceType, name: str, principal: str) -> None:
    assert b.broker is not None and b.broker.acls is not None
    store = b.broker.acls
    f = AclFilter(rtype, name, PatternType.ANY, principal, None, Op.ANY, AclPermission.ANY)
    b.call(lambda: store.delete([f]))


def allow(rtype: AclResourceType, name: str, op: Op, principal: str = "User:alice") -> Binding:
    return Binding(rtype, name, PatternType.LITERAL, principal, "*", op, AclPermission.ALLOW)


def alice(b: BrokerThread) -> dict[str, object]:
    return b.client("alice", "PLAIN").librdkafka()


def test_confluent_admin_acls(broker: BrokerThread) -> None:
    admin = AdminClient(broker.client("admin", "SCRAM-SHA-256").librdkafka())
    binding = AclBinding(ResourceType.TOPIC, "ck-acl", ResourcePatternType.PREFIXED,
                         "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    bad = AclBinding(ResourceType.TOPIC, "x", ResourcePatternType.LITERAL, "alice", "*",
                     AclOperation.READ, AclPermissionType.ALLOW)
    res = admin.create_acls([binding, bad])
    res[binding].result(10)
    with pytest.raises(KafkaException, match="principal"):
        res[bad].result(10)
    flt = AclBindingFilter(ResourceType.TOPIC, "ck-acl", ResourcePatternType.ANY, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    assert admin.describe_acls(flt).result(10) == [binding]
    assert admin.delete_acls([flt])[flt].result(10) == [binding]
    assert admin.describe_acls(flt).result(10) == []
    # Only the cluster's Alter may change ACLs: alice may not.
    as_alice = AdminClient(alice(broker))
    denied = as_alice.create_acls([binding])[binding]
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        denied.result(10)


def test_kafka_python_admin_acls(broker: BrokerThread) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KRT

    admin = KafkaAdminClient(**broker.client("admin", "PLAIN").kafka_python())
    acl = ACL("User:alice", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
              ResourcePattern(KRT.GROUP, "kp-acl"))
    created = admin.create_acls([acl])
    assert created["failed"] == [] and len(created["succeeded"]) == 1
    flt = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                    ResourcePatternFilter(KRT.GROUP, "kp-acl", ACLResourcePatternType.ANY))
    found, err = admin.describe_acls(flt)
    assert err.errno == 0 and [a.principal for a in found] == ["User:alice"]
    [(_f, matched, err)] = admin.delete_acls([flt])
    assert err.errno == 0 and len(matched) == 1
    assert admin.describe_acls(flt)[0] == []
    admin.close()


def test_java_admin_acls(broker: BrokerThread, java: Path) -> None:
    props = write_properties(java / "admin.properties",
                             broker.client("admin", "SCRAM-SHA-256").java())
    lines = run_java(java, "acl", str(props), "User:bob")
    output = lines.pop("_output")
    assert lines == {"described": "1", "principal": "User:bob", "deleted": "1", "after": "0"}, \
        output


def test_idempotent_producers_need_write_on_a_topic_only(
        broker: BrokerThread, java: Path) -> None:
    """Kafka 2.8+ (KIP-679): InitProducerId of an idempotent producer needs
    IdempotentWrite on the cluster or Write on any topic. The Java producer is idempotent
    by default; librdkafka when asked."""
    topic(broker, "idem")
    grant(broker, allow(AclResourceType.TOPIC, "idem", Op.WRITE))
    with capture_logs() as logs:
        errors: list[KafkaError | None] = []
        p = Producer({**alice(broker), "enable.idempotence": True})
        p.produce("idem", b"x", on_delivery=lambda err, _m: errors.append(err))
        p.flush(15)
        assert errors == [None]
        props = write_properties(java / "alice.properties",
                                 broker.client("alice", "PLAIN").java())
        lines = run_java(java, "produce", str(props), "idem")
        assert lines.get("produced") == "3", lines["_output"]
    clients = [e.get("client_id") for e in logs if e["event"] == "producer_id.allocated"]
    assert len(clients) == 2 and any(str(c).startswith("producer-") for c in clients), clients
    # Without Write anywhere (and no IdempotentWrite), InitProducerId is refused: fatal to
    # librdkafka's idempotent producer.
    fatal: list[KafkaError] = []
    bob = Producer({**broker.client("bob", "PLAIN").librdkafka(), "enable.idempotence": True,
                    "error_cb": fatal.append, "message.timeout.ms": 5000})
    deadline = time.monotonic() + 10
    try:
        bob.produce("idem", b"x")
        while not fatal and time.monotonic() < deadline:
            bob.poll(0.1)
    except KafkaException as e:  # once fatal, produce() and poll() raise it
        fatal.append(e.args[0])
    assert fatal and fatal[0].fatal()
    assert fatal[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED, fatal[0]


def _produce(b: BrokerThread, user: str, topic: str) -> KafkaError | None:
    """The outcome of producing one record (librdkafka may refuse at produce() already,
    from the metadata it holds)."""
    errors: list[KafkaError | None] = []
    p = Producer({**b.client(user, "PLAIN").librdkafka(), "message.timeout.ms": 8000})
    try:
        p.produce(topic, b"x", on_delivery=lambda err, _m: errors.append(err))
    except KafkaException as e:
        return e.args[0]  # type: ignore[no-any-return]
    p.flush(12)
    assert len(errors) == 1
    return errors[0]


def test_produce_without_write_is_refused(broker: BrokerThread) -> None:
    assert broker.broker is not None
    b = broker.broker
    broker.call(lambda: b.create_topic("locked", 1))
    grant(broker, allow(AclResourceType.TOPIC, "locked", Op.DESCRIBE))
    err = _produce(broker, "alice", "locked")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(broker, allow(AclResourceType.TOPIC, "locked", Op.WRITE))
    assert _produce(broker, "alice", "locked") is None


def test_join_without_read_on_group_is_refused(broker: BrokerThread) -> None:
    # Describe on the group lets FindCoordinator through; JoinGroup needs Read.
    topic(broker, "open")
    grant(broker, allow(AclResourceType.TOPIC, "open", Op.ALL))
    for g in ("nogroup", "nogroup-kp", "nogroup-aio"):
        grant(broker, allow(AclResourceType.GROUP, g, Op.DESCRIBE))
    settings = broker.client("alice", "PLAIN")
    with capture_logs() as logs:
        c = Consumer({**alice(broker), "group.id": "nogroup", "auto.offset.reset": "earliest"})
        c.subscribe(["open"])
        deadline, err = time.monotonic() + 20, None
        while err is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is not None:
                err = m.error()
        c.close()
        assert err is not None and err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED

        from kafka import KafkaConsumer
        from kafka.errors import GroupAuthorizationFailedError

        kc = KafkaConsumer("open", group_id="nogroup-kp", **settings.kafka_python())
        with pytest.raises(GroupAuthorizationFailedError):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                kc.poll(200)
        kc.close(autocommit=False)

        from aiokafka import AIOKafkaConsumer
        from aiokafka.errors import GroupAuthorizationFailedError as AioGroupAuthFailed

        async def aio() -> None:
            ac = AIOKafkaConsumer("open", group_id="nogroup-aio", **aio_kwargs(settings))
            try:
                with pytest.raises(AioGroupAuthFailed):  # start() joins, and raises
                    await ac.start()
                    deadline = time.monotonic() + 20
                    while time.monotonic() < deadline:
                        await ac.getmany(timeout_ms=200)
            finally:
                await ac.stop()

        asyncio.run(aio())
    # Each was refused at JoinGroup itself (not at FindCoordinator).
    denied = {e["name"] for e in logs if e["event"] == "request.denied"
              and e["api"] == "join_group"}
    assert denied == {"nogroup", "nogroup-kp", "nogroup-aio"}


def aio_kwargs(settings: ClientSettings) -> dict[str, object]:
    return {k: v for k, v in settings.kafka_python().items() if not k.startswith("ssl_")}


def topic(b: BrokerThread, name: str) -> None:
    assert b.broker is not None
    inner = b.broker
    b.call(lambda: inner.topics.get(name) or inner.create_topic(name, 1))


def _stable_then_revoked(broker: BrokerThread, group: str) -> None:
    revoke(broker, AclResourceType.GROUP, group, "User:alice")


def test_heartbeat_after_group_acl_deleted(broker: BrokerThread,
                                           caplog: pytest.LogCaptureFixture) -> None:
    """Each Python client, Stable in its group, gets GROUP_AUTHORIZATION_FAILED on the next
    Heartbeat once its Read ACL on the group is deleted, and surfaces it as documented."""
    with capture_logs() as logs:
        _heartbeats_refused(broker, caplog)
    # The broker answered a Heartbeat of each group with GROUP_AUTHORIZATION_FAILED.
    refused = {e["name"] for e in logs if e["event"] == "request.denied"
               and e["api"] == "heartbeat"}
    assert refused == {"hb-ck", "hb-kp", "hb-aio"}


def _heartbeats_refused(broker: BrokerThread, caplog: pytest.LogCaptureFixture) -> None:
    topic(broker, "hb")
    grant(broker, allow(AclResourceType.TOPIC, "hb", Op.ALL))
    for g in ("hb-ck", "hb-kp", "hb-aio"):
        grant(broker, allow(AclResourceType.GROUP, g, Op.READ))
    settings = broker.client("alice", "PLAIN")

    # confluent-kafka: the error comes out of poll() as a KafkaError.
    c = Consumer({**settings.librdkafka(), "group.id": "hb-ck", "enable.auto.commit": False,
                  "session.timeout.ms": 1500, "heartbeat.interval.ms": 100})
    assigned: list[int] = []
    c.subscribe(["hb"], on_assign=lambda _c, parts: assigned.extend(p.partition for p in parts))
    deadline = time.monotonic() + 20
    while not assigned and time.monotonic() < deadline:
        c.poll(0.2)
    assert assigned
    _stable_then_revoked(broker, "hb-ck")
    err = None
    deadline = time.monotonic() + 20
    while err is None and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is not None:
            err = m.error()
    c.close()
    assert err is not None and err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED

    # kafka-python: poll() raises GroupAuthorizationFailedError.
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    kc = KafkaConsumer("hb", group_id="hb-kp", enable_auto_commit=False,
                       heartbeat_interval_ms=100, session_timeout_ms=1000,
                       **settings.kafka_python())
    deadline = time.monotonic() + 20
    while not kc.assignment() and time.monotonic() < deadline:
        kc.poll(200)
    assert kc.assignment()
    _stable_then_revoked(broker, "hb-kp")
    # Its heartbeat loop logs the heartbeat's error ("Heartbeat failed: authorization
    # error"); poll() raises it once the group's coordinator is looked up again.
    with caplog.at_level(logging.ERROR, logger="kafka.coordinator.heartbeat"), \
            pytest.raises(GroupAuthorizationFailedError):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            kc.poll(200)
    kc.close(autocommit=False)
    assert any("Heartbeat failed: authorization error" in r.getMessage()
               for r in caplog.records)

    # aiokafka: getmany() raises GroupAuthorizationFailedError.
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import GroupAuthorizationFailedError as AioGroupAuthFailed

    async def aio() -> None:
        ac = AIOKafkaConsumer("hb", group_id="hb-aio", enable_auto_commit=False,
                              heartbeat_interval_ms=100, session_timeout_ms=1000,
                              **aio_kwargs(settings))
        await ac.start()
        try:
            deadline = time.monotonic() + 20
            while not ac.assignment() and time.monotonic() < deadline:
                await ac.getmany(timeout_ms=200)
            assert ac.assignment()
            await asyncio.to_thread(_stable_then_revoked, broker, "hb-aio")
            with pytest.raises(AioGroupAuthFailed):
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    await ac.getmany(timeout_ms=200)
        finally:
            await ac.stop()

    asyncio.run(aio())


def test_super_users_and_default_rules(tmp_path: Path) -> None:
    """Without ACLs: super users may do anything, others nothing, unless
    allow.everyone.if.no.acl.found; then any ACL on a resource, even for someone else,
    takes the default away there (Kafka's StandardAuthorizer since 3.5)."""
    closed = BrokerThread(tmp_path / "closed", security=SETUP).start()
    opened = BrokerThread(tmp_path / "open", security=SecuritySetup(
        "SASL_PLAINTEXT", mechanisms=("PLAIN",), authorizer=True,
        allow_everyone_if_no_acl=True)).start()
    try:
        for b, alice_ok in ((closed, False), (opened, True)):
            for user, ok in (("admin", True), ("alice", alice_ok)):
                err = _produce(b, user, f"t-{user}")
                assert (err is None) is ok, (user, err)
        topic(opened, "bobs")
        grant(opened, allow(AclResourceType.TOPIC, "bobs", Op.WRITE, "User:bob"))
        err = _produce(opened, "alice", "bobs")
        assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert _produce(opened, "admin", "bobs") is None  # super users pass any ACL
    finally:
        closed.stop()
        opened.stop()


def test_acls_and_scram_credentials_survive_restart(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "b", security=SETUP).start()
    try:
        admin = AdminClient(b.client("admin", "PLAIN").librdkafka())
        binding = AclBinding(ResourceType.GROUP, "kept", ResourcePatternType.LITERAL,
                             "User:carol", "*", AclOperation.READ, AclPermissionType.ALLOW)
        admin.create_acls([binding])[binding].result(10)
        upsert = UserScramCredentialUpsertion(
            "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"carol-pw")
        admin.alter_user_scram_credentials([upsert])["carol"].result(10)
        b.restart()
        admin = AdminClient(b.client("admin", "PLAIN").librdkafka())
        flt = AclBindingFilter(ResourceType.GROUP, "kept", ResourcePatternType.ANY, None, None,
                               AclOperation.ANY, AclPermissionType.ANY)
        assert admin.describe_acls(flt).result(10) == [binding]
        described = admin.describe_user_scram_credentials(["carol"])["carol"].result(10)
        assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == \
            [(ScramMechanism.SCRAM_SHA_256, 8192)]
        # carol logs in with the credential the admin API stored.
        carol = b.client("carol", "SCRAM-SHA-256")
        conf = {**carol.librdkafka(), "sasl.password": "carol-pw"}
        md = AdminClient(conf).list_topics(timeout=10)
        assert list(md.brokers) == [1]
        # `kafkalite scram set` on the running broker's data directory: dave logs in.
        assert cli_main(["scram", "set", "--data-dir", str(b.data_dir), "--user", "dave",
                         "--password", "dave-pw", "--mechanism", "SCRAM-SHA-256"]) == 0
        dave = {**b.client("dave", "SCRAM-SHA-256").librdkafka(), "sasl.password": "dave-pw"}
        assert list(AdminClient(dave).list_topics(timeout=10).brokers) == [1]
    finally:
        b.stop()
