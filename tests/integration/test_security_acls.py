"""ACLs through the admin clients of confluent-kafka, kafka-python and Java, and their
enforcement on real clients: Write denied on produce, Read on the group denied at join,
and a Stable member losing its group ACL answered GROUP_AUTHORIZATION_FAILED on its next
Heartbeat. ACLs and SCRAM credentials survive a restart. One broker for the module
(SASL_PLAINTEXT, the StandardAuthorizer, ``User:admin`` the super user)."""

from __future__ import annotations

import asyncio
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
from kafkalite.broker.security.fixture import SecuritySetup
from kafkalite.broker.testing import BrokerThread

from .test_security_clients import java_classes, write_properties

SETUP = SecuritySetup("SASL_PLAINTEXT", mechanisms=("PLAIN", "SCRAM-SHA-256"),
                      users={"admin": "admin-secret", "alice": "alice-secret"}, authorizer=True)


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


def test_java_admin_acls(broker: BrokerThread, tmp_path: Path) -> None:
    java, cp = java_classes(tmp_path)
    props = write_properties(tmp_path / "admin.properties",
                             broker.client("admin", "SCRAM-SHA-256").java())
    out = subprocess.run([java, "-cp", cp, "SecureClients", "acl", str(props), "User:bob"],
                         capture_output=True, text=True, timeout=180)
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert lines == {"described": "1", "principal": "User:bob", "deleted": "1", "after": "0"}, \
        out.stdout + out.stderr[-2000:]


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
    grant(broker, allow(AclResourceType.TOPIC, "open", Op.ALL),
          allow(AclResourceType.GROUP, "nogroup", Op.DESCRIBE))
    c = Consumer({**alice(broker), "group.id": "nogroup", "auto.offset.reset": "earliest"})
    c.subscribe(["open"])
    deadline, err = time.monotonic() + 20, None
    while err is None and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is not None:
            err = m.error()
    c.close()
    assert err is not None and err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def topic(b: BrokerThread, name: str) -> None:
    assert b.broker is not None
    inner = b.broker
    b.call(lambda: inner.topics.get(name) or inner.create_topic(name, 1))


def _stable_then_revoked(broker: BrokerThread, group: str) -> None:
    revoke(broker, AclResourceType.GROUP, group, "User:alice")


def test_heartbeat_after_group_acl_deleted(broker: BrokerThread) -> None:
    """Each Python client, Stable in its group, gets GROUP_AUTHORIZATION_FAILED on the next
    Heartbeat once its Read ACL on the group is deleted, and surfaces it as documented."""
    topic(broker, "hb")
    grant(broker, allow(AclResourceType.TOPIC, "hb", Op.ALL))
    for g in ("hb-ck", "hb-kp", "hb-aio"):
        grant(broker, allow(AclResourceType.GROUP, g, Op.READ))
    settings = broker.client("alice", "PLAIN")

    # confluent-kafka: the error comes out of poll() as a KafkaError.
    c = Consumer({**settings.librdkafka(), "group.id": "hb-ck", "enable.auto.commit": False,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 200})
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
                       heartbeat_interval_ms=200, session_timeout_ms=3000,
                       **settings.kafka_python())
    deadline = time.monotonic() + 20
    while not kc.assignment() and time.monotonic() < deadline:
        kc.poll(200)
    assert kc.assignment()
    _stable_then_revoked(broker, "hb-kp")
    # Its heartbeat thread logs the heartbeat's error ("Heartbeat failed: authorization
    # error"); poll() raises it once the group's coordinator is looked up again.
    with pytest.raises(GroupAuthorizationFailedError):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            kc.poll(200)
    kc.close(autocommit=False)

    # aiokafka: getmany() raises GroupAuthorizationFailedError.
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import GroupAuthorizationFailedError as AioGroupAuthFailed

    async def aio() -> None:
        kw = {k: v for k, v in settings.kafka_python().items() if not k.startswith("ssl_")}
        ac = AIOKafkaConsumer("hb", group_id="hb-aio", enable_auto_commit=False,
                              heartbeat_interval_ms=200, session_timeout_ms=3000, **kw)
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


def test_super_users_and_default_rules(make_broker: object, tmp_path: Path) -> None:
    """Without ACLs: super users may do anything, others nothing, unless
    allow.everyone.if.no.acl.found."""
    closed = BrokerThread(tmp_path / "closed", security=SETUP).start()
    opened = BrokerThread(tmp_path / "open", security=SecuritySetup(
        "SASL_PLAINTEXT", mechanisms=("PLAIN",), authorizer=True,
        allow_everyone_if_no_acl=True)).start()
    try:
        for b, alice_ok in ((closed, False), (opened, True)):
            for user, ok in (("admin", True), ("alice", alice_ok)):
                err = _produce(b, user, f"t-{user}")
                assert (err is None) is ok, (user, err)
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
    finally:
        b.stop()
